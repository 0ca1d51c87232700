//! The fake server as its users see it over HTTP: which reply answers which request, what
//! is recorded, and what the wire looks like.

use std::io::{BufRead, BufReader};

use super::*;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into()
}

/// POSTs a chat request; returns status, Retry-After, content type and body.
fn post(fake: &FakeLlm, body: Value) -> (u16, Option<String>, String, String) {
    let url = format!("{}/chat/completions", fake.base_url());
    let mut resp = agent()
        .post(&url)
        .header("Content-Type", "application/json")
        .header("X-Test", "Yes")
        .send(body.to_string())
        .expect("the fake answers");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let retry_after = header("retry-after");
    let ct = header("content-type").unwrap_or_default();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().expect("a body");
    (status, retry_after, ct, text)
}

fn chat(content: &str, stream: bool) -> Value {
    json!({"model": "m", "stream": stream,
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": content}]})
}

/// The JSON payloads of an SSE body, `[DONE]` excluded.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect()
}

fn text_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).expect("a JSON completion");
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn routes_take_their_own_queue_and_never_the_default_one() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("main 1"));
    fake.push(Reply::text("main 2"));
    fake.route("[evolve:extract]", Reply::text("extracted"));
    let cases = [
        ("[evolve:extract] facts please", "extracted"),
        ("hello", "main 1"),
        // The route is registered but empty: the fallback, not "main 2".
        ("[evolve:extract] again", "ok"),
        // A marker nobody registered is an ordinary request.
        ("[evolve:style] notes", "main 2"),
        ("hello again", "ok"),
    ];
    for (question, expected) in cases {
        let (status, _, _, body) = post(&fake, chat(question, false));
        assert_eq!(status, 200);
        assert_eq!(text_of(&body), expected, "for {question:?}");
    }
    assert_eq!(fake.pending(), 0);
}

#[test]
fn quiet_markers_and_fallback_replies() {
    let fake = FakeLlm::start();
    fake.quiet("[evolve:evaluate]");
    fake.push(Reply::text("for the user"));
    fake.set_fallback(Reply::Echo);
    let (_, _, _, body) = post(&fake, chat("[evolve:evaluate] score it", false));
    assert_eq!(text_of(&body), "echo: [evolve:evaluate] score it");
    let (_, _, _, body) = post(&fake, chat("hi", false));
    assert_eq!(text_of(&body), "for the user");
}

#[test]
fn a_quiet_marker_can_have_its_own_fallback() {
    let fake = FakeLlm::start();
    fake.set_fallback(Reply::Echo);
    fake.quiet_with("[evolve:title]", Reply::text(""));
    fake.route("[evolve:title]", Reply::text("Scripted title"));
    let (_, _, _, body) = post(&fake, chat("[evolve:title] one", false));
    assert_eq!(text_of(&body), "Scripted title", "the queue first");
    let (_, _, _, body) = post(&fake, chat("[evolve:title] two", false));
    assert_eq!(text_of(&body), "", "then its own fallback, not the echo");
    let (_, _, _, body) = post(&fake, chat("hi", false));
    assert_eq!(text_of(&body), "echo: hi");
}

#[test]
fn every_request_is_recorded_with_lowercased_headers_and_parsed_json() {
    let fake = FakeLlm::start();
    post(&fake, chat("question one", false));
    let models = agent()
        .get(format!("{}/models", fake.base_url()))
        .call()
        .expect("models")
        .body_mut()
        .read_to_string()
        .expect("body");
    let ids: Vec<String> = serde_json::from_str::<Value>(&models).expect("json")["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| m["id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(ids, ["fake-main", "fake-cheap"]);
    let missing = agent()
        .get(format!("{}/nope?x=1", fake.base_url()))
        .call()
        .expect("an answer");
    assert_eq!(missing.status().as_u16(), 404);

    assert!(fake.wait_requests(3, Duration::from_secs(5)));
    let all = fake.requests();
    let paths: Vec<(&str, &str)> = all
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/models"),
            ("GET", "/v1/nope")
        ]
    );
    let chats = fake.chat_requests();
    assert_eq!(chats.len(), 1);
    let r = &chats[0];
    assert_eq!(r.header("x-test"), Some("Yes"));
    assert_eq!(r.header("Content-Type"), Some("application/json"));
    assert_eq!(r.model(), Some("m"));
    assert_eq!(r.last_user().as_deref(), Some("question one"));
    assert_eq!(r.system().as_deref(), Some("sys"));
    assert!(r.mentions("one") && !r.mentions("two"));
    assert!(!r.is_stream());
    assert_eq!(all[1].json, Value::Null);
}

/// What a benchmark reads: when each request came and when its answer was done, so the
/// client's time between an answer and its next request can be told from the server's.
#[test]
fn requests_are_stamped_when_received_and_when_answered() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("slow").after(Duration::from_millis(50)));
    fake.push(Reply::tool("echo", r#"{"text": "x"}"#));
    post(&fake, chat("first", false));
    post(&fake, chat("second", true));
    // The client may read the answer a moment before the server stamps it.
    let deadline = Instant::now() + Duration::from_secs(5);
    let chats = loop {
        let chats = fake.chat_requests();
        if chats.iter().all(|r| r.answered.is_some()) || Instant::now() > deadline {
            break chats;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let answered: Vec<Instant> = chats
        .iter()
        .map(|r| r.answered.expect("every answer was written"))
        .collect();
    assert!(
        answered[0] >= chats[0].received + Duration::from_millis(50),
        "the delay is inside the answer"
    );
    assert!(
        chats[1].received >= answered[0],
        "one request after the other"
    );
    assert!(answered[1] >= chats[1].received);
}

#[test]
fn wait_requests_gives_up_when_nothing_arrives() {
    let fake = FakeLlm::start();
    assert!(!fake.wait_requests(1, Duration::from_millis(30)));
    assert!(!fake.wait_chat_requests(1, Duration::from_millis(30)));
}

#[test]
fn streamed_text_comes_in_small_chunks_with_usage_last_and_done() {
    let fake = FakeLlm::start();
    fake.push(Reply::text("Hello, streaming world"));
    let (status, _, ct, body) = post(&fake, chat("hi", true));
    assert_eq!(status, 200);
    assert_eq!(ct, "text/event-stream");
    assert!(body.trim_end().ends_with("data: [DONE]"));
    let ev = events(&body);
    let text: String = ev
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello, streaming world");
    let pieces = ev
        .iter()
        .filter(|e| {
            e["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|c| !c.is_empty())
        })
        .count();
    assert!(pieces >= 5, "{pieces} pieces");
    let last = ev.last().expect("events");
    assert_eq!(last["choices"], json!([]));
    assert!(last["usage"]["completion_tokens"].as_u64() >= Some(1));
    let finish: Vec<&str> = ev
        .iter()
        .filter_map(|e| e["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["stop"]);
}

#[test]
fn streamed_tool_calls_repeat_headers_when_asked_and_ids_count_up() {
    let fake = FakeLlm::start();
    fake.repeat_tool_headers(true);
    fake.push(Reply::ToolCalls(vec![
        ("get_time".into(), r#"{"zone":"Europe/Paris"}"#.into()),
        ("read_file".into(), r#"{"path":"a.txt"}"#.into()),
    ]));
    fake.push(Reply::tool("get_time", "{}"));
    let (_, _, _, body) = post(&fake, chat("time?", true));
    let calls: Vec<Value> = events(&body)
        .iter()
        .flat_map(|e| {
            e["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert!(calls.len() > 4, "arguments come in pieces");
    for c in &calls {
        assert!(
            c["id"].is_string() && c["function"]["name"].is_string(),
            "{c}"
        );
    }
    let args = |i: u64| -> String {
        calls
            .iter()
            .filter(|c| c["index"] == i)
            .filter_map(|c| c["function"]["arguments"].as_str())
            .collect()
    };
    assert_eq!(args(0), r#"{"zone":"Europe/Paris"}"#);
    assert_eq!(args(1), r#"{"path":"a.txt"}"#);
    assert_eq!(calls[0]["id"], "call_1");
    assert_eq!(calls.last().expect("calls")["id"], "call_2");

    // Not streamed: one message, `content: null`, the next id.
    let (_, _, _, body) = post(&fake, chat("again", false));
    let v: Value = serde_json::from_str(&body).expect("json");
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], Value::Null);
    assert_eq!(msg["tool_calls"][0]["id"], "call_3");
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "get_time");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn streamed_tool_calls_send_the_header_once_by_default() {
    let fake = FakeLlm::start();
    fake.push(Reply::TextAndTools(
        "Let me check.".into(),
        vec![("get_time".into(), r#"{"zone":"UTC","format":"iso"}"#.into())],
    ));
    let (_, _, _, body) = post(&fake, chat("time?", true));
    let ev = events(&body);
    let named = ev
        .iter()
        .filter(|e| !e["choices"][0]["delta"]["tool_calls"][0]["function"]["name"].is_null())
        .count();
    assert_eq!(named, 1);
    let text: String = ev
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Let me check.");
}

#[test]
fn error_statuses_raw_bodies_and_empty_bodies_are_sent_as_scripted() {
    let fake = FakeLlm::start();
    fake.push(Reply::error(500, "boom"));
    fake.push(Reply::StatusRetryAfter(429, 3));
    fake.push(Reply::Status(502, "bad gateway".into()));
    fake.push(Reply::Raw {
        status: 200,
        content_type: "text/html".into(),
        body: "<html>".into(),
    });
    fake.push(Reply::EmptyBody);
    fake.push(Reply::RawSse(vec!["data: {broken".into(), "".into()]));
    fake.push(Reply::text("late").after(Duration::from_millis(1)));
    let expected: [(u16, Option<&str>, &str, &str); 7] = [
        (
            500,
            None,
            "application/json",
            r#"{"error":{"message":"boom"}}"#,
        ),
        (429, Some("3"), "application/json", "rate limited"),
        (502, None, "text/plain; charset=utf-8", "bad gateway"),
        (200, None, "text/html", "<html>"),
        (200, None, "text/event-stream", ""),
        (200, None, "text/event-stream", "data: {broken\n\n"),
        (200, None, "text/event-stream", "late"),
    ];
    for (status, retry, ct, contains) in expected {
        let (s, r, c, body) = post(&fake, chat("x", true));
        assert_eq!((s, r.as_deref(), c.as_str()), (status, retry, ct), "{body}");
        assert!(body.contains(contains), "{body:?} lacks {contains:?}");
        if contains.is_empty() {
            assert!(body.is_empty());
        }
    }
}

#[test]
fn streams_are_written_incrementally() {
    // The text arrives, then the server stalls for a minute: a client that can read the
    // text within its 10 s read timeout proves nothing waited for the end of the body.
    let fake = FakeLlm::start();
    fake.push(Reply::TextThenHang(
        "abcdefgh".into(),
        Duration::from_secs(60),
    ));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_per_read(Some(Duration::from_secs(10)))
        .build()
        .into();
    let resp = agent
        .post(format!("{}/chat/completions", fake.base_url()))
        .send(chat("hi", true).to_string())
        .expect("headers arrive");
    let mut lines = BufReader::new(resp.into_body().into_reader()).lines();
    let mut text = String::new();
    while text != "abcdefgh" {
        let line = lines.next().expect("more lines").expect("read in time");
        if let Some(d) = line.strip_prefix("data: ") {
            let v: Value = serde_json::from_str(d).expect("json");
            text.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap_or(""));
        }
    }
    drop(fake); // wakes the stalled handler
}

#[test]
fn scripts_parse_every_reply_form() {
    let cases = [
        (json!("hi"), Reply::text("hi")),
        (json!({"text": "hi"}), Reply::text("hi")),
        (
            json!({"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}),
            Reply::tool("t", r#"{"a":1}"#),
        ),
        (
            json!({"text": "x", "tool_calls": [{"name": "t", "arguments": "{}"}]}),
            Reply::TextAndTools("x".into(), vec![("t".into(), "{}".into())]),
        ),
        (
            json!({"status": 500, "body": "boom"}),
            Reply::Status(500, "boom".into()),
        ),
        (
            json!({"status": 429, "retry_after": 2}),
            Reply::StatusRetryAfter(429, 2),
        ),
        (
            json!({"delay_ms": 5, "then": "x"}),
            Reply::text("x").after(Duration::from_millis(5)),
        ),
        (json!({"empty_body": true}), Reply::EmptyBody),
        (
            json!({"raw_sse": ["a", ""]}),
            Reply::RawSse(vec!["a".into(), "".into()]),
        ),
        (
            json!({"raw": {"status": 201, "content_type": "text/plain", "body": "b"}}),
            Reply::Raw {
                status: 201,
                content_type: "text/plain".into(),
                body: "b".into(),
            },
        ),
        (json!({"hang_ms": 7}), Reply::Hang(Duration::from_millis(7))),
        (
            json!({"hang_before_headers_ms": 7}),
            Reply::HangBeforeHeaders(Duration::from_millis(7)),
        ),
        (json!({"echo": true}), Reply::Echo),
    ];
    for (input, expected) in cases {
        assert_eq!(Reply::from_json(&input), Ok(expected), "{input}");
    }
    for bad in [json!(3), json!({"what": 1}), json!({"tool_calls": [{}]})] {
        assert!(Reply::from_json(&bad).is_err(), "{bad}");
    }
}

#[test]
fn a_loaded_script_fills_queues_routes_and_fallback() {
    let fake = FakeLlm::start();
    let script = json!({
        "replies": ["first"],
        "routes": {"[evolve:reflect]": ["reflected"]},
        "fallback": {"echo": true}
    });
    fake.load_script(&script).expect("a valid script");
    let answers: Vec<String> = ["[evolve:reflect] go", "q", "[evolve:reflect] more", "last"]
        .iter()
        .map(|q| text_of(&post(&fake, chat(q, false)).3))
        .collect();
    assert_eq!(
        answers,
        [
            "reflected",
            "first",
            "echo: [evolve:reflect] more",
            "echo: last"
        ]
    );
}

#[test]
fn a_model_without_tools_refuses_requests_with_tools_and_keeps_its_replies() {
    let fake = FakeLlm::start();
    let message = "registry.ollama.ai/library/smollm2:135m does not support tools";
    fake.load_script(&json!({"replies": ["planned"], "refuse_tools": message}))
        .unwrap();
    let mut with_tools = chat("hi", false);
    with_tools["tools"] = json!([{"type": "function", "function": {"name": "t"}}]);
    let (status, _, _, body) = post(&fake, with_tools);
    assert_eq!(status, 400);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["message"], message);
    // The scripted reply is still there for the request without tools.
    let (status, _, _, body) = post(&fake, chat("hi", false));
    assert_eq!(status, 200);
    assert!(body.contains("planned"), "{body}");
    fake.refuse_tools(None);
    let mut with_tools = chat("hi", false);
    with_tools["tools"] = json!([{"type": "function", "function": {"name": "t"}}]);
    assert_eq!(post(&fake, with_tools).0, 200);
}
