//! `POST /v1/chat/completions`: an OpenAI-compatible endpoint that runs the agent.
//!
//! What a client sends is read the OpenAI way (model, messages, stream), but the turn is
//! Evolve's: the last user message is the input, and the session's own history,
//! memories, skills and tools (under their permission levels) make the answer. The
//! session comes from `X-Evolve-Session` or a `session` field; without one a new session
//! is made and named in the `X-Evolve-Session` response header.
//!
//! The reply is carried once: in `choices[0].message.content` (or the streamed deltas).
//! The Evolve record beside it (`evolve`, the `evolve.turn` events) leaves out its
//! `reply`, which would repeat the whole answer.
//!
//! Permissions: a plain client gets a headless turn (like `evolve ask`: up to the
//! configured headless level runs, anything needing a person is refused and the answer
//! says so). A client that sets `evolve_events` (the UI) gets an interactive turn: a
//! call that needs a person is announced as an `evolve.permission` event and the turn
//! waits for `POST /v1/sessions/{id}/pending/{call}`.

use std::sync::mpsc::{self};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use evolve_core::permission::{Level, Policy};
use evolve_core::text::Lang;
use serde_json::{json, Value};

use super::http::{Request, Response, Stream};
use super::turn_io::{data, event, pieces, ChunkShape, WebIo};
use super::waiting::pending_json;
use super::{error, State};
use crate::agents::{Refused, TurnInput, TurnRecord};
use crate::cancel::Cancel;
use crate::clock::now;
use crate::error::Error;
use crate::said;

/// How long a new message waits for a turn of its session that waited for a person to
/// park (it notices within a second).
const PARK_WAIT: Duration = Duration::from_secs(5);
/// How long a streamed turn with events waits for the evaluation before `[DONE]`.
const POST_WAIT: Duration = Duration::from_secs(20);

/// The parsed request.
struct ChatRequest {
    text: String,
    /// The last user message's `image_url` parts, checked.
    images: Vec<String>,
    model: String,
    stream: bool,
    events: bool,
    session: Option<String>,
    /// `evolve_allow` / `evolve_yes` (what `evolve ask --allow/--yes` sends): the
    /// headless policy's level.
    allow: Option<Level>,
    yes: bool,
    /// `evolve_tool`: the first model call must use this tool (`ask --tool`).
    tool: Option<String>,
    /// `evolve_wait`: fold the evaluation into the record before answering (`ask --json`).
    wait: bool,
    /// `evolve_replace`: the session's last turn, answered again (regenerate, edit).
    replaces: Option<u64>,
}

fn parse(req: &Request) -> Result<ChatRequest, Response<'static>> {
    let body: Value = serde_json::from_slice(&req.body)
        .map_err(|e| error(400, format!("the body is not valid JSON: {e}")))?;
    let Some(obj) = body.as_object() else {
        return Err(error(400, "the body must be a JSON object"));
    };
    let Some(messages) = obj.get("messages").and_then(Value::as_array) else {
        return Err(error(400, "`messages` must be an array of {role, content}"));
    };
    // Only the last user message is read, but a malformed one anywhere is the client's
    // mistake to hear about, as OpenAI would say.
    if let Some(bad) = messages.iter().position(|m| {
        !m.get("role").is_some_and(Value::is_string)
            || !matches!(
                m.get("content"),
                None | Some(Value::Null | Value::String(_) | Value::Array(_))
            )
    }) {
        return Err(error(
            400,
            format!("messages[{bad}] must be {{\"role\": \"…\", \"content\": \"…\"}}"),
        ));
    }
    let Some(last) = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return Err(error(400, "`messages` has no user message to answer"));
    };
    let text = match last.get("content") {
        Some(Value::String(s)) => s.clone(),
        // Content parts: the text ones, joined.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err(error(400, "the last user message has no text content")),
    };
    let images = images_of(last)?;
    if text.trim().is_empty() {
        return Err(error(
            400,
            if images.is_empty() {
                "the last user message is empty"
            } else {
                "the last user message has images but no text: say what to do with them"
            },
        ));
    }
    let flag = |name: &str| -> Result<bool, Response<'static>> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(error(400, format!("`{name}` must be true or false"))),
        }
    };
    // The body field is checked even when the header names the session: a wrong type
    // is a mistake, not an absent field.
    let field = match obj.get("session") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err(error(400, "`session` must be a session id string")),
    };
    let session = match req.header("x-evolve-session") {
        Some(h) if !h.is_empty() => Some(h.to_string()),
        _ => field,
    };
    let model = match obj.get("model") {
        None | Some(Value::Null) => "evolve".to_string(),
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(error(400, "`model` must be a string")),
    };
    let allow = match obj.get("evolve_allow") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match s.parse::<Level>() {
            Ok(l) if l <= Level::L3 => Some(l),
            _ => {
                return Err(error(
                    400,
                    "`evolve_allow` must be L0 … L3: calls above L3 always need a person",
                ))
            }
        },
        Some(_) => {
            return Err(error(
                400,
                "`evolve_allow` must be a level string like \"L2\"",
            ))
        }
    };
    let tool = match obj.get("evolve_tool") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(error(400, "`evolve_tool` must be a tool name")),
    };
    let replaces = match obj.get("evolve_replace") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|&n| n >= 1) {
            Some(n) if session.is_some() => Some(n),
            Some(_) => {
                return Err(error(
                    400,
                    "`evolve_replace` needs the session (`session` or X-Evolve-Session)",
                ))
            }
            None => {
                return Err(error(
                    400,
                    "`evolve_replace` must be the number of the turn to answer again",
                ))
            }
        },
    };
    Ok(ChatRequest {
        replaces,
        allow,
        yes: flag("evolve_yes")?,
        tool,
        wait: flag("evolve_wait")?,
        text: text.trim().to_string(),
        images,
        model,
        stream: flag("stream")?,
        events: flag("evolve_events")?,
        session,
    })
}

/// The `image_url` parts of a user message (`{"type": "image_url", "image_url": {"url":
/// …}}`, or the URL as a plain string), each checked ([`crate::llm::image::check`]).
fn images_of(message: &Value) -> Result<Vec<String>, Response<'static>> {
    use crate::llm::image::{check, MAX_IMAGES};
    let Some(parts) = message.get("content").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut images = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if part.get("type").and_then(Value::as_str) != Some("image_url") {
            continue;
        }
        let url = match part.get("image_url") {
            Some(Value::String(u)) => Some(u.as_str()),
            Some(v) => v.get("url").and_then(Value::as_str),
            None => None,
        };
        let Some(url) = url else {
            return Err(error(
                400,
                format!("content[{i}]: an image_url part needs image_url.url"),
            ));
        };
        check(url).map_err(|e| error(400, format!("content[{i}]: {e}")))?;
        images.push(url.to_string());
    }
    if images.len() > MAX_IMAGES {
        return Err(error(
            400,
            format!(
                "the message has {} images; at most {MAX_IMAGES} go with one message",
                images.len()
            ),
        ));
    }
    Ok(images)
}

/// An answer to a call parked on its session that no stream waits for (the page that
/// asked went away, or the server restarted): the second question of an L4 call is
/// returned at once (`pending`); otherwise the turn resumes in the background, with
/// nobody streaming, and its result is stored in the session.
pub fn answer_parked(state: &Arc<State>, sid: &str, call: &str, answer: &str) -> Response<'static> {
    let rt = state.rt();
    let parked = match rt.store.parked(sid) {
        Ok(Some(p)) if p.state.pending().is_some_and(|c| c.id == call) => p,
        Ok(_) => {
            return error(
                404,
                format!("no call {call} is waiting for an answer in session {sid}"),
            )
        }
        Err(e) => return error(500, format!("the store failed: {e}")),
    };
    let cancel = Arc::new(Cancel::new());
    {
        let mut turns = state.turns.lock().unwrap_or_else(PoisonError::into_inner);
        if turns.contains_key(sid) {
            return error(
                409,
                format!("a turn is already running in session {sid}; wait for it to finish"),
            );
        }
        turns.insert(sid.to_string(), Arc::clone(&cancel));
    }
    let busy = Busy {
        state: Arc::clone(state),
        session: sid.to_string(),
        unused_new: false,
    };
    let mut probe = parked.state.clone();
    probe.handle_answer(answer);
    if let Some(next) = probe.pending().cloned() {
        let again = crate::store::ParkedTurn {
            turn: parked.turn,
            state: probe,
        };
        if let Err(e) = rt.store.park(sid, &again) {
            return error(500, format!("the store failed: {e}"));
        }
        drop(busy);
        return Response::json(
            200,
            &json!({"accepted": true, "pending": pending_json(&next, Lang::guess(again.state.question()))}),
        );
    }
    let state = Arc::clone(state);
    let sid = sid.to_string();
    let answer = answer.to_string();
    std::thread::spawn(move || {
        let mut io = WebIo {
            state: &state,
            session: &sid,
            out: None,
            events: true,
            chunk: ChunkShape::new("", 0, ""),
            cancel: &cancel,
            streamed: false,
            asked: true,
            // Nobody is there to ask: a later call that needs a person parks again.
            gone: true,
            progressed: None,
        };
        let result = state.manager().turn(
            TurnInput {
                session: Some(&sid),
                text: &answer,
                policy: Policy::Interactive,
                stream: false,
                cancel: &cancel,
                force_tool: None,
                images: &[],
                from: evolve_core::provenance::Source::Person,
                replaces: None,
            },
            &mut io,
        );
        if let Err(e) = result {
            log::warn!("the resumed turn of session {sid} failed: {e}");
        }
        drop(busy);
    });
    Response::json(200, &json!({"accepted": true}))
}

/// Marks a session busy for the length of a turn.
/// Made before the response, so that a stream whose head cannot even be written (the
/// client has gone) still frees its session when the unrun closure is dropped.
struct Busy {
    state: Arc<State>,
    session: String,
    /// A session made for this turn that the turn has not used yet: removed with the
    /// guard if the turn never runs.
    unused_new: bool,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.state
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
        forget_if_empty(&self.state, &self.session, self.unused_new);
    }
}

/// The route.
pub fn completions(state: &Arc<State>, req: &Request) -> Response<'static> {
    let chat = match parse(req) {
        Ok(c) => c,
        Err(resp) => return resp,
    };
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    if let Some(name) = chat.tool.as_deref() {
        if !rt.tools.has(name) {
            let names: Vec<String> = rt.tools.specs().into_iter().map(|s| s.name).collect();
            return error(
                400,
                format!(
                    "--tool {name}: no such tool; the tools are {}",
                    names.join(", ")
                ),
            );
        }
    }
    let (sid, created) = match &chat.session {
        Some(id) => match rt.store.session(id) {
            Ok(s) => {
                if let Some(n) = chat.replaces {
                    match crate::agents::check_replace(rt, &s, false, n) {
                        Ok(()) => {}
                        Err(Error::Store(e)) => return super::request::store_error(e),
                        Err(e) => {
                            let (status, body) = turn_error(&e);
                            return Response::json(status, &body);
                        }
                    }
                }
                (s.id, false)
            }
            Err(e) => return super::request::store_error(e),
        },
        None => match rt
            .store
            .create_session(&evolve_core::text::one_line(&chat.text, 60), now())
        {
            Ok(s) => (s.id, true),
            Err(e) => return super::request::store_error(e),
        },
    };
    let cancel = Arc::new(Cancel::new());
    // A turn of this session that waits for a person is parked, so that this message
    // settles its call (ARCHITECTURE.md § The turn, step 2).
    if state.approvals.release_session(&sid) {
        let end = Instant::now() + PARK_WAIT;
        while Instant::now() < end
            && state
                .turns
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(&sid)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    {
        let mut turns = state.turns.lock().unwrap_or_else(PoisonError::into_inner);
        if turns.contains_key(&sid) {
            return error(
                409,
                format!("a turn is already running in session {sid}; wait for it to finish"),
            );
        }
        turns.insert(sid.clone(), Arc::clone(&cancel));
    }
    let created_at = now();
    let id = format!("chatcmpl-{sid}-{created_at}");
    let mut busy = Busy {
        state: Arc::clone(state),
        session: sid.clone(),
        unused_new: created,
    };
    if chat.stream {
        let state = Arc::clone(state);
        let sid2 = sid.clone();
        return Response::sse(Box::new(move |out: &mut Stream<'_>| {
            busy.unused_new = false;
            stream_turn(
                &state, &chat, &sid2, created, &id, created_at, &cancel, out, busy,
            );
        }))
        .with("X-Evolve-Session", sid);
    }
    busy.unused_new = false;
    let mut io = WebIo {
        state,
        session: &sid,
        out: None,
        events: chat.events,
        chunk: ChunkShape::new(&id, created_at, &chat.model),
        cancel: &cancel,
        streamed: false,
        asked: false,
        gone: false,
        progressed: None,
    };
    let result = run_turn(state, &chat, &sid, &cancel, &mut io);
    drop(busy);
    match result {
        Ok((mut record, post)) => {
            if chat.wait {
                if let Ok(p) = post.recv_timeout(rt.config.agent.background_wait) {
                    record.absorb(&p);
                }
            }
            let mut content = std::mem::take(&mut record.reply);
            let note = refused_note(&record);
            if note.is_some() {
                content.truncate(content.trim_end().len());
            }
            let mut evolve = record_without_reply(&record);
            // Where the reply ends in `content` (a note for a plain client may follow):
            // `evolve ask` takes the reply alone by this length, not by the note's words.
            evolve["reply_bytes"] = json!(content.len());
            if let Some(note) = note {
                content.push_str(&note);
            }
            let body = json!({
                "id": id,
                "object": "chat.completion",
                "created": created_at,
                "model": chat.model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }],
                "usage": usage_json(&record),
                "evolve": evolve,
            });
            // A big body is followed by giving the freed memory back (web::http).
            Response::json(200, &body).with("X-Evolve-Session", sid)
        }
        Err(e) => {
            forget_if_empty(state, &sid, created);
            let (status, body) = turn_error(&e);
            Response::json(status, &body).with("X-Evolve-Session", sid)
        }
    }
}

/// The turn record as the chat endpoint shows it: without `reply`, which the response
/// carries as its content (or its deltas). Its `reply` must be empty here (taken out by
/// the caller), so nothing is copied.
fn record_without_reply(record: &TurnRecord) -> Value {
    let mut v = serde_json::to_value(record).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("reply");
    }
    v
}

fn usage_json(record: &TurnRecord) -> Value {
    let u = record.usage.main;
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    })
}

/// The plain note that follows the answer when calls needed a person and were refused
/// (a plain client has no other way to learn it), blank line first; `None` when there
/// were none.
fn refused_note(record: &TurnRecord) -> Option<String> {
    waiting_note(&Refused::of(&record.tools), &record.session)
}

/// [`refused_note`] from the refused calls and the session.
fn waiting_note(refused: &Refused, session: &str) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    // The call was refused, not parked: this client cannot answer a question, so
    // nothing waits anywhere. Say where asking again gets the person asked.
    Some(format!(
        "\n\n[evolve] Not run, a person's approval is needed: {}. This client cannot give \
         it and nothing is waiting: ask again in the Evolve web UI (session {session}) or in \
         `evolve chat --session {session}`, where you are asked before it runs.",
        refused.names(),
    ))
}

/// A new session the failed turn left empty is removed.
fn forget_if_empty(state: &State, sid: &str, created: bool) {
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    if created && store.session(sid).is_ok_and(|s| s.messages == 0) {
        let _ = store.remove_session(sid);
    }
}

/// A failed turn as an HTTP status and error object. The code tells `evolve ask`
/// (forwarding to this server) which exit code the failure has.
pub(super) fn turn_error(e: &Error) -> (u16, Value) {
    let (status, code) = match e {
        Error::Model(m) if m.is_configuration() => (502, "model_configuration"),
        Error::Model(m) if m.is_unreachable() => (502, "model_unreachable"),
        Error::Model(_) => (502, "model_error"),
        // The client went away or the server is stopping: whoever still reads this is
        // told the service stopped the turn, not that the model failed.
        Error::Cancelled => (503, "cancelled"),
        Error::Usage(_) | Error::Invalid { .. } => (400, "invalid_request"),
        Error::Conflict(_) => (409, "conflict"),
        Error::Budget { .. } => (429, "budget_spent"),
        _ => (500, "internal_error"),
    };
    let message = e.to_string();
    let said = match e {
        Error::Model(m) => m.said(),
        Error::Cancelled => said::Said::new(said::Code::ModelCancelled, json!({})),
        Error::Budget {
            used, limit, task, ..
        } => said::Said::new(
            match task {
                None => said::Code::BudgetSpent,
                Some(_) => said::Code::TaskBudgetSpent,
            },
            json!({"used": used, "limit": limit, "task": task}),
        ),
        _ => said::Said::status(status, &message),
    };
    (
        status,
        super::said_value(status, &message, Some(code), &said),
    )
}

fn run_turn(
    state: &State,
    chat: &ChatRequest,
    sid: &str,
    cancel: &Cancel,
    io: &mut WebIo<'_, '_, '_>,
) -> Result<(TurnRecord, mpsc::Receiver<crate::agents::PostTurn>), Error> {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let policy = if chat.events {
        Policy::Interactive
    } else {
        Policy::headless(chat.allow, chat.yes, &rt.config.core.permission)
    };
    state.manager().turn(
        TurnInput {
            session: Some(sid),
            text: &chat.text,
            policy,
            stream: chat.stream && rt.config.model.stream,
            cancel,
            force_tool: chat.tool.as_deref(),
            images: &chat.images,
            from: evolve_core::provenance::Source::Person,
            replaces: chat.replaces,
        },
        io,
    )
}

#[allow(clippy::too_many_arguments)]
fn stream_turn(
    state: &State,
    chat: &ChatRequest,
    sid: &str,
    created: bool,
    id: &str,
    created_at: i64,
    cancel: &Cancel,
    out: &mut Stream<'_>,
    busy: Busy,
) {
    let chunk = ChunkShape::new(id, created_at, &chat.model);
    if chat.events {
        event(out, "evolve.session", &json!({"session": sid}));
    }
    let mut io = WebIo {
        state,
        session: sid,
        out: Some(out),
        events: chat.events,
        chunk,
        cancel,
        streamed: false,
        asked: false,
        gone: false,
        progressed: None,
    };
    let result = run_turn(state, chat, sid, cancel, &mut io);
    let streamed = io.streamed;
    let chunk = io.chunk;
    // The session is free for the next turn while the evaluation finishes.
    drop(busy);
    match result {
        Ok((mut record, post)) => {
            let reply = std::mem::take(&mut record.reply);
            let big = reply.len() >= crate::heap::BIG_ANSWER;
            let mut chunk = chunk;
            // What was not streamed yet (streaming off in the config) goes out now, in
            // pieces like a stream; the note about refused calls after it.
            if !streamed {
                for piece in pieces(&reply) {
                    let sent = data(out, &chunk.delta(json!({"content": piece})));
                    chunk.first = false;
                    if !sent {
                        break; // the client has gone
                    }
                }
            }
            drop(reply);
            if let Some(note) = refused_note(&record) {
                data(out, &chunk.delta(json!({"content": note})));
            }
            let mut last = chunk.delta(json!({}));
            last["choices"][0]["finish_reason"] = json!("stop");
            last["usage"] = usage_json(&record);
            data(out, &last);
            if chat.events {
                event(out, "evolve.turn", &record_without_reply(&record));
                if let Ok(p) = post.recv_timeout(POST_WAIT) {
                    record.absorb(&p);
                    event(out, "evolve.turn", &record_without_reply(&record));
                }
            }
            drop(record);
            if big {
                crate::heap::give_back();
            }
        }
        Err(e) => {
            forget_if_empty(state, sid, created);
            let (_, body) = turn_error(&e);
            if chat.events {
                event(out, "evolve.error", &body);
            } else {
                data(out, &body);
            }
        }
    }
    out.send(b"data: [DONE]\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_turn_is_not_answered_as_a_model_error() {
        let (status, body) = turn_error(&Error::Cancelled);
        assert_eq!(status, 503);
        assert_eq!(body["error"]["code"], "cancelled", "{body}");
        let from_model = Error::from(crate::llm::LlmError::Cancelled);
        assert_eq!(turn_error(&from_model).0, 503);
        let failed = Error::from(crate::llm::LlmError::Protocol {
            url: "http://127.0.0.1:1/v1".into(),
            detail: "not JSON".into(),
        });
        let (status, body) = turn_error(&failed);
        assert_eq!(status, 502);
        assert_eq!(body["error"]["code"], "model_error", "{body}");
    }

    #[test]
    fn the_waiting_note_names_each_call_and_the_session() {
        assert_eq!(waiting_note(&Refused::default(), "s1"), None);
        let refused = Refused {
            calls: vec![("shell".into(), Level::L3), ("edit_file".into(), Level::L4)],
            sends_data: false,
        };
        let note = waiting_note(&refused, "s1").expect("a note");
        assert!(note.starts_with("\n\n[evolve] Not run"), "{note}");
        assert!(note.contains("shell (L3), edit_file (L4)"), "{note}");
        assert!(note.contains("evolve chat --session s1"), "{note}");
        assert!(note.contains("nothing is waiting"), "{note}");
        assert!(!note.contains("Approve it"), "{note}");
    }
}
