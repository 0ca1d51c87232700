//! JSON-RPC 2.0 as MCP uses it, whatever carries the bytes ([`Link`]: a stdio pipe or
//! streamable HTTP): numbering requests, handing each answer to the caller waiting for
//! it, and answering what a server sends on its own.
//!
//! What it decides:
//! - **Blocking callers.** A request blocks the thread that makes it until its answer,
//!   its timeout, Ctrl-C (the caller's flag, looked at every 50 ms) or the end of the
//!   connection. Giving up on a request sends `notifications/cancelled` for it (never for
//!   `initialize`, as the protocol says), so the server can stop working on it; an answer
//!   that arrives later is dropped.
//! - **Messages from the server**, in whatever order they come (a notification or a
//!   request of the server's may arrive before the answer a caller waits for):
//!   - answers go to their caller by id;
//!   - `notifications/tools/list_changed` marks the tool list stale (the hub lists again
//!     before the next use); log messages go to the log at the server's level (its
//!     errors at warn, warnings and notices at info, the rest at debug); other
//!     notifications are ignored;
//!   - requests are answered: `ping` with `{}`, `roots/list` with the server's roots
//!     (`file://` URIs), `elicitation/create` declined (evolve advertises neither
//!     capability, so servers rarely ask), anything else with error -32601.
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

/// How often a waiting caller looks at its Ctrl-C flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// JSON-RPC's "method not found".
pub(super) const METHOD_NOT_FOUND: i64 = -32601;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Failure {
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
pub(super) struct Outgoing {
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
pub(super) trait Link: Send + Sync {
    /// Sends one message. Answers come back through [`Peer::dispatch`]; a transport that
    /// learns a request failed (an HTTP error for its POST) reports it with
    /// [`Peer::fail`].
    fn send(&self, peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure>;
}

/// The client side of one connection.
pub(super) struct Peer {
    /// The server's name, for the log.
    server: String,
    link: Arc<dyn Link>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Set by `notifications/tools/list_changed`.
    stale: Arc<AtomicBool>,
    /// What `roots/list` answers.
    roots: Vec<PathBuf>,
}

#[derive(Default)]
struct State {
    /// Callers waiting for an answer, by request id.
    pending: HashMap<u64, mpsc::Sender<Result<Value, Failure>>>,
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
            roots,
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
        cancel: &AtomicBool,
    ) -> Result<Value, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        {
            let mut state = self.lock();
            if let Some(why) = &state.ended {
                return Err(Failure::Broken(why.clone()));
            }
            state.pending.insert(id, tx);
        }
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
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
        let deadline = Instant::now() + timeout;
        loop {
            if cancel.load(Ordering::SeqCst) {
                self.give_up(id, method, "cancelled by the user");
                return Err(Failure::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                self.give_up(id, method, "timed out");
                return Err(Failure::Timeout);
            }
            match rx.recv_timeout((deadline - now).min(CANCEL_POLL)) {
                Ok(answer) => return answer,
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
            let params = json!({"requestId": id, "reason": reason});
            if let Err(e) = self.notify("notifications/cancelled", Some(params), false) {
                log::debug!(
                    "MCP server {:?}: the cancellation of request {id} was not sent: {e:?}",
                    self.server
                );
            }
        }
    }

    /// Whether request `id` still waits for its answer.
    pub fn is_pending(&self, id: u64) -> bool {
        self.lock().pending.contains_key(&id)
    }

    /// Fails request `id` (a transport learned its fate another way).
    pub fn fail(&self, id: u64, failure: Failure) {
        if let Some(waiting) = self.lock().pending.remove(&id) {
            let _ = waiting.send(Err(failure));
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
            let _ = w.send(Err(Failure::Broken(why.clone())));
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
        let _ = waiting.send(answer);
    }

    fn notice(&self, method: &str, params: Option<&Value>) {
        match method {
            "notifications/tools/list_changed" => {
                log::info!("MCP server {:?} changed its tools", self.server);
                self.stale.store(true, Ordering::SeqCst);
            }
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

    /// Answers a request of the server's.
    fn answer(self: &Arc<Self>, id: Value, method: &str, _params: Option<&Value>) {
        let reply = match method {
            "ping" => Ok(json!({})),
            "roots/list" => {
                Ok(json!({"roots": self.roots.iter().map(|r| root(r)).collect::<Vec<_>>()}))
            }
            "elicitation/create" => Ok(json!({"action": "decline"})),
            _ => Err(
                json!({"code": METHOD_NOT_FOUND, "message": format!("Method not found: {method}")}),
            ),
        };
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
mod tests {
    use super::*;

    /// What the scripted server does with each message evolve sends.
    type Behaviour = Box<dyn Fn(&Arc<Peer>, &Value) + Send + Sync>;

    /// A server in a closure: sees each message evolve sends and may send back.
    struct Script {
        sent: Mutex<Vec<Value>>,
        server: Behaviour,
    }

    impl Link for Script {
        fn send(&self, peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure> {
            let value: Value = serde_json::from_slice(&message.body).expect("JSON sent");
            assert_eq!(value["jsonrpc"], "2.0");
            self.sent.lock().unwrap().push(value.clone());
            (self.server)(peer, &value);
            Ok(())
        }
    }

    fn peer(
        server: impl Fn(&Arc<Peer>, &Value) + Send + Sync + 'static,
    ) -> (Arc<Peer>, Arc<Script>) {
        let script = Arc::new(Script {
            sent: Mutex::new(Vec::new()),
            server: Box::new(server),
        });
        let roots = vec![PathBuf::from("/srv/data dir"), PathBuf::from("/home/me")];
        (Peer::new("t", script.clone(), roots), script)
    }

    /// Answers a request from another thread, as a reader thread would.
    fn later(peer: &Arc<Peer>, messages: Vec<Value>) {
        let peer = peer.clone();
        std::thread::spawn(move || {
            for m in messages {
                peer.dispatch(m);
            }
        });
    }

    const LONG: Duration = Duration::from_secs(30);

    #[test]
    fn server_messages_before_the_answer_are_handled_and_the_answer_reaches_its_caller() {
        let (peer, script) = peer(|peer, msg| {
            if msg["method"] == "tools/list" {
                let id = msg["id"].clone();
                later(
                    peer,
                    vec![
                        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}),
                        json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}),
                        json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}),
                        json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}),
                        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                        json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
                    ],
                );
            }
        });
        let never = AtomicBool::new(false);
        let result = peer
            .request("tools/list", None, LONG, &never)
            .expect("answered");
        assert_eq!(result, json!({"tools": []}));
        assert!(
            peer.stale().load(Ordering::SeqCst),
            "list_changed marks the list stale"
        );
        let sent = script.sent.lock().unwrap().clone();
        assert_eq!(sent[0]["method"], "tools/list");
        assert!(
            sent[0].get("params").is_none(),
            "no params when none are given"
        );
        let answers: HashMap<String, &Value> =
            sent[1..].iter().map(|m| (m["id"].to_string(), m)).collect();
        assert_eq!(answers["0"]["result"], json!({}), "ping");
        assert_eq!(
            answers["\"r1\""]["result"],
            json!({"roots": [
                {"uri": "file:///srv/data%20dir", "name": "data dir"},
                {"uri": "file:///home/me", "name": "me"}
            ]})
        );
        assert_eq!(answers["7"]["error"]["code"], json!(METHOD_NOT_FOUND));
        assert!(answers["7"].get("result").is_none());
    }

    #[test]
    fn answers_go_to_their_own_callers_whatever_their_order() {
        // The server holds whichever request arrives first until the other arrives,
        // then answers both, the later one first (each with its own `n`).
        let held = Arc::new(Mutex::new(None::<Value>));
        let (peer, _) = peer(move |peer, msg| {
            let mut first = held.lock().unwrap();
            match first.take() {
                None => *first = Some(msg.clone()),
                Some(m1) => later(
                    peer,
                    vec![
                        json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"n": msg["params"]["n"]}}),
                        json!({"jsonrpc": "2.0", "id": m1["id"], "result": {"n": m1["params"]["n"]}}),
                    ],
                ),
            }
        });
        let p = peer.clone();
        let one = std::thread::spawn(move || {
            p.request("x", Some(json!({"n": 1})), LONG, &AtomicBool::new(false))
        });
        while !peer.is_pending(0) {
            std::thread::yield_now();
        }
        let two = peer.request("x", Some(json!({"n": 2})), LONG, &AtomicBool::new(false));
        assert_eq!(two, Ok(json!({"n": 2})));
        assert_eq!(one.join().unwrap(), Ok(json!({"n": 1})));
    }

    #[test]
    fn an_error_answer_is_the_servers_error() {
        let (peer, _) = peer(|peer, msg| {
            later(
                peer,
                vec![
                    json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unknown tool \"x\""}}),
                ],
            )
        });
        let got = peer.request("tools/call", None, LONG, &AtomicBool::new(false));
        assert_eq!(
            got,
            Err(Failure::Rpc {
                code: -32602,
                message: "unknown tool \"x\"".into()
            })
        );
    }

    #[test]
    fn ctrl_c_and_timeouts_give_up_and_tell_the_server() {
        let (peer, script) = peer(|_, _| {});
        let cancel = AtomicBool::new(true);
        assert_eq!(
            peer.request("tools/call", None, LONG, &cancel),
            Err(Failure::Cancelled)
        );
        let never = AtomicBool::new(false);
        assert_eq!(
            peer.request("tools/call", None, Duration::ZERO, &never),
            Err(Failure::Timeout)
        );
        assert_eq!(
            peer.request("initialize", None, Duration::ZERO, &never),
            Err(Failure::Timeout)
        );
        let sent = script.sent.lock().unwrap().clone();
        let cancelled: Vec<(&Value, &Value)> = sent
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .map(|m| (&m["params"]["requestId"], &m["params"]["reason"]))
            .collect();
        assert_eq!(
            cancelled,
            [
                (&json!(0), &json!("cancelled by the user")),
                (&json!(1), &json!("timed out"))
            ],
            "initialize is never cancelled"
        );
        assert!(!peer.is_pending(0) && !peer.is_pending(1) && !peer.is_pending(2));
        // A late answer is dropped without harm.
        peer.dispatch(json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
    }

    #[test]
    fn the_end_of_the_connection_fails_waiting_and_later_requests() {
        let (peer, script) = peer(|peer, _| {
            let peer = peer.clone();
            std::thread::spawn(move || peer.end("it exited with code 3"));
        });
        let never = AtomicBool::new(false);
        let want = Err(Failure::Broken("it exited with code 3".into()));
        assert_eq!(peer.request("tools/call", None, LONG, &never), want);
        assert_eq!(peer.request("tools/call", None, LONG, &never), want);
        peer.end("a later reason");
        assert_eq!(peer.ended().as_deref(), Some("it exited with code 3"));
        assert_eq!(
            script.sent.lock().unwrap().len(),
            1,
            "nothing sent after the end"
        );
    }

    #[test]
    fn malformed_messages_are_ignored() {
        let (peer, script) = peer(|_, _| {});
        for odd in [
            json!("text"),
            json!(42),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}),
            json!({"jsonrpc": "2.0", "id": 99, "result": {}}),
            json!({"jsonrpc": "2.0", "id": "abc", "result": {}}),
            json!([{"jsonrpc": "2.0", "method": "notifications/progress"}]),
        ] {
            peer.dispatch(odd);
        }
        assert!(script.sent.lock().unwrap().is_empty());
        assert!(peer.ended().is_none());
    }
}
