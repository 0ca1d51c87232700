//! Chat and the shared store at their edges, end to end: `evolve chat` as a person uses it (Ctrl-C at the
//! prompt, at an approval question, during /reflect), several evolve processes sharing
//! one store, memories that must not be merged away, a damaged store, terminal escapes
//! in the listings, secrets through `ps e` and `git show`, and configurations the agent
//! must refuse. Each test was written to fail on a defect found by trying to break the
//! agent, and pins the fix.

mod support;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::*;

fn memory_list(w: &World) -> String {
    w.run(&["memory", "list", "--all"]).expect(0).stdout
}

/// Ctrl-C at the prompt ends chat with `_exit(130)` at once (cli/interrupt.rs). The
/// previous answer's background work — the memory extraction — is still running then
/// and is thrown away: "My cat is called Miso", answered a second ago, is never
/// remembered. (EOF waits for it; Ctrl-C, the usual way to leave, does not.)
#[test]
fn ctrl_c_at_the_prompt_keeps_what_the_last_answer_taught() {
    let w = World::new("edges-ctrlc-prompt");
    w.fake.push(Reply::text("Noted, your cat is Miso."));
    w.fake.route(
        POST_TURN,
        Reply::text(
            r#"{"memories": [{"content": "The user's cat is called Miso", "category": "fact", "importance": 4}]}"#,
        )
        .after(Duration::from_millis(1500)),
    );
    let mut chat = Chat::start(&w);
    chat.send("My cat is called Miso");
    chat.wait_for("Noted, your cat is Miso.");
    // The person is done and presses Ctrl-C at the prompt.
    std::thread::sleep(Duration::from_millis(300));
    chat.interrupt();
    let code = chat.finish();
    assert_eq!(code, Some(130), "Ctrl-C at the prompt leaves with 130");
    let list = memory_list(&w);
    assert!(
        list.contains("Miso"),
        "the memory the last answer produced was lost when Ctrl-C ended chat:\n{list}"
    );
}

/// Ctrl-C while chat waits for "yes/no" only sets the cancel flag; the question stays
/// and the next line still answers it, so a person who pressed Ctrl-C to stop and then
/// typed "yes" (or their next message starting with "ok") runs the call anyway.
#[test]
fn ctrl_c_at_an_approval_question_refuses_the_call() {
    let w = World::new("edges-ctrlc-approve");
    let file = w.workspace().join("notes.txt");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "notes.txt", "content": "overwritten"}"#,
    ));
    w.fake.push(Reply::text("Done."));
    let mut chat = Chat::start(&w);
    chat.send("tidy my notes");
    chat.wait_for("[yes/no/always]");
    chat.interrupt();
    std::thread::sleep(Duration::from_millis(300));
    chat.send("yes");
    std::thread::sleep(Duration::from_millis(800));
    let _ = chat.finish();
    assert!(
        !file.exists(),
        "the call ran although the person pressed Ctrl-C at its question"
    );
}

/// The store is opened per turn, but a turn includes the time a person takes to answer
/// an approval question: chat keeps redb's lock the whole time, so a cron `ask`, a
/// `memory add` or another chat fails after 30 s while a question waits on screen.
#[test]
fn a_chat_waiting_for_an_approval_does_not_lock_out_other_commands() {
    let w = World::new("edges-lock-approve");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "a.txt", "content": "x"}"#,
    ));
    w.fake.push(Reply::text("Written."));
    let mut chat = Chat::start(&w);
    chat.send("write a.txt");
    chat.wait_for("[yes/no/always]");
    // The person went for a coffee; cron runs meanwhile.
    let run = w.run(&["memory", "add", "added by a script"]);
    chat.send("no");
    let _ = chat.finish();
    assert_eq!(
        run.code,
        0,
        "with an approval question on screen, other commands cannot open the store: {}",
        run.stderr.trim()
    );
}

/// `ask` holds the store across its model calls: a second cron job that starts while
/// a slow local model is still thinking (first_byte allows 120 s) gives up after 30 s
/// with exit 1.
#[test]
fn two_asks_at_once_both_answer_when_the_model_is_slow() {
    let w = World::new("edges-lock-ask");
    w.fake
        .push(Reply::text("slow answer").after(Duration::from_secs(34)));
    w.fake.push(Reply::text("second answer"));
    let first = w
        .command(&["ask", "first job"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(w.fake.wait_chat_requests(1, Duration::from_secs(10)));
    let second = w.run(&["ask", "second job"]);
    let first = Run::from(first.wait_with_output().unwrap());
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        second.code,
        0,
        "a second ask fails while the first waits for its model: {}",
        second.stderr.trim()
    );
}

/// The ingest rule (keyword Jaccard ≥ 0.3 merges, the longer text is kept) makes two
/// different facts one: the second instruction is reported as "merged" and is gone.
#[test]
fn two_different_facts_are_both_remembered() {
    let w = World::new("edges-merge");
    for text in [
        "Never share my home address",
        "Never share my phone number",
        "The home wifi password is abc123",
        "The office wifi password is xyz789",
    ] {
        w.run(&["memory", "add", "--category", "instruction", text])
            .expect(0);
    }
    let list = memory_list(&w);
    for needle in ["home address", "phone number", "abc123", "xyz789"] {
        assert!(
            list.contains(needle),
            "`memory add` acknowledged a fact that is now nowhere ({needle}):\n{list}"
        );
    }
}

/// A damaged redb file makes redb panic (`unreachable`, `Invalid page type`, `Malformed
/// allocator state`): exit 101 with a panic message in debug, an abort in the release
/// build (panic = "abort"), instead of the clear "the store is damaged — move it aside"
/// the other damage gets.
#[test]
fn a_damaged_store_is_a_clear_error_not_a_panic() {
    let w = World::new("edges-damaged");
    w.run(&["memory", "add", "fact one about apples"]).expect(0);
    let path = w.home.join("evolve.redb");
    let mut bytes = std::fs::read(&path).unwrap();
    for page in (4096..bytes.len()).step_by(4096) {
        let end = (page + 64).min(bytes.len());
        bytes[page..end].fill(0xff);
    }
    std::fs::write(&path, bytes).unwrap();
    for args in [vec!["memory", "list"], vec!["ask", "hello"]] {
        let run = w.run(&args);
        assert!(
            run.code != 101 && !run.stderr.contains("panicked"),
            "`evolve {}` panics on a damaged store:\n{}",
            args.join(" "),
            run.stderr.trim()
        );
        assert!(
            run.stderr.contains("evolve.redb"),
            "the error names the store file: {}",
            run.stderr.trim()
        );
    }
}

/// Memory content and session messages come from the model (and from imported files);
/// `memory list` and `sessions show|list` print them raw, so an ESC sequence in them
/// clears the screen, retitles the window or writes the clipboard (OSC 52). Chat
/// escaped them before the listings did.
#[test]
fn listings_do_not_pass_terminal_escapes_through() {
    let w = World::new("edges-listing-esc");
    let file = w.home.join("hostile.json");
    std::fs::write(
        &file,
        serde_json::json!([{"content": "tea \u{1b}[2J\u{1b}]52;c;cm0gLXJmIH4=\u{7} time"}])
            .to_string(),
    )
    .unwrap();
    w.run(&["memory", "import", file.to_str().unwrap()])
        .expect(0);
    let list = w.run(&["memory", "list"]).expect(0);
    w.fake
        .push(Reply::text("answer \u{1b}]0;owned\u{7} with a title"));
    let record = w.run(&["ask", "--json", "hello"]).expect(0).json();
    let sid = record["session"].as_str().unwrap().to_string();
    let show = w.run(&["sessions", "show", &sid]).expect(0);
    for (what, out) in [
        ("memory list", &list.stdout),
        ("sessions show", &show.stdout),
    ] {
        assert!(
            !out.contains('\u{1b}'),
            "`evolve {what}` prints raw terminal escapes:\n{out:?}"
        );
    }
}

/// `memory add ""` is refused, but `memory import` stores a memory with empty content.
#[test]
fn import_refuses_an_empty_memory_like_add_does() {
    let w = World::new("edges-import-empty");
    let file = w.home.join("empty.json");
    std::fs::write(&file, r#"[{"content": ""}, {"content": "   "}]"#).unwrap();
    let run = w.run(&["memory", "import", file.to_str().unwrap()]);
    let list = w.run(&["memory", "list", "--json"]).expect(0).json();
    assert!(
        list.as_array().is_some_and(|a| a.is_empty()),
        "import stored empty memories (exit {}, {}): {list}",
        run.code,
        run.stdout.trim()
    );
}

/// `[memory] critical_cap = 0` passes `config check`; then `memory add --priority
/// critical` says "added memory #1" and the memory is deleted in the same breath.
#[test]
fn a_config_that_deletes_every_new_critical_memory_is_refused() {
    let w = World::new("edges-critical-cap");
    w.config("[memory]\ncritical_cap = 0\n");
    let check = w.run(&["config", "check"]);
    if check.code == 2 {
        return; // refused with a message: fine
    }
    let add = w
        .run(&[
            "memory",
            "add",
            "--priority",
            "critical",
            "Never run rm in my home",
        ])
        .expect(0);
    let list = w.run(&["memory", "list"]).expect(0);
    assert!(
        list.stdout.contains("Never run rm"),
        "`config check` accepted critical_cap = 0 and `memory add` said {:?}, but the memory is deleted:\n{}",
        add.stdout.trim(),
        memory_list(&w)
    );
}

/// A tiny window (`context_window = 10`, `reserved_output = 5`) passes validation and
/// the question is cut away: the model is asked an empty question and its answer is
/// reported as the answer, without a word about the cut.
#[test]
fn a_window_too_small_for_the_question_is_an_error_not_an_empty_question() {
    let w = World::new("edges-tiny-window");
    w.config("[model]\ncontext_window = 10\nreserved_output = 5\n");
    w.fake.set_fallback(Reply::Echo);
    let run = w.run(&["ask", "What is the capital of France?"]);
    if run.code == 2 {
        return; // refused as a configuration error: fine
    }
    let mains = w.main_requests();
    let last_user = mains
        .last()
        .and_then(|r| {
            r["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        })
        .unwrap_or_default();
    assert!(
        last_user.contains("capital of France"),
        "exit {}: the model was sent the question {last_user:?}; stdout {:?}",
        run.code,
        run.stdout
    );
}

/// The shell withholds the API key from the child's environment, but `ps e` prints the
/// environment of the user's other processes — evolve's own included. With `ps`
/// given L2 (it is one of core's READ_ONLY_PROGRAMS), `evolve ask` runs `ps auxe`
/// without asking; the key goes to the model in the tool result and into the stored
/// session, and out with `sessions export`.
#[test]
fn ps_with_environment_does_not_hand_the_api_key_to_the_model() {
    const KEY: &str = "sk-REVIEW2KEY0123456789abcdefXYZ";
    let w = World::new("edges-ps-env");
    w.config("[permission]\nshell_level = \"L4\"\ncommand_prefixes = [[\"ps\", \"L2\"]]\n");
    w.fake.push(tool_call("shell", r#"{"command": "ps auxe"}"#));
    w.fake.push(Reply::text("Here are the processes."));
    let run = Run::from(
        w.command(&["ask", "--json", "what is running?"])
            .env("OPENAI_API_KEY", KEY)
            .output()
            .unwrap(),
    )
    .expect(0);
    let record = run.json();
    assert_eq!(record["tools"][0]["ran"], true, "ps ran at L2: {record}");
    let sent = w.main_requests().iter().map(all_text).collect::<String>();
    let sid = record["session"].as_str().unwrap();
    let export = w
        .run(&["sessions", "export", sid, "--format", "json"])
        .expect(0)
        .stdout;
    assert!(
        !sent.contains(KEY) && !export.contains(KEY),
        "the API key reached the model ({}) and the session export ({})",
        sent.contains(KEY),
        export.contains(KEY)
    );
}

/// `.env` is a secret: `cat .env` and `read_file .env` are L5. With the documented kind
/// of prefix (`git show`/`git log` as L2) the same file is read without asking as
/// `git show HEAD:.env`: the `REV:path` word is not checked as a path.
#[test]
fn a_secret_file_cannot_be_read_through_git_show() {
    let w = World::new("edges-git-secret");
    w.config("[permission]\nshell_level = \"L4\"\ncommand_prefixes = [[\"git show\", \"L2\"]]\n");
    let ws = w.workspace();
    std::fs::write(ws.join(".env"), "DB_PASSWORD=topsecret42\n").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-f", ".env"]);
    git(&["commit", "-qm", "init"]);
    w.fake
        .push(tool_call("shell", r#"{"command": "git show HEAD:.env"}"#));
    w.fake.push(Reply::text("ok"));
    let record = w.run(&["ask", "--json", "show me the config"]).json();
    let sent = w.main_requests().iter().map(all_text).collect::<String>();
    assert!(
        !sent.contains("topsecret42"),
        "the secret file reached the model through `git show HEAD:.env` at {} ({})",
        record["tools"][0]["level"],
        record["tools"][0]["decision"]
    );
}

/// (Passes: pins what a user notices.) A memory added by hand reaches the prompt of a
/// related question, English or Chinese, and not of an unrelated one.
#[test]
fn a_hand_added_memory_reaches_related_prompts_only() {
    let w = World::new("edges-mem-related");
    w.run(&[
        "memory",
        "add",
        "--category",
        "fact",
        "My cat is called Miso",
    ])
    .expect(0);
    w.run(&["memory", "add", "--category", "fact", "我住在北京海淀区"])
        .expect(0);
    for (q, want, not) in [
        ("What is my cat called?", Some("Miso"), "海淀"),
        ("我住在哪里？", Some("海淀"), "Miso"),
        ("How do I sort a list in Python?", None, "Miso"),
        ("今天天气怎么样", None, "海淀"),
    ] {
        w.fake.push(Reply::text("ok"));
        w.run(&["ask", q]).expect(0);
        let sys = system_text(w.main_requests().last().unwrap());
        if let Some(want) = want {
            assert!(sys.contains(want), "{q}: {want} missing:\n{sys}");
        }
        assert!(!sys.contains(not), "{q}: unrelated {not} injected:\n{sys}");
        assert!(
            want.is_some() || !sys.contains("海淀") && !sys.contains("Miso"),
            "{q}: an unrelated memory entered the prompt:\n{sys}"
        );
    }
}

/// Unknown keys are errors "so a typo never goes unnoticed" — except tool names in
/// `[tools.levels]`: `write_fiel = "L5"` (meant: never write files) passes `config
/// check` and write_file stays L3, so `ask --yes` writes. Lowering a built-in (which
/// has no effect) is accepted silently too, unlike `permission.shell_level`.
#[test]
fn a_misspelled_or_ineffective_tool_level_is_reported() {
    let w = World::new("edges-tool-levels");
    for (toml, name) in [
        ("[tools.levels]\nwrite_fiel = \"L5\"\n", "write_fiel"),
        ("[tools.levels]\nread_file = \"L1\"\n", "read_file"),
    ] {
        w.config(toml);
        let run = w.run(&["config", "check"]);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(
            run.code == 2 || said.contains(name),
            "`config check` says nothing about {name} (exit {}):\n{said}",
            run.code
        );
    }
}

/// Ctrl-C is "cancel" only while a turn runs. `/reflect` calls the model too (it can
/// take minutes on a local model), but Ctrl-C there ends the whole chat with 130.
#[test]
fn ctrl_c_during_reflect_stops_the_reflection_not_the_chat() {
    let w = World::new("edges-ctrlc-reflect");
    w.fake.push(Reply::text("first answer"));
    w.fake.route(
        REFLECT,
        Reply::text(r#"{"lesson": "be brief"}"#).after(Duration::from_secs(6)),
    );
    let mut chat = Chat::start(&w);
    chat.send("hello");
    chat.wait_for("first answer");
    chat.send("/reflect");
    let end = Instant::now() + Duration::from_secs(20);
    while !w
        .fake
        .chat_requests()
        .iter()
        .any(|r| r.body.contains(REFLECT))
    {
        assert!(Instant::now() < end, "no reflection request");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    chat.interrupt();
    std::thread::sleep(Duration::from_millis(300));
    if let Some(stdin) = chat.child.stdin.as_mut() {
        let _ = stdin.write_all(b"/quit\n");
    }
    let code = chat.finish();
    assert_eq!(code, Some(0), "Ctrl-C during /reflect ended the chat");
}

/// After each answer chat prints what the turn did, and the score when the evaluation
/// comes (the Evolve Agent design shows the record with the reply); `[agent] turn_line = false` hides it.
#[test]
fn chat_prints_a_line_with_the_turn_record_and_the_score() {
    let w = World::new("chat-turn-line");
    w.fake.push(tool_call("list_dir", r#"{"path": "."}"#));
    w.fake.push(Reply::text("The folder is empty."));
    w.fake.route(
        support::POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.9, "reason": "short and right"}}"#),
    );
    w.fake.push(Reply::text("Second answer."));
    let mut chat = Chat::start(&w);
    chat.send("What is in my folder?");
    chat.wait_for("The folder is empty.");
    chat.wait_for("tools: list_dir ✓");
    chat.send("And now?");
    chat.wait_for("Second answer.");
    chat.wait_for("score 0.90 — short and right");
    chat.send("/quit");
    assert_eq!(chat.finish(), Some(0));

    let w = World::new("chat-turn-line-off");
    w.config("[agent]\nturn_line = false\n");
    w.fake.push(Reply::text("Quiet answer."));
    w.fake.push(Reply::text("Still quiet."));
    let mut chat = Chat::start(&w);
    chat.send("Hello");
    chat.wait_for("Quiet answer.");
    chat.send("Again");
    chat.wait_for("Still quiet.");
    assert!(!chat.seen.contains('↳'), "{}", chat.seen);
    chat.send("/quit");
    chat.finish();
}
