//! `evolve-mcp-test-server`: a scripted MCP server for Evolve's MCP tests — every
//! behaviour a client must cope with (slow calls, error results, a crash mid-call, a tool
//! added at runtime, huge results, garbage on stdout, a crash at start) on demand.
//!
//! ```text
//! evolve-mcp-test-server [--http 127.0.0.1:PORT] [--notes DIR] [--log-stderr TEXT]
//!                        [--crash-on-start] [--garbage] [--count-file FILE]
//!                        [--protocol VERSION | --stateless] [--events FILE] [--task-tool]
//!                        [--redefine all|schema|annotations] [--closed-world]
//! ```
//! Serves MCP over stdio by default. With `--http` it serves streamable HTTP at `/mcp`
//! on a loopback address only, and prints `listening on http://127.0.0.1:PORT/mcp` once
//! the socket is bound (port 0 picks a free port). `--stateless` speaks only protocol
//! 2026-07-28 (no `initialize`, no session; the README says what a client sends).
//! `--events FILE` appends a line per message the HTTP endpoint receives, in the order
//! they arrive (see `events.rs`); `--task-tool` also lists a tool that runs only as a
//! task, over stdio (see `tasks.rs`); `--redefine KIND` lists `show_note`, whose
//! definition swaps after each call (with `list_changed`). The tools are in `server.rs`; the HTTP plumbing
//! is in `http.rs`. This file decides the order of the start-up effects: count the
//! start, log to stderr, crash if asked, print garbage if asked, then serve.

mod cancel;
mod client_input;
mod events;
mod http;
mod progress;
mod server;
mod tasks;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use rmcp::model::ProtocolVersion;
use rmcp::ServiceExt;

use crate::events::Events;
use crate::server::{Redefine, Settings, TestServer, Versions};
use crate::tasks::Served;

const USAGE: &str = "usage: evolve-mcp-test-server [--http 127.0.0.1:PORT] [--notes DIR] \
                     [--log-stderr TEXT] [--crash-on-start] [--garbage] [--count-file FILE] \
                     [--protocol VERSION | --stateless] [--events FILE] [--task-tool] \
                     [--redefine all|schema|annotations] [--closed-world]";

/// Exit code of `--crash-on-start`: distinct from the `crash` tool's 3 so a test can
/// tell a start failure from a mid-call crash.
const CRASH_ON_START_CODE: u8 = 1;

/// The command line, parsed.
#[derive(Debug, Default, PartialEq)]
struct Args {
    http: Option<SocketAddr>,
    notes: Option<PathBuf>,
    log_stderr: Option<String>,
    crash_on_start: bool,
    garbage: bool,
    count_file: Option<PathBuf>,
    protocol: Option<String>,
    stateless: bool,
    events: Option<PathBuf>,
    task_tool: bool,
    redefine: Option<Redefine>,
    closed_world: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args::default();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--http" => {
                let v = value("--http")?;
                let addr: SocketAddr = v
                    .parse()
                    .map_err(|_| format!("--http {v}: not an address like 127.0.0.1:8080"))?;
                // The server runs arbitrary test tools (env, write_note): it must never
                // be reachable from another machine.
                if !addr.ip().is_loopback() {
                    return Err(format!(
                        "--http {v}: refusing a non-loopback address; use 127.0.0.1:PORT"
                    ));
                }
                out.http = Some(addr);
            }
            "--notes" => out.notes = Some(PathBuf::from(value("--notes")?)),
            "--log-stderr" => out.log_stderr = Some(value("--log-stderr")?),
            "--crash-on-start" => out.crash_on_start = true,
            "--garbage" => out.garbage = true,
            "--count-file" => out.count_file = Some(PathBuf::from(value("--count-file")?)),
            "--protocol" => out.protocol = Some(value("--protocol")?),
            "--stateless" => out.stateless = true,
            "--events" => out.events = Some(PathBuf::from(value("--events")?)),
            "--task-tool" => out.task_tool = true,
            "--closed-world" => out.closed_world = true,
            "--redefine" => {
                let v = value("--redefine")?;
                out.redefine = Some(
                    Redefine::parse(&v)
                        .ok_or(format!("--redefine {v}: use all, schema or annotations"))?,
                );
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if out.task_tool && out.http.is_some() {
        // rmcp's HTTP service takes only a `ServerHandler`, whose `tools/list` answer
        // cannot carry `execution`; see tasks.rs.
        return Err("--task-tool works over stdio only, not with --http".to_string());
    }
    Ok(out)
}

/// Appends one line per start so a test can count how often a client (re)started us.
fn count_start(file: &PathBuf) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|e| format!("--count-file {}: {e}", file.display()))?;
    writeln!(f, "start pid={}", std::process::id())
        .map_err(|e| format!("--count-file {}: {e}", file.display()))
}

/// `--protocol`: any version that still has an `initialize` handshake, known to rmcp or
/// not (older than 2026-07-28, where SEP-2567 removed the handshake and rmcp refuses it).
fn protocol_version(v: &str) -> Result<ProtocolVersion, String> {
    let version = serde_json::from_value::<ProtocolVersion>(serde_json::Value::String(v.into()))
        .map_err(|e| format!("--protocol {v}: {e}"))?;
    if version.has_initialize() {
        Ok(version)
    } else {
        Err(format!(
            "--protocol {v}: rmcp answers initialize only with versions before {}; use e.g. 2024-11-05",
            ProtocolVersion::NO_INITIALIZE
        ))
    }
}

/// The revisions to speak: `--protocol` pins one that has `initialize`, `--stateless`
/// keeps only the one without it, so the two cannot go together.
fn versions(protocol: Option<&str>, stateless: bool) -> Result<Versions, String> {
    match (protocol, stateless) {
        (Some(v), true) => Err(format!(
            "--protocol {v} and --stateless exclude each other: --stateless speaks only {}, \
             which has no initialize to pin a version in",
            ProtocolVersion::NO_INITIALIZE
        )),
        (Some(v), false) => protocol_version(v).map(Versions::Pinned),
        (None, true) => Ok(Versions::StatelessOnly),
        (None, false) => Ok(Versions::Any),
    }
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("evolve-mcp-test-server: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(file) = &args.count_file {
        if let Err(e) = count_start(file) {
            eprintln!("evolve-mcp-test-server: {e}");
            return ExitCode::from(2);
        }
    }
    if let Some(text) = &args.log_stderr {
        eprintln!("{text}");
    }
    if args.crash_on_start {
        eprintln!("evolve-mcp-test-server: crashing on start (--crash-on-start)");
        return ExitCode::from(CRASH_ON_START_CODE);
    }
    if args.garbage {
        println!("this line is not JSON-RPC (--garbage)");
        let _ = std::io::stdout().flush();
    }
    let versions = match versions(args.protocol.as_deref(), args.stateless) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("evolve-mcp-test-server: {e}");
            return ExitCode::from(2);
        }
    };
    let settings = Settings {
        notes: args.notes.unwrap_or_else(|| {
            std::env::temp_dir().join(format!("evolve-mcp-notes-{}", std::process::id()))
        }),
        versions,
        events: Events::new(args.events),
        task_tool: args.task_tool,
        redefine: args.redefine,
        closed_world: args.closed_world,
        swapped: Default::default(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("evolve-mcp-test-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match args.http {
            Some(addr) => http::serve(addr, settings).await,
            None => serve_stdio(settings).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("evolve-mcp-test-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One session on stdin/stdout, until the client closes stdin.
async fn serve_stdio(settings: Settings) -> Result<(), String> {
    let running = Served::new(TestServer::new(settings.into()))
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP handshake on stdio failed: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the stdio session ended abnormally: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn command_lines() {
        let ok: [(&[&str], Args); 7] = [
            (&[], Args::default()),
            (
                &["--http", "127.0.0.1:0"],
                Args {
                    http: Some("127.0.0.1:0".parse().unwrap()),
                    ..Args::default()
                },
            ),
            (
                &[
                    "--http",
                    "[::1]:9000",
                    "--garbage",
                    "--protocol",
                    "2024-11-05",
                ],
                Args {
                    http: Some("[::1]:9000".parse().unwrap()),
                    garbage: true,
                    protocol: Some("2024-11-05".into()),
                    ..Args::default()
                },
            ),
            (
                &[
                    "--log-stderr",
                    "hi there",
                    "--count-file",
                    "/tmp/c",
                    "--crash-on-start",
                ],
                Args {
                    log_stderr: Some("hi there".into()),
                    count_file: Some("/tmp/c".into()),
                    crash_on_start: true,
                    ..Args::default()
                },
            ),
            (
                &["--stateless", "--http", "127.0.0.1:0"],
                Args {
                    http: Some("127.0.0.1:0".parse().unwrap()),
                    stateless: true,
                    ..Args::default()
                },
            ),
            (
                &["--events", "/tmp/e", "--task-tool"],
                Args {
                    events: Some("/tmp/e".into()),
                    task_tool: true,
                    ..Args::default()
                },
            ),
            (
                &["--redefine", "schema"],
                Args {
                    redefine: Some(Redefine::Schema),
                    ..Args::default()
                },
            ),
        ];
        for (line, want) in ok {
            assert_eq!(args(line).as_ref(), Ok(&want), "{line:?}");
        }
    }

    #[test]
    fn protocol_versions() {
        let cases = [
            ("2024-11-05", true),
            ("2025-11-25", true),
            ("2025-01-01", true),
            ("2026-07-28", false),
            ("2099-01-01", false),
            // Unknown to any client, but it has the handshake: for testing refusals.
            ("1999-01-01", true),
        ];
        for (v, ok) in cases {
            assert_eq!(protocol_version(v).is_ok(), ok, "{v}");
        }
    }

    #[test]
    fn revisions_to_speak() {
        let v2024 = ProtocolVersion::V_2024_11_05;
        assert_eq!(versions(None, false), Ok(Versions::Any));
        assert_eq!(versions(None, true), Ok(Versions::StatelessOnly));
        assert_eq!(
            versions(Some("2024-11-05"), false),
            Ok(Versions::Pinned(v2024))
        );
        let both = versions(Some("2024-11-05"), true).expect_err("both refused");
        assert!(both.contains("exclude each other"), "{both}");
        assert!(versions(Some("2026-07-28"), false).is_err());
    }

    #[test]
    fn refused_command_lines() {
        let bad: [(&[&str], &str); 7] = [
            (&["--http", "0.0.0.0:8080"], "non-loopback"),
            (&["--http", "192.168.1.2:80"], "non-loopback"),
            (&["--http", "localhost"], "not an address"),
            (&["--notes"], "needs a value"),
            (&["--frobnicate"], "unknown argument --frobnicate"),
            (
                &["--redefine", "twice"],
                "--redefine twice: use all, schema or annotations",
            ),
            (&["--task-tool", "--http", "127.0.0.1:0"], "stdio only"),
        ];
        for (line, want) in bad {
            let err = args(line).expect_err(&format!("{line:?} should be refused"));
            assert!(err.contains(want), "{line:?}: {err}");
        }
    }
}
