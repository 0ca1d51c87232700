//! What waits for a person while a turn runs: calls that need an approval
//! ([`Approvals`]) and MCP servers' questions ([`Elicitations`]), each answered through
//! the session routes. Neither is kept in the store: the turn they belong to runs in this
//! process and ends with it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, PoisonError};

use evolve_core::permission::PendingCall;
use evolve_core::text::Lang;
use serde_json::{json, Value};

use crate::mcp::elicit::{ElicitReply, Elicitation};

/// Questions of MCP servers waiting for a person (`elicitation/create` during a call):
/// (session, id) → the form and where the answer goes. Not kept in the store: the call
/// they belong to runs in this process, and ends with it.
#[derive(Default)]
pub struct Elicitations {
    next: std::sync::atomic::AtomicU64,
    waiting: Mutex<HashMap<(String, String), Asked>>,
}

/// A waiting question: the form, and where the answer goes.
pub(super) type Asked = (Elicitation, Sender<ElicitReply>);

/// Why an answer to a question was not taken.
pub enum ElicitRefusal {
    /// Nothing waits under that id.
    NotWaiting,
    /// The content does not fit the form: each field with what is wrong.
    Invalid(Vec<(String, String)>),
}

impl Elicitations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Asked>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn register(
        &self,
        session: &str,
        question: &Elicitation,
    ) -> (String, mpsc::Receiver<ElicitReply>) {
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("elicit_{n}");
        let (tx, rx) = mpsc::channel();
        self.lock()
            .insert((session.to_string(), id.clone()), (question.clone(), tx));
        (id, rx)
    }

    pub(super) fn remove(&self, session: &str, id: &str) {
        self.lock().remove(&(session.to_string(), id.to_string()));
    }

    /// Hands a person's answer to the waiting call, accepted content checked against
    /// the form first.
    pub fn answer(
        &self,
        session: &str,
        id: &str,
        action: &str,
        content: &serde_json::Map<String, Value>,
    ) -> Result<(), ElicitRefusal> {
        let waiting = self.lock();
        let Some((question, tx)) = waiting.get(&(session.to_string(), id.to_string())) else {
            return Err(ElicitRefusal::NotWaiting);
        };
        let reply = match action {
            "accept" => {
                ElicitReply::Accept(question.check(content).map_err(ElicitRefusal::Invalid)?)
            }
            "decline" => ElicitReply::Decline,
            _ => ElicitReply::Cancel,
        };
        tx.send(reply).map_err(|_| ElicitRefusal::NotWaiting)
    }

    /// The questions waiting in a session, as the UI draws them.
    pub fn of_session(&self, session: &str) -> Vec<Value> {
        let mut list: Vec<Value> = self
            .lock()
            .iter()
            .filter(|((s, _), _)| s == session)
            .map(|((_, id), (q, _))| {
                let mut v = q.to_json();
                v["id"] = json!(id);
                v
            })
            .collect();
        list.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        list
    }

    /// Cancels every waiting question (the server is stopping).
    pub fn cancel_all(&self) {
        for (_, (_, tx)) in self.lock().drain() {
            let _ = tx.send(ElicitReply::Cancel);
        }
    }
}

/// Calls waiting for a person: (session, call id) → where the answer goes.
#[derive(Default)]
pub struct Approvals {
    waiting: Mutex<HashMap<(String, String), Sender<String>>>,
}

impl Approvals {
    pub(super) fn register(&self, session: &str, call: &str) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel();
        self.lock()
            .insert((session.to_string(), call.to_string()), tx);
        rx
    }

    pub(super) fn remove(&self, session: &str, call: &str) {
        self.lock().remove(&(session.to_string(), call.to_string()));
    }

    /// Hands a person's answer to the waiting turn; `false` when nothing waits.
    pub fn answer(&self, session: &str, call: &str, answer: String) -> bool {
        let tx = self
            .lock()
            .get(&(session.to_string(), call.to_string()))
            .cloned();
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Lets go of the calls waiting in a session: their turns park (a new message came;
    /// the manager settles the parked call with it). `true` when one waited.
    pub(super) fn release_session(&self, session: &str) -> bool {
        let mut waiting = self.lock();
        let before = waiting.len();
        waiting.retain(|(s, _), _| s != session);
        waiting.len() != before
    }

    /// Refuses every waiting call (the server is stopping).
    pub fn refuse_all(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Sender<String>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A parked call as the API shows it.
pub fn pending_json(call: &PendingCall, lang: Lang) -> Value {
    let steps = call.needed.count();
    json!({
        "id": call.id,
        "tool": call.tool,
        "arguments": call.arguments,
        "level": call.level.to_string(),
        "step": (call.received + 1).min(steps),
        "steps": steps,
        "prompt": call.prompt(lang),
        // What would leave the machine that no one gave (the egress rule), if that is
        // why it is asked.
        "sends": call.sends,
    })
}
