//! The agent end to end: the built `evolve` binary against the in-repo fake model,
//! asserting what a user sees (stdout, exit codes, files) and what the agent sent.

mod support;

use std::time::Duration;

use support::*;

#[test]
fn ask_prints_the_answer_and_json_gives_the_turn_record() {
    let w = World::new("ask-json");
    w.fake
        .push(Reply::Text("Paris is the capital of France.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(r#"{"grade": {"score": 0.9, "reason": "correct"}}"#.into()),
    );
    let run = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0);
    let record = run.json();
    assert_eq!(record["reply"], "Paris is the capital of France.");
    assert!(record["session"]
        .as_str()
        .is_some_and(|s| s.starts_with('s')));
    assert_eq!(record["turn"], 1);
    assert!((record["evaluation"]["score"].as_f64().unwrap() - 0.9).abs() < 1e-6);
    assert!(
        record["usage"]["main"]["completion_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(record["tools"].as_array().unwrap().is_empty());

    w.fake.push(Reply::Text("Berlin.".into()));
    let plain = w.run(&["ask", "And Germany?"]).expect(0);
    assert_eq!(plain.stdout, "Berlin.\n", "stdout is the answer alone");
    assert!(
        !plain.stdout.contains("evolve ["),
        "logs never go to stdout"
    );
}

#[test]
fn an_unusable_grade_leaves_evaluation_null_and_names_the_problem_in_the_record() {
    let w = World::new("ask-json-no-grade");
    w.fake.push(Reply::Text("Paris.".into()));
    w.fake
        .route(POST_TURN, Reply::Text("I think it was fine.".into()));
    let record = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0)
        .json();
    assert_eq!(record["reply"], "Paris.");
    let fields = record.as_object().expect("an object");
    assert!(
        fields
            .get("evaluation")
            .is_some_and(serde_json::Value::is_null),
        "a stable record has \"evaluation\": null: {record:#}"
    );
    let problems = record["problems"].as_array().expect("problems listed");
    assert!(
        problems.iter().any(|p| p
            .as_str()
            .unwrap_or_default()
            .starts_with("evaluation: no score")),
        "{record:#}"
    );

    // A usable grade: the evaluation, and no problem about it (the list is still there:
    // the fake's other background replies are not JSON).
    w.fake.push(Reply::Text("Berlin.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(r#"{"grade": {"score": 0.8, "reason": "right"}}"#.into()),
    );
    let record = w.run(&["ask", "--json", "And Germany?"]).expect(0).json();
    assert!((record["evaluation"]["score"].as_f64().unwrap() - 0.8).abs() < 1e-6);
    let problems = record["problems"].as_array().expect("problems listed");
    assert!(
        !problems
            .iter()
            .any(|p| p.as_str().unwrap_or_default().starts_with("evaluation")),
        "{record:#}"
    );
}

#[test]
fn a_memory_told_in_one_run_is_in_the_prompt_of_the_next() {
    let w = World::new("memory-next");
    w.fake
        .push(Reply::Text("Nice, I will remember that.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(r#"{"memories": [{"content": "The user's cat is called Miso", "category": "fact", "importance": 4, "tags": ["cat"]}]}"#.into()),
    );
    w.run(&["ask", "My cat is called Miso."]).expect(0);
    w.fake.push(Reply::Text("Your cat is called Miso.".into()));
    w.run(&["ask", "What is my cat called?"]).expect(0);
    let mains = w.main_requests();
    let last = mains.last().expect("a main request");
    assert!(
        system_text(last).contains("Miso"),
        "the memory is in the second run's prompt:\n{}",
        system_text(last)
    );
    let list = w.run(&["memory", "list", "--json"]).expect(0);
    assert!(list.stdout.contains("Miso"));
}

#[test]
fn an_extracted_memory_of_an_unknown_category_is_general() {
    let w = World::new("extract-unknown-category");
    w.fake.push(Reply::Text("Noted.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(
            r#"{"memories": [{"content": "The user collects stamps", "category": "hobby"}]}"#
                .into(),
        ),
    );
    w.run(&["ask", "I collect stamps."]).expect(0);
    let listed = w.run(&["memory", "list", "--json"]).expect(0).json();
    let m = &listed[0];
    assert_eq!(m["content"], "The user collects stamps", "{listed:#}");
    assert_eq!(
        (m["category"].clone(), m["priority"].clone()),
        (serde_json::json!("general"), serde_json::json!(3))
    );
}

/// Unix seconds now.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `2026-05-01T09:00:00Z` for Unix seconds.
fn rfc3339(t: i64) -> String {
    // Civil from days (Howard Hinnant's algorithm), UTC.
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[test]
fn an_extracted_reminder_keeps_the_expiry_the_model_gives() {
    let w = World::new("extract-expiry");
    let due = (unix_now() + 3 * 86_400) / 60 * 60;
    w.fake.push(Reply::Text("I will remind you.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(
            serde_json::json!({"memories": [{
                "content": "The user must renew the passport", "category": "reminder",
                "importance": 4, "expires_at": rfc3339(due),
            }]})
            .to_string(),
        ),
    );
    w.run(&["ask", "Remind me to renew my passport within three days."])
        .expect(0);
    let listed = w.run(&["memory", "list", "--json"]).expect(0).json();
    assert_eq!(listed[0]["category"], "reminder", "{listed:#}");
    assert_eq!(listed[0]["expires_at"], due, "{listed:#}");
    // The extractor is asked for the expiry and told what time it is.
    let asked = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.mentions(POST_TURN))
        .expect("an extraction request");
    assert!(all_text(&asked.json).contains("expires_at"));
    let input = asked.last_user().expect("the exchange");
    assert!(input.starts_with("Current time: "), "{input}");
}

#[test]
fn a_bad_or_past_expiry_is_dropped_with_a_reason_and_the_memory_kept() {
    let w = World::new("extract-bad-expiry");
    w.fake.push(Reply::Text("Noted.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(
            serde_json::json!({"memories": [
                {"content": "The user has a dentist appointment", "category": "reminder",
                 "expires_at": "next tuesday-ish"},
                {"content": "The user had to pay the rent", "category": "reminder",
                 "expires_at": rfc3339(unix_now() - 86_400)},
            ]})
            .to_string(),
        ),
    );
    let run = w
        .run(&["ask", "Dentist soon; rent was due yesterday."])
        .expect(0);
    let listed = w.run(&["memory", "list", "--json"]).expect(0).json();
    let listed = listed.as_array().expect("a list");
    assert_eq!(listed.len(), 2, "{listed:#?}");
    assert!(
        listed.iter().all(|m| m["expires_at"].is_null()),
        "{listed:#?}"
    );
    for why in ["next tuesday-ish", "already past"] {
        assert!(run.stderr.contains(why), "{why:?} in {}", run.stderr);
    }
}

#[test]
fn a_chinese_fact_is_found_by_a_chinese_question() {
    let w = World::new("zh");
    w.run(&[
        "memory",
        "add",
        "用户住在上海浦东，喜欢喝龙井茶",
        "--category",
        "fact",
    ])
    .expect(0);
    w.run(&[
        "memory",
        "add",
        "The user prefers short answers",
        "--category",
        "preference",
    ])
    .expect(0);
    w.fake.push(Reply::Text("你住在上海浦东。".into()));
    w.run(&["ask", "我住在哪个城市？上海吗"]).expect(0);
    let mains = w.main_requests();
    let sys = system_text(mains.last().unwrap());
    assert!(
        sys.contains("上海浦东"),
        "the Chinese memory was selected:\n{sys}"
    );
}

#[test]
fn l1_and_l2_tools_run_and_their_results_reach_the_model() {
    let w = World::new("tools-run");
    std::fs::write(w.workspace().join("notes.txt"), "the launch code is 4711\n").unwrap();
    w.fake
        .push(tool_call("read_file", r#"{"path": "notes.txt"}"#));
    w.fake.push(tool_call("get_time", "{}"));
    w.fake.push(Reply::Text("The code is 4711.".into()));
    let record = w
        .run(&["ask", "--json", "What is in notes.txt?"])
        .expect(0)
        .json();
    let tools = record["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "read_file");
    assert_eq!(tools[0]["ran"], true);
    assert_eq!(tools[0]["level"], "L2");
    assert_eq!(tools[1]["name"], "get_time");
    assert_eq!(tools[1]["ran"], true);
    let mains = w.main_requests();
    assert_eq!(mains.len(), 3);
    let second = all_text(&mains[1]);
    assert!(second.contains("4711"), "the file's text reached the model");
    // Offered tools carry JSON schemas; assistant tool-call messages never send null.
    assert!(mains[0]["tools"].as_array().is_some_and(|t| !t.is_empty()));
    for m in mains[1]["messages"].as_array().unwrap() {
        assert!(!m["content"].is_null(), "content is never null: {m}");
    }
}

#[test]
fn l3_is_refused_in_ask_and_allowed_with_yes() {
    let w = World::new("l3");
    let target = w.workspace().join("out.txt");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "out.txt", "content": "hello"}"#,
    ));
    w.fake
        .push(Reply::Text("I could not write the file.".into()));
    let run = w.run(&["ask", "Write hello to out.txt"]).expect(4);
    assert!(
        run.stdout.contains("I could not write the file."),
        "the answer is still printed"
    );
    assert!(
        run.stderr.contains("write_file"),
        "stderr names the refused call: {}",
        run.stderr
    );
    assert!(!target.exists(), "a refused call never runs");

    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "out.txt", "content": "hello"}"#,
    ));
    w.fake.push(Reply::Text("Done.".into()));
    w.run(&["ask", "--yes", "Write hello to out.txt"]).expect(0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello");
}

#[test]
fn l5_is_always_refused_and_never_executed() {
    let w = World::new("l5");
    let marker = w.workspace().join("pwned");
    for args in [
        vec!["ask", "--yes", "clean up"],
        vec!["ask", "--allow", "L3", "clean up"],
    ] {
        w.fake.push(tool_call(
            "shell",
            &format!(r#"{{"command": "touch {} && rm -rf /"}}"#, marker.display()),
        ));
        w.fake.push(Reply::Text("I will not do that.".into()));
        let run = w.run(&args).expect(0);
        assert!(run.stdout.contains("I will not do that."));
        assert!(!marker.exists(), "an L5 call never runs");
    }
    let mains = w.main_requests();
    assert!(all_text(&mains[1]).contains("L5"), "the model is told why");
    let usage = w.run(&["ask", "--allow", "L4", "x"]).expect(2);
    assert!(usage.stderr.contains("L4"));
}

#[test]
fn a_path_escaping_the_workspace_is_refused() {
    let w = World::new("escape");
    let outside = w.home.join("secret.txt");
    std::fs::write(&outside, "top secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, w.workspace().join("link.txt")).unwrap();
    w.fake
        .push(tool_call("read_file", r#"{"path": "../secret.txt"}"#));
    w.fake
        .push(tool_call("read_file", r#"{"path": "link.txt"}"#));
    w.fake.push(Reply::Text("I cannot read that.".into()));
    let record = w
        .run(&["ask", "--yes", "--json", "read the secret"])
        .expect(0)
        .json();
    let mains = w.main_requests();
    let seen = all_text(mains.last().unwrap());
    assert!(
        !seen.contains("top secret"),
        "nothing outside the workspace reaches the model"
    );
    let tools = record["tools"].as_array().unwrap();
    assert_eq!(
        tools[0]["ran"], false,
        "../ is refused before running: {}",
        tools[0]
    );
}

#[test]
fn retries_succeed_after_two_server_errors() {
    let w = World::new("retry");
    w.fake.push(Reply::Status(
        500,
        r#"{"error":{"message":"overloaded"}}"#.into(),
    ));
    w.fake.push(Reply::Status(502, "bad gateway".into()));
    w.fake.push(Reply::Text("Third time lucky.".into()));
    let run = w.run(&["ask", "hello"]).expect(0);
    assert_eq!(run.stdout.trim(), "Third time lucky.");
}

#[test]
fn an_unreachable_model_exits_3_naming_the_url() {
    let w = World::new("unreachable");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let run = Run::from(
        w.command(&["ask", "hello"])
            .env("OPENAI_BASE_URL", &url)
            .output()
            .unwrap(),
    )
    .expect(3);
    assert!(
        run.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn a_garbage_extraction_reply_does_not_crash_and_nothing_is_lost() {
    let w = World::new("garbage");
    w.fake.push(Reply::Text("Sure.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text("great answer!!! memories: {{{ not json ]]".into()),
    );
    let record = w
        .run(&["ask", "--json", "Remember that I like tea"])
        .expect(0)
        .json();
    assert_eq!(record["reply"], "Sure.");
    let session = record["session"].as_str().unwrap().to_string();
    let shown = w.run(&["sessions", "show", &session]).expect(0);
    assert!(shown.stdout.contains("Remember that I like tea"));
    assert!(shown.stdout.contains("Sure."));
}

#[test]
fn a_session_continues_with_its_history() {
    let w = World::new("session");
    w.fake
        .push(Reply::Text("Noted: the project is called Falcon.".into()));
    let record = w
        .run(&["ask", "--json", "Our project is called Falcon."])
        .expect(0)
        .json();
    let sid = record["session"].as_str().unwrap().to_string();
    w.fake.push(Reply::Text("Falcon.".into()));
    let second = w
        .run(&["ask", "--json", "--session", &sid, "What is it called?"])
        .expect(0)
        .json();
    assert_eq!(second["turn"], 2);
    assert_eq!(second["session"], sid.as_str());
    let mains = w.main_requests();
    assert!(all_text(mains.last().unwrap()).contains("Our project is called Falcon."));
    let missing = w.run(&["ask", "--session", "snosuchsession", "hi"]);
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("snosuchsession"));
}

#[test]
fn the_question_can_come_from_stdin() {
    let w = World::new("stdin");
    w.fake.push(Reply::Text("42".into()));
    let run = w
        .run_stdin(&["ask", "-"], "What is six times seven?\n")
        .expect(0);
    assert_eq!(run.stdout.trim(), "42");
    let mains = w.main_requests();
    assert!(all_text(&mains[0]).contains("What is six times seven?"));
}

#[test]
fn kill_9_during_an_ask_keeps_every_earlier_memory() {
    let w = World::new("kill");
    // Distinct words each, so the ingest rule keeps them apart (similar ones merge).
    for i in 0..20 {
        w.run(&[
            "memory",
            "add",
            &format!("garden{i} tulip{i} rose{i} fern{i}"),
        ])
        .expect(0);
    }
    w.fake.push(Reply::Delay(
        Duration::from_secs(30),
        Box::new(Reply::Text("late".into())),
    ));
    let mut child = w
        .command(&["ask", "tell me about the garden"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        w.fake.wait_requests(1, Duration::from_secs(20)),
        "the ask reached the model"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let list = w.run(&["memory", "list", "--json"]).expect(0);
    for i in 0..20 {
        assert!(
            list.stdout.contains(&format!("garden{i} tulip{i}")),
            "memory {i} survived:\n{}",
            list.stdout
        );
    }
    w.fake.push(Reply::Text("The garden is fine.".into()));
    w.run(&["ask", "and now?"]).expect(0);
}

#[test]
fn chat_approves_l3_once_and_refuses_l4_on_the_first_no() {
    let w = World::new("chat");
    w.config("[permission]\nshell_level = \"L4\"\n");
    let file = w.workspace().join("approved.txt");
    let marker = w.workspace().join("refused.txt");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "approved.txt", "content": "ok"}"#,
    ));
    w.fake.push(Reply::Text("Written.".into()));
    w.fake
        .push(tool_call("shell", r#"{"command": "touch refused.txt"}"#));
    w.fake.push(Reply::Text("Not run.".into()));
    let run = w
        .run_stdin(
            &["chat"],
            "write the file please\nyes\nnow create refused.txt with the shell\nno\n/quit\n",
        )
        .expect(0);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "ok",
        "L3 ran after one yes"
    );
    assert!(!marker.exists(), "L4 refused on the first no");
    assert!(run.stdout.contains("Written."), "{}", run.stdout);
    assert!(run.stdout.contains("Not run."));
    assert!(
        run.stdout.contains("write_file"),
        "the prompt names the tool"
    );
    assert!(
        run.stdout.contains("touch refused.txt"),
        "the prompt shows the exact arguments"
    );
}

#[test]
fn chat_asks_l4_twice_and_streams_the_answer() {
    let w = World::new("chat-l4");
    w.config("[permission]\nshell_level = \"L4\"\n");
    let marker = w.workspace().join("twice.txt");
    w.fake
        .push(tool_call("shell", r#"{"command": "touch twice.txt"}"#));
    w.fake.push(Reply::Text("Created it for you.".into()));
    let run = w
        .run_stdin(&["chat"], "create twice.txt\nyes\nyes\n/quit\n")
        .expect(0);
    assert!(marker.exists(), "L4 ran after two yes answers");
    assert!(run.stdout.contains("Created it for you."));
    let mains = w.main_requests();
    assert_eq!(mains[0]["stream"], true, "chat streams");
}

#[test]
fn a_high_score_teaches_a_style_note_that_later_prompts_carry() {
    let w = World::new("style");
    w.fake.push(Reply::Text("Short answer: yes.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(r#"{"grade": {"score": 0.95, "reason": "concise"}}"#.into()),
    );
    w.fake.route(
        STYLE,
        Reply::Text(r#"{"note": "Keep answers to one sentence"}"#.into()),
    );
    w.run(&["ask", "Is water wet?"]).expect(0);
    w.fake.push(Reply::Text("Yes.".into()));
    w.run(&["ask", "Is fire hot?"]).expect(0);
    let mains = w.main_requests();
    assert!(
        system_text(mains.last().unwrap()).contains("Keep answers to one sentence"),
        "the style note is in the next prompt:\n{}",
        system_text(mains.last().unwrap())
    );
}

/// Two asks that teach `notes` as style notes (the evaluator rates both highly).
fn learn_style_notes(w: &World, notes: &[&str]) {
    for (i, note) in notes.iter().enumerate() {
        w.fake.push(Reply::Text(format!("Answer {i}.")));
        w.fake.route(
            POST_TURN,
            Reply::Text(r#"{"grade": {"score": 0.95, "reason": "good"}}"#.into()),
        );
        w.fake.route(
            STYLE,
            Reply::Text(serde_json::json!({ "note": note }).to_string()),
        );
        w.run(&["ask", &format!("Question {i}?")]).expect(0);
    }
}

/// A session's style shows in its first answer graded high: the style note is asked
/// once per session, not after every good answer; a new session asks again.
#[test]
fn a_style_note_is_asked_once_a_session_not_after_every_good_answer() {
    let w = World::new("style-once");
    let styles = || {
        w.fake
            .chat_requests()
            .iter()
            .filter(|r| r.body.contains(STYLE))
            .count()
    };
    // Each turn's answer, graded high; a style note ready for whoever asks.
    let graded_high = |answer: &str| {
        w.fake.push(Reply::Text(answer.into()));
        w.fake.route(
            POST_TURN,
            Reply::Text(r#"{"grade": {"score": 0.95, "reason": "good"}}"#.into()),
        );
        w.fake.route(
            STYLE,
            Reply::Text(r#"{"note": "Keep answers to one sentence"}"#.into()),
        );
    };
    graded_high("Answer one.");
    let first = w
        .run(&["ask", "--json", "First question?"])
        .expect(0)
        .json();
    assert_eq!(styles(), 1);
    let sid = first["session"].as_str().unwrap().to_string();
    for i in 2..=3 {
        graded_high(&format!("Answer {i}."));
        let next = w
            .run(&[
                "ask",
                "--json",
                "--session",
                &sid,
                &format!("Question {i}?"),
            ])
            .expect(0)
            .json();
        assert!(
            (next["evaluation"]["score"].as_f64().unwrap_or(0.0) - 0.95).abs() < 1e-6,
            "{next:#}"
        );
    }
    assert_eq!(
        styles(),
        1,
        "no style call after the session's later good answers"
    );
    graded_high("Answer four.");
    w.run(&["ask", "Another session?"]).expect(0);
    assert_eq!(styles(), 2, "a new session asks again");
    let notes = w
        .run(&["memory", "style", "list", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        notes,
        serde_json::json!([{"n": 1, "note": "Keep answers to one sentence"}])
    );
}

#[test]
fn style_notes_are_listed_removed_and_cleared_from_the_command_line() {
    let w = World::new("style-cli");
    learn_style_notes(&w, &["Keep answers to one sentence", "Use metric units"]);
    let list = w.run(&["memory", "style", "list"]).expect(0);
    for line in ["1. Keep answers to one sentence", "2. Use metric units"] {
        assert!(list.stdout.contains(line), "{line:?} in {}", list.stdout);
    }
    let json = w
        .run(&["memory", "style", "list", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        json,
        serde_json::json!([
            {"n": 1, "note": "Keep answers to one sentence"},
            {"n": 2, "note": "Use metric units"},
        ])
    );
    let missing = w.run(&["memory", "style", "rm", "3"]).expect(2);
    assert!(
        missing.stderr.contains("no style note 3"),
        "{}",
        missing.stderr
    );
    let rm = w.run(&["memory", "style", "rm", "1"]).expect(0);
    assert!(
        rm.stdout
            .contains("removed style note 1: Keep answers to one sentence"),
        "{}",
        rm.stdout
    );
    w.fake.push(Reply::Text("Fine.".into()));
    w.run(&["ask", "How far is it?"]).expect(0);
    let system = system_text(w.main_requests().last().unwrap());
    assert!(!system.contains("one sentence"), "{system}");
    assert!(system.contains("Use metric units"), "{system}");

    let clear = w.run(&["memory", "style", "clear"]).expect(0);
    assert!(
        clear.stdout.contains("removed 1 style note"),
        "{}",
        clear.stdout
    );
    let empty = w.run(&["memory", "style", "list"]).expect(0);
    assert!(empty.stdout.contains("no style notes"), "{}", empty.stdout);
    w.fake.push(Reply::Text("Fine.".into()));
    w.run(&["ask", "And back?"]).expect(0);
    let system = system_text(w.main_requests().last().unwrap());
    assert!(!system.contains("liked in earlier answers"), "{system}");
}

#[test]
fn a_low_score_triggers_a_reflection_whose_lesson_is_remembered() {
    let w = World::new("reflect");
    w.fake
        .push(Reply::Text("I am not sure about the deploy.".into()));
    w.fake.route(
        POST_TURN,
        Reply::Text(r#"{"grade": {"score": 0.2, "reason": "vague"}}"#.into()),
    );
    w.fake.route(
        REFLECT,
        Reply::Text(r#"{"lesson": "Before answering deploy questions, read deploy.md"}"#.into()),
    );
    let record = w
        .run(&["ask", "--json", "How do we deploy?"])
        .expect(0)
        .json();
    assert!((record["evaluation"]["score"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert_eq!(
        record["reflection"],
        "Before answering deploy questions, read deploy.md"
    );
    // One call learns from the low score: the reflection, no lesson besides it.
    let asked = |marker: &str| {
        w.fake
            .chat_requests()
            .iter()
            .filter(|r| r.body.contains(marker))
            .count()
    };
    assert_eq!((asked(REFLECT), asked(LESSON)), (1, 0));
    assert!(record["lesson"].is_null(), "{record:#}");
    let list = w.run(&["memory", "list", "--json"]).expect(0);
    assert!(list.stdout.contains("read deploy.md"), "{}", list.stdout);
    w.fake.push(Reply::Text("Reading deploy.md first.".into()));
    w.run(&["ask", "Deploy the new version please"]).expect(0);
    let mains = w.main_requests();
    assert!(
        system_text(mains.last().unwrap()).contains("read deploy.md"),
        "the lesson reaches a later prompt on a similar task"
    );
}
