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
#[path = "wire_tests.rs"]
mod tests;
