//! Memory maintenance (`evolve memory maintain`), measured through the release binary
//! against an instant fake model on loopback (figures printed, never asserted): the
//! wall time of a run over 1 000 and 10 000 memories — a first run that has work to do
//! (expiry, decay, the CRITICAL cap, duplicate merging by keywords, summaries, the
//! priority review) and a second run that finds nothing left — and what the first run
//! changed.
//!
//! Run: `cargo bench -p evolve-mini --bench maintain`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use evolve_fake_llm::{FakeLlm, Reply};

use support::ms;

const SIZES: [usize; 2] = [1_000, 10_000];
const RUNS: usize = 3;

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    for n in SIZES {
        let mut first = Vec::new();
        let mut second = Vec::new();
        let mut changes = 0;
        for run in 0..RUNS {
            let home = std::env::temp_dir().join(format!(
                "evolve-bench-maintain-{}-{n}-{run}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&home);
            std::fs::create_dir_all(&home).expect("bench home");
            let fake = FakeLlm::start();
            seed(&exe, &home, &fake, n);
            for _ in 0..2 {
                fake.route(
                    "[evolve:priority]",
                    Reply::Text(r#"{"changes": []}"#.into()),
                );
            }
            let (t, report) = maintain(&exe, &home, &fake);
            first.push(t);
            changes = report["merged"].as_array().map_or(0, Vec::len)
                + report["decayed"].as_array().map_or(0, Vec::len)
                + report["expired"].as_array().map_or(0, Vec::len)
                + report["critical_evicted"].as_array().map_or(0, Vec::len)
                + report["summaries"].as_array().map_or(0, Vec::len);
            if run == 0 {
                println!(
                    "{n} memories: first run merged {}, decayed {}, expired {}, evicted {} over the CRITICAL cap, wrote {} summaries; {} → {} live",
                    report["merged"].as_array().map_or(0, Vec::len),
                    report["decayed"].as_array().map_or(0, Vec::len),
                    report["expired"].as_array().map_or(0, Vec::len),
                    report["critical_evicted"].as_array().map_or(0, Vec::len),
                    report["summaries"].as_array().map_or(0, Vec::len),
                    report["memories_before"],
                    report["memories_after"],
                );
            }
            let (t, again) = maintain(&exe, &home, &fake);
            second.push(t);
            let left = again["merged"].as_array().map_or(0, Vec::len)
                + again["decayed"].as_array().map_or(0, Vec::len);
            if left != 0 {
                println!("  note: the second run still changed {left} records");
            }
            let _ = std::fs::remove_dir_all(&home);
        }
        first.sort();
        second.sort();
        println!(
            "{n} memories: `evolve memory maintain` median {:.0} ms with work to do ({changes} changes; min {:.0}, max {:.0}), {:.0} ms when nothing is left ({RUNS} runs each)",
            ms(first[RUNS / 2]),
            ms(first[0]),
            ms(first[RUNS - 1]),
            ms(second[RUNS / 2]),
        );
    }
}

fn maintain(exe: &Path, home: &Path, fake: &FakeLlm) -> (Duration, serde_json::Value) {
    let t = Instant::now();
    let out = evolve(exe, home, fake)
        .args(["memory", "maintain", "--json"])
        .output()
        .expect("run evolve memory maintain");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "maintain failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        took,
        serde_json::from_slice(&out.stdout).expect("the report"),
    )
}

/// `n` memories of random words over 200 days, every 20th a restatement of an earlier
/// one (the same words reordered, one added), some CRITICAL, some expired.
fn seed(exe: &Path, home: &Path, fake: &FakeLlm, n: usize) {
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
    let mut texts: Vec<String> = Vec::with_capacity(n);
    let memories: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let content = if i % 20 == 19 {
                let mut words: Vec<&str> = texts[i - 7].split(' ').collect();
                words.reverse();
                format!("{} indeed", words.join(" "))
            } else {
                let words: Vec<String> = (0..8).map(|_| format!("w{}", next() % 20_000)).collect();
                format!("topic {} {}", i % 500, words.join(" "))
            };
            texts.push(content.clone());
            let mut m = serde_json::json!({
                "id": i as u64 + 1,
                "content": content,
                "category": categories[i % 5],
                "priority": if i % 97 == 0 { 0 } else { 1 + (i % 3) },
                "importance": 1 + (i % 5),
                "created_at": now - (next() % (200 * 86_400)) as i64,
            });
            if i % 101 == 0 {
                m["expires_at"] = serde_json::json!(now - 3_600);
            }
            m
        })
        .collect();
    let file = home.join("seed.json");
    let body = serde_json::json!({"schema_version": 1, "memories": memories, "sessions": []});
    std::fs::write(&file, body.to_string()).expect("write the seed");
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
}

fn evolve(exe: &Path, home: &Path, fake: &FakeLlm) -> Command {
    support::evolve(exe, home, fake, "warn")
}
