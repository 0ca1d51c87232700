//! What `evolve serve` costs and holds, measured through the release binary on loopback
//! against the in-repo fake model answering at once (figures printed, never asserted):
//! - requests/s and p50/p99 latency of `GET /health` and `GET /v1/sessions` (50 sessions
//!   in the store) under a closed-loop load: this bench's own keep-alive HTTP/1.1 client,
//!   [`CONNECTIONS`] connections with one thread each, every request timed; Debian `wrk`
//!   runs the same two loads as a cross-check when it is installed;
//! - streamed chats (`POST /v1/chat/completions`, `"stream": true`), each in a new
//!   session: [`SOLO`] alone one after the other, then two rounds of [`STREAMS`] started
//!   at once: how many end with `[DONE]` and the whole answer, time to the first token
//!   and to `[DONE]`, split at the fake model's clock into Evolve's work before the model
//!   request and after the model's last byte, and every error as the server sent it;
//! - RSS (and threads) of `serve`: right after its first `/health`, after the load runs,
//!   after each round of streamed chats and its background learning, and after [`MIXED`] more
//!   requests (`/health` and `/v1/sessions` in turn) — growth shows between the last two;
//! - startup: spawn to the first `200` from `/health`, over [`STARTS`] starts on port 0,
//!   and the stop on SIGTERM.
//!
//! The load generator shares the machine's cores with the server, so requests/s are a
//! floor for the server alone; the machine line printed first says what ran it. The
//! binary is the host build (`cargo bench` = the release profile's settings); the shipped
//! one is static musl (musl's malloc, not glibc's), so its RSS differs somewhat.
//!
//! Run: `cargo bench -p evolve-mini --bench serve` (about a minute on 2 cores).

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use evolve_fake_llm::{FakeLlm, Reply};
use serde_json::{json, Value};

use support::http::{authorization, read_head, Conn};
use support::server::{Memory, Server};
use support::{cpu, load_average, mb, ms, thousands};

/// Sessions in the store for `GET /v1/sessions`.
const SESSIONS: usize = 50;
/// Starts timed for the startup figure.
const STARTS: usize = 20;
/// Keep-alive connections of the load generator (one thread each).
const CONNECTIONS: usize = 8;
/// Each timed load run, after an untimed warm-up.
const LOAD_TIME: Duration = Duration::from_secs(5);
const WARM_UP: Duration = Duration::from_secs(1);
/// Streamed chats started together (twice).
const STREAMS: usize = 64;
/// Streamed chats alone, one after the other: the baseline of the rounds.
const SOLO: usize = 10;
/// Requests sent before the last RSS reading.
const MIXED: usize = 100_000;
/// What the fake model answers every chat (4 characters per streamed chunk).
const REPLY: &str = "Instant answer from the fake model, streamed in small pieces.";
/// The background prompts' markers (mini/src/agents/prompts.rs) and a valid answer to
/// each, so learning runs as it would with a real model.
const BACKGROUND: [(&str, &str); 4] = [
    (
        "[evolve:post]",
        r#"{"title": "Short answers", "grade": {"score": 0.6, "reason": "It answers the question."}, "tool_chain": "- read_file(notes.md): worked", "memories": []}"#,
    ),
    ("[evolve:reflect]", r#"{"lesson": ""}"#),
    ("[evolve:style]", r#"{"note": ""}"#),
    ("[evolve:summarize]", "The user asked for short answers."),
];

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    let home = std::env::temp_dir().join(format!("evolve-bench-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("bench home");
    machine(&exe);

    let fake = FakeLlm::start();
    fake.set_fallback(Reply::text(REPLY));
    for (marker, answer) in BACKGROUND {
        for _ in 0..2 * (2 * STREAMS + SOLO) {
            fake.route(marker, Reply::text(answer));
        }
    }

    {
        let server = Server::start(&exe, &home, &fake);
        seed(&server);
        server.stop();
    }
    startup(&exe, &home, &fake);

    let server = Server::start(&exe, &home, &fake);
    let mut conn = Conn::open(server.port).expect("connect to serve");
    let (status, _) = conn.get("/health").expect("GET /health");
    assert_eq!(status, 200, "GET /health answered {status}");
    drop(conn);
    // Long enough for the connection's thread to end, so the thread counts compare.
    std::thread::sleep(Duration::from_millis(200));
    let mut rss = vec![(
        "idle, right after its first /health".to_string(),
        server.memory(),
    )];

    let mut sent = 0;
    for path in ["/health", "/v1/sessions"] {
        let warm = load(server.port, &[path], Until::Time(WARM_UP));
        sent += warm.latencies.len() + warm.failed();
        let run = load(server.port, &[path], Until::Time(LOAD_TIME));
        sent += run.latencies.len() + run.failed();
        run.print(&format!("GET {path}"));
        wrk(server.port, path);
    }
    rss.push((
        format!("after the load runs (~{} requests)", thousands(sent)),
        server.memory(),
    ));

    streams(&server, &fake, &mut rss);

    let run = load(
        server.port,
        &["/health", "/v1/sessions"],
        Until::Count(MIXED),
    );
    run.print(&format!(
        "GET /health and /v1/sessions ({} sessions) in turn",
        SESSIONS + SOLO + 2 * STREAMS
    ));
    std::thread::sleep(Duration::from_millis(500));
    rss.push((
        format!("after {} more requests (mixed)", thousands(MIXED)),
        server.memory(),
    ));

    println!("RSS of `evolve serve` (VmRSS; peak VmHWM; threads):");
    for (when, r) in &rss {
        println!(
            "  {when}: {:.1} MB (peak {:.1} MB, {} threads)",
            mb(r.rss),
            mb(r.peak),
            r.threads
        );
    }
    if let [.., (_, before), (_, after)] = rss.as_slice() {
        println!(
            "  growth over the last {} requests: {:+.1} MB",
            thousands(MIXED),
            mb(after.rss) - mb(before.rss)
        );
    }
    let said = server.stop();
    if said.is_empty() {
        println!("server log (warnings and errors): nothing");
    } else {
        println!("server log (warnings and errors), {} lines:", said.len());
        for line in said.iter().take(20) {
            println!("  {line}");
        }
    }
    println!("load average at the end: {}", load_average());
    let _ = std::fs::remove_dir_all(&home);
}

/// What ran the bench: the machine is shared, so its load average is part of the figure.
fn machine(exe: &Path) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = cpu();
    println!(
        "machine: {cores} cores, {cpu}; load average at the start: {}",
        load_average()
    );
    let size = std::fs::metadata(exe).map_or(0, |m| m.len());
    println!(
        "build: bench profile = the release profile's settings (opt-level \"z\", fat LTO, panic=abort), host target; evolve {size} bytes"
    );
    if let Ok(max) = std::env::var("MALLOC_ARENA_MAX") {
        println!("serve runs with MALLOC_ARENA_MAX={max}");
    }
}

/// The value at percentile `p` of sorted values.
fn pct<T: Copy>(sorted: &[T], p: usize) -> T {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// 50 sessions through `POST /v1/sessions`.
fn seed(server: &Server) {
    let mut conn = Conn::open(server.port).expect("connect to serve");
    let t = Instant::now();
    for i in 0..SESSIONS {
        let body =
            json!({"title": format!("Session {i}: planning the garden and the week")}).to_string();
        let request = format!(
            "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            server.port,
            authorization(server.port),
            body.len()
        );
        conn.out
            .write_all(request.as_bytes())
            .expect("send POST /v1/sessions");
        let head = read_head(&mut conn.reader).expect("answer to POST /v1/sessions");
        let length = head
            .header("content-length")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        conn.reader.read_exact(&mut body).expect("the body");
        assert_eq!(
            head.status,
            201,
            "POST /v1/sessions: {}",
            String::from_utf8_lossy(&body)
        );
    }
    println!(
        "seeded {SESSIONS} sessions through POST /v1/sessions in {:.0} ms",
        ms(t.elapsed())
    );
}

/// Spawn → first `200` from `/health`, [`STARTS`] times; and SIGTERM → exit.
fn startup(exe: &Path, home: &Path, fake: &FakeLlm) {
    let mut starts = Vec::new();
    let mut stops = Vec::new();
    for _ in 0..STARTS {
        let t = Instant::now();
        let server = Server::start(exe, home, fake);
        loop {
            let ok = Conn::open(server.port)
                .and_then(|mut c| c.get("/health"))
                .is_ok_and(|(status, _)| status == 200);
            if ok {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "serve never answered /health"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        starts.push(t.elapsed());
        let t = Instant::now();
        let said = server.stop();
        stops.push(t.elapsed());
        if !said.is_empty() {
            println!("  a start/stop logged: {said:?}");
        }
    }
    starts.sort();
    stops.sort();
    println!(
        "startup, spawn -> first 200 from /health ({SESSIONS} sessions in the store): median {:.1} ms (min {:.1}, max {:.1}, {STARTS} starts)",
        ms(pct(&starts, 50)),
        ms(starts[0]),
        ms(starts[STARTS - 1])
    );
    println!(
        "stop, SIGTERM -> exit (idle): median {:.1} ms (max {:.1})",
        ms(pct(&stops, 50)),
        ms(stops[STARTS - 1])
    );
}

/// When a load run ends.
#[derive(Clone, Copy)]
enum Until {
    Time(Duration),
    Count(usize),
}

/// What a load run measured.
struct Load {
    /// Every successful request's time, in microseconds, sorted.
    latencies: Vec<u32>,
    wall: Duration,
    /// Failures by kind.
    errors: BTreeMap<String, usize>,
}

impl Load {
    fn failed(&self) -> usize {
        self.errors.values().sum()
    }

    fn print(&self, what: &str) {
        let n = self.latencies.len();
        if n == 0 {
            println!("{what}: no request succeeded; errors: {:?}", self.errors);
            return;
        }
        let us = |p| pct(&self.latencies, p) as f64 / 1000.0;
        println!(
            "{what}: {:.0} requests/s, latency p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} requests in {:.1} s, {CONNECTIONS} keep-alive connections)",
            n as f64 / self.wall.as_secs_f64(),
            us(50),
            us(99),
            self.latencies[n - 1] as f64 / 1000.0,
            thousands(n),
            self.wall.as_secs_f64()
        );
        if !self.errors.is_empty() {
            println!("  FAILED {} requests:", self.failed());
            for (kind, count) in &self.errors {
                println!("    {count} x {kind}");
            }
        }
    }
}

/// [`CONNECTIONS`] threads, each sending `paths` in turn over one keep-alive connection,
/// the next request as soon as the answer is read.
fn load(port: u16, paths: &[&str], until: Until) -> Load {
    let issued = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let paths: Arc<Vec<String>> = Arc::new(paths.iter().map(|p| p.to_string()).collect());
    let start = Instant::now();
    let threads: Vec<_> = (0..CONNECTIONS)
        .map(|t| {
            let (issued, errors, paths) =
                (Arc::clone(&issued), Arc::clone(&errors), Arc::clone(&paths));
            std::thread::spawn(move || {
                let mut times = Vec::new();
                let mut conn: Option<Conn> = None;
                let fail =
                    |kind: String| *errors.lock().expect("errors").entry(kind).or_insert(0) += 1;
                for i in t.. {
                    match until {
                        Until::Time(d) if start.elapsed() >= d => break,
                        Until::Count(n) if issued.fetch_add(1, Ordering::Relaxed) >= n => break,
                        _ => {}
                    }
                    let path = &paths[i % paths.len()];
                    let t0 = Instant::now();
                    let c = match conn.take().map_or_else(|| Conn::open(port), Ok) {
                        Ok(c) => conn.insert(c),
                        Err(e) => {
                            fail(format!("connect: {e}"));
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        }
                    };
                    match c.get(path) {
                        Ok((200, _)) => times.push(t0.elapsed().as_micros() as u32),
                        Ok((status, _)) => {
                            let body = String::from_utf8_lossy(&c.body).into_owned();
                            fail(format!("{path}: status {status}: {body}"));
                        }
                        Err(e) => {
                            fail(format!("{path}: {e}"));
                            conn = None;
                        }
                    }
                }
                times
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in threads {
        latencies.extend(t.join().expect("a load thread"));
    }
    let wall = start.elapsed();
    latencies.sort_unstable();
    let errors = std::mem::take(&mut *errors.lock().expect("errors"));
    Load {
        latencies,
        wall,
        errors,
    }
}

/// Debian `wrk` on the same path, when installed: its summary lines.
fn wrk(port: u16, path: &str) {
    let found = Command::new("sh")
        .args(["-c", "command -v wrk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        return;
    }
    let out = Command::new("wrk")
        .args(["-t2", &format!("-c{CONNECTIONS}"), "-d5s", "--latency"])
        .args(["-H", &format!("Authorization: {}", authorization(port))])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output();
    let Ok(out) = out else { return };
    let text = String::from_utf8_lossy(&out.stdout);
    // `Latency  AVG  STDEV  MAX  +/-STDEV`, the distribution's `50%  X` and `99%  X`,
    // `Requests/sec:  N`; errors on lines of their own.
    let field = |start: &str, n: usize| {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(start) && !l.starts_with("Latency Distribution"))
            .and_then(|l| l.split_whitespace().nth(n))
            .unwrap_or("?")
            .to_string()
    };
    println!(
        "  wrk -t2 -c{CONNECTIONS} -d5s {path}: {} requests/s, latency p50 {}, p99 {}, avg {}, max {}",
        field("Requests/sec", 1),
        field("50%", 1),
        field("99%", 1),
        field("Latency ", 1),
        field("Latency ", 3)
    );
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Non-2xx") || l.starts_with("Socket errors"))
    {
        println!("    FAILED: {line}");
    }
}

/// How one streamed chat went.
#[derive(Default)]
struct Streamed {
    /// Its first line, unique over the run: finds its model request at the fake model.
    question: String,
    /// When the request was written.
    sent: Option<Instant>,
    first_token: Option<Duration>,
    done: Option<Duration>,
    text: String,
    error: Option<String>,
}

impl Streamed {
    fn complete(&self) -> bool {
        self.done.is_some() && self.error.is_none() && self.text == REPLY
    }
}

/// `n` streamed chats started together (each a new session), read to their ends.
fn chat_round(port: u16, round: &str, n: usize) -> (Vec<Streamed>, Duration) {
    let barrier = Arc::new(Barrier::new(n));
    let start = Instant::now();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let question = format!("Round {round} chat {i}: say something short.");
            std::thread::spawn(move || {
                let mut out = Streamed {
                    question,
                    ..Streamed::default()
                };
                if let Err(e) = stream_chat(port, &barrier, &mut out) {
                    out.error.get_or_insert(e);
                }
                out
            })
        })
        .collect();
    let results = threads
        .into_iter()
        .map(|t| {
            t.join().unwrap_or_else(|_| Streamed {
                error: Some("the client thread panicked".into()),
                ..Streamed::default()
            })
        })
        .collect();
    (results, start.elapsed())
}

/// One streamed chat's spans: request → model request (Evolve's work before the model),
/// and the model's last byte → `[DONE]` (the turn's end: the store writes).
fn spans(r: &Streamed, fake: &[evolve_fake_llm::Recorded]) -> Option<(Duration, Duration)> {
    let sent = r.sent?;
    let done = sent + r.done?;
    let main = fake
        .iter()
        .find(|q| q.body.contains(&r.question) && !q.body.contains("[evolve:"))?;
    Some((
        main.received.saturating_duration_since(sent),
        done.saturating_duration_since(main.answered?),
    ))
}

/// Prints a round: completions, time to first token and to `[DONE]`, where the time
/// went, and every failure as the server sent it.
fn report(what: &str, results: &[Streamed], wall: Option<Duration>, fake: &FakeLlm) {
    let complete: Vec<&Streamed> = results.iter().filter(|r| r.complete()).collect();
    let mut firsts: Vec<Duration> = complete.iter().filter_map(|r| r.first_token).collect();
    let mut dones: Vec<Duration> = complete.iter().filter_map(|r| r.done).collect();
    let recorded = fake.chat_requests();
    let (mut before, mut after): (Vec<Duration>, Vec<Duration>) =
        complete.iter().filter_map(|r| spans(r, &recorded)).unzip();
    for v in [&mut firsts, &mut dones, &mut before, &mut after] {
        v.sort();
    }
    let wall = wall.map_or(String::new(), |w| format!(", all in {:.0} ms", ms(w)));
    println!(
        "{what}: {} of {} complete with the whole answer and [DONE]{wall}",
        complete.len(),
        results.len()
    );
    if !firsts.is_empty() && !before.is_empty() {
        println!(
            "  time to first token p50 {:.1} ms, p99 {:.1} ms; to [DONE] p50 {:.1} ms, p99 {:.1} ms",
            ms(pct(&firsts, 50)),
            ms(pct(&firsts, 99)),
            ms(pct(&dones, 50)),
            ms(pct(&dones, 99))
        );
        println!(
            "  of which request -> model request p50 {:.1} ms, p99 {:.1} ms; model's last byte -> [DONE] p50 {:.1} ms, p99 {:.1} ms",
            ms(pct(&before, 50)),
            ms(pct(&before, 99)),
            ms(pct(&after, 50)),
            ms(pct(&after, 99))
        );
    }
    for (i, r) in results.iter().enumerate().filter(|(_, r)| !r.complete()) {
        println!(
            "  FAILED chat {i}: {}; [DONE] {}; text {:?}",
            r.error.as_deref().unwrap_or("no error sent"),
            if r.done.is_some() { "seen" } else { "missing" },
            r.text
        );
    }
}

/// Streamed chats: [`SOLO`] alone one after the other (the baseline), then two rounds
/// of [`STREAMS`] at once; after each round, its background work is waited for and the
/// RSS read.
fn streams(server: &Server, fake: &FakeLlm, rss: &mut Vec<(String, Memory)>) {
    let port = server.port;
    let mut solo = Vec::new();
    for i in 0..SOLO {
        let (mut one, _) = chat_round(port, &format!("solo{i}"), 1);
        solo.append(&mut one);
        settle(fake);
    }
    report(
        &format!("a streamed chat alone ({SOLO} one after the other)"),
        &solo,
        None,
        fake,
    );
    for round in ["A", "B"] {
        let before = fake.chat_requests().len();
        let (results, wall) = chat_round(port, round, STREAMS);
        let ended = Instant::now();
        report(
            &format!("{STREAMS} concurrent streamed chats, round {round} (each a new session)"),
            &results,
            Some(wall),
            fake,
        );
        settle(fake);
        let requests = fake.chat_requests();
        let background: Vec<_> = requests[before..]
            .iter()
            .filter(|r| r.body.contains("[evolve:"))
            .collect();
        let last = background
            .iter()
            .map(|r| r.received.saturating_duration_since(ended))
            .max()
            .unwrap_or_default();
        println!(
            "  background work after the round: {} cheap-model requests, the last {:.0} ms after the last [DONE]",
            background.len(),
            ms(last)
        );
        rss.push((
            format!("after {STREAMS} streamed chats (round {round}) and their background work"),
            server.memory(),
        ));
    }
    let mut conn = Conn::open(port).expect("connect to serve");
    if let Ok((200, _)) = conn.get("/v1/sessions") {
        let listed = serde_json::from_slice::<Value>(&conn.body)
            .ok()
            .and_then(|v| v["data"].as_array().map(Vec::len))
            .unwrap_or(0);
        println!(
            "sessions listed afterwards: {listed} (want {})",
            SESSIONS + SOLO + 2 * STREAMS
        );
    }
}

/// Waits until no model request came for a second (the background work, extraction and
/// evaluation, runs one job at a time after the replies), at most a minute.
fn settle(fake: &FakeLlm) {
    let start = Instant::now();
    let mut count = fake.chat_requests().len();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(1)
        && start.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(50));
        let now = fake.chat_requests().len();
        if now != count {
            count = now;
            quiet_since = Instant::now();
        }
    }
}

/// One streamed chat: sent when every thread of its round is ready, read to its end.
fn stream_chat(port: u16, barrier: &Barrier, out: &mut Streamed) -> Result<(), String> {
    let body = json!({
        "model": "evolve",
        "stream": true,
        "messages": [{"role": "user", "content": out.question}],
    })
    .to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        authorization(port),
        body.len()
    );
    let conn = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"));
    barrier.wait();
    let mut conn = conn?;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(60)));
    let t0 = Instant::now();
    out.sent = Some(t0);
    conn.write_all(request.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut reader = BufReader::new(conn);
    let head = read_head(&mut reader).map_err(|e| format!("head: {e}"))?;
    if head.status != 200 || head.header("transfer-encoding") != Some("chunked") {
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        return Err(format!("status {}: {}", head.status, rest.trim()));
    }
    let mut pending = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader
            .read_line(&mut line)
            .map_err(|e| format!("chunk size: {e}"))?;
        let size = usize::from_str_radix(line.trim(), 16)
            .map_err(|_| format!("not a chunk size: {line:?}"))?;
        if size == 0 {
            return Ok(());
        }
        let mut chunk = vec![0; size + 2];
        reader
            .read_exact(&mut chunk)
            .map_err(|e| format!("chunk: {e}"))?;
        chunk.truncate(size);
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            for data in event.lines().filter_map(|l| l.strip_prefix("data: ")) {
                if data == "[DONE]" {
                    out.done = Some(t0.elapsed());
                    continue;
                }
                let v: Value = serde_json::from_str(data)
                    .map_err(|e| format!("a data line is not JSON ({e}): {data}"))?;
                if v.get("error").is_some() {
                    out.error = Some(v["error"]["message"].to_string());
                }
                if let Some(piece) = v["choices"][0]["delta"]["content"].as_str() {
                    if !piece.is_empty() {
                        out.first_token.get_or_insert_with(|| t0.elapsed());
                        out.text.push_str(piece);
                    }
                }
            }
        }
    }
}
