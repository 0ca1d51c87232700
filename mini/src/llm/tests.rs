//! The client against the scripted fake server (`evolve-fake-llm`): what a user of the
//! agent would notice — answers, streams, tool calls, retries, timeouts, errors — and
//! what the client sent.

use std::sync::Arc;
use std::time::Duration;

use evolve_core::history::{Message, ToolCall};
use evolve_fake_llm::{FakeLlm, Reply};
use serde_json::{json, Value};

use super::*;
use crate::cancel::Cancel;
use crate::llm::settings::{ModelConfig, Timeouts};
use crate::secret::Secret;

const KEY: &str = "sk-test-secret-123456";

fn config(base_url: &str) -> ModelConfig {
    ModelConfig {
        base_url: base_url.to_string(),
        base_url_is_default: false,
        api_key: Some(Secret::new(KEY)),
        main: "fake-main".into(),
        cheap: "fake-cheap".into(),
        embedding_model: None,
        transcription: None,
        context_window: 8192,
        reserved_output: 256,
        max_answer_bytes: crate::llm::settings::DEFAULT_MAX_ANSWER_BYTES,
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(10),
            per_read: Duration::from_secs(10),
            overall: Duration::from_secs(20),
        },
        max_retries: 2,
        stream: true,
        temperature: Some(0.2),
        tools: super::settings::ToolCalling::Auto,
        tools_learned_file: None,
    }
}

fn client_with(cfg: ModelConfig) -> Client {
    Client::new(cfg).with_backoff_start(Duration::from_millis(5))
}

fn client(fake: &FakeLlm) -> Client {
    client_with(config(&fake.base_url()))
}

fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        known_tools: Vec::new(),
        role: ModelRole::Main,
        messages: vec![Message::system("You are terse."), Message::user("hi")],
        tools: Vec::new(),
        stream,
        max_tokens: None,
        temperature: None,
        json: false,
        tool_choice: None,
    }
}

fn get_time_tool() -> ToolSpec {
    ToolSpec {
        name: "get_time".into(),
        description: "The current time.".into(),
        parameters: json!({"type": "object", "properties": {"zone": {"type": "string"}}}),
    }
}

/// Runs one call; returns the result and the deltas seen, as `Debug` strings.
fn run(client: &Client, req: &ChatRequest) -> (Result<ChatResponse, LlmError>, Vec<String>) {
    let cancel = Cancel::new();
    let mut deltas = Vec::new();
    let r = client.chat(req, &mut |d| deltas.push(format!("{d:?}")), &cancel);
    (r, deltas)
}

fn streamed_text(deltas: &[String]) -> String {
    deltas
        .iter()
        .filter_map(|d| d.strip_prefix("Content(\"")?.strip_suffix("\")"))
        .collect()
}

#[test]
fn a_plain_answer_with_usage_and_the_request_it_came_from() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("Hello there."));
    let (r, deltas) = run(&client(&fake), &request(false));
    let r = r.expect("an answer");
    assert_eq!(r.message.content, "Hello there.");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.model, "fake-main");
    assert!(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
    assert!(deltas.is_empty(), "no deltas when not streaming");

    let sent = &fake.chat_requests()[0];
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let j = &sent.json;
    assert_eq!(j["model"], "fake-main");
    assert_eq!(j["stream"], false);
    assert_eq!(j["max_tokens"], 256);
    assert_eq!(j["temperature"], 0.2);
    for absent in ["tools", "stream_options", "response_format"] {
        assert!(j.get(absent).is_none(), "{absent} sent: {j}");
    }
    assert_eq!(
        j["messages"],
        json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}])
    );
}

#[test]
fn a_base_url_with_a_query_keeps_it_after_the_path() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("Hello there."));
    let base = format!("{}/?api-version=2024-06-01", fake.base_url());
    let (r, _) = run(&client_with(config(&base)), &request(false));
    assert_eq!(r.expect("an answer").message.content, "Hello there.");
    assert_eq!(fake.chat_requests().len(), 1, "sent to /chat/completions");
}

#[test]
fn the_cheap_model_gets_its_own_name_and_no_main_temperature() {
    let fake = FakeLlm::start();
    let mut req = request(false);
    req.role = ModelRole::Cheap;
    req.max_tokens = Some(40);
    let (r, _) = run(&client(&fake), &req);
    assert_eq!(r.expect("an answer").model, "fake-cheap");
    let j = &fake.chat_requests()[0].json;
    assert_eq!(j["model"], "fake-cheap");
    assert_eq!(j["max_tokens"], 40);
    assert!(j.get("temperature").is_none());
}

#[test]
fn a_streamed_answer_arrives_in_pieces_with_usage() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("Streaming is incremental."));
    let (r, deltas) = run(&client(&fake), &request(true));
    let r = r.expect("an answer");
    assert_eq!(r.message.content, "Streaming is incremental.");
    assert!(deltas.len() > 3, "{deltas:?}");
    assert_eq!(streamed_text(&deltas), "Streaming is incremental.");
    assert!(r.usage.completion_tokens > 0);
    let j = &fake.chat_requests()[0].json;
    assert_eq!(j["stream"], true);
    assert_eq!(j["stream_options"], json!({"include_usage": true}));
}

#[test]
fn streamed_tool_calls_with_repeated_headers_assemble_once() {
    let fake = FakeLlm::start();
    fake.repeat_tool_headers(true);
    fake.push(Reply::TextAndTools(
        "Checking.".into(),
        vec![
            ("get_time".into(), r#"{"zone":"Europe/Paris"}"#.into()),
            ("get_time".into(), r#"{"zone":"Asia/Tokyo"}"#.into()),
        ],
    ));
    let mut req = request(true);
    req.tools = vec![get_time_tool()];
    let (r, deltas) = run(&client(&fake), &req);
    let r = r.expect("an answer");
    let calls: Vec<(&str, &str, &str)> = r
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "get_time", r#"{"zone":"Europe/Paris"}"#),
            ("call_2", "get_time", r#"{"zone":"Asia/Tokyo"}"#)
        ]
    );
    assert_eq!(r.message.content, "Checking.");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    let announced: Vec<&String> = deltas
        .iter()
        .filter(|d| d.starts_with("ToolCall"))
        .collect();
    assert_eq!(
        announced,
        [
            r#"ToolCall { index: 0, name: "get_time" }"#,
            r#"ToolCall { index: 1, name: "get_time" }"#
        ]
    );
    let sent = &fake.chat_requests()[0];
    assert_eq!(sent.tool_names(), ["get_time"]);
    assert_eq!(sent.json["tools"][0]["type"], "function");
}

#[test]
fn unstreamed_tool_calls_with_null_content_are_read() {
    let fake = FakeLlm::start();
    fake.push(Reply::tool("get_time", r#"{"zone":"UTC"}"#));
    let mut req = request(false);
    req.tools = vec![get_time_tool()];
    let r = run(&client(&fake), &req).0.expect("an answer");
    assert_eq!(r.message.content, "");
    assert_eq!(r.message.tool_calls.len(), 1);
    assert_eq!(r.message.tool_calls[0].name, "get_time");
    assert_eq!(r.message.tool_calls[0].arguments, r#"{"zone":"UTC"}"#);
}

#[test]
fn the_conversation_goes_out_without_null_content() {
    let fake = FakeLlm::start();
    let mut req = request(false);
    let call = ToolCall {
        id: "call_9".into(),
        name: "get_time".into(),
        arguments: String::new(),
    };
    req.messages.push(Message::assistant_calls("", vec![call]));
    req.messages
        .push(Message::tool_result("call_9", "get_time", "12:00"));
    run(&client(&fake), &req).0.expect("an answer");
    let sent = &fake.chat_requests()[0];
    assert!(!sent.body.contains("null"), "{}", sent.body);
    let m = sent.messages();
    assert_eq!(
        m[2],
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
        ]})
    );
    assert_eq!(
        m[3],
        json!({"role": "tool", "content": "12:00", "tool_call_id": "call_9", "name": "get_time"})
    );
}

#[test]
fn two_server_errors_then_success_is_a_success() {
    let fake = FakeLlm::start();
    fake.push(Reply::error(500, "boom"));
    fake.push(Reply::error(503, "loading"));
    fake.push(Reply::text("third time lucky"));
    for stream in [false, true] {
        if stream {
            fake.push(Reply::error(500, "boom"));
            fake.push(Reply::error(502, "bad gateway"));
            fake.push(Reply::text("third time lucky"));
        }
        let r = run(&client(&fake), &request(stream)).0.expect("an answer");
        assert_eq!(r.message.content, "third time lucky");
    }
    assert_eq!(fake.chat_requests().len(), 6);
}

#[test]
fn server_errors_outlasting_the_retries_are_reported_as_unreachable() {
    let fake = FakeLlm::start();
    for _ in 0..3 {
        fake.push(Reply::error(500, "model crashed"));
    }
    let err = run(&client(&fake), &request(false))
        .0
        .expect_err("an error");
    assert_eq!(fake.chat_requests().len(), 3, "1 attempt + 2 retries");
    assert!(err.is_unreachable());
    let text = err.to_string();
    for part in [
        "/v1/chat/completions",
        "500",
        "model crashed",
        "check its logs",
    ] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
}

#[test]
fn rate_limits_are_retried_as_the_server_asks() {
    let fake = FakeLlm::start();
    fake.push(Reply::StatusRetryAfter(429, 0));
    fake.push(Reply::text("after the limit"));
    let r = run(&client(&fake), &request(true)).0.expect("an answer");
    assert_eq!(r.message.content, "after the limit");
    assert_eq!(fake.chat_requests().len(), 2);
}

#[test]
fn client_errors_are_not_retried_and_say_what_to_check() {
    let cases = [
        (
            401,
            format!("Incorrect API key provided: {KEY}"),
            "check OPENAI_API_KEY",
        ),
        (
            404,
            "The model `fake-main` does not exist".to_string(),
            "should end in /v1",
        ),
    ];
    for (status, message, hint) in cases {
        let fake = FakeLlm::start();
        fake.push(Reply::error(status, &message));
        let err = run(&client(&fake), &request(true)).0.expect_err("an error");
        assert_eq!(fake.chat_requests().len(), 1, "no retry on {status}");
        assert!(!err.is_unreachable());
        let text = err.to_string();
        let url = format!("{}/chat/completions", fake.base_url());
        for part in [url.as_str(), &status.to_string(), hint] {
            assert!(text.contains(part), "{text:?} lacks {part:?}");
        }
        assert!(!text.contains(KEY), "the key leaked: {text}");
        assert!(text.contains("Incorrect API key provided: ***") || status != 401);
    }
}

#[test]
fn a_json_request_refused_for_response_format_is_sent_again_without_it() {
    let fake = FakeLlm::start();
    fake.push(Reply::error(400, "response_format is not supported"));
    fake.push(Reply::text(r#"{"ok":true}"#));
    let mut req = request(false);
    req.json = true;
    let r = run(&client(&fake), &req).0.expect("an answer");
    assert_eq!(r.message.content, r#"{"ok":true}"#);
    let sent = fake.chat_requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].json["response_format"],
        json!({"type": "json_object"})
    );
    assert!(sent[1].json.get("response_format").is_none());
}

/// A port that was free a moment ago: nothing listens there.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().expect("an address").port()
}

#[test]
fn an_unreachable_server_names_the_url_and_what_to_set() {
    let base = format!("http://127.0.0.1:{}/v1", closed_port());
    let mut cfg = config(&base);
    cfg.max_retries = 1;
    let err = run(&client_with(cfg.clone()), &request(true))
        .0
        .expect_err("nobody listens");
    assert!(matches!(err, LlmError::Connect { .. }), "{err:?}");
    assert!(err.is_unreachable());
    let text = err.to_string();
    for part in [
        format!("{base}/chat/completions").as_str(),
        "connection refused",
        "is the server running? set OPENAI_BASE_URL",
    ] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }

    cfg.base_url_is_default = true;
    let text = client_with(cfg)
        .list_models()
        .expect_err("nobody listens")
        .to_string();
    for part in [
        "nothing is configured",
        "OPENAI_BASE_URL",
        "EVOLVE_MODEL",
        "evolve config init",
    ] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
}

fn short(fake: &FakeLlm) -> Client {
    let mut cfg = config(&fake.base_url());
    cfg.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_millis(300),
        per_read: Duration::from_millis(300),
        overall: Duration::from_millis(300),
    };
    client_with(cfg)
}

#[test]
fn a_silent_stream_times_out_without_a_retry() {
    let fake = FakeLlm::start();
    fake.push(Reply::Hang(Duration::from_secs(30)));
    let err = run(&short(&fake), &request(true)).0.expect_err("a timeout");
    assert!(
        matches!(err, LlmError::Timeout { phase, .. } if phase == transport::PHASE_FIRST_BYTE),
        "{err:?}"
    );
    assert!(err.is_unreachable());
    assert_eq!(fake.chat_requests().len(), 1);
}

#[test]
fn a_stream_that_stops_after_some_text_times_out_as_idle() {
    let fake = FakeLlm::start();
    fake.push(Reply::TextThenHang("Hello".into(), Duration::from_secs(30)));
    let mut c = config(&fake.base_url());
    c.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(5),
        per_read: Duration::from_millis(300),
        overall: Duration::from_secs(20),
    };
    let (r, deltas) = run(&client_with(c), &request(true));
    let err = r.expect_err("a timeout");
    assert!(
        matches!(err, LlmError::Timeout { phase, .. } if phase == transport::PHASE_IDLE),
        "{err:?}"
    );
    assert!(
        !deltas.is_empty(),
        "the text before the silence was delivered"
    );
}

#[test]
fn a_stream_that_stalls_midway_is_a_timeout_and_is_not_retried() {
    let fake = FakeLlm::start();
    fake.push(Reply::TextThenHang(
        "partial answer".into(),
        Duration::from_secs(30),
    ));
    let (r, deltas) = run(&short(&fake), &request(true));
    assert!(matches!(r, Err(LlmError::Timeout { .. })), "{r:?}");
    assert_eq!(streamed_text(&deltas), "partial answer");
    assert_eq!(fake.chat_requests().len(), 1);
}

#[test]
fn servers_that_never_answer_time_out_in_the_right_phase() {
    let cases = [
        (true, transport::PHASE_FIRST_BYTE),
        (false, transport::PHASE_OVERALL),
    ];
    for (stream, phase) in cases {
        let fake = FakeLlm::start();
        fake.push(Reply::HangBeforeHeaders(Duration::from_secs(30)));
        let err = run(&short(&fake), &request(stream))
            .0
            .expect_err("a timeout");
        match &err {
            LlmError::Timeout { url, phase: p } => {
                assert_eq!(*p, phase);
                assert!(url.ends_with("/v1/chat/completions"));
            }
            other => panic!("stream={stream}: {other:?}"),
        }
        assert!(err.to_string().contains("config.toml"));
    }
}

#[test]
fn malformed_stream_events_are_a_protocol_error_quoting_the_line() {
    let fake = FakeLlm::start();
    fake.push(Reply::RawSse(vec![
        r#"data: {"choices":[{"delta":{"content":"a"}}]}"#.into(),
        "".into(),
        "data: {not json at all".into(),
        "".into(),
    ]));
    let (r, deltas) = run(&client(&fake), &request(true));
    let err = r.expect_err("a protocol error");
    assert!(matches!(err, LlmError::Protocol { .. }), "{err:?}");
    assert!(!err.is_unreachable());
    let text = err.to_string();
    assert!(text.contains("{not json at all"), "{text}");
    assert!(text.contains(&fake.base_url()), "{text}");
    assert_eq!(deltas.len(), 1);
    assert_eq!(fake.chat_requests().len(), 1);
}

#[test]
fn long_bad_lines_are_quoted_short() {
    let fake = FakeLlm::start();
    let junk = format!("data: {{{}", "x".repeat(5000));
    fake.push(Reply::RawSse(vec![junk, "".into()]));
    let text = run(&client(&fake), &request(true))
        .0
        .expect_err("a protocol error")
        .to_string();
    assert!(text.len() < 600, "{} chars", text.len());
}

#[test]
fn tolerated_streams_still_give_the_answer() {
    let chunk = |delta: Value| format!("data:{}", json!({"choices": [{"delta": delta}]}));
    let cases: Vec<(&str, Vec<String>, &str, Option<&str>)> = vec![
        (
            "no [DONE] (a finish_reason instead), CRLF, comments, event lines",
            vec![
                ": keep-alive\r\n".into(),
                "event: message\r\n".into(),
                chunk(json!({"content": "Hi "})) + "\r\n",
                "\r\n".into(),
                chunk(json!({"content": "you"})),
                "\r\n".into(),
                format!(
                    "data:{}",
                    json!({"choices": [{"delta": {}, "finish_reason": "stop"}]})
                ),
            ],
            "Hi you",
            None,
        ),
        (
            "reasoning fields",
            vec![
                chunk(json!({"reasoning_content": "Let me think. "})),
                "".into(),
                chunk(json!({"reasoning": "Done."})),
                "".into(),
                chunk(json!({"content": "42"})),
                "".into(),
                "data: [DONE]".into(),
                "".into(),
                "data: ignored after done".into(),
            ],
            "42",
            Some("Let me think. Done."),
        ),
        (
            "events without blank lines between them",
            vec![
                chunk(json!({"content": "a"})),
                chunk(json!({"content": "b"})),
                format!(
                    "data:{}",
                    json!({"choices": [{"delta": {}, "finish_reason": "stop"}]})
                ),
            ],
            "ab",
            None,
        ),
    ];
    for (name, lines, content, reasoning) in cases {
        let fake = FakeLlm::start();
        fake.push(Reply::RawSse(lines));
        let (r, deltas) = run(&client(&fake), &request(true));
        let r = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.message.content, content, "{name}");
        assert_eq!(r.message.reasoning.as_deref(), reasoning, "{name}");
        assert_eq!(streamed_text(&deltas), content, "{name}");
        if reasoning.is_some() {
            assert!(deltas[0].starts_with("Reasoning"), "{name}: {deltas:?}");
        }
    }
}

#[test]
fn an_empty_stream_with_tools_falls_back_to_an_unstreamed_request() {
    let fake = FakeLlm::start();
    fake.push(Reply::EmptyBody);
    fake.push(Reply::text("answer without streaming"));
    let mut req = request(true);
    req.tools = vec![get_time_tool()];
    let (r, deltas) = run(&client(&fake), &req);
    assert_eq!(
        r.expect("an answer").message.content,
        "answer without streaming"
    );
    assert_eq!(deltas, [r#"Content("answer without streaming")"#]);
    let sent = fake.chat_requests();
    let shape: Vec<(bool, Vec<String>)> = sent
        .iter()
        .map(|r| (r.is_stream(), r.tool_names()))
        .collect();
    assert_eq!(
        shape,
        [
            (true, vec!["get_time".to_string()]),
            (false, vec!["get_time".to_string()])
        ]
    );
}

#[test]
fn a_server_ignoring_stream_true_is_accepted() {
    let fake = FakeLlm::start();
    let body = json!({"choices": [{"message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
    fake.push(Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: body.to_string(),
    });
    let (r, deltas) = run(&client(&fake), &request(true));
    let r = r.expect("an answer");
    assert_eq!(r.message.content, "whole");
    assert_eq!(r.usage.prompt_tokens, 3);
    assert_eq!(deltas, [r#"Content("whole")"#]);
}

#[test]
fn an_html_page_instead_of_a_stream_is_quoted() {
    let fake = FakeLlm::start();
    fake.push(Reply::RawSse(vec![
        "<html><body>Proxy error</body></html>".into()
    ]));
    let err = run(&client(&fake), &request(true)).0.expect_err("an error");
    assert!(err.to_string().contains("Proxy error"), "{err}");
}

#[test]
fn cancelling_stops_a_stream_between_chunks() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("word ".repeat(50)));
    let cancel = Cancel::new();
    let mut seen = 0;
    let r = client(&fake).chat(
        &request(true),
        &mut |_| {
            seen += 1;
            cancel.cancel();
        },
        &cancel,
    );
    assert!(matches!(r, Err(LlmError::Cancelled)), "{r:?}");
    assert_eq!(seen, 1);
}

#[test]
fn cancelling_stops_a_wait_for_a_silent_server() {
    let fake = FakeLlm::start();
    fake.push(Reply::HangBeforeHeaders(Duration::from_secs(30)));
    let cancel = Arc::new(Cancel::new());
    let flag = Arc::clone(&cancel);
    let c = client(&fake);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.cancel();
    });
    let r = c.chat(&request(true), &mut |_| {}, &cancel);
    let _ = setter.join();
    assert!(matches!(r, Err(LlmError::Cancelled)), "{r:?}");
}

#[test]
fn usage_adds_up_over_calls() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("one"));
    fake.push(Reply::text("two two two two"));
    let c = client(&fake);
    let a = run(&c, &request(false)).0.expect("first").usage;
    let b = run(&c, &request(true)).0.expect("second").usage;
    let mut total = Usage::default();
    total.add(a);
    total.add(b);
    assert!(a.completion_tokens > 0 && b.completion_tokens > a.completion_tokens);
    assert_eq!(
        total,
        Usage {
            prompt_tokens: a.prompt_tokens + b.prompt_tokens,
            completion_tokens: a.completion_tokens + b.completion_tokens
        }
    );
}

#[test]
fn a_body_past_the_wire_limit_that_is_no_completion_is_refused_naming_the_setting() {
    let fake = FakeLlm::start();
    fake.push(Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: "x".repeat(17 * 1024 * 1024),
    });
    let err = run(&client(&fake), &request(false))
        .0
        .expect_err("not a completion");
    let text = err.to_string();
    assert!(text.contains("max_answer_bytes = 1 MiB"), "{text}");
    assert!(text.contains("not a completion"), "{text}");
}

/// A client keeping at most `max` bytes of an answer.
fn capped(fake: &FakeLlm, max: usize) -> Client {
    client_with(ModelConfig {
        max_answer_bytes: max,
        ..config(&fake.base_url())
    })
}

const NOTE_4K: &str = "[answer cut at 4 KiB: max_answer_bytes]";

/// Runs one call; returns the result and the streamed text as it arrived.
fn run_streamed(client: &Client, req: &ChatRequest) -> (Result<ChatResponse, LlmError>, String) {
    let cancel = Cancel::new();
    let mut text = String::new();
    let r = client.chat(
        req,
        &mut |d| {
            if let Delta::Content(t) = d {
                text.push_str(t);
            }
        },
        &cancel,
    );
    (r, text)
}

#[test]
fn an_answer_over_the_cap_is_cut_at_a_character_with_the_note_streamed_or_not() {
    // Two-byte characters: 4096 bytes is a boundary, 4095 would not be.
    let long = "é".repeat(5000);
    for stream in [false, true] {
        let fake = FakeLlm::start();
        fake.set_chunk_chars(333);
        fake.push(Reply::text(long.clone()));
        let (r, shown) = run_streamed(&capped(&fake, 4096), &request(stream));
        let r = r.expect("a cut answer is an answer");
        let kept = "é".repeat(2048);
        assert_eq!(
            r.message.content,
            format!("{kept}\n\n{NOTE_4K}"),
            "stream {stream}"
        );
        assert_eq!(r.cut, Some(AnswerCut::Text));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        if stream {
            // What the user watched is what is kept, note included.
            assert_eq!(shown, r.message.content);
        }
    }
}

#[test]
fn a_stream_is_not_read_past_the_cap() {
    let fake = FakeLlm::start();
    // 8 MB in events of 4 characters: far more than any socket buffer holds.
    fake.push(Reply::text("abcd".repeat(2 * 1024 * 1024)));
    let (r, _) = run(&capped(&fake, 4096), &request(true));
    assert_eq!(r.expect("cut").cut, Some(AnswerCut::Text));
    // The client hung up: the fake never finished writing its answer.
    assert!(fake.wait_chat_requests(1, Duration::from_secs(5)));
    let mut gone = false;
    for _ in 0..100 {
        if fake.chat_requests()[0].answered.is_none() {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone, "the fake wrote its whole answer");
}

#[test]
fn a_line_or_body_past_the_wire_limit_is_read_as_far_as_it_goes() {
    let text = "z".repeat(300 * 1024);
    // One event carrying the whole answer (a proxy that buffers a stream).
    let event = json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let fake = FakeLlm::start();
    fake.push(Reply::RawSse(vec![format!("data: {event}"), String::new()]));
    let (r, shown) = run_streamed(&capped(&fake, 4096), &request(true));
    let r = r.expect("cut");
    assert_eq!(
        r.message.content,
        format!("{}\n\n{NOTE_4K}", "z".repeat(4096))
    );
    assert_eq!(shown, r.message.content);
    // A JSON completion longer than what is read for it.
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
    let fake = FakeLlm::start();
    fake.push(Reply::Raw {
        status: 200,
        content_type: "application/json".into(),
        body: body.to_string(),
    });
    let (r, _) = run(&capped(&fake, 4096), &request(false));
    let r = r.expect("cut");
    assert_eq!(
        r.message.content,
        format!("{}\n\n{NOTE_4K}", "z".repeat(4096))
    );
    assert_eq!(r.cut, Some(AnswerCut::Text));
}

#[test]
fn tool_call_arguments_count_against_the_cap() {
    let args = json!({"path": "big.txt", "content": "w".repeat(10_000)}).to_string();
    for stream in [false, true] {
        let fake = FakeLlm::start();
        fake.push(Reply::TextAndTools(
            "Writing it.".into(),
            vec![
                ("write_file".into(), args.clone()),
                ("get_time".into(), "{}".into()),
            ],
        ));
        let mut req = request(stream);
        req.tools = vec![get_time_tool()];
        let (r, _) = run(&capped(&fake, 4096), &req);
        let r = r.expect("cut");
        assert_eq!(r.cut, Some(AnswerCut::ToolArguments(0)), "stream {stream}");
        // The cut call is the last; the one after it was never kept.
        assert_eq!(r.message.tool_calls.len(), 1, "stream {stream}");
        let call = &r.message.tool_calls[0];
        assert_eq!(call.name, "write_file");
        assert!(args.starts_with(&call.arguments) && call.arguments.len() < 4096);
        assert!(
            r.message.content.ends_with(NOTE_4K),
            "{}",
            r.message.content
        );
    }
}

#[test]
fn an_answer_within_the_cap_is_untouched() {
    for stream in [false, true] {
        let fake = FakeLlm::start();
        fake.push(Reply::text("x".repeat(4096)));
        let (r, _) = run(&capped(&fake, 4096), &request(stream));
        let r = r.expect("whole");
        assert_eq!((r.message.content.len(), r.cut), (4096, None));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }
}

#[test]
fn the_model_list_is_read() {
    let fake = FakeLlm::start();
    let ids = client(&fake).list_models().expect("a list");
    assert_eq!(ids, ["fake-main", "fake-cheap"]);
    assert_eq!(
        fake.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn errors_read_as_sentences_with_url_status_message_and_hint() {
    let url = "http://127.0.0.1:9/v1/chat/completions".to_string();
    let cases = [
        (
            LlmError::Status {
                url: url.clone(),
                status: 429,
                message: "slow down".into(),
                hint: "wait".into(),
            },
            "the model server at http://127.0.0.1:9/v1/chat/completions answered HTTP 429: slow down — wait",
            true,
        ),
        (
            LlmError::Status {
                url: url.clone(),
                status: 400,
                message: String::new(),
                hint: String::new(),
            },
            "the model server at http://127.0.0.1:9/v1/chat/completions answered HTTP 400",
            false,
        ),
        (
            LlmError::Connect {
                url: url.clone(),
                why: Unreached::Refused,
                hint: "is the server running? set OPENAI_BASE_URL".into(),
            },
            "cannot reach the model at http://127.0.0.1:9/v1/chat/completions: connection refused — is the server running? set OPENAI_BASE_URL",
            true,
        ),
        (
            LlmError::Protocol {
                url: url.clone(),
                detail: "no choices".into(),
            },
            "unexpected answer from the model at http://127.0.0.1:9/v1/chat/completions: no choices",
            false,
        ),
        (
            LlmError::Cancelled,
            "the request to the model was cancelled",
            false,
        ),
    ];
    for (err, text, unreachable) in cases {
        assert_eq!(err.to_string(), text);
        assert_eq!(err.is_unreachable(), unreachable, "{text}");
    }
    let timeout = LlmError::Timeout {
        url,
        phase: transport::PHASE_IDLE,
    };
    assert!(timeout.to_string().starts_with(
        "the model at http://127.0.0.1:9/v1/chat/completions timed out (stream idle between chunks) — "
    ));
}

#[test]
fn embeddings_are_asked_only_with_an_embedding_model_and_a_refusal_names_the_endpoint() {
    let fake = FakeLlm::start();
    let never = Cancel::new();
    let inputs = vec!["tea".to_string(), "coffee".to_string()];
    assert!(client(&fake).embed(&inputs, &never).is_none());
    assert!(
        fake.requests().is_empty(),
        "nothing is sent without a model"
    );

    let mut config = config(&fake.base_url());
    config.embedding_model = Some("fake-embed".into());
    let vectors = Client::new(config.clone())
        .embed(&inputs, &never)
        .expect("an embedding model is configured")
        .expect("the fake server embeds");
    assert_eq!(vectors.len(), 2, "one vector per input, in order");
    assert_ne!(vectors[0], vectors[1]);
    let sent = &fake.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/embeddings")
    );
    assert_eq!(
        sent.json,
        json!({"model": "fake-embed", "input": ["tea", "coffee"]})
    );

    // A model the server does not have: the error names the endpoint and the status.
    config.embedding_model = Some("fake-main".into());
    let e = Client::new(config)
        .embed(&inputs, &never)
        .expect("an embedding model is configured")
        .expect_err("fake-main is not an embedding model");
    let text = e.to_string();
    assert!(
        text.contains("/embeddings") && text.contains("404"),
        "{text}"
    );
}

#[test]
fn the_cause_of_an_error_is_its_message_without_the_hint() {
    let cases = [
        (
            LlmError::Connect {
                url: "http://127.0.0.1:9/v1/models".into(),
                why: Unreached::Refused,
                hint: "is the server running? set OPENAI_BASE_URL".into(),
            },
            "cannot reach the model at http://127.0.0.1:9/v1/models: connection refused",
        ),
        (
            LlmError::Status {
                url: "http://h/v1".into(),
                status: 404,
                message: "no such model".into(),
                hint: "set EVOLVE_MODEL".into(),
            },
            "the model server at http://h/v1 answered HTTP 404: no such model",
        ),
        (
            LlmError::Status {
                url: "http://h/v1".into(),
                status: 500,
                message: String::new(),
                hint: String::new(),
            },
            "the model server at http://h/v1 answered HTTP 500",
        ),
    ];
    for (e, cause) in cases {
        assert_eq!(e.cause(), cause);
        // The whole message is the cause, then what to do.
        let full = e.to_string();
        assert!(full.starts_with(cause), "{full}");
        if !e.hint().is_empty() {
            assert_eq!(full, format!("{cause} — {}", e.hint()));
        }
    }
}

/// A config whose transcription server is `url`, its own key `key`.
fn voice_config(fake: &FakeLlm, url: &str, key: Option<&str>) -> ModelConfig {
    let mut c = config(&fake.base_url());
    c.transcription = Some(super::settings::Transcription {
        model: "whisper-1".into(),
        base_url: url.to_string(),
        api_key: key.map(Secret::new),
    });
    c.max_retries = 1;
    c
}

#[test]
fn a_voice_note_is_posted_as_a_form_and_its_words_come_back() {
    let fake = FakeLlm::start();
    let never = Cancel::new();
    let audio = transcribe::Audio::sniff(b"OggS\x00\x01 turn on the lights".to_vec());
    assert!(super::transcribe(&config(&fake.base_url()), &audio, &never).is_none());
    assert!(
        fake.requests().is_empty(),
        "nothing is sent without a model"
    );

    let words = super::transcribe(
        &voice_config(&fake, &fake.base_url(), Some("sk-voice")),
        &audio,
        &never,
    )
    .expect("configured")
    .expect("heard");
    assert_eq!(words, "turn on the lights");
    let sent = &fake.transcription_requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/audio/transcriptions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-voice"));
    assert!(sent
        .header("content-type")
        .is_some_and(|ct| ct.starts_with("multipart/form-data; boundary=")));
    assert_eq!(
        sent.form_part("model").map(|p| p.text()).as_deref(),
        Some("whisper-1")
    );
    assert_eq!(
        sent.form_part("response_format")
            .map(|p| p.text())
            .as_deref(),
        Some("json")
    );
    let file = sent.form_part("file").expect("the file");
    assert_eq!(file.filename.as_deref(), Some("voice.ogg"));
    assert_eq!(file.content_type.as_deref(), Some("audio/ogg"));
    assert_eq!(file.data, audio.bytes);

    // No key of its own: none is sent.
    let cfg = voice_config(&fake, &fake.base_url(), None);
    super::transcribe(&cfg, &audio, &never)
        .expect("configured")
        .expect("heard");
    assert_eq!(
        fake.transcription_requests()[1].header("authorization"),
        None
    );
}

#[test]
fn a_failing_refusing_silent_or_slow_transcription_server_is_a_clear_error() {
    let fake = FakeLlm::start();
    let never = Cancel::new();
    let audio = transcribe::Audio::sniff(b"OggS hello".to_vec());
    let url = fake.base_url();
    let run = |cfg: &ModelConfig| {
        super::transcribe(cfg, &audio, &never)
            .expect("configured")
            .expect_err("a failure")
            .to_string()
    };
    let mut cfg = voice_config(&fake, &url, Some(KEY));
    // A 5xx is retried, then said; the key never appears.
    fake.push_transcription(Reply::error(503, "still loading"));
    fake.push_transcription(Reply::error(500, &format!("whisper crashed {KEY}")));
    let e = run(&cfg);
    assert!(e.contains("failed (HTTP 500: whisper crashed ***)"), "{e}");
    assert!(!e.contains(KEY), "{e}");
    assert_eq!(fake.transcription_requests().len(), 2, "one retry");
    // A model the server does not have: refused, not retried, the setting named.
    cfg.transcription.as_mut().expect("set").model = "fake-main".into();
    let e = run(&cfg);
    assert!(
        e.contains("HTTP 404") && e.contains("transcription_model"),
        "{e}"
    );
    assert_eq!(fake.transcription_requests().len(), 3);
    cfg.transcription.as_mut().expect("set").model = "whisper-1".into();
    // Silence: no words.
    fake.push_transcription(Reply::text(" "));
    let e = run(&cfg);
    assert!(e.contains("heard no words"), "{e}");
    // Not a transcription.
    fake.push_transcription(Reply::Raw {
        status: 200,
        content_type: "text/html".into(),
        body: "<html>proxy</html>".into(),
    });
    let e = run(&cfg);
    assert!(
        e.contains("unexpected answer from the transcription server") && e.contains("not JSON"),
        "{e}"
    );
    // Too slow: the overall timeout.
    cfg.timeouts.overall = Duration::from_millis(300);
    cfg.max_retries = 0;
    fake.push_transcription(Reply::text("late").after(Duration::from_secs(3)));
    let e = run(&cfg);
    assert!(e.contains("timed out"), "{e}");
    // Nobody there.
    let e = run(&voice_config(&fake, "http://127.0.0.1:9/v1", None));
    assert!(
        e.contains(
            "cannot reach the transcription server at http://127.0.0.1:9/v1/audio/transcriptions"
        ),
        "{e}"
    );
    // Too large: not sent at all.
    let before = fake.transcription_requests().len();
    let big = transcribe::Audio::sniff(vec![0; transcribe::MAX_AUDIO + 1]);
    let e = super::transcribe(&cfg, &big, &never)
        .expect("configured")
        .expect_err("too large");
    assert!(matches!(e, transcribe::TranscribeError::TooLarge(_)));
    assert_eq!(fake.transcription_requests().len(), before);
}
