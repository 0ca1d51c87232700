//! Versions of a chat's turns through `evolve serve`: any question edited or answer
//! regenerated makes a new version of that turn, the turns after it stay on the old
//! branch, and the history the model sees follows the version shown
//! (`PUT /v1/sessions/{id}/turns/{n}/shown`).

mod support;

use serde_json::{json, Value};
use support::serve::{asking, chat_body, Server};
use support::{tool_call, Reply, World};

/// Asks `text` (in `sid`, answering turn `replaces` again when given); the model says
/// `answer`. Returns the turn's number and the session.
fn ask(
    w: &World,
    s: &Server,
    sid: Option<&str>,
    replaces: Option<u64>,
    text: &str,
    answer: &str,
) -> (u64, String) {
    w.fake.push(Reply::text(answer));
    let mut extra = json!({});
    if let Some(sid) = sid {
        extra["session"] = json!(sid);
    }
    if let Some(n) = replaces {
        extra["evolve_replace"] = json!(n);
    }
    let r = s.post("/v1/chat/completions", &chat_body(text, extra));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    (
        v["evolve"]["turn"].as_u64().unwrap(),
        v["evolve"]["session"].as_str().unwrap().to_string(),
    )
}

/// The text of the last request to the main model.
fn last_sent(w: &World) -> String {
    support::all_text(&w.main_requests().pop().expect("a request to the model"))
}

/// (turn, version, versions, question) of each question shown.
fn shown(s: &Server, sid: &str) -> Vec<(u64, u64, u64, String)> {
    let m = s.get(&format!("/v1/sessions/{sid}/messages")).json();
    questions(&m)
}

fn questions(m: &Value) -> Vec<(u64, u64, u64, String)> {
    m["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["role"] == "user")
        .map(|x| {
            (
                x["turn"].as_u64().unwrap(),
                x["version"].as_u64().unwrap(),
                x["versions"].as_u64().unwrap(),
                x["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn show(s: &Server, sid: &str, turn: u64, version: Value) -> support::serve::Resp {
    s.request(
        "PUT",
        &format!("/v1/sessions/{sid}/turns/{turn}/shown"),
        &[("Content-Type", "application/json")],
        &json!({ "version": version }).to_string(),
    )
}

/// A three-turn chat about fruit: returns the session.
fn three_turns(w: &World, s: &Server) -> String {
    let (_, sid) = ask(w, s, None, None, "Tell me about apples.", "Apples are red.");
    ask(
        w,
        s,
        Some(&sid),
        None,
        "And bananas?",
        "Bananas are yellow.",
    );
    ask(
        w,
        s,
        Some(&sid),
        None,
        "And cherries?",
        "Cherries are dark.",
    );
    sid
}

#[test]
fn editing_the_first_question_starts_a_branch_the_model_follows_and_switching_back_restores_it() {
    let w = World::new("versions-edit-first");
    let s = Server::start(&w, &[]);
    let sid = three_turns(&w, &s);

    // Turn 1 edited: its new version sees nothing before it.
    let (t4, _) = ask(
        &w,
        &s,
        Some(&sid),
        Some(1),
        "Tell me about plums.",
        "Plums are purple.",
    );
    assert_eq!(t4, 4);
    let sent = last_sent(&w);
    assert!(sent.contains("plums") && !sent.contains("apples"), "{sent}");
    assert!(
        !sent.contains("bananas") && !sent.contains("cherries"),
        "{sent}"
    );
    // The page shows the new branch: one turn, version 2 of 2.
    assert_eq!(
        shown(&s, &sid),
        vec![(4, 2, 2, "Tell me about plums.".into())]
    );

    // The next question's request holds the new turn 1, not the old turns 1–3.
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And their stones?",
        "Plum stones are hard.",
    );
    let sent = last_sent(&w);
    assert!(
        sent.contains("plums") && sent.contains("Plums are purple."),
        "{sent}"
    );
    for old in [
        "apples",
        "Apples are red.",
        "bananas",
        "Bananas are yellow.",
        "cherries",
        "Cherries are dark.",
    ] {
        assert!(!sent.contains(old), "{old} sent on the new branch: {sent}");
    }

    // Back to version 1: the old branch is shown whole, and the model follows it.
    let r = show(&s, &sid, 4, json!(1));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        questions(&r.json()),
        vec![
            (1, 1, 2, "Tell me about apples.".into()),
            (2, 1, 1, "And bananas?".into()),
            (3, 1, 1, "And cherries?".into()),
        ]
    );
    ask(&w, &s, Some(&sid), None, "Which was sweetest?", "Cherries.");
    let sent = last_sent(&w);
    for old in [
        "apples",
        "Apples are red.",
        "bananas",
        "Bananas are yellow.",
        "cherries",
        "Cherries are dark.",
    ] {
        assert!(
            sent.contains(old),
            "{old} missing from the old branch: {sent}"
        );
    }
    assert!(
        !sent.contains("plums") && !sent.contains("stones"),
        "{sent}"
    );

    // And to version 2 again: its branch with its own later turn.
    let r = show(&s, &sid, 1, json!(2));
    assert_eq!(r.status, 200, "{}", r.body);
    let q: Vec<String> = questions(&r.json()).into_iter().map(|q| q.3).collect();
    assert_eq!(q, ["Tell me about plums.", "And their stones?"]);
}

#[test]
fn regenerating_a_middle_answer_keeps_the_turns_before_it_and_hides_the_ones_after() {
    let w = World::new("versions-regen-middle");
    let s = Server::start(&w, &[]);
    let sid = three_turns(&w, &s);

    // The answer of turn 2 again, same question.
    ask(
        &w,
        &s,
        Some(&sid),
        Some(2),
        "And bananas?",
        "Bananas are long.",
    );
    let sent = last_sent(&w);
    assert!(sent.contains("Apples are red."), "{sent}");
    assert!(
        !sent.contains("Bananas are yellow.") && !sent.contains("cherries"),
        "{sent}"
    );
    assert_eq!(
        shown(&s, &sid),
        vec![
            (1, 1, 1, "Tell me about apples.".into()),
            (4, 2, 2, "And bananas?".into()),
        ]
    );
    ask(&w, &s, Some(&sid), None, "Shape of grapes?", "Round.");
    let sent = last_sent(&w);
    assert!(
        sent.contains("Bananas are long.") && sent.contains("Apples are red."),
        "{sent}"
    );
    assert!(
        !sent.contains("Bananas are yellow.") && !sent.contains("cherries"),
        "{sent}"
    );

    // A turn of the hidden branch cannot be answered again until it is shown.
    w.fake.push(Reply::text("unused"));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body(
            "And cherries?",
            json!({"session": sid, "evolve_replace": 3}),
        ),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("not shown"), "{}", r.body);
}

#[test]
fn an_edit_on_a_branch_and_the_last_turn_again_make_versions_of_their_own_turn() {
    let w = World::new("versions-nested");
    let s = Server::start(&w, &[]);
    let (_, sid) = ask(&w, &s, None, None, "Name a river.", "The Nile.");
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "How long is it?",
        "About 6650 km.",
    );
    // The last turn answered again, twice: three versions of turn 2.
    ask(
        &w,
        &s,
        Some(&sid),
        Some(2),
        "How long is it?",
        "Roughly 6650 kilometres.",
    );
    ask(
        &w,
        &s,
        Some(&sid),
        Some(3),
        "How wide is it?",
        "Up to 2.8 km.",
    );
    assert_eq!(
        shown(&s, &sid),
        vec![
            (1, 1, 1, "Name a river.".into()),
            (4, 3, 3, "How wide is it?".into()),
        ]
    );
    // Version 2 of the second turn, chosen through any of its versions' numbers.
    let r = show(&s, &sid, 4, json!(2));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(questions(&r.json())[1], (3, 2, 3, "How long is it?".into()));
    ask(&w, &s, Some(&sid), None, "In miles?", "About 4130 miles.");
    let sent = last_sent(&w);
    assert!(sent.contains("Roughly 6650 kilometres."), "{sent}");
    assert!(
        !sent.contains("About 6650 km.") && !sent.contains("wide"),
        "{sent}"
    );

    // What the switch refuses, with a reason a client can act on.
    let r = show(&s, &sid, 2, json!(4));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("from 1 to 3"), "{}", r.body);
    assert_eq!(show(&s, &sid, 2, json!("two")).status, 400);
    assert_eq!(show(&s, &sid, 99, json!(1)).status, 404);
    assert_eq!(show(&s, "snosuchsession", 1, json!(1)).status, 404);
}

#[test]
fn another_version_is_not_shown_while_a_call_of_the_chat_waits_for_an_answer() {
    let w = World::new("versions-waiting");
    w.config("[agent]\nlearn = false\n");
    let s = Server::start(&w, &[]);
    let (_, sid) = ask(&w, &s, None, None, "Name a colour.", "Blue.");
    ask(&w, &s, Some(&sid), Some(1), "Name a colour.", "Red.");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path":"c.txt","content":"red"}"#,
    ));
    let (_rx, asked_in, _call) = asking(&s, "Write it down.", json!({"session": sid}));
    assert_eq!(asked_in, sid);
    let r = show(&s, &sid, 2, json!(1));
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.body.contains("answer it first") || r.body.contains("running"),
        "{}",
        r.body
    );
    // Nothing changed: the chat still shows version 2.
    assert_eq!(shown(&s, &sid)[0], (2, 2, 2, "Name a colour.".into()));
}

/// The place of each question shown in its conversation (`position`), by turn.
fn positions(s: &Server, sid: &str) -> Vec<(u64, u64)> {
    let m = s.get(&format!("/v1/sessions/{sid}/messages")).json();
    m["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["role"] == "user")
        .map(|x| (x["turn"].as_u64().unwrap(), x["position"].as_u64().unwrap()))
        .collect()
}

#[test]
fn the_turn_numbers_a_person_sees_are_places_in_the_conversation_shown() {
    let w = World::new("versions-positions");
    let s = Server::start(&w, &[]);
    let sid = three_turns(&w, &s);
    // Turn 2 answered again (stored as turn 4), then a follow-up (turn 5).
    ask(
        &w,
        &s,
        Some(&sid),
        Some(2),
        "And bananas?",
        "Bananas are long.",
    );
    ask(&w, &s, Some(&sid), None, "Shape of grapes?", "Round.");
    assert_eq!(positions(&s, &sid), vec![(1, 1), (4, 2), (5, 3)]);
    // The turn's details say its place too.
    for (turn, place) in [(4, 2), (5, 3), (3, 3), (1, 1)] {
        let r = s.get(&format!("/v1/sessions/{sid}/turns/{turn}"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["position"], place, "turn {turn}: {}", r.body);
    }
    // The export numbers turns by their place; the hidden ones are marked.
    let md = s.get(&format!("/v1/sessions/{sid}/export?format=md")).body;
    let line = |text: &str| {
        let at = md
            .find(text)
            .unwrap_or_else(|| panic!("{text} not in {md}"));
        let head = md[..at].rfind("## ").unwrap();
        md[head..at].lines().next().unwrap().to_string()
    };
    assert!(line("Bananas are long.").ends_with("(turn 2)"), "{md}");
    assert!(line("Round.").ends_with("(turn 3)"), "{md}");
    assert!(!md.contains("(turn 4") && !md.contains("(turn 5"), "{md}");
    assert!(
        line("Cherries are dark.").ends_with("(turn 3, answered again later)"),
        "{md}"
    );
    let html = s
        .get(&format!("/v1/sessions/{sid}/export?format=html"))
        .body;
    assert!(
        !html.contains("(turn 4") && !html.contains("(turn 5"),
        "{html}"
    );

    // Back to the old version: its turns are 1, 2, 3 again.
    assert_eq!(show(&s, &sid, 4, json!(1)).status, 200);
    assert_eq!(positions(&s, &sid), vec![(1, 1), (2, 2), (3, 3)]);

    // A turn that failed has nothing to rate, and the refusal names its place (turns 4
    // and 5 are on the hidden branch, so the failed turn is stored as 6, shown as 4).
    w.fake.push(Reply::Status(400, "no such model".into()));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("And pears?", json!({"session": sid.clone()})),
    );
    assert_eq!(r.status, 502, "{}", r.body);
    let failed = positions(&s, &sid)
        .into_iter()
        .find(|&(_, place)| place == 4)
        .map(|(turn, _)| turn)
        .expect("the failed turn is shown");
    assert_eq!(failed, 6);
    let r = s.request(
        "PUT",
        &format!("/v1/sessions/{sid}/turns/{failed}/rating"),
        &[("Content-Type", "application/json")],
        r#"{"rating":"up"}"#,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    let e = &r.json()["error"];
    assert_eq!(e["message"], "turn 4 has no answer to rate", "{}", r.body);
    assert_eq!(e["said"]["params"]["turn"], 4, "{}", r.body);
}

/// The export's "Summary of older turns" once the background summary wrote it.
fn summary_written(s: &Server, sid: &str) -> String {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let md = s.get(&format!("/v1/sessions/{sid}/export?format=md")).body;
        if let Some(at) = md.find("## Summary of older turns") {
            return md[at..].to_string();
        }
        assert!(
            std::time::Instant::now() < end,
            "no summary was written:\n{md}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A chat whose L2 ring holds 4 entries and sends the oldest 3 to the summary, with a
/// summary that repeats what it was given.
fn small_ring(name: &str) -> (World, Server) {
    let w = World::new(name);
    w.config("[history]\nl2_capacity = 4\nl2_overflow = 3\n");
    w.fake.quiet_with(support::SUMMARIZE, support::Reply::Echo);
    let s = Server::start(&w, &[]);
    (w, s)
}

fn summary_requests(w: &World) -> Vec<String> {
    w.fake
        .chat_requests()
        .into_iter()
        .filter(|r| r.body.contains(support::SUMMARIZE))
        .map(|r| r.body)
        .collect()
}

#[test]
fn a_hidden_branch_never_reaches_the_long_term_summary_after_an_early_edit() {
    let (w, s) = small_ring("versions-l3-edit");
    let (_, sid) = ask(
        &w,
        &s,
        None,
        None,
        "Tell me about apples.",
        "Apples are red.",
    );
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And kumquats?",
        "Kumquats are tart.",
    );
    // Turn 1 edited: apples and kumquats are the hidden branch now.
    ask(
        &w,
        &s,
        Some(&sid),
        Some(1),
        "Tell me about plums.",
        "Plums are purple.",
    );
    // The fourth entry overflows the ring: turns 1–3 leave it, only turn 3 is shown.
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And their stones?",
        "Plum stones are hard.",
    );
    let summary = summary_written(&s, &sid);
    assert!(summary.contains("plums"), "{summary}");
    for hidden in ["apples", "Apples are red", "kumquats", "Kumquats are tart"] {
        assert!(
            !summary.contains(hidden),
            "{hidden} in the summary: {summary}"
        );
        for r in summary_requests(&w) {
            assert!(!r.contains(hidden), "{hidden} sent to be summarised: {r}");
        }
    }
    ask(&w, &s, Some(&sid), None, "Which fruit was it?", "Plums.");
    let sent = last_sent(&w);
    assert!(sent.contains("plums"), "{sent}");
    for hidden in ["apples", "kumquats", "tart"] {
        assert!(!sent.contains(hidden), "{hidden} in the prompt: {sent}");
    }
}

#[test]
fn a_regenerated_middle_answer_leaves_its_old_follow_ups_out_of_the_summary() {
    let (w, s) = small_ring("versions-l3-middle");
    let (_, sid) = ask(
        &w,
        &s,
        None,
        None,
        "Tell me about apples.",
        "Apples are red.",
    );
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And kumquats?",
        "Kumquats are tart.",
    );
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And cherries?",
        "Cherries are dark.",
    );
    // Turn 2 asked again with other words: turns 2 and 3 are hidden; 1 stays shown.
    ask(&w, &s, Some(&sid), Some(2), "And figs?", "Figs are sweet.");
    let summary = summary_written(&s, &sid);
    assert!(summary.contains("apples"), "{summary}");
    for hidden in [
        "kumquats",
        "Kumquats are tart",
        "cherries",
        "Cherries are dark",
    ] {
        assert!(
            !summary.contains(hidden),
            "{hidden} in the summary: {summary}"
        );
    }
    ask(&w, &s, Some(&sid), None, "Which was sweetest?", "Figs.");
    let sent = last_sent(&w);
    assert!(sent.contains("apples") && sent.contains("figs"), "{sent}");
    for hidden in ["kumquats", "cherries"] {
        assert!(!sent.contains(hidden), "{hidden} in the prompt: {sent}");
    }
}

#[test]
fn turns_of_a_hidden_branch_leave_the_ring_without_a_summary_of_their_own() {
    let (w, s) = small_ring("versions-l3-hidden-only");
    let (_, sid) = ask(
        &w,
        &s,
        None,
        None,
        "Tell me about apples.",
        "Apples are red.",
    );
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And kumquats?",
        "Kumquats are tart.",
    );
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "And cherries?",
        "Cherries are dark.",
    );
    // Turn 1 edited: the three turns leaving the ring are all on the hidden branch.
    ask(
        &w,
        &s,
        Some(&sid),
        Some(1),
        "Tell me about plums.",
        "Plums are purple.",
    );
    // More turns on the new branch until the ring overflows with them (the background
    // work that trims the ring may run after a later turn).
    let mut summary = None;
    for i in 1..=8 {
        let q = format!("And plum fact {i}?");
        ask(&w, &s, Some(&sid), None, &q, "Plums are plums.");
        let md = s.get(&format!("/v1/sessions/{sid}/export?format=md")).body;
        if i >= 3 {
            summary = md
                .find("## Summary of older turns")
                .map(|at| md[at..].to_string());
            if summary.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
    let summary = summary.unwrap_or_else(|| summary_written(&s, &sid));
    assert!(
        summary.contains("plums") && summary.contains("plum fact"),
        "{summary}"
    );
    let asked = summary_requests(&w);
    assert_eq!(
        asked.len(),
        1,
        "one summary, of the branch shown: {asked:?}"
    );
    for hidden in ["apples", "kumquats", "cherries"] {
        assert!(
            !asked[0].contains(hidden),
            "{hidden} sent to be summarised: {}",
            asked[0]
        );
    }
    ask(
        &w,
        &s,
        Some(&sid),
        None,
        "Which part is best?",
        "The fruit.",
    );
    let sent = last_sent(&w);
    for hidden in ["apples", "kumquats", "cherries"] {
        assert!(!sent.contains(hidden), "{hidden} in the prompt: {sent}");
    }
}
