//! An MCP server asking the person for input during a call (`elicitation/create`), as
//! each front end meets it: prompts in `evolve chat`, a form through `serve`'s events
//! and API (checked against the server's schema), declined in a headless `ask` — and
//! never answered by the model. Against the in-repo rmcp test server's `ask_user` and
//! npm server-everything's `trigger-elicitation-request`.

mod support;

use serde_json::{json, Value};
use support::mcp::*;
use support::serve::{chat_body, next_event, stream_events, Server};
use support::{tool_call, Reply, World};

/// The test server as `t`, with `ask_user` at L1 (it runs without a permission question,
/// so only the server's own question is asked).
fn with_asking_server(w: &World) {
    with_test_server(w, &[], "\n[tools.levels]\nt__ask_user = \"L1\"\n");
}

#[test]
fn a_headless_run_declines_and_the_model_is_not_asked() {
    let w = World::new("mcp-elicit-headless");
    with_asking_server(&w);
    w.fake
        .push(tool_call("t__ask_user", r#"{"message": "Your name?"}"#));
    w.fake.push(Reply::Text("No name then.".into()));
    w.run(&["ask", "who am I?"]).expect(0);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains(r#""action":"decline""#)),
        "{results:?}"
    );
    // Two main requests: the question never went to the model.
    assert_eq!(w.main_requests().len(), 2);
}

#[test]
fn chat_asks_each_field_checks_it_and_sends_the_answer() {
    let w = World::new("mcp-elicit-chat");
    with_asking_server(&w);
    w.fake
        .push(tool_call("t__ask_user", r#"{"message": "Your name?"}"#));
    w.fake.push(Reply::Text("Hello.".into()));
    // Fields: name (text), ok (yes/no), both required; "perhaps" is asked again.
    let run = w.run_stdin(&["chat"], "who am I?\nyes\nAda\nperhaps\nyes\n/quit\n");
    assert!(run.stdout.contains("Your name?"), "{}", run.stdout);
    assert!(run.stdout.contains("must be yes or no"), "{}", run.stdout);
    assert!(run.stdout.contains("Hello."), "{}", run.stdout);
    let results = tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains(r#""action":"accept""#)
            && r.contains(r#""name":"Ada""#)
            && r.contains(r#""ok":true"#)),
        "{results:?}"
    );
}

#[test]
fn the_web_ui_gets_a_form_and_its_answer_is_checked_then_sent() {
    let w = World::new("mcp-elicit-serve");
    with_asking_server(&w);
    w.fake
        .push(tool_call("t__ask_user", r#"{"message": "Your name?"}"#));
    w.fake.push(Reply::Text("Hello.".into()));
    let s = Server::start(&w, &[]);
    let rx = stream_events(
        &s,
        &chat_body("who am I?", json!({"stream": true, "evolve_events": true})),
    );
    let sid = next_event(&rx, "evolve.session")["session"]
        .as_str()
        .unwrap()
        .to_string();
    let q = next_event(&rx, "evolve.elicitation");
    assert_eq!(q["message"], "Your name?");
    assert_eq!(q["tool"], "t__ask_user");
    let kinds: Vec<(&str, &str)> = q["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("name", "text"), ("ok", "boolean")]);
    let id = q["id"].as_str().unwrap();
    // A reloaded page finds it waiting.
    let pending = s.get(&format!("/v1/sessions/{sid}/pending")).json();
    assert_eq!(pending["elicitations"][0]["id"], id, "{pending}");
    let path = format!("/v1/sessions/{sid}/elicitations/{id}");
    let bad = s.post(
        &path,
        &json!({"action": "accept", "content": {"name": "Ada"}}).to_string(),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.json()["error"]["param"], "ok", "{}", bad.body);
    assert_eq!(s.post(&path, r#"{"action": "maybe"}"#).status, 400);
    assert_eq!(
        s.post(
            &format!("/v1/sessions/{sid}/elicitations/elicit_999"),
            r#"{"action": "decline"}"#
        )
        .status,
        404
    );
    let ok = s.post(
        &path,
        &json!({"action": "accept", "content": {"name": "Ada", "ok": true}}).to_string(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    let end = next_event(&rx, "evolve.elicitation_end");
    assert_eq!(end["action"], "accept");
    let done = next_event(&rx, "evolve.tool_end");
    let out: &str = done["output"].as_str().unwrap_or_default();
    assert!(out.contains(r#""name":"Ada""#), "{done}");
    let after = s.get(&format!("/v1/sessions/{sid}/pending")).json();
    assert_eq!(after["elicitations"], Value::Array(vec![]));
}

/// npm's server-everything offers `trigger-elicitation-request` only to a client with
/// the elicitation capability; its form has thirteen fields of every kind. In chat only
/// the required name is typed: the rest take the server's defaults.
#[test]
fn server_everythings_form_is_answered_in_chat() {
    let Some(everything) = peer("EVOLVE_TEST_MCP_EVERYTHING") else {
        return;
    };
    let w = World::new("mcp-elicit-everything");
    let node = std::env::var("EVOLVE_TEST_MCP_NODE").unwrap_or_else(|_| "node".into());
    w.config(&format!(
        "[mcp.servers.everything]\ncommand = {node:?}\nargs = [{everything:?}]\n\n\
         [tools.levels]\n\"everything__trigger-elicitation-request\" = \"L1\"\n"
    ));
    w.fake.route(support::CLASSIFY, Reply::Text("{}".into()));
    w.fake
        .push(tool_call("everything__trigger-elicitation-request", "{}"));
    w.fake.push(Reply::Text("Thanks.".into()));
    let input = format!(
        "fill the form\nyes\nAda Lovelace\n{}/quit\n",
        "\n".repeat(12)
    );
    let run = w.run_stdin(&["chat"], &input);
    assert!(run.stdout.contains("Thanks."), "{}", run.stdout);
    let results = tool_results(&w, 1).join("\n");
    assert!(
        results.contains("User provided the requested information")
            && results.contains("Name: Ada Lovelace")
            && results.contains("Favorite Integer: 42"),
        "{results}"
    );
}
