//! The agent under attack and under faults, end to end: a model trying to get a call
//! past the permission check or to spoof an approval prompt, secrets in logs and
//! displays, failed model calls, made-up tools, a chat and a cron `ask` at the same
//! time, L2 overflow without a summary. Each test was written to fail on a defect an
//! adversarial review found, and pins the fix.

mod support;

use std::time::Duration;

use support::*;

const KEY: &str = "sk-REVIEWKEY0123456789abcdefXYZ";

/// The hex dump of ureq's trace log spells the `Authorization` header out over several
/// lines; rebuild the ASCII column so a split key is found too.
fn ascii_column(stderr: &str) -> String {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("evolve [trace] "))
        .filter_map(|l| l.split_once("  ").map(|(_, ascii)| ascii))
        .collect::<Vec<_>>()
        .join("")
}

#[test]
fn trace_logs_never_show_the_api_key() {
    let w = World::new("rv-trace");
    w.fake.push(Reply::Text("hello".into()));
    let run = Run::from(
        w.command(&["ask", "hi"])
            .env("OPENAI_API_KEY", KEY)
            .env("EVOLVE_LOG", "trace")
            .output()
            .unwrap(),
    )
    .expect(0);
    let tail = &KEY[KEY.len() - 12..];
    assert!(!run.stderr.contains(KEY), "the key is in the log");
    let joined = ascii_column(&run.stderr);
    assert!(
        !joined.contains(tail) && !run.stderr.contains(tail),
        "the API key is in the trace log (ureq's hex dump of the request headers):\n{}",
        joined
            .find("Bearer")
            .map(|i| joined[i..].chars().take(60).collect::<String>())
            .unwrap_or_default()
    );
}

#[test]
fn config_show_and_doctor_hide_a_password_in_the_base_url() {
    let w = World::new("rv-userinfo");
    w.config("[model]\nbase_url = \"http://alice:hunter2pass@127.0.0.1:9/v1\"\n");
    for args in [
        vec!["config", "show"],
        vec!["config", "show", "--json"],
        vec!["doctor"],
    ] {
        let run = Run::from(
            w.command(&args)
                .env_remove("OPENAI_BASE_URL")
                .output()
                .unwrap(),
        );
        assert!(
            !run.stdout.contains("hunter2pass") && !run.stderr.contains("hunter2pass"),
            "`evolve {}` prints the password of the base URL (the model client's errors strip it):\n{}{}",
            args.join(" "),
            run.stdout,
            run.stderr
        );
    }
}

#[test]
fn a_failed_ask_leaves_no_empty_session_behind() {
    let w = World::new("rv-no-msgs");
    // A cron job against a server that answers 400 (bad model name, …) every run.
    for _ in 0..3 {
        w.fake.push(Reply::Status(
            400,
            r#"{"error":{"message":"model not found"}}"#.into(),
        ));
        w.run(&["ask", "daily report: what changed in the repo?"])
            .expect(1);
    }
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    let empty: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["messages"] == 0)
        .collect();
    assert!(
        empty.is_empty(),
        "every failed ask left a session with no messages (the question itself is lost): {empty:?}"
    );
}

#[test]
fn a_failed_chat_turn_does_not_lose_the_question_or_split_the_session() {
    let w = World::new("rv-chat-fail");
    w.fake.push(Reply::Status(
        400,
        r#"{"error":{"message":"context too long"}}"#.into(),
    ));
    w.fake.push(Reply::Text("second answer".into()));
    let run = w
        .run_stdin(&["chat"], "first message zebra\nsecond message\n/quit\n")
        .expect(0);
    assert!(run.stdout.contains("second answer"), "{}", run.stdout);
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    let sessions = list.as_array().unwrap();
    assert_eq!(
        sessions.len(),
        1,
        "one chat became {} sessions (the failed first turn left an empty one): {list}",
        sessions.len()
    );
}

#[test]
fn a_tool_side_effect_is_recorded_even_when_the_next_model_call_fails() {
    let w = World::new("rv-side-effect");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "report.md", "content": "done"}"#,
    ));
    w.fake.push(Reply::Status(
        400,
        r#"{"error":{"message":"bad request"}}"#.into(),
    ));
    let run = w
        .run(&["ask", "--yes", "write the report to report.md"])
        .expect(1);
    assert!(w.workspace().join("report.md").exists(), "{}", run.stderr);
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    let sid = list[0]["id"].as_str().unwrap().to_string();
    let shown = w.run(&["sessions", "show", &sid]).expect(0);
    assert!(
        shown.stdout.contains("write the report") && shown.stdout.contains("write_file"),
        "the file was written but the session records neither the question nor the call:\n{}",
        shown.stdout
    );
}

#[test]
fn an_unknown_tool_name_is_not_a_permission_question() {
    // Small models invent tool names. In `ask` that must not become exit 4 ("needs a
    // person … allow with --yes"), and the model should hear "no such tool".
    let w = World::new("rv-unknown-tool");
    w.fake
        .push(tool_call("send_email", r#"{"to": "boss@example.com"}"#));
    w.fake.push(Reply::Text("I cannot send mail.".into()));
    let run = w.run(&["ask", "mail the boss"]);
    assert_eq!(
        run.code, 0,
        "a made-up tool name makes `ask` exit {} with: {}",
        run.code, run.stderr
    );
    let mains = w.main_requests();
    assert!(
        all_text(mains.last().unwrap()).contains("no tool named"),
        "the model is not told the tool does not exist:\n{}",
        all_text(mains.last().unwrap())
    );
}

#[test]
fn chat_does_not_ask_twice_to_run_a_tool_that_does_not_exist() {
    let w = World::new("rv-unknown-tool-chat");
    w.fake
        .push(tool_call("send_email", r#"{"to": "boss@example.com"}"#));
    w.fake.push(Reply::Text("I cannot send mail.".into()));
    let run = w
        .run_stdin(&["chat"], "mail the boss\nno\n/quit\n")
        .expect(0);
    assert!(
        !run.stdout.contains("Second confirmation") && !run.stdout.contains("Allow the tool"),
        "the user is asked to approve an L4 call of a tool that does not exist:\n{}",
        run.stdout
    );
}

#[test]
fn memory_add_dash_does_not_store_the_internal_stdin_marker() {
    let w = World::new("rv-dash");
    let run = w.run_stdin(&["memory", "add", "-"], "I like oolong\n");
    let list = w.run(&["memory", "list", "--json"]).expect(0);
    assert!(
        !list.stdout.contains("\\u0000stdin"),
        "`memory add -` (exit {}) stored main.rs's internal marker \"\\0stdin\" as a memory:\n{}",
        run.code,
        list.stdout
    );
}

#[test]
fn an_empty_answer_is_not_reported_as_success() {
    let w = World::new("rv-blank-answer");
    w.fake.push(Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: r#"{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}"#
            .into(),
    });
    let run = w.run(&["ask", "hello?"]);
    assert!(
        run.code != 0
            || run.stderr.to_lowercase().contains("empty answer")
            || run.stderr.to_lowercase().contains("empty reply"),
        "an empty answer exits 0 with an empty line on stdout and nothing said: {:?}",
        run.stdout
    );
}

#[test]
fn a_json_session_export_can_be_imported_back() {
    let w = World::new("rv-session-roundtrip");
    w.fake.push(Reply::Text("Noted: Falcon.".into()));
    let rec = w
        .run(&["ask", "--json", "Our project is called Falcon."])
        .expect(0)
        .json();
    let sid = rec["session"].as_str().unwrap().to_string();
    let file = w.home.join("session.json");
    let exported = w
        .run(&["sessions", "export", &sid, "--format", "json"])
        .expect(0);
    std::fs::write(&file, &exported.stdout).unwrap();
    let full = w.home.join("all.json");
    w.run(&["memory", "export", full.to_str().unwrap()])
        .expect(0);
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&full).unwrap()).unwrap();

    let fresh = World::new("rv-session-roundtrip-2");
    let imported = fresh.run(&["memory", "import", file.to_str().unwrap()]);
    let list = fresh.run(&["sessions", "list", "--json"]).expect(0);
    assert!(
        list.stdout.contains(&sid),
        "no way to restore an exported session: `memory import` of `sessions export --format json` exits {} ({}), and `memory export` holds {} sessions",
        imported.code,
        imported.stderr.trim(),
        all["sessions"].as_array().map_or(0, Vec::len)
    );
}

#[test]
fn l1_and_l2_history_do_not_repeat_a_turn() {
    let w = World::new("rv-history");
    w.fake.set_fallback(Reply::Echo);
    let first = w
        .run(&["ask", "--json", "question number1 about zebra1"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    for i in 2..=9 {
        w.run(&[
            "ask",
            "--session",
            &sid,
            &format!("question number{i} about zebra{i}"),
        ])
        .expect(0);
    }
    let mains = w.main_requests();
    let last = mains.last().unwrap();
    let text = serde_json::to_string(&last["messages"]).unwrap();
    for i in 1..=8 {
        let needle = format!("about zebra{i}\"");
        let n = text
            .matches(&format!("question number{i} about zebra{i}"))
            .count();
        assert!(
            n <= 2,
            "turn {i} appears {n} times in the 10th prompt ({needle})"
        );
    }
}

#[test]
fn a_hung_server_is_bounded_by_the_configured_timeouts() {
    let w = World::new("rv-hang");
    w.config("[model]\nmax_retries = 0\n[model.timeouts]\nfirst_byte = 2\noverall = 3\n");
    w.fake.push(Reply::Hang(Duration::from_secs(60)));
    let started = std::time::Instant::now();
    let run = w.run(&["ask", "hello"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
}

/// The permission check reads the `command` of a shell call with core's tolerant
/// scanner; the shell tool runs what core's JSON *repair* + serde make of the same text.
/// For single-quoted (repairable) arguments the two disagree, so the check can approve
/// `ls` while the tool runs something else. With the documented prefix example
/// (`command_prefixes = [["ls", "L2"]]`) that is an arbitrary command run headlessly,
/// without any approval.
#[test]
fn the_shell_level_is_computed_on_the_command_that_runs() {
    let w = World::new("rv-shell-mismatch");
    w.config("[permission]\ncommand_prefixes = [[\"ls\", \"L2\"]]\n");
    let marker = w.workspace().join("pwned");
    w.fake.push(tool_call(
        "shell",
        r#"{'command': 'touch pwned #, "command": "ls",'}"#,
    ));
    w.fake.push(Reply::Text("Listed.".into()));
    let record = w.run(&["ask", "--json", "list my files"]).json();
    assert!(
        !marker.exists(),
        "an unapproved command ran in a headless ask: {}",
        record["tools"]
    );
}

#[test]
fn chat_never_runs_an_unapproved_shell_command_through_a_prefix() {
    let w = World::new("rv-shell-mismatch-chat");
    w.config("[permission]\ncommand_prefixes = [[\"ls\", \"L2\"]]\n");
    let marker = w.workspace().join("pwned");
    w.fake.push(tool_call(
        "shell",
        r#"{'command': 'touch pwned #, "command": "ls",'}"#,
    ));
    w.fake.push(Reply::Text("Listed.".into()));
    let run = w.run_stdin(&["chat"], "list my files\n/quit\n").expect(0);
    assert!(
        !marker.exists(),
        "chat ran `touch pwned` without asking:\n{}",
        run.stdout
    );
}

/// Same root cause for the file tools: core escalates a secret file (`.env`) to L5, but
/// a JSON comment (removed by the repair the tool uses, unknown to core's scanner)
/// hides the real path from the check.
#[test]
fn a_secret_file_cannot_be_read_by_hiding_its_path_from_the_check() {
    let w = World::new("rv-secret-file");
    std::fs::write(w.workspace().join(".env"), "DB_PASSWORD=hunter2\n").unwrap();
    std::fs::write(w.workspace().join("notes.txt"), "hello\n").unwrap();
    w.fake.push(tool_call("read_file", r#"{"path": ".env"}"#));
    w.fake.push(tool_call(
        "read_file",
        r#"{/* "path": "notes.txt", "x": */ "path": ".env"}"#,
    ));
    w.fake.push(Reply::Text("done".into()));
    let record = w.run(&["ask", "--json", "read my notes"]).json();
    let tools = record["tools"].as_array().unwrap();
    assert_eq!(tools[0]["level"], "L5", "plain .env is L5: {}", tools[0]);
    let mains = w.main_requests();
    assert!(
        !all_text(mains.last().unwrap()).contains("hunter2"),
        "the .env content reached the model through an L2 call: {}",
        tools[1]
    );
}

/// The turn drops the oldest L2 entries from the stored ring at once and hands them to
/// the background worker to summarise; when that one cheap call fails (or `ask` stops
/// waiting), those turns are gone from L2 *and* never reach L3.
#[test]
fn turns_leaving_l2_are_not_lost_when_the_summary_call_fails() {
    let w = World::new("rv-l3-loss");
    w.config("[model]\nmax_retries = 0\n[history]\nl2_capacity = 3\nl2_overflow = 2\n");
    w.fake.set_fallback(Reply::Echo);
    // The first summary fails; every later one succeeds (echoes its input).
    // (Without this failure the same test passes: zebra1 reaches the prompt via L3.)
    w.fake
        .route(SUMMARIZE, Reply::Status(500, "summarizer down".into()));
    let first = w
        .run(&["ask", "--json", "turn one about zebra1"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    for i in 2..=10 {
        w.run(&["ask", "--session", &sid, &format!("turn about zebra{i}")])
            .expect(0);
    }
    let summaries: Vec<_> = w
        .fake
        .chat_requests()
        .into_iter()
        .filter(|r| r.body.contains(SUMMARIZE))
        .collect();
    assert!(summaries.len() >= 2, "summaries were asked for");
    let mains = w.main_requests();
    let last = all_text(mains.last().unwrap());
    assert!(
        last.contains("zebra1") && last.contains("zebra2"),
        "turns 1–2 left L2 for a summary that failed and are in no history level any more:\n{last}"
    );
}

/// redb's file lock is held for the whole life of `evolve chat`: a cron `ask` (or any
/// `memory add`) while a chat window is open fails at once with exit 1.
#[test]
fn a_cron_ask_works_while_a_chat_is_open() {
    let w = World::new("rv-lock");
    let mut chat = w
        .command(&["chat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Give the chat time to open the store and wait at its prompt.
    std::thread::sleep(Duration::from_millis(700));
    w.fake.push(Reply::Text("cron answer".into()));
    let run = w.run(&["ask", "nightly question"]);
    drop(chat.stdin.take());
    let _ = chat.wait();
    assert_eq!(
        run.code,
        0,
        "with a chat open, `ask` fails: {}",
        run.stderr.trim()
    );
}

/// The approval prompt prints the model's arguments raw. A raw ESC in them (the model
/// writes `\u001b` in the outer JSON; core's repair accepts the control character in
/// the inner one, and the tool runs it) lets the model redraw the prompt line, so the
/// person approves a command they never saw.
#[test]
fn approval_prompts_do_not_pass_terminal_escapes_through() {
    let w = World::new("rv-ansi");
    w.config("[permission]\nshell_level = \"L4\"\n");
    let marker = w.workspace().join("pwned");
    // On a terminal: ESC[2K erases the line, ESC[1G returns to column 1, and the person
    // reads `Arguments: ls -la"}` twice; `sh` sees a comment after `#`.
    let hidden = "touch pwned # \u{1b}[2K\u{1b}[1GArguments: ls -la";
    let args = serde_json::json!({ "command": hidden }).to_string();
    // Make it raw inside the inner JSON (the escape as a byte, not `\u001b`).
    let args = args.replace("\\u001b", "\u{1b}");
    w.fake.push(tool_call("shell", &args));
    w.fake.push(Reply::Text("Listed.".into()));
    let run = w
        .run_stdin(&["chat"], "list the folder\nyes\nyes\n/quit\n")
        .expect(0);
    let ran = marker.exists();
    assert!(
        !run.stdout.contains('\u{1b}'),
        "the approval prompt carries raw terminal escapes from the model (the hidden command {}):\n{:?}",
        if ran { "ran after two yes" } else { "did not run" },
        run.stdout
    );
}
