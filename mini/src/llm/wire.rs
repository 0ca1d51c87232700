//! The JSON on the wire: the request body of `/chat/completions`, and the reading of a
//! completion, an error body and a model list.
//!
//! Decides what is sent (assistant messages with tool calls carry `content: ""`, never
//! `null`, which llama.cpp rejects; empty tool arguments go out as `{}`; reasoning is not
//! sent back; a user message's images go as `image_url` parts after its text, or, to a
//! server that refused them, as a note in the text) and which optional parameters to drop
//! when a server refuses them ([`WireRequest::relax`]). Reading is tolerant: `content` may be a string, `null`
//! or a list of parts; tool arguments a string or an object; ids may be missing.

use evolve_core::history::{Message, Role, ToolCall};
use serde_json::{json, Map, Value};

use super::{AnswerCut, ToolSpec, Usage};

/// How much of a server's error body a message quotes.
const SERVER_MESSAGE_CHARS: usize = 300;

/// One chat request as it will be sent, with the parameters still negotiable.
#[derive(Debug, Clone)]
pub(crate) struct WireRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: Option<u32>,
    /// `max_tokens`, or `max_completion_tokens` for servers (OpenAI's reasoning models)
    /// that refuse the former.
    pub max_tokens_key: &'static str,
    pub temperature: Option<f32>,
    /// `response_format: {"type": "json_object"}`.
    pub json: bool,
    /// `stream_options: {"include_usage": true}` on streamed requests.
    pub stream_options: bool,
    /// `tool_choice`: `auto`, `required`, `none`, or a tool's name (that tool).
    pub tool_choice: Option<&'a str>,
    /// User messages' images go as image parts (else as a note in the text).
    pub images: bool,
}

impl WireRequest<'_> {
    /// The body, streamed or not (the fallback re-sends the same request unstreamed).
    pub fn body(&self, stream: bool) -> String {
        let mut o = Map::new();
        o.insert("model".into(), self.model.into());
        o.insert(
            "messages".into(),
            self.messages
                .iter()
                .map(|m| message_json(m, self.images))
                .collect(),
        );
        if !self.tools.is_empty() {
            o.insert("tools".into(), self.tools.iter().map(tool_json).collect());
        }
        o.insert("stream".into(), stream.into());
        if stream && self.stream_options {
            o.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if let Some(n) = self.max_tokens {
            o.insert(self.max_tokens_key.into(), n.into());
        }
        if let Some(t) = self.temperature {
            // f32 → f64 through the decimal text, so 0.2 goes out as 0.2, not 0.200000003.
            let t: f64 = t.to_string().parse().unwrap_or(f64::from(t));
            o.insert("temperature".into(), t.into());
        }
        if self.json {
            o.insert("response_format".into(), json!({"type": "json_object"}));
        }
        if let Some(choice) = self.tool_choice.filter(|_| !self.tools.is_empty()) {
            let value = match choice {
                "auto" | "required" | "none" => Value::from(choice),
                name => json!({"type": "function", "function": {"name": name}}),
            };
            o.insert("tool_choice".into(), value);
        }
        Value::Object(o).to_string()
    }

    /// After a 4xx, drops or renames the optional parameter the server refused; returns
    /// what changed, or `None` when nothing is left to try (the error stands). Each
    /// change can happen once, so a request is re-sent at most four times.
    pub fn relax(&mut self, status: u16, message: &str) -> Option<&'static str> {
        if !(400..=500).contains(&status) || matches!(status, 401 | 403 | 404 | 429) {
            return None;
        }
        let m = message.to_ascii_lowercase();
        // A text-only model: llama.cpp without its projector ("image input is not
        // supported", a 500 in older builds), OpenAI ("image_url is only supported by
        // certain models"), servers that want string content ("content must be a
        // string", "expected string, got array").
        if self.images
            && self.messages.iter().any(|m| !m.images.is_empty())
            && [
                "image",
                "vision",
                "multimodal",
                "mmproj",
                "string",
                "content part",
            ]
            .iter()
            .any(|w| m.contains(w))
        {
            self.images = false;
            return Some("images");
        }
        if status == 500 {
            return None;
        }
        if self.json && m.contains("response_format") {
            self.json = false;
            return Some("response_format");
        }
        if self.max_tokens_key == "max_tokens" && m.contains("max_completion_tokens") {
            self.max_tokens_key = "max_completion_tokens";
            return Some("max_tokens (renamed max_completion_tokens)");
        }
        if self.temperature.is_some() && m.contains("temperature") {
            self.temperature = None;
            return Some("temperature");
        }
        if self.stream_options && m.contains("stream_options") {
            self.stream_options = false;
            return Some("stream_options");
        }
        if self.tool_choice.is_some() && m.contains("tool_choice") {
            self.tool_choice = None;
            return Some("tool_choice");
        }
        if self.json && status == 400 {
            self.json = false;
            return Some("response_format");
        }
        None
    }
}

/// One message in OpenAI's shape; a user message's images as `image_url` parts after
/// its text when `images`, else replaced by a note in the text.
pub(crate) fn message_json(m: &Message, images: bool) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), m.role.name().into());
    if m.role == Role::User && !m.images.is_empty() {
        let content = if images {
            let mut parts = vec![json!({"type": "text", "text": m.content})];
            parts.extend(
                m.images
                    .iter()
                    .map(|url| json!({"type": "image_url", "image_url": {"url": url}})),
            );
            Value::Array(parts)
        } else {
            let note = super::image::left_out_note(m.images.len());
            format!("{}\n\n{note}", m.content.trim_end()).into()
        };
        o.insert("content".into(), content);
        return Value::Object(o);
    }
    // Always a string: `null` next to tool calls is rejected by llama.cpp.
    o.insert("content".into(), m.content.as_str().into());
    if m.role == Role::Assistant && !m.tool_calls.is_empty() {
        let calls = m.tool_calls.iter().map(|c| {
            let args = if c.arguments.trim().is_empty() {
                "{}"
            } else {
                c.arguments.as_str()
            };
            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": args}})
        });
        o.insert("tool_calls".into(), calls.collect());
    }
    if m.role == Role::Tool {
        if let Some(id) = &m.tool_call_id {
            o.insert("tool_call_id".into(), id.as_str().into());
        }
        if let Some(name) = &m.name {
            o.insert("name".into(), name.as_str().into());
        }
    }
    Value::Object(o)
}

fn tool_json(t: &ToolSpec) -> Value {
    let parameters = if t.parameters.is_object() {
        t.parameters.clone()
    } else {
        json!({"type": "object", "properties": {}})
    };
    json!({"type": "function", "function": {
        "name": t.name, "description": t.description, "parameters": parameters
    }})
}

/// A completion read from a body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub message: Message,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    pub model: Option<String>,
    /// Where `max_answer_bytes` cut the answer (see [`super::cap`]).
    pub cut: Option<AnswerCut>,
}

/// Reads a non-streamed completion; `Err` says what is wrong with it. The body is
/// dropped once parsed and the message's strings are moved out of the parsed value, so
/// a long answer is held at most twice at any moment (the body, then the value).
pub(crate) fn parse_completion(body: String) -> Result<Parsed, String> {
    let v: Value = serde_json::from_str(&body).map_err(|e| {
        format!(
            "the body is not JSON ({e}): {}",
            quote(&body, SERVER_MESSAGE_CHARS)
        )
    })?;
    drop(body);
    completion_from(v)
}

/// [`parse_completion`] of a value already parsed.
pub(crate) fn completion_from(mut v: Value) -> Result<Parsed, String> {
    if let Some(err) = error_message(&v) {
        return Err(format!("the server reported an error: {err}"));
    }
    let usage = usage(&v["usage"]);
    let model = v["model"].as_str().map(str::to_string);
    let Some(choice) = v
        .get_mut("choices")
        .and_then(|c| c.get_mut(0))
        .filter(|c| c.is_object())
    else {
        return Err(format!(
            "no `choices` in the answer: {}",
            quote(&v.to_string(), SERVER_MESSAGE_CHARS)
        ));
    };
    let finish_reason = choice["finish_reason"].as_str().map(str::to_string);
    let mut message = Message::assistant(String::new());
    // Reached with `get_mut` only: indexing a value of the wrong type mutably panics.
    if let Some(m) = choice.get_mut("message").filter(|m| m.is_object()) {
        message.content = take_content(m.get_mut("content"));
        let reasoning = match take_string(m.get_mut("reasoning_content")) {
            r if r.is_empty() => take_string(m.get_mut("reasoning")),
            r => r,
        };
        if !reasoning.is_empty() {
            message.reasoning = Some(reasoning);
        }
        if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
            message.tool_calls = calls
                .iter_mut()
                .enumerate()
                .map(|(i, c)| {
                    let id = c["id"]
                        .as_str()
                        .filter(|s| !s.is_empty())
                        .map_or_else(|| format!("call_{i}"), str::to_string);
                    let f = c.get_mut("function");
                    let name = f
                        .as_deref()
                        .and_then(|f| f["name"].as_str())
                        .unwrap_or("")
                        .to_string();
                    let arguments = take_arguments(f.and_then(|f| f.get_mut("arguments")));
                    ToolCall {
                        id,
                        name,
                        arguments,
                    }
                })
                .collect();
        }
    }
    Ok(Parsed {
        message,
        finish_reason,
        usage,
        model,
        cut: None,
    })
}

/// A string field taken out of its value (empty for anything else or nothing).
pub(crate) fn take_string(v: Option<&mut Value>) -> String {
    match v {
        Some(Value::String(s)) => std::mem::take(s),
        _ => String::new(),
    }
}

/// `content` as text, taken out of its value: a string, `null`, or a list of
/// `{type: "text", text}` parts.
pub(crate) fn take_content(v: Option<&mut Value>) -> String {
    match v {
        Some(Value::String(s)) => std::mem::take(s),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().or_else(|| p.as_str()))
            .collect(),
        _ => String::new(),
    }
}

/// Tool arguments as the JSON text the tools expect (some servers send an object),
/// taken out of their value.
pub(crate) fn take_arguments(v: Option<&mut Value>) -> String {
    match v {
        Some(Value::String(s)) => std::mem::take(s),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// `usage` when the server reports one.
pub(crate) fn usage(v: &Value) -> Option<Usage> {
    let o = v.as_object()?;
    let n = |k: &str| o.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        prompt_tokens: n("prompt_tokens"),
        completion_tokens: n("completion_tokens"),
    })
}

/// The message of an `{"error": …}` payload (OpenAI's `{"error": {"message"}}`, a plain
/// `{"error": "…"}`), if the value is one.
pub(crate) fn error_message(v: &Value) -> Option<String> {
    match v.get("error")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => Some(
            o.get("message")
                .and_then(Value::as_str)
                .map_or_else(|| Value::Object(o.clone()).to_string(), str::to_string),
        ),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// What a server said in an error body: its own message when the body is OpenAI-shaped
/// (or FastAPI's `detail`, or a bare `message`), else the first 300 characters, on one
/// line.
pub(crate) fn server_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        error_message(&v)
            .or_else(|| v["message"].as_str().map(str::to_string))
            .or_else(|| match &v["detail"] {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
    });
    let text = from_json.unwrap_or_else(|| body.to_string());
    quote(&text, SERVER_MESSAGE_CHARS)
}

/// At most `max` characters of `text` on one line, `…` when cut.
pub(crate) fn quote(text: &str, max: usize) -> String {
    // White space folded first, then the remaining control characters (ESC, BEL, C1
    // codes …) escaped: a server's words end up on a terminal and must not drive it.
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let one_line = evolve_core::text::escape_controls(&folded, false);
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// The ids of a `GET /models` body (`{"data": [{"id"}]}`, or Ollama's `{"models":
/// [{"name"}]}`).
pub(crate) fn parse_models(body: &str) -> Result<Vec<String>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "the model list is not JSON ({e}): {}",
            quote(body, SERVER_MESSAGE_CHARS)
        )
    })?;
    let list = v["data"]
        .as_array()
        .or_else(|| v["models"].as_array())
        .or_else(|| v.as_array())
        .ok_or_else(|| {
            format!(
                "no `data` list in the model list: {}",
                quote(body, SERVER_MESSAGE_CHARS)
            )
        })?;
    Ok(list
        .iter()
        .filter_map(|m| {
            m["id"]
                .as_str()
                .or_else(|| m["name"].as_str())
                .or_else(|| m.as_str())
        })
        .map(str::to_string)
        .collect())
}

/// The vectors of an `/embeddings` answer (`{"data": [{"index": 0, "embedding": [...]}]}`),
/// in input order; exactly `expected` of them, each non-empty and finite.
pub(crate) fn parse_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "the embeddings answer is not JSON ({e}): {}",
            quote(body, SERVER_MESSAGE_CHARS)
        )
    })?;
    let list = v["data"].as_array().ok_or_else(|| {
        format!(
            "no `data` list in the embeddings answer: {}",
            quote(body, SERVER_MESSAGE_CHARS)
        )
    })?;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in list.iter().enumerate() {
        let index = item["index"]
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(position);
        let vector: Option<Vec<f32>> = item["embedding"].as_array().and_then(|a| {
            a.iter()
                .map(|x| x.as_f64().map(|f| f as f32).filter(|f| f.is_finite()))
                .collect()
        });
        match (out.get_mut(index), vector) {
            (Some(slot), Some(v)) if !v.is_empty() => *slot = Some(v),
            _ => return Err(format!("embedding {position} of the answer is not usable")),
        }
    }
    out.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
        format!(
            "the answer has {} embeddings for {expected} inputs",
            list.len()
        )
    })
}

#[cfg(test)]
mod tests {
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
}
