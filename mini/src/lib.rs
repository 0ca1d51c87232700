//! `evolve` — a small, safe personal AI agent in one static binary.
//!
//! This crate is the I/O shell around `evolve-core`: it reads files, clocks, sockets and
//! the model, and hands everything the core needs to its pure functions. The binary
//! (`main.rs`) only calls [`run`]. Public beside it are the parsers that read what others
//! wrote, which the fuzz targets (`fuzz/`) drive, and the store's tokenizer, which the
//! recall bench measures; every other module stays private, so the compiler still
//! reports what nothing uses.

mod agents;
mod cancel;
mod channels;
mod cli;
mod clock;
mod config;
mod error;
mod heap;
mod inflate;
mod llm;
mod logger;
mod mcp;
mod mcp_spec;
mod said;
mod sandbox;
mod sched;
mod secret;
mod skills;
mod store;
#[cfg(test)]
mod testing;
pub mod text;
mod tls;
mod tools;
mod web;
mod ws;
mod zone;

// What the fuzz targets read: a model's event stream, an MCP server's stdout (and the
// cancel its requests take), a `config.toml`.
pub use cancel::Cancel;
pub use config::file as config_file;
pub use llm::sse;
pub use mcp::{jsonrpc, lines};

use std::process::ExitCode;

/// Panics become one clear line and exit code 1 instead of a backtrace (or, in the
/// release build, an abort). redb panics on some kinds of damage to its file that the
/// open's checks cannot see (a file changed while it is open): that case names the store
/// and says what to do, without the panic's own text.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let place = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if place.contains("redb") {
            let damaged = store::StoreError::Damaged {
                path: cli::app::store_path()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_else(|| "evolve.redb".into()),
                what: "a page of it holds data redb cannot read".into(),
            };
            eprintln!("evolve: {damaged}");
        } else {
            eprintln!("evolve: internal error at {place}: {what} — please report it");
        }
        std::process::exit(1);
    }));
}

/// The whole `evolve` command: parses the command line, runs it and says how it ended.
pub fn run() -> ExitCode {
    config::private::restrict_umask();
    heap::configure();
    install_panic_hook();
    let args = match parse_args() {
        Ok(args) => args,
        Err(code) => return code,
    };
    let result = cli::run(args);
    // Nothing a command started outlives evolve (see sandbox::reaper).
    sandbox::reaper::reap_strays();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("evolve: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Parses the command line like `argh::from_env`, but with the contract's exit codes:
/// `--help` prints to stdout and exits 0; a usage error prints to stderr and exits 2.
fn parse_args() -> Result<cli::Evolve, ExitCode> {
    let strings: Vec<String> = std::env::args_os()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let Some((cmd, rest)) = strings.split_first() else {
        return Err(ExitCode::from(2));
    };
    let cmd = std::path::Path::new(cmd)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("evolve");
    // argh reads a bare `-` as an unknown option. For the commands whose text may come
    // from stdin (`ask -`, `memory add -`, `prompt set -`) it is passed on as a marker
    // they recognise.
    let reads_stdin = matches!(
        (
            rest.first().map(String::as_str),
            rest.get(1).map(String::as_str)
        ),
        (Some("ask"), _) | (Some("memory"), Some("add")) | (Some("prompt"), Some("set"))
    );
    let rest: Vec<&str> = rest
        .iter()
        .map(|a| {
            if reads_stdin && a == "-" {
                cli::STDIN_ARG
            } else {
                a.as_str()
            }
        })
        .collect();
    let rest = hoist_profile(&rest);
    <cli::Evolve as argh::FromArgs>::from_args(&[cmd], &rest).map_err(|early| match early.status {
        Ok(()) => {
            print!("{}", early.output);
            ExitCode::SUCCESS
        }
        Err(()) => {
            eprint!("{}", early.output);
            ExitCode::from(2)
        }
    })
}

/// `--profile NAME` is one option of `evolve` itself; written after the command
/// (`evolve ask --profile alt …`, as it always could be) it is moved in front, so every
/// subcommand takes it without declaring it. Arguments after `--` are left alone (an MCP
/// server's own command line may have a `--profile`).
fn hoist_profile<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut front: Vec<&'a str> = Vec::new();
    let mut rest: Vec<&'a str> = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        if arg == "--" {
            rest.extend_from_slice(&args[i..]);
            break;
        }
        if arg == "--profile" && i + 1 < args.len() {
            front.extend_from_slice(&args[i..i + 2]);
            i += 2;
            continue;
        }
        if let Some(name) = arg.strip_prefix("--profile=") {
            front.push("--profile");
            front.push(name);
        } else {
            rest.push(arg);
        }
        i += 1;
    }
    front.extend(rest);
    front
}

#[cfg(test)]
mod tests {
    use super::hoist_profile;

    #[test]
    fn profile_moves_in_front_of_the_command_but_not_past_a_double_dash() {
        let cases: &[(&[&str], &[&str])] = &[
            (
                &["ask", "--profile", "alt", "hi"],
                &["--profile", "alt", "ask", "hi"],
            ),
            (
                &["--profile", "alt", "ask", "hi"],
                &["--profile", "alt", "ask", "hi"],
            ),
            (
                &["memory", "list", "--profile=w"],
                &["--profile", "w", "memory", "list"],
            ),
            (
                &["mcp", "add", "x", "--", "srv", "--profile", "p"],
                &["mcp", "add", "x", "--", "srv", "--profile", "p"],
            ),
            (&["ask", "--profile"], &["ask", "--profile"]),
            (&["ask", "hi"], &["ask", "hi"]),
        ];
        for (given, want) in cases {
            assert_eq!(hoist_profile(given), *want, "{given:?}");
        }
    }
}
