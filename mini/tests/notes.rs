//! The two notes the cheap model keeps per session (tea-agent's 标题摘要 and
//! 工具链摘要): the title after the first answer, and the tool-chain review L3 gives the
//! model on later turns — through the built binary against the scripted fake model.

mod support;

use serde_json::Value;
use support::*;

fn session_list(w: &World) -> Vec<Value> {
    w.run(&["sessions", "list", "--json"])
        .expect(0)
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The system prompts of the calls after an answer, in order.
fn post_prompts(w: &World) -> Vec<String> {
    w.fake
        .chat_requests()
        .iter()
        .filter(|r| r.body.contains(POST_TURN))
        .map(|r| r.system().unwrap_or_default())
        .collect()
}

/// How many calls after an answer asked for `key` (`"title"`, `"tool_chain"`).
fn asked_for(w: &World, key: &str) -> usize {
    let key = format!("\"{key}\":");
    post_prompts(w).iter().filter(|p| p.contains(&key)).count()
}

fn title_of(w: &World, id: &str) -> String {
    session_list(w)
        .into_iter()
        .find(|s| s["id"] == id)
        .and_then(|s| s["title"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("session {id} listed"))
}

#[test]
fn the_first_answer_titles_the_session_and_later_turns_keep_it() {
    let w = World::new("notes-title");
    w.fake.route(
        POST_TURN,
        post_reply(serde_json::json!({"title": "\"Weekend trip to Lyon.\""})),
    );
    w.fake.route(
        POST_TURN,
        post_reply(serde_json::json!({"title": "A title that must not come"})),
    );
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "plan.md", "content": "Saturday: old town"}"#,
    ));
    w.fake.push(Reply::text("I wrote plan.md."));
    let first = w
        .run(&[
            "ask",
            "--json",
            "--yes",
            "Plan my weekend in Lyon and save it to plan.md",
        ])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    assert_eq!(
        title_of(&w, &sid),
        "Weekend trip to Lyon",
        "quotes and the full stop go"
    );
    assert_eq!(
        asked_for(&w, "title"),
        1,
        "a title asked for the first answer"
    );

    w.fake.push(Reply::text("Sunday: the museum."));
    w.run(&["ask", "--session", &sid, "And Sunday?"]).expect(0);
    assert_eq!(title_of(&w, &sid), "Weekend trip to Lyon");
    assert_eq!(post_prompts(&w).len(), 2, "one call after each answer");
    assert_eq!(
        asked_for(&w, "title"),
        1,
        "a titled session is not titled again"
    );

    // The export shows the title too.
    let md = w.run(&["sessions", "export", &sid]).expect(0);
    assert!(md.stdout.contains("Weekend trip to Lyon"), "{}", md.stdout);
}

#[test]
fn a_failed_title_call_keeps_the_question_as_title_and_says_why() {
    let w = World::new("notes-title-fails");
    std::fs::write(w.home.join("config.toml"), "[model]\nmax_retries = 0\n").unwrap();
    w.fake
        .route(POST_TURN, Reply::error(500, "the cheap model is down"));
    w.fake.push(Reply::text("Four."));
    let record = w
        .run(&["ask", "--json", "How much is two plus two?"])
        .expect(0)
        .json();
    let sid = record["session"].as_str().unwrap();
    assert_eq!(title_of(&w, sid), "How much is two plus two?");
    let problems = record["problems"].to_string();
    assert!(
        problems.contains("title") || problems.contains("500"),
        "{record}"
    );
}

#[test]
fn a_turn_with_tools_updates_the_review_and_the_next_turn_gets_it_in_l3() {
    let w = World::new("notes-chain");
    std::fs::write(w.workspace().join("todo.txt"), "buy milk\ncall Ana\n").unwrap();
    w.fake.route(
        POST_TURN,
        post_reply(serde_json::json!({
            "tool_chain": "```\n- read_file(todo.txt): worked, two items: buy milk, call Ana\n```"
        })),
    );
    w.fake
        .push(tool_call("read_file", r#"{"path": "todo.txt"}"#));
    w.fake.push(Reply::text("You have two items."));
    let first = w
        .run(&["ask", "--json", "What is on my todo list?"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    let review_request = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.body.contains(POST_TURN) && r.body.contains("tool_chain"))
        .expect("the review was asked for after a turn with tools");
    assert!(
        review_request.body.contains("read_file") && review_request.body.contains("todo.txt"),
        "the review sees the call: {}",
        review_request.body
    );

    w.fake.push(Reply::text("Ana."));
    w.run(&["ask", "--session", &sid, "Whom do I call?"])
        .expect(0);
    let last = w.main_requests().pop().unwrap();
    let text = last["messages"].to_string();
    assert!(
        text.contains("Recent tool-call chain")
            && text.contains("two items: buy milk, call Ana")
            && !text.contains("```"),
        "L3 carries the review under its heading: {text}"
    );
    // The previous review goes into the next update; a turn without tools asks nothing.
    assert_eq!(
        asked_for(&w, "tool_chain"),
        1,
        "no review for a turn without tool calls"
    );
    let json = w
        .run(&["sessions", "export", "--format", "json", &sid])
        .expect(0);
    assert!(
        json.stdout.contains("\"tool_chain\""),
        "exported: {}",
        json.stdout
    );
}

#[test]
fn a_failed_review_keeps_the_previous_one() {
    let w = World::new("notes-chain-fails");
    // One failure is one failure (no retry with backoff).
    std::fs::write(w.home.join("config.toml"), "[model]\nmax_retries = 0\n").unwrap();
    std::fs::write(w.workspace().join("a.txt"), "alpha").unwrap();
    w.fake.route(
        POST_TURN,
        post_reply(serde_json::json!({"tool_chain": "- read_file(a.txt): worked, it says alpha"})),
    );
    w.fake
        .route(POST_TURN, Reply::error(500, "the cheap model is down"));
    w.fake.push(tool_call("read_file", r#"{"path": "a.txt"}"#));
    w.fake.push(Reply::text("It says alpha."));
    let first = w.run(&["ask", "--json", "Read a.txt"]).expect(0).json();
    let sid = first["session"].as_str().unwrap().to_string();
    w.fake.push(tool_call("read_file", r#"{"path": "a.txt"}"#));
    w.fake.push(Reply::text("Still alpha."));
    let second = w
        .run(&["ask", "--json", "--session", &sid, "Read a.txt again"])
        .expect(0)
        .json();
    assert!(second["problems"].to_string().contains("500"), "{second}");
    w.fake.push(Reply::text("ok"));
    w.run(&["ask", "--session", &sid, "Anything else?"])
        .expect(0);
    let text = w.main_requests().pop().unwrap()["messages"].to_string();
    assert!(
        text.contains("it says alpha"),
        "the first review stays: {text}"
    );
}

#[test]
fn titles_and_reviews_can_be_turned_off() {
    let w = World::new("notes-off");
    std::fs::write(
        w.home.join("config.toml"),
        "[agent]\ntitles = false\ntool_chain = false\n",
    )
    .unwrap();
    std::fs::write(w.workspace().join("a.txt"), "alpha").unwrap();
    w.fake.push(tool_call("read_file", r#"{"path": "a.txt"}"#));
    w.fake.push(Reply::text("alpha"));
    w.run(&["ask", "Read a.txt"]).expect(0);
    assert_eq!(
        (asked_for(&w, "title"), asked_for(&w, "tool_chain")),
        (0, 0),
        "no title or review asked for: {:?}",
        post_prompts(&w)
    );
}
