//! Attacks on `evolve serve` that must fail: each test sends what a hostile client, a
//! desynchronising proxy or a program squatting on a stale port would, and asserts the
//! server (or `evolve ask`) does not fall for it.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;
use support::serve::Server;
use support::{Reply, World};

/// Two `Content-Length` headers with different values: RFC 9112 §6.3 says the message
/// is unrecoverable (400). Taking the first lets the bytes a proxy counted as this
/// request's body be read as a second, smuggled request.
#[test]
fn two_different_content_lengths_are_refused_not_split_into_two_requests() {
    let w = World::new("attack-dup-cl");
    let s = Server::start(&w, &[]);
    let smuggled_body = json!({"content": "smuggled by a second request"}).to_string();
    let smuggled = format!(
        "POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{smuggled_body}",
        smuggled_body.len()
    );
    let raw = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\
         Content-Length: {}\r\n\r\n{smuggled}",
        smuggled.len()
    );
    let r = s.raw(raw.as_bytes());
    assert_eq!(r.status, 400, "conflicting Content-Length accepted: {r:?}");
    let stored = s.get("/v1/memory").json();
    assert_eq!(
        stored["data"],
        json!([]),
        "the body was run as a second request"
    );
}

/// `Content-Length = 1*DIGIT`; `usize::from_str` also takes a leading `+`, which a
/// front proxy would reject or read differently.
#[test]
fn a_signed_content_length_is_refused() {
    let w = World::new("attack-plus-cl");
    let s = Server::start(&w, &[]);
    let r = s.request(
        "POST",
        "/v1/sessions",
        &[
            ("Content-Length", "+2"),
            ("Content-Type", "application/json"),
        ],
        "{}",
    );
    assert_eq!(r.status, 400, "Content-Length: +2 was accepted: {r:?}");
}

/// The head timeout (10 s) is only checked once a whole header line has arrived, and
/// each read may take the full 10 s: one byte every 2 s without a newline keeps the
/// connection (and its worker slot) for ever. 256 such clients lock everybody out.
#[test]
fn a_request_head_trickled_a_byte_at_a_time_is_still_cut_off() {
    let w = World::new("attack-trickle");
    let s = Server::start(&w, &[]);
    let mut slow = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    // Three times the server's own head timeout.
    while started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_secs(2));
        if slow.write_all(b"a").is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match slow.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                break;
            }
            Err(_) => {}
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "a head trickled for {} s was never cut off (got {answer:?})",
        started.elapsed().as_secs()
    );
}

/// SIGTERM must not wait for a client that is slowly uploading a body: the request
/// reader never looks at the shutdown flag, so the process lingers up to the 60 s body
/// timeout (and for ever with a trickled head).
#[test]
fn sigterm_is_not_held_up_by_a_slow_upload() {
    let w = World::new("attack-slow-stop");
    let s = Server::start(&w, &[]);
    let mut slow = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow.write_all(
        b"POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Content-Length: 1000\r\n\r\n{\"content\": \"",
    )
    .unwrap();
    // Make sure the server is reading the body before it is told to stop.
    assert_eq!(s.get("/health").status, 200);
    std::thread::sleep(Duration::from_millis(300));
    // stop() gives it 15 s.
    assert_eq!(
        s.stop(),
        Some(0),
        "serve did not stop within 15 s of SIGTERM while a body was uploading"
    );
    drop(slow);
}

/// `evolve ask` trusts any live process whose command line contains "serve" or
/// "evolve" (python -m http.server, an "observer", …) as the recorded server, and sends
/// it the question and the bearer token — even though the store is free and ask could
/// answer by itself. A serve.json left by a killed server plus a reused pid and port is
/// enough.
#[test]
fn ask_does_not_hand_the_token_and_question_to_a_program_that_is_not_serve() {
    let w = World::new("attack-ask-squat");
    w.fake.push(Reply::text("answered locally"));
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    std::fs::write(w.home.join("serve.token"), "f00d".repeat(16)).unwrap();
    // This test's own process stands in for the unrelated program: its command line
    // (…/serve_attacks-HASH) contains "serve".
    std::fs::write(
        w.home.join("serve.json"),
        json!({"pid": std::process::id(), "addr": format!("127.0.0.1:{port}"), "token": true})
            .to_string(),
    )
    .unwrap();
    squatter.set_nonblocking(true).unwrap();
    let seen = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok((mut c, _)) = squatter.accept() {
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    if String::from_utf8_lossy(&got).contains("the launch code") {
                        break;
                    }
                }
                let _ = c.write_all(b"HTTP/1.1 503 Nope\r\nContent-Length: 0\r\n\r\n");
                return String::from_utf8_lossy(&got).into_owned();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        String::new()
    });
    let run = w.run(&["ask", "what is the launch code?"]);
    let captured = seen.join().unwrap();
    assert!(
        !captured.contains(&"f00d".repeat(16)) && !captured.contains("the launch code"),
        "ask sent the token and the question to another program:\n{captured}\n\
         (ask exit {}, stderr {})",
        run.code,
        run.stderr
    );
}

/// Secrets must not appear in any GET route. The model's base URL is shown with its
/// query string, where proxies and Azure-style gateways take their key (`?api-key=`);
/// MCP URLs already drop theirs.
#[test]
fn no_get_route_shows_a_secret() {
    let mut w = World::new("attack-secrets");
    let base = format!("{}?api-key=QUERYSECRET0123456789", w.fake.base_url());
    w.env("OPENAI_BASE_URL", &base);
    w.env("OPENAI_API_KEY", "sk-APIKEYSECRET0123456789abcdef");
    w.config(
        "[mcp.servers.remote]\nurl = \"http://127.0.0.1:1/mcp?token=URLSECRET0123456789\"\n\
         bearer_token = \"BEARERSECRET0123456789abcdef\"\n\
         headers = { \"X-Api-Key\" = \"HEADERSECRET0123456789abcdef\" }\n",
    );
    let s = Server::start(&w, &[]);
    let routes = [
        "/health",
        "/v1/models",
        "/v1/config",
        "/v1/tools",
        "/v1/mcp",
        "/v1/sessions",
        "/v1/memory",
        "/v1/skills",
        "/v1/search?q=secret",
        "/openapi.json",
    ];
    for route in routes {
        let r = s.get(route);
        for secret in [
            "QUERYSECRET",
            "APIKEYSECRET",
            "URLSECRET",
            "BEARERSECRET",
            "HEADERSECRET",
        ] {
            assert!(
                !r.body.contains(secret),
                "GET {route} shows {secret}: {}",
                r.body
            );
        }
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Bound wider, the token is only checked after the whole body (up to 4 MiB) has been
/// read into memory: anyone on the network, without the token, makes the server hold
/// max_connections × max_body = 256 × 4 MiB = 1 GiB — enough to kill it on a Pi. Here 32
/// such uploads (128 MiB) must not grow the server by 64 MiB; the answer for a missing
/// token can be given from the head alone.
#[test]
fn uploads_without_the_token_are_not_buffered() {
    let w = World::new("attack-preauth-body");
    let s = Server::start(&w, &["--host", "0.0.0.0"]);
    let pid = s.child.id();
    let before = rss_kib(pid);
    let body = vec![b'x'; 4 * 1024 * 1024 - 1];
    let mut conns = Vec::new();
    for _ in 0..32 {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c
            .write_all(
                b"POST /v1/memory HTTP/1.1\r\nHost: pi.local\r\nContent-Length: 4194304\r\n\r\n",
            )
            .and_then(|()| c.write_all(&body));
        conns.push(c);
    }
    let mut grown = 0;
    for _ in 0..50 {
        grown = rss_kib(pid).saturating_sub(before);
        if grown > 64 * 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        grown <= 64 * 1024,
        "32 unauthenticated uploads grew serve by {} MiB",
        grown / 1024
    );
    drop(conns);
}

/// A streamed chat whose client is gone before the response head is written: the
/// session was marked busy in `completions`, but the guard that frees it is made
/// inside the stream closure, which never runs when the head cannot be written. The
/// session then answers 409 "a turn is already running" (and cannot be deleted) until
/// the server restarts. A tab closed right after "send" does this.
#[test]
fn a_stream_whose_client_left_before_the_head_does_not_lock_its_session() {
    let w = World::new("attack-busy-leak");
    let s = Server::start(&w, &[]);
    let created = s.post("/v1/sessions", "{}");
    let sid = created.json()["id"].as_str().unwrap().to_string();
    let chat = json!({"model": "evolve", "stream": true,
        "messages": [{"role": "user", "content": "hello"}]})
    .to_string();
    // The first response (a HEAD: one write) goes to a socket the client has closed;
    // its kernel answers RST, so writing the second response's head fails.
    let raw = format!(
        "HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n\
         POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Evolve-Session: {sid}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{chat}",
        chat.len()
    );
    {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.write_all(raw.as_bytes()).unwrap();
    }
    // Wait until the server has handled it (the session shows up as busy or the turn
    // ran): a later chat must be served normally.
    std::thread::sleep(Duration::from_millis(1500));
    w.fake.push(Reply::text("still usable"));
    let r = s.request(
        "POST",
        "/v1/chat/completions",
        &[
            ("X-Evolve-Session", &sid),
            ("Content-Type", "application/json"),
        ],
        &json!({"model": "evolve", "messages": [{"role": "user", "content": "again"}]}).to_string(),
    );
    assert_eq!(r.status, 200, "the session is stuck: {}", r.body);
    let d = s.request("DELETE", &format!("/v1/sessions/{sid}"), &[], "");
    assert_eq!(d.status, 200, "the session cannot be deleted: {}", d.body);
}
