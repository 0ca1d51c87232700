//! The tools that need a client, driven over stdio as a client would: progress
//! notifications before the reply, a cancelled call that stops and gets no reply (and is
//! listed by `cancelled`), and the server's own requests (`roots/list`,
//! `elicitation/create`) answered by the test.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Long enough for a loaded CI machine, short enough to fail a hung test.
const WAIT: Duration = Duration::from_secs(20);

struct Server {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
}

impl Server {
    /// Started and initialized with `capabilities`.
    fn start(capabilities: Value) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_evolve-mcp-test-server"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the test server starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let message = serde_json::from_str(&line).expect("a JSON-RPC line");
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            stdin,
            lines,
        };
        server.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "test", "version": "0"},
            }}),
        );
        let reply = server.next();
        assert_eq!(reply["id"], 0, "{reply}");
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write");
    }

    /// Closes stdin and waits for the exit; how long the server took.
    fn close(&mut self) -> Duration {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if self.child.try_wait().expect("wait").is_some() {
                return start.elapsed();
            }
            assert!(start.elapsed() < WAIT, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn call(&mut self, id: u64, name: &str, arguments: Value, meta: Option<Value>) {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    }

    fn next(&self) -> Value {
        match self.lines.recv_timeout(WAIT) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("nothing from the server in {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout"),
        }
    }

    /// Everything the server writes within `quiet`.
    fn drain(&self, quiet: Duration) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(message) = self.lines.recv_timeout(quiet) {
            out.push(message);
        }
        out
    }

    fn text_of(reply: &Value) -> &str {
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {reply}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn progress_notifications_carry_the_token_and_precede_the_reply() {
    let mut s = Server::start(json!({}));
    s.call(
        1,
        "progress",
        json!({"steps": 3, "ms": 1}),
        Some(json!({"progressToken": "t-1"})),
    );
    for step in 1..=3 {
        let n = s.next();
        assert_eq!(n["method"], "notifications/progress", "{n}");
        let p = &n["params"];
        assert_eq!(p["progressToken"], "t-1", "{n}");
        assert_eq!(p["progress"].as_f64(), Some(step as f64), "{n}");
        assert_eq!(p["total"].as_f64(), Some(3.0), "{n}");
        assert_eq!(p["message"], format!("step {step} of 3"), "{n}");
    }
    let reply = s.next();
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(Server::text_of(&reply), "done after 3 steps");

    s.call(2, "progress", json!({"steps": 2, "ms": 1}), None);
    let reply = s.next();
    assert_eq!(reply["id"], 2, "no notification without a token: {reply}");
    assert_eq!(
        Server::text_of(&reply),
        "done after 2 steps (no progress token)"
    );
}

#[test]
fn a_cancelled_call_stops_gets_no_reply_and_is_listed() {
    let mut s = Server::start(json!({}));
    let start = Instant::now();
    s.call(7, "slow", json!({"ms": 600_000}), None);
    s.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "timed out"}}),
    );
    s.call(
        8,
        "progress",
        json!({"steps": 1000, "ms": 60_000}),
        Some(json!({"progressToken": 8})),
    );
    s.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 8}}),
    );
    let quiet = s.drain(Duration::from_millis(500));
    assert!(
        quiet.is_empty(),
        "a cancelled call is not answered: {quiet:?}"
    );
    s.call(9, "cancelled", json!({}), None);
    let reply = s.next();
    assert_eq!(reply["id"], 9, "{reply}");
    let listed: Value = serde_json::from_str(Server::text_of(&reply)).expect("JSON");
    assert_eq!(
        listed,
        json!([{"requestId": 7, "reason": "timed out"}, {"requestId": 8, "reason": null}])
    );
    assert!(start.elapsed() < WAIT);
    // At stdin's end rmcp waits up to 5 s for the handlers still running before it
    // exits: a prompt exit shows both sleeps ended when their calls were cancelled.
    let exit = s.close();
    assert!(
        exit < Duration::from_secs(4),
        "handlers kept running: exit took {exit:?}"
    );
}

#[test]
fn roots_and_elicitation_are_asked_of_the_client() {
    let mut s = Server::start(json!({"roots": {}, "elicitation": {}}));
    s.call(1, "list_roots", json!({}), None);
    let ask = s.next();
    assert_eq!(ask["method"], "roots/list", "{ask}");
    s.send(
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [
        {"uri": "file:///w/a", "name": "a"}, {"uri": "file:///w/b"}]}}),
    );
    let reply = s.next();
    assert_eq!(
        Server::text_of(&reply),
        "file:///w/a\nfile:///w/b",
        "{reply}"
    );

    s.call(2, "ask_user", json!({"message": "Who are you?"}), None);
    let ask = s.next();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Who are you?", "{ask}");
    let schema = &ask["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["name"]["type"], "string", "{ask}");
    assert_eq!(schema["properties"]["ok"]["type"], "boolean", "{ask}");
    s.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "action": "accept", "content": {"name": "x", "ok": true}}}));
    let reply = s.next();
    assert_eq!(
        Server::text_of(&reply),
        r#"{"action":"accept","content":{"name":"x","ok":true}}"#
    );

    s.call(3, "list_roots", json!({}), None);
    let ask = s.next();
    s.send(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32603, "message": "no"}}));
    let reply = s.next();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(
        Server::text_of(&reply).starts_with("list_roots: roots/list failed"),
        "{reply}"
    );
}

#[test]
fn without_the_capabilities_the_client_is_not_asked() {
    let mut s = Server::start(json!({}));
    s.call(1, "list_roots", json!({}), None);
    s.call(2, "ask_user", json!({"message": "hi"}), None);
    let mut replies = [s.next(), s.next()];
    replies.sort_by_key(|r| r["id"].as_u64());
    for (reply, capability) in replies.iter().zip(["roots", "elicitation"]) {
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = Server::text_of(reply);
        assert!(
            text.contains(&format!("did not declare the {capability}")),
            "{text}"
        );
    }
}
