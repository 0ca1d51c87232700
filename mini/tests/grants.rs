//! A session's "always allow" list (the session's tool whitelist), shown and withdrawn:
//! `GET`/`DELETE /v1/sessions/{id}/grants` in `serve`, `/permissions` and
//! `/permissions revoke N|LABEL|all` in chat. A withdrawn tool is asked about again at
//! its next call.

mod support;

use serde_json::json;
use support::serve::{asking, next_event, Server};
use support::*;

/// Runs one streamed turn whose `write_file` call is answered `answer`; the session.
fn turn_answered(s: &Server, w: &World, file: &str, answer: &str, session: Option<&str>) -> String {
    w.fake.push(tool_call(
        "write_file",
        &json!({"path": file, "content": "x"}).to_string(),
    ));
    w.fake.push(Reply::text(format!("Handled {file}.")));
    let extra = session.map_or(json!({}), |sid| json!({ "session": sid }));
    let (rx, sid, ask) = asking(s, &format!("write {file}"), extra);
    assert_eq!(ask["call"]["tool"], "write_file", "{ask}");
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    let r = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({ "answer": answer }).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    next_event(&rx, "evolve.turn");
    sid
}

#[test]
fn the_api_lists_a_sessions_grants_and_withdraws_them() {
    let w = World::new("grants-api");
    let s = Server::start(&w, &[]);
    let sid = turn_answered(&s, &w, "a.txt", "always", None);
    let path = format!("/v1/sessions/{sid}/grants");

    let listed = s.get(&path);
    assert_eq!(listed.status, 200, "{}", listed.body);
    let write_file =
        json!({"tool": "write_file", "command": null, "level": "L3", "label": "write_file"});
    assert_eq!(listed.json(), json!({ "data": [write_file] }));

    // Unknown sessions, grants the session does not hold, requests that name nothing.
    assert_eq!(s.get("/v1/sessions/nope/grants").status, 404);
    let r = s.request("DELETE", "/v1/sessions/nope/grants?all=true", &[], "");
    assert_eq!(r.status, 404, "{}", r.body);
    let r = s.request("DELETE", &path, &[], r#"{"tool": "read_file"}"#);
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.error_message().contains("read_file"), "{}", r.body);
    for body in [
        "",
        "{}",
        r#"{"tool": 5}"#,
        r#"{"tool": "write_file", "all": true}"#,
        r#"{"tools": "x"}"#,
    ] {
        let r = s.request("DELETE", &path, &[], body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    let r = s.request("PATCH", &path, &[], "{}");
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET, HEAD, DELETE"))
    );
    assert_eq!(
        s.get(&path).json()["data"],
        json!([write_file]),
        "nothing withdrawn yet"
    );

    // One grant by its tool, in the query.
    let r = s.request("DELETE", &format!("{path}?tool=write_file"), &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"revoked": [write_file], "data": []}));
    assert_eq!(s.get(&path).json()["data"], json!([]));

    // Withdrawn: the next call is asked again; "always" once more, then all at once.
    turn_answered(&s, &w, "b.txt", "always", Some(&sid));
    let r = s.request("DELETE", &path, &[], r#"{"all": true}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["revoked"], json!([write_file]));
    turn_answered(&s, &w, "c.txt", "no", Some(&sid));
    let r = s.request("DELETE", &path, &[], r#"{"all": true}"#);
    assert_eq!(r.json(), json!({"revoked": [], "data": []}));

    let api = s.get("/openapi.json").json();
    let doc = &api["paths"]["/v1/sessions/{id}/grants"];
    assert!(doc["get"].is_object() && doc["delete"].is_object(), "{doc}");
}

#[test]
fn chat_numbers_the_grants_and_revokes_them() {
    let w = World::new("grants-chat");
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "a.txt", "content": "one"}"#,
    ));
    w.fake.push(Reply::text("Wrote a.txt."));
    let mut chat = Chat::start(&w);
    chat.send("/help");
    chat.wait_for("/permissions revoke N|LABEL|all");
    chat.send("write a.txt");
    chat.wait_for("[yes/no/always]");
    chat.send("always");
    chat.wait_for("Wrote a.txt.");

    chat.send("/permissions");
    chat.wait_for("1. write_file (L3)");
    chat.send("/permissions revoke read_file");
    chat.wait_for("no grant read_file in this session");
    chat.send("/permissions revoke 1");
    chat.wait_for("revoked: write_file");
    chat.send("/permissions");
    chat.wait_for("no \"always\" grants in this session");

    // Asked again, granted again, and withdrawn by label; `all` with nothing left.
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "b.txt", "content": "two"}"#,
    ));
    w.fake.push(Reply::text("Wrote b.txt."));
    chat.send("write b.txt");
    chat.wait_for_count("[yes/no/always]", 2);
    chat.send("always");
    chat.wait_for("Wrote b.txt.");
    chat.send("/permissions revoke write_file");
    chat.wait_for_count("revoked: write_file", 2);
    chat.send("/permissions revoke all");
    chat.wait_for("nothing to revoke: this session has no grants");
    let _ = chat.finish();
}
