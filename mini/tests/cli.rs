//! The `evolve` binary as a user runs it: version, help, usage errors, and
//! `evolve memory rank` over the fixture memories in `tests/fixtures/`.

mod support;

use std::path::PathBuf;

use support::{Run, World};

/// Runs `evolve ARGS` with a fresh home, no model and a clean environment.
fn evolve(args: &[&str]) -> Run {
    World::without_model("cli").run(args)
}

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name);
    p.to_string_lossy().into_owned()
}

/// The fixture's clock: 2027-01-15, so ages in the file are fixed.
const NOW: &str = "1800000000";

/// Runs `memory rank --json` and returns (id, reason) of each chosen memory in order.
fn ranked(query: &str) -> Vec<(u64, String)> {
    let doc = evolve(&[
        "memory",
        "rank",
        query,
        "--from",
        &fixture("memories.json"),
        "--now",
        NOW,
        "--json",
    ])
    .expect(0)
    .json();
    doc["chosen"]
        .as_array()
        .expect("a chosen list")
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().unwrap(),
                c["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn ids(chosen: &[(u64, String)]) -> Vec<u64> {
    let mut v: Vec<u64> = chosen.iter().map(|c| c.0).collect();
    v.sort();
    v
}

#[test]
fn version_and_help() {
    let run = evolve(&["--version"]).expect(0);
    assert_eq!(
        run.stdout.trim(),
        format!("evolve {}", env!("CARGO_PKG_VERSION"))
    );

    let run = evolve(&["--help"]).expect(0);
    assert!(
        run.stdout.contains("memory"),
        "help lists the memory command: {}",
        run.stdout
    );
}

#[test]
fn usage_errors_exit_with_code_2_and_say_what_is_wrong() {
    let run = evolve(&[]).expect(2);
    assert!(run.stderr.contains("evolve --help"));

    let run = evolve(&["memory"]).expect(2);
    assert!(
        run.stderr.contains("rank"),
        "names the subcommands: {}",
        run.stderr
    );

    let run = evolve(&["memory", "rank", "tea"]).expect(2);
    assert!(
        run.stderr.contains("--from"),
        "names the missing option: {}",
        run.stderr
    );

    let run = evolve(&["--frobnicate"]).expect(2);
    assert!(run.stdout.is_empty());
}

#[test]
fn rank_takes_critical_rules_and_related_memories_only() {
    let chosen = ranked("which tea does the user like?");
    // 1 and 9 are CRITICAL rules (9 is 200 days old but pinned); 3 shares "user" and
    // "tea". 2 was CRITICAL but decayed after 40 days and is unrelated; 8 is deleted;
    // 6 and 10 share no keyword with the question.
    assert_eq!(ids(&chosen), vec![1, 3, 9]);
    assert_eq!(chosen[0].1, "critical");
    assert!(chosen.iter().any(|c| c.0 == 3 && c.1 != "critical"));
}

#[test]
fn rank_skips_expired_reminders_and_orders_critical_first() {
    let chosen = ranked("is the raspberry pi server backed up?");
    let got = ids(&chosen);
    for id in [1, 9, 4, 5, 2] {
        assert!(got.contains(&id), "memory {id} chosen: {chosen:?}");
    }
    assert!(!got.contains(&7), "the expired reminder is never chosen");
    assert!(!got.contains(&6), "the unrelated memory is never chosen");
    let first_non_critical = chosen.iter().position(|c| c.1 != "critical").unwrap();
    assert!(chosen[first_non_critical..]
        .iter()
        .all(|c| c.1 != "critical"));
    // The Raspberry Pi fact (three shared keywords) outranks the backup fact.
    let pos = |id| chosen.iter().position(|c| c.0 == id).unwrap();
    assert!(pos(4) < pos(5));
}

#[test]
fn rank_handles_chinese_and_prints_the_injected_block() {
    let text = evolve(&[
        "memory",
        "rank",
        "用户喜欢喝什么茶？",
        "--from",
        &fixture("memories.json"),
        "--now",
        NOW,
        "--block",
    ])
    .expect(0)
    .stdout;
    assert!(text.contains("用户喜欢喝绿茶"), "{text}");
    assert!(
        text.contains("💡 偏好:"),
        "Chinese prefixes for a Chinese question: {text}"
    );
    assert!(text.contains("!!! 必须遵循:"), "{text}");
    assert!(!text.contains("Alps"), "{text}");
}

#[test]
fn rank_reports_bad_files_clearly() {
    let w = World::without_model("cli-bad-files");
    let bad = w.home.join("bad.json");
    std::fs::write(&bad, r#"[{"content": "x", "priority": 7}]"#).unwrap();
    let run = w
        .run(&["memory", "rank", "x", "--from", bad.to_str().unwrap()])
        .expect(2);
    assert!(run.stderr.contains("bad.json"), "{}", run.stderr);
    assert!(
        run.stderr.contains("priority"),
        "names the problem: {}",
        run.stderr
    );

    let missing = w.home.join("missing.json");
    let run = w
        .run(&["memory", "rank", "x", "--from", missing.to_str().unwrap()])
        .expect(1);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
}
