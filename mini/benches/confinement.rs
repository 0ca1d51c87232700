//! What kernel confinement costs a shell call, through the release binary against an
//! instant fake model (figures printed, never asserted):
//! - a plain `sh -c 'cat notes.txt'` started by this bench (no Evolve, no sandbox);
//! - the agent overhead of a turn that runs the same command through the `shell` tool
//!   confined read-only (L2: the Landlock ruleset with its carve-outs, the rebuilt
//!   environment, no capabilities), and of one that runs `touch` confined to the
//!   workspace (L3: also a temporary folder of its own), each against a turn that calls
//!   `get_time` (an in-process tool: the same two model rounds, no child), so the
//!   difference is the confined shell call.
//!
//! Run: `cargo bench -p evolve-mini --bench confinement`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use evolve_fake_llm::{FakeLlm, Reply};
use support::ms;

const RUNS: usize = 21;

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    let home = std::env::temp_dir().join(format!("evolve-bench-confine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join("workspace")).expect("bench home");
    std::fs::write(home.join("workspace/notes.txt"), "notes\n").expect("notes");
    std::fs::write(
        home.join("config.toml"),
        "[permission]\ncommand_prefixes = [[\"cat\", \"L2\"], [\"touch\", \"L3\"]]\n",
    )
    .expect("config");
    let fake = FakeLlm::start();
    println!(
        "machine: {} (load {})",
        support::cpu(),
        support::load_average()
    );

    let mut plain = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let ok = Command::new("sh")
            .args(["-c", "cat notes.txt"])
            .current_dir(home.join("workspace"))
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        plain.push(ms(t.elapsed()));
        assert!(ok, "sh -c cat");
    }
    let none = overheads(&exe, &home, &fake, None, false);
    let in_process = overheads(&exe, &home, &fake, Some("get_time"), false);
    let read_only = overheads(&exe, &home, &fake, Some("cat notes.txt"), false);
    let workspace = overheads(&exe, &home, &fake, Some("touch made.txt"), true);
    let m = |v: &[f64]| median(v.to_vec());
    println!(
        "plain `sh -c 'cat notes.txt'` spawned by the bench: median {:.2} ms ({RUNS} runs)",
        m(&plain)
    );
    println!(
        "agent overhead of a turn without a tool call: median {:.2} ms",
        m(&none)
    );
    println!(
        "… with one get_time call (in process): median {:.2} ms",
        m(&in_process)
    );
    println!(
        "… with one shell call confined read-only (L2): median {:.2} ms (+{:.2} ms over get_time)",
        m(&read_only),
        m(&read_only) - m(&in_process)
    );
    println!(
        "… with one shell call confined to the workspace (L3, own tmp): median {:.2} ms (+{:.2} ms over get_time)",
        m(&workspace),
        m(&workspace) - m(&in_process)
    );
    let _ = std::fs::remove_dir_all(&home);
}

/// `overhead_ms` of `RUNS` turns, each calling `command` through `shell` (`get_time`:
/// that tool instead; `None`: no tool).
fn overheads(
    exe: &Path,
    home: &Path,
    fake: &FakeLlm,
    command: Option<&str>,
    yes: bool,
) -> Vec<f64> {
    let mut out = Vec::new();
    for _ in 0..RUNS {
        match command {
            Some("get_time") => fake.push(Reply::ToolCalls(vec![("get_time".into(), "{}".into())])),
            Some(c) => fake.push(Reply::ToolCalls(vec![(
                "shell".into(),
                serde_json::json!({ "command": c }).to_string(),
            )])),
            None => {}
        }
        fake.push(Reply::Text("Done.".into()));
        let mut cmd = support::evolve(exe, home, fake, "error");
        cmd.args(["ask", "--json"]);
        if yes {
            cmd.arg("--yes");
        }
        let run = cmd.arg("go").output().expect("run evolve ask");
        assert!(
            run.status.success(),
            "ask failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let record: serde_json::Value = serde_json::from_slice(&run.stdout).expect("turn record");
        if command.is_some() {
            assert_eq!(record["tools"][0]["ran"], true, "{record}");
        }
        out.push(record["overhead_ms"].as_f64().unwrap_or(f64::NAN));
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
