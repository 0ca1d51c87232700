//! A loopback streamable HTTP server, and the client's exchanges with it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::super::jsonrpc::{Failure, Peer};
use super::link::{HttpLink, Limits, LIMITS};
use super::*;
use crate::cancel::Cancel;
use crate::mcp::conn::Conn;
use crate::mcp::stdio::StderrTail;
use crate::mcp::McpError;
use crate::mcp_spec::{ServerSpec, SpecSource, Transport};
use crate::secret::Secret;

const TOKEN: &str = "tok-5ecret-0123456789";
const SESSION: &str = "sess-7f3a";
const LONG: Duration = Duration::from_secs(30);
// ---- a loopback streamable HTTP server ----

/// One request as the test server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn rpc_method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

type Answer = Arc<dyn Fn(&Seen) -> String + Send + Sync>;

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Answers every request with `answer`, one request per connection.
    fn start(answer: impl Fn(&Seen) -> String + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let answer: Answer = Arc::new(answer);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (log, answer) = (log.clone(), answer.clone());
                std::thread::spawn(move || serve_one(conn, &answer, &log));
            }
        });
        Server {
            url: format!("http://127.0.0.1:{port}/mcp"),
            seen,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }

    /// Waits until what the server saw satisfies `done` (the GET stream and
    /// answers to the server run on threads of their own).
    fn wait_for(&self, what: &str, done: impl Fn(&[Seen]) -> bool) {
        let end = Instant::now() + LONG;
        while !done(&self.seen()) {
            assert!(Instant::now() < end, "never saw {what}: {:?}", self.seen());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Reads one request, records it, answers it and closes the connection.
fn serve_one(conn: TcpStream, answer: &Answer, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone socket"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let method = line.split(' ').next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((n, v)) = l.split_once(':') {
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let seen = Seen {
        method,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let mut conn = conn;
    if seen.rpc_method() == "server/discover" {
        // These servers speak the revisions with `initialize` only, as a stateful
        // TypeScript server does: a request without a session is refused.
        let refusal = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
        let _ = conn.write_all(plain(400, JSON, &[], &refusal.to_string()).as_bytes());
        return;
    }
    log.lock().expect("log").push(seen.clone());
    let _ = conn.write_all(answer(&seen).as_bytes());
}

fn plain(status: u16, content_type: &str, extra: &[(&str, &str)], body: &str) -> String {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (n, v) in extra {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    format!("{head}\r\n{body}")
}

const PROTOCOL_VERSION_TEXT: &str = crate::mcp::conn::PROTOCOL_VERSION;

/// An event stream without a length: it ends when the connection closes.
fn event_stream(events: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{events}"
    )
}

/// The answer to `initialize`, giving session `session`.
fn initialized(req: &Seen, session: &str) -> String {
    let result = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {
        "protocolVersion": req.body["params"]["protocolVersion"],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "loopback", "version": "1"}
    }});
    plain(
        200,
        "application/json; charset=utf-8",
        &[("Mcp-Session-Id", session)],
        &result.to_string(),
    )
}

/// Enough streamable HTTP for a client: JSON, event streams, a notification and a
/// request of the server's inside a call's stream, errors as statuses.
fn mcp_answer(req: &Seen) -> String {
    match req.method.as_str() {
        "GET" => return plain(405, "text/plain", &[("Allow", "POST, DELETE")], ""),
        "DELETE" => return plain(200, "text/plain", &[], ""),
        _ => {}
    }
    let id = req.body["id"].clone();
    let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    match req.rpc_method() {
        "initialize" => initialized(req, SESSION),
        "tools/list" => {
            let result = reply(json!({"tools": [{
                "name": "echo",
                "description": "Says it back",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
            }]}));
            event_stream(&format!(
                ": hello\r\nid: ev-1\r\nevent: message\r\ndata: {result}\r\n\r\n"
            ))
        }
        "tools/call" if req.body["params"]["name"] == "boom" => {
            plain(500, "text/plain", &[], "the tool exploded")
        }
        "tools/call" if req.body["params"]["name"] == "nope" => plain(
            400,
            JSON,
            &[],
            &json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32602, "message": "unknown tool \"nope\""}})
            .to_string(),
        ),
        "tools/call" => {
            let text = req.body["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or("");
            let result = reply(json!({
                "content": [{"type": "text", "text": format!("echo: {text}")}],
                "isError": false
            }))
            .to_string();
            // A log notification and a ping first, then the answer cut over two
            // data lines.
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            let ping = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"});
            let (a, b) = result.split_at(result.find(",\"result\"").unwrap_or(0));
            event_stream(&format!(
                "data: {note}\n\ndata: {ping}\n\ndata: {a}\ndata: {b}\n\n"
            ))
        }
        _ if req.body.get("id").is_none() => plain(202, "text/plain", &[], ""),
        _ => plain(
            200,
            JSON,
            &[],
            &json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "no such method"}})
            .to_string(),
        ),
    }
}

fn spec(url: &str, headers: &[(&str, &str)], bearer: Option<&str>) -> ServerSpec {
    ServerSpec {
        name: "web".into(),
        transport: Transport::Http {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            bearer: bearer.map(Secret::new),
            oauth: Default::default(),
        },
        timeout: LONG,
        sandbox: Default::default(),
        trusted: false,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        disabled: false,
        roots: Vec::new(),
        source: SpecSource::Store,
    }
}

fn open(spec: &ServerSpec) -> Result<Arc<Conn>, McpError> {
    Conn::open(
        spec,
        None,
        None,
        &StderrTail::default(),
        &Cancel::new(),
        |_| {},
    )
}

/// A bare peer on the link, for one exchange.
fn peer_at(url: &str, bearer: Option<&Secret>, limits: Limits) -> Arc<Peer> {
    let Ok(endpoint) = endpoint(url, &[], bearer) else {
        panic!("{url} refused");
    };
    let link = HttpLink::with_limits("web", endpoint, limits);
    Peer::new("web", Arc::new(link), Vec::new())
}

fn broken(got: Result<Value, Failure>) -> String {
    match got {
        Err(Failure::Broken(text)) => text,
        other => panic!("not a broken exchange: {other:?}"),
    }
}

#[test]
fn a_client_initializes_lists_and_calls_tools_through_ureq() {
    let server = Server::start(mcp_answer);
    let never = Cancel::new();
    let conn = open(&spec(&server.url, &[("X-Team", "blue")], Some(TOKEN))).expect("initialize");
    let tools = conn.list(&never).expect("tools/list");
    let mut args = serde_json::Map::new();
    args.insert("text".into(), json!("hi"));
    let out = conn
        .call("echo", args, &never, &mut crate::mcp::NoEvents)
        .expect("tools/call");
    let boom = conn
        .call(
            "boom",
            serde_json::Map::new(),
            &never,
            &mut crate::mcp::NoEvents,
        )
        .expect_err("a failing call");
    assert_eq!(
        boom,
        McpError::Broken {
            server: "web".into(),
            detail: format!(
                "the MCP server at {} answered HTTP 500 Internal Server Error: the tool exploded",
                server.url
            )
        }
    );
    let nope = conn
        .call(
            "nope",
            serde_json::Map::new(),
            &never,
            &mut crate::mcp::NoEvents,
        )
        .expect_err("an unknown tool");
    assert_eq!(
        nope,
        McpError::Server {
            server: "web".into(),
            detail: "unknown tool \"nope\" (code -32602)".into()
        },
        "the server's JSON-RPC error in an error status is its answer"
    );
    server.wait_for("the GET stream", |seen| {
        seen.iter().any(|s| s.method == "GET")
    });
    server.wait_for("the answer to the server's ping", |seen| {
        seen.iter()
            .any(|s| s.method == "POST" && s.body["id"] == "srv-1")
    });
    conn.close();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
    assert_eq!(out.content, "echo: hi");
    assert!(!out.is_error);

    let seen = server.seen();
    // The answer to the server's ping goes on a thread of its own: in any order.
    let (answers, posts): (Vec<&Seen>, Vec<&Seen>) = seen
        .iter()
        .filter(|s| s.method == "POST")
        .partition(|s| s.body["id"] == "srv-1");
    let methods: Vec<&str> = posts.iter().map(|s| s.rpc_method()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call",
            "tools/call"
        ]
    );
    assert_eq!(answers.len(), 1);
    assert_eq!(
        answers[0].body,
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})
    );
    for s in &seen {
        let what = format!("{} {}", s.method, s.rpc_method());
        assert_eq!(
            s.header("authorization"),
            Some(&*format!("Bearer {TOKEN}")),
            "{what}"
        );
        assert_eq!(s.header("x-team"), Some("blue"), "{what}");
        let initialize = s.rpc_method() == "initialize";
        assert_eq!(
            s.header("mcp-session-id"),
            (!initialize).then_some(SESSION),
            "{what}"
        );
        assert_eq!(
            s.header("mcp-protocol-version"),
            (!initialize).then_some(crate::mcp::conn::PROTOCOL_VERSION),
            "{what}"
        );
    }
    let post = posts[0];
    assert_eq!(post.header("content-type"), Some(JSON));
    assert_eq!(
        post.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(
        post.body["params"],
        json!({"protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": true}, "elicitation": {"form": {}}},
            "clientInfo": {"name": "evolve", "version": env!("CARGO_PKG_VERSION")}})
    );
    // The GET stream was asked for (405: the client went on without it), and the
    // session was deleted on close.
    let get = seen
        .iter()
        .find(|s| s.method == "GET")
        .expect("a GET stream");
    assert_eq!(get.header("accept"), Some(EVENT_STREAM));
    assert!(seen.iter().any(|s| s.method == "DELETE"), "{seen:?}");
}

#[test]
fn error_statuses_name_the_url_and_status_but_not_the_token() {
    let long = "<html>".repeat(200);
    let echoed = format!("bad token {TOKEN}");
    let cases: [(u16, String, &[&str]); 3] = [
        (
            401,
            echoed,
            &[
                "HTTP 401 Unauthorized",
                "bad token ***",
                "check the bearer token",
            ],
        ),
        (
            500,
            "database down".into(),
            &["HTTP 500 Internal Server Error", "database down"],
        ),
        (502, long, &["HTTP 502", "<html><html>", "…"]),
    ];
    for (status, body, wants) in cases {
        let server = Server::start(move |_| plain(status, "text/plain", &[], &body));
        let secret = Secret::new(TOKEN);
        let peer = peer_at(&server.url, Some(&secret), LIMITS);
        let err = broken(peer.request("initialize", Some(json!({})), LONG, &Cancel::new()));
        let start = format!("the MCP server at {} answered HTTP {status}", server.url);
        assert!(err.starts_with(&start), "{status}: {err}");
        for want in wants {
            assert!(err.contains(want), "{status}: {want:?} not in {err}");
        }
        assert!(!err.contains(TOKEN), "{status}: the token leaked: {err}");
        assert!(
            err.chars().count() < 300 + 150,
            "{status}: body not cut: {err}"
        );
    }
}

#[test]
fn an_unreachable_server_is_named_with_what_to_check() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("address").port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let peer = peer_at(&url, None, LIMITS);
    let err = broken(peer.request("initialize", Some(json!({})), LONG, &Cancel::new()));
    assert!(
        err.contains(&format!("cannot reach the MCP server at {url}")),
        "{err}"
    );
    assert!(err.contains("connection refused"), "{err}");
    let Err(McpError::Start { detail, .. }) = open(&spec(&url, &[], None)) else {
        panic!("started without a server");
    };
    assert!(
        detail.starts_with("the handshake failed: cannot reach"),
        "{detail}"
    );
}

/// The GET stream delivers the server's notifications, resumes after the last event
/// id, and ends when the server has none (405).
#[test]
fn the_get_stream_delivers_notifications_and_resumes() {
    let server = Server::start(|req| {
        match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => initialized(req, SESSION),
        ("POST", _) => plain(202, "text/plain", &[], ""),
        ("GET", _) if req.header("last-event-id").is_none() => event_stream(
            "retry: 10\nid: 5\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        ),
        ("GET", _) => plain(405, "text/plain", &[], ""),
        _ => plain(200, "text/plain", &[], ""),
    }
    });
    let conn = open(&spec(&server.url, &[], None)).expect("initialize");
    server.wait_for("two GETs", |seen| {
        seen.iter().filter(|s| s.method == "GET").count() == 2
    });
    assert!(conn.stale().load(Ordering::SeqCst), "list_changed arrived");
    conn.close();
    let seen = server.seen();
    let gets: Vec<&Seen> = seen.iter().filter(|s| s.method == "GET").collect();
    for get in &gets {
        assert_eq!(get.header("accept"), Some(EVENT_STREAM));
        assert_eq!(get.header("mcp-session-id"), Some(SESSION));
        assert_eq!(get.header("mcp-protocol-version"), Some("2025-11-25"));
    }
    assert_eq!(gets[0].header("last-event-id"), None);
    assert_eq!(gets[1].header("last-event-id"), Some("5"));
}

/// What the resuming tests' server did: when it closed the call's stream, and each
/// resuming GET's Last-Event-ID with how long after that close it came.
#[derive(Default)]
struct Resumed {
    call: Option<Value>,
    closed: Option<Instant>,
    gets: Vec<(String, Duration)>,
}

/// A server that ends a call's event stream early (after `first`, the call's events
/// up to where it stops) and answers resuming GETs with `on_get(n, call id)`, the
/// n-th such GET from 0; the session's own GET stream is refused (405).
fn resuming_server(
    first: &'static str,
    on_get: impl Fn(usize, &Value) -> String + Send + Sync + 'static,
) -> (Server, Arc<Mutex<Resumed>>) {
    let state = Arc::new(Mutex::new(Resumed::default()));
    let log = state.clone();
    let server = Server::start(move |req| {
        let mut state = log.lock().expect("state");
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => initialized(req, SESSION),
            ("POST", "tools/call") => {
                state.call = Some(req.body["id"].clone());
                state.closed = Some(Instant::now());
                event_stream(first)
            }
            ("GET", _) => match req.header("last-event-id") {
                None => plain(405, "text/plain", &[], ""),
                Some(last) => {
                    let after = state.closed.map(|c| c.elapsed()).unwrap_or_default();
                    state.gets.push((last.to_string(), after));
                    let n = state.gets.len() - 1;
                    // A poll ends like the call's stream did: the next GET is timed
                    // from here.
                    state.closed = Some(Instant::now());
                    on_get(n, state.call.as_ref().unwrap_or(&Value::Null))
                }
            },
            ("POST", _) => plain(202, "text/plain", &[], ""),
            _ => plain(200, "text/plain", &[], ""),
        }
    });
    (server, state)
}

fn echo_result(call: &Value, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": call, "result": {
        "content": [{"type": "text", "text": text}]
    }})
    .to_string()
}

/// A call whose event stream ends before the answer (SSE polling, as the MCP
/// conformance suite's sse-retry scenario does it) is resumed with a GET carrying
/// Last-Event-ID after the server's `retry` — not at once, not after the default
/// second — again while the server keeps polling, and the answer on the resumed
/// stream is the call's.
#[test]
fn a_call_stream_ended_early_is_resumed_after_the_servers_retry_with_the_last_event_id() {
    let (server, state) = resuming_server("id: call-1\nretry: 250\ndata: \n\n", |n, call| {
        if n == 0 {
            // Still working: one more priming event, and the stream ends again.
            event_stream("id: call-2\ndata: \n\n")
        } else {
            let answer = echo_result(call, "done after polling");
            event_stream(&format!("id: call-3\nevent: message\ndata: {answer}\n\n"))
        }
    });
    let conn = open(&spec(&server.url, &[], None)).expect("initialize");
    let never = Cancel::new();
    let out = conn
        .call(
            "slow",
            serde_json::Map::new(),
            &never,
            &mut crate::mcp::NoEvents,
        )
        .expect("the answer on the resumed stream");
    conn.close();
    assert_eq!(out.content, "done after polling");
    let gets = std::mem::take(&mut state.lock().expect("state").gets);
    let ids: Vec<&str> = gets.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call-1", "call-2"]);
    for (id, after) in &gets {
        // The retry of the first stream holds for the next ones (the SSE standard).
        assert!(
            *after >= Duration::from_millis(250) && *after < Duration::from_millis(1000),
            "resumed after {id} in {after:?}, not after the server's 250 ms"
        );
    }
    let seen = server.seen();
    let resumes: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.method == "GET" && s.header("last-event-id").is_some())
        .collect();
    for get in resumes {
        assert_eq!(get.header("accept"), Some(EVENT_STREAM));
        assert_eq!(get.header("mcp-session-id"), Some(SESSION));
    }
    assert_eq!(
        seen.iter()
            .filter(|s| s.rpc_method() == "tools/call")
            .count(),
        1,
        "the call is resumed, never sent again"
    );
}

/// What cannot be resumed is an error naming why: a stream that gave no event id, a
/// server that refuses the resuming GET or does not answer it, one whose resumed
/// streams stay empty.
#[test]
fn a_call_stream_that_cannot_be_resumed_fails_the_call_with_the_reason() {
    /// What the server does, and what the call's error says after how many GETs.
    struct Case {
        what: &'static str,
        first: &'static str,
        on_get: fn(usize, &Value) -> String,
        error: &'static str,
        gets: usize,
    }
    let cases = [
        Case {
            what: "no event id",
            first: "data: \n\n",
            on_get: |_, _| unreachable!("nothing to resume from"),
            error: "the server ended the event stream without answering",
            gets: 0,
        },
        Case {
            what: "the GET refused",
            first: "id: a-1\nretry: 10\ndata: \n\n",
            on_get: |_, _| plain(405, "text/plain", &[], ""),
            error: "answer to the GET that resumes it (Last-Event-ID \"a-1\") was HTTP 405",
            gets: 1,
        },
        Case {
            what: "the GET unanswered",
            first: "id: c-1\nretry: 10\ndata: \n\n",
            // The connection closes before a status line: ureq fails the GET.
            on_get: |_, _| String::new(),
            error: "broke: the server closed the connection, 5 times resuming the call's \
                    event stream after event \"c-1\"",
            gets: 5,
        },
        Case {
            what: "empty resumed streams",
            first: "id: b-1\nretry: 10\ndata: \n\n",
            on_get: |_, _| event_stream(""),
            error: "without answering, 5 times after resuming at event \"b-1\"",
            gets: 5,
        },
    ];
    for Case {
        what,
        first,
        on_get,
        error,
        gets,
    } in cases
    {
        let (server, state) = resuming_server(first, on_get);
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        let got = conn.call(
            "slow",
            serde_json::Map::new(),
            &Cancel::new(),
            &mut crate::mcp::NoEvents,
        );
        conn.close();
        match got {
            Err(McpError::Broken { detail, .. }) => {
                assert!(detail.contains(error), "{what}: {detail}")
            }
            other => panic!("{what}: not a broken call: {other:?}"),
        }
        assert_eq!(state.lock().expect("state").gets.len(), gets, "{what}");
    }
}

/// A server that lost the session (restarted) answers 404: a new session is
/// started and the request sent once more.
#[test]
fn an_expired_session_is_replaced_and_the_request_sent_again() {
    for restarted in [false, true] {
        expired_session_is_replaced(restarted);
    }
}

/// `restarted`: the server answers the old session as the TypeScript SDK's examples
/// do after a restart (400, a JSON-RPC error without an id), not 404.
fn expired_session_is_replaced(restarted: bool) {
    let sessions = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |req| {
        let session = req.header("mcp-session-id").unwrap_or("");
        match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => {
                let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                initialized(req, &format!("s{n}"))
            }
            ("POST", "tools/list") if session == "s1" && restarted => plain(
                400,
                JSON,
                &[],
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
            ),
            ("POST", "tools/list") if session == "s1" => plain(404, "text/plain", &[], "no such session"),
            ("POST", "tools/list") => plain(
                200,
                JSON,
                &[],
                &json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}})
                    .to_string(),
            ),
            ("POST", _) => plain(202, "text/plain", &[], ""),
            ("GET", _) => plain(405, "text/plain", &[], ""),
            _ => plain(200, "text/plain", &[], ""),
        }
    });
    let conn = open(&spec(&server.url, &[], None)).expect("initialize");
    let tools = conn.list(&Cancel::new()).expect("listed in a new session");
    assert_eq!(tools.len(), 1);
    conn.close();
    let seen = server.seen();
    let posts: Vec<(&str, Option<&str>, Option<&str>)> = seen
        .iter()
        .filter(|s| s.method == "POST")
        .map(|s| {
            (
                s.rpc_method(),
                s.header("mcp-session-id"),
                s.header("mcp-protocol-version"),
            )
        })
        .collect();
    let v = Some("2025-11-25");
    assert_eq!(
        posts,
        [
            ("initialize", None, None),
            ("notifications/initialized", Some("s1"), v),
            ("tools/list", Some("s1"), v),
            ("initialize", None, None),
            ("notifications/initialized", Some("s2"), v),
            ("tools/list", Some("s2"), v),
        ]
    );
}

/// `tools/list` is read page by page while the server gives a new `nextCursor`; a
/// cursor given twice ends the listing (a server stuck on one page cannot hold a
/// turn).
#[test]
fn tools_are_listed_page_by_page() {
    let server = Server::start(|req| match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => initialized(req, SESSION),
        ("POST", "tools/list") => {
            let (names, next) = match req.body["params"]["cursor"].as_str() {
                None => (["a", "b"], json!("c2")),
                Some("c2") => (["c", "d"], json!("c3")),
                // The third page points back at itself.
                _ => (["e", "f"], json!("c3")),
            };
            let tools: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect();
            let body = json!({"jsonrpc": "2.0", "id": req.body["id"],
                "result": {"tools": tools, "nextCursor": next}});
            plain(200, JSON, &[], &body.to_string())
        }
        ("POST", _) => plain(202, "text/plain", &[], ""),
        ("GET", _) => plain(405, "text/plain", &[], ""),
        _ => plain(200, "text/plain", &[], ""),
    });
    let conn = open(&spec(&server.url, &[], None)).expect("initialize");
    let tools = conn.list(&Cancel::new()).expect("listed");
    conn.close();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e", "f"]);
    let cursors: Vec<Value> = server
        .seen()
        .iter()
        .filter(|s| s.rpc_method() == "tools/list")
        .map(|s| s.body.get("params").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        cursors,
        [
            Value::Null,
            json!({"cursor": "c2"}),
            json!({"cursor": "c3"})
        ]
    );
}

/// A protocol revision evolve does not know is refused at the handshake, naming it
/// and the ones evolve speaks; an older known one is taken.
#[test]
fn an_unknown_protocol_version_is_refused_and_an_older_one_taken() {
    for (answered, ok) in [
        ("1999-01-01", false),
        ("2025-06-18", true),
        ("2024-11-05", true),
    ] {
        let server = Server::start(move |req| match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => {
                let result = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {
                    "protocolVersion": answered, "capabilities": {"tools": {}},
                    "serverInfo": {"name": "old", "version": "1"}}});
                plain(
                    200,
                    JSON,
                    &[("Mcp-Session-Id", SESSION)],
                    &result.to_string(),
                )
            }
            ("POST", _) => plain(202, "text/plain", &[], ""),
            ("GET", _) => plain(405, "text/plain", &[], ""),
            _ => plain(200, "text/plain", &[], ""),
        });
        match open(&spec(&server.url, &[], None)) {
            Ok(conn) => {
                assert!(ok, "{answered} was taken");
                conn.close();
            }
            Err(e) => {
                assert!(!ok, "{answered}: {e}");
                let text = e.to_string();
                assert!(
                    text.contains("1999-01-01") && text.contains(PROTOCOL_VERSION_TEXT),
                    "{text}"
                );
            }
        }
    }
}

/// A tool that runs only as an MCP task is not offered (every call would fail).
#[test]
fn task_only_tools_are_not_offered() {
    let server = Server::start(|req| match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => initialized(req, SESSION),
        ("POST", "tools/list") => {
            let body = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {"tools": [
                {"name": "quick", "inputSchema": {"type": "object"}},
                {"name": "long", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
                {"name": "either", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
            ]}});
            plain(200, JSON, &[], &body.to_string())
        }
        ("POST", _) => plain(202, "text/plain", &[], ""),
        ("GET", _) => plain(405, "text/plain", &[], ""),
        _ => plain(200, "text/plain", &[], ""),
    });
    let conn = open(&spec(&server.url, &[], None)).expect("initialize");
    let tools = conn.list(&Cancel::new()).expect("listed");
    conn.close();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["quick", "either"]);
}

/// Answers are read within the limits before they are parsed.
#[test]
fn answers_over_the_limits_are_refused() {
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(4000)
    );
    let cases = [
        (
            plain(200, JSON, &[], &big),
            "a response larger than 1000 bytes",
        ),
        (
            event_stream(&format!("data: {big}\n\n")),
            "an event larger than 1000 bytes",
        ),
    ];
    let limits = Limits {
        json: 1000,
        event: 1000,
        error: MAX_ERROR,
    };
    for (answer, want) in cases {
        let server = Server::start(move |_| answer.clone());
        let peer = peer_at(&server.url, None, limits);
        let err = broken(peer.request("ping", None, LONG, &Cancel::new()));
        assert!(err.contains(want), "{want}: {err}");
    }
}

/// A call given up on (Ctrl-C before evolve exits) is cancelled while the session
/// still exists: the server has taken the `notifications/cancelled` before the
/// DELETE that ends the session — even when it is slow to take it.
#[test]
fn a_cancellation_reaches_the_server_before_the_session_is_deleted() {
    let order = Arc::new(Mutex::new(Vec::<&str>::new()));
    let log = order.clone();
    let server = Server::start(move |req| match (req.method.as_str(), req.rpc_method()) {
        ("POST", "initialize") => initialized(req, SESSION),
        ("POST", "tools/call") => {
            // Never answered in time.
            std::thread::sleep(Duration::from_secs(5));
            plain(202, "text/plain", &[], "")
        }
        ("POST", "notifications/cancelled") => {
            std::thread::sleep(Duration::from_millis(300));
            log.lock().unwrap().push("cancelled taken");
            plain(202, "text/plain", &[], "")
        }
        ("DELETE", _) => {
            log.lock().unwrap().push("DELETE");
            plain(200, "text/plain", &[], "")
        }
        ("GET", _) => plain(405, "text/plain", &[], ""),
        _ => plain(202, "text/plain", &[], ""),
    });
    let conn = open(&spec(&server.url, &[], None)).expect("initialize");
    let cancel = Arc::new(Cancel::new());
    let flag = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.cancel();
    });
    let got = conn.call(
        "slow",
        serde_json::Map::new(),
        &cancel,
        &mut crate::mcp::NoEvents,
    );
    assert_eq!(got, Err(McpError::Cancelled));
    conn.close();
    let cancelled = server
        .seen()
        .into_iter()
        .find(|s| s.rpc_method() == "notifications/cancelled")
        .expect("a cancellation was sent");
    assert_eq!(cancelled.body["params"]["reason"], "cancelled by the user");
    assert_eq!(cancelled.header("Mcp-Session-Id"), Some(SESSION));
    assert_eq!(*order.lock().unwrap(), ["cancelled taken", "DELETE"]);
}

/// Interoperability with a real server, by hand: start one, e.g.
/// `PORT=3001 npx -y @modelcontextprotocol/server-everything streamableHttp`, then
/// `EVOLVE_MCP_TEST_URL=http://127.0.0.1:3001/mcp cargo test -p evolve-mini
/// real_server -- --ignored --nocapture`.
#[test]
#[ignore = "needs a running MCP server at EVOLVE_MCP_TEST_URL"]
fn real_server() {
    let Ok(url) = std::env::var("EVOLVE_MCP_TEST_URL") else {
        panic!("set EVOLVE_MCP_TEST_URL to a streamable HTTP MCP endpoint");
    };
    let never = Cancel::new();
    let conn = open(&spec(&url, &[], None)).unwrap_or_else(|e| panic!("{e}"));
    let tools = conn.list(&never).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    eprintln!("{} tools: {names:?}", names.len());
    let mut args = serde_json::Map::new();
    args.insert("message".into(), json!("hello over ureq"));
    let out = conn
        .call("echo", args, &never, &mut crate::mcp::NoEvents)
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("echo: {out:?}");
    // A slow tool that streams progress before its answer.
    if names.contains(&"trigger-long-running-operation") {
        let mut args = serde_json::Map::new();
        args.insert("duration".into(), json!(2));
        args.insert("steps".into(), json!(4));
        let out = conn
            .call(
                "trigger-long-running-operation",
                args,
                &never,
                &mut crate::mcp::NoEvents,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!("slow: {out:?}");
    }
    conn.close();
}
