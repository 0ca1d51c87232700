//! What `evolve serve` tells a person carries a stable code with its values beside the
//! English text (`error.said`), so a page can say it in its own language: a schedule a
//! task refuses, a pairing code nobody waits with, a busy or missing chat, a message
//! without a code of its own (its status's, the text as `message`).

mod support;

use serde_json::{json, Value};
use support::serve::Server;
use support::World;

fn said(r: &support::serve::Resp) -> Value {
    r.json()["error"]["said"].clone()
}

#[test]
fn refused_requests_say_their_code_and_values() {
    let w = World::new("said-codes");
    let s = Server::start(&w, &[]);
    // (method, path, body, status, code, a parameter, its value)
    let cases: &[(&str, &str, Value, u16, &str, &str, Value)] = &[
        (
            "POST",
            "/v1/tasks",
            json!({"schedule": "every soon", "question": "weather?"}),
            400,
            "interval_bad",
            "text",
            json!("soon"),
        ),
        (
            "POST",
            "/v1/tasks",
            json!({"schedule": "61 * * * *", "question": "weather?"}),
            400,
            "cron_range",
            "hi",
            json!(59),
        ),
        (
            "POST",
            "/v1/tasks",
            json!({"schedule": "daily 07:30", "question": "  "}),
            400,
            "question_empty",
            "",
            Value::Null,
        ),
        (
            "POST",
            "/v1/channels/pair",
            json!({"code": "nope42"}),
            404,
            "pairing_unknown",
            "code",
            json!("NOPE42"),
        ),
        (
            "DELETE",
            "/v1/skills/no-such-skill",
            Value::Null,
            404,
            "no_skill",
            "name",
            json!("no-such-skill"),
        ),
        (
            "GET",
            "/v1/sessions/snosuchchat/messages",
            Value::Null,
            404,
            "not_found",
            "message",
            Value::Null,
        ),
    ];
    for (method, path, body, status, code, param, value) in cases {
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        let r = s.request(method, path, &[("Content-Type", "application/json")], &body);
        assert_eq!(r.status, *status, "{method} {path}: {}", r.body);
        let got = said(&r);
        assert_eq!(got["code"], *code, "{method} {path}: {}", r.body);
        assert!(got["params"].is_object(), "{}", r.body);
        if !param.is_empty() && !value.is_null() {
            assert_eq!(got["params"][param], *value, "{method} {path}: {}", r.body);
        }
        // The English text stays the message.
        assert!(
            !r.json()["error"]["message"]
                .as_str()
                .unwrap_or("")
                .is_empty(),
            "{}",
            r.body
        );
    }
    // A message without a code of its own: its status's, the whole text as `message`.
    let r = s.get("/v1/sessions/snosuchchat/messages");
    assert_eq!(said(&r)["params"]["message"], r.json()["error"]["message"]);
}
