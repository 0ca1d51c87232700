//! Sub-agents (tea-agent's toolkit_parallel_subtasks / toolkit_subagent; the Evolve Agent
//! design's manager splitting a task)
//! through the built binary against the scripted model: the `subtasks` tool runs each
//! subtask as a turn of its own — its question only, no parent history — side by side,
//! gives their answers back to the parent, which summarises; a sub-turn may do no more
//! than its parent (a headless run refuses what needs a person, `--yes` allows L3), has
//! no `subtasks` of its own, and its tokens and calls are in the parent's record.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{tool_call, Reply, World};

fn subtasks_call(tasks: &[&str]) -> Reply {
    tool_call("subtasks", &json!({ "tasks": tasks }).to_string())
}

/// The chat requests whose user message is exactly `task` (a sub-turn's own requests).
fn sub_requests(w: &World, task: &str) -> Vec<Value> {
    w.main_requests()
        .into_iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "user" && m["content"] == task)
        })
        .collect()
}

#[test]
fn subtasks_run_as_their_own_turns_side_by_side_and_the_parent_summarises() {
    let w = World::new("subtasks-basic");
    let france = "What is the capital of France? [sub-a]";
    let italy = "What is the capital of Italy? [sub-b]";
    let spain = "What is the capital of Spain? [sub-c]";
    w.fake.push(subtasks_call(&[france, italy, spain]));
    // Each answer takes 2 s: side by side, all three are asked before any is answered.
    w.fake.route(
        "[sub-a]",
        Reply::text("Paris.").after(Duration::from_secs(2)),
    );
    w.fake.route(
        "[sub-b]",
        Reply::text("Rome.").after(Duration::from_secs(2)),
    );
    w.fake.route(
        "[sub-c]",
        Reply::text("Madrid.").after(Duration::from_secs(2)),
    );
    w.fake
        .route("subtasks ran", Reply::text("Paris, Rome and Madrid."));
    let record = w
        .run(&[
            "ask",
            "--json",
            "Find the capitals of France, Italy and Spain",
        ])
        .expect(0)
        .json();
    assert_eq!(record["reply"], "Paris, Rome and Madrid.", "{record}");
    assert_eq!(record["tools"][0]["name"], "subtasks");
    let subs = record["subtasks"]
        .as_array()
        .expect("subtasks in the record");
    let got: Vec<(u64, &str, &str)> = subs
        .iter()
        .map(|s| {
            (
                s["index"].as_u64().unwrap(),
                s["task"].as_str().unwrap(),
                s["reply"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, france, "Paris."),
            (2, italy, "Rome."),
            (3, spain, "Madrid.")
        ]
    );

    // Each sub-turn saw its own question and not the parent's conversation.
    for task in [france, italy, spain] {
        let reqs = sub_requests(&w, task);
        assert_eq!(reqs.len(), 1, "{task}");
        let text = reqs[0].to_string();
        assert!(
            !text.contains("Find the capitals"),
            "no parent history: {text}"
        );
        let tools: Vec<&str> = reqs[0]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            !tools.contains(&"subtasks"),
            "one level of nesting: {tools:?}"
        );
    }
    // Side by side: the three sub-turn requests arrived before the first answer (2 s).
    let chats = w.fake.chat_requests();
    let firsts: Vec<usize> = [france, italy, spain]
        .iter()
        .map(|t| {
            chats
                .iter()
                .position(|r| r.body.contains(&t[t.len() - 7..]))
                .unwrap()
        })
        .collect();
    assert!(firsts.iter().all(|i| (1..=3).contains(i)), "{firsts:?}");

    // The parent got every answer under its task, and counted their tokens.
    let last = w.main_requests().last().unwrap().to_string();
    assert!(
        last.contains("## Subtask 2: What is the capital of Italy? [sub-b]\\nRome."),
        "{last}"
    );
    let sub_tokens: u64 = subs
        .iter()
        .map(|s| s["usage"]["prompt_tokens"].as_u64().unwrap())
        .sum();
    let total = record["usage"]["main"]["prompt_tokens"].as_u64().unwrap();
    assert!(
        sub_tokens > 0 && total > sub_tokens,
        "{total} vs {sub_tokens}"
    );
}

#[test]
fn a_sub_turn_may_do_no_more_than_its_parent_and_cannot_nest() {
    let w = World::new("subtasks-limits");
    let write = "Save a note to sub.txt [sub-w]";
    let nest = "Split this again [sub-n]";
    let script = |w: &World| {
        w.fake.push(subtasks_call(&[write, nest]));
        w.fake.route(
            "[sub-w]",
            tool_call(
                "write_file",
                r#"{"path": "sub.txt", "content": "from a sub-turn"}"#,
            ),
        );
        w.fake.route("[sub-w]", Reply::text("Saved."));
        w.fake.route("[sub-n]", subtasks_call(&["deeper"]));
        w.fake
            .route("[sub-n]", Reply::text("I could not split it."));
        w.fake
            .route("subtasks ran", Reply::text("Both subtasks are done."));
    };
    // Headless at the default L2: the sub-turn's L3 write needs a person and is refused,
    // as the parent's would be — and ask says so with exit 4.
    script(&w);
    let run = w.run(&["ask", "--json", "Do both things"]).expect(4);
    let record = run.json();
    assert_eq!(record["needs_person"], true, "{record}");
    let w_run = &record["subtasks"][0];
    assert_eq!(w_run["tools"][0]["name"], "write_file");
    assert_eq!(w_run["tools"][0]["ran"], false, "{w_run}");
    assert!(!w.workspace().join("sub.txt").exists());
    // The nested subtasks call is no tool of a sub-turn.
    let n_run = &record["subtasks"][1];
    assert_eq!(n_run["tools"][0]["name"], "subtasks");
    assert_eq!(n_run["tools"][0]["ran"], false, "{n_run}");
    assert!(sub_requests(&w, "deeper").is_empty(), "no second level ran");

    // With --yes (up to L3), as for the parent: the sub-turn writes the file.
    script(&w);
    w.run(&["ask", "--json", "--yes", "Do both things"])
        .expect(0);
    assert_eq!(
        std::fs::read_to_string(w.workspace().join("sub.txt")).unwrap(),
        "from a sub-turn"
    );
}

#[test]
fn a_failed_sub_turn_is_reported_and_the_parent_still_answers() {
    let w = World::new("subtasks-fail");
    w.config("[model]\nmax_retries = 0\n");
    w.fake
        .push(subtasks_call(&["Works [sub-ok]", "Breaks [sub-bad]"]));
    w.fake.route("[sub-ok]", Reply::text("Fine."));
    w.fake
        .route("[sub-bad]", Reply::error(500, "the model fell over"));
    w.fake.route(
        "subtasks ran",
        Reply::text("One part worked; the other failed."),
    );
    let record = w.run(&["ask", "--json", "Two parts"]).expect(0).json();
    assert_eq!(record["reply"], "One part worked; the other failed.");
    assert_eq!(record["subtasks"][0]["reply"], "Fine.");
    let failed = record["subtasks"][1]["failed"].as_str().unwrap_or_default();
    assert!(failed.contains("the model fell over"), "{record}");
    let last = w.main_requests().last().unwrap().to_string();
    assert!(last.contains("1 failed"), "{last}");
    assert!(last.contains("(no answer:"), "{last}");

    // Bad arguments are the model's to correct, nothing runs.
    w.fake.push(subtasks_call(&[]));
    w.fake.push(Reply::text("Sorry."));
    let record = w.run(&["ask", "--json", "Again"]).expect(0).json();
    assert_eq!(record["tools"][0]["is_error"], true, "{record}");
    assert!(record.get("subtasks").is_none(), "{record}");
}

#[test]
fn subtasks_can_be_turned_off() {
    let w = World::new("subtasks-off");
    w.config("[agent]\nsubtasks = 0\n");
    w.fake.push(Reply::text("Hello."));
    w.run(&["ask", "Hi"]).expect(0);
    let req = w.main_requests().pop().unwrap().to_string();
    assert!(!req.contains("\"subtasks\""), "{req}");
    // Out of range: a clear error.
    w.config("[agent]\nsubtasks = 99\n");
    let r = w.run(&["ask", "Hi"]).expect(2);
    assert!(r.stderr.contains("agent.subtasks = 99"), "{}", r.stderr);
}

#[test]
fn chat_shows_the_sub_turns_indented_and_asks_for_their_calls() {
    let w = World::new("subtasks-chat");
    let write = "Save a note to chat-sub.txt [sub-cw]";
    w.fake.push(subtasks_call(&[write, "Say hello [sub-ch]"]));
    w.fake.route(
        "[sub-cw]",
        tool_call(
            "write_file",
            r#"{"path": "chat-sub.txt", "content": "asked in chat"}"#,
        ),
    );
    w.fake.route("[sub-cw]", Reply::text("Saved the note."));
    w.fake
        .route("[sub-ch]", Reply::text("Hello from the second helper."));
    w.fake
        .route("subtasks ran", Reply::text("Both helpers finished."));
    let run = w
        .run_stdin(&["chat"], "Do two things at once\nyes\n/quit\n")
        .expect(0);
    let out = &run.stdout;
    assert!(
        out.contains("    ↳ 1. Save a note to chat-sub.txt [sub-cw]"),
        "{out}"
    );
    assert!(out.contains("    ↳ 2. Say hello [sub-ch]"), "{out}");
    assert!(
        out.contains("        ⚙ write_file"),
        "the helper's call, indented: {out}"
    );
    assert!(
        out.contains("    ✓ 2. Hello from the second helper."),
        "{out}"
    );
    assert!(out.contains("Both helpers finished."), "{out}");
    // The helper's L3 call was asked at this terminal, and the yes let it run.
    assert_eq!(
        std::fs::read_to_string(w.workspace().join("chat-sub.txt")).unwrap(),
        "asked in chat"
    );
}
