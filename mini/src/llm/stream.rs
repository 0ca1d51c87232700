//! Streamed chunks (`chat.completion.chunk`) assembled into one assistant message.
//!
//! Decides how pieces add up: text and reasoning (`reasoning_content` or `reasoning`)
//! append; tool calls are keyed by their `index` — or, when a server leaves it out, by
//! their id, else by their position in the chunk; an id or name that a server repeats in
//! every chunk (llama.cpp) is kept once; arguments append, except a repetition of the
//! complete arguments, which replaces them. The last `finish_reason`, `usage` and `model`
//! seen win. Every piece counts against the answer's [`Budget`] (`max_answer_bytes`):
//! the piece that crosses it is cut, and nothing after it is kept. Every piece kept is
//! also handed to the caller as a [`Delta`] as it arrives.

use evolve_core::history::{Message, ToolCall};
use serde_json::Value;

use super::cap::Budget;
use super::wire::{self, Parsed};
use super::{AnswerCut, Delta, Usage};

/// One tool call being assembled.
#[derive(Debug, Default, Clone)]
struct PartialCall {
    /// The `index` the server gave, when it gave one.
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    /// `Delta::ToolCall` was sent for it.
    announced: bool,
}

/// The message so far.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    /// Chunks applied (a stream with none is an empty answer).
    pub chunks: usize,
    budget: Budget,
    /// Where the last piece went (where a cut the budget did not see falls).
    last: Option<AnswerCut>,
}

impl Assembler {
    /// An assembler keeping at most `max_answer` bytes of the answer.
    pub fn new(max_answer: usize) -> Assembler {
        Assembler {
            budget: Budget::new(max_answer),
            ..Assembler::default()
        }
    }

    /// The server said the answer ended (a `finish_reason` was seen).
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The answer reached the cap: nothing more is kept, reading can stop.
    pub fn is_cut(&self) -> bool {
        self.budget.cut().is_some()
    }

    /// The wire held more than could be read (a line too long): the answer is cut where
    /// the last piece went.
    pub fn force_cut(&mut self) {
        self.budget.force_cut(self.last.unwrap_or(AnswerCut::Text));
    }

    /// Applies one chunk, taking its strings; `Err` carries the server's message when
    /// the chunk is an error. After a cut, chunks are ignored.
    pub fn apply(
        &mut self,
        chunk: &mut Value,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), String> {
        if let Some(err) = wire::error_message(chunk) {
            return Err(err);
        }
        if self.is_cut() {
            return Ok(());
        }
        self.chunks += 1;
        if let Some(m) = chunk["model"].as_str().filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
        if let Some(u) = wire::usage(&chunk["usage"]) {
            self.usage = Some(u);
        }
        let Some(choice) = chunk.get_mut("choices").and_then(|c| c.get_mut(0)) else {
            return Ok(()); // the usage-only chunk of `include_usage`
        };
        if let Some(f) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(f.to_string());
        }
        // Every field is reached with `get_mut`: indexing a value of the wrong type
        // mutably would panic, and these values come from the server.
        let key = match choice.get("delta") {
            Some(d) if !d.is_null() => "delta",
            _ => "message",
        };
        let Some(delta) = choice.get_mut(key).filter(|d| d.is_object()) else {
            return Ok(());
        };
        let reasoning = match wire::take_string(delta.get_mut("reasoning_content")) {
            r if r.is_empty() => wire::take_string(delta.get_mut("reasoning")),
            r => r,
        };
        if !reasoning.is_empty() {
            let keep = self.budget.admit(&reasoning, AnswerCut::Text);
            self.last = Some(AnswerCut::Text);
            if keep > 0 {
                on_delta(Delta::Reasoning(&reasoning[..keep]));
                append(&mut self.reasoning, reasoning, keep);
            }
        }
        let content = wire::take_content(delta.get_mut("content"));
        if !content.is_empty() {
            let keep = self.budget.admit(&content, AnswerCut::Text);
            self.last = Some(AnswerCut::Text);
            if keep > 0 {
                on_delta(Delta::Content(&content[..keep]));
                append(&mut self.content, content, keep);
            }
        }
        if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (position, c) in calls.iter_mut().enumerate() {
                self.apply_call(c, position, on_delta);
            }
        }
        Ok(())
    }

    fn apply_call(&mut self, c: &mut Value, position: usize, on_delta: &mut dyn FnMut(Delta<'_>)) {
        if self.is_cut() {
            return;
        }
        let id = c["id"].as_str().unwrap_or("");
        let slot = match c["index"].as_u64() {
            Some(i) => self.calls.iter().position(|p| p.index == Some(i)),
            None if !id.is_empty() => self.calls.iter().position(|p| p.id == id).or_else(|| {
                self.calls
                    .iter()
                    .position(|p| p.id.is_empty() && p.index.is_none())
            }),
            None => (position < self.calls.len()).then_some(position),
        };
        let slot = slot.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index: c["index"].as_u64(),
                ..PartialCall::default()
            });
            self.calls.len() - 1
        });
        let at = AnswerCut::ToolArguments(slot);
        self.last = Some(at);
        let call = &mut self.calls[slot];
        if call.id.is_empty() && !id.is_empty() {
            call.id = id.to_string();
        }
        let Some(f) = c.get_mut("function").filter(|f| f.is_object()) else {
            return;
        };
        if let Some(name) = f["name"].as_str() {
            if call.name.is_empty() || name.starts_with(call.name.as_str()) {
                // First sight, a repeated header, or a name sent cumulatively.
                let extra = &name[call.name.len()..];
                let keep = call.name.len() + self.budget.admit(extra, at);
                call.name = name[..keep].to_string();
            } else {
                // A name sent in pieces.
                let keep = self.budget.admit(name, at);
                call.name.push_str(&name[..keep]);
            }
        }
        let args = wire::take_arguments(f.get_mut("arguments"));
        if !args.is_empty() {
            let repeats_all = !call.arguments.is_empty()
                && args.len() >= call.arguments.len()
                && args.starts_with(call.arguments.as_str())
                && serde_json::from_str::<Value>(&call.arguments).is_ok();
            if repeats_all {
                let had = call.arguments.len();
                let keep = had + self.budget.admit(&args[had..], at);
                let mut args = args;
                args.truncate(keep);
                call.arguments = args;
            } else {
                let keep = self.budget.admit(&args, at);
                append(&mut call.arguments, args, keep);
            }
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            on_delta(Delta::ToolCall {
                index: slot,
                name: &call.name,
            });
        }
    }

    /// The assembled message (tool calls without an id get `call_N`). When the answer
    /// was cut in a tool call, the calls after it are dropped and the cut one is the last.
    pub fn finish(self) -> Parsed {
        let cut = self.budget.cut();
        let mut message = Message::assistant(self.content);
        if !self.reasoning.is_empty() {
            message.reasoning = Some(self.reasoning);
        }
        let kept = match cut {
            Some(AnswerCut::ToolArguments(slot)) => slot + 1,
            _ => self.calls.len(),
        };
        let mut cut_at = cut;
        message.tool_calls = self
            .calls
            .into_iter()
            .take(kept)
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty() || !c.arguments.is_empty())
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        if let Some(AnswerCut::ToolArguments(_)) = cut {
            // The cut call is the last one kept (its index after the empty ones left).
            cut_at = Some(match message.tool_calls.len() {
                0 => AnswerCut::Text,
                n => AnswerCut::ToolArguments(n - 1),
            });
        }
        Parsed {
            message,
            finish_reason: self.finish_reason,
            usage: self.usage,
            model: self.model,
            cut: cut_at,
        }
    }
}

/// Adds the first `keep` bytes of `piece` to `acc`; the first piece is moved, not copied.
fn append(acc: &mut String, mut piece: String, keep: usize) {
    piece.truncate(keep);
    if acc.is_empty() {
        *acc = piece;
    } else {
        acc.push_str(&piece);
    }
}

/// Hands a whole message to `on_delta` at once (reasoning, text, then each tool call):
/// what a streaming caller sees when the answer came unstreamed.
pub(crate) fn deliver_whole(message: &Message, on_delta: &mut dyn FnMut(Delta<'_>)) {
    if let Some(r) = message.reasoning.as_deref().filter(|r| !r.is_empty()) {
        on_delta(Delta::Reasoning(r));
    }
    if !message.content.is_empty() {
        on_delta(Delta::Content(&message.content));
    }
    for (index, c) in message.tool_calls.iter().enumerate() {
        on_delta(Delta::ToolCall {
            index,
            name: &c.name,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call_chunk(calls: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
    }

    /// A tool call as (id, name, arguments).
    type Triple = (String, String, String);

    /// Assembles the chunks; returns the calls and the deltas.
    fn assemble(chunks: &[Value]) -> (Vec<Triple>, Vec<String>) {
        let mut a = Assembler::default();
        let mut deltas = Vec::new();
        for c in chunks {
            a.apply(&mut c.clone(), &mut |d| deltas.push(format!("{d:?}")))
                .expect("no error chunk");
        }
        let calls = a
            .finish()
            .message
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.name, c.arguments))
            .collect();
        (calls, deltas)
    }

    fn triple(id: &str, name: &str, args: &str) -> Triple {
        (id.into(), name.into(), args.into())
    }

    #[test]
    fn tool_calls_assemble_whatever_the_server_repeats() {
        let cases: Vec<(&str, Vec<Value>, Vec<Triple>)> = vec![
            (
                "OpenAI: header once, arguments in pieces",
                vec![
                    call_chunk(
                        json!([{"index": 0, "id": "c1", "type": "function", "function": {"name": "get_time", "arguments": ""}}]),
                    ),
                    call_chunk(json!([{"index": 0, "function": {"arguments": "{\"zone\":"}}])),
                    call_chunk(json!([{"index": 0, "function": {"arguments": "\"UTC\"}"}}])),
                ],
                vec![triple("c1", "get_time", r#"{"zone":"UTC"}"#)],
            ),
            (
                "llama.cpp: id and name in every chunk",
                vec![
                    call_chunk(
                        json!([{"index": 0, "id": "c1", "function": {"name": "get_time", "arguments": "{\"zone\":"}}]),
                    ),
                    call_chunk(
                        json!([{"index": 0, "id": "c1", "function": {"name": "get_time", "arguments": "\"UTC\"}"}}]),
                    ),
                ],
                vec![triple("c1", "get_time", r#"{"zone":"UTC"}"#)],
            ),
            (
                "two calls interleaved by index",
                vec![
                    call_chunk(
                        json!([{"index": 0, "id": "a", "function": {"name": "one", "arguments": "{"}}]),
                    ),
                    call_chunk(
                        json!([{"index": 1, "id": "b", "function": {"name": "two", "arguments": "{}"}}]),
                    ),
                    call_chunk(json!([{"index": 0, "function": {"arguments": "}"}}])),
                ],
                vec![triple("a", "one", "{}"), triple("b", "two", "{}")],
            ),
            (
                "no index: ids tell calls apart",
                vec![
                    call_chunk(
                        json!([{"id": "a", "function": {"name": "one", "arguments": "{}"}}]),
                    ),
                    call_chunk(
                        json!([{"id": "b", "function": {"name": "two", "arguments": "{\"x\":1}"}}]),
                    ),
                ],
                vec![triple("a", "one", "{}"), triple("b", "two", r#"{"x":1}"#)],
            ),
            (
                "no index, no id: position in the chunk",
                vec![
                    call_chunk(
                        json!([{"function": {"name": "one", "arguments": "{\"a\""}}, {"function": {"name": "two", "arguments": "{}"}}]),
                    ),
                    call_chunk(json!([{"function": {"arguments": ":1}"}}])),
                ],
                vec![
                    triple("call_0", "one", r#"{"a":1}"#),
                    triple("call_1", "two", "{}"),
                ],
            ),
            (
                "complete arguments repeated at the end",
                vec![
                    call_chunk(
                        json!([{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{\"a\":1}"}}]),
                    ),
                    call_chunk(
                        json!([{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{\"a\":1}"}}]),
                    ),
                ],
                vec![triple("c", "t", r#"{"a":1}"#)],
            ),
            (
                "arguments as an object",
                vec![call_chunk(
                    json!([{"index": 0, "id": "c", "function": {"name": "t", "arguments": {"a": 1}}}]),
                )],
                vec![triple("c", "t", r#"{"a":1}"#)],
            ),
            (
                "a name in pieces",
                vec![
                    call_chunk(json!([{"index": 0, "id": "c", "function": {"name": "get_"}}])),
                    call_chunk(
                        json!([{"index": 0, "function": {"name": "time", "arguments": "{}"}}]),
                    ),
                ],
                vec![triple("c", "get_time", "{}")],
            ),
            (
                "index 1 first (sparse indices)",
                vec![call_chunk(
                    json!([{"index": 1, "id": "z", "function": {"name": "t", "arguments": "{}"}}]),
                )],
                vec![triple("z", "t", "{}")],
            ),
        ];
        for (name, chunks, expected) in cases {
            assert_eq!(assemble(&chunks).0, expected, "{name}");
        }
    }

    #[test]
    fn each_tool_call_is_announced_once() {
        let chunks = vec![
            call_chunk(
                json!([{"index": 0, "id": "c1", "function": {"name": "get_time", "arguments": "{"}}]),
            ),
            call_chunk(
                json!([{"index": 0, "id": "c1", "function": {"name": "get_time", "arguments": "}"}}]),
            ),
            call_chunk(
                json!([{"index": 1, "id": "c2", "function": {"name": "read_file", "arguments": "{}"}}]),
            ),
        ];
        let (_, deltas) = assemble(&chunks);
        assert_eq!(
            deltas,
            [
                r#"ToolCall { index: 0, name: "get_time" }"#,
                r#"ToolCall { index: 1, name: "read_file" }"#
            ]
        );
    }

    #[test]
    fn text_reasoning_usage_and_finish_add_up() {
        let chunks = [
            json!({"model": "m1", "choices": [{"delta": {"role": "assistant", "reasoning_content": "think "}}]}),
            json!({"choices": [{"delta": {"reasoning": "more"}}]}),
            json!({"choices": [{"delta": {"content": "Hel"}}]}),
            json!({"choices": [{"delta": {"content": "lo"}, "finish_reason": null}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}),
        ];
        let mut a = Assembler::default();
        let mut seen = Vec::new();
        for c in &chunks {
            a.apply(&mut c.clone(), &mut |d| seen.push(format!("{d:?}")))
                .expect("ok");
        }
        let p = a.finish();
        assert_eq!(p.message.content, "Hello");
        assert_eq!(p.message.reasoning.as_deref(), Some("think more"));
        assert_eq!(p.finish_reason.as_deref(), Some("stop"));
        assert_eq!(p.model.as_deref(), Some("m1"));
        assert_eq!(
            p.usage,
            Some(Usage {
                prompt_tokens: 7,
                completion_tokens: 2
            })
        );
        assert_eq!(
            seen,
            [
                r#"Reasoning("think ")"#,
                r#"Reasoning("more")"#,
                r#"Content("Hel")"#,
                r#"Content("lo")"#
            ]
        );
    }

    #[test]
    fn an_error_chunk_is_reported_with_the_servers_message() {
        let mut a = Assembler::default();
        let err = a
            .apply(
                &mut json!({"error": {"message": "context overflow"}}),
                &mut |_| {},
            )
            .expect_err("an error");
        assert_eq!(err, "context overflow");
    }
}
