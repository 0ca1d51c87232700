//! `evolve memory …` and `evolve sessions …` through the built binary, each test with
//! its own fresh `EVOLVE_HOME` and no model configured: what a user sees when they add,
//! list, search, pin, forget, export and import memories, and look at sessions.
//!
//! Most need `Config::load` (written on the h-config branch) and are ignored until it
//! is merged; the usage-error tests stop at argument parsing and run everywhere.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh, empty `EVOLVE_HOME` under the system temp dir, removed at the end.
struct Home(PathBuf);

impl Home {
    fn new(name: &str) -> Home {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "evolve-store-cli-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).expect("a temp dir");
        Home(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_evolve"));
        cmd.args(args).env("EVOLVE_HOME", &self.0);
        for var in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "EVOLVE_MODEL",
            "EVOLVE_CHEAP_MODEL",
            "EVOLVE_LOG",
        ] {
            cmd.env_remove(var);
        }
        cmd.output().expect("the evolve binary runs")
    }

    /// Runs and requires success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "evolve {args:?} failed ({:?}): {}",
            out.status.code(),
            stderr(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let text = self.ok(args);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"))
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
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
fn listed(home: &Home, all: bool) -> Vec<(u64, String, bool, bool)> {
    let args: &[&str] = if all {
        &["memory", "list", "--json", "--all"]
    } else {
        &["memory", "list", "--json"]
    };
    home.json(args)
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
    let home = Home::new("memory");
    let tea = id_in(&home.ok(&[
        "memory",
        "add",
        "the user likes green tea",
        "--category",
        "preference",
        "--tags",
        "drinks,tea",
    ]));
    let pi = id_in(&home.ok(&[
        "memory",
        "add",
        "the home server is a raspberry pi",
        "--category",
        "fact",
        "--pin",
        "--importance",
        "5",
    ]));
    assert_ne!(tea, pi);
    let again = home.ok(&["memory", "add", "The user likes  green tea"]);
    assert!(
        again.contains("already") && again.contains(&format!("#{tea}")),
        "{again}"
    );
    assert!(
        home.path("evolve.redb").exists(),
        "the store lives in EVOLVE_HOME"
    );

    let list = home.json(&["memory", "list", "--json"]);
    let tea_record = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == tea)
        .expect("listed");
    assert_eq!(tea_record["category"], "preference");
    assert_eq!(tea_record["priority"], 1);
    assert_eq!(tea_record["tags"], serde_json::json!(["drinks", "tea"]));
    let text = home.ok(&["memory", "list"]);
    assert!(
        text.contains(&format!("#{pi}")) && text.contains("pinned"),
        "{text}"
    );

    let found = home.json(&[
        "memory",
        "search",
        "which tea does the user like?",
        "--json",
    ]);
    let chosen: Vec<u64> = found["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(chosen, vec![tea], "only the related memory: {found}");
    assert!(found["chosen"][0]["score"].as_f64().unwrap() > 0.0);
    let table = home.ok(&["memory", "search", "which tea does the user like?"]);
    assert!(
        table.contains("green tea") && table.contains("score"),
        "{table}"
    );

    home.ok(&["memory", "pin", &pi.to_string(), "--off"]);
    home.ok(&["memory", "pin", &format!("#{tea}")]);
    let pins: Vec<(u64, bool)> = listed(&home, false).iter().map(|m| (m.0, m.2)).collect();
    assert_eq!(pins, vec![(tea, true), (pi, false)]);

    home.ok(&["memory", "rm", &tea.to_string()]);
    assert_eq!(listed(&home, false).len(), 1);
    let all = listed(&home, true);
    assert!(
        all.iter().any(|m| m.0 == tea && m.3),
        "--all shows it deleted: {all:?}"
    );
    assert!(home.ok(&["memory", "list"]).contains("1 deleted not shown"));

    home.ok(&["memory", "rm", &tea.to_string(), "--purge"]);
    assert_eq!(listed(&home, true).len(), 1);

    let out = home.run(&["memory", "rm", "999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("#999"), "{}", stderr(&out));
    let out = home.run(&["memory", "pin", "999"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]

fn export_then_import_into_a_new_home_restores_every_memory() {
    let first = Home::new("export");
    first.ok(&[
        "memory",
        "add",
        "always answer in English",
        "--category",
        "instruction",
    ]);
    first.ok(&[
        "memory",
        "add",
        "the backup runs nightly",
        "--expires",
        "2099-01-01T00:00:00Z",
    ]);
    let gone = id_in(&first.ok(&["memory", "add", "an old fact to forget"]));
    first.ok(&["memory", "rm", &gone.to_string()]);
    let file = first.path("memories.json");
    first.ok(&["memory", "export", file.to_str().unwrap()]);
    let stdout_export = first.json(&["memory", "export"]);
    assert_eq!(stdout_export["memories"].as_array().unwrap().len(), 3);

    let second = Home::new("import");
    let out = second.ok(&["memory", "import", file.to_str().unwrap()]);
    assert!(out.contains("restored 3 memories"), "{out}");
    assert_eq!(listed(&second, true), listed(&first, true));
    assert_eq!(second.json(&["memory", "export"]), stdout_export);

    // Importing the same file again changes nothing.
    second.ok(&["memory", "import", file.to_str().unwrap()]);
    assert_eq!(listed(&second, true), listed(&first, true));

    // A file whose ids are taken by other memories does not overwrite them.
    let third = Home::new("clash");
    let mine = id_in(&third.ok(&["memory", "add", "my own memory about cats"]));
    let out = third.ok(&["memory", "import", file.to_str().unwrap()]);
    assert!(out.contains("taken"), "{out}");
    let contents: Vec<String> = listed(&third, false).into_iter().map(|m| m.1).collect();
    assert!(contents.contains(&"my own memory about cats".to_string()));
    assert!(contents.contains(&"always answer in English".to_string()));
    assert_eq!(listed(&third, false)[0].0, mine);
}

#[test]

fn import_reads_the_plain_list_format_that_rank_reads() {
    let home = Home::new("plain");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/memories.json");
    let out = home.ok(&["memory", "import", fixture.to_str().unwrap()]);
    assert!(out.contains("added"), "{out}");
    assert!(!listed(&home, false).is_empty());

    let bad = home.path("bad.json");
    std::fs::write(&bad, r#"[{"content": "x", "priority": 7}]"#).unwrap();
    let out = home.run(&["memory", "import", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.json") && stderr(&out).contains("priority"));
}

#[test]

fn sessions_on_an_empty_store() {
    let home = Home::new("sessions");
    let text = home.ok(&["sessions", "list"]);
    assert!(text.contains("no sessions yet"), "{text}");
    assert_eq!(
        home.json(&["sessions", "list", "--json"]),
        serde_json::json!([])
    );
    for args in [
        &["sessions", "show", "s000000000000"][..],
        &["sessions", "rm", "s000000000000"],
        &["sessions", "export", "s000000000000", "--format", "json"],
    ] {
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains("s000000000000"), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("evolve sessions list"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn bad_arguments_are_usage_errors_that_name_the_problem() {
    let home = Home::new("usage");
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
        let out = home.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}
