//! The fault list: the gaps an audit of model_faults.rs, mcp_faults.rs,
//! mcp_server_crash.rs, mcp.rs, agent.rs and agent_faults.rs left. For every fault the
//! promise is the same: a clear error, in bounded time, nothing lost (the question is in
//! the session), and the session usable afterwards (the next question is answered).
//!
//! | fault | ask | chat | serve | MCP |
//! |---|---|---|---|---|
//! | model: connection refused | agent.rs `an_unreachable_model_exits_3_naming_the_url` (error), here `connection_refused_in_ask_keeps_the_question_and_the_session_goes_on` | here `connection_refused_in_chat_then_chat_goes_on` | here `connection_refused_through_serve_is_a_502_and_the_session_goes_on` | |
//! | model: reset mid-stream | | model_faults.rs `reset_mid_stream_in_chat_is_an_error_naming_the_url_and_chat_goes_on` | | |
//! | model: closed before headers | model_faults.rs `close_before_headers_is_retried_then_exit_3_naming_the_url` | model_faults.rs `close_before_headers_in_chat_then_chat_goes_on` | | |
//! | model: 429 with Retry-After | model_faults.rs `retry_after_is_honoured`, `retry_after_is_capped_at_60_s` | here `retries_exhausted_by_429s_in_chat_then_chat_goes_on` | | |
//! | model: 500 burst | model_faults.rs `a_500_burst_beyond_max_retries_exits_3_in_bounded_time`, here `a_500_burst_keeps_the_question_and_the_session_goes_on` | agent_faults.rs `a_failed_chat_turn_does_not_lose_the_question_or_split_the_session` (400) | | |
//! | model: never-ending stream | model_faults.rs `a_slow_endless_json_body_in_ask_is_cut_by_the_overall_timeout` | model_faults.rs `a_stream_of_keepalives_forever_is_bounded`, `a_stream_of_tokens_forever_is_bounded` (bounded); here `a_stream_that_stalls_midway_keeps_the_question_and_chat_goes_on` (nothing lost, goes on) | | |
//! | model: hung before any byte | agent_faults.rs `a_hung_server_is_bounded_by_the_configured_timeouts` | | | |
//! | model: 50 MB response | model_faults.rs `a_50_mb_body_is_refused_in_bounded_memory` | | | |
//! | model: malformed SSE | | model_faults.rs `malformed_sse_in_chat_is_an_error_and_chat_goes_on` | | |
//! | model: invalid tool-call JSON | model_faults.rs `invalid_json_tool_arguments_are_reported_to_the_model_not_a_crash` | | | |
//! | MCP: server crash mid-call | | | | mcp.rs `a_crash_mid_call_is_a_clear_error_and_the_next_call_works`; mcp_faults.rs `odd_servers_are_coped_with` (crash loop, crash at start); mcp_server_crash.rs `a_server_that_dies_between_turns_takes_its_helpers_with_it` |
//! | MCP: call hangs | | mcp_faults.rs `ctrl_c_abandons_a_slow_mcp_call_and_chat_goes_on` | | mcp.rs `a_slow_tool_times_out_with_a_clear_error` (bounded); here `a_hung_mcp_call_times_out_and_the_next_call_works` |
//! | MCP: server never answers the handshake | | | | here `an_mcp_server_that_never_answers_is_bounded` |
//! | MCP: garbage on stdout | | | | mcp_faults.rs `odd_servers_are_coped_with` (one line at start); here `garbage_between_every_mcp_message_is_skipped`, `an_mcp_server_that_only_prints_garbage_is_bounded` |
//! | MCP: huge result | | | | mcp_faults.rs `a_result_over_16_mib_is_cut_or_refused_at_once_not_reported_as_a_timeout`, `a_big_mcp_result_reaches_the_model_within_the_default_context_window` |
//!
//! Bounds are generous (the machine may be slow); the times are printed.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::mcp::*;
use support::serve::Server;
use support::*;

/// A loopback port nothing listens on (yet).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// From now on, connections to `port` reach the fake model: the model server "comes
/// back". Runs until the test process ends.
fn forward(port: u16, to: u16) {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is still free");
    thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                continue;
            };
            let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut c1, mut s1) = (client, server);
            thread::spawn(move || {
                let _ = std::io::copy(&mut c1, &mut s1);
                let _ = s1.shutdown(std::net::Shutdown::Write);
            });
            thread::spawn(move || {
                let _ = std::io::copy(&mut s2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Write);
            });
        }
    });
}

/// The fake's port, from its base URL.
fn fake_port(w: &World) -> u16 {
    let url = w.fake.base_url();
    let rest = url.trim_start_matches("http://");
    let hostport = rest.split('/').next().unwrap();
    hostport.rsplit(':').next().unwrap().parse().unwrap()
}

/// The only session's id and its text as `sessions show` prints it.
fn only_session(w: &World) -> (String, String) {
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    let sessions = list.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{list}");
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let text = w.run(&["sessions", "show", &id]).expect(0).stdout;
    (id, text)
}

/// `evolve chat` with stdin, stdout and stderr piped, stderr read line by line.
struct PipedChat {
    child: std::process::Child,
    err: mpsc::Receiver<String>,
    out: mpsc::Receiver<String>,
    seen_err: String,
    seen_out: String,
}

impl PipedChat {
    fn start(w: &World) -> PipedChat {
        let mut child = w
            .command(&["chat"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || {
                let mut r = r;
                let mut buf = [0u8; 4096];
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into()).is_err() {
                        break;
                    }
                }
            });
            rx
        };
        let err = lines(Box::new(child.stderr.take().unwrap()));
        let out = lines(Box::new(child.stdout.take().unwrap()));
        PipedChat {
            child,
            err,
            out,
            seen_err: String::new(),
            seen_out: String::new(),
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits (60 s at most) until stderr (`err`) or stdout shows `needle`.
    fn wait_for(&mut self, needle: &str, err: bool) -> Duration {
        let start = Instant::now();
        let end = start + Duration::from_secs(60);
        loop {
            let seen = if err { &self.seen_err } else { &self.seen_out };
            if seen.contains(needle) {
                return start.elapsed();
            }
            assert!(
                Instant::now() < end,
                "chat never showed {needle:?}\n--- stdout\n{}\n--- stderr\n{}",
                self.seen_out,
                self.seen_err
            );
            while let Ok(s) = self.err.try_recv() {
                self.seen_err.push_str(&s);
            }
            while let Ok(s) = self.out.try_recv() {
                self.seen_out.push_str(&s);
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(mut self) {
        self.send("/quit");
        drop(self.child.stdin.take());
        let end = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("chat did not end");
            }
            thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(self.child.wait().unwrap().code(), Some(0));
    }
}

// ---------------------------------------------------------------------------------
// The model

#[test]
fn connection_refused_in_ask_keeps_the_question_and_the_session_goes_on() {
    let mut w = World::new("f-refused-ask");
    let port = free_port();
    let dead = format!("http://127.0.0.1:{port}/v1");
    w.env("OPENAI_BASE_URL", &dead);
    let t = Instant::now();
    let run = w.run(&["ask", "first question zebra"]);
    let took = t.elapsed();
    eprintln!("connection refused: ask gave up after {took:?}");
    no_panic(&run);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        run.stderr
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    let (id, text) = only_session(&w);
    assert!(text.contains("zebra"), "the question is lost:\n{text}");
    // The server is back: the same session answers, with the first question in it.
    forward(port, fake_port(&w));
    w.fake.push(Reply::text("back again"));
    let run = w
        .run(&["ask", "--session", &id, "second question"])
        .expect(0);
    assert!(run.stdout.contains("back again"), "{}", run.stdout);
    assert!(
        all_text(w.main_requests().last().unwrap()).contains("zebra"),
        "the retried session lost its first question"
    );
}

#[test]
fn connection_refused_in_chat_then_chat_goes_on() {
    let mut w = World::new("f-refused-chat");
    // The turn's final error, not a retry's warning, is what the test waits for.
    w.config("[model]\nmax_retries = 0\n");
    let port = free_port();
    w.env("OPENAI_BASE_URL", &format!("http://127.0.0.1:{port}/v1"));
    let mut chat = PipedChat::start(&w);
    chat.send("first question zebra");
    let took = chat.wait_for(&format!("127.0.0.1:{port}"), true);
    eprintln!("connection refused: the chat turn failed after {took:?}");
    forward(port, fake_port(&w));
    w.fake.push(Reply::text("fine answer"));
    chat.send("second question");
    chat.wait_for("fine answer", false);
    chat.finish();
    let (_, text) = only_session(&w);
    assert!(
        text.contains("zebra") && text.contains("fine answer"),
        "{text}"
    );
}

#[test]
fn connection_refused_through_serve_is_a_502_and_the_session_goes_on() {
    let mut w = World::new("f-refused-serve");
    let port = free_port();
    w.env("OPENAI_BASE_URL", &format!("http://127.0.0.1:{port}/v1"));
    let s = Server::start(&w, &[]);
    let sid = s.post("/v1/sessions", "{}").json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ask = |text: &str| {
        s.request(
            "POST",
            "/v1/chat/completions",
            &[
                ("X-Evolve-Session", &sid),
                ("Content-Type", "application/json"),
            ],
            &json!({"messages": [{"role": "user", "content": text}]}).to_string(),
        )
    };
    let t = Instant::now();
    let r = ask("first question zebra");
    eprintln!(
        "connection refused: serve answered {} after {:?}",
        r.status,
        t.elapsed()
    );
    assert!((500..600).contains(&r.status), "{} {}", r.status, r.body);
    assert!(
        r.error_message().contains(&format!("127.0.0.1:{port}")),
        "{}",
        r.body
    );
    assert_eq!(s.get("/health").status, 200);
    forward(port, fake_port(&w));
    w.fake.push(Reply::text("fine answer"));
    let r = ask("second question");
    assert_eq!(r.status, 200, "{}", r.body);
    let messages = s.get(&format!("/v1/sessions/{sid}/messages")).body;
    assert!(
        messages.contains("zebra") && messages.contains("fine answer"),
        "{messages}"
    );
}

#[test]
fn a_500_burst_keeps_the_question_and_the_session_goes_on() {
    let w = World::new("f-500");
    for _ in 0..3 {
        w.fake.push(Reply::error(500, "overloaded"));
    }
    let run = w.run(&["ask", "first question zebra"]);
    no_panic(&run);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let (id, text) = only_session(&w);
    assert!(text.contains("zebra"), "{text}");
    w.fake.push(Reply::text("fine answer"));
    let run = w.run(&["ask", "--session", &id, "again"]).expect(0);
    assert!(run.stdout.contains("fine answer"));
    assert!(all_text(w.main_requests().last().unwrap()).contains("zebra"));
}

#[test]
fn retries_exhausted_by_429s_in_chat_then_chat_goes_on() {
    let w = World::new("f-429-chat");
    for _ in 0..3 {
        w.fake.push(Reply::StatusRetryAfter(429, 1));
    }
    w.fake.push(Reply::text("fine answer"));
    let t = Instant::now();
    let run = w.run_stdin(&["chat"], "first question zebra\nsecond question\n/quit\n");
    eprintln!("three 429s then an answer: {:?}", t.elapsed());
    no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("429"), "{}", run.stderr);
    assert!(run.stdout.contains("fine answer"), "{}", run.stdout);
    assert!(t.elapsed() < Duration::from_secs(60));
    let (_, text) = only_session(&w);
    assert!(text.contains("zebra"), "{text}");
}

#[test]
fn a_stream_that_stalls_midway_keeps_the_question_and_chat_goes_on() {
    let w = World::new("f-stall");
    w.config(
        "[model]\nmax_retries = 0\n[model.timeouts]\nfirst_byte = 2\nper_read = 2\noverall = 4\n",
    );
    w.fake.push(Reply::TextThenHang(
        "The beginning of an answer".into(),
        Duration::from_secs(120),
    ));
    w.fake.push(Reply::text("fine answer"));
    let t = Instant::now();
    let run = w.run_stdin(&["chat"], "first question zebra\nsecond question\n/quit\n");
    eprintln!("a stalled stream, then an answer: {:?}", t.elapsed());
    no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(&w.fake.base_url()), "{}", run.stderr);
    assert!(run.stdout.contains("fine answer"), "{}", run.stdout);
    assert!(t.elapsed() < Duration::from_secs(60));
    let (_, text) = only_session(&w);
    assert!(text.contains("zebra"), "{text}");
}

// ---------------------------------------------------------------------------------
// MCP servers

#[test]
fn a_hung_mcp_call_times_out_and_the_next_call_works() {
    let w = World::new("f-mcp-hang");
    with_test_server(&w, &[], "timeout_secs = 2");
    w.fake.push(tool_call("t__slow", r#"{"ms": 600000}"#));
    w.fake
        .push(tool_call("t__echo", r#"{"text": "still here"}"#));
    w.fake.push(Reply::text("Done."));
    let t = Instant::now();
    let run = w.run(&["ask", "--json", "be slow, then echo still here"]);
    eprintln!("a hung MCP call, then another: {:?}", t.elapsed());
    no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(t.elapsed() < Duration::from_secs(60));
    let first = tool_results(&w, 1);
    assert!(
        first
            .iter()
            .any(|r| r.contains("did not answer within 2 s")),
        "{first:?}"
    );
    let second = tool_results(&w, 2);
    assert!(second.iter().any(|r| r == "still here"), "{second:?}");
    assert_eq!(run.json()["reply"], "Done.");
}

/// `sh -c SCRIPT` as server `t`; waits for the answer and returns it and the time.
fn ask_beside(w: &World, script: &str) -> (Run, Duration) {
    with_shell_server(w, script, "timeout_secs = 3");
    w.fake.push(Reply::text("answered anyway"));
    let t = Instant::now();
    let run = w.run(&["ask", "hello"]);
    (run, t.elapsed())
}

#[test]
fn an_mcp_server_that_never_answers_is_bounded() {
    let w = World::new("f-mcp-silent");
    // Reads its input and says nothing; fd 3 keeps its output open (no EOF).
    let (run, took) = ask_beside(&w, "exec 3>&1; exec cat > /dev/null");
    eprintln!("a server that never answers the handshake: {took:?}");
    no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("answered anyway"));
    assert!(
        run.stderr.contains("\"t\" could not be started") && run.stderr.contains("handshake"),
        "no word about the server: {}",
        run.stderr
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// Processes whose command line contains `needle` (the `sh -c` wrapper aside).
fn running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle) && !c.starts_with("sh -c"))
        .collect()
}

#[test]
fn an_mcp_server_that_only_prints_garbage_is_bounded() {
    let w = World::new("f-mcp-flood");
    let garbage = format!("not JSON-RPC {}", w.home.display());
    let (run, took) = ask_beside(&w, &format!("exec yes '{garbage}'"));
    eprintln!("a server flooding garbage: {took:?}");
    no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("answered anyway"));
    assert!(
        run.stderr.contains("\"t\" could not be started"),
        "no word about the server: {}",
        run.stderr
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    thread::sleep(Duration::from_millis(500));
    assert_eq!(
        running(&garbage),
        Vec::<String>::new(),
        "the server outlived ask"
    );
}

#[test]
fn garbage_between_every_mcp_message_is_skipped() {
    let w = World::new("f-mcp-garbage");
    let script = format!(
        "{:?} | sed -u 'i this line is not JSON-RPC'",
        test_server().to_string_lossy()
    );
    with_shell_server(&w, &script, "timeout_secs = 10");
    w.fake
        .push(tool_call("t__echo", r#"{"text": "through the noise"}"#));
    w.fake.push(Reply::text("Echoed."));
    let run = w.run(&["ask", "--json", "echo"]);
    no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r == "through the noise"),
        "{results:?}\n{}",
        run.stderr
    );
}
