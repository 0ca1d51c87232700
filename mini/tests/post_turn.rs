//! The work after an answer (title, memory extraction, grade, tool-chain review): one
//! call to the cheap model with one JSON answer, its budget the sum of the asked parts',
//! skipped when there is nothing to learn, each part used on its own, and `ask` waiting
//! for it unless `--no-wait` — through the built binary against the scripted fake model.

mod support;

use support::*;

/// The calls after an answer the fake model saw, in order.
fn post_calls(w: &World) -> Vec<serde_json::Value> {
    w.fake
        .chat_requests()
        .into_iter()
        .filter(|r| r.body.contains(POST_TURN))
        .map(|r| r.json)
        .collect()
}

/// Every background request (`[evolve:…]`) the fake model saw.
fn background_calls(w: &World) -> usize {
    w.fake
        .chat_requests()
        .iter()
        .filter(|r| r.body.contains("[evolve:"))
        .count()
}

/// The parts a call after an answer asked for, in the order asked.
fn parts(call: &serde_json::Value) -> Vec<&'static str> {
    let system = call["messages"][0]["content"].as_str().unwrap_or_default();
    // The full prompt quotes its keys; the short one after a plain answer names them
    // bare after `JSON: {`, the grade as its flat `score`.
    let bare: Vec<&str> = system
        .split_once("JSON: {")
        .map_or("", |(_, shape)| shape)
        .split([',', ' ', ':', '{', '[', '}', ']'])
        .collect();
    [
        ("title", "title"),
        ("grade", "score"),
        ("tool_chain", "tool_chain"),
        ("memories", "memories"),
    ]
    .into_iter()
    .filter(|(k, b)| system.contains(&format!("\"{k}\":")) || bare.contains(b))
    .map(|(k, _)| k)
    .collect()
}

/// The session's title as `sessions list` shows it.
fn title_of(w: &World, sid: &str) -> String {
    let listed = w.run(&["sessions", "list", "--json"]).expect(0).json();
    listed
        .as_array()
        .and_then(|a| a.iter().find(|s| s["id"] == sid))
        .and_then(|s| s["title"].as_str())
        .unwrap_or_else(|| panic!("session {sid} in {listed}"))
        .to_string()
}

/// How many memories the store holds.
fn memory_count(w: &World) -> u64 {
    let listed = w.run(&["memory", "list", "--json"]).expect(0).json();
    listed.as_array().map_or(0, |a| a.len() as u64)
}

#[test]
fn small_talk_asks_only_for_a_title_and_then_nothing() {
    for (i, greeting) in ["Hi there!", "Thanks, Evolve.", "谢谢！"]
        .into_iter()
        .enumerate()
    {
        let w = World::new(&format!("post-small-talk-{i}"));
        w.fake.push(Reply::text("Hello! How can I help?"));
        w.fake.route(
            POST_TURN,
            post_reply(serde_json::json!({"title": "A friendly hello"})),
        );
        let record = w.run(&["ask", "--json", greeting]).expect(0).json();
        assert_eq!(record["reply"], "Hello! How can I help?");
        assert!(record["evaluation"].is_null(), "{greeting}: {record}");
        // The session still gets its title after the first answer: one call, for it only.
        let calls = post_calls(&w);
        assert_eq!(calls.len(), 1, "{greeting}: one call after the answer");
        assert_eq!(
            parts(&calls[0]),
            ["title"],
            "{greeting}: no grade, no memories"
        );
        // A title needs the person's message, not the answer.
        let input = calls[0]["messages"][1]["content"]
            .as_str()
            .unwrap_or_default();
        assert!(input.contains(greeting), "{input}");
        assert!(!input.contains("How can I help"), "{input}");
        let sid = record["session"].as_str().unwrap();
        assert_eq!(title_of(&w, sid), "A friendly hello");
        // Small talk in a titled session: no call at all.
        w.fake.push(Reply::text("You're welcome!"));
        w.run(&["ask", "--json", "--session", sid, greeting])
            .expect(0);
        assert_eq!(
            background_calls(&w),
            1,
            "{greeting}: nothing asked after small talk"
        );
    }
}

#[test]
fn a_short_message_that_says_something_is_still_learned_from() {
    for (i, question) in ["Hi, I'm vegan", "我是素食者", "ok, my name is Ana"]
        .into_iter()
        .enumerate()
    {
        let w = World::new(&format!("post-learn-{i}"));
        w.fake.push(Reply::text("Noted!"));
        w.fake.route(POST_TURN, graded(0.9));
        let record = w.run(&["ask", "--json", question]).expect(0).json();
        let calls = post_calls(&w);
        assert_eq!(calls.len(), 1, "{question}: one call");
        assert_eq!(
            parts(&calls[0]),
            ["title", "grade", "memories"],
            "{question}"
        );
        let score = record["evaluation"]["score"].as_f64();
        assert!(score.is_some_and(|s| (s - 0.9).abs() < 1e-6), "{record}");
    }
}

#[test]
fn one_call_after_the_answer_carries_every_part_with_a_budget_fitted_to_them() {
    let w = World::new("post-budgets");
    w.config("[model]\nreserved_output = 4096\n");
    std::fs::write(w.workspace().join("a.txt"), "alpha").unwrap();
    // Turn 1 with a tool call: title, grade, review and memories in one call.
    w.fake.push(tool_call("read_file", r#"{"path": "a.txt"}"#));
    w.fake.push(Reply::text("It says alpha."));
    w.fake.route(
        POST_TURN,
        post_reply(serde_json::json!({
            "title": "Reading a.txt",
            "grade": {"score": 0.8, "reason": "right"},
            "tool_chain": "- read_file(a.txt): worked, it says alpha",
            "memories": [{"content": "The user keeps notes in a.txt", "category": "fact"}]
        })),
    );
    let first = w
        .run(&["ask", "--json", "What does a.txt say?"])
        .expect(0)
        .json();
    assert_eq!(background_calls(&w), 1, "one background call, not four");
    let sid = first["session"].as_str().unwrap().to_string();
    assert_eq!(title_of(&w, &sid), "Reading a.txt");
    assert!(first["evaluation"]["score"].as_f64().is_some(), "{first}");
    assert_eq!(memory_count(&w), 1);
    let exported = w
        .run(&["sessions", "export", "--format", "json", &sid])
        .expect(0);
    assert!(
        exported.stdout.contains("it says alpha"),
        "the review is kept: {}",
        exported.stdout
    );
    // Turn 2 without tools, turn 3 small talk.
    w.fake.push(Reply::text("Paris."));
    w.run(&["ask", "--session", &sid, "What is the capital of France?"])
        .expect(0);
    w.fake.push(Reply::text("You're welcome."));
    w.run(&["ask", "--session", &sid, "Thanks!"]).expect(0);
    let calls = post_calls(&w);
    assert_eq!(calls.len(), 2, "nothing asked after small talk");
    assert_eq!(
        parts(&calls[0]),
        ["title", "grade", "tool_chain", "memories"]
    );
    // A question about the world holds no memory: it is only graded.
    assert_eq!(parts(&calls[1]), ["grade"]);
    let budget = |call: &serde_json::Value| call["max_tokens"].as_u64().expect("max_tokens");
    let (all, plain) = (budget(&calls[0]), budget(&calls[1]));
    assert!(
        plain < all,
        "fewer parts, a smaller budget: {plain} vs {all}"
    );
    assert!(all <= 1_024, "the sum of the parts' budgets: {all}");
    assert!(plain <= 600, "a grade: {plain}");
    for b in [all, plain] {
        assert!(b < 4096, "never the answer's reserve: {b}");
    }
}

#[test]
fn a_malformed_part_is_named_and_the_others_still_count() {
    /// The reply, the title kept, the grade, memories saved, a problem naming it.
    type Case = (
        &'static str,
        Option<&'static str>,
        Option<f64>,
        u64,
        &'static str,
    );
    let cases: [Case; 4] = [
        // A good title and memories, a grade that is no number.
        (
            r#"{"title": "Tea at home", "grade": "great!", "memories": [{"content": "The user likes green tea", "category": "preference"}]}"#,
            Some("Tea at home"),
            None,
            1,
            "evaluation: no score",
        ),
        // A good grade, no memories key at all.
        (
            r#"{"title": "Tea at home", "grade": {"score": 0.7, "reason": "ok"}}"#,
            Some("Tea at home"),
            Some(0.7),
            0,
            "memory extraction: none",
        ),
        // Cut at the token limit inside the second memory: the whole parts count, the
        // half memory is not saved.
        (
            r#"{"title": "Tea at home", "grade": {"score": 0.6, "reason": "ok"}, "memories": [{"content": "The user likes green tea", "category": "preference"}, {"content": "The user dri"#,
            Some("Tea at home"),
            Some(0.6),
            1,
            "",
        ),
        // No JSON at all: no grade, the question stays the title, the problem recorded.
        (
            "Great answer, nothing to add.",
            None,
            None,
            0,
            "evaluation: no score",
        ),
    ];
    for (i, (reply, title, score, saved, problem)) in cases.into_iter().enumerate() {
        let w = World::new(&format!("post-parts-{i}"));
        w.fake.push(Reply::text("Noted."));
        w.fake.route(POST_TURN, Reply::text(reply));
        let record = w
            .run(&["ask", "--json", "I drink green tea every morning"])
            .expect(0)
            .json();
        match score {
            Some(s) => assert!(
                (record["evaluation"]["score"].as_f64().unwrap() - s).abs() < 1e-6,
                "{i}: {record}"
            ),
            None => assert!(record["evaluation"].is_null(), "{i}: {record}"),
        }
        assert_eq!(memory_count(&w), saved, "{i}");
        let problems = record["problems"].to_string();
        if problem.is_empty() {
            assert!(
                record["problems"].as_array().is_none_or(Vec::is_empty),
                "{i}: {record}"
            );
        } else {
            assert!(problems.contains(problem), "{i}: {problem:?} in {problems}");
        }
        let sid = record["session"].as_str().unwrap();
        let want = title.unwrap_or("I drink green tea every morning");
        assert_eq!(title_of(&w, sid), want, "{i}");
    }
}

#[test]
fn ask_says_whether_it_waited_for_the_work_after_the_answer() {
    let w = World::new("post-wait");
    w.fake.route(
        POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.8, "reason": "ok"}}"#),
    );
    w.fake.push(Reply::text("Paris."));
    let waited = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0)
        .json();
    assert_eq!(waited["background_waited"], true, "{waited}");
    assert!(waited["evaluation"]["score"].as_f64().is_some(), "{waited}");

    // --no-wait: the record comes at once, without the grade, and says so.
    w.fake.route(
        POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.8, "reason": "ok"}}"#)
            .after(std::time::Duration::from_secs(3)),
    );
    w.fake.push(Reply::text("Berlin."));
    let started = std::time::Instant::now();
    let quick = w
        .run(&[
            "ask",
            "--json",
            "--no-wait",
            "What is the capital of Germany?",
        ])
        .expect(0)
        .json();
    assert_eq!(quick["reply"], "Berlin.");
    assert_eq!(quick["background_waited"], false, "{quick}");
    assert!(quick["evaluation"].is_null(), "{quick}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "ask did not wait: {:?}",
        started.elapsed()
    );

    // Without --json, --no-wait prints the answer and exits too.
    w.fake.push(Reply::text("Rome."));
    let plain = w
        .run(&["ask", "--no-wait", "What is the capital of Italy?"])
        .expect(0);
    assert_eq!(plain.stdout.trim(), "Rome.");

    // Not waiting loses nothing already done: each turn's record (its usage, its tools)
    // is on disk when ask exits, so `evolve usage` counts all three turns.
    let usage = w.run(&["usage", "--json"]).expect(0).json();
    assert_eq!(usage["total"]["turns"], 3, "{usage}");
    let per_session: Vec<u64> = usage["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["turns"].as_u64().unwrap())
        .collect();
    assert_eq!(per_session, [1, 1, 1], "{usage}");
}

/// A chat request to a running serve from any thread; the whole response.
fn post_chat(api: support::serve::Api, body: &str) -> String {
    use std::io::{Read, Write};
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", api.port)).unwrap();
    write!(
        sock,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        api.token,
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    sock.read_to_string(&mut out).unwrap();
    out
}

/// The first chat request the fake model saw whose messages carry `marker`.
fn first_with(w: &World, marker: &str) -> Option<evolve_fake_llm::Recorded> {
    w.fake
        .chat_requests()
        .into_iter()
        .find(|r| r.mentions(marker))
}

/// Waits (at most 20 s) until the fake model has seen `n` requests carrying `marker`.
fn wait_for(w: &World, marker: &str, n: usize) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while w
        .fake
        .chat_requests()
        .iter()
        .filter(|r| r.mentions(marker))
        .count()
        < n
    {
        assert!(
            std::time::Instant::now() < end,
            "no {n} requests with {marker}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn on_a_server_the_work_after_one_chat_waits_for_the_answer_another_chat_is_given() {
    use std::time::Duration;
    use support::serve::{chat_body, Server};
    for (i, slow_ms) in [1_500u64, 2_500].into_iter().enumerate() {
        let w = World::new(&format!("post-yield-wait-{i}"));
        let s = Server::start(&w, &[]);
        // Chat B's answer takes a while; chat A's answer is at once.
        w.fake.route(
            "[chat-b]",
            Reply::text("B's slow answer.").after(Duration::from_millis(slow_ms)),
        );
        w.fake.route("[chat-a]", Reply::text("Paris."));
        w.fake.route(POST_TURN, graded(0.8));
        let api = s.api();
        let b = std::thread::spawn(move || {
            let body = chat_body(
                "[chat-b] Tell me about the Loire valley",
                serde_json::json!({}),
            );
            post_chat(api, &body)
        });
        wait_for(&w, "[chat-b]", 1);
        let a = s.post(
            "/v1/chat/completions",
            &chat_body(
                "[chat-a] What is the capital of France?",
                serde_json::json!({}),
            ),
        );
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(b.join().unwrap().contains("B's slow answer."));
        // A's call after its answer went only once B's answer was given.
        wait_for(&w, POST_TURN, 1);
        let post = first_with(&w, POST_TURN).unwrap();
        let b_main = w
            .fake
            .chat_requests()
            .into_iter()
            .find(|r| r.mentions("[chat-b]") && !r.mentions(POST_TURN))
            .unwrap();
        let b_answered = b_main.answered.expect("B was answered");
        assert!(
            post.received >= b_answered,
            "A's background call came {:?} before B's answer was done",
            b_answered.duration_since(post.received)
        );
    }
}

#[test]
fn a_call_after_the_answer_in_flight_gives_way_to_a_new_question_and_is_sent_again() {
    use std::time::Duration;
    use support::serve::{chat_body, Server};
    let w = World::new("post-yield-preempt");
    let s = Server::start(&w, &[]);
    // A's call after its answer would take 4 s; the second try is at once.
    w.fake
        .route(POST_TURN, graded(0.5).after(Duration::from_secs(4)));
    w.fake.route(POST_TURN, graded(0.9));
    w.fake.route("[chat-a]", Reply::text("Paris."));
    w.fake.route("[chat-b]", Reply::text("Berlin."));
    let a = s.post(
        "/v1/chat/completions",
        &chat_body(
            "[chat-a] What is the capital of France?",
            serde_json::json!({}),
        ),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    wait_for(&w, POST_TURN, 1);
    let asked = std::time::Instant::now();
    let b = s.post(
        "/v1/chat/completions",
        &chat_body("[chat-b] And of Germany?", serde_json::json!({})),
    );
    assert_eq!(b.status, 200, "{}", b.body);
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    // A's call gave way and went again after B's answer (then B's own call).
    wait_for(&w, POST_TURN, 3);
    let posts: Vec<_> = w
        .fake
        .chat_requests()
        .into_iter()
        .filter(|r| r.mentions(POST_TURN))
        .collect();
    let b_main = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.mentions("[chat-b]") && !r.mentions(POST_TURN))
        .unwrap();
    assert!(posts[0].answered.is_none(), "the first try was given up");
    assert!(posts[0].mentions("[chat-a]") && posts[1].mentions("[chat-a]"));
    assert!(
        posts[1].received >= b_main.answered.expect("B answered"),
        "A's call went again after B's answer"
    );
    // The second try's grade is A's.
    let sid = a.header("x-evolve-session").unwrap().to_string();
    let turn = s.get(&format!("/v1/sessions/{sid}/turns/1")).json();
    let score = turn["evaluation"]["score"].as_f64();
    assert!(score.is_some_and(|s| (s - 0.9).abs() < 1e-6), "{turn}");
}

/// A reply of the call after an answer with a title and a grade.
fn titled(score: f64) -> Reply {
    post_reply(serde_json::json!({
        "title": "A question",
        "grade": {"score": score, "reason": "fine"},
        "memories": []
    }))
}

/// The whole text of a request (its messages' contents), in characters.
fn request_chars(call: &serde_json::Value) -> usize {
    call["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["content"].as_str().unwrap_or_default().chars().count())
        .sum()
}

/// After a plain answer (no tool called) the call asks for its parts in a few words and
/// reads the exchange cut short, its budget fitted to them: on a small local model the
/// notes then cost less than the answer. After tool calls the full prompt comes back.
#[test]
fn a_plain_answer_gets_a_short_call_and_a_tool_turn_the_full_one() {
    // (question, the model's answer, whether memories are asked): a question about the
    // world with a short answer and one with a long answer, one about the person with a
    // long answer, a Chinese one.
    let long = "Paris is the capital of France. ".repeat(150);
    let cases = [
        (
            "What is the capital of France?",
            "Paris.".to_string(),
            false,
        ),
        ("How tall is the Eiffel tower?", long.clone(), false),
        (
            "Tell me everything about Paris, I live there",
            long.clone(),
            true,
        ),
        (
            "请介绍一下巴黎，我下个月去。",
            "巴黎是法国的首都。".repeat(200),
            true,
        ),
    ];
    for (i, (question, answer, memories)) in cases.iter().enumerate() {
        let w = World::new(&format!("post-plain-{i}"));
        w.fake.push(Reply::text(answer.as_str()));
        w.fake.route(POST_TURN, titled(0.9));
        let first = w.run(&["ask", "--json", question]).expect(0).json();
        let sid = first["session"].as_str().unwrap().to_string();
        w.fake.push(Reply::text(answer.as_str()));
        w.run(&["ask", "--session", &sid, question]).expect(0);
        let calls = post_calls(&w);
        assert_eq!(calls.len(), 2, "{question}");
        // The first turn asks for a title too; neither asks for a review; memories only
        // when the question speaks of the person.
        let (first_parts, next_parts): (&[&str], &[&str]) = if *memories {
            (&["title", "grade", "memories"], &["grade", "memories"])
        } else {
            (&["title", "grade"], &["grade"])
        };
        assert_eq!(parts(&calls[0]), first_parts, "{question}");
        assert_eq!(parts(&calls[1]), next_parts, "{question}");
        for call in &calls {
            let system = call["messages"][0]["content"].as_str().unwrap();
            assert!(
                system.chars().count() <= 700,
                "{question}: the instructions stay short: {} chars\n{system}",
                system.chars().count()
            );
            // Whatever the answer's length, the call reads at most about 2 000
            // characters (the question's 1 200, the answer's 360, the time).
            assert!(
                request_chars(call) <= 2_400,
                "{question}: {} chars",
                request_chars(call)
            );
            let budget = call["max_tokens"].as_u64().expect("max_tokens");
            assert!(budget <= 200, "{question}: a budget of {budget}");
            // Without memories, the instructions and the budget together stay well
            // under a system prompt's size, so the call costs less than the answer
            // whose exchange it reads; no quotes (a template that escapes them makes
            // each several tokens).
            assert!(!system.contains('"'), "{question}: {system}");
            if !*memories {
                assert!(system.chars().count() <= 160, "{question}: {system}");
                assert!(budget <= 40, "{question}: a budget of {budget}");
            }
        }
        // The grade still counts, and with memories the reminder rule is asked for.
        assert!(first["evaluation"]["score"].as_f64().is_some(), "{first}");
        assert_eq!(
            all_text(&calls[0]).contains("expires_at"),
            *memories,
            "{question}"
        );
    }

    // A turn with a tool call: the full prompt, with the review and the tools used.
    let w = World::new("post-plain-tools");
    std::fs::write(w.workspace().join("a.txt"), "alpha").unwrap();
    w.fake.push(tool_call("read_file", r#"{"path": "a.txt"}"#));
    w.fake.push(Reply::text("It says alpha."));
    w.fake.route(POST_TURN, graded(0.8));
    w.run(&["ask", "--yes", "What does a.txt say?"]).expect(0);
    let calls = post_calls(&w);
    assert_eq!(
        parts(&calls[0]),
        ["title", "grade", "tool_chain", "memories"]
    );
    let system = calls[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.chars().count() > 2_000, "{system}");
    assert!(all_text(&calls[0]).contains("Tools used: read_file"));
}

/// Nothing is asked after a turn with nothing to learn from: small talk in Chinese or
/// English (greetings with a particle, laughter, "how are you"), a turn the model
/// failed, a turn the person stopped at a question.
#[test]
fn nothing_is_asked_after_small_talk_a_failed_turn_or_a_stopped_one() {
    let w = World::new("post-nothing-small-talk");
    w.fake.push(Reply::text("Paris."));
    w.fake.route(POST_TURN, titled(0.9));
    let first = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    for greeting in [
        "你好呀！",
        "谢谢啦～",
        "大家好",
        "哈哈哈",
        "How are you?",
        "好的，谢谢！",
    ] {
        w.fake.push(Reply::text("😊"));
        w.run(&["ask", "--session", &sid, greeting]).expect(0);
        assert_eq!(
            post_calls(&w).len(),
            1,
            "{greeting}: nothing asked after it"
        );
    }
    // A message that says something still is.
    w.fake.push(Reply::text("好的，小明。"));
    w.run(&["ask", "--session", &sid, "你好呀，我叫小明"])
        .expect(0);
    assert_eq!(post_calls(&w).len(), 2, "a name is worth remembering");

    // The model fails: the question is kept, nothing is asked after it.
    let w = World::new("post-nothing-failed");
    for _ in 0..3 {
        w.fake.push(Reply::error(500, "the model crashed"));
    }
    w.fake.route(POST_TURN, graded(0.9));
    let failed = w.run(&["ask", "What is the capital of Peru?"]);
    assert_eq!(failed.code, 3, "{}", failed.stderr);
    assert_eq!(post_calls(&w).len(), 0, "nothing asked after a failed turn");

    // The person stops at the question about a call: the reply is Evolve's note that
    // it stopped, with nothing to grade; the next question is graded again.
    let w = World::new("post-nothing-stopped");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "notes.txt", "content": "overwritten"}"#,
    ));
    w.fake.route(POST_TURN, graded(0.9));
    let mut chat = Chat::start(&w);
    chat.send("Write overwritten into notes.txt");
    chat.wait_for("[yes/no/always]");
    chat.interrupt();
    chat.wait_for("(stopped");
    w.fake.push(Reply::text("Lima."));
    chat.send("What is the capital of Peru?");
    chat.wait_for("Lima.");
    let chat_seen = chat.seen.clone();
    let _ = chat.finish();
    let calls = post_calls(&w);
    assert_eq!(
        calls.len(),
        1,
        "one call, after the answered question only: {:#?}\n{chat_seen}",
        calls.iter().map(all_text).collect::<Vec<_>>(),
    );
    assert!(
        all_text(&calls[0]).contains("Lima."),
        "the call is about the second turn"
    );
}
