//! The level of an MCP tool through the built binary: the cheap model's classification
//! may raise a tool above the floor its annotations set, never lower it below —
//! L3 without `readOnlyHint: true`, L4 with `destructiveHint: true`, L2 read-only — and
//! only the user's own level (`evolve mcp level`, `[tools.levels]`) goes lower.
//!
//! The in-repo test server's `wipe_everything` ("Deletes every file.", no annotations)
//! really deletes the files of its notes directory, so a test sees whether it ran.

mod support;

use std::path::PathBuf;

use support::mcp::{classifications, test_server, tool_row};
use support::{tool_call, Reply, World, CLASSIFY};

/// A world running the test server with its notes in `$EVOLVE_HOME/notes` (holding
/// `keep.txt`), its tools classified by the cheap model's `classification` (as the
/// model would answer the `[evolve:classify]` prompt); `extra` goes into the server's
/// table. Returns the file `wipe_everything` deletes.
fn world(name: &str, classification: &str, extra: &str) -> (World, PathBuf) {
    let w = World::new(name);
    let notes = w.home.join("notes");
    std::fs::create_dir_all(&notes).expect("notes");
    let keep = notes.join("keep.txt");
    std::fs::write(&keep, "precious").expect("keep.txt");
    w.fake.route(CLASSIFY, Reply::Text(classification.into()));
    w.config(&format!(
        "[mcp.servers.t]\ncommand = {:?}\nargs = [\"--notes\", {:?}]\n{extra}\n",
        test_server().to_string_lossy(),
        notes.to_string_lossy()
    ));
    (w, keep)
}

/// The model asks for `tool` once, then answers.
fn script_call(w: &World, tool: &str) {
    w.fake.push(tool_call(tool, "{}"));
    w.fake.push(Reply::text("Done."));
}

#[test]
fn an_unannotated_tool_the_classifier_calls_l0_asks_a_person() {
    let (w, keep) = world("lv-wipe", r#"{"wipe_everything": "L0", "echo": "L1"}"#, "");

    // `ask` has nobody to ask: refused, exit 4, nothing deleted.
    script_call(&w, "t__wipe_everything");
    let run = w.run(&["ask", "--json", "tidy up"]).expect(4);
    let call = &run.json()["tools"][0];
    assert_eq!(call["name"], "t__wipe_everything");
    assert_eq!(
        (call["level"].as_str(), call["ran"].as_bool()),
        (Some("L3"), Some(false)),
        "{call}"
    );
    assert!(keep.exists(), "wipe_everything ran without a person");
    assert_eq!(classifications(&w), 1, "the classifier was asked");

    // What `mcp tools` says, and why.
    let row = tool_row(&w, "wipe_everything");
    assert_eq!(row["level"], "L3", "{row}");
    assert_eq!(row["classifier"], "L0", "{row}");
    assert_eq!(row["source"], "floor", "{row}");
    assert_eq!(
        row["origin"], "floor, not read-only (classifier L0)",
        "{row}"
    );
    let text = w.run(&["mcp", "tools", "t"]).expect(0).stdout;
    let line = text
        .lines()
        .find(|l| l.contains("t__wipe_everything"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("L3") && line.contains("floor, not read-only (classifier L0)"),
        "{line}"
    );

    // The cached L0 is floored too; `--yes` (a person's consent in advance) runs L3.
    script_call(&w, "t__wipe_everything");
    let run = w.run(&["ask", "--yes", "--json", "tidy up"]).expect(0);
    let call = &run.json()["tools"][0];
    assert_eq!(
        (call["level"].as_str(), call["ran"].as_bool()),
        (Some("L3"), Some(true)),
        "{call}"
    );
    assert!(!keep.exists(), "approved with --yes, it ran");
    assert_eq!(classifications(&w), 1, "the cached answer was used");
}

#[test]
fn a_read_only_tool_the_classifier_calls_l1_runs_headless_at_l2() {
    let (w, keep) = world(
        "lv-readonly",
        r#"{"wipe_everything": "L0", "echo": "L1"}"#,
        "",
    );
    w.fake
        .push(tool_call("t__echo", r#"{"text": "read-only"}"#));
    w.fake.push(Reply::text("Echoed."));
    let run = w.run(&["ask", "--json", "echo"]).expect(0);
    let call = &run.json()["tools"][0];
    assert_eq!(
        (call["level"].as_str(), call["ran"].as_bool()),
        (Some("L2"), Some(true)),
        "{call}"
    );
    assert_eq!(
        tool_row(&w, "echo")["origin"],
        "floor, read-only (classifier L1)"
    );
    // Under `--allow L1` only the user can put it: the server's hint says "changes
    // nothing", not "public".
    w.fake
        .push(tool_call("t__echo", r#"{"text": "read-only"}"#));
    w.fake.push(Reply::text("Refused."));
    w.run(&["ask", "--allow", "L1", "echo"]).expect(4);
    assert!(keep.exists());
}

#[test]
fn whatever_the_classifier_answers_an_unannotated_tool_never_runs_unasked() {
    for (reply, level) in [
        (Reply::Text(r#"{"wipe_everything": "L0"}"#.into()), "L3"),
        (Reply::Text(r#"{"wipe_everything": 0}"#.into()), "L3"),
        (
            Reply::Text("I cannot help with classifying tools.".into()),
            "L4",
        ),
        (
            Reply::Text(r#"{"wipe_everything": "harmless"}"#.into()),
            "L4",
        ),
        (Reply::Text(r#"{"wipe_everything": "L-1"}"#.into()), "L4"),
        (
            Reply::Status(500, r#"{"error":{"message":"down"}}"#.into()),
            "L4",
        ),
    ] {
        let w = World::new("lv-any");
        let notes = w.home.join("notes");
        std::fs::create_dir_all(&notes).expect("notes");
        let keep = notes.join("keep.txt");
        std::fs::write(&keep, "precious").expect("keep.txt");
        w.fake.route(CLASSIFY, reply);
        w.config(&format!(
            "[mcp.servers.t]\ncommand = {:?}\nargs = [\"--notes\", {:?}]\n",
            test_server().to_string_lossy(),
            notes.to_string_lossy()
        ));
        script_call(&w, "t__wipe_everything");
        let run = w.run(&["ask", "--json", "tidy up"]).expect(4);
        let call = &run.json()["tools"][0];
        assert_eq!(
            (call["level"].as_str(), call["ran"].as_bool()),
            (Some(level), Some(false)),
            "{call}"
        );
        assert!(keep.exists(), "ran unasked at {level}");
    }
}

#[test]
fn a_destructive_tool_is_l4_and_never_headless_even_with_yes() {
    let (w, _keep) = world("lv-destructive", r#"{"delete_everything": "L0"}"#, "");
    script_call(&w, "t__delete_everything");
    let run = w.run(&["ask", "--yes", "--json", "delete"]).expect(4);
    let call = &run.json()["tools"][0];
    assert_eq!(
        (call["level"].as_str(), call["ran"].as_bool()),
        (Some("L4"), Some(false)),
        "{call}"
    );
    assert_eq!(
        tool_row(&w, "delete_everything")["origin"],
        "floor, destructive (classifier L0)"
    );
}

#[test]
fn the_users_level_decides_below_the_floor() {
    // `evolve mcp level`: the user says the tool is fine to run.
    let (w, keep) = world("lv-user", r#"{"wipe_everything": "L4"}"#, "");
    w.run(&["mcp", "level", "t__wipe_everything", "L1"])
        .expect(0);
    script_call(&w, "t__wipe_everything");
    let run = w.run(&["ask", "--json", "tidy up"]).expect(0);
    let call = &run.json()["tools"][0];
    assert_eq!(
        (call["level"].as_str(), call["ran"].as_bool()),
        (Some("L1"), Some(true)),
        "{call}"
    );
    assert!(!keep.exists());

    // `[tools.levels]` in config.toml, the same.
    let (w, keep) = world(
        "lv-user-file",
        r#"{"wipe_everything": "L0"}"#,
        "\n[tools.levels]\nt__wipe_everything = \"L2\"",
    );
    script_call(&w, "t__wipe_everything");
    let run = w.run(&["ask", "--json", "tidy up"]).expect(0);
    assert_eq!(run.json()["tools"][0]["level"], "L2");
    assert!(!keep.exists());
    assert_eq!(
        tool_row(&w, "wipe_everything")["origin"],
        "user (config.toml [tools.levels])"
    );
}

#[test]
fn a_trusted_servers_read_only_hint_is_believed_over_the_classifier() {
    // The classifier says L4 for a read-only tool; the user trusts the server.
    let (w, _keep) = world("lv-trusted", r#"{"echo": "L4"}"#, "trusted = true");
    w.fake.push(tool_call("t__echo", r#"{"text": "x"}"#));
    w.fake.push(Reply::text("Echoed."));
    let run = w.run(&["ask", "--json", "echo"]).expect(0);
    assert_eq!(run.json()["tools"][0]["level"], "L2");
    assert_eq!(
        tool_row(&w, "echo")["origin"],
        "read-only, trusted server (classifier L4)"
    );
    // Trust lowers nothing that is not read-only.
    let row = tool_row(&w, "wipe_everything");
    assert_eq!(row["level"], "L4", "unclassified: {row}");
}

/// Classifying again after a failure (as `mcp_lifecycle.rs` pins with rmcp), against a
/// third-party server: PyPI's mcp-server-time, its tools
/// classified while the cheap model fails — they are L4 and marked so — and the next
/// listing asks the classifier again (it used to stick until `rm` + `add`).
#[test]
fn mcp_server_times_failed_classification_is_asked_again() {
    let Some(time) = support::mcp::peer("EVOLVE_TEST_MCP_TIME") else {
        return;
    };
    let w = World::new("mcp-time-classify-retry");
    w.config(&format!(
        "[model]\nmax_retries = 0\n\n[mcp.servers.time]\ncommand = {time:?}\n"
    ));
    w.fake
        .route(CLASSIFY, Reply::error(500, "the cheap model is down"));
    let doc = w.run(&["mcp", "tools", "time", "--json"]).expect(0).json();
    let first = doc.to_string();
    assert_eq!(classifications(&w), 1, "{first}");
    let row = |doc: &serde_json::Value| {
        doc[0]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["tool"] == "get_current_time")
            .cloned()
            .unwrap_or_else(|| panic!("get_current_time not listed: {doc}"))
    };
    assert_eq!(row(&doc)["level"], "L4", "{first}");
    // The cheap model is back: the next listing asks again and takes its answer.
    w.fake.route(
        CLASSIFY,
        Reply::Text(r#"{"get_current_time": "L1", "convert_time": "L1"}"#.into()),
    );
    let doc = w.run(&["mcp", "tools", "time", "--json"]).expect(0).json();
    assert_eq!(classifications(&w), 2, "asked again: {doc}");
    assert_ne!(
        row(&doc)["source"],
        row(&serde_json::from_str(&first).unwrap())["source"],
        "{doc}"
    );
}
