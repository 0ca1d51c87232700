//! JSON-RPC 2.0 as MCP uses it, whatever carries the bytes ([`Link`]: a stdio pipe or
//! streamable HTTP): numbering requests, handing each answer to the caller waiting for
//! it, and answering what a server sends on its own.
//!
//! What it decides:
//! - **Blocking callers.** A request blocks the thread that makes it until its answer,
//!   its timeout, Ctrl-C (the caller's flag, looked at every 50 ms) or the end of the
//!   connection. Giving up on a request sends `notifications/cancelled` for it (never for
//!   `initialize`, as the protocol says), so the server can stop working on it; an answer
//!   that arrives later is dropped. A request that wants progress carries its id as
//!   `_meta.progressToken`; each `notifications/progress` for it that moves forward
//!   reaches the caller and starts its timeout again, up to a cap on the whole wait.
//! - **Messages from the server**, in whatever order they come (a notification or a
//!   request of the server's may arrive before the answer a caller waits for):
//!   - answers go to their caller by id;
//!   - `notifications/tools/list_changed` marks the tool list stale (the hub lists again
//!     before the next use); log messages go to the log at the server's level (its
//!     errors at warn, warnings and notices at info, the rest at debug); other
//!     notifications are ignored;
//!   - requests are answered: `ping` with `{}`, `roots/list` with the connection's
//!     roots (`file://` URIs: the workspace, then the server's own roots; a change is
//!     announced with `notifications/roots/list_changed`), `elicitation/create` declined
//!     here (the connection's owner may answer it instead), anything else with -32601.
//! - **The end.** When the connection ends (the process exited, evolve closed it) every
//!   waiting request fails at once with why, and later requests fail without being sent.
//!
//! The transports own the bytes: a [`Link`] sends one encoded message, and whatever reads
//! the server's output calls [`Peer::dispatch`] with each message.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::elicit::{ElicitReply, Elicitation};
use super::{CallEvents, Progress};

use crate::cancel::Cancel;

/// How often a waiting caller looks at its Ctrl-C flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// JSON-RPC's "method not found".
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params".
const INVALID_PARAMS: i64 = -32602;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64, message: String },
    /// The connection ended or broke; the text says how, in the user's words.
    Broken(String),
    /// Streamable HTTP: the server no longer knows the session (404); a new one may
    /// be started.
    SessionExpired,
    /// Streamable HTTP: the server refused evolve's authorization (401/403) and its OAuth
    /// login could not mend it; the text says what to do.
    Unauthorized(String),
    /// No answer within the timeout.
    Timeout,
    /// The caller's Ctrl-C flag was set.
    Cancelled,
}

/// One encoded message for a [`Link`].
pub struct Outgoing {
    /// The JSON text, without a line end.
    pub body: Vec<u8>,
    /// The request's id when it is a request of evolve's (its answer is awaited).
    pub id: Option<u64>,
    /// Deliver before returning (streamable HTTP: `notifications/initialized` must reach
    /// the server before the next request); otherwise a send may finish in the
    /// background.
    pub wait: bool,
}

/// Moves evolve's messages to the server.
pub trait Link: Send + Sync {
    /// Sends one message. Answers come back through [`Peer::dispatch`]; a transport that
    /// learns a request failed (an HTTP error for its POST) reports it with
    /// [`Peer::fail`].
    fn send(&self, peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure>;

    /// Gives up on request `id` the transport's own way, if it has one (streamable
    /// HTTP in revision 2026-07-28 closes the answer); `false`: the server is to be
    /// sent `notifications/cancelled`.
    fn abandon(&self, _id: u64) -> bool {
        false
    }
}

/// The client side of one connection.
pub struct Peer {
    /// The server's name, for the log.
    server: String,
    link: Arc<dyn Link>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Set by `notifications/tools/list_changed`.
    stale: Arc<AtomicBool>,
    /// What `roots/list` answers.
    roots: Mutex<Vec<PathBuf>>,
    /// `_meta` fields every request carries (revision 2026-07-28: the version and the
    /// client's capabilities, since there is no handshake to say them once).
    meta: Mutex<Option<Map<String, Value>>>,
}

/// What reaches a waiting caller.
enum Reply {
    /// The answer (or why there is none).
    Answer(Result<Value, Failure>),
    /// A `notifications/progress` for the request.
    Progress(Progress),
    /// The server's `elicitation/create` (its id and params) during the request.
    Elicit(Value, Value),
}

/// A caller waiting for an answer.
struct Waiting {
    tx: mpsc::Sender<Reply>,
    /// It sent a progress token (its id) and takes progress notices and the server's
    /// questions for a person.
    listens: bool,
}

/// How a request waits: its timeout, and with `events` the caller's ear for progress
/// notices and questions for a person, and the cap on the whole wait (each notice
/// starts the timeout afresh, up to the cap; a person's time is not counted).
pub struct Wait<'a> {
    pub timeout: Duration,
    pub cancel: &'a Cancel,
    pub events: Option<(&'a mut dyn CallEvents, Duration)>,
}

#[derive(Default)]
struct State {
    /// Callers waiting for an answer, by request id.
    pending: HashMap<u64, Waiting>,
    /// Why the connection ended, once it has.
    ended: Option<String>,
}

impl Peer {
    pub fn new(server: &str, link: Arc<dyn Link>, roots: Vec<PathBuf>) -> Arc<Peer> {
        Arc::new(Peer {
            server: server.to_string(),
            link,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(0),
            stale: Arc::new(AtomicBool::new(false)),
            roots: Mutex::new(roots),
            meta: Mutex::new(None),
        })
    }

    /// The flag `notifications/tools/list_changed` sets.
    pub fn stale(&self) -> &Arc<AtomicBool> {
        &self.stale
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the map half-changed: keep going with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a request and waits for its result (see the module doc).
    pub fn request(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<Value, Failure> {
        let wait = Wait {
            timeout,
            cancel,
            events: None,
        };
        self.request_with(method, params, wait)
    }

    /// The same, waiting as `wait` says: with progress wanted the request carries
    /// `_meta.progressToken` (its id), and each notice that moves the progress forward
    /// goes to the callback and starts the timeout again, never past the cap.
    pub fn request_with(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        wait: Wait<'_>,
    ) -> Result<Value, Failure> {
        let Wait {
            timeout,
            cancel,
            mut events,
        } = wait;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        {
            let mut state = self.lock();
            if let Some(why) = &state.ended {
                return Err(Failure::Broken(why.clone()));
            }
            let waiting = Waiting {
                tx,
                listens: events.is_some(),
            };
            state.pending.insert(id, waiting);
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        let meta = self.meta.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if events.is_some() || meta.is_some() {
            if !message["params"].is_object() {
                message["params"] = json!({});
            }
            if !message["params"]["_meta"].is_object() {
                message["params"]["_meta"] = json!({});
            }
            if let Some(Value::Object(into)) = message["params"].get_mut("_meta") {
                into.extend(meta.unwrap_or_default());
                if events.is_some() {
                    into.insert("progressToken".into(), json!(id));
                }
            }
        }
        let sent = self.link.send(
            self,
            Outgoing {
                body: message.to_string().into_bytes(),
                id: Some(id),
                wait: false,
            },
        );
        if let Err(e) = sent {
            // A pipe found closed: the connection's own end says more, when known.
            let mut state = self.lock();
            state.pending.remove(&id);
            return Err(match (&e, &state.ended) {
                (Failure::Broken(_), Some(why)) => Failure::Broken(why.clone()),
                _ => e,
            });
        }
        let answer = self.wait(id, method, &rx, timeout, cancel, &mut events);
        // A question that came in as the request ended is not left unanswered.
        while let Ok(reply) = rx.try_recv() {
            if let Reply::Elicit(asked, _) = reply {
                self.reply(
                    asked,
                    Ok(ElicitReply::Cancel.result()),
                    "elicitation/create",
                );
            }
        }
        answer
    }

    /// The wait of [`Peer::request_with`] for request `id`.
    fn wait(
        self: &Arc<Self>,
        id: u64,
        method: &str,
        rx: &mpsc::Receiver<Reply>,
        timeout: Duration,
        cancel: &Cancel,
        events: &mut Option<(&mut dyn CallEvents, Duration)>,
    ) -> Result<Value, Failure> {
        let mut cap_at = Instant::now()
            + events
                .as_ref()
                .map_or(timeout, |(_, cap)| (*cap).max(timeout));
        let mut deadline = Instant::now() + timeout;
        let mut last: Option<f64> = None;
        loop {
            if cancel.is_cancelled() {
                self.give_up(id, method, "cancelled by the user");
                return Err(Failure::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                self.give_up(id, method, "timed out");
                return Err(Failure::Timeout);
            }
            match rx.recv_timeout((deadline - now).min(CANCEL_POLL)) {
                Ok(Reply::Answer(answer)) => return answer,
                Ok(Reply::Progress(p)) => {
                    // The protocol's progress only grows: a notice that does not move
                    // it forward (a repeat, a server stuck in a loop) extends nothing.
                    if last.is_some_and(|l| p.progress <= l) {
                        continue;
                    }
                    last = Some(p.progress);
                    deadline = (Instant::now() + timeout).min(cap_at);
                    if let Some((ear, _)) = events.as_mut() {
                        ear.progress(&p);
                    }
                }
                Ok(Reply::Elicit(asked, params)) => {
                    let Some((ear, _)) = events.as_mut() else {
                        self.reply(
                            asked,
                            Ok(ElicitReply::Decline.result()),
                            "elicitation/create",
                        );
                        continue;
                    };
                    let reply = match Elicitation::parse(&self.server, &params) {
                        Ok(question) => {
                            // The person's time is not the server's: the clocks stop.
                            let asked_at = Instant::now();
                            let said = ear.elicit(&question);
                            let spent = asked_at.elapsed();
                            deadline += spent;
                            cap_at += spent;
                            log::info!(
                                "MCP server {:?} asked for input; the answer: {}",
                                self.server,
                                said.action()
                            );
                            Ok(said.result())
                        }
                        Err(why) => {
                            log::warn!(
                                "MCP server {:?} asked for input evolve cannot ask for: {why}",
                                self.server
                            );
                            Err(json!({"code": INVALID_PARAMS, "message": why}))
                        }
                    };
                    self.reply(asked, reply, "elicitation/create");
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Broken("the connection ended".into()))
                }
            }
        }
    }

    /// Sends a notification.
    pub fn notify(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
        wait: bool,
    ) -> Result<(), Failure> {
        if let Some(why) = &self.lock().ended {
            return Err(Failure::Broken(why.clone()));
        }
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.link.send(
            self,
            Outgoing {
                body: message.to_string().into_bytes(),
                id: None,
                wait,
            },
        )
    }

    /// Stops waiting for request `id` and tells the server.
    fn give_up(self: &Arc<Self>, id: u64, method: &str, reason: &str) {
        let was_pending = self.lock().pending.remove(&id).is_some();
        if was_pending && method != "initialize" {
            if self.link.abandon(id) {
                log::debug!(
                    "MCP server {:?}: request {id} ({reason}) was cancelled by closing its answer",
                    self.server
                );
                return;
            }
            let params = json!({"requestId": id, "reason": reason});
            if let Err(e) = self.notify("notifications/cancelled", Some(params), false) {
                log::debug!(
                    "MCP server {:?}: the cancellation of request {id} was not sent: {e:?}",
                    self.server
                );
            }
        }
    }

    /// New roots for `roots/list`; the server is told with
    /// `notifications/roots/list_changed` when they differ.
    pub fn set_roots(self: &Arc<Self>, roots: Vec<PathBuf>) {
        let changed = {
            let mut current = self.roots.lock().unwrap_or_else(|e| e.into_inner());
            let changed = *current != roots;
            *current = roots;
            changed
        };
        if changed {
            if let Err(e) = self.notify("notifications/roots/list_changed", None, false) {
                log::debug!(
                    "MCP server {:?}: the change of roots was not sent: {e:?}",
                    self.server
                );
            }
        }
    }

    /// The `_meta` fields every later request carries (`None`: none).
    pub fn set_request_meta(&self, meta: Option<Map<String, Value>>) {
        *self.meta.lock().unwrap_or_else(|e| e.into_inner()) = meta;
    }

    /// `roots/list`'s answer.
    pub fn roots_result(&self) -> Value {
        let roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        json!({"roots": roots.iter().map(|r| root(r)).collect::<Vec<_>>()})
    }

    /// Whether request `id` still waits for its answer.
    pub fn is_pending(&self, id: u64) -> bool {
        self.lock().pending.contains_key(&id)
    }

    /// Fails request `id` (a transport learned its fate another way).
    pub fn fail(&self, id: u64, failure: Failure) {
        if let Some(waiting) = self.lock().pending.remove(&id) {
            let _ = waiting.tx.send(Reply::Answer(Err(failure)));
        }
    }

    /// The connection is over: every waiting request fails with `why`, later ones are
    /// not sent. The first reason given stays.
    pub fn end(&self, why: &str) {
        let waiting: Vec<_> = {
            let mut state = self.lock();
            if state.ended.is_none() {
                state.ended = Some(why.to_string());
            }
            state.pending.drain().map(|(_, w)| w).collect()
        };
        let why = self.lock().ended.clone().unwrap_or_default();
        for w in waiting {
            let _ = w.tx.send(Reply::Answer(Err(Failure::Broken(why.clone()))));
        }
    }

    /// Why the connection ended; `None` while it is open.
    pub fn ended(&self) -> Option<String> {
        self.lock().ended.clone()
    }

    /// Handles one message from the server (or a JSON-RPC batch of them).
    pub fn dispatch(self: &Arc<Self>, message: Value) {
        let mut message = match message {
            Value::Object(map) => map,
            Value::Array(batch) => {
                for m in batch {
                    self.dispatch(m);
                }
                return;
            }
            other => {
                log::warn!(
                    "MCP server {:?} sent something that is not a JSON-RPC message: {}",
                    self.server,
                    shown(&other)
                );
                return;
            }
        };
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = message.remove("id").filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), Some(id)) => self.answer(id, &method, message.get("params")),
            (Some(method), None) => self.notice(&method, message.get("params")),
            (None, Some(id)) => self.settle(&id, message.remove("result"), message.remove("error")),
            (None, None) => {
                // An error without an id: the server could not read something evolve
                // sent (a parse error); the request it belonged to times out.
                log::warn!(
                    "MCP server {:?} sent a message without id or method: {}",
                    self.server,
                    shown(&Value::Object(message))
                );
            }
        }
    }

    /// An answer to one of evolve's requests.
    fn settle(&self, id: &Value, result: Option<Value>, error: Option<Value>) {
        let Some(n) = id
            .as_u64()
            .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
        else {
            log::debug!("MCP server {:?} answered an unknown id {id}", self.server);
            return;
        };
        let Some(waiting) = self.lock().pending.remove(&n) else {
            // Given up on (timeout, Ctrl-C) or never asked.
            log::debug!(
                "MCP server {:?}: an answer to request {n} that no one waits for",
                self.server
            );
            return;
        };
        let answer = match error {
            Some(error) => Err(Failure::Rpc {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                message: match error.get("message") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => "no message".to_string(),
                },
            }),
            None => Ok(result.unwrap_or(Value::Null)),
        };
        let _ = waiting.tx.send(Reply::Answer(answer));
    }

    fn notice(&self, method: &str, params: Option<&Value>) {
        match method {
            "notifications/tools/list_changed" => {
                log::info!("MCP server {:?} changed its tools", self.server);
                self.stale.store(true, Ordering::SeqCst);
            }
            "notifications/progress" => self.progress(params),
            "notifications/message" => {
                // The server's own level: its errors are worth seeing without debug.
                let level = match params.and_then(|p| p["level"].as_str()) {
                    Some("error" | "critical" | "alert" | "emergency") => log::Level::Warn,
                    Some("warning" | "notice") => log::Level::Info,
                    _ => log::Level::Debug,
                };
                log::log!(
                    level,
                    "MCP server {:?} logs: {}",
                    self.server,
                    params.map(shown).unwrap_or_default()
                );
            }
            _ => log::debug!("MCP server {:?}: {method}", self.server),
        }
    }

    /// A progress notice goes to the request whose id is its token, if that request
    /// asked for progress and still waits.
    fn progress(&self, params: Option<&Value>) {
        let Some(params) = params else { return };
        let token = &params["progressToken"];
        let Some(id) = token
            .as_u64()
            .or_else(|| token.as_str().and_then(|s| s.parse().ok()))
        else {
            return;
        };
        let Some(progress) = params["progress"].as_f64() else {
            return;
        };
        let notice = Progress {
            progress,
            total: params["total"].as_f64(),
            message: params["message"].as_str().map(|m| {
                evolve_core::text::escape_controls(&evolve_core::text::one_line(m, 200), false)
            }),
        };
        let state = self.lock();
        if let Some(waiting) = state.pending.get(&id).filter(|w| w.listens) {
            let _ = waiting.tx.send(Reply::Progress(notice));
        }
    }

    /// Answers a request of the server's; a question for a person goes to the caller
    /// of the latest request that listens (the call it is about), declined when none.
    fn answer(self: &Arc<Self>, id: Value, method: &str, params: Option<&Value>) {
        let reply = match method {
            "ping" => Ok(json!({})),
            "roots/list" => Ok(self.roots_result()),
            "elicitation/create" => {
                let state = self.lock();
                let listener = state
                    .pending
                    .iter()
                    .filter(|(_, w)| w.listens)
                    .max_by_key(|(n, _)| **n)
                    .map(|(_, w)| w.tx.clone());
                drop(state);
                let params = params.cloned().unwrap_or(Value::Null);
                if let Some(tx) = listener {
                    if let Err(mpsc::SendError(Reply::Elicit(id, _))) =
                        tx.send(Reply::Elicit(id, params))
                    {
                        self.reply(id, Ok(ElicitReply::Cancel.result()), method);
                    }
                    return;
                }
                Ok(ElicitReply::Decline.result())
            }
            _ => Err(
                json!({"code": METHOD_NOT_FOUND, "message": format!("Method not found: {method}")}),
            ),
        };
        self.reply(id, reply, method);
    }

    /// Sends the answer to the server's request `id`.
    fn reply(self: &Arc<Self>, id: Value, reply: Result<Value, Value>, method: &str) {
        let mut message = Map::new();
        message.insert("jsonrpc".into(), "2.0".into());
        message.insert("id".into(), id);
        match reply {
            Ok(result) => message.insert("result".into(), result),
            Err(error) => message.insert("error".into(), error),
        };
        let sent = self.link.send(
            self,
            Outgoing {
                body: Value::Object(message).to_string().into_bytes(),
                id: None,
                wait: false,
            },
        );
        if let Err(e) = sent {
            log::debug!(
                "MCP server {:?}: the answer to its {method} was not sent: {e:?}",
                self.server
            );
        }
    }
}

/// A root as `roots/list` gives it: a `file://` URI and the directory's name.
fn root(dir: &Path) -> Value {
    let mut uri = String::from("file://");
    for b in dir.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.to_string_lossy().into_owned());
    json!({"uri": uri, "name": name})
}

/// A message as the log shows it: one line, at most 300 characters.
fn shown(value: &Value) -> String {
    evolve_core::text::escape_controls(&evolve_core::text::one_line(&value.to_string(), 300), false)
}

#[cfg(test)]
#[path = "jsonrpc_tests.rs"]
mod tests;
