//! `evolve usage`: the tokens the turn records counted, summed for today, per session
//! and per model — through the built binary against the scripted fake model (its usage
//! is characters / 4).

mod support;

use serde_json::Value;
use support::*;

fn tokens(v: &Value) -> (u64, u64) {
    (
        v["prompt_tokens"].as_u64().unwrap_or(0),
        v["completion_tokens"].as_u64().unwrap_or(0),
    )
}

#[test]
fn usage_sums_the_recorded_tokens_today_per_session_and_per_model() {
    let w = World::new("usage-sums");
    let empty = w.run(&["usage", "--json"]).expect(0).json();
    assert_eq!(empty["total"]["turns"], 0, "{empty}");
    assert_eq!(empty["sessions"], serde_json::json!([]));

    let mut records = Vec::new();
    w.fake.push(Reply::text("Paris."));
    let first = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    records.push(first);
    w.fake.push(Reply::text("About 2.1 million people."));
    records.push(
        w.run(&[
            "ask",
            "--json",
            "--session",
            &sid,
            "How many people live there?",
        ])
        .expect(0)
        .json(),
    );
    w.fake.push(Reply::text(
        "A long answer about the history of Berlin, ".repeat(80),
    ));
    records.push(
        w.run(&["ask", "--json", "Tell me about the history of Berlin"])
            .expect(0)
            .json(),
    );
    let sum = |role: &str, rs: &[Value]| {
        rs.iter().fold((0, 0), |(p, c), r| {
            let (rp, rc) = tokens(&r["usage"][role]);
            (p + rp, c + rc)
        })
    };
    let (main, cheap) = (sum("main", &records), sum("cheap", &records));
    assert!(main.0 > 0 && cheap.0 > 0, "the fake reports usage");

    let usage = w.run(&["usage", "--json"]).expect(0).json();
    assert_eq!(usage["total"]["turns"], 3, "{usage}");
    assert_eq!(tokens(&usage["total"]["main"]), main, "{usage}");
    assert_eq!(tokens(&usage["total"]["cheap"]), cheap, "{usage}");
    assert_eq!(usage["today"], usage["total"], "every turn ran today");

    let models = usage["models"].as_array().unwrap();
    assert_eq!(models[0]["role"], "main");
    assert_eq!(models[0]["model"], "fake-main");
    assert_eq!(tokens(&models[0]), main);
    assert_eq!(models[1]["model"], "fake-cheap");
    assert_eq!(tokens(&models[1]), cheap);

    // Per session, most tokens first: the long Berlin answer, then the two-turn one.
    let sessions = usage["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[1]["session"], sid.as_str());
    assert_eq!(sessions[1]["turns"], 2);
    assert_eq!(
        tokens(&sessions[1]["main"]),
        sum("main", &records[..2]),
        "{usage}"
    );
    assert_eq!(sessions[0]["turns"], 1);

    let text = w.run(&["usage"]).expect(0).stdout;
    assert!(text.starts_with("today: 3 turns, main "), "{text}");
    assert!(text.contains("fake-cheap"), "{text}");
    assert!(text.contains(&sid), "{text}");
}
