//! The turn's interface over HTTP ([`WebIo`]): how a running turn's text, tool calls,
//! progress and questions for a person reach the client, as OpenAI chunks (`data:`) and
//! Evolve events (`event: evolve.*`) on the stream, and how a person's answer comes back.
//! What the turn does with them is the agent's; the request and the reply are
//! [`super::chat`]'s.

use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use evolve_core::permission::{Level, PendingCall};
use evolve_core::text::Lang;
use serde_json::{json, Value};

use super::http::Stream;
use super::waiting::pending_json;
use super::State;
use crate::agents::{Heard, ToolRun, TurnIo};
use crate::cancel::Cancel;
use crate::llm::Delta;
use crate::mcp::elicit::{ElicitReply, Elicitation};

/// How long a turn waits for a person's answer before the call is refused.
const APPROVAL_WAIT: Duration = Duration::from_secs(600);
/// A comment line this often keeps a waiting stream open through proxies and tells us
/// when the client has gone.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// `data: {json}` + blank line.
pub(super) fn data(out: &mut Stream<'_>, value: &Value) -> bool {
    out.send(format!("data: {value}\n\n").as_bytes())
}

/// Text at most this long goes out in one chunk: a long piece (an answer that came
/// unstreamed) is sent in several, so no event holds a copy of the whole answer.
pub(super) const CHUNK_BYTES: usize = 16 * 1024;

/// `text` in pieces of at most [`CHUNK_BYTES`], cut between characters.
pub(super) fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = evolve_core::history::floor_char_boundary(rest, CHUNK_BYTES);
        if cut == 0 {
            cut = evolve_core::history::ceil_char_boundary(rest, 1);
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// `event: NAME` + `data: {json}`.
pub(super) fn event(out: &mut Stream<'_>, name: &str, value: &Value) -> bool {
    out.send(format!("event: {name}\ndata: {value}\n\n").as_bytes())
}

/// What every chunk of one completion shares.
pub(super) struct ChunkShape {
    pub(super) id: String,
    pub(super) created: i64,
    pub(super) model: String,
    pub(super) first: bool,
}

impl ChunkShape {
    pub(super) fn new(id: &str, created: i64, model: &str) -> ChunkShape {
        ChunkShape {
            id: id.to_string(),
            created,
            model: model.to_string(),
            first: true,
        }
    }

    pub(super) fn delta(&self, mut delta: Value) -> Value {
        if self.first {
            delta["role"] = json!("assistant");
        }
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
        })
    }
}

/// The turn's interface over HTTP.
pub(super) struct WebIo<'s, 'o, 'w> {
    pub(super) state: &'s State,
    pub(super) session: &'s str,
    pub(super) out: Option<&'o mut Stream<'w>>,
    pub(super) events: bool,
    pub(super) chunk: ChunkShape,
    pub(super) cancel: &'s Cancel,
    pub(super) streamed: bool,
    /// A person has been asked about a call in this turn.
    pub(super) asked: bool,
    /// The client has gone: a question finds nobody, and the turn is parked.
    pub(super) gone: bool,
    /// When the last progress event went out (they are sent at most every 200 ms).
    pub(super) progressed: Option<std::time::Instant>,
}

impl WebIo<'_, '_, '_> {
    fn send_data(&mut self, value: &Value) {
        if let Some(out) = self.out.as_deref_mut() {
            if !data(out, value) {
                self.client_gone();
            }
        }
    }

    fn send_event(&mut self, name: &str, value: &Value) {
        if !self.events {
            return;
        }
        if let Some(out) = self.out.as_deref_mut() {
            if !event(out, name, value) {
                self.client_gone();
            }
        }
    }

    /// The client has gone: the turn stops — unless a person was asked a question in
    /// it. A question waiting now parks the turn on the session (an answer from a
    /// reloaded page, or the session's next message, resumes it); a question already
    /// answered lets the turn run to its end with nobody streaming, so its result is
    /// stored.
    fn client_gone(&mut self) {
        self.gone = true;
        if !self.asked {
            self.cancel.cancel();
        }
    }

    /// Waits for a person's answer to the call's current step.
    fn wait_answer(&mut self, call: &PendingCall, lang: Lang) -> Option<String> {
        let rx = self.state.approvals.register(self.session, &call.id);
        self.asked = true;
        self.send_event(
            "evolve.permission",
            &json!({"session": self.session, "call": pending_json(call, lang)}),
        );
        let started = Instant::now();
        let mut pinged = started;
        let answer = loop {
            if self.gone || self.cancel.is_cancelled() || self.state.shutdown.load(Ordering::SeqCst)
            {
                break None;
            }
            // Woken every second to notice a cancel or a shutdown.
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(a) => break Some(a),
                Err(RecvTimeoutError::Disconnected) => break None,
                Err(RecvTimeoutError::Timeout) if started.elapsed() > APPROVAL_WAIT => break None,
                Err(RecvTimeoutError::Timeout) => {
                    if pinged.elapsed() >= KEEPALIVE {
                        pinged = Instant::now();
                        if let Some(out) = self.out.as_deref_mut() {
                            // A client that has gone parks the turn: the answer can
                            // come from another page, or with the next message.
                            if !out.send(b": waiting for a person\n\n") {
                                break None;
                            }
                        }
                    }
                }
            }
        };
        self.state.approvals.remove(self.session, &call.id);
        answer
    }
}

impl WebIo<'_, '_, '_> {
    /// A server's question as a form on the page: `evolve.elicitation`, then the wait
    /// for `POST /v1/sessions/{id}/elicitations/{eid}`; a page that went away, Ctrl-C,
    /// a shutdown or the approval wait running out cancel it.
    fn wait_elicitation(&mut self, tool: &str, question: &Elicitation) -> ElicitReply {
        let (id, rx) = self.state.elicitations.register(self.session, question);
        self.asked = true;
        let mut v = question.to_json();
        v["id"] = json!(id);
        v["session"] = json!(self.session);
        v["tool"] = json!(tool);
        self.send_event("evolve.elicitation", &v);
        let started = Instant::now();
        let mut pinged = started;
        let reply = loop {
            if self.gone || self.cancel.is_cancelled() || self.state.shutdown.load(Ordering::SeqCst)
            {
                break ElicitReply::Cancel;
            }
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(reply) => break reply,
                Err(RecvTimeoutError::Disconnected) => break ElicitReply::Cancel,
                Err(RecvTimeoutError::Timeout) if started.elapsed() > APPROVAL_WAIT => {
                    break ElicitReply::Cancel
                }
                Err(RecvTimeoutError::Timeout) => {
                    if pinged.elapsed() >= KEEPALIVE {
                        pinged = Instant::now();
                        if let Some(out) = self.out.as_deref_mut() {
                            if !out.send(b": waiting for a person\n\n") {
                                self.client_gone();
                            }
                        }
                    }
                }
            }
        };
        self.state.elicitations.remove(self.session, &id);
        self.send_event(
            "evolve.elicitation_end",
            &json!({"id": id, "action": reply.action()}),
        );
        reply
    }
}

impl TurnIo for WebIo<'_, '_, '_> {
    fn on_delta(&mut self, delta: &Delta<'_>) {
        let (key, text) = match delta {
            Delta::Content(text) => ("content", *text),
            Delta::Reasoning(text) => ("reasoning_content", *text),
            Delta::ToolCall { .. } => return,
        };
        self.streamed = true;
        for piece in pieces(text) {
            let chunk = self.chunk.delta(json!({ key: piece }));
            self.chunk.first = false;
            self.send_data(&chunk);
        }
    }

    fn on_tool_start(&mut self, name: &str, arguments: &str, level: Level) {
        self.send_event(
            "evolve.tool_start",
            &json!({"name": name, "arguments": arguments, "level": level.to_string()}),
        );
    }

    fn on_tool_progress(&mut self, name: &str, progress: &crate::mcp::Progress) {
        let finished = progress.finished();
        if !finished
            && self
                .progressed
                .is_some_and(|at| at.elapsed() < PROGRESS_EVERY)
        {
            return;
        }
        self.progressed = Some(std::time::Instant::now());
        self.send_event(
            "evolve.tool_progress",
            &json!({
                "name": name,
                "progress": progress.progress,
                "total": progress.total,
                "message": progress.message,
            }),
        );
    }

    fn on_subtask(&mut self, event: &crate::agents::SubEvent) {
        self.send_event("evolve.subtask", &event.to_json());
    }

    fn on_notice(&mut self, text: &str) {
        self.send_event("evolve.notice", &json!({ "text": text }));
    }

    fn on_tool_end(&mut self, run: &ToolRun, output: &str) {
        let mut v = serde_json::to_value(run).unwrap_or_default();
        v["output"] = json!(cut_output(output));
        self.send_event("evolve.tool_end", &v);
    }

    fn elicit(&mut self, tool: &str, question: &Elicitation, _lang: Lang) -> ElicitReply {
        if !self.events || self.gone {
            // A plain client has no form to show: like a headless run, declined.
            return ElicitReply::Decline;
        }
        self.wait_elicitation(tool, question)
    }

    fn ask(&mut self, call: &PendingCall, lang: Lang) -> Heard {
        if !self.events {
            return Heard::Away;
        }
        match self.wait_answer(call, lang) {
            Some(answer) => Heard::Reply(answer),
            None => Heard::Away,
        }
    }
}

/// A tool's progress events go out at most this often (the last one always).
pub(super) const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// How much of a call's output the UI's card shows (the whole of it is in the session).
pub(super) const CARD_OUTPUT_CHARS: usize = 4000;

/// A tool's output as a card shows it: at most [`CARD_OUTPUT_CHARS`] characters.
pub fn cut_output(text: &str) -> String {
    match text.char_indices().nth(CARD_OUTPUT_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
#[path = "turn_io_tests.rs"]
mod tests;
