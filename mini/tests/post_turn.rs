//! The work after an answer (title, memory extraction, grade, tool-chain review) on the
//! cheap model: skipped when there is nothing to learn, each call with an answer budget
//! fitted to it, and `ask` waiting for it unless `--no-wait` — through the built binary
//! against the scripted fake model.

mod support;

use support::*;

/// The recorded cheap-model requests that carry `marker`.
fn asked(w: &World, marker: &str) -> Vec<serde_json::Value> {
    w.fake
        .chat_requests()
        .into_iter()
        .filter(|r| r.body.contains(marker))
        .map(|r| r.json)
        .collect()
}

#[test]
fn small_talk_is_answered_without_extraction_or_grade() {
    for (i, greeting) in ["Hi there!", "Thanks, Evolve.", "谢谢！"]
        .into_iter()
        .enumerate()
    {
        let w = World::new(&format!("post-small-talk-{i}"));
        w.fake.push(Reply::text("Hello! How can I help?"));
        let record = w.run(&["ask", "--json", greeting]).expect(0).json();
        assert_eq!(record["reply"], "Hello! How can I help?");
        assert!(asked(&w, EXTRACT).is_empty(), "{greeting}: no extraction");
        assert!(asked(&w, EVALUATE).is_empty(), "{greeting}: no grade");
        assert!(record["evaluation"].is_null(), "{greeting}: {record}");
        // The session still gets its title after the first answer.
        assert_eq!(asked(&w, TITLE).len(), 1, "{greeting}: one title request");
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
        w.fake
            .route(EVALUATE, Reply::text(r#"{"score": 0.9, "reason": "fine"}"#));
        let record = w.run(&["ask", "--json", question]).expect(0).json();
        assert_eq!(asked(&w, EXTRACT).len(), 1, "{question}: extraction");
        assert_eq!(asked(&w, EVALUATE).len(), 1, "{question}: grade");
        let score = record["evaluation"]["score"].as_f64();
        assert!(score.is_some_and(|s| (s - 0.9).abs() < 1e-6), "{record}");
    }
}

#[test]
fn each_call_after_the_answer_has_an_answer_budget_fitted_to_it() {
    let w = World::new("post-budgets");
    w.config("[model]\nreserved_output = 4096\n");
    w.fake.push(Reply::text("Paris."));
    w.run(&["ask", "--json", "What is the capital of France?"])
        .expect(0);
    let budget = |marker: &str| -> u64 {
        let reqs = asked(&w, marker);
        assert_eq!(reqs.len(), 1, "{marker}: one request");
        reqs[0]["max_tokens"]
            .as_u64()
            .unwrap_or_else(|| panic!("{marker}: no max_tokens in {}", reqs[0]))
    };
    let (title, grade, extract) = (budget(TITLE), budget(EVALUATE), budget(EXTRACT));
    assert!(title <= 64, "title {title}");
    assert!(grade <= 160, "grade {grade}");
    assert!(extract <= 512, "extraction {extract}");
    for b in [title, grade, extract] {
        assert!(b < 4096, "never the answer's reserve: {b}");
    }
}

#[test]
fn ask_says_whether_it_waited_for_the_work_after_the_answer() {
    let w = World::new("post-wait");
    w.fake
        .route(EVALUATE, Reply::text(r#"{"score": 0.8, "reason": "ok"}"#));
    w.fake.push(Reply::text("Paris."));
    let waited = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0)
        .json();
    assert_eq!(waited["background_waited"], true, "{waited}");
    assert!(waited["evaluation"]["score"].as_f64().is_some(), "{waited}");

    // --no-wait: the record comes at once, without the grade, and says so.
    w.fake.route(
        EVALUATE,
        Reply::text(r#"{"score": 0.8, "reason": "ok"}"#).after(std::time::Duration::from_secs(3)),
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
