//! Commands run beside a running `evolve serve`: serve holds the store file (redb lets
//! one process hold it) and lends it to them over `POST /v1/store/lend` for as long as
//! their connection stays open; its own requests wait meanwhile and see what the
//! command changed.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::serve::Server;
use support::{tool_call, Chat, Reply, World};

/// Asks serve for a lend as a command would; the status and the connection (the lease).
fn lend(port: u16, token: Option<&str>) -> (u16, TcpStream) {
    let body = json!({"command": "evolve test", "pid": std::process::id()}).to_string();
    let mut head = format!(
        "POST /v1/store/lend HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    head.push_str("\r\n");
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect to serve");
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    conn.write_all(format!("{head}{body}").as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, conn)
}

/// `GET path` on another thread; its answer arrives on the channel.
fn get_later(s: &Server, path: &str) -> mpsc::Receiver<(u16, String)> {
    let (tx, rx) = mpsc::channel();
    let (port, path, bearer) = (s.port, path.to_string(), s.bearer());
    std::thread::spawn(move || {
        let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {bearer}\r\n\
             Connection: close\r\n\r\n"
        );
        c.write_all(req.as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        let r = support::serve::Resp::parse(&out);
        let _ = tx.send((r.status, r.body));
    });
    rx
}

/// Whether the answer has not come yet (the request is waiting in serve).
fn still_waiting(rx: &mpsc::Receiver<(u16, String)>) -> bool {
    std::thread::sleep(Duration::from_millis(300));
    matches!(rx.try_recv(), Err(mpsc::TryRecvError::Empty))
}

#[test]
fn memory_and_session_commands_work_beside_serve_and_each_sees_the_others_changes() {
    let w = World::new("lend-memory");
    let s = Server::start(&w, &[]);
    let added = w.run(&["memory", "add", "the cat is called Tom"]).expect(0);
    assert!(added.stdout.contains("#1"), "{}", added.stdout);
    let list = w.run(&["memory", "list"]).expect(0);
    assert!(
        list.stdout.contains("the cat is called Tom"),
        "{}",
        list.stdout
    );
    // serve sees it at once: its cache is reloaded after the lend.
    let m = s.get("/v1/memory");
    assert_eq!(m.status, 200, "{}", m.body);
    assert!(m.body.contains("the cat is called Tom"), "{}", m.body);
    // What serve adds, the next command sees.
    let r = s.post(
        "/v1/memory",
        &json!({"content": "the dog is called Rex"}).to_string(),
    );
    assert!(r.status < 300, "{} {}", r.status, r.body);
    let list = w.run(&["memory", "list"]).expect(0);
    assert!(
        list.stdout.contains("the dog is called Rex"),
        "{}",
        list.stdout
    );
    // Sessions made through serve are listed by the command beside it.
    w.fake.push(Reply::text("Hello."));
    let c = s.post(
        "/v1/chat/completions",
        &support::serve::chat_body("hi there", json!({})),
    );
    assert_eq!(c.status, 200, "{}", c.body);
    let sessions = w.run(&["sessions", "list"]).expect(0);
    assert!(sessions.stdout.contains("hi there"), "{}", sessions.stdout);
    w.run(&["prompt", "list"]).expect(0);
    w.run(&["mcp", "list"]).expect(0);
    // serve goes on as before.
    assert_eq!(s.get("/v1/sessions").status, 200);
    assert_eq!(s.stop(), Some(0), "serve stops cleanly after lending");
}

#[test]
fn a_request_made_during_a_lend_waits_and_then_sees_what_the_borrower_wrote() {
    let w = World::new("lend-wait");
    let s = Server::start(&w, &[]);
    let (status, lease) = lend(s.port, Some(&s.token));
    assert_eq!(status, 200);
    let memories = get_later(&s, "/v1/memory");
    assert!(still_waiting(&memories), "a store use waits while lent");
    // Requests that do not use the store are answered meanwhile.
    assert_eq!(s.get("/health").status, 200);
    // Another command borrows beside the first lend and writes.
    w.run(&["memory", "add", "written during the lend"])
        .expect(0);
    assert!(still_waiting(&memories), "still lent to the first borrower");
    drop(lease);
    let (status, body) = memories
        .recv_timeout(Duration::from_secs(90))
        .expect("the waiting request is answered once the lend ends");
    let said: Vec<String> = s.stderr.try_iter().collect();
    assert_eq!(status, 200, "{body} {said:#?}");
    assert!(body.contains("written during the lend"), "{body} {said:#?}");
}

#[test]
fn a_command_killed_while_it_holds_a_lend_gives_the_store_back() {
    let w = World::new("lend-kill");
    w.config("[permission]\ncommand_prefixes = [[\"sleep\", \"L3\"]]\n");
    let s = Server::start(&w, &[]);
    // A chat whose tool call runs for long: the chat holds the store meanwhile.
    w.fake
        .push(tool_call("shell", r#"{"command": "sleep 97"}"#));
    w.fake.push(Reply::text("Slept."));
    let mut chat = Chat::start(&w);
    chat.send("sleep a while");
    chat.wait_for("[yes/no/always]");
    chat.send("yes");
    let sleeper = wait_for_process("sleep\u{0}97");
    let memories = get_later(&s, "/v1/memory");
    assert!(still_waiting(&memories), "serve waits for the chat's lend");
    let _ = chat.child.kill(); // SIGKILL
    let _ = chat.child.wait();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &sleeper.to_string()])
        .status();
    let (status, body) = memories
        .recv_timeout(Duration::from_secs(90))
        .expect("the waiting request is answered once the killed chat's lend ends");
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.get("/v1/sessions").status, 200);
    w.run(&["memory", "list"]).expect(0);
}

#[test]
fn serve_bound_with_a_token_lends_only_with_it() {
    let w = World::new("lend-token");
    let s = Server::start(&w, &["--host", "0.0.0.0"]);
    let token = std::fs::read_to_string(w.home.join("serve.token"))
        .expect("serve.token")
        .trim()
        .to_string();
    let (status, _) = lend(s.port, None);
    assert_eq!(status, 401, "no lend without the token");
    let (status, _) = lend(s.port, Some("wrong"));
    assert_eq!(status, 401);
    // The command reads the token from serve.token…
    w.run(&["memory", "add", "tokens work"]).expect(0);
    let (status, lease) = lend(s.port, Some(&token));
    assert_eq!(status, 200);
    drop(lease);
    // …and, without the right one, says that serve holds the store and why (serve
    // opens the file again on its next use).
    let bearer = format!("Bearer {token}");
    assert_eq!(
        s.request("GET", "/v1/memory", &[("Authorization", &bearer)], "")
            .status,
        200
    );
    std::fs::write(w.home.join("serve.token"), "not-the-token\n").unwrap();
    let run = w.run(&["memory", "list"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("held by evolve serve") && run.stderr.contains("401"),
        "{}",
        run.stderr
    );
    let m = s.request("GET", "/v1/memory", &[("Authorization", &bearer)], "");
    assert!(m.body.contains("tokens work"), "{}", m.body);
}

/// The pid of the process whose command line is `cmdline` (NUL-separated), once it runs.
fn wait_for_process(cmdline: &str) -> u32 {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&line).trim_end_matches('\0') == cmdline {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no process {cmdline:?} started");
}
