//! MCP end to end: the built `evolve` binary, the in-repo fake model, and real MCP
//! servers — the in-repo rmcp test server (`tests/mcp-server`, stdio and streamable
//! HTTP) and third-party servers from npm and PyPI (installed by `tests/mcp-peers.sh`;
//! their tests skip with a message when the variables it exports are missing, and fail
//! under `CI=true`).

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::mcp::*;
use support::*;

#[test]
fn the_model_sees_server_tools_and_an_echo_result_reaches_it() {
    let w = World::new("mcp-echo");
    with_test_server(&w, &[], "");
    w.fake
        .push(tool_call("t__echo", r#"{"text": "hello from MCP"}"#));
    w.fake.push(Reply::Text("The server said hello.".into()));
    let run = w.run(&["ask", "--json", "Echo something"]).expect(0);
    let reqs = w.main_requests();
    let names = tool_names(&reqs[0]);
    for want in ["t__echo", "t__add", "t__write_note", "t__slow", "get_time"] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("hello from MCP")),
        "{results:?}"
    );
    let record = run.json();
    let tools = record["tools"].as_array().expect("tools");
    assert_eq!(tools[0]["name"], "t__echo");
    assert_eq!(tools[0]["ran"], true);
    // The classifier said L0; a read-only tool is no lower than L2 without the user.
    assert_eq!(tools[0]["level"], "L2", "{record}");
}

#[test]
fn an_error_result_reaches_the_model_as_a_tool_error() {
    let w = World::new("mcp-is-error");
    with_test_server(&w, &[], "");
    w.fake
        .push(tool_call("t__fail", r#"{"message": "disk on fire"}"#));
    w.fake.push(Reply::Text("It failed.".into()));
    let run = w.run(&["ask", "--json", "Try it"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("disk on fire")),
        "{results:?}"
    );
    assert_eq!(run.json()["tools"][0]["is_error"], true);
}

#[test]
fn a_crash_mid_call_is_a_clear_error_and_the_next_call_works() {
    let w = World::new("mcp-crash");
    let count = w.workspace().join("starts.txt");
    with_test_server(&w, &["--count-file", &count.to_string_lossy()], "");
    w.fake.push(tool_call("t__crash", "{}"));
    w.fake
        .push(tool_call("t__echo", r#"{"text": "back again"}"#));
    w.fake.push(Reply::Text("Recovered.".into()));
    // `crash` has no readOnlyHint: L3, run headless only with --yes.
    let run = w
        .run(&["ask", "--yes", "--json", "Crash it, then echo back again"])
        .expect(0);
    let after_crash = tool_results(&w, 1);
    assert!(
        after_crash
            .iter()
            .any(|r| r.contains("stopped during the call") && r.contains("restarted")),
        "{after_crash:?}"
    );
    let after_echo = tool_results(&w, 2);
    assert!(
        after_echo.iter().any(|r| r.contains("back again")),
        "{after_echo:?}"
    );
    let starts = std::fs::read_to_string(&count).unwrap_or_default();
    assert_eq!(
        starts.lines().count(),
        2,
        "started, crashed, started again: {starts:?}"
    );
    assert_eq!(run.json()["reply"], "Recovered.");
}

#[test]
fn a_slow_tool_times_out_with_a_clear_error() {
    let w = World::new("mcp-slow");
    with_test_server(&w, &[], "timeout_secs = 1");
    w.fake.push(tool_call("t__slow", r#"{"ms": 20000}"#));
    w.fake.push(Reply::Text("Too slow.".into()));
    let t = Instant::now();
    w.run(&["ask", "Be slow"]).expect(0);
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "the turn did not wait for the tool"
    );
    let results = tool_results(&w, 1);
    assert!(
        results
            .iter()
            .any(|r| r.contains("did not answer within 1 s")),
        "{results:?}"
    );
}

#[test]
fn a_side_effect_tool_is_refused_headless_and_approved_in_chat() {
    let w = World::new("mcp-l3");
    let notes = w.workspace().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    with_test_server(&w, &["--notes", &notes.to_string_lossy()], "");
    w.fake.push(tool_call(
        "t__write_note",
        r#"{"name": "a.txt", "text": "hi"}"#,
    ));
    w.fake.push(Reply::Text("Could not write.".into()));
    w.run(&["ask", "Write a note"]).expect(4);
    assert!(
        !notes.join("a.txt").exists(),
        "nothing ran without a person"
    );

    w.fake.push(tool_call(
        "t__write_note",
        r#"{"name": "b.txt", "text": "hi"}"#,
    ));
    w.fake.push(Reply::Text("Written.".into()));
    let run = w.run_stdin(&["chat"], "Write a note\ny\n/quit\n");
    assert!(run.stdout.contains("Written."), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(notes.join("b.txt")).unwrap_or_default(),
        "hi"
    );
}

#[test]
fn a_tool_list_change_is_seen_by_the_next_step() {
    let w = World::new("mcp-list-changed");
    with_test_server(&w, &[], "");
    // The new tool is classified when it appears.
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"extra": "L1"}"#.into()));
    w.fake.push(tool_call("t__add_tool", "{}"));
    w.fake.push(tool_call("t__extra", "{}"));
    w.fake.push(Reply::Text("Done.".into()));
    // `add_tool` has no readOnlyHint: L3, run headless only with --yes.
    let run = w
        .run(&["ask", "--yes", "--json", "Add a tool and use it"])
        .expect(0);
    let reqs = w.main_requests();
    assert!(!tool_names(&reqs[0]).iter().any(|n| n == "t__extra"));
    assert!(
        tool_names(&reqs[1]).iter().any(|n| n == "t__extra"),
        "the step after tools/list_changed offers the new tool: {:?}",
        tool_names(&reqs[1])
    );
    let record = run.json();
    assert_eq!(record["tools"][1]["name"], "t__extra");
    assert_eq!(record["tools"][1]["ran"], true, "{record}");
}

#[test]
fn no_server_outlives_evolve() {
    let w = World::new("mcp-orphans");
    let pids = w.workspace().join("pids.txt");
    with_test_server(&w, &["--count-file", &pids.to_string_lossy()], "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("ok".into()));
    w.run(&["ask", "echo"]).expect(0);
    let text = std::fs::read_to_string(&pids).unwrap_or_default();
    let pid: u32 = text
        .lines()
        .last()
        .and_then(|l| l.rsplit('=').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the server wrote no pid: {text:?}"));
    let gone = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
    assert!(gone, "the MCP server {pid} still runs after evolve exited");
}

#[test]
fn a_streamable_http_server_works_like_a_stdio_one() {
    let server = HttpServer::start();
    let w = World::new("mcp-http");
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.run(&["mcp", "add", "web", "--url", &server.1]).expect(0);
    w.fake.push(tool_call("web__add", r#"{"a": 2, "b": 40}"#));
    w.fake.push(Reply::Text("42".into()));
    w.run(&["ask", "Add"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(results.iter().any(|r| r.contains("42")), "{results:?}");
}

#[test]
fn importing_an_mcp_servers_file_adds_working_servers() {
    let w = World::new("mcp-import");
    let file = w.workspace().join("claude.json");
    std::fs::write(
        &file,
        serde_json::json!({"mcpServers": {"imp": {"command": test_server(), "args": []}}})
            .to_string(),
    )
    .unwrap();
    w.run(&["mcp", "import", &file.to_string_lossy()]).expect(0);
    let list = w.run(&["mcp", "list"]).expect(0);
    assert!(list.stdout.contains("imp"), "{}", list.stdout);
    let tools = w.run(&["mcp", "tools", "imp"]).expect(0);
    assert!(tools.stdout.contains("imp__echo"), "{}", tools.stdout);
}

#[test]
fn everything_echo_through_the_binary() {
    let Some(everything) = peer("EVOLVE_TEST_MCP_EVERYTHING") else {
        return;
    };
    let w = World::new("mcp-everything");
    w.config(&format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{everything:?}]\n"
    ));
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"echo": "L0"}"#.into()));
    w.fake.push(tool_call(
        "everything__echo",
        r#"{"message": "ping through evolve"}"#,
    ));
    w.fake.push(Reply::Text("pong".into()));
    // --yes: a server version without readOnlyHint on `echo` makes it L3.
    w.run(&["ask", "--yes", "echo"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("ping through evolve")),
        "{results:?}"
    );
}

/// server-filesystem marks `create_directory` as a write that destroys nothing (L3:
/// asked once) and `write_file` as destructive (it overwrites): an untrusted server's
/// "destructive" is believed, so writing a file is L4 (asked twice), whatever the
/// classifier said.
#[test]
fn filesystem_writes_are_refused_headless_and_approved_in_chat() {
    let Some(fs) = peer("EVOLVE_TEST_MCP_FILESYSTEM") else {
        return;
    };
    let w = World::new("mcp-filesystem");
    let dir = w.workspace().join("shared");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    w.config(&format!(
        "[mcp.servers.fs]\ncommand = \"node\"\nargs = [{fs:?}, {:?}]\n",
        dir.to_string_lossy()
    ));
    w.fake.route(
        CLASSIFY,
        Reply::Text(
            r#"{"create_directory": "L3", "write_file": "L3", "read_text_file": "L2"}"#.into(),
        ),
    );
    let sub = dir.join("made");
    let mkdir = serde_json::json!({"path": sub}).to_string();
    w.fake.push(tool_call("fs__create_directory", &mkdir));
    w.fake.push(Reply::Text("Refused.".into()));
    let run = w.run(&["ask", "--json", "make a folder"]).expect(4);
    assert_eq!(run.json()["tools"][0]["level"], "L3", "{}", run.stdout);
    assert!(!sub.exists());

    w.fake.push(tool_call("fs__create_directory", &mkdir));
    w.fake.push(Reply::Text("Made.".into()));
    let run = w.run_stdin(&["chat"], "make a folder\ny\n/quit\n");
    assert!(run.stdout.contains("Made."), "{}", run.stdout);
    assert!(sub.is_dir(), "approved once, the L3 call ran");

    let file = dir.join("hello.txt");
    let write = serde_json::json!({"path": file, "content": "hi"}).to_string();
    w.fake.push(tool_call("fs__write_file", &write));
    w.fake.push(Reply::Text("Refused.".into()));
    let run = w.run(&["ask", "--json", "write hello"]).expect(4);
    assert_eq!(run.json()["tools"][0]["level"], "L4", "{}", run.stdout);
    assert!(!file.exists());

    w.fake.push(tool_call("fs__write_file", &write));
    w.fake.push(Reply::Text("Written.".into()));
    let run = w.run_stdin(&["chat"], "write hello\nyes\nyes\n/quit\n");
    assert!(run.stdout.contains("Written."), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap_or_default(), "hi");
}

#[test]
fn the_time_server_from_pypi_answers() {
    let Some(time) = peer("EVOLVE_TEST_MCP_TIME") else {
        return;
    };
    let w = World::new("mcp-time");
    w.config(&format!("[mcp.servers.time]\ncommand = {time:?}\n"));
    w.fake.route(
        CLASSIFY,
        Reply::Text(r#"{"get_current_time": "L1", "convert_time": "L0"}"#.into()),
    );
    w.fake.push(tool_call(
        "time__get_current_time",
        r#"{"timezone": "Asia/Shanghai"}"#,
    ));
    w.fake.push(Reply::Text("It is late.".into()));
    // --yes: without readOnlyHint the time tools are L3, whatever the classifier said.
    w.run(&["ask", "--yes", "time in Shanghai?"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("Asia/Shanghai")),
        "{results:?}"
    );
}

/// npm's server-everything in its streamable HTTP mode, pinned to 127.0.0.1 by the
/// loopback preload of tests/mcp-peers.sh: `everything__echo` over HTTP.
#[test]
fn everything_over_streamable_http() {
    let (Some(everything), Some(loopback)) = (
        peer("EVOLVE_TEST_MCP_EVERYTHING"),
        peer("EVOLVE_TEST_MCP_LOOPBACK"),
    ) else {
        return;
    };
    let (server, port) = everything_http(&everything, &loopback, 0);
    let w = World::new("mcp-everything-http");
    w.run(&[
        "mcp",
        "add",
        "everything",
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ])
    .expect(0);
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"echo": "L0"}"#.into()));
    w.fake
        .push(tool_call("everything__echo", r#"{"message": "over HTTP"}"#));
    w.fake.push(Reply::Text("pong".into()));
    // --yes: a server version without readOnlyHint on `echo` makes it L3.
    w.run(&["ask", "--yes", "echo"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("over HTTP")),
        "{results:?}"
    );
    drop(server);
}

/// npm's server-everything over streamable HTTP on a given port (0: any), and the port
/// it listens on.
fn everything_http(everything: &str, loopback: &str, port: u16) -> (HttpChild, u16) {
    let mut child = Command::new("node")
        .args(["--require", loopback, everything, "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs server-everything");
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut found = None;
    let mut line = String::new();
    while found.is_none() && std::io::BufRead::read_line(&mut err, &mut line).unwrap_or(0) > 0 {
        found = line
            .split("evolve-loopback: listening on 127.0.0.1:")
            .nth(1)
            .and_then(|p| p.trim().parse::<u16>().ok());
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (
        HttpChild(child),
        found.expect("server-everything reported its port"),
    )
}

/// A server restarted on its port (as `mcp_lifecycle.rs` pins with rmcp), against a
/// third-party server: server-everything (the TypeScript
/// SDK) restarted on the same port answers the old session 400 "No valid session ID".
/// A running serve starts a new session at once: the first call after the restart works.
#[test]
fn server_everything_restarted_on_its_port_is_spoken_to_again_at_once() {
    let (Some(everything), Some(loopback)) = (
        peer("EVOLVE_TEST_MCP_EVERYTHING"),
        peer("EVOLVE_TEST_MCP_LOOPBACK"),
    ) else {
        return;
    };
    let (first, port) = everything_http(&everything, &loopback, 0);
    let w = World::new("mcp-everything-restart");
    w.config(&format!(
        "[mcp.servers.everything]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\n[tools.levels]\neverything__echo = \"L0\"\n"
    ));
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"echo": "L0"}"#.into()));
    let s = support::serve::Server::start(&w, &[]);
    let echo = |message: &str| {
        let body = serde_json::json!({"arguments": {"message": message}}).to_string();
        s.post("/v1/tools/everything__echo/run", &body)
    };
    let r = echo("before the restart");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("before the restart"), "{}", r.body);
    drop(first);
    let (_second, again) = everything_http(&everything, &loopback, port);
    assert_eq!(again, port, "restarted on the same port");
    let r = echo("after the restart");
    assert_eq!(
        r.status, 200,
        "the first call after the restart works: {}",
        r.body
    );
    assert!(r.body.contains("after the restart"), "{}", r.body);
    // It was the server's answer about the old session that led to the new one.
    let log: Vec<String> = s.stderr.try_iter().collect();
    assert!(
        log.iter()
            .any(|l| l.contains("no longer knows evolve's session; starting a new one")),
        "{log:#?}"
    );
}

struct HttpChild(Child);

impl Drop for HttpChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `/mcp add` and `/mcp rm` in chat change the servers of the running chat: the next
/// turn offers the new server's tools, and after `rm` they are gone.
#[test]
fn servers_added_and_removed_in_chat_take_effect_at_once() {
    let w = World::new("mcp-chat-manage");
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.fake
        .push(tool_call("live__echo", r#"{"text": "added in chat"}"#));
    w.fake.push(Reply::Text("Echoed.".into()));
    w.fake.push(Reply::Text("No tools.".into()));
    let server = test_server().to_string_lossy().into_owned();
    let run = w.run_stdin(
        &["chat"],
        &format!("/mcp add live -- {server}\necho it\n/mcp rm live\nanything?\n/quit\n"),
    );
    assert!(run.stdout.contains("Echoed."), "{}", run.stdout);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("added in chat")),
        "{results:?}"
    );
    let reqs = w.main_requests();
    let last = tool_names(reqs.last().unwrap());
    assert!(!last.iter().any(|n| n.starts_with("live__")), "{last:?}");
}
