//! Skills end to end: `evolve skills list|show|new|rm` on a fresh home, a user skill
//! overriding a bundled one, and a turn of the agent against the fake model — the
//! matched skill's summary in the system prompt, its body and its files through
//! `load_skill`.

mod support;

use support::*;

/// The bundled skills, as `skills list` must show them.
const BUNDLED: &[&str] = &[
    "commit-message",
    "daily-briefing",
    "plan-tasks",
    "review-diff",
    "server-health-check",
    "summarize-web-page",
    "translate-zh-en",
];

/// `(name, source)` of every skill in `skills list --json`.
fn listed(w: &World) -> Vec<(String, String)> {
    let list = w.run(&["skills", "list", "--json"]).expect(0).json();
    list.as_array()
        .expect("a JSON array")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["source"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn source_of(w: &World, name: &str) -> Option<String> {
    listed(w)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s)
}

#[test]
fn list_shows_every_bundled_skill_with_its_description() {
    let w = World::without_model("skills-list");
    let run = w.run(&["skills", "list"]).expect(0);
    for name in BUNDLED {
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{}", run.stdout));
        assert!(line.contains(" bundled "), "{line}");
        assert!(line.len() > name.len() + 20, "no description: {line}");
    }
    let json = w.run(&["skills", "list", "--json"]).expect(0).json();
    let translate = json
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "translate-zh-en")
        .expect("translate-zh-en");
    assert!(translate["description"]
        .as_str()
        .is_some_and(|d| d.contains("Chinese")));
    assert!(translate["tags"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == "翻译")));
    assert!(translate["path"].is_null(), "bundled skills have no folder");
    assert_eq!(
        listed(&w),
        BUNDLED
            .iter()
            .map(|n| (n.to_string(), "bundled".to_string()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn new_show_and_rm_manage_a_user_skill() {
    let w = World::without_model("skills-new");
    let made = w
        .run(&[
            "skills",
            "new",
            "backup-photos",
            "--description",
            "Back up the photo folder to the NAS: rsync, then verify. Use when asked to back up photos.",
        ])
        .expect(0);
    let file = w.home.join("skills/backup-photos/SKILL.md");
    assert!(
        made.stdout.contains(&file.display().to_string()),
        "{}",
        made.stdout
    );
    let text = std::fs::read_to_string(&file).expect("SKILL.md written");
    assert!(text.starts_with("---\nname: backup-photos\n"), "{text}");
    assert_eq!(source_of(&w, "backup-photos").as_deref(), Some("user"));

    let shown = w.run(&["skills", "show", "backup-photos"]).expect(0);
    assert!(
        shown.stdout.starts_with("# user skill, "),
        "{}",
        shown.stdout
    );
    assert!(shown
        .stdout
        .contains("Back up the photo folder to the NAS: rsync"));
    assert!(shown.stdout.contains("## Steps"), "{}", shown.stdout);
    let bundled = w.run(&["skills", "show", "plan-tasks"]).expect(0);
    assert!(bundled
        .stdout
        .starts_with("# bundled skill\n---\nname: plan-tasks"));
    assert!(bundled.stdout.contains("\"action\": \"done\""));

    // A second `new` never overwrites what the user wrote.
    std::fs::write(&file, text.replace("## Steps", "## My steps")).unwrap();
    let again = w.run(&["skills", "new", "backup-photos"]).expect(1);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("## My steps"));

    for bad in ["Backup", "../escape", "a--b", "x-", &"a".repeat(65)] {
        let run = w.run(&["skills", "new", bad]).expect(2);
        assert!(
            run.stderr.contains("the skill name"),
            "{bad}: {}",
            run.stderr
        );
    }
    assert!(!w.home.join("escape").exists());

    let removed = w.run(&["skills", "rm", "backup-photos"]).expect(0);
    assert!(removed.stdout.contains("removed the skill backup-photos"));
    assert!(!w.home.join("skills/backup-photos").exists());
    assert_eq!(source_of(&w, "backup-photos"), None);
    let gone = w.run(&["skills", "rm", "backup-photos"]).expect(1);
    assert!(
        gone.stderr.contains("no skill named \"backup-photos\""),
        "{}",
        gone.stderr
    );
    // A broken skill is skipped with a warning, but can still be found and removed.
    let broken = w.home.join("skills/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("SKILL.md"), "no front matter\n").unwrap();
    let shown = w.run(&["skills", "show", "broken"]).expect(1);
    assert!(
        shown.stderr.contains("expected `---`") && shown.stderr.contains("cannot be used"),
        "{}",
        shown.stderr
    );
    w.run(&["skills", "rm", "broken"]).expect(0);
    assert!(!broken.exists());
    let missing = w.run(&["skills", "show", "nope"]).expect(1);
    assert!(
        missing.stderr.contains("evolve skills list"),
        "{}",
        missing.stderr
    );
}

#[test]
fn bundled_skills_cannot_be_removed_but_a_user_override_can() {
    let w = World::without_model("skills-override");
    let refused = w.run(&["skills", "rm", "review-diff"]).expect(1);
    assert!(
        refused.stderr.contains("review-diff is a bundled skill")
            && refused.stderr.contains("evolve skills new review-diff"),
        "{}",
        refused.stderr
    );

    let made = w.run(&["skills", "new", "review-diff"]).expect(0);
    assert!(
        made.stdout.contains("overrides the bundled skill"),
        "{}",
        made.stdout
    );
    let file = w.home.join("skills/review-diff/SKILL.md");
    let copy = std::fs::read_to_string(&file).unwrap();
    assert!(
        copy.contains("## What to look for"),
        "starts from the bundled text"
    );
    assert_eq!(source_of(&w, "review-diff").as_deref(), Some("user"));
    let shown = w.run(&["skills", "show", "review-diff"]).expect(0);
    assert!(shown
        .stdout
        .contains("(overrides the bundled skill of the same name)"));

    let removed = w.run(&["skills", "rm", "review-diff"]).expect(0);
    assert!(removed
        .stdout
        .contains("the bundled skill review-diff is used again"));
    assert_eq!(source_of(&w, "review-diff").as_deref(), Some("bundled"));
    let shown = w.run(&["skills", "show", "review-diff"]).expect(0);
    assert!(
        shown.stdout.starts_with("# bundled skill\n"),
        "{}",
        shown.stdout
    );
}

#[test]
fn learned_skills_are_listed_as_learned() {
    let w = World::without_model("skills-learned");
    let dir = w.home.join("skills/rotate-logs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: rotate-logs\ndescription: Rotate the app logs. Use when logs are big.\nmetadata:\n  learned: true\n---\nRun logrotate.\n",
    )
    .unwrap();
    assert_eq!(source_of(&w, "rotate-logs").as_deref(), Some("learned"));
    let list = w.run(&["skills", "list"]).expect(0);
    assert!(list
        .stdout
        .lines()
        .any(|l| l.starts_with("rotate-logs") && l.contains(" learned ")));
    w.run(&["skills", "rm", "rotate-logs"]).expect(0);
    assert!(!dir.exists());
}

#[test]
fn a_matching_bundled_skill_is_announced_and_load_skill_gives_its_body() {
    let w = World::new("skills-turn");
    w.fake
        .push(tool_call("load_skill", r#"{"name": "translate-zh-en"}"#));
    w.fake
        .push(Reply::Text("The weather is nice today.".into()));
    let record = w
        .run(&[
            "ask",
            "--json",
            "Please translate this sentence into English: 今天天气很好",
        ])
        .expect(0)
        .json();
    assert_eq!(record["reply"], "The weather is nice today.");
    let tools = record["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "load_skill");
    assert_eq!(tools[0]["ran"], true);

    let mains = w.main_requests();
    assert_eq!(mains.len(), 2);
    let system = system_text(&mains[0]);
    let block = system
        .split("<available_skills>")
        .nth(1)
        .and_then(|rest| rest.split("</available_skills>").next())
        .unwrap_or_else(|| panic!("no skills block in the system prompt:\n{system}"));
    let first = block
        .lines()
        .find(|l| l.starts_with("- "))
        .expect("a skill line");
    assert!(
        first.starts_with("- translate-zh-en: Translate between Chinese and English"),
        "{block}"
    );
    assert!(
        !system.contains("Keep exactly"),
        "only the summary is in the prompt"
    );
    let second = all_text(&mains[1]);
    assert!(second.contains("# Skill: translate-zh-en"), "{second}");
    assert!(
        second.contains("Keep exactly"),
        "the body reached the model"
    );
}

#[test]
fn a_user_skill_overrides_the_bundled_one_in_a_turn_and_its_files_stay_inside() {
    let w = World::new("skills-user-turn");
    let dir = w.home.join("skills/review-diff");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: review-diff\ndescription: Review a diff the way our team does. Use when asked to review a diff or PR.\ntags: [review, diff]\n---\nFollow checklist.md line by line.\n",
    )
    .unwrap();
    std::fs::write(dir.join("checklist.md"), "1. Every error has a test.\n").unwrap();
    std::fs::write(w.home.join("skills/secret.txt"), "not for the model").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(w.home.join("skills/secret.txt"), dir.join("peek")).unwrap();

    w.fake
        .push(tool_call("load_skill", r#"{"name": "review-diff"}"#));
    w.fake.push(tool_call(
        "load_skill",
        r#"{"name": "review-diff", "file": "checklist.md"}"#,
    ));
    w.fake.push(tool_call(
        "load_skill",
        r#"{"name": "review-diff", "file": "../secret.txt"}"#,
    ));
    w.fake.push(tool_call(
        "load_skill",
        r#"{"name": "review-diff", "file": "peek"}"#,
    ));
    w.fake.push(Reply::Text("Reviewed.".into()));
    w.run(&["ask", "Please review the diff of my PR"]).expect(0);

    let mains = w.main_requests();
    assert_eq!(mains.len(), 5);
    let system = system_text(&mains[0]);
    assert!(
        system.contains("- review-diff: Review a diff the way our team does."),
        "{system}"
    );
    assert!(
        !system.contains("for bugs, security problems"),
        "the bundled one is hidden"
    );
    let after_body = all_text(&mains[1]);
    assert!(after_body.contains("Follow checklist.md line by line."));
    assert!(
        after_body.contains("checklist.md]"),
        "the file is listed: {after_body}"
    );
    assert!(!after_body.contains("## What to look for"));
    assert!(all_text(&mains[2]).contains("1. Every error has a test."));
    // Refused before it runs (the permission check sees a path leaving the workspace)
    // or by the tool (`..` leaves the skill's folder): either way, never read.
    let last = all_text(&mains[3]);
    assert!(
        last.contains("refused") || last.contains("contains `..`"),
        "{last}"
    );
    #[cfg(unix)]
    {
        let after_link = all_text(&mains[4]);
        assert!(
            after_link.contains("is outside the folder of skill review-diff"),
            "{after_link}"
        );
        assert!(!after_link.contains("not for the model"));
    }
}

#[test]
fn chinese_requests_find_their_skill_too() {
    let table: &[(&str, &str)] = &[
        ("把这段话翻译成英文：今天天气很好", "translate-zh-en"),
        ("帮我检查一下服务器的磁盘和内存", "server-health-check"),
        ("帮我把这个项目拆成待办清单", "plan-tasks"),
    ];
    for (question, skill) in table {
        let w = World::new("skills-zh");
        w.fake.push(Reply::Text("好的。".into()));
        w.run(&["ask", question]).expect(0);
        let system = system_text(&w.main_requests()[0]);
        let first = system
            .split("<available_skills>")
            .nth(1)
            .and_then(|block| block.lines().find(|l| l.starts_with("- ")))
            .unwrap_or_else(|| panic!("{question}: no skill offered:\n{system}"));
        assert!(
            first.starts_with(&format!("- {skill}: ")),
            "{question}: {first}"
        );
    }
}

#[test]
fn a_running_serve_sees_new_skills_at_once_and_removes_user_ones_only() {
    let w = World::new("skills-serve");
    let s = support::serve::Server::start(&w, &[]);
    let names = |s: &support::serve::Server| -> Vec<(String, String)> {
        s.get("/v1/skills").json()["data"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|v| {
                (
                    v["name"].as_str().unwrap_or("").to_string(),
                    v["source"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    assert!(!names(&s).iter().any(|(n, _)| n == "standup-notes"));
    // Made while serve runs: listed and offered without a restart.
    w.run(&[
        "skills",
        "new",
        "standup-notes",
        "--description",
        "Use when the user asks for standup notes: yesterday, today, blockers.",
    ])
    .expect(0);
    assert!(names(&s).contains(&("standup-notes".into(), "user".into())));
    w.fake.push(Reply::text("Yesterday: tests."));
    let chat = s.post(
        "/v1/chat/completions",
        r#"{"model":"evolve","messages":[{"role":"user","content":"write my standup notes, blockers too"}]}"#,
    );
    assert_eq!(chat.status, 200, "{}", chat.body);
    let mains = w.main_requests();
    assert!(
        system_text(mains.last().unwrap()).contains("standup-notes"),
        "the new skill is offered"
    );

    // Removed through the API: gone from the list and the folder.
    let r = s.request("DELETE", "/v1/skills/standup-notes", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["bundled_again"], false);
    assert!(!names(&s).iter().any(|(n, _)| n == "standup-notes"));
    assert!(!w.home.join("skills/standup-notes").exists());
    // Bundled skills stay; unknown and malformed names are 404.
    let r = s.request("DELETE", "/v1/skills/review-diff", &[], "");
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(names(&s).iter().any(|(n, _)| n == "review-diff"));
    for bad in [
        "/v1/skills/no-such-skill",
        "/v1/skills/..%2F..%2Fetc",
        "/v1/skills/..",
    ] {
        assert_eq!(s.request("DELETE", bad, &[], "").status, 404, "{bad}");
    }
    // A user override of a bundled skill: removing it brings the bundled one back.
    w.run(&["skills", "new", "review-diff"]).expect(0);
    assert!(names(&s).contains(&("review-diff".into(), "user".into())));
    let r = s.request("DELETE", "/v1/skills/review-diff", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["bundled_again"], true);
    assert!(names(&s).contains(&("review-diff".into(), "bundled".into())));
}
