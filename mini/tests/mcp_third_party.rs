//! The MCP client against third-party servers, as a user of the `evolve` binary
//! meets it: npm's server-everything (its old HTTP+SSE mode, streamable HTTP and stdio)
//! and server-filesystem, and a server on the official Python SDK
//! (tests/mcp-peers/python_server.py, over stdio):
//! - an old HTTP+SSE endpoint is named as such when it is added and when it is listed;
//! - a server's log message at level error shows at the default log level;
//! - one timed-out call keeps the server, three in a row restart it;
//! - a form a server asks for in a headless run is declined, never put to the model;
//! - progress notices over streamable HTTP keep a call past its timeout alive;
//! - a folder named in server-filesystem's arguments that appears later becomes one of
//!   the running server's roots when the server list is reloaded, and servers replaced
//!   with other folders serve those at once.
//!
//! Each test skips without its peers (tests/mcp-peers.sh) and fails under `CI=true`.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::mcp::*;
use support::serve::Server;
use support::{tool_call, Reply, World, CLASSIFY};

/// What the user is told of an old HTTP+SSE endpoint (mini/src/mcp/http/error.rs and the
/// warning of `evolve mcp add`).
const OLD_SSE: &str = "old HTTP+SSE transport, which evolve does not speak";

/// npm's server-everything run by node in `mode` (`sse`, `streamableHttp`), pinned to
/// 127.0.0.1 by the loopback preload of tests/mcp-peers.sh; killed when dropped.
struct Everything {
    child: Child,
    port: u16,
}

impl Everything {
    /// `None` (skip) where the peers are not installed.
    fn start(mode: &str) -> Option<Everything> {
        let everything = peer("EVOLVE_TEST_MCP_EVERYTHING")?;
        let loopback = peer("EVOLVE_TEST_MCP_LOOPBACK")?;
        let mut child = Command::new(node())
            .args(["--require", &loopback, &everything, mode])
            .env("PORT", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs server-everything");
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        let mut port = None;
        let mut line = String::new();
        while port.is_none() && err.read_line(&mut line).unwrap_or(0) > 0 {
            port = line
                .split("evolve-loopback: listening on 127.0.0.1:")
                .nth(1)
                .and_then(|p| p.trim().parse::<u16>().ok());
            line.clear();
        }
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        let port = port.expect("server-everything reported its port");
        Some(Everything { child, port })
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The node that runs the npm servers.
fn node() -> String {
    std::env::var("EVOLVE_TEST_MCP_NODE").unwrap_or_else(|_| "node".into())
}

/// The venv python of tests/mcp-peers.sh and tests/mcp-peers/python_server.py, or
/// `None` (skip).
fn python_server() -> Option<(PathBuf, PathBuf)> {
    let time = peer("EVOLVE_TEST_MCP_TIME")?;
    let python = Path::new(&time).with_file_name("python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-peers/python_server.py");
    Some((python, script))
}

/// The Python SDK server as MCP server `py` (with `server`'s lines added to its table),
/// its `tools` at L1; the classifier answers nothing.
fn python_config(w: &World, (python, script): (&Path, &Path), server: &str, tools: &[&str]) {
    let mut config = format!(
        "[mcp.servers.py]\ncommand = {python:?}\nargs = [{script:?}]\n{server}\n[tools.levels]\n"
    );
    for tool in tools {
        config += &format!("py__{tool} = \"L1\"\n");
    }
    w.config(&config);
    w.fake.route(CLASSIFY, Reply::Text("{}".into()));
}

/// Every line serve has logged so far.
fn log_lines(s: &Server) -> Vec<String> {
    s.stderr.try_iter().collect()
}

/// Every line serve has logged so far, one of which says `said`.
fn log_saying(s: &Server, said: &str) -> Vec<String> {
    let seen = log_lines(s);
    assert!(
        seen.iter().any(|l| l.contains(said)),
        "no log line says {said:?}: {seen:#?}"
    );
    seen
}

/// How often the log says evolve connected to `server` (a new process or session).
fn connections(seen: &[String], server: &str) -> usize {
    let needle = format!("MCP server {server:?} connected");
    seen.iter().filter(|l| l.contains(&needle)).count()
}

/// server-everything in its `sse` mode speaks only the old HTTP+SSE transport (GET
/// /sse for events, POST /message): `evolve mcp add` of its /sse URL warns at once
/// (adding does not connect), and `evolve mcp tools` says why it cannot be listed
/// rather than only "404". A streamable HTTP URL gets no such warning.
#[test]
fn an_old_sse_endpoint_is_named_when_added_and_when_listed() {
    let Some(everything) = Everything::start("sse") else {
        return;
    };
    let w = World::without_model("mcp-old-sse");
    let url = everything.url("/sse");
    let added = w.run(&["mcp", "add", "old", "--url", &url]).expect(0);
    assert!(
        added.stdout.contains("added MCP server old"),
        "{}",
        added.stdout
    );
    assert!(added.stderr.contains(OLD_SSE), "{}", added.stderr);
    assert!(added.stderr.contains("/mcp"), "{}", added.stderr);
    let listed = w.run(&["mcp", "tools", "old"]);
    assert_ne!(listed.code, 0, "{}\n{}", listed.stdout, listed.stderr);
    assert!(listed.stderr.contains(OLD_SSE), "{}", listed.stderr);
    // The server was asked (it answered 404 to the POST a streamable client sends).
    assert!(listed.stderr.contains("HTTP 404"), "{}", listed.stderr);
    let fine = w
        .run(&["mcp", "add", "new", "--url", &everything.url("/mcp")])
        .expect(0);
    assert!(!fine.stderr.contains("SSE"), "{}", fine.stderr);
}

/// A tool of the Python SDK server logs at level error (`notifications/message`) during
/// its call: `evolve ask` at the default log level (no `EVOLVE_LOG`) shows it on stderr,
/// naming the server.
#[test]
fn a_servers_error_log_shows_at_the_default_log_level() {
    let Some((python, script)) = python_server() else {
        return;
    };
    let mut w = World::new("mcp-python-log-error");
    w.env_remove("EVOLVE_LOG");
    python_config(&w, (&python, &script), "", &["log_error"]);
    w.fake.push(tool_call(
        "py__log_error",
        r#"{"text": "the disk of /data is full"}"#,
    ));
    w.fake.push(Reply::Text("It logged.".into()));
    let run = w.run(&["ask", "log it"]).expect(0);
    assert!(run.stdout.contains("It logged."), "{}", run.stdout);
    assert_eq!(tool_results(&w, 1), ["logged"]);
    let shown = run
        .stderr
        .lines()
        .find(|l| l.contains("the disk of /data is full"))
        .unwrap_or_else(|| panic!("the server's error is not shown:\n{}", run.stderr));
    assert!(shown.contains("MCP server \"py\""), "{shown}");
    // Not a debug line that happened through: the default level shows no info lines.
    assert!(!run.stderr.contains("[info]"), "{}", run.stderr);
}

/// A server restarted after three timeouts in a row, not after one (as
/// `mcp_lifecycle.rs` pins with rmcp), against the Python SDK over stdio, in `evolve serve` with a 3 s
/// limit: a call past it is cancelled and the next call is answered by the same process;
/// two timeouts in a row still keep it; the third in a row stops it, and the next call
/// is answered by a new process (the server counts its starts).
#[test]
fn one_timeout_keeps_the_python_server_and_three_in_a_row_restart_it() {
    let Some((python, script)) = python_server() else {
        return;
    };
    let mut w = World::new("mcp-python-timeouts");
    let pids = w.home.join("pids");
    python_config(
        &w,
        (&python, &script),
        &format!("timeout_secs = 3\nenv = {{ EVOLVE_PY_PIDS = {pids:?} }}\n"),
        &["slow", "pid"],
    );
    w.env("EVOLVE_LOG", "info");
    let s = Server::start(&w, &[]);
    let port = s.api();
    let pid = || {
        let out = run_tool(port, "py__pid", json!({}));
        assert_eq!(out["is_error"], false, "{out}");
        out["output"]
            .as_str()
            .and_then(|p| p.trim().parse::<u32>().ok())
            .unwrap_or_else(|| panic!("no pid: {out}"))
    };
    let time_out = |n: u32| {
        let out = run_tool(port, "py__slow", json!({"seconds": 60 + n}));
        assert_eq!(out["is_error"], true, "{out}");
        let said = out["output"].as_str().unwrap_or_default();
        assert!(
            said.contains("did not answer within 3 s") && said.contains("cancelled"),
            "{out}"
        );
    };
    let first = pid();
    time_out(1);
    assert_eq!(pid(), first, "one timeout restarted the server");
    time_out(2);
    time_out(3);
    assert_eq!(pid(), first, "two timeouts in a row restarted the server");
    time_out(4);
    time_out(5);
    time_out(6);
    let second = pid();
    assert_ne!(second, first, "three timeouts in a row kept the server");
    assert_eq!(pids_in(&pids), [first, second], "the server's starts");
    let gone = gone_soon(first);
    kill(&[first, second]);
    assert!(gone, "the first process ({first}) still runs");
    let seen = log_saying(&s, "3 calls in a row timed out; it is restarted");
    assert_eq!(connections(&seen, "py"), 2, "{seen:#?}");
}

/// server-everything's `trigger-elicitation-request` asks for a form during the call;
/// in `evolve ask` nobody can fill it: it is declined (the server says the user
/// declined), the user is told on stderr, and the model is never asked to fill it.
#[test]
fn server_everythings_form_is_declined_in_a_headless_run() {
    let Some(everything) = peer("EVOLVE_TEST_MCP_EVERYTHING") else {
        return;
    };
    let w = World::new("mcp-elicit-everything-headless");
    w.config(&format!(
        "[mcp.servers.everything]\ncommand = {:?}\nargs = [{everything:?}]\n\n\
         [tools.levels]\n\"everything__trigger-elicitation-request\" = \"L1\"\n",
        node()
    ));
    w.fake.route(CLASSIFY, Reply::Text("{}".into()));
    w.fake
        .push(tool_call("everything__trigger-elicitation-request", "{}"));
    w.fake.push(Reply::Text("You declined, so no form.".into()));
    let run = w.run(&["ask", "--json", "fill the form"]).expect(0);
    let record = run.json();
    assert_eq!(record["tools"][0]["ran"], true, "{record}");
    assert_eq!(record["reply"], "You declined, so no form.", "{record}");
    let results = tool_results(&w, 1).join("\n");
    assert!(
        results.contains("User declined to provide the requested information"),
        "{results}"
    );
    assert!(
        run.stderr.contains("declined in a headless run"),
        "{}",
        run.stderr
    );
    // Two main requests, and neither carries the form.
    let reqs = w.main_requests();
    assert_eq!(reqs.len(), 2, "the model was asked again: {reqs:#?}");
    for req in &reqs {
        let text = req.to_string();
        assert!(
            !text.contains("Please provide inputs for the following fields")
                && !text.contains("Your full, legal name"),
            "the form went to the model: {text}"
        );
    }
}

/// server-everything over streamable HTTP with a 3 s limit: its long-running operation
/// of 9 s in 9 steps sends a progress notice a second on the call's stream, and each
/// starts the limit again, so the call completes; the same operation in one step (no
/// notice for 9 s) is cancelled at the limit.
#[test]
fn progress_over_http_keeps_a_long_call_alive() {
    let Some(everything) = Everything::start("streamableHttp") else {
        return;
    };
    let w = World::new("mcp-progress-everything-http");
    w.config(&format!(
        "[mcp.servers.everything]\nurl = {:?}\ntimeout_secs = 3\n\n\
         [tools.levels]\n\"everything__trigger-long-running-operation\" = \"L1\"\n",
        everything.url("/mcp")
    ));
    w.fake.route(CLASSIFY, Reply::Text("{}".into()));
    w.fake.push(tool_call(
        "everything__trigger-long-running-operation",
        r#"{"duration": 9, "steps": 9}"#,
    ));
    w.fake.push(tool_call(
        "everything__trigger-long-running-operation",
        r#"{"duration": 9, "steps": 1}"#,
    ));
    w.fake.push(Reply::Text("One finished.".into()));
    let record = w
        .run(&["ask", "--json", "run the long ones"])
        .expect(0)
        .json();
    assert_eq!(record["tools"][0]["is_error"], false, "{record}");
    let results = tool_results(&w, 2);
    assert!(
        results[0].contains("Long running operation completed. Duration: 9 seconds, Steps: 9"),
        "{results:?}"
    );
    assert_eq!(record["tools"][1]["is_error"], true, "{record}");
    assert!(
        results[1].contains("did not answer within 3 s"),
        "{results:?}"
    );
}

/// A folder `dir` (canonical), created.
fn folder(w: &World, name: &str) -> PathBuf {
    let dir = w.home.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// server-filesystem's `list_allowed_directories` through serve: its lines.
fn allowed(port: support::serve::Api) -> Vec<String> {
    let out = run_tool(port, "fs__list_allowed_directories", json!({}));
    assert_eq!(out["is_error"], false, "{out}");
    out["output"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// Asks `list_allowed_directories` until it names `dir` (up to 30 s); the last answer.
fn allowed_once_it_has(port: support::serve::Api, dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy().into_owned();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let lines = allowed(port);
        if lines.contains(&dir) || Instant::now() > end {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `POST /v1/mcp/servers` (what the web UI's form sends): 201.
fn add_server(s: &Server, body: Value) {
    let r = s.post("/v1/mcp/servers", &body.to_string());
    assert_eq!(r.status, 201, "{}", r.body);
}

/// serve, with server-filesystem added in the web UI for two folders of which the
/// second does not exist yet (the server skips it; evolve's roots are the folders
/// among its arguments that exist, after the workspace). Once the folder is made and
/// the server list reloaded (another server added), the running server is told its
/// roots changed, asks for them, and serves the new folder — the same connection, not
/// a restart.
#[test]
fn a_folder_made_later_becomes_a_root_of_the_running_server_filesystem() {
    let Some(fs) = peer("EVOLVE_TEST_MCP_FILESYSTEM") else {
        return;
    };
    let mut w = World::new("mcp-roots-later");
    let shared = folder(&w, "shared");
    let later = w.home.canonicalize().unwrap().join("later");
    w.config("[tools.levels]\nfs__list_allowed_directories = \"L1\"\n");
    w.fake.route(CLASSIFY, Reply::Text("{}".into()));
    w.env("EVOLVE_LOG", "info");
    let s = Server::start(&w, &[]);
    add_server(
        &s,
        json!({"name": "fs", "command": node(), "args": [fs, shared, later]}),
    );
    let workspace = w.workspace().canonicalize().unwrap();
    let before = allowed(s.api());
    let has = |lines: &[String], dir: &Path| lines.iter().any(|l| Path::new(l) == dir);
    assert!(
        has(&before, &workspace) && has(&before, &shared) && !has(&before, &later),
        "{before:?}"
    );
    std::fs::create_dir_all(&later).unwrap();
    // Any change of the server list reloads it: here a server added switched off.
    add_server(
        &s,
        json!({"name": "spare", "url": "http://127.0.0.1:9/mcp", "disabled": true}),
    );
    let after = allowed_once_it_has(s.api(), &later);
    assert!(
        has(&after, &later) && has(&after, &workspace) && has(&after, &shared),
        "the new folder is not served: {after:?}"
    );
    let seen = log_saying(&s, "MCP server \"fs\" has new roots; it was told");
    assert_eq!(connections(&seen, "fs"), 1, "restarted: {seen:#?}");
}

/// serve, with server-filesystem added in the web UI for one folder, then replaced with
/// another (as the UI's form does): the next call serves the new folder and no longer
/// the old one — the server was started again with it, nobody restarted anything.
#[test]
fn server_filesystem_replaced_with_another_folder_serves_it_at_once() {
    let Some(fs) = peer("EVOLVE_TEST_MCP_FILESYSTEM") else {
        return;
    };
    let mut w = World::new("mcp-roots-replaced");
    let (old, new) = (folder(&w, "old"), folder(&w, "new"));
    w.config("[tools.levels]\nfs__list_allowed_directories = \"L1\"\n");
    w.fake.route(CLASSIFY, Reply::Text("{}".into()));
    w.env("EVOLVE_LOG", "info");
    let s = Server::start(&w, &[]);
    add_server(
        &s,
        json!({"name": "fs", "command": node(), "args": [fs, old]}),
    );
    let has = |lines: &[String], dir: &Path| lines.iter().any(|l| Path::new(l) == dir);
    let before = allowed(s.api());
    assert!(has(&before, &old) && !has(&before, &new), "{before:?}");
    add_server(
        &s,
        json!({"name": "fs", "command": node(), "args": [fs, new], "replace": true}),
    );
    let after = allowed(s.api());
    assert!(has(&after, &new) && !has(&after, &old), "{after:?}");
    let seen = log_lines(&s);
    assert_eq!(connections(&seen, "fs"), 2, "{seen:#?}");
}
