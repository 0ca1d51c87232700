//! What MCP costs, measured through the release binary against the in-repo fake model and
//! the in-repo MCP test server (`tests/mcp-server`), figures printed, never asserted:
//! - a tool call's round trip made directly: this bench spawns the server, does the
//!   JSON-RPC handshake over stdio and times `tools/call echo` requests;
//! - the same call through Evolve: one `evolve chat` whose model asks for `t__echo` in
//!   each turn, timed on the fake model's clock from the end of the tool-call answer to
//!   the arrival of the next request carrying the result — everything Evolve does around
//!   the call (parsing the answer, the permission check, the call through the MCP
//!   thread, the history and the store, building and sending the next request);
//! - the cold start: the first turn of a session starts the server (spawn, initialize,
//!   `tools/list`), either while the turn is prepared or at the first call; both spans of
//!   the first turn are printed next to those of a warm turn, and the same start made
//!   directly;
//! - RSS of the `evolve` process alone (its servers excluded), idle at the prompt: before
//!   any turn, after a turn with no MCP server configured, and after a turn that
//!   connected three stdio servers.
//!
//! Not here: the binary size MCP adds (it takes a second release build without MCP; the
//! documentation records it). Learning is off in these homes, so no background model
//! call runs between turns.
//!
//! Run: `cargo bench -p evolve-mini --bench mcp` (builds the test server in release
//! first when it is missing).

mod support;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use evolve_fake_llm::{FakeLlm, Recorded, Reply};
use serde_json::{json, Value};

use support::mcp::{test_server, CLASSIFY, LEVELS};
use support::ms;
use support::server::{children, memory};

/// Direct round trips timed (after 20 untimed ones warm the server up).
const DIRECT_CALLS: usize = 300;
/// Calls through Evolve timed, after the cold one; each is a turn of two model requests.
const EVOLVE_CALLS: usize = 40;
/// The protocol version Evolve asks for (mcp/conn.rs), so both clients get the same server.
const PROTOCOL: &str = "2025-11-25";

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    let server = test_server(&exe);
    println!("MCP server: {}", server.display());

    let (direct_cold, direct) = direct_calls(&server);
    let t = evolve_calls(&exe, &server);
    let (direct_med, through_med) = (median(&direct), median(&t.calls));
    println!(
        "tool call made directly over JSON-RPC (stdio): median {:.3} ms, p90 {:.3} ms ({DIRECT_CALLS} calls)",
        ms(direct_med),
        ms(percentile(&direct, 90))
    );
    println!(
        "tool call through evolve (model's tool-call answer -> next model request): median {:.3} ms, p90 {:.3} ms ({EVOLVE_CALLS} calls)",
        ms(through_med),
        ms(percentile(&t.calls, 90))
    );
    println!(
        "ratio through evolve / direct: {:.0}x (evolve adds {:.3} ms per call)",
        through_med.as_secs_f64() / direct_med.as_secs_f64(),
        ms(through_med.saturating_sub(direct_med))
    );
    println!(
        "cold start through evolve, first turn: user line -> model request {:.1} ms, tool call {:.1} ms (warm turn medians: {:.1} ms, {:.1} ms); the server starts in one of the two",
        ms(t.first_setup),
        ms(t.first_call),
        ms(median(&t.setups)),
        ms(through_med)
    );
    println!(
        "cold start made directly: spawn + initialize + first call {:.1} ms",
        ms(direct_cold)
    );
    idle_rss(&exe, &server);
}

fn median(xs: &[Duration]) -> Duration {
    percentile(xs, 50)
}

fn percentile(xs: &[Duration], p: usize) -> Duration {
    let mut v = xs.to_vec();
    v.sort();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

/// A bare JSON-RPC client over the server's stdin and stdout: one request in flight.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Direct {
    fn start(server: &Path) -> Direct {
        let mut child = Command::new(server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the MCP test server");
        let stdin = child.stdin.take().expect("the server's stdin");
        let stdout = BufReader::new(child.stdout.take().expect("the server's stdout"));
        let mut d = Direct {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = d.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "evolve-bench", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        d.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        d
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .expect("write to the server");
    }

    /// Sends a request and reads until its answer (notifications are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read the server");
            assert!(n > 0, "the server closed its stdout during {method}");
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == id {
                return v;
            }
        }
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The cold start (spawn, handshake, first call), then [`DIRECT_CALLS`] warm calls.
fn direct_calls(server: &Path) -> (Duration, Vec<Duration>) {
    let t = Instant::now();
    let mut d = Direct::start(server);
    let mut call = |i: usize| {
        let text = format!("call {i}");
        let t = Instant::now();
        let reply = d.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}}),
        );
        let took = t.elapsed();
        assert!(
            reply.to_string().contains(&text),
            "echo did not echo: {reply}"
        );
        took
    };
    call(0);
    let cold = t.elapsed();
    for i in 1..20 {
        call(i);
    }
    (cold, (20..20 + DIRECT_CALLS).map(call).collect())
}

/// A home with `config.toml` naming these servers (all the test server), learning off
/// (no background model calls between turns), the tool lists cached and classified by
/// `evolve mcp tools` so `chat` starts a server only when it is called.
fn home(exe: &Path, fake: &FakeLlm, name: &str, server: &Path, servers: &[&str]) -> PathBuf {
    let home = std::env::temp_dir().join(format!("evolve-bench-mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("bench home");
    let mut config = String::from("[agent]\nlearn = false\n");
    for s in servers {
        config.push_str(&format!(
            "\n[mcp.servers.{s}]\ncommand = {:?}\n",
            server.to_string_lossy()
        ));
        fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    }
    std::fs::write(home.join("config.toml"), config).expect("write config.toml");
    if servers.is_empty() {
        return home;
    }
    let out = evolve(exe, &home, fake)
        .args(["mcp", "tools"])
        .output()
        .expect("run evolve mcp tools");
    assert!(
        out.status.success(),
        "evolve mcp tools failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    home
}

fn evolve(exe: &Path, home: &Path, fake: &FakeLlm) -> Command {
    support::evolve(exe, home, fake, "error")
}

/// `evolve chat` with stdin piped and its output in files of `home` (shown on failure).
fn chat(exe: &Path, home: &Path, fake: &FakeLlm) -> Child {
    let file = |name: &str| File::create(home.join(name)).expect("an output file");
    evolve(exe, home, fake)
        .arg("chat")
        .stdin(Stdio::piped())
        .stdout(file("chat.out"))
        .stderr(file("chat.err"))
        .spawn()
        .expect("spawn evolve chat")
}

/// Waits for `n` main-model requests, or stops `chat` and panics with what it printed.
fn wait_main(fake: &FakeLlm, n: usize, child: &mut Child, home: &Path) -> Vec<Recorded> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let main = main_requests(fake);
        if main.len() >= n {
            return main;
        }
        if Instant::now() > deadline || matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.kill();
            let _ = child.wait();
            let read = |f: &str| std::fs::read_to_string(home.join(f)).unwrap_or_default();
            panic!(
                "evolve chat made {} of {n} model requests\n--- stdout\n{}\n--- stderr\n{}",
                main.len(),
                read("chat.out"),
                read("chat.err")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The chat requests that are not background prompts (classification).
fn main_requests(fake: &FakeLlm) -> Vec<Recorded> {
    fake.chat_requests()
        .into_iter()
        .filter(|r| !r.body.contains("[evolve:"))
        .collect()
}

/// What one `evolve chat` session of echo turns measured.
struct Through {
    /// First turn: the user's line written -> the first model request.
    first_setup: Duration,
    /// First turn: the tool-call answer -> the request carrying the result.
    first_call: Duration,
    /// The same two spans of the warm turns.
    setups: Vec<Duration>,
    calls: Vec<Duration>,
}

/// A session of `EVOLVE_CALLS + 1` turns: in each the model asks for `t__echo`, then
/// answers with text. A line is typed once the turn before is over, so every turn starts
/// from an idle prompt.
fn evolve_calls(exe: &Path, server: &Path) -> Through {
    let fake = FakeLlm::start();
    let home = home(exe, &fake, "calls", server, &["t"]);
    let turns = EVOLVE_CALLS + 1;
    for i in 0..turns {
        let args = json!({"text": format!("call {i}")}).to_string();
        fake.push(Reply::tool("t__echo", args));
        fake.push(Reply::Text(format!("Done {i}.")));
    }
    let mut child = chat(exe, &home, &fake);
    let mut stdin = child.stdin.take().expect("chat's stdin");
    settle();
    let mut typed = Vec::new();
    for i in 0..turns {
        typed.push(Instant::now());
        writeln!(stdin, "echo call {i}")
            .and_then(|()| stdin.flush())
            .expect("write to chat");
        wait_main(&fake, 2 * (i + 1), &mut child, &home);
        // The answer printed, the turn recorded: back at the prompt.
        std::thread::sleep(Duration::from_millis(60));
    }
    let main = main_requests(&fake);
    let _ = writeln!(stdin, "/quit");
    drop(stdin);
    let _ = child.wait();

    let (mut setups, mut calls) = (Vec::new(), Vec::new());
    for (i, pair) in main.chunks(2).take(turns).enumerate() {
        let (ask, with_result) = (&pair[0], &pair[1]);
        let last = with_result.messages().last().cloned().unwrap_or_default();
        assert!(
            last["role"] == "tool"
                && last["content"]
                    .as_str()
                    .is_some_and(|c| c.contains(&format!("call {i}"))),
            "turn {i}: the echo result did not reach the model: {last}"
        );
        let answered = ask.answered.expect("the tool-call answer was written");
        setups.push(ask.received.saturating_duration_since(typed[i]));
        calls.push(with_result.received.saturating_duration_since(answered));
    }
    let _ = std::fs::remove_dir_all(&home);
    Through {
        first_setup: setups.remove(0),
        first_call: calls.remove(0),
        setups,
        calls,
    }
}

/// Long enough for `chat` to be idle at its prompt (started, or done with a turn).
fn settle() {
    std::thread::sleep(Duration::from_millis(700));
}

/// RSS of `evolve chat` alone, idle at its prompt: before any turn; after a turn in a
/// home with no MCP server; after a turn that called three stdio servers once each (the
/// connections' threads of three servers).
fn idle_rss(exe: &Path, server: &Path) {
    let (before, without) = {
        let fake = FakeLlm::start();
        let home = home(exe, &fake, "rss-none", server, &[]);
        fake.push(Reply::Text("Hello.".into()));
        let (before, after, _) = rss_around_turn(exe, &home, &fake, 1);
        (before, after)
    };
    let names = ["a", "b", "c"];
    let fake = FakeLlm::start();
    let home = home(exe, &fake, "rss-three", server, &names);
    let calls = names
        .iter()
        .map(|s| (format!("{s}__echo"), r#"{"text": "hi"}"#.to_string()))
        .collect();
    fake.push(Reply::ToolCalls(calls));
    fake.push(Reply::Text("All three answered.".into()));
    let (_, connected, servers) = rss_around_turn(exe, &home, &fake, 2);
    let results = main_requests(&fake)[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.contains("hi")))
        .count();
    assert_eq!(results, 3, "the three echo results reach the model");
    assert_eq!(servers.len(), 3, "three servers run while evolve is idle");

    let mb = |kib: u64| kib as f64 / 1024.0;
    println!(
        "RSS of `evolve chat` alone, idle at its prompt: before any turn {:.1} MB; after a turn, no MCP server configured {:.1} MB; after a turn that connected three stdio servers {:.1} MB (+{:.1} MB)",
        mb(before),
        mb(without),
        mb(connected),
        mb(connected.saturating_sub(without))
    );
    let each: Vec<String> = servers.iter().map(|k| format!("{:.1}", mb(*k))).collect();
    println!(
        "  (not counted: the three server processes, {} MB)",
        each.join(" + ")
    );
}

/// Starts `chat` in `home`, types one line whose turn makes `requests` main-model
/// requests; returns the RSS at the prompt before and after the turn, and the RSS of each
/// child process after it.
fn rss_around_turn(
    exe: &Path,
    home: &Path,
    fake: &FakeLlm,
    requests: usize,
) -> (u64, u64, Vec<u64>) {
    let mut child = chat(exe, home, fake);
    let mut stdin = child.stdin.take().expect("chat's stdin");
    settle();
    let before = memory(child.id()).rss;
    assert!(children(child.id()).is_empty(), "no server before a turn");
    writeln!(stdin, "hello")
        .and_then(|()| stdin.flush())
        .expect("write to chat");
    wait_main(fake, requests, &mut child, home);
    settle();
    let after = memory(child.id()).rss;
    let servers = children(child.id())
        .into_iter()
        .map(|pid| memory(pid).rss)
        .collect();
    let _ = writeln!(stdin, "/quit");
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(home);
    (before, after, servers)
}
