//! An MCP server that dies or fails between turns, end to end through the built
//! `evolve`: the helpers it started die with it (its process group), and a tool list
//! that failed after `tools/list_changed` is asked for again. Each test fails on a
//! defect an adversarial pass found; its comment says what a user sees and where the
//! cause is.

mod support;

use std::path::PathBuf;

use support::mcp::*;
use support::*;

/// A server dies between turns of a chat (the OOM killer, its own bug, a crash in a
/// background task): the helper it started (a browser, a language server) keeps
/// running for the rest of the chat session, and the dead server stays a zombie, until
/// the user happens to call that server again. reap.rs promises "when a connection ends
/// — closed, timed out, crashed — the whole group is killed". Cause: nothing watches a
/// connection; `hub.rs` `connect` notices `is_closed()` only on the next request for
/// that server, and only then `Conn::close` waits for the child and kills the group.
#[test]
fn a_server_that_dies_between_turns_takes_its_helpers_with_it() {
    let w = World::new("rv5-idle-crash");
    let helper_file = w.workspace().join("helper.txt");
    let server_file = w.workspace().join("server.txt");
    let script = format!(
        "sleep 300 </dev/null >/dev/null 2>&1 & echo \"helper=$!\" > {h:?}; echo \"server=$$\" > {s:?}; exec {t:?}",
        h = helper_file.to_string_lossy(),
        s = server_file.to_string_lossy(),
        t = test_server().to_string_lossy()
    );
    with_shell_server(&w, &script, "");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::Text("Echoed.".into()));
    let mut chat = Chat::start(&w);
    chat.send("echo");
    chat.wait_for("Echoed.");
    let helper = wait_for_pid(&helper_file);
    let server = wait_for_pid(&server_file);
    // The server dies on its own while the chat sits at its prompt (the process only,
    // not its group).
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &server.to_string()])
        .status();
    let helper_gone = gone_soon(helper);
    let server_zombie = zombie(server);
    chat.send("/quit");
    let _ = chat.finish();
    kill(&[helper]);
    assert!(
        helper_gone,
        "the dead server's helper {helper} still runs while chat goes on (server {server} zombie: {server_zombie})"
    );
    assert!(!server_zombie, "the dead server {server} is left a zombie");
}

/// A stdio server in Python (stdlib only) whose tool `add_tool` adds the tool `extra`,
/// sends `tools/list_changed`, and fails the next `tools/list` once ("busy") — a
/// server reloading a plugin, or one whose list momentarily times out.
const FLAKY_LIST_SERVER: &str = r#"
import json, sys
tools = ["echo", "add_tool"]
fail_next = False
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
              "capabilities": {"tools": {"listChanged": True}},
              "serverInfo": {"name": "flaky", "version": "1"}}})
    elif method == "tools/list" and fail_next:
        fail_next = False
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603,
              "message": "busy reloading, try again"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": n,
              "description": "tool " + n, "inputSchema": {"type": "object"}} for n in tools]}})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "add_tool" and "extra" not in tools:
            tools.append("extra")
            fail_next = True
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text",
              "text": "called " + name}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
"#;

/// `[mcp.servers.f]` running [`FLAKY_LIST_SERVER`]; `None` when python3 is missing.
fn with_flaky_list_server(w: &World) -> Option<PathBuf> {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !python {
        eprintln!("skipped: python3 is not on PATH");
        return None;
    }
    let script = w.workspace().join("flaky.py");
    std::fs::write(&script, FLAKY_LIST_SERVER).unwrap();
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!(
        "[mcp.servers.f]\ncommand = \"python3\"\nargs = [{:?}]\n",
        script.to_string_lossy()
    ));
    Some(script)
}

/// A server sends `tools/list_changed` and the `tools/list` that follows fails once
/// (an error, or a timeout). The new tool is then never offered again for the life of
/// the connection — later steps and later chat turns keep the old list, though the
/// server would now answer — until the server happens to send another list_changed.
/// Cause: `hub.rs` `connect` (and `list`) clear the `stale` flag *before* `refresh`;
/// when `refresh` fails the flag stays cleared and the old `Live` list is served as
/// fresh by `live_tools` / `refresh_changed`. (The failed or timed-out list also leaves
/// the connection in use and counts no failure, unlike a failed call.)
#[test]
fn a_failed_list_after_list_changed_is_tried_again() {
    let w = World::new("rv5-flaky-list");
    if with_flaky_list_server(&w).is_none() {
        return;
    }
    w.fake.push(tool_call("f__add_tool", "{}"));
    w.fake.push(tool_call("f__echo", "{}"));
    w.fake.push(tool_call("f__echo", "{}"));
    w.fake.push(Reply::Text("Done.".into()));
    // The server gives no readOnlyHint: its tools are L3, run headless only with --yes.
    w.run(&["ask", "--yes", "--json", "add a tool, then look again"])
        .expect(0);
    let reqs = w.main_requests();
    assert_eq!(reqs.len(), 4, "four model steps");
    let last = tool_names(&reqs[3]);
    assert!(
        last.iter().any(|n| n == "f__extra"),
        "two steps after a failed re-list the server's new tool is still not offered: {last:?}"
    );
}
