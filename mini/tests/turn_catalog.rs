//! The tools a turn offers are the turn's own: `serve` runs turns of several sessions
//! at once, and one session's MCP listing never decides another's permission check
//! (a process-wide catalog used to let one do so).

mod support;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use support::mcp::with_test_server;
use support::serve::{chat_body, Api, Resp, Server};
use support::{tool_call, Reply, World, CLASSIFY};

/// A plain (headless, `yes`) chat completion in `session`, answered as JSON.
fn post_turn(api: Api, session: &str, text: &str) -> Value {
    let body = chat_body(text, json!({"session": session, "evolve_yes": true}));
    let Api { port, token } = api;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let resp = Resp::parse(&raw);
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()
}

fn new_session(s: &Server) -> String {
    let r = s.post("/v1/sessions", "{}");
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    r.json()["id"].as_str().unwrap().to_string()
}

/// Session A's model is asked with A's listing (no `extra`) and thinks for a while;
/// meanwhile session B's turn adds the tool `extra` to the server and is shown it. A's
/// model then calls `extra`, which A's listing lacks: A's turn asks the server for its
/// list itself (a tool announced too late for the step) and checks the
/// call against that listing of its own, at the level it gives the tool — never against
/// B's. (With one process-wide catalog, A's check used B's listing unseen.)
#[test]
fn two_sessions_at_once_each_check_calls_against_their_own_listing() {
    let w = World::new("turn-catalog");
    with_test_server(&w, &[], "");
    w.config(&format!(
        "{}\n[agent]\nlearn = false\n",
        std::fs::read_to_string(w.config_path()).unwrap()
    ));
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"extra": "L1"}"#.into()));
    // A: (slowly) call `extra`, then answer.
    w.fake.route(
        "alpha-question",
        tool_call("t__extra", "{}").after(Duration::from_secs(4)),
    );
    w.fake.route("alpha-question", Reply::text("alpha done"));
    // B: add the tool, use it, answer.
    w.fake
        .route("beta-question", tool_call("t__add_tool", "{}"));
    w.fake.route("beta-question", tool_call("t__extra", "{}"));
    w.fake.route("beta-question", Reply::text("beta done"));
    let s = Server::start(&w, &[]);
    let (a, b) = (new_session(&s), new_session(&s));
    let port = s.api();
    let (ra, rb) = std::thread::scope(|scope| {
        let ta = scope.spawn(|| post_turn(port, &a, "alpha-question: use the extra tool"));
        std::thread::sleep(Duration::from_millis(1500));
        let tb = scope.spawn(|| post_turn(port, &b, "beta-question: add a tool and use it"));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let b_tools = &rb["evolve"]["tools"];
    assert_eq!(b_tools[1]["name"], "t__extra", "{rb}");
    assert_eq!(b_tools[1]["ran"], true, "{rb}");
    assert_eq!(b_tools[1]["is_error"], false, "{rb}");
    let a_tools = &ra["evolve"]["tools"];
    assert_eq!(a_tools[0]["name"], "t__extra", "{ra}");
    assert_eq!(
        a_tools[0]["level"], b_tools[1]["level"],
        "checked at its level: {ra}"
    );
    assert_eq!(a_tools[0]["ran"], true, "{ra}");
    // The step after it is shown the new list.
    let reqs = w.main_requests();
    let alpha: Vec<&Value> = reqs
        .iter()
        .filter(|r| r.to_string().contains("alpha-question"))
        .collect();
    assert_eq!(alpha.len(), 2, "{alpha:?}");
    assert!(!support::mcp::tool_names(alpha[0])
        .iter()
        .any(|n| n == "t__extra"));
    assert!(support::mcp::tool_names(alpha[1])
        .iter()
        .any(|n| n == "t__extra"));
    assert_eq!(ra["choices"][0]["message"]["content"], "alpha done", "{ra}");
}
