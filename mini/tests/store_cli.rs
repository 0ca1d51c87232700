//! `evolve memory …` and `evolve sessions …` through the built binary, each test with
//! its own fresh `EVOLVE_HOME` and no model configured: what a user sees when they add,
//! list, search, pin, forget, export and import memories, and look at sessions.

mod support;

use std::path::Path;

use support::World;

/// Runs `evolve ARGS`, requires success and returns stdout.
fn ok(w: &World, args: &[&str]) -> String {
    w.run(args).expect(0).stdout
}

/// Runs `evolve ARGS`, requires success and returns stdout as JSON.
fn json(w: &World, args: &[&str]) -> serde_json::Value {
    w.run(args).expect(0).json()
}

/// The number after `#` in "added memory #12".
fn id_in(text: &str) -> u64 {
    let digits: String = text
        .split('#')
        .nth(1)
        .unwrap_or_else(|| panic!("no id in {text:?}"))
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("an id")
}

/// (id, content, pinned, deleted) of `memory list --json [--all]`.
fn listed(w: &World, all: bool) -> Vec<(u64, String, bool, bool)> {
    let args: &[&str] = if all {
        &["memory", "list", "--json", "--all"]
    } else {
        &["memory", "list", "--json"]
    };
    json(w, args)
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| {
            (
                m["id"].as_u64().unwrap(),
                m["content"].as_str().unwrap().to_string(),
                m["pinned"].as_bool().unwrap(),
                m["deleted"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn add_list_search_pin_and_forget() {
    let w = World::without_model("store-memory");
    let tea = id_in(&ok(
        &w,
        &[
            "memory",
            "add",
            "the user likes green tea",
            "--category",
            "preference",
            "--tags",
            "drinks,tea",
        ],
    ));
    let pi = id_in(&ok(
        &w,
        &[
            "memory",
            "add",
            "the home server is a raspberry pi",
            "--category",
            "fact",
            "--pin",
            "--importance",
            "5",
        ],
    ));
    assert_ne!(tea, pi);
    let again = ok(&w, &["memory", "add", "The user likes  green tea"]);
    assert!(
        again.contains("already") && again.contains(&format!("#{tea}")),
        "{again}"
    );
    assert!(
        w.home.join("evolve.redb").exists(),
        "the store lives in EVOLVE_HOME"
    );

    let list = json(&w, &["memory", "list", "--json"]);
    let tea_record = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == tea)
        .expect("listed");
    assert_eq!(tea_record["category"], "preference");
    assert_eq!(tea_record["priority"], 1);
    assert_eq!(tea_record["tags"], serde_json::json!(["drinks", "tea"]));
    let text = ok(&w, &["memory", "list"]);
    assert!(
        text.contains(&format!("#{pi}")) && text.contains("pinned"),
        "{text}"
    );

    let found = json(
        &w,
        &[
            "memory",
            "search",
            "which tea does the user like?",
            "--json",
        ],
    );
    let chosen: Vec<u64> = found["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(chosen, vec![tea], "only the related memory: {found}");
    assert!(found["chosen"][0]["score"].as_f64().unwrap() > 0.0);
    let table = ok(&w, &["memory", "search", "which tea does the user like?"]);
    assert!(
        table.contains("green tea") && table.contains("score"),
        "{table}"
    );

    ok(&w, &["memory", "pin", &pi.to_string(), "--off"]);
    ok(&w, &["memory", "pin", &format!("#{tea}")]);
    let pins: Vec<(u64, bool)> = listed(&w, false).iter().map(|m| (m.0, m.2)).collect();
    assert_eq!(pins, vec![(tea, true), (pi, false)]);

    ok(&w, &["memory", "rm", &tea.to_string()]);
    assert_eq!(listed(&w, false).len(), 1);
    let all = listed(&w, true);
    assert!(
        all.iter().any(|m| m.0 == tea && m.3),
        "--all shows it deleted: {all:?}"
    );
    assert!(ok(&w, &["memory", "list"]).contains("1 deleted not shown"));

    ok(&w, &["memory", "rm", &tea.to_string(), "--purge"]);
    assert_eq!(listed(&w, true).len(), 1);

    let run = w.run(&["memory", "rm", "999"]).expect(1);
    assert!(run.stderr.contains("#999"), "{}", run.stderr);
    w.run(&["memory", "pin", "999"]).expect(1);
}

#[test]
fn export_then_import_into_a_new_home_restores_every_memory() {
    let first = World::without_model("store-export");
    ok(
        &first,
        &[
            "memory",
            "add",
            "always answer in English",
            "--category",
            "instruction",
        ],
    );
    ok(
        &first,
        &[
            "memory",
            "add",
            "the backup runs nightly",
            "--expires",
            "2099-01-01T00:00:00Z",
        ],
    );
    let gone = id_in(&ok(&first, &["memory", "add", "an old fact to forget"]));
    ok(&first, &["memory", "rm", &gone.to_string()]);
    let file = first.home.join("memories.json");
    ok(&first, &["memory", "export", file.to_str().unwrap()]);
    let stdout_export = json(&first, &["memory", "export"]);
    assert_eq!(stdout_export["memories"].as_array().unwrap().len(), 3);

    let second = World::without_model("store-import");
    let out = ok(&second, &["memory", "import", file.to_str().unwrap()]);
    assert!(out.contains("restored 3 memories"), "{out}");
    assert_eq!(listed(&second, true), listed(&first, true));
    assert_eq!(json(&second, &["memory", "export"]), stdout_export);

    // Importing the same file again changes nothing.
    ok(&second, &["memory", "import", file.to_str().unwrap()]);
    assert_eq!(listed(&second, true), listed(&first, true));

    // A file whose ids are taken by other memories does not overwrite them.
    let third = World::without_model("store-clash");
    let mine = id_in(&ok(&third, &["memory", "add", "my own memory about cats"]));
    let out = ok(&third, &["memory", "import", file.to_str().unwrap()]);
    assert!(out.contains("taken"), "{out}");
    let contents: Vec<String> = listed(&third, false).into_iter().map(|m| m.1).collect();
    assert!(contents.contains(&"my own memory about cats".to_string()));
    assert!(contents.contains(&"always answer in English".to_string()));
    assert_eq!(listed(&third, false)[0].0, mine);
}

#[test]
fn import_reads_the_plain_list_format_that_rank_reads() {
    let w = World::without_model("store-plain");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/memories.json");
    let out = ok(&w, &["memory", "import", fixture.to_str().unwrap()]);
    assert!(out.contains("added"), "{out}");
    assert!(!listed(&w, false).is_empty());

    let bad = w.home.join("bad.json");
    std::fs::write(&bad, r#"[{"content": "x", "priority": 7}]"#).unwrap();
    let run = w
        .run(&["memory", "import", bad.to_str().unwrap()])
        .expect(2);
    assert!(run.stderr.contains("bad.json") && run.stderr.contains("priority"));
}

#[test]
fn an_imported_critical_memory_old_enough_to_decay_is_demoted_not_deleted_by_the_cap() {
    let w = World::without_model("store-import-decay");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // First a CRITICAL rule from 40 days ago (decay makes it HIGH), then 15 recent ones:
    // the cap of 15 has room for all once decay ran first.
    let mut records = vec![serde_json::json!({
        "content": "Never store passwords in plain text files",
        "category": "instruction", "priority": 0, "created_at": now - 40 * 86_400,
    })];
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar",
    ];
    for (i, word) in words.iter().enumerate() {
        records.push(serde_json::json!({
            "content": format!("Code word {word}"),
            "category": "instruction", "priority": 0,
            "created_at": now - 86_400 + i as i64,
        }));
    }
    let file = w.home.join("plain.json");
    std::fs::write(&file, serde_json::Value::Array(records).to_string()).unwrap();
    let out = ok(&w, &["memory", "import", file.to_str().unwrap()]);
    assert!(out.contains("16 added"), "{out}");
    let all = json(&w, &["memory", "list", "--json", "--all"]);
    let all = all.as_array().expect("a list");
    assert_eq!(all.len(), 16);
    assert!(all.iter().all(|m| m["deleted"] == false), "{all:#?}");
    let old = all
        .iter()
        .find(|m| m["content"] == "Never store passwords in plain text files")
        .expect("the old rule");
    assert_eq!(old["priority"], 1, "decayed to HIGH: {old:#}");
    let critical = all.iter().filter(|m| m["priority"] == 0).count();
    assert_eq!(critical, 15);
}

#[test]
fn sessions_on_an_empty_store() {
    let w = World::without_model("store-sessions");
    let text = ok(&w, &["sessions", "list"]);
    assert!(text.contains("no sessions yet"), "{text}");
    assert_eq!(
        json(&w, &["sessions", "list", "--json"]),
        serde_json::json!([])
    );
    for args in [
        &["sessions", "show", "s000000000000"][..],
        &["sessions", "rm", "s000000000000"],
        &["sessions", "export", "s000000000000", "--format", "json"],
    ] {
        let run = w.run(args);
        assert_eq!(run.code, 1, "{args:?}");
        assert!(run.stderr.contains("s000000000000"), "{}", run.stderr);
        assert!(
            run.stderr.contains("evolve sessions list"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn bad_arguments_are_usage_errors_that_name_the_problem() {
    let w = World::without_model("store-usage");
    let table: [(&[&str], &str); 6] = [
        (&["memory", "add", "x", "--priority", "7"], "0-3"),
        (&["memory", "add", "x", "--importance", "9"], "1 to 5"),
        (&["memory", "add", "x", "--category", "food"], "preference"),
        (&["memory", "add", "x", "--expires", "soon"], "RFC 3339"),
        (&["memory", "rm", "twelve"], "memory id"),
        (
            &["sessions", "export", "s1", "--format", "pdf"],
            "md, json or html",
        ),
    ];
    for (args, needle) in table {
        let run = w.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
}
