//! What one big model answer costs in memory: the in-repo fake model answers 15 MiB of
//! text, and the RSS of `evolve` is read from `/proc` (figures printed, never asserted):
//! - `evolve serve`, [`ANSWERS`] questions to `POST /v1/chat/completions` one after the
//!   other, each in a new session: unstreamed (the model's answer is one JSON body), then
//!   in a second server streamed (the model streams events of 4 KiB of text, the client
//!   reads SSE). Printed: the RSS before the first question, the peak (VmHWM) after each
//!   answer, and the RSS [`SETTLE`] after the last answer was read (the background work
//!   done meanwhile);
//! - `evolve ask` with one 15 MiB answer: its peak (VmHWM, read until it exits).
//!
//! Each figure is the median of [`RUNS`] runs (`EVOLVE_BENCH_RUNS=N` to change), each in
//! a fresh `EVOLVE_HOME`. `EVOLVE_BENCH_MAX_ANSWER=BYTES` writes `[model] max_answer_bytes`
//! into the config (left out by default, so a build from before the setting runs too);
//! `EVOLVE_BENCH_BIN=PATH` measures another build (an absolute path), e.g. one from
//! before a change or the static musl one; by default the host build of this bench
//! (release settings, glibc's malloc).
//!
//! Run: `cargo bench -p evolve-mini --bench big_answer` (about two minutes on 2 cores).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use evolve_fake_llm::{FakeLlm, Reply};
use serde_json::json;

use support::http::Conn;
use support::server::{memory, Server};
use support::{load_average, mb};

/// The size of the fake model's answer.
const ANSWER: usize = 15 * 1024 * 1024;
/// Answers per server.
const ANSWERS: usize = 3;
/// How long after the last answer the settled RSS is read.
const SETTLE: Duration = Duration::from_secs(10);
/// Quiet time before the first reading.
const IDLE: Duration = Duration::from_secs(2);
/// Runs of each measurement (the median is printed).
const RUNS: usize = 3;
/// Characters per streamed event of the fake model.
const STREAM_CHUNK: usize = 4096;
/// The targets: peak and settled RSS after a 15 MiB answer.
const TARGET_PEAK_MB: f64 = 64.0;
const TARGET_SETTLED_MB: f64 = 24.0;

fn main() {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    let exe = std::env::var_os("EVOLVE_BENCH_BIN").map_or(built, PathBuf::from);
    assert!(exe.is_file(), "no binary at {}", exe.display());
    let runs = std::env::var("EVOLVE_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(RUNS)
        .max(1);
    let cap = std::env::var("EVOLVE_BENCH_MAX_ANSWER").ok();
    println!(
        "binary: {}\nanswer: {} MiB of text, {ANSWERS} per server; max_answer_bytes: {}; \
         {runs} runs, medians; load average {}",
        exe.display(),
        ANSWER / (1024 * 1024),
        cap.as_deref().unwrap_or("(not set: the binary's default)"),
        load_average()
    );
    let answer = text(ANSWER);
    let scratch = std::env::temp_dir().join(format!("evolve-bench-answer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);

    for stream in [false, true] {
        let mut figures: Vec<Vec<f64>> = Vec::new();
        for run in 0..runs {
            let home = scratch.join(format!("serve-{stream}-{run}"));
            figures.push(serve_run(&exe, &home, cap.as_deref(), &answer, stream));
        }
        let m = medians(&figures);
        println!(
            "\nevolve serve, {ANSWERS} answers {} (MB = 1024 KiB):",
            if stream { "streamed" } else { "unstreamed" }
        );
        println!("  RSS before the first question  {:>7.1}", m[0]);
        for i in 0..ANSWERS {
            println!("  peak after answer {}            {:>7.1}", i + 1, m[1 + i]);
        }
        println!(
            "  RSS {} s after the last answer  {:>7.1}   (target ≤ {TARGET_SETTLED_MB}; peak target ≤ {TARGET_PEAK_MB})",
            SETTLE.as_secs(),
            m[1 + ANSWERS]
        );
    }

    let mut peaks = Vec::new();
    for run in 0..runs {
        let home = scratch.join(format!("ask-{run}"));
        peaks.push(vec![ask_run(&exe, &home, cap.as_deref(), &answer)]);
    }
    println!(
        "\nevolve ask, one answer: peak RSS {:>7.1} MB (target ≤ {TARGET_PEAK_MB})",
        medians(&peaks)[0]
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `n` bytes of plain text (words and line ends, as a model writes).
fn text(n: usize) -> String {
    let line = "The quick brown fox jumps over the lazy dog, again and again.\n";
    line.repeat(n / line.len() + 1)[..n].to_string()
}

/// A fresh home with the config the run asks for.
fn home_with(home: &Path, cap: Option<&str>) {
    std::fs::create_dir_all(home).expect("bench home");
    if let Some(bytes) = cap {
        std::fs::write(
            home.join("config.toml"),
            format!("[model]\nmax_answer_bytes = {bytes}\n"),
        )
        .expect("write config.toml");
    }
}

/// A fake model whose background prompts never take the big answer.
fn fake() -> FakeLlm {
    let fake = FakeLlm::start();
    for marker in [
        "[evolve:post]",
        "[evolve:reflect]",
        "[evolve:style]",
        "[evolve:summarize]",
        "[evolve:crystallize]",
        "[evolve:lesson]",
    ] {
        fake.quiet(marker);
    }
    fake
}

/// One server: the RSS before, the peak after each answer, the RSS settled (MB).
fn serve_run(exe: &Path, home: &Path, cap: Option<&str>, answer: &str, stream: bool) -> Vec<f64> {
    home_with(home, cap);
    let fake = fake();
    fake.set_chunk_chars(STREAM_CHUNK);
    let server = Server::start(exe, home, &fake);
    std::thread::sleep(IDLE);
    let mut out = vec![mb(server.memory().rss)];
    let mut last = Instant::now();
    for i in 0..ANSWERS {
        fake.push(Reply::text(answer));
        let question = format!("Question {i}: write it all out.");
        let got = if stream {
            streamed(server.port, &question)
        } else {
            let body =
                json!({"model": "evolve", "messages": [{"role": "user", "content": question}]});
            let mut conn = Conn::open(server.port).expect("connect to serve");
            match conn.request("POST", "/v1/chat/completions", Some(&body)) {
                Ok((200, text)) => Ok(text.len()),
                Ok((status, text)) => {
                    Err(format!("status {status}: {}", &text[..text.len().min(300)]))
                }
                Err(e) => Err(e.to_string()),
            }
        };
        if let Err(e) = got {
            panic!("answer {}: {e}", i + 1);
        }
        last = Instant::now();
        out.push(mb(server.memory().peak));
    }
    std::thread::sleep(SETTLE.saturating_sub(last.elapsed()));
    out.push(mb(server.memory().rss));
    for line in server.stop() {
        if !line.contains("max_answer_bytes") {
            eprintln!("  serve said: {line}");
        }
    }
    out
}

/// One streamed chat read to its end; the bytes read.
fn streamed(port: u16, question: &str) -> Result<usize, String> {
    let body = json!({"model": "evolve", "stream": true, "messages": [{"role": "user", "content": question}]})
        .to_string();
    let mut conn = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let _ = conn.set_read_timeout(Some(Duration::from_secs(120)));
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        support::http::authorization(port),
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut all = Vec::new();
    conn.read_to_end(&mut all).map_err(|e| e.to_string())?;
    let tail = String::from_utf8_lossy(&all[all.len().saturating_sub(64)..]).into_owned();
    if tail.contains("[DONE]") {
        Ok(all.len())
    } else {
        Err(format!("no [DONE] at the end: {tail:?}"))
    }
}

/// One `evolve ask`: its peak RSS (MB), VmHWM read from `/proc` every 2 ms until it
/// exits. (Not `ru_maxrss` from `wait4`: a child started by vfork and exec inherits the
/// parent's high-water mark, here the fake model's.)
fn ask_run(exe: &Path, home: &Path, cap: Option<&str>, answer: &str) -> f64 {
    home_with(home, cap);
    let fake = fake();
    fake.push(Reply::text(answer));
    let mut child = support::evolve(exe, home, &fake, "warn")
        .args(["ask", "write it all out"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn evolve ask");
    let mut peak = 0;
    let status = loop {
        peak = peak.max(memory(child.id()).peak);
        match child.try_wait().expect("wait for evolve ask") {
            Some(status) => break status,
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    assert!(status.success(), "evolve ask failed: {status}");
    mb(peak)
}

/// The median of each column.
fn medians(rows: &[Vec<f64>]) -> Vec<f64> {
    (0..rows[0].len())
        .map(|c| {
            let mut col: Vec<f64> = rows.iter().map(|r| r[c]).collect();
            col.sort_by(f64::total_cmp);
            col[col.len() / 2]
        })
        .collect()
}
