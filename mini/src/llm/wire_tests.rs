use super::*;

#[test]
fn embeddings_come_back_in_input_order_or_say_what_is_wrong() {
    let ok =
        r#"{"data": [{"index": 1, "embedding": [0.5, 1]}, {"index": 0, "embedding": [2, 3]}]}"#;
    assert_eq!(
        parse_embeddings(ok, 2),
        Ok(vec![vec![2.0, 3.0], vec![0.5, 1.0]])
    );
    let no_index = r#"{"data": [{"embedding": [1]}, {"embedding": [2]}]}"#;
    assert_eq!(
        parse_embeddings(no_index, 2),
        Ok(vec![vec![1.0], vec![2.0]])
    );
    let cases = [
        ("not json", "not JSON"),
        (r#"{"error": "x"}"#, "no `data` list"),
        (
            r#"{"data": [{"embedding": [1]}]}"#,
            "1 embeddings for 2 inputs",
        ),
        (
            r#"{"data": [{"embedding": []}, {"embedding": [1]}]}"#,
            "embedding 0",
        ),
        (
            r#"{"data": [{"embedding": ["x"]}, {"embedding": [1]}]}"#,
            "embedding 0",
        ),
        (
            r#"{"data": [{"index": 7, "embedding": [1]}, {"embedding": [1]}]}"#,
            "embedding 0",
        ),
    ];
    for (body, want) in cases {
        let e = parse_embeddings(body, 2).expect_err(body);
        assert!(e.contains(want), "{body}: {e}");
    }
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolSpec]) -> WireRequest<'a> {
    WireRequest {
        model: "m",
        messages,
        tools,
        max_tokens: Some(100),
        max_tokens_key: "max_tokens",
        temperature: Some(0.7),
        json: true,
        stream_options: true,
        tool_choice: None,
        images: true,
    }
}

#[test]
fn tool_choice_names_a_tool_or_a_mode_and_is_dropped_when_refused() {
    let msgs = [Message::user("hi")];
    let tools = [ToolSpec {
        name: "get_time".into(),
        description: "time".into(),
        parameters: json!({"type": "object"}),
    }];
    let mut w = request(&msgs, &tools);
    w.tool_choice = Some("get_time");
    assert_eq!(
        body(&w, false)["tool_choice"],
        json!({"type": "function", "function": {"name": "get_time"}})
    );
    w.tool_choice = Some("required");
    assert_eq!(body(&w, false)["tool_choice"], "required");
    assert_eq!(
        w.relax(400, "unknown field tool_choice"),
        Some("tool_choice")
    );
    assert!(body(&w, false).get("tool_choice").is_none());
    let no_tools = request(&msgs, &[]);
    assert!(
        body(&no_tools, false).get("tool_choice").is_none(),
        "never without tools"
    );
}

fn body(w: &WireRequest<'_>, stream: bool) -> Value {
    serde_json::from_str(&w.body(stream)).expect("the body is JSON")
}

#[test]
fn optional_fields_appear_only_when_they_apply() {
    let messages = [Message::user("hi")];
    let tool = ToolSpec {
        name: "t".into(),
        description: "d".into(),
        parameters: Value::Null,
    };
    let tools = [tool];
    let mut w = request(&messages, &[]);
    let b = body(&w, true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert_eq!(b["response_format"], json!({"type": "json_object"}));
    assert_eq!(b["max_tokens"], 100);
    assert_eq!(b["temperature"], 0.7);
    assert!(b.get("tools").is_none());
    assert!(body(&w, false).get("stream_options").is_none());

    w.tools = &tools;
    w.max_tokens = None;
    w.temperature = None;
    w.json = false;
    let b = body(&w, false);
    for absent in ["max_tokens", "temperature", "response_format"] {
        assert!(b.get(absent).is_none(), "{absent}");
    }
    assert_eq!(
        b["tools"],
        json!([{"type": "function", "function": {"name": "t", "description": "d",
                "parameters": {"type": "object", "properties": {}}}}])
    );
}

#[test]
fn messages_never_carry_null_content_or_reasoning() {
    let mut assistant = Message::assistant_calls(
        "",
        vec![ToolCall {
            id: "c".into(),
            name: "t".into(),
            arguments: "{\"a\":1}".into(),
        }],
    );
    assistant.reasoning = Some("secret thoughts".into());
    let cases = [
        (
            assistant,
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{\"a\":1}"}}]}),
        ),
        (
            Message::user("look"),
            json!({"role": "user", "content": "look"}),
        ),
        (
            Message::tool_result("c", "t", "out"),
            json!({"role": "tool", "content": "out", "tool_call_id": "c", "name": "t"}),
        ),
        (
            Message::system("s"),
            json!({"role": "system", "content": "s"}),
        ),
    ];
    for (m, expected) in cases {
        assert_eq!(message_json(&m, true), expected);
    }
}

#[test]
fn images_go_as_parts_after_the_text_or_as_a_note_to_a_text_only_model() {
    let mut user = Message::user("what is this?");
    user.images = vec!["data:image/png;base64,AA".into(), "https://x/y.jpg".into()];
    assert_eq!(
        message_json(&user, true),
        json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
            {"type": "image_url", "image_url": {"url": "https://x/y.jpg"}},
        ]})
    );
    assert_eq!(
        message_json(&user, false),
        json!({"role": "user", "content": "what is this?\n\n[2 images were attached \
            here; this model does not take images, so they were left out]"})
    );
    // The refusals servers give, each dropping the images once; other errors, and a
    // request without images, are not about them.
    let messages = [user];
    for (status, said) in [
        (
            400,
            "image input is not supported - hint: you may need to provide the mmproj",
        ),
        (500, "image input is not supported"),
        (
            400,
            "Invalid content type. image_url is only supported by certain models.",
        ),
        (422, "messages.0.content: Input should be a valid string"),
        (400, "this model has no vision support"),
    ] {
        let mut w = request(&messages, &[]);
        w.json = false;
        assert_eq!(w.relax(status, said), Some("images"), "{status} {said}");
        assert!(!w.images);
        assert_eq!(w.relax(status, said), None, "only once: {said}");
    }
    let mut w = request(&messages, &[]);
    w.json = false;
    assert_eq!(w.relax(500, "out of memory"), None);
    assert_eq!(w.relax(401, "image"), None);
    let plain = [Message::user("hi")];
    let mut w = request(&plain, &[]);
    w.json = false;
    assert_eq!(w.relax(400, "image input is not supported"), None);
}

#[test]
fn refused_parameters_are_dropped_one_at_a_time() {
    let messages = [Message::user("hi")];
    // (status, server message, what is dropped)
    let cases: &[(u16, &str, Option<&str>)] = &[
        (
            400,
            "Invalid parameter: response_format",
            Some("response_format"),
        ),
        (
            422,
            "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.",
            Some("max_tokens (renamed max_completion_tokens)"),
        ),
        (
            400,
            "temperature must be 1 for this model",
            Some("temperature"),
        ),
        (400, "unknown field stream_options", Some("stream_options")),
        (400, "something else entirely", Some("response_format")),
        (401, "response_format", None),
        (404, "response_format", None),
        (500, "response_format", None),
    ];
    for (status, message, expected) in cases {
        let mut w = request(&messages, &[]);
        assert_eq!(w.relax(*status, message), *expected, "{status} {message}");
    }
    // Nothing left to drop: the error stands.
    let mut w = request(&messages, &[]);
    w.json = false;
    assert_eq!(w.relax(400, "something else entirely"), None);
}

#[test]
fn completions_are_read_whatever_their_shape() {
    let cases = [
        (
            r#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"model":"x","usage":{"prompt_tokens":5,"completion_tokens":1}}"#,
            ("hi", 0, None),
        ),
        (
            r#"{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"t","arguments":{"a":1}}}]}}]}"#,
            ("", 1, None),
        ),
        (
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"reasoning_content":"why"}}]}"#,
            ("ab", 0, Some("why")),
        ),
    ];
    for (body, (content, calls, reasoning)) in cases {
        let p = parse_completion(body.to_string()).expect(body);
        assert_eq!(p.message.content, content);
        assert_eq!(p.message.tool_calls.len(), calls);
        assert_eq!(p.message.reasoning.as_deref(), reasoning);
        if calls > 0 {
            assert_eq!(p.message.tool_calls[0].id, "call_0");
            assert_eq!(p.message.tool_calls[0].arguments, r#"{"a":1}"#);
        }
    }
    for bad in [
        "",
        "<html>",
        r#"{"choices":[]}"#,
        r#"{"error":{"message":"nope"}}"#,
    ] {
        assert!(parse_completion(bad.to_string()).is_err(), "{bad}");
    }
}

#[test]
fn the_servers_own_message_is_found() {
    let long = "y".repeat(1000);
    let cases = [
        (
            r#"{"error":{"message":"bad key","type":"auth"}}"#,
            "bad key".to_string(),
        ),
        (
            r#"{"error":"model not found"}"#,
            "model not found".to_string(),
        ),
        (r#"{"detail":"Not Found"}"#, "Not Found".to_string()),
        (r#"{"message":"overloaded"}"#, "overloaded".to_string()),
        ("plain\ntext  error", "plain text error".to_string()),
        (long.as_str(), format!("{}…", "y".repeat(300))),
    ];
    for (body, expected) in cases {
        assert_eq!(server_message(body), expected);
    }
}

#[test]
fn model_lists_from_openai_and_ollama() {
    let cases = [
        (r#"{"data":[{"id":"a"},{"id":"b"}]}"#, vec!["a", "b"]),
        (r#"{"models":[{"name":"llama3"}]}"#, vec!["llama3"]),
        (r#"{"data":[]}"#, vec![]),
    ];
    for (body, expected) in cases {
        assert_eq!(parse_models(body).expect(body), expected);
    }
    assert!(parse_models("{}").is_err());
    assert!(parse_models("nope").is_err());
}
