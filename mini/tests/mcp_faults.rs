//! MCP under faults, end to end through the built `evolve`: servers that crash, hang,
//! flood, linger, print garbage or list odd tools; secrets of HTTP servers; the
//! processes left behind after `ask`, `chat` and SIGTERM. Written by an adversarial
//! pass: the tests in the first part each fail on a defect that pass found (the
//! comment says what a user sees and where the cause is) and pin the fix; the last part
//! pins what held up.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use support::mcp::*;
use support::*;

/// A raw stdio MCP server in Python (stdlib only), speaking 2024-11-05: its tools are
/// the names in the JSON file given as its argument; an unknown tool is a -32602 error.
const RAW_SERVER: &str = r#"
import json, sys
tools = json.load(open(sys.argv[1]))
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except Exception:
        continue
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": "2024-11-05",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": n,
              "description": "tool " + n, "inputSchema": {"type": "object"}} for n in tools]}})
    elif method == "tools/call" and msg["params"]["name"] in tools:
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text",
              "text": "called " + msg["params"]["name"]}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602,
              "message": "unknown tool " + msg["params"]["name"]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
"#;

/// `[mcp.servers.r]` running [`RAW_SERVER`] with these tools (the file can be changed
/// between runs); `None` when python3 is missing.
fn with_raw_server(w: &World, tools: &[&str]) -> Option<PathBuf> {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !python {
        eprintln!("skipped: python3 is not on PATH");
        return None;
    }
    let script = w.workspace().join("raw.py");
    std::fs::write(&script, RAW_SERVER).unwrap();
    let list = w.workspace().join("raw-tools.json");
    std::fs::write(&list, serde_json::to_string(tools).unwrap()).unwrap();
    w.config(&format!(
        "[mcp.servers.r]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\n",
        script.to_string_lossy(),
        list.to_string_lossy()
    ));
    Some(list)
}

// ---------------------------------------------------------------------------------
// Defects: each test fails now.
// ---------------------------------------------------------------------------------

/// The user runs `evolve mcp tools t` once (the list is cached in the store), then a
/// cron `ask` whose answer needs no tool. The docs (mcp/mod.rs, mcp/catalog.rs: "an
/// `ask` whose model calls no MCP tool starts no server, once the lists are cached")
/// promise the server is not started; today every `ask` starts every server before the
/// model is even asked — and waits for a slow or hung one up to its timeout. Cause:
/// `catalog::tools_of` goes from the live list straight to `Hub::list_tools`, never
/// reading `Store::mcp_tools`.
#[test]
fn an_ask_that_calls_no_mcp_tool_starts_no_server_once_its_tools_are_cached() {
    let w = World::new("rv4-cache");
    let count = w.workspace().join("starts.txt");
    with_test_server(&w, &["--count-file", &count.to_string_lossy()], "");
    w.run(&["mcp", "tools", "t"]).expect(0);
    assert_eq!(pids_in(&count).len(), 1, "mcp tools started it once");

    w.fake.push(Reply::Text("Hello.".into()));
    w.run(&["ask", "hi"]).expect(0);
    let names = tool_names(&w.main_requests()[0]);
    assert!(
        names.iter().any(|n| n == "t__echo"),
        "the cached tools are offered: {names:?}"
    );
    assert_eq!(
        pids_in(&count).len(),
        1,
        "an ask that called no MCP tool started the server again"
    );
}

/// `bearer_token_env = "MY_MCP_TOKEN"` gives an HTTP server its token. The variable
/// stays in evolve's environment and every stdio server inherits it, so any of them
/// can read it — and a tool that reports its environment (the test server's `env`,
/// server-everything's `get-env`) hands it to the model, the provider and the session
/// history. Cause: only the model's API key is scrubbed from the environment
/// (`cli/app.rs` `forget_key_variables`) and redacted from results (`agents/tool.rs`
/// `run`); `conn.rs` starts children with evolve's whole environment.
#[test]
fn a_bearer_token_for_one_server_never_reaches_another_server_or_the_model() {
    const TOKEN: &str = "tok-REVIEW0123456789abcdefghij";
    let mut w = World::new("rv4-bearer-env");
    w.env("MY_MCP_TOKEN", TOKEN);
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!(
        "[mcp.servers.t]\ncommand = {:?}\n\n[mcp.servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"MY_MCP_TOKEN\"\n",
        test_server().to_string_lossy()
    ));
    w.fake
        .push(tool_call("t__env", r#"{"name": "MY_MCP_TOKEN"}"#));
    w.fake.push(Reply::Text("Checked.".into()));
    let run = w
        .run(&["ask", "--json", "what is in MY_MCP_TOKEN?"])
        .expect(0);
    let results = tool_results(&w, 1);
    assert!(
        !results.iter().any(|r| r.contains(TOKEN)),
        "the HTTP server's bearer token reached the model through another server: {results:?}"
    );
    assert!(!run.stdout.contains(TOKEN), "{}", run.stdout);
}

/// Hosted MCP endpoints often carry their key in the URL
/// (`https://…/mcp?api_key=…`). HTTP errors and logs cut the query ("where tokens
/// hide", mcp/http/endpoint.rs `shown_url`), but `mcp add`, `mcp list` and `mcp list --json`
/// print it whole. Cause: cli/mcp/list.rs `target` and config/mcp.rs `server_json` use
/// `llm::display_url`, which keeps the query.
#[test]
fn a_key_in_an_http_servers_url_is_never_shown() {
    const KEY: &str = "QKEY0123456789abcdefghij";
    let w = World::without_model("rv4-url-query");
    let url = format!("http://127.0.0.1:9/mcp?api_key={KEY}");
    let add = w.run(&["mcp", "add", "web", "--url", &url]).expect(0);
    let list = w.run(&["mcp", "list"]).expect(0);
    let json = w.run(&["mcp", "list", "--json"]).expect(0);
    for (what, out) in [
        ("mcp add", &add.stdout),
        ("mcp list", &list.stdout),
        ("mcp list --json", &json.stdout),
    ] {
        assert!(
            !out.contains(KEY),
            "{what} shows the key in the URL:\n{out}"
        );
    }
}

/// A server may be named `t_` (valid_server_name allows it); its tools are `t___echo`
/// … and `evolve mcp tools t_` lists them so (refusing such names at `mcp add` would
/// be a fix too). But `evolve mcp level t___echo L3` and
/// `evolve mcp disable t___echo` answer `no MCP server named "t"`: the user cannot set
/// a level for, or switch off, any tool of that server. Cause: mcp/mod.rs `split_name`
/// splits at the first `__` while the server name itself ends in `_`.
#[test]
fn tools_of_a_server_named_with_a_trailing_underscore_can_be_managed() {
    let w = World::new("rv4-underscore");
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    let add = w.run(&["mcp", "add", "t_", "--", &test_server().to_string_lossy()]);
    if add.code == 2 && add.stderr.contains("t_") {
        // Also a fix: such names refused up front, with a message.
        return;
    }
    let _ = add.expect(0);
    let tools = w.run(&["mcp", "tools", "t_"]).expect(0);
    assert!(tools.stdout.contains("t___echo"), "{}", tools.stdout);
    w.run(&["mcp", "level", "t___echo", "L3"]).expect(0);
    w.run(&["mcp", "disable", "t___write_note"]).expect(0);
}

/// A tool result over 16 MiB (the `big` tool with 20 MB): rmcp's stdio reader drops
/// the oversized line without a word, so the call waits out the whole timeout (60 s by
/// default) and the model is told the server "did not answer within 15 s" and is
/// restarted — a hang and a false diagnosis, where the user expects the result cut to
/// the history cap or "the answer was too large". Cause: conn.rs opens stdio servers
/// with `TokioChildProcess` (rmcp's `DEFAULT_MAX_LINE_LENGTH`, oversized lines
/// discarded and logged only through tracing, which evolve compiles out).
#[test]
fn a_result_over_16_mib_is_cut_or_refused_at_once_not_reported_as_a_timeout() {
    let w = World::new("rv4-huge");
    with_test_server(&w, &[], "timeout_secs = 15");
    w.fake.push(tool_call("t__big", r#"{"bytes": 20000000}"#));
    w.fake.push(Reply::Text("Got it.".into()));
    w.run(&["ask", "--json", "get a lot of text"]).expect(0);
    let run = w.run(&["sessions", "list"]).expect(0);
    let session = run
        .stdout
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    let shown = w.run(&["sessions", "show", &session]).expect(0).stdout;
    assert!(
        !shown.contains("did not answer within"),
        "a 20 MB answer was reported as a timeout:\n{}",
        evolve_tail(&shown)
    );
    assert!(
        shown.contains("0123456789abcdef")
            || shown.contains("too large")
            || shown.contains("larger than"),
        "the result is neither cut nor refused as too large:\n{}",
        evolve_tail(&shown)
    );
}

fn evolve_tail(s: &str) -> String {
    s.chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// A server that does not exit the moment its stdin closes (here a wrapper script that
/// runs something after the server; equally a server busy with a call): `chat` ends
/// with /quit and leaves it running. The Hub would stop it on drop ("children are
/// killed if they do not exit when their stdin closes"), but chat never drops or shuts
/// down the Hub: `cli/chat.rs` keeps the Manager in the Ctrl-C watcher thread's `Arc`
/// forever, so the children only ever get EOF.
#[test]
fn no_server_outlives_chat() {
    let w = World::new("rv4-chat-orphan");
    let pids = w.workspace().join("wrapper.txt");
    with_shell_server(&w, &lingering_server(&pids), "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("Echoed.".into()));
    let mut chat = Chat::start(&w);
    chat.send("echo");
    chat.wait_for("Echoed.");
    chat.send("/quit");
    assert_eq!(chat.finish(), Some(0));
    let wrapper = wait_for_pid(&pids);
    let gone = gone_soon(wrapper);
    kill(&[wrapper]);
    assert!(gone, "the MCP server {wrapper} still runs after chat ended");
}

/// SIGTERM to evolve (a service manager stopping it, `timeout 60 evolve …`): evolve
/// dies at once and a server that does not exit on EOF keeps running. Cause: no
/// SIGTERM handling, and the servers sit in their own process groups (conn.rs), so
/// nothing else stops them either.
#[test]
fn no_server_outlives_evolve_stopped_with_sigterm() {
    let w = World::new("rv4-sigterm");
    let pids = w.workspace().join("wrapper.txt");
    with_shell_server(&w, &lingering_server(&pids), "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("Echoed.".into()));
    let mut chat = Chat::start(&w);
    chat.send("echo");
    chat.wait_for("Echoed.");
    chat.signal("-TERM");
    let _ = chat.finish();
    let wrapper = wait_for_pid(&pids);
    let gone = gone_soon(wrapper);
    kill(&[wrapper]);
    assert!(
        gone,
        "the MCP server {wrapper} still runs after evolve got SIGTERM"
    );
}

/// `sh -c` running the test server, then lingering 5 minutes after it exits; the
/// shell (the process-group leader evolve started) writes its pid to `pids`.
fn lingering_server(pids: &Path) -> String {
    format!(
        "echo \"wrapper=$$\" > {p:?}; {s:?}; sleep 300",
        p = pids.to_string_lossy(),
        s = test_server().to_string_lossy()
    )
}

/// A server that starts a helper process (a browser, a language server, a watcher):
/// when `ask` ends, the server exits on EOF but the helper, in the server's process
/// group, keeps running for good. conn.rs says "stopping it also stops what it
/// started"; but the group is only killed when the leader itself will not exit. Cause:
/// `Conn::close` ends with rmcp's graceful shutdown and never signals the group.
#[test]
fn a_helper_started_by_a_server_is_stopped_with_it() {
    let w = World::new("rv4-helper");
    let pids = w.workspace().join("helper.txt");
    let script = format!(
        "sleep 300 & echo \"helper=$!\" > {:?}; exec {:?}",
        pids.to_string_lossy(),
        test_server().to_string_lossy()
    );
    with_shell_server(&w, &script, "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("ok".into()));
    w.run(&["ask", "echo"]).expect(0);
    let helper = wait_for_pid(&pids);
    let gone = gone_soon(helper);
    kill(&[helper]);
    assert!(
        gone,
        "the server's helper {helper} still runs after evolve exited"
    );
}

/// A server that will not stop when asked (it ignores SIGTERM, like a wrapper stuck in
/// cleanup): after `ask` it is still running. The Hub promises "children are killed if
/// they do not exit when their stdin closes", and rmcp's shutdown would send SIGKILL
/// after 3 s of waiting plus 3 s after SIGTERM. Cause: `Conn::close` gives
/// `service.cancel()` only 3 s; then `serve` returns and the runtime is dropped before
/// rmcp's kill step runs (with a server that merely takes more than 3 s to exit, the
/// SIGTERM step and that timeout race: sometimes it survives, sometimes not).
#[test]
fn a_server_that_will_not_stop_is_killed_not_left_behind() {
    let w = World::new("rv4-slow-exit");
    let pids = w.workspace().join("wrapper.txt");
    let script = format!("trap '' TERM; {}", lingering_server(&pids));
    with_shell_server(&w, &script, "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("ok".into()));
    w.run(&["ask", "echo"]).expect(0);
    let wrapper = wait_for_pid(&pids);
    let gone = gone_soon(wrapper);
    kill(&[wrapper]);
    assert!(
        gone,
        "the server {wrapper}, which ignores SIGTERM, still runs after evolve exited"
    );
}

/// A server that lists a tool twice (a pagination bug, a plugin registered twice):
/// the model request carries two functions named `r__dup`, which Anthropic ("Tool
/// names must be unique") and Gemini ("Duplicate function declaration") refuse with
/// 400 — every turn fails while the server is configured. Cause: catalog.rs `add`
/// keeps every listed tool, duplicates included.
#[test]
fn a_tool_listed_twice_is_offered_once() {
    let w = World::new("rv4-dup");
    let Some(_) = with_raw_server(&w, &["ok", "dup", "dup"]) else {
        return;
    };
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"ok": "L0", "dup": "L0"}"#.into()));
    w.fake.push(Reply::Text("Hello.".into()));
    w.run(&["ask", "hi"]).expect(0);
    let names = tool_names(&w.main_requests()[0]);
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "duplicate function names sent to the model: {names:?}"
    );
}

/// A server that cannot be reached or dies at start: the message names the server
/// and what it printed, but wraps it in rmcp's type names: "the handshake failed: Send
/// message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::
/// streamable_http_client::StreamableHttpClientWorker<evolve::mcp::http::UreqHttp>>]
/// error: Client error: cannot reach …, when send initialize request". mcp/http/ has
/// `error_text` to unwrap exactly this "for the user"; conn.rs `Conn::open` formats the
/// handshake error with `{e}` instead.
#[test]
fn start_errors_speak_to_the_user_not_in_rust_type_names() {
    let w = World::new("rv4-start-errors");
    w.config(&format!(
        "[mcp.servers.down]\nurl = \"http://127.0.0.1:9/mcp\"\n\n[mcp.servers.dies]\ncommand = {:?}\nargs = [\"--crash-on-start\", \"--log-stderr\", \"NEED_API_KEY is not set\"]\n",
        test_server().to_string_lossy()
    ));
    let run = w.run(&["mcp", "tools"]).expect(1);
    assert!(
        run.stderr
            .contains("cannot reach the MCP server at http://127.0.0.1:9/mcp"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("NEED_API_KEY is not set"),
        "{}",
        run.stderr
    );
    for noise in ["rmcp::", "Send message error", "Transport ["] {
        assert!(
            !run.stderr.contains(noise),
            "{noise:?} in what the user reads:\n{}",
            run.stderr
        );
    }
}

/// An MCP result of 1 MB: the tool agent cuts it to 128 KiB (about 32k tokens), four
/// times the default context window (8192). The history builder then drops the whole
/// tool round (core trim step 9), so the model's next request has neither its call nor
/// the result — it never learns the tool ran and calls it again or answers blind. The
/// user expects the head and tail of the output within the budget. Cause:
/// agents/tool.rs `run` cuts to `max_tool_output_bytes` whatever the model's window.
#[test]
fn a_big_mcp_result_reaches_the_model_within_the_default_context_window() {
    let w = World::new("rv4-big-window");
    with_test_server(&w, &[], "");
    w.fake.push(tool_call("t__big", r#"{"bytes": 1000000}"#));
    w.fake.push(Reply::Text("Got it.".into()));
    w.run(&["ask", "get a lot of text"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results
            .iter()
            .any(|r| r.contains("0123456789abcdefghijklmnopqrstuvwxyz")),
        "the model never saw the result of the call it made: {results:?}"
    );
}

// ---------------------------------------------------------------------------------
// What held up (these pass; they pin behaviour the adversarial pass checked).
// ---------------------------------------------------------------------------------

/// Garbage on stdout, an old protocol, env and cwd, a server that dies at start, and
/// a crash loop: clear errors, no hang, the rest of the turn goes on.
#[test]
fn odd_servers_are_coped_with() {
    let w = World::new("rv4-odd");
    let dir = w.workspace().join("sub");
    std::fs::create_dir_all(&dir).unwrap();
    with_test_server(
        &w,
        &["--garbage", "--protocol", "2024-11-05"],
        &format!(
            "env = {{ FOO = \"bar\" }}\ncwd = {:?}\n\n[mcp.servers.dies]\ncommand = {:?}\nargs = [\"--crash-on-start\", \"--log-stderr\", \"NEED_API_KEY is not set\"]\n",
            dir.to_string_lossy(),
            test_server().to_string_lossy()
        ),
    );
    w.fake.push(Reply::ToolCalls(vec![
        ("t__env".into(), r#"{"name": "FOO"}"#.into()),
        ("t__cwd".into(), "{}".into()),
    ]));
    for i in 0..5 {
        w.fake
            .push(tool_call("t__crash", &format!(r#"{{"n": {i}}}"#)));
    }
    w.fake.push(Reply::Text("Done.".into()));
    // `crash` has no readOnlyHint: L3, run headless only with --yes.
    let run = w
        .run(&["ask", "--yes", "go: env FOO, cwd, crash 0 1 2 3 4"])
        .expect(0);
    assert!(
        run.stderr.contains("\"dies\" could not be started"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("NEED_API_KEY is not set"),
        "{}",
        run.stderr
    );
    let first = tool_results(&w, 1);
    assert_eq!(first, ["bar", &dir.to_string_lossy()], "{first:?}");
    let last = tool_results(&w, 6);
    assert!(
        last.last()
            .is_some_and(|r| r.contains("keeps failing; next restart attempt")),
        "{last:?}"
    );
}

/// Permission: a path outside the workspace makes an L0 tool L5 (refused); a path in
/// the server's root (a directory among its arguments) does not; a credential in the
/// arguments is L5; an L5 tool is never even asked about in chat; `--allow L3` runs an
/// L3 tool; a user level beats the server's "destructive" hint; a disabled tool is not
/// offered and does not run.
#[test]
fn mcp_calls_obey_the_permission_levels() {
    let w = World::new("rv4-perm");
    let notes = w.workspace().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let outside = std::env::temp_dir().join(format!("rv4-perm-notes-{}", std::process::id()));
    std::fs::create_dir_all(&outside).unwrap();
    with_test_server(
        &w,
        &["--notes", &outside.to_string_lossy()],
        "disabled_tools = [\"send_message\"]",
    );
    let ask = |call: Reply| {
        w.fake.push(call);
        w.fake.push(Reply::Text("ok".into()));
        w.run(&["ask", "--json", "--allow", "L3", "go"]).json()["tools"][0].clone()
    };
    let t = ask(tool_call(
        "t__echo",
        r#"{"text": "x", "path": "/etc/hosts"}"#,
    ));
    assert_eq!(
        (t["level"].as_str(), t["ran"].as_bool()),
        (Some("L5"), Some(false))
    );
    let inside = serde_json::json!({"text": "x", "path": outside.join("a.txt")}).to_string();
    let t = ask(tool_call("t__echo", &inside));
    // Classified L0, read-only: the floor L2.
    assert_eq!(
        (t["level"].as_str(), t["ran"].as_bool()),
        (Some("L2"), Some(true))
    );
    let t = ask(tool_call(
        "t__echo",
        r#"{"text": "key ghp_zyxwvutsrqponmlkjihgfedcba0123456789"}"#,
    ));
    assert_eq!(
        (t["level"].as_str(), t["ran"].as_bool()),
        (Some("L5"), Some(false))
    );
    let t = ask(tool_call(
        "t__write_note",
        r#"{"name": "n.txt", "text": "hi"}"#,
    ));
    assert_eq!(
        (t["level"].as_str(), t["ran"].as_bool()),
        (Some("L3"), Some(true))
    );
    let t = ask(tool_call("t__send_message", r#"{"to": "a", "text": "b"}"#));
    assert_eq!(t["ran"].as_bool(), Some(false), "{t}");
    w.run(&["mcp", "level", "t__delete_everything", "L1"])
        .expect(0);
    let t = ask(tool_call("t__delete_everything", "{}"));
    assert_eq!(
        (t["level"].as_str(), t["ran"].as_bool()),
        (Some("L1"), Some(true))
    );

    w.run(&["mcp", "level", "t__write_note", "L5"]).expect(0);
    w.fake.push(tool_call(
        "t__write_note",
        r#"{"name": "five.txt", "text": "x"}"#,
    ));
    w.fake.push(Reply::Text("Refused.".into()));
    let run = w.run_stdin(&["chat"], "write it\nyes\nyes\n/quit\n");
    assert!(!run.stdout.contains("[yes/no"), "{}", run.stdout);
    assert!(!outside.join("five.txt").exists());
    let _ = std::fs::remove_dir_all(&outside);
}

/// A tool the server no longer has (here: gone after a restart) gives the model a
/// clear error naming it, not a hang.
#[test]
fn a_vanished_tool_is_a_clear_error() {
    let w = World::new("rv4-vanished");
    with_test_server(&w, &[], "");
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"extra": "L1"}"#.into()));
    w.fake.push(tool_call("t__add_tool", "{}"));
    w.fake.push(tool_call("t__crash", "{}"));
    w.fake.push(tool_call("t__extra", "{}"));
    w.fake.push(Reply::Text("Done.".into()));
    // `add_tool` and `crash` have no readOnlyHint: L3, run headless only with --yes.
    w.run(&["ask", "--yes", "go"]).expect(0);
    let results = tool_results(&w, 3);
    assert!(
        results
            .last()
            .is_some_and(|r| r.contains("unknown tool \"extra\"")),
        "{results:?}"
    );
}

/// Ctrl-C during a slow MCP call in `chat`: the call is abandoned at once, chat goes on,
/// and the next call to the same server works.
#[test]
fn ctrl_c_abandons_a_slow_mcp_call_and_chat_goes_on() {
    let w = World::new("rv4-ctrl-c");
    let count = w.workspace().join("starts.txt");
    with_test_server(&w, &["--count-file", &count.to_string_lossy()], "");
    w.fake.push(tool_call("t__slow", r#"{"ms": 300000}"#));
    w.fake
        .push(tool_call("t__echo", r#"{"text": "still here"}"#));
    w.fake.push(Reply::Text("Echoed.".into()));
    let mut chat = Chat::start(&w);
    chat.send("be slow, then echo still here");
    chat.wait_for("t__slow");
    let pid = wait_for_pid(&count);
    std::thread::sleep(Duration::from_millis(500));
    chat.signal("-INT");
    chat.wait_for("(cancelled)");
    chat.send("echo");
    chat.wait_for("Echoed.");
    chat.send("/quit");
    assert_eq!(chat.finish(), Some(0));
    kill(&[pid]);
    let results = tool_results(&w, 2);
    assert!(results.iter().any(|r| r == "still here"), "{results:?}");
}

/// Closing a stdio server follows the spec's order: its stdin closes, then SIGTERM, and
/// SIGKILL only for one that is still there. A server that ignores EOF but cleans up on
/// SIGTERM gets to run its cleanup (it used to be killed outright).
#[test]
fn a_server_is_asked_with_sigterm_before_it_is_killed() {
    let w = World::new("mcp-sigterm-first");
    let pids = w.workspace().join("wrapper.txt");
    let bye = w.workspace().join("bye.txt");
    let script = format!(
        "trap 'echo cleaned > {bye:?}; exit 0' TERM; {}",
        lingering_server(&pids),
        bye = bye.to_string_lossy()
    );
    with_shell_server(&w, &script, "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("ok".into()));
    w.run(&["ask", "echo"]).expect(0);
    let wrapper = wait_for_pid(&pids);
    let gone = gone_soon(wrapper);
    kill(&[wrapper]);
    assert!(gone, "the server {wrapper} still runs after evolve exited");
    assert_eq!(
        std::fs::read_to_string(&bye).unwrap_or_default().trim(),
        "cleaned",
        "the server got SIGTERM (and ran its cleanup) before it was killed"
    );
}

/// Ctrl-C during `evolve ask` (which has no Ctrl-C handler of its own) ends evolve; a
/// server that ignores stdin EOF must not be left running (SIGTERM and SIGHUP already
/// cleaned up; SIGINT did not).
#[test]
fn ctrl_c_during_ask_leaves_no_server_behind() {
    let w = World::new("mcp-ask-sigint");
    let pids = w.workspace().join("wrapper.txt");
    with_shell_server(&w, &lingering_server(&pids), "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake
        .push(Reply::text("too late").after(Duration::from_secs(30)));
    let mut ask = w
        .command(&["ask", "echo"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ask");
    let wrapper = wait_for_pid(&pids);
    interrupt_while_answering(&w, &mut ask);
    let gone = gone_soon(wrapper);
    kill(&[wrapper]);
    assert!(
        gone,
        "the MCP server {wrapper} still runs after Ctrl-C in ask"
    );
}
