//! Model faults through the built binary: a connection reset mid-stream or closed before
//! the headers, a stream cut without its end, keep-alives or tokens forever, a 50 MB
//! body, 429 with Retry-After, 500 bursts, malformed SSE, invalid tool-call JSON, HTML
//! instead of JSON, escape sequences in a server's error. Each ends in a clear error in
//! bounded time with nothing lost, and the session goes on. A raw TCP "model server"
//! plays the faults the fake cannot; the fake's `Reply` variants play the rest.

mod support;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::*;

/// What the raw server does with the next main-model request.
#[derive(Clone, Debug)]
enum Act {
    /// Reads the request, closes without a byte.
    CloseBeforeHeaders,
    /// SSE headers (chunked), two content events, then a TCP RST.
    ResetMidStream,
    /// SSE without length or chunking (`Connection: close`), two content events, then a
    /// clean close: no finish_reason, no `[DONE]`.
    EofMidStream,
    /// Chunked SSE, two content events, then the terminating zero chunk: no
    /// finish_reason, no `[DONE]` (a proxy cut).
    ChunkEndMidStream,
    /// Chunked SSE keep-alive comments every 20 ms, forever.
    PingForever,
    /// Chunked SSE content events every 5 ms, forever.
    TokensForever,
    /// 200 application/json, Content-Length `n`, `n` spaces.
    Big(usize),
    /// 200 application/json with the ANSI body, streamed slowly forever.
    SlowJsonForever,
}

struct RawServer {
    port: u16,
    bodies: Arc<Mutex<Vec<String>>>,
}

fn completion(text: &str) -> String {
    serde_json::json!({
        "id": "x", "object": "chat.completion", "model": "raw",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    })
    .to_string()
}

fn sse_content(text: &str) -> String {
    let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    format!("data: {chunk}\n\n")
}

fn chunk(s: &str) -> String {
    format!("{:x}\r\n{s}\r\n", s.len())
}

extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, val: *const std::ffi::c_void, len: u32) -> i32;
}

fn reset(s: TcpStream) {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Linger {
        onoff: i32,
        linger: i32,
    }
    let l = Linger {
        onoff: 1,
        linger: 0,
    };
    // SOL_SOCKET = 1, SO_LINGER = 13 on Linux.
    unsafe {
        setsockopt(
            s.as_raw_fd(),
            1,
            13,
            &l as *const Linger as *const std::ffi::c_void,
            std::mem::size_of::<Linger>() as u32,
        );
    }
    drop(s);
}

fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.to_ascii_lowercase();
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

fn serve(mut s: TcpStream, queue: &Mutex<VecDeque<Act>>, bodies: &Mutex<Vec<String>>) {
    let Some(body) = read_request(&mut s) else {
        return;
    };
    bodies.lock().unwrap().push(body.clone());
    let act = if body.contains("[evolve:") {
        None
    } else {
        queue.lock().unwrap().pop_front()
    };
    let json = |s: &mut TcpStream, text: &str| {
        let b = completion(text);
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
            b.len()
        );
    };
    match act {
        None => json(&mut s, "fine answer"),
        Some(Act::CloseBeforeHeaders) => drop(s),
        Some(Act::ResetMidStream) => {
            let _ = s.write_all(SSE_HEAD.as_bytes());
            let _ = s.write_all(chunk(&sse_content("partial ")).as_bytes());
            let _ = s.write_all(chunk(&sse_content("answer ")).as_bytes());
            let _ = s.flush();
            std::thread::sleep(Duration::from_millis(200));
            reset(s);
        }
        Some(Act::EofMidStream) => {
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            let _ = s.write_all(sse_content("The capital of France is").as_bytes());
            let _ = s.write_all(sse_content(" not").as_bytes());
            let _ = s.flush();
            std::thread::sleep(Duration::from_millis(100));
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        Some(Act::ChunkEndMidStream) => {
            let _ = s.write_all(SSE_HEAD.as_bytes());
            let _ = s.write_all(chunk(&sse_content("The capital of France is")).as_bytes());
            let _ = s.write_all(chunk(&sse_content(" not")).as_bytes());
            let _ = s.write_all(b"0\r\n\r\n");
            let _ = s.flush();
        }
        Some(Act::PingForever) => {
            let _ = s.write_all(SSE_HEAD.as_bytes());
            while s.write_all(chunk(": ping\n\n").as_bytes()).is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Some(Act::TokensForever) => {
            let _ = s.write_all(SSE_HEAD.as_bytes());
            let ev = chunk(&sse_content("la "));
            while s.write_all(ev.as_bytes()).is_ok() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Some(Act::Big(n)) => {
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n\r\n"
            );
            let block = vec![b' '; 64 * 1024];
            let mut left = n;
            while left > 0 {
                let k = left.min(block.len());
                if s.write_all(&block[..k]).is_err() {
                    return;
                }
                left -= k;
            }
        }
        Some(Act::SlowJsonForever) => {
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            );
            while s.write_all(chunk(" ").as_bytes()).is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl RawServer {
    fn start(acts: Vec<Act>) -> RawServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let queue = Arc::new(Mutex::new(VecDeque::from(acts)));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (q, b) = (queue.clone(), bodies.clone());
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let (q, b) = (q.clone(), b.clone());
                std::thread::spawn(move || serve(s, &q, &b));
            }
        });
        RawServer { port, bodies }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn main_requests(&self) -> usize {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .filter(|b| !b.contains("[evolve:"))
            .count()
    }
}

fn raw_world(name: &str, acts: Vec<Act>) -> (World, RawServer) {
    let server = RawServer::start(acts);
    let mut w = World::new(name);
    let url = server.url();
    w.env("OPENAI_BASE_URL", &url);
    (w, server)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn no_panic(run: &Run) {
    assert!(
        !run.stderr.contains("panicked") && run.code != 101,
        "panic:\n{}",
        run.stderr
    );
}

/// The question of a failed chat turn is still in the session, and the next one answers.
fn chat_survives(w: &World, first: &str) -> Run {
    let run = w.run_stdin(&["chat"], &format!("{first}\nsecond question\n/quit\n"));
    no_panic(&run);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("fine answer"),
        "the turn after the fault did not answer:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run
}

fn session_text(w: &World) -> String {
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    let id = list[0]["id"].as_str().unwrap().to_string();
    w.run(&["sessions", "show", &id]).expect(0).stdout
}

#[test]
fn reset_mid_stream_in_chat_is_an_error_naming_the_url_and_chat_goes_on() {
    let (w, s) = raw_world("r3-reset", vec![Act::ResetMidStream]);
    let (run, took) = timed(|| chat_survives(&w, "first question zebra"));
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(run.stderr.contains(&s.url()), "{}", run.stderr);
    assert!(session_text(&w).contains("zebra"));
}

#[test]
fn close_before_headers_is_retried_then_exit_3_naming_the_url() {
    let (w, s) = raw_world("r3-close", vec![Act::CloseBeforeHeaders; 3]);
    let (run, took) = timed(|| w.run(&["ask", "hello"]));
    no_panic(&run);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains(&s.url()), "{}", run.stderr);
    assert_eq!(s.main_requests(), 3, "max_retries = 2: three attempts");
}

#[test]
fn close_before_headers_in_chat_then_chat_goes_on() {
    let (w, s) = raw_world("r3-close-chat", vec![Act::CloseBeforeHeaders; 3]);
    let run = chat_survives(&w, "first question zebra");
    assert!(run.stderr.contains(&s.url()), "{}", run.stderr);
}

/// A stream that ends cleanly (EOF or the last chunk) in the middle of the answer —
/// no finish_reason, no `[DONE]` — is taken as the whole answer: stored, printed,
/// `ask --json` reports success. The user is never told the answer was cut.
#[test]
fn a_stream_cut_by_eof_is_not_a_complete_answer() {
    cut_stream(Act::EofMidStream);
}

#[test]
fn a_stream_cut_by_the_last_chunk_is_not_a_complete_answer() {
    cut_stream(Act::ChunkEndMidStream);
}

fn cut_stream(act: Act) {
    {
        let (w, s) = raw_world("r3-cut", vec![act.clone()]);
        let run = w.run_stdin(&["chat"], "What is the capital of France?\n/quit\n");
        no_panic(&run);
        let stored = session_text(&w);
        assert!(
            !stored.contains("The capital of France is not")
                || run.stderr.contains(&s.url()),
            "{act:?}: a cut stream was stored as the answer with no warning:\n{stored}\n--- stderr\n{}",
            run.stderr
        );
    }
}

/// A stream that never ends is bounded only by the idle timer (reset by every line,
/// `: ping` comments included) and the 16 MiB body cap (hours at token speed): there is
/// no overall cap on a streamed call, so a chat turn never ends on its own.
fn endless_stream_ends(name: &str, act: Act) {
    let (w, s) = raw_world(name, vec![act.clone()]);
    w.config(
        "[model]\nmax_retries = 0\n[model.timeouts]\nfirst_byte = 2\nper_read = 2\noverall = 4\n",
    );
    let mut child = w
        .command(&["chat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"hello\n/quit\n")
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(&s.url()), "{err}");
            return;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{act:?}: chat still in its first turn after 30 s (first_byte = 2, per_read = 2, overall = 4)");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_stream_of_keepalives_forever_is_bounded() {
    endless_stream_ends("r3-ping", Act::PingForever);
}

#[test]
fn a_stream_of_tokens_forever_is_bounded() {
    endless_stream_ends("r3-tokens", Act::TokensForever);
}

#[test]
fn a_slow_endless_json_body_in_ask_is_cut_by_the_overall_timeout() {
    let (w, s) = raw_world("r3-slowjson", vec![Act::SlowJsonForever]);
    w.config("[model]\nmax_retries = 0\n[model.timeouts]\noverall = 3\n");
    let (run, took) = timed(|| w.run(&["ask", "hello"]));
    no_panic(&run);
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains(&s.url()), "{}", run.stderr);
}

#[test]
fn a_50_mb_body_is_refused_in_bounded_memory() {
    let (w, s) = raw_world("r3-big", vec![Act::Big(50 * 1024 * 1024)]);
    let (run, took) = timed(|| w.run(&["ask", "hello"]));
    no_panic(&run);
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains(&s.url()), "{}", run.stderr);
    assert!(run.stderr.contains("max_answer_bytes"), "{}", run.stderr);
}

#[test]
fn retry_after_is_honoured() {
    let w = World::new("r3-429");
    w.fake.push(Reply::StatusRetryAfter(429, 2));
    w.fake.push(Reply::text("after the wait"));
    let (run, took) = timed(|| w.run(&["ask", "hello"]));
    let run = run.expect(0);
    assert!(run.stdout.contains("after the wait"));
    assert!(took >= Duration::from_secs(2), "{took:?}");
}

#[test]
fn retry_after_is_capped_at_60_s() {
    let w = World::new("r3-429cap");
    w.fake.push(Reply::StatusRetryAfter(429, 3600));
    let mut child = w
        .command(&["ask", "hello"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in 60000 ms"), "{err}");
    assert!(err.contains(&w.fake.base_url()), "{err}");
}

#[test]
fn a_500_burst_beyond_max_retries_exits_3_in_bounded_time() {
    let w = World::new("r3-500");
    for _ in 0..6 {
        w.fake.push(Reply::error(500, "boom"));
    }
    let (run, took) = timed(|| w.run(&["ask", "hello"]));
    no_panic(&run);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(run.stderr.contains("boom") && run.stderr.contains(&w.fake.base_url()));
    assert_eq!(w.main_requests().len(), 3);
}

#[test]
fn malformed_sse_in_chat_is_an_error_and_chat_goes_on() {
    let w = World::new("r3-badsse");
    w.fake.push(Reply::RawSse(vec![
        "data: {\"choices\": [{\"delta\": {\"content\": \"x\"".into(),
        "".into(),
    ]));
    w.fake.push(Reply::text("fine answer"));
    let run = chat_survives(&w, "first question zebra");
    assert!(run.stderr.contains(&w.fake.base_url()), "{}", run.stderr);
    assert!(session_text(&w).contains("zebra"));
}

#[test]
fn invalid_json_tool_arguments_are_reported_to_the_model_not_a_crash() {
    for args in [r#"{"path": "#, "[1,2", r#""just a string""#, "null", ""] {
        let w = World::new("r3-badargs");
        w.fake.push(Reply::tool("read_file", args));
        w.fake.push(Reply::text("done anyway"));
        let run = w.run(&["ask", "--json", "read it"]);
        no_panic(&run);
        assert_eq!(run.code, 0, "{args}: {}", run.stderr);
        let reqs = w.main_requests();
        assert_eq!(reqs.len(), 2, "{args}");
        let last = reqs[1]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["role"], "tool", "{args}: {last}");
    }
}

#[test]
fn html_instead_of_an_answer_is_a_clear_error() {
    let html = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
    // ask (unstreamed): a 200 with HTML, and a 502 with HTML.
    let w = World::new("r3-html");
    w.config("[model]\nmax_retries = 0\n");
    w.fake.push(Reply::Raw {
        status: 200,
        content_type: "text/html".into(),
        body: html.into(),
    });
    let run = w.run(&["ask", "hello"]);
    no_panic(&run);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains(&w.fake.base_url()) && run.stderr.contains("502 Bad Gateway"),
        "{}",
        run.stderr
    );
    w.fake.push(Reply::Raw {
        status: 502,
        content_type: "text/html".into(),
        body: html.into(),
    });
    let run = w.run(&["ask", "hello"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    // chat (streamed).
    w.fake.push(Reply::Raw {
        status: 200,
        content_type: "text/html".into(),
        body: html.into(),
    });
    w.fake.push(Reply::text("fine answer"));
    let run = chat_survives(&w, "first");
    assert!(run.stderr.contains("<html>"), "{}", run.stderr);
}

/// The server's message is printed raw on stderr: its escape sequences reach the
/// terminal (retitle, clear, OSC 52 clipboard).
#[test]
fn a_servers_error_message_cannot_drive_the_terminal() {
    let w = World::new("r3-esc");
    w.config("[model]\nmax_retries = 0\n");
    w.fake.push(Reply::error(
        400,
        "bad \u{1b}]0;pwned\u{7}\u{1b}[2J request",
    ));
    let run = w.run(&["ask", "hello"]);
    no_panic(&run);
    assert!(
        !run.stderr.contains('\u{1b}'),
        "raw ESC on stderr: {:?}",
        run.stderr
    );
}
