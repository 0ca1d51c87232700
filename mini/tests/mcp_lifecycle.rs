//! The MCP client's lifecycle — cancelling, restarting, re-listing and re-classifying —
//! each behaviour pinned against the in-repo rmcp test server
//! (`tests/mcp-server`) through the built `evolve`, as a user meets them:
//! - over HTTP with a session, a call that times out (or is interrupted) is cancelled
//!   while its session still exists: the server hears `notifications/cancelled` for that
//!   request before the DELETE that ends the session;
//! - a server with sessions restarted on its port while `evolve serve` runs is spoken
//!   to again at once: the first call after the restart works;
//! - a tool that runs only as a task is not offered, and a call of it anyway is told
//!   there is no such tool;
//! - a tool the cheap model could not classify is L4 and is asked about again, as is
//!   one whose user level was set back to `auto`;
//! - a server answering a protocol version evolve does not know is refused by name;
//! - a server's error-level log messages show at the default log level;
//! - a server is restarted after three timeouts in a row, not after one.
//!
//! The HTTP tests read the server's `--events` file: one line per message it received,
//! in the order they arrived (`POST tools/call id=5 name=slow`,
//! `POST notifications/cancelled requestId=5`, `DELETE`).

mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::mcp::*;
use support::serve::Server;
use support::{no_panic, tool_call, Reply, Run, World, CLASSIFY};

/// The lines of the server's `--events` file so far.
fn events(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits up to 30 s for an event line that `matches`; the lines either way.
fn wait_for_event(file: &Path, matches: impl Fn(&str) -> bool) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let lines = events(file);
        if lines.iter().any(|l| matches(l)) || Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The starts the test server counted in its `--count-file`.
fn starts(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .count()
}

/// `id=N` of an event line.
fn id_of(line: &str, key: &str) -> Option<String> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .map(str::to_string)
}

/// The order a cancelled call leaves in the events: the call of `slow`, then `notifications/cancelled`
/// naming that call's id, then the DELETE ending the session.
fn assert_cancelled_before_delete(file: &Path) {
    let lines = wait_for_event(file, |l| l == "DELETE");
    let at = |want: &dyn Fn(&str) -> bool| lines.iter().position(|l| want(l));
    let call = at(&|l| l.starts_with("POST tools/call") && l.ends_with("name=slow"))
        .unwrap_or_else(|| panic!("slow was never called: {lines:#?}"));
    let id = id_of(&lines[call], "id=").expect("the call's id");
    let cancelled = at(&|l| {
        l.starts_with("POST notifications/cancelled")
            && id_of(l, "requestId=").as_deref() == Some(id.as_str())
    });
    let deleted = at(&|l| l == "DELETE");
    assert!(
        at(&|l| l.starts_with("POST initialize")).is_some_and(|i| i < call),
        "the call ran in a session: {lines:#?}"
    );
    assert!(
        cancelled.is_some_and(|c| c > call),
        "no notifications/cancelled for request {id}: {lines:#?}"
    );
    assert!(
        deleted.is_some_and(|d| Some(d) > cancelled),
        "the session ended before the server heard of the cancellation: {lines:#?}"
    );
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The test server over HTTP on `port` with `args`; `None` if it could not listen
/// (the port not free again yet).
fn http_on(port: u16, args: &[&str]) -> Option<HttpServer> {
    let mut child = Command::new(test_server())
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("test server");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let _ = std::io::BufRead::read_line(&mut out, &mut line);
    if !line.contains("listening on http://") {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    Some(HttpServer(child, format!("http://127.0.0.1:{port}/mcp")))
}

/// [`http_on`], trying for up to 30 s.
fn http_on_soon(port: u16, args: &[&str]) -> HttpServer {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(server) = http_on(port, args) {
            return server;
        }
        assert!(
            Instant::now() < end,
            "the server could not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `evolve ARGS`, killed and failed if it is not done within 90 s (a hang is a
/// failure, not a stuck test run).
fn run_within(w: &World, args: &[&str]) -> Run {
    let child = w
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn evolve");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(90)) {
        Ok(out) => Run::from(out.expect("evolve ran")),
        Err(_) => {
            kill(&[pid]);
            panic!("evolve {args:?} hung");
        }
    }
}

/// `[mcp.servers.web]` at `url` with `extra` lines, its tools classified by [`LEVELS`].
fn with_http_server(w: &World, url: &str, extra: &str) {
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!("[mcp.servers.web]\nurl = {url:?}\n{extra}\n"));
}

/// An HTTP server with sessions (2025-11-25) that writes what it hears to the file
/// `events` in the workspace.
fn http_server_with_events(w: &World) -> (HttpServer, PathBuf) {
    let log = w.workspace().join("events");
    let server = HttpServer::start_with(&[
        "--protocol",
        "2025-11-25",
        "--events",
        &log.to_string_lossy(),
    ]);
    (server, log)
}

// ---------------------------------------------------------------------------------
// A call given up on is cancelled before its session ends.
// ---------------------------------------------------------------------------------

/// `ask` with a 3 s limit calls `slow` (60 s) on a server with sessions: the model is
/// told the call was cancelled, and the server heard `notifications/cancelled` for that
/// very request, in its session, before the DELETE that ended the session.
#[test]
fn over_http_a_timed_out_call_is_cancelled_before_its_session_ends() {
    let w = World::new("rmcp-timeout-cancel");
    let (server, log) = http_server_with_events(&w);
    with_http_server(
        &w,
        &server.1,
        "timeout_secs = 3\n\n[tools.levels]\nweb__slow = \"L1\"\n",
    );
    w.fake.push(tool_call("web__slow", r#"{"ms": 60000}"#));
    w.fake.push(Reply::text("Too slow."));
    w.run(&["ask", "be slow"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results[0].contains("did not answer within 3 s; the call was cancelled"),
        "{results:?}"
    );
    assert_cancelled_before_delete(&log);
}

/// The same when the user presses Ctrl-C during the call: `ask` stops at once, and
/// cancelling the call still comes before ending the session.
#[test]
fn ctrl_c_during_an_http_call_cancels_it_before_its_session_ends() {
    let w = World::new("rmcp-sigint-cancel");
    let (server, log) = http_server_with_events(&w);
    with_http_server(&w, &server.1, "\n[tools.levels]\nweb__slow = \"L1\"\n");
    w.fake.push(tool_call("web__slow", r#"{"ms": 60000}"#));
    w.fake.push(Reply::text("Too late."));
    let mut ask = w
        .command(&["ask", "be slow"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ask");
    let seen = wait_for_event(&log, |l| l.ends_with("name=slow"));
    assert!(seen.iter().any(|l| l.ends_with("name=slow")), "{seen:#?}");
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&mut ask);
    assert_cancelled_before_delete(&log);
}

// ---------------------------------------------------------------------------------
// A server restarted on its port.
// ---------------------------------------------------------------------------------

/// The rmcp server with sessions, killed and started again on the same port while
/// `evolve serve` runs: it answers the old session 404, and the first call after the
/// restart starts a new session and works.
#[test]
fn an_rmcp_server_restarted_on_its_port_is_spoken_to_again_at_once() {
    let w = World::new("rmcp-restart-port");
    let (before, after) = (
        w.workspace().join("events-before"),
        w.workspace().join("events-after"),
    );
    let port = free_port();
    let args = |log: &Path| {
        vec![
            "--protocol".to_string(),
            "2025-11-25".to_string(),
            "--events".to_string(),
            log.to_string_lossy().into_owned(),
        ]
    };
    let first_args = args(&before);
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let first = http_on_soon(port, &first_args);
    with_http_server(&w, &first.1, "\n[tools.levels]\nweb__echo = \"L1\"\n");
    let s = Server::start(&w, &[]);
    let echo = |text: &str| {
        let body = json!({"arguments": {"text": text}}).to_string();
        s.post("/v1/tools/web__echo/run", &body)
    };
    let r = echo("before the restart");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["output"], "before the restart", "{}", r.body);
    assert!(
        events(&before)
            .iter()
            .any(|l| l.starts_with("POST initialize")),
        "a session: {:#?}",
        events(&before)
    );

    drop(first);
    let second_args = args(&after);
    let second_args: Vec<&str> = second_args.iter().map(String::as_str).collect();
    let _second = http_on_soon(port, &second_args);
    let r = echo("after the restart");
    assert_eq!(
        r.status, 200,
        "the first call after the restart works: {}",
        r.body
    );
    assert_eq!(r.json()["output"], "after the restart", "{}", r.body);
    assert_eq!(r.json()["is_error"], false, "{}", r.body);
    // The restarted server was asked to start a session and then took the call.
    let lines = events(&after);
    let posts: Vec<&String> = lines.iter().filter(|l| l.starts_with("POST")).collect();
    let init = posts.iter().position(|l| l.starts_with("POST initialize"));
    let last_call = posts
        .iter()
        .rposition(|l| l.starts_with("POST tools/call") && l.ends_with("name=echo"));
    assert!(
        init.is_some() && last_call > init,
        "a new session, then the call: {lines:#?}"
    );
    let log: Vec<String> = s.stderr.try_iter().collect();
    assert!(
        log.iter()
            .any(|l| l.contains("no longer knows evolve's session; starting a new one")),
        "{log:#?}"
    );
}

// ---------------------------------------------------------------------------------
// A tool that runs only as a task.
// ---------------------------------------------------------------------------------

/// `--task-tool` lists `research` with `execution.taskSupport: "required"`. The model
/// is not offered it (its other tools are), `mcp tools` does not list it, and a call of
/// it anyway is told there is no such tool — it never reaches the server, which would
/// answer -32601.
#[test]
fn a_task_only_tool_is_not_offered_and_a_call_of_it_is_told_there_is_none() {
    let w = World::new("rmcp-task-only");
    with_test_server(
        &w,
        &["--task-tool"],
        "\n[tools.levels]\nt__research = \"L1\"\n",
    );
    let listed = w.run(&["mcp", "tools", "t", "--json"]).expect(0).json();
    let raw: Vec<&str> = listed[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["tool"].as_str())
        .collect();
    assert!(raw.contains(&"echo"), "{listed}");
    assert!(!raw.contains(&"research"), "{listed}");

    w.fake
        .push(tool_call("t__research", r#"{"topic": "rust"}"#));
    w.fake.push(Reply::text("Could not research."));
    let record = w.run(&["ask", "--json", "research rust"]).expect(0).json();
    let first = w.main_requests().into_iter().next().expect("a request");
    let names = tool_names(&first);
    assert!(names.iter().any(|n| n == "t__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("research")),
        "the task-only tool is offered: {names:?}"
    );
    assert_eq!(record["tools"][0]["ran"], false, "{record}");
    let told = tool_results(&w, 1).join("\n");
    assert!(told.contains("there is no tool named"), "{told}");
    assert!(
        !told.contains("-32601") && !told.contains("only as a task"),
        "the call reached the server: {told}"
    );
}

// ---------------------------------------------------------------------------------
// Classifying again.
// ---------------------------------------------------------------------------------

/// A world with the test server and no retries of the cheap model (a 500 is one
/// failed classification, not a retry that takes the next scripted answer).
fn classifying_world(name: &str) -> World {
    let w = World::new(name);
    w.config(&format!(
        "[model]\nmax_retries = 0\n\n[mcp.servers.t]\ncommand = {:?}\n",
        test_server().to_string_lossy()
    ));
    w
}

/// `evolve mcp level t__wipe_everything auto` with the classifier now answering
/// `reply`: the classifier is asked again (a second time in all); the tool's row after.
fn level_auto_with(w: &World, reply: &str) -> serde_json::Value {
    w.fake.route(CLASSIFY, Reply::Text(reply.into()));
    w.run(&["mcp", "level", "t__wipe_everything", "auto"])
        .expect(0);
    let back = tool_row(w, "wipe_everything");
    assert_eq!(classifications(w), 2, "asked again: {back}");
    back
}

/// The cheap model answers 500: `mcp tools` shows `wipe_everything` (no annotations)
/// as L4, unclassified. Once the model works, the next listing asks it again and shows
/// its answer.
#[test]
fn a_failed_classification_is_l4_and_asked_again_once_the_cheap_model_works() {
    let w = classifying_world("rmcp-classify-retry");
    w.fake
        .route(CLASSIFY, Reply::error(500, "the cheap model is down"));
    let failed = tool_row(&w, "wipe_everything");
    assert_eq!(classifications(&w), 1, "{failed}");
    assert_eq!(failed["level"], "L4", "{failed}");
    assert_eq!(failed["origin"], "unclassified", "{failed}");
    assert!(failed["classifier"].is_null(), "{failed}");

    w.fake.route(
        CLASSIFY,
        Reply::Text(r#"{"wipe_everything": "L1", "echo": "L0"}"#.into()),
    );
    let classified = tool_row(&w, "wipe_everything");
    assert_eq!(classifications(&w), 2, "asked again: {classified}");
    assert_eq!(classified["classifier"], "L1", "{classified}");
    // Without readOnlyHint the floor is L3, which the answer does not lower.
    assert_eq!(classified["level"], "L3", "{classified}");
    assert_eq!(
        classified["origin"], "floor, not read-only (classifier L1)",
        "{classified}"
    );
    // The answer is kept: the next listing asks nobody.
    tool_row(&w, "wipe_everything");
    assert_eq!(classifications(&w), 2);
}

/// `evolve mcp level t__wipe_everything L1` takes the tool from the classifier; `auto`
/// gives it back, and the next listing asks the classifier about it (and only it)
/// again and shows the new answer.
#[test]
fn level_auto_after_a_users_level_asks_the_classifier_again() {
    let w = classifying_world("rmcp-classify-auto");
    w.fake.route(
        CLASSIFY,
        Reply::Text(r#"{"wipe_everything": "L3", "echo": "L0"}"#.into()),
    );
    assert_eq!(tool_row(&w, "wipe_everything")["classifier"], "L3");
    assert_eq!(classifications(&w), 1);

    w.run(&["mcp", "level", "t__wipe_everything", "L1"])
        .expect(0);
    let mine = tool_row(&w, "wipe_everything");
    assert_eq!(mine["level"], "L1", "{mine}");
    assert_eq!(mine["origin"], "user (evolve mcp level)", "{mine}");
    assert_eq!(classifications(&w), 1, "a user's level needs no classifier");

    let back = level_auto_with(&w, r#"{"wipe_everything": "L4"}"#);
    assert_eq!(back["classifier"], "L4", "{back}");
    assert_eq!(back["level"], "L4", "{back}");
    let asked = w
        .fake
        .chat_requests()
        .into_iter()
        .rfind(|r| r.body.contains(CLASSIFY))
        .expect("a classification");
    assert!(
        asked.body.contains("Tools (1)") && asked.body.contains("name: wipe_everything"),
        "only the tool set back is asked about: {}",
        asked.body
    );
}

/// A reply that names none of the tools caches them as unclassified (not asked again
/// at every listing); `auto` on one of them asks about it at once.
#[test]
fn level_auto_asks_again_about_a_tool_the_classifier_gave_no_level() {
    let w = classifying_world("rmcp-classify-garbage");
    w.fake.route(
        CLASSIFY,
        Reply::Text("I cannot help with classifying tools.".into()),
    );
    assert_eq!(tool_row(&w, "wipe_everything")["origin"], "unclassified");
    tool_row(&w, "wipe_everything");
    assert_eq!(classifications(&w), 1, "not asked at every listing");

    let back = level_auto_with(&w, r#"{"wipe_everything": "L3"}"#);
    assert_eq!(back["classifier"], "L3", "{back}");
}

// ---------------------------------------------------------------------------------
// A protocol version evolve does not know.
// ---------------------------------------------------------------------------------

/// The server answers `initialize` with protocol version 1999-01-01 (stdio, and HTTP
/// after `server/discover` is refused): `mcp tools` fails at once (exit 1) saying which
/// version the server answered — no hang, no panic.
#[test]
fn a_server_answering_an_unknown_protocol_version_is_refused_by_name() {
    let w = World::new("rmcp-unknown-version");
    with_test_server(&w, &["--protocol", "1999-01-01"], "");
    let http = HttpServer::start_with(&["--protocol", "1999-01-01"]);
    let mut config = std::fs::read_to_string(w.config_path()).expect("config");
    config.push_str(&format!("\n[mcp.servers.web]\nurl = {:?}\n", http.1));
    w.config(&config);
    for server in ["t", "web"] {
        let run = run_within(&w, &["mcp", "tools", server]);
        no_panic(&run);
        let said = format!("{}\n{}", run.stdout, run.stderr);
        assert_eq!(run.code, 1, "{server}: {said}");
        assert!(
            said.contains("\"1999-01-01\"") && said.contains("which evolve does not speak"),
            "{server}: {said}"
        );
    }
}

// ---------------------------------------------------------------------------------
// The server's log at the default log level.
// ---------------------------------------------------------------------------------

/// The `log` tool sends `notifications/message` during the call. With no `EVOLVE_LOG`
/// (the default, warnings and worse) `ask` shows the server's error on stderr, and not
/// its info message.
#[test]
fn a_servers_error_log_shows_at_the_default_log_level() {
    let mut w = World::new("rmcp-log-error");
    w.env_remove("EVOLVE_LOG");
    with_test_server(&w, &[], "\n[tools.levels]\nt__log = \"L1\"\n");
    w.fake.push(tool_call(
        "t__log",
        r#"{"level": "error", "message": "the disk is on fire 7731"}"#,
    ));
    w.fake.push(tool_call(
        "t__log",
        r#"{"level": "info", "message": "a routine note 4410"}"#,
    ));
    w.fake.push(Reply::text("Logged."));
    let run = w
        .run(&[
            "ask",
            "log something: error, the disk is on fire 7731; info, a routine note 4410",
        ])
        .expect(0);
    assert_eq!(
        tool_results(&w, 2),
        ["logged at error", "logged at info"],
        "the calls ran"
    );
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("the disk is on fire 7731"))
        .unwrap_or_else(|| panic!("the server's error is not shown:\n{}", run.stderr));
    assert!(line.contains("MCP server \"t\" logs"), "{line}");
    assert!(
        !run.stderr.contains("a routine note 4410"),
        "info is not shown by default:\n{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------
// When a server that timed out is restarted.
// ---------------------------------------------------------------------------------

/// A world with the stdio test server counting its starts (5 s per call), the model
/// calling `calls` one per step, then answering. Returns the start count file.
fn timeouts_world(name: &str, calls: &[(&str, &str)]) -> (World, std::path::PathBuf) {
    let w = World::new(name);
    let count = w.workspace().join("starts");
    with_test_server(
        &w,
        &["--count-file", &count.to_string_lossy()],
        "timeout_secs = 5\n\n[tools.levels]\nt__slow = \"L1\"\nt__echo = \"L1\"\n",
    );
    for (tool, args) in calls {
        w.fake.push(tool_call(tool, args));
    }
    w.fake.push(Reply::text("Done."));
    (w, count)
}

/// Calls of `slow` that each time out; their arguments differ (a call repeated with the
/// same arguments in one turn is not run again).
const SLOW: [(&str, &str); 3] = [
    ("t__slow", r#"{"ms": 60000}"#),
    ("t__slow", r#"{"ms": 60001}"#),
    ("t__slow", r#"{"ms": 60002}"#),
];

/// A timeout cancels the call but keeps a server that answers `ping`; a completed call
/// starts the count again, so two more timeouts do not restart it either.
#[test]
fn a_timeout_does_not_restart_a_server_that_still_answers() {
    let (w, count) = timeouts_world(
        "rmcp-one-timeout",
        &[
            SLOW[0],
            ("t__echo", r#"{"text": "after one"}"#),
            SLOW[1],
            SLOW[2],
            ("t__echo", r#"{"text": "after two more"}"#),
        ],
    );
    let run = w
        .run(&[
            "ask",
            "slow 60000 ms and echo after one, slow 60001 and 60002, echo after two more",
        ])
        .expect(0);
    let results = tool_results(&w, 5);
    for i in [0, 2, 3] {
        assert!(
            results[i].contains("did not answer within 5 s"),
            "{i}: {results:?}"
        );
    }
    assert_eq!(results[1], "after one", "{results:?}");
    assert_eq!(results[4], "after two more", "{results:?}");
    assert_eq!(starts(&count), 1, "restarted:\n{}", run.stderr);
    assert!(!run.stderr.contains("in a row timed out"), "{}", run.stderr);
}

/// Three timeouts in a row: the server is stopped, and the next call starts it again
/// and is answered.
#[test]
fn three_timeouts_in_a_row_restart_the_server() {
    let (w, count) = timeouts_world(
        "rmcp-three-timeouts",
        &[
            SLOW[0],
            SLOW[1],
            SLOW[2],
            ("t__echo", r#"{"text": "after three"}"#),
        ],
    );
    let run = w
        .run(&[
            "ask",
            "slow three times (60000, 60001, 60002 ms), then echo after three",
        ])
        .expect(0);
    let results = tool_results(&w, 4);
    for result in &results[..3] {
        assert!(result.contains("did not answer within 5 s"), "{results:?}");
    }
    assert_eq!(results[3], "after three", "{results:?}");
    assert_eq!(
        starts(&count),
        2,
        "started, stopped, started:\n{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("MCP server \"t\": 3 calls in a row timed out; it is restarted on next use"),
        "{}",
        run.stderr
    );
}
