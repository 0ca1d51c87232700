//! What the person owns is never lost or leaked by the agent's own machinery: memory
//! maintenance leaves a pinned memory as written, a learned skill holds no credential
//! from the question, `skills rm` deletes only a skill's folder, and running a one-off
//! task by hand keeps its scheduled run. Each test is a bug a user hit, proven through
//! the built binary.

mod support;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::{Reply, World};

const PRIORITY: &str = "[evolve:priority]";
const DAY: i64 = 86_400;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn mem(id: u64, content: &str, age_days: i64, pinned: bool) -> Value {
    json!({"id": id, "content": content, "category": "preference", "priority": 1,
           "importance": 3, "created_at": now() - age_days * DAY, "pinned": pinned})
}

fn stored(w: &World) -> BTreeMap<u64, Value> {
    let out = w.run(&["memory", "export"]).expect(0).json();
    out["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|m| (m["id"].as_u64().expect("id"), m.clone()))
        .collect()
}

/// A pinned memory is the user's own wording: maintenance must neither rewrite it
/// (merging a longer restatement into it) nor soft-delete it (merging it into an older
/// one).
#[test]
fn maintenance_never_rewrites_or_deletes_a_pinned_memory() {
    let w = World::new("user-data-pinned");
    w.seed_memories(vec![
        mem(1, "The user likes green tea", 20, true),
        mem(
            2,
            "The user likes green tea brewed at 80 degrees",
            19,
            false,
        ),
        mem(3, "The user drinks black coffee", 18, false),
        mem(4, "The user drinks black coffee every morning", 17, true),
    ]);
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    let report = w.run(&["memory", "maintain", "--json"]).expect(0).json();
    let after = stored(&w);
    assert_eq!(
        after[&1]["content"], "The user likes green tea",
        "pinned #1 rewritten: {report}"
    );
    assert_ne!(
        after[&1]["deleted"],
        json!(true),
        "pinned #1 deleted: {report}"
    );
    assert_eq!(
        after[&4]["content"], "The user drinks black coffee every morning",
        "pinned #4 changed: {report}"
    );
    assert_ne!(
        after[&4]["deleted"],
        json!(true),
        "pinned #4 deleted: {report}"
    );
}

/// A learned skill is a plain file meant to be read, edited and shared: a credential
/// the user pasted into the question (or the model echoed into the draft) must not be
/// written into it.
#[test]
fn a_learned_skill_never_holds_a_credential_from_the_question() {
    const TOKEN: &str = "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78";
    let w = World::new("user-data-secret-skill");
    std::fs::write(w.workspace().join("RELEASE.md"), "# 2.0\n- dark mode\n").unwrap();
    w.fake
        .push(support::tool_call("list_dir", r#"{"path": "."}"#));
    w.fake
        .push(support::tool_call("read_file", r#"{"path": "RELEASE.md"}"#));
    w.fake.push(Reply::text("The release adds dark mode."));
    w.fake.route(
        support::POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.95, "reason": "graded"}}"#),
    );
    let draft = format!(
        "---\nname: release-notes-digest\ndescription: Use when the user wants the release \
         notes read and summarised.\n---\n# Digest\n\n1. Call list_dir.\n2. Call read_file \
         on the notes.\n3. Push with the token {TOKEN}.\n"
    );
    w.fake.route(support::CRYSTALLIZE, Reply::text(draft));
    let question =
        format!("List my workspace files and read the release notes; my token is {TOKEN}");
    let record = w.run(&["ask", "--json", &question]).expect(0).json();
    let mut leaked = Vec::new();
    for entry in walk(&w.home.join("skills")) {
        if std::fs::read_to_string(&entry).is_ok_and(|t| t.contains(TOKEN)) {
            leaked.push(entry);
        }
    }
    assert!(leaked.is_empty(), "the token is in {leaked:?}; {record:#}");
    assert!(record["learned_skill"].is_null(), "{record:#}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `evolve skills rm NAME` (and `DELETE /v1/skills/NAME`) removes a skill: a folder
/// under the skills folder that holds no SKILL.md is not one, and the user's files in
/// it must stay.
#[test]
fn removing_a_skill_never_deletes_a_folder_that_is_not_a_skill() {
    let w = World::new("user-data-rm-not-skill");
    let notes = w.home.join("skills/notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("ideas.txt"), "my draft ideas").unwrap();
    let out = w.run(&["skills", "rm", "notes"]);
    assert_ne!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        notes.join("ideas.txt").exists(),
        "the user's notes were deleted: {}",
        out.stdout
    );
}

/// Trying a one-off task by hand ("Run now", `evolve tasks run`) before its time must
/// not cancel it: it still runs at the time the user gave.
#[test]
fn running_a_one_off_by_hand_before_its_time_keeps_its_scheduled_run() {
    let w = World::new("user-data-at-manual");
    let added = w
        .run(&[
            "tasks",
            "add",
            "--at",
            "2099-01-01T09:00:00Z",
            "Wish a happy new year",
        ])
        .expect(0);
    assert!(
        added.stdout.contains("next run 2099-01-01T09:00:00Z"),
        "{}",
        added.stdout
    );
    w.fake.push(Reply::text("Happy new year!"));
    w.run(&["tasks", "run", "1"]).expect(0);
    let listed = w.run(&["tasks", "list", "--json"]).expect(0).json();
    assert_eq!(
        listed["data"][0]["next_run"], "2099-01-01T09:00:00Z",
        "the one-off lost its scheduled run: {listed:#}"
    );
}
