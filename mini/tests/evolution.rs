//! Self-evolution end to end (tea-agent's 经验固化): a task that worked with several tool
//! calls and a high grade becomes a learned skill — once per job, never from a bad
//! draft — and a task that went wrong leaves a lesson memory that later prompts on
//! similar tasks carry and unrelated ones do not. Through the built binary against the
//! fake model.

mod support;

use support::*;

/// The question of the skill tests and a rephrasing of it (the same job).
const QUESTION: &str = "List my workspace files and read the release notes";
const SAME_JOB: &str = "Please list the workspace files and read the release notes";

/// A draft the cheap model returns.
const DRAFT: &str = "---\nname: release-notes-digest\ndescription: Use when the user wants the release notes in the workspace read and summarised.\ntags: [docs, release]\n---\n# Release notes digest\n\n1. Call list_dir on the workspace root to find the notes file.\n2. Call read_file on it.\n3. Answer with the main changes as bullets.\n";

fn grade(w: &World, score: f32) {
    w.fake.route(
        POST_TURN,
        Reply::text(format!(
            r#"{{"grade": {{"score": {score}, "reason": "graded"}}, "memories": []}}"#
        )),
    );
}

/// Scripts a turn that lists the workspace and reads the notes, then answers.
fn two_tool_turn(w: &World) {
    w.fake.push(tool_call("list_dir", r#"{"path": "."}"#));
    w.fake
        .push(tool_call("read_file", r#"{"path": "RELEASE.md"}"#));
    w.fake
        .push(Reply::text("The release adds dark mode and fixes login."));
}

fn world(name: &str) -> World {
    let w = World::new(name);
    std::fs::write(
        w.workspace().join("RELEASE.md"),
        "# 2.0\n- dark mode\n- login fix\n",
    )
    .unwrap();
    w
}

/// How many requests of the cheap model carried `marker`.
fn requests_with(w: &World, marker: &str) -> usize {
    w.fake
        .chat_requests()
        .iter()
        .filter(|r| r.body.contains(marker))
        .count()
}

/// The skill folders under `$EVOLVE_HOME/skills` (hidden ones included).
fn skill_folders(w: &World) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(w.home.join("skills"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn source_of(w: &World, name: &str) -> Option<String> {
    let list = w.run(&["skills", "list", "--json"]).expect(0).json();
    list.as_array()?
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["source"].as_str().map(str::to_string))
}

#[test]
fn a_multi_tool_task_graded_high_becomes_one_learned_skill_per_job() {
    let w = world("crystallize");
    two_tool_turn(&w);
    grade(&w, 0.9);
    w.fake.route(CRYSTALLIZE, Reply::text(DRAFT));
    let record = w.run(&["ask", "--json", QUESTION]).expect(0).json();
    // The task read files (outside text): the skill waits for the person's review.
    assert!(record["learned_skill"].is_null(), "{record:#}");
    assert_eq!(
        record["skill_pending"], "release-notes-digest",
        "{record:#}"
    );
    let file = w.home.join("skills/.pending/release-notes-digest/SKILL.md");
    let text = std::fs::read_to_string(&file).expect("the skill file is written");
    assert!(text.contains("learned: true"), "{text}");
    assert!(text.contains("Call read_file on it."), "{text}");
    assert_eq!(
        source_of(&w, "release-notes-digest").as_deref(),
        Some("pending")
    );
    let listed = w.run(&["skills", "list"]).expect(0);
    assert!(
        listed.stdout.contains("waiting for review")
            && listed.stdout.contains("release-notes-digest"),
        "{}",
        listed.stdout
    );
    let shown = w.run(&["skills", "show", "release-notes-digest"]).expect(0);
    assert!(
        shown.stdout.contains("waiting for review"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("Call read_file on it."),
        "{}",
        shown.stdout
    );
    let approved = w
        .run(&["skills", "approve", "release-notes-digest"])
        .expect(0);
    assert!(
        approved
            .stdout
            .contains("approved the skill release-notes-digest"),
        "{}",
        approved.stdout
    );
    assert!(w
        .home
        .join("skills/release-notes-digest/SKILL.md")
        .is_file());
    assert_eq!(
        source_of(&w, "release-notes-digest").as_deref(),
        Some("learned")
    );
    w.run(&["skills", "approve", "release-notes-digest"])
        .expect(1);
    // The draft saw the calls that worked and what came back.
    let draft_request = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.body.contains(CRYSTALLIZE))
        .expect("a crystallize request");
    assert!(draft_request.body.contains("list_dir"));
    assert!(
        draft_request.body.contains("dark mode"),
        "result heads shown"
    );
    assert_eq!(requests_with(&w, CRYSTALLIZE), 1);

    // The same job again, rephrased: no model call, no second skill.
    two_tool_turn(&w);
    grade(&w, 0.95);
    let again = w.run(&["ask", "--json", SAME_JOB]).expect(0).json();
    assert!(again["learned_skill"].is_null(), "{again:#}");
    assert_eq!(requests_with(&w, CRYSTALLIZE), 1, "no crystallize request");
    assert_eq!(skill_folders(&w), [".pending", "release-notes-digest"]);
    // The learned skill is offered for the similar request.
    let mains = w.main_requests();
    let last_first_step = &mains[mains.len() - 3];
    assert!(
        system_text(last_first_step).contains("release-notes-digest"),
        "{}",
        system_text(last_first_step)
    );

    // It is the user's to remove.
    w.run(&["skills", "rm", "release-notes-digest"]).expect(0);
    assert_eq!(source_of(&w, "release-notes-digest"), None);
}

#[test]
fn one_tool_call_a_middling_grade_or_learn_off_make_no_skill() {
    // One tool call, graded high.
    let w = world("crystallize-one");
    w.fake
        .push(tool_call("read_file", r#"{"path": "RELEASE.md"}"#));
    w.fake.push(Reply::text("Dark mode and a login fix."));
    grade(&w, 0.9);
    w.fake.route(CRYSTALLIZE, Reply::text(DRAFT));
    let record = w.run(&["ask", "--json", QUESTION]).expect(0).json();
    assert_eq!(record["evaluation"]["score"].as_f64(), Some(0.9_f32 as f64));
    assert!(record["learned_skill"].is_null());

    // Two calls, graded 0.5.
    two_tool_turn(&w);
    grade(&w, 0.5);
    let record = w.run(&["ask", "--json", QUESTION]).expect(0).json();
    assert_eq!(record["evaluation"]["score"].as_f64(), Some(0.5));
    assert!(record["learned_skill"].is_null());
    assert_eq!(requests_with(&w, CRYSTALLIZE), 0);
    assert!(skill_folders(&w).is_empty());

    // `[agent] learn = false`: nothing learned even from a perfect task.
    let w = world("crystallize-off");
    w.config("[agent]\nlearn = false\n");
    two_tool_turn(&w);
    grade(&w, 1.0);
    w.fake.route(CRYSTALLIZE, Reply::text(DRAFT));
    w.run(&["ask", "--json", QUESTION]).expect(0);
    assert_eq!(requests_with(&w, CRYSTALLIZE), 0);
    assert!(skill_folders(&w).is_empty());
}

#[test]
fn a_garbage_draft_saves_nothing_and_the_turn_still_answers() {
    let w = world("crystallize-garbage");
    two_tool_turn(&w);
    grade(&w, 0.9);
    w.fake.route(
        CRYSTALLIZE,
        Reply::text("Sure! I would call it release notes helper. ---"),
    );
    let run = w.run(&["ask", "--json", QUESTION]).expect(0);
    let record = run.json();
    assert_eq!(
        record["reply"],
        "The release adds dark mode and fixes login."
    );
    assert!(record["learned_skill"].is_null());
    assert_eq!(requests_with(&w, CRYSTALLIZE), 1);
    assert!(skill_folders(&w).is_empty(), "{:?}", skill_folders(&w));
    assert!(
        run.stderr.contains("not a usable skill"),
        "the problem is noted:\n{}",
        run.stderr
    );

    // A draft named like a bundled skill gets another name; the bundled one stays.
    two_tool_turn(&w);
    grade(&w, 0.9);
    w.fake.route(
        CRYSTALLIZE,
        Reply::text(DRAFT.replace("release-notes-digest", "review-diff")),
    );
    let record = w.run(&["ask", "--json", QUESTION]).expect(0).json();
    assert_eq!(record["skill_pending"], "review-diff-2");
    assert_eq!(source_of(&w, "review-diff").as_deref(), Some("bundled"));
    assert_eq!(source_of(&w, "review-diff-2").as_deref(), Some("pending"));
}

/// A low score alone is learned from once, by the reflection; a low score on a turn
/// whose call failed also gets its lesson, which names the failed call the
/// reflection does not see.
#[test]
fn a_low_score_with_a_failed_call_gets_a_lesson_besides_the_reflection() {
    let w = World::new("lesson-low");
    w.workspace();
    w.fake
        .push(tool_call("read_file", r#"{"path": "budget-q3.csv"}"#));
    w.fake
        .push(Reply::text("I could not find the quarterly budget file."));
    w.fake.route(
        POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.1, "reason": "no answer"}, "memories": []}"#),
    );
    w.fake.route(
        REFLECT,
        Reply::text(r#"{"lesson": "List the workspace before reading a file."}"#),
    );
    w.fake.route(
        LESSON,
        Reply::text(
            r#"{"lesson": "Budget files are not at guessed paths; list first.", "tag": "general"}"#,
        ),
    );
    let record = w
        .run(&["ask", "--json", "Sum the quarterly budget spreadsheet"])
        .expect(0)
        .json();
    assert_eq!(record["tools"][0]["is_error"], true, "{record:#}");
    assert_eq!(
        (requests_with(&w, REFLECT), requests_with(&w, LESSON)),
        (1, 1)
    );
    assert!(record["lesson"].as_str().is_some(), "{record:#}");
    assert!(record["reflection"].as_str().is_some(), "{record:#}");
}

#[test]
fn a_failed_task_leaves_a_lesson_that_similar_questions_receive() {
    let w = World::new("lesson");
    w.workspace();
    w.fake
        .push(tool_call("read_file", r#"{"path": "budget-q3.csv"}"#));
    w.fake
        .push(Reply::text("I could not find the quarterly budget file."));
    w.fake.route(
        LESSON,
        Reply::text(
            r#"{"lesson": "The quarterly budget spreadsheet was not at the guessed path; list the workspace before reading budget files.", "tag": "general"}"#,
        ),
    );
    let record = w
        .run(&["ask", "--json", "Sum the quarterly budget spreadsheet"])
        .expect(0)
        .json();
    assert_eq!(record["tools"][0]["is_error"], true, "{record:#}");
    let lesson = record["lesson"].as_str().expect("a lesson").to_string();
    assert!(lesson.starts_with("Lesson [general]: "), "{lesson}");
    assert_eq!(requests_with(&w, LESSON), 1);
    let lesson_request = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.body.contains(LESSON))
        .unwrap();
    assert!(
        lesson_request.body.contains("FAILED"),
        "the failure is shown"
    );

    let memories = w.run(&["memory", "list", "--json"]).expect(0).json();
    let saved: Vec<&serde_json::Value> = memories
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&"lesson".into()))
        })
        .collect();
    assert_eq!(saved.len(), 1, "{memories:#}");
    assert_eq!(saved[0]["content"], lesson.as_str());

    // A similar task later: the lesson is in its prompt.
    w.fake.push(Reply::text("Listing first."));
    w.run(&["ask", "What is in the quarterly budget spreadsheet?"])
        .expect(0);
    let similar = system_text(w.main_requests().last().unwrap());
    assert!(
        similar.contains("list the workspace before reading budget files"),
        "{similar}"
    );

    // An unrelated question: it is not.
    w.fake.push(Reply::text("Paris."));
    w.run(&["ask", "What is the capital of France?"]).expect(0);
    let unrelated = system_text(w.main_requests().last().unwrap());
    assert!(!unrelated.contains("Lesson"), "{unrelated}");

    // The same lesson learned again merges into the one memory.
    w.fake
        .push(tool_call("read_file", r#"{"path": "budget-q3.csv"}"#));
    w.fake
        .push(Reply::text("I could not find the quarterly budget file."));
    w.fake.route(
        LESSON,
        Reply::text(
            r#"{"lesson": "The quarterly budget spreadsheet was not at the guessed path; list the workspace before reading budget files.", "tag": "general"}"#,
        ),
    );
    w.run(&["ask", "--json", "Sum the quarterly budget spreadsheet"])
        .expect(0);
    let memories = w.run(&["memory", "list", "--json"]).expect(0).json();
    let lessons = memories
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&"lesson".into()))
        })
        .count();
    assert_eq!(lessons, 1, "{memories:#}");
}

#[test]
fn a_running_serve_lists_and_offers_a_skill_it_just_learned() {
    use std::time::{Duration, Instant};
    let w = world("crystallize-serve");
    let s = support::serve::Server::start(&w, &[]);
    two_tool_turn(&w);
    grade(&w, 0.9);
    w.fake.route(CRYSTALLIZE, Reply::text(DRAFT));
    let body = serde_json::json!({"model": "evolve", "messages": [
        {"role": "user", "content": QUESTION}]})
    .to_string();
    let r = s.post("/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    // The skill is drafted after the answer, in the background; the task read a file,
    // so it waits for the person's review and is not offered until approved.
    let pending = w.home.join("skills/.pending/release-notes-digest/SKILL.md");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pending.is_file() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(pending.is_file(), "the draft waits for review");
    let list = s.get("/v1/skills").json();
    assert!(
        !list["data"]
            .as_array()
            .is_some_and(|d| d.iter().any(|k| k["name"] == "release-notes-digest")),
        "{list:#}"
    );
    w.run(&["skills", "approve", "release-notes-digest"])
        .expect(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    let learned = loop {
        let list = s.get("/v1/skills").json();
        let found = list["data"]
            .as_array()
            .and_then(|d| d.iter().find(|k| k["name"] == "release-notes-digest"))
            .map(|k| k["source"].clone());
        if found.is_some() || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(learned, Some("learned".into()));
    let one = s.get("/v1/skills/release-notes-digest").json();
    assert!(one["body"].as_str().is_some_and(|b| b.contains("list_dir")));
    // The next similar request is offered the skill without a restart.
    w.fake.push(Reply::text("Using the digest."));
    let r = s.post("/v1/chat/completions", &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let sys = system_text(w.main_requests().last().unwrap());
    assert!(sys.contains("release-notes-digest"), "{sys}");
    s.stop();
}

#[test]
fn a_chinese_conversation_gets_its_lesson_in_chinese() {
    let w = World::new("lesson-zh");
    w.workspace();
    w.fake
        .push(tool_call("read_file", r#"{"path": "预算.csv"}"#));
    w.fake.push(Reply::text("找不到预算文件。"));
    w.fake.route(
        LESSON,
        Reply::text(r#"{"lesson": "读取预算文件之前先列出工作区的文件。", "tag": "general"}"#),
    );
    let record = w
        .run(&["ask", "--json", "帮我汇总季度预算表格"])
        .expect(0)
        .json();
    assert_eq!(
        record["lesson"], "教训 [general]：读取预算文件之前先列出工作区的文件。",
        "{record:#}"
    );
    let memories = w.run(&["memory", "list", "--json"]).expect(0).json();
    assert!(
        memories
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"] == record["lesson"]),
        "{memories:#}"
    );
}
