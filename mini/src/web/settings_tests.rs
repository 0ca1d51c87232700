use super::*;
use crate::llm::diagnose::Check;

#[test]
fn the_page_hints_name_no_variable_or_command() {
    let listed = ["llama3".to_string(), "qwen2".to_string()];
    let cases = [
        (
            Check::fail(
                "main model",
                "default is not in the server's list".into(),
                "set EVOLVE_MODEL to one of: llama3, qwen2",
            ),
            &listed[..],
            "choose one of the models the server lists in the field above, then Save",
        ),
        (
            Check::fail(
                "cheap model",
                "x is not in the server's list".into(),
                "set EVOLVE_CHEAP_MODEL to one of: llama3",
            ),
            &listed[..],
            "choose one of the models the server lists in the field above, then Save",
        ),
        (
            Check::fail(
                "server reachable",
                "cannot reach the model at http://127.0.0.1:9/v1/models: connection refused".into(),
                "is the server running? set OPENAI_BASE_URL",
            ),
            &[][..],
            "check the address and that the server runs, or pick a preset beside the address",
        ),
        (
            Check::fail(
                "tool calling",
                "m answered with text".into(),
                "try a model trained for tools",
            ),
            &listed[..],
            "try a model trained for tools",
        ),
        (
            Check::pass("main model", "llama3 is served".into()),
            &listed[..],
            "",
        ),
    ];
    for (check, models, want) in cases {
        assert_eq!(web_hint(&check, models), want, "{check:?}");
    }
}

#[test]
fn the_same_server_is_recognised_through_spelling_and_no_further() {
    let saved = "http://127.0.0.1:11434/v1";
    for (other, same) in [
        ("http://127.0.0.1:11434/v1", true),
        ("http://127.0.0.1:11434/v1/", true),
        ("HTTP://127.0.0.1:11434/v1", true),
        ("http://127.0.0.1:11435/v1", false),
        ("http://127.0.0.2:11434/v1", false),
        ("https://127.0.0.1:11434/v1", false),
        ("http://127.0.0.1:11434/v2", false),
        ("http://127.0.0.1:11434", false),
        ("http://127.0.0.1:11434@evil.example/v1", false),
        ("http://evil.example/?h=127.0.0.1:11434/v1", false),
        ("not a url", false),
    ] {
        assert_eq!(same_server(other, saved), same, "{other}");
    }
    for (a, b, same) in [
        (
            "https://API.openai.com/v1",
            "https://api.openai.com/v1/",
            true,
        ),
        (
            "https://api.openai.com:443/v1",
            "https://api.openai.com/v1",
            true,
        ),
        ("http://h:80/v1", "http://h/v1", true),
        ("http://h:8080/v1", "http://h/v1", false),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1/", true),
        ("http://[::1]:8080/v1", "http://[::1]:8081/v1", false),
        ("http://[::1]/v1", "http://[::1]:80/v1", true),
    ] {
        assert_eq!(same_server(a, b), same, "{a} {b}");
    }
}

fn parse(v: Value) -> Result<Edit, u16> {
    Edit::parse(v.as_object().expect("an object")).map_err(|r| r.status)
}

#[test]
fn bodies_are_read_field_by_field_and_refused_with_the_field() {
    assert_eq!(parse(json!({})), Ok(Edit::default()));
    let e = parse(
        json!({"base_url": " http://h:1/v1/ ", "api_key": "", "model": " m ",
            "context_window": 4096}),
    )
    .expect("valid");
    assert_eq!(e.base_url.as_deref(), Some("http://h:1/v1"));
    assert_eq!(e.api_key.as_deref(), Some(""));
    assert_eq!(e.model.as_deref(), Some("m"));
    assert_eq!(
        e.fields(),
        ["base_url", "api_key", "model", "context_window"]
    );
    for (body, field) in [
        (json!({"base_url": "localhost:11434"}), "base_url"),
        (json!({"base_url": 3}), "base_url"),
        (json!({"base_url": null}), "base_url"),
        (json!({"model": "  "}), "model"),
        (json!({"cheap_model": ""}), "cheap_model"),
        (json!({"context_window": 0}), "context_window"),
        (json!({"context_window": -5}), "context_window"),
        (json!({"context_window": 1.5}), "context_window"),
        (json!({"api_key": "sk two"}), "api_key"),
        (json!({"api_key": "sk-\n"}), "api_key"),
    ] {
        let r = Edit::parse(body.as_object().unwrap()).expect_err(&body.to_string());
        assert_eq!(r.status, 400);
        let super::super::http::Body::Bytes(bytes) = &r.body else {
            panic!("a complete body")
        };
        let v: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(v["error"]["param"], field, "{body}");
    }
    assert_eq!(parse(json!({"mdoel": "x"})), Err(400));
}

#[test]
fn an_edit_writes_the_active_profiles_table_and_a_cleared_key_stays_cleared() {
    let text = "# mine\n[model]\napi_key_env = \"K\" # from the shell\nmain = \"a\"\n";
    let edit = Edit {
        api_key: Some("sk-new".into()),
        model: Some("b".into()),
        ..Edit::default()
    };
    assert_eq!(
        edit.apply(text, "default"),
        "# mine\n[model]\nmain = \"b\"\napi_key = \"sk-new\"\n"
    );
    let clear = Edit {
        api_key: Some(String::new()),
        ..Edit::default()
    };
    assert_eq!(
        clear.apply("[model]\napi_key = \"sk-x\"\nmain = \"a\"\n", "default"),
        "[model]\nmain = \"a\"\n"
    );
    // In a profile the top level's key would apply again: it is set empty.
    let out = clear.apply("[model]\napi_key = \"sk-x\"\n", "work");
    assert!(written_as_asked(&out, "work", &clear), "{out}");
    assert!(
        out.ends_with("[profiles.work.model]\napi_key = \"\"\n"),
        "{out}"
    );
    // An inline table is not changed behind the user's back.
    let inline = "model = { main = \"a\" }\n";
    assert!(!written_as_asked(
        &edit.apply(inline, "default"),
        "default",
        &edit
    ));
}
