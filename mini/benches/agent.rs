//! The agent's own cost, measured through the release binary against an instant fake
//! model on loopback (figures printed, never asserted):
//! - agent overhead per turn (everything but waiting for the model: memory selection
//!   over 10 000 memories, skills, history build, the store writes) from the turn
//!   record's `overhead_ms`;
//! - cold `evolve ask` wall time (process start, store open with 10 000 memories, the
//!   turn, the background work, exit);
//! - the binary's size; RSS of `evolve chat` waiting at its prompt (the store is closed
//!   between turns) and after a Chinese turn (10 000 memories read, jieba loaded).
//!
//! Run: `cargo bench -p evolve-mini --bench agent`.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evolve_fake_llm::{FakeLlm, Reply};

use support::ms;
use support::server::memory;

const MEMORIES: usize = 10_000;
const RUNS: usize = 15;

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    let home = std::env::temp_dir().join(format!("evolve-bench-agent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("bench home");
    let fake = FakeLlm::start();
    let size = std::fs::metadata(&exe).map(|m| m.len()).unwrap_or(0);
    println!("evolve binary (bench profile = release settings): {size} bytes");

    seed(&exe, &home, &fake);

    let mut overheads = Vec::new();
    let mut walls = Vec::new();
    for i in 0..RUNS {
        fake.push(Reply::Text("Instant answer.".into()));
        let t = Instant::now();
        let out = evolve(&exe, &home, &fake)
            .args([
                "ask",
                "--json",
                &format!("what did we say about topic {} and the garden?", i * 7),
            ])
            .output()
            .expect("run evolve ask");
        walls.push(t.elapsed());
        assert!(
            out.status.success(),
            "ask failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("turn record");
        overheads.push(record["overhead_ms"].as_f64().unwrap_or(f64::NAN));
        if i == 0 {
            println!(
                "memories considered per turn: {}",
                record["memories_considered"].as_u64().unwrap_or(0)
            );
        }
    }
    overheads.sort_by(f64::total_cmp);
    walls.sort();
    println!(
        "agent overhead per turn at {MEMORIES} memories: median {:.2} ms (min {:.2}, max {:.2}, {RUNS} turns)",
        overheads[RUNS / 2],
        overheads[0],
        overheads[RUNS - 1]
    );
    println!(
        "cold `evolve ask --json` wall time at {MEMORIES} memories: median {:.1} ms (min {:.1}, max {:.1})",
        ms(walls[RUNS / 2]),
        ms(walls[0]),
        ms(walls[RUNS - 1])
    );
    schema_tokens(&exe, &home, &fake);
    idle_rss(&exe, &home, &fake);
    let _ = std::fs::remove_dir_all(&home);
}

/// Tokens of the `tools` array (estimated like the history budget counts them) in the
/// first request of a plain question, of a question that needs files, and with every
/// tool in full (`[agent] tool_schemas = 0`, what every request carried before).
fn schema_tokens(exe: &Path, home: &Path, fake: &FakeLlm) {
    let questions = [
        ("a plain question", "What is the capital of France?", ""),
        (
            "a question about files",
            "Read notes.txt and list the folder",
            "",
        ),
        (
            "every tool in full",
            "What is the capital of France?",
            "[agent]\ntool_schemas = 0\n",
        ),
    ];
    let config = home.join("config.toml");
    let before = std::fs::read_to_string(&config).ok();
    for (label, question, extra) in questions {
        std::fs::write(
            &config,
            format!("{}\n{extra}", before.clone().unwrap_or_default()),
        )
        .expect("config");
        fake.push(Reply::Text("Paris.".into()));
        let seen = fake.chat_requests().len();
        let out = evolve(exe, home, fake)
            .args(["ask", question])
            .output()
            .expect("run evolve ask");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reqs = fake.chat_requests();
        let Some(req) = reqs.get(seen) else { continue };
        let tools = req.json.get("tools").cloned().unwrap_or_default();
        let text = tools.to_string();
        let n = tools.as_array().map_or(0, Vec::len);
        println!(
            "tool schemas, {label}: {n} tools, {} characters, about {} tokens",
            text.len(),
            evolve_core::text::estimate_text_tokens(&text)
        );
    }
    match before {
        Some(b) => std::fs::write(&config, b).expect("config"),
        None => {
            let _ = std::fs::remove_file(&config);
        }
    }
}

fn evolve(exe: &Path, home: &Path, fake: &FakeLlm) -> Command {
    support::evolve(exe, home, fake, "error")
}

/// 10 000 distinct memories through `evolve memory import` (the export format keeps
/// them as they are).
fn seed(exe: &Path, home: &Path, fake: &FakeLlm) {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let categories = ["fact", "preference", "instruction", "reminder", "general"];
    let memories: Vec<serde_json::Value> = (0..MEMORIES)
        .map(|i| {
            let words: Vec<String> = (0..8).map(|_| format!("w{}", next() % 20_000)).collect();
            serde_json::json!({
                "id": i as u64 + 1,
                "content": format!("topic {} {}", i % 500, words.join(" ")),
                "category": categories[i % 5],
                "priority": 1 + (i % 3),
                "importance": 1 + (i % 5),
                "created_at": now - (next() % (200 * 86_400)) as i64,
            })
        })
        .collect();
    let file = home.join("seed.json");
    let body = serde_json::json!({"schema_version": 1, "memories": memories, "sessions": []});
    std::fs::write(&file, body.to_string()).expect("write the seed");
    let t = Instant::now();
    let out = evolve(exe, home, fake)
        .args(["memory", "import"])
        .arg(&file)
        .output()
        .expect("run evolve memory import");
    assert!(
        out.status.success(),
        "import failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("seeded {MEMORIES} memories in {:.0} ms", ms(t.elapsed()));
}

/// RSS of `evolve chat` at its prompt, then after one Chinese turn (the store with
/// 10 000 memories read, the trimmed jieba dictionary loaded).
fn idle_rss(exe: &Path, home: &Path, fake: &FakeLlm) {
    let mut child = evolve(exe, home, fake)
        .arg("chat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn evolve chat");
    std::thread::sleep(Duration::from_millis(500));
    let idle = memory(child.id()).rss;
    fake.push(Reply::Text("好的。".into()));
    let requests = fake.chat_requests().len();
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = writeln!(stdin, "我住在上海，喜欢喝绿茶。");
    let _ = stdin.flush();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.chat_requests().len() <= requests && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(700));
    let after = memory(child.id()).rss;
    drop(stdin);
    let _ = child.wait();
    println!(
        "RSS of `evolve chat` at its prompt: {:.1} MB; after a Chinese turn with 10 000 memories: {:.1} MB",
        idle as f64 / 1024.0,
        after as f64 / 1024.0
    );
}
