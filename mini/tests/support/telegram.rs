//! A loopback fake of the Telegram Bot API, written from its public documentation
//! (core.telegram.org/bots/api): `getMe`, `getUpdates` (long polling with `offset`:
//! an update is forgotten once a later offset confirms it), `sendMessage`,
//! `editMessageText`, `answerCallbackQuery`, `getFile` and the file download at
//! `/file/bot<token>/<path>`. Answers are `{"ok": true, "result": …}` or `{"ok": false,
//! "error_code", "description", "parameters": {"retry_after"}}`; a wrong token is 401.
//!
//! A test pushes updates (messages, button presses) and reads what the bot did: every
//! call with its body and time, and each chat's messages as they read now (after
//! edits). Faults are queued per method: a 429 with `retry_after`, a 500, or a body that
//! is not JSON.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::loopback::{reply, Request};

/// The token the fake accepts.
pub const TOKEN: &str = "123456:TEST-token_abc";

/// A queued failure of one method.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 Too Many Requests with `parameters.retry_after`.
    RateLimited(u64),
    /// 500 with an error body.
    Status500,
    /// 200 with an HTML body.
    Garbage,
}

/// One call the bot made.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub body: Value,
    pub at: Instant,
    /// Whether it was answered with a fault.
    pub faulted: bool,
}

#[derive(Default)]
struct State {
    updates: Vec<Value>,
    next_update: u64,
    next_message: i64,
    calls: Vec<Call>,
    /// (chat, message id) → text now.
    messages: BTreeMap<(String, i64), Value>,
    faults: HashMap<String, VecDeque<Fault>>,
    files: HashMap<String, (String, Vec<u8>)>,
}

/// The running fake.
pub struct FakeTelegram {
    pub port: u16,
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl FakeTelegram {
    pub fn start() -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Bot API");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new((
            Mutex::new(State {
                next_update: 1000,
                next_message: 1,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(conn, &s));
            }
        });
        FakeTelegram { port, shared }
    }

    /// The `[channels.telegram]` section pointing at this fake.
    pub fn config(&self) -> String {
        format!(
            "[channels.telegram]\ntoken = \"{TOKEN}\"\nbase_url = \"http://127.0.0.1:{}\"\npoll_secs = 1\n",
            self.port
        )
    }

    fn push(&self, mut update: Value) -> u64 {
        let (lock, cv) = &*self.shared;
        let mut st = lock.lock().unwrap();
        st.next_update += 1;
        let id = st.next_update;
        update["update_id"] = json!(id);
        st.updates.push(update);
        cv.notify_all();
        id
    }

    /// A text message from user `from` in `chat` (private when they are equal).
    pub fn say(&self, chat: i64, from: i64, name: &str, text: &str) -> u64 {
        let kind = if chat == from { "private" } else { "group" };
        let mut chat_v = json!({"id": chat, "type": kind});
        if kind == "group" {
            chat_v["title"] = json!("Team");
        }
        self.push(json!({"message": {
            "message_id": 1, "date": 0, "text": text, "chat": chat_v,
            "from": {"id": from, "is_bot": false, "first_name": name, "username": name.to_lowercase()},
        }}))
    }

    /// A photo (one size) with a caption, its bytes served by `getFile`.
    pub fn photo(&self, chat: i64, caption: &str, bytes: &[u8]) -> u64 {
        self.add_file("photo1", "photos/p1.png", bytes);
        self.push(json!({"message": {
            "message_id": 1, "date": 0, "caption": caption,
            "chat": {"id": chat, "type": "private"},
            "from": {"id": chat, "is_bot": false, "first_name": "Ann"},
            "photo": [{"file_id": "photo1", "file_unique_id": "u1", "width": 1, "height": 1}],
        }}))
    }

    /// A document with a caption.
    pub fn document(&self, chat: i64, name: &str, caption: &str, bytes: &[u8]) -> u64 {
        self.add_file("doc1", "documents/d1", bytes);
        self.push(json!({"message": {
            "message_id": 1, "date": 0, "caption": caption,
            "chat": {"id": chat, "type": "private"},
            "from": {"id": chat, "is_bot": false, "first_name": "Ann"},
            "document": {"file_id": "doc1", "file_unique_id": "u2", "file_name": name},
        }}))
    }

    /// A voice note.
    pub fn voice(&self, chat: i64) -> u64 {
        self.push(json!({"message": {
            "message_id": 1, "date": 0,
            "chat": {"id": chat, "type": "private"},
            "from": {"id": chat, "is_bot": false, "first_name": "Ann"},
            "voice": {"file_id": "voice1", "file_unique_id": "u3", "duration": 2},
        }}))
    }

    /// A voice note (`kind` "voice") or an audio file ("audio") from `from` in `chat`
    /// (a group when they differ, where the caption @mentions the bot), its bytes served
    /// by `getFile` under an id of its own.
    #[allow(dead_code)] // only the voice cases send audio
    pub fn audio(&self, chat: i64, from: i64, kind: &str, caption: &str, bytes: &[u8]) -> u64 {
        let n = self.shared.0.lock().unwrap().files.len();
        let id = format!("{kind}-file-{n}");
        self.add_file(&id, &format!("{kind}/file_{n}.oga"), bytes);
        let group = chat != from;
        let mut chat_v = json!({"id": chat, "type": if group { "group" } else { "private" }});
        if group {
            chat_v["title"] = json!("Team");
        }
        let mut m = json!({
            "message_id": 1, "date": 0, "chat": chat_v,
            "from": {"id": from, "is_bot": false, "first_name": "Bo", "username": "bo"},
        });
        m[kind] = json!({"file_id": id, "file_unique_id": format!("u{id}"), "duration": 2,
                         "mime_type": "audio/ogg"});
        if !caption.is_empty() {
            m["caption"] = json!(caption);
        }
        self.push(json!({ "message": m }))
    }

    fn add_file(&self, id: &str, path: &str, bytes: &[u8]) {
        let mut st = self.shared.0.lock().unwrap();
        st.files
            .insert(id.into(), (path.to_string(), bytes.to_vec()));
    }

    /// A button press by `from` on message `message` of `chat`.
    pub fn press(&self, chat: i64, from: i64, message: i64, data: &str) -> u64 {
        let kind = if chat == from { "private" } else { "group" };
        self.push(json!({"callback_query": {
            "id": format!("cb{}", message * 1000 + from),
            "from": {"id": from, "is_bot": false, "first_name": "X"},
            "message": {"message_id": message, "date": 0, "chat": {"id": chat, "type": kind}},
            "chat_instance": "ci", "data": data,
        }}))
    }

    /// Queues a fault for the next call of `method`.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        let mut st = self.shared.0.lock().unwrap();
        st.faults.entry(method.into()).or_default().push_back(fault);
    }

    /// Drops every queued fault.
    pub fn clear_faults(&self) {
        self.shared.0.lock().unwrap().faults.clear();
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.0.lock().unwrap().calls.clone()
    }

    /// The calls of `method` that were answered (not faulted).
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method && !c.faulted)
            .collect()
    }

    /// The messages of `chat` as they read now, oldest first: (id, text, buttons' data).
    pub fn chat(&self, chat: i64) -> Vec<(i64, String, Vec<String>)> {
        let st = self.shared.0.lock().unwrap();
        st.messages
            .iter()
            .filter(|((c, _), _)| *c == chat.to_string())
            .map(|((_, id), m)| {
                let buttons = m["reply_markup"]["inline_keyboard"]
                    .as_array()
                    .map(|rows| {
                        rows.iter()
                            .flat_map(|r| r.as_array().cloned().unwrap_or_default())
                            .filter_map(|b| b["callback_data"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                (*id, m["text"].as_str().unwrap_or("").to_string(), buttons)
            })
            .collect()
    }

    /// Waits until `chat` has a message satisfying `pred`; panics with the chat after
    /// `secs`.
    pub fn wait_for(
        &self,
        chat: i64,
        secs: u64,
        pred: impl Fn(&(i64, String, Vec<String>)) -> bool,
    ) -> (i64, String, Vec<String>) {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let msgs = self.chat(chat);
            if let Some(m) = msgs.iter().find(|m| pred(m)) {
                return m.clone();
            }
            if Instant::now() > end {
                panic!("no such message in chat {chat} after {secs} s: {msgs:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until update `id` is confirmed (a later `getUpdates` offset passed it).
    pub fn wait_acked(&self, id: u64, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if !self
                .shared
                .0
                .lock()
                .unwrap()
                .updates
                .iter()
                .any(|u| u["update_id"] == json!(id))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("update {id} was not acknowledged in {secs} s");
    }

    /// Whether update `id` is still waiting to be confirmed.
    pub fn pending(&self, id: u64) -> bool {
        self.shared
            .0
            .lock()
            .unwrap()
            .updates
            .iter()
            .any(|u| u["update_id"] == json!(id))
    }
}

fn serve(mut conn: TcpStream, shared: &Arc<(Mutex<State>, Condvar)>) {
    let Some(mut req) = Request::read(&conn) else {
        return;
    };
    let Some(body) = req.body() else {
        return;
    };
    let path = req.path.clone();
    // The download of a file.
    if let Some(rest) = path.strip_prefix(&format!("/file/bot{TOKEN}/")) {
        let st = shared.0.lock().unwrap();
        match st.files.values().find(|(p, _)| p == rest) {
            Some((_, bytes)) => reply(&mut conn, 200, "application/octet-stream", bytes),
            None => reply(&mut conn, 404, "text/plain", b"not found"),
        }
        return;
    }
    let Some(method) = path.strip_prefix(&format!("/bot{TOKEN}/")) else {
        let b = json!({"ok": false, "error_code": 401, "description": "Unauthorized"});
        reply(&mut conn, 401, "application/json", b.to_string().as_bytes());
        return;
    };
    let method = method.to_string();
    let body: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let (status, answer) = handle(shared, &method, &body);
    match answer {
        Ok(v) => reply(
            &mut conn,
            status,
            "application/json",
            v.to_string().as_bytes(),
        ),
        Err(raw) => reply(&mut conn, status, "text/html", raw.as_bytes()),
    }
}

fn handle(
    shared: &Arc<(Mutex<State>, Condvar)>,
    method: &str,
    body: &Value,
) -> (u16, Result<Value, String>) {
    let (lock, cv) = &**shared;
    let mut st = lock.lock().unwrap();
    let fault = st.faults.get_mut(method).and_then(VecDeque::pop_front);
    st.calls.push(Call {
        method: method.to_string(),
        body: body.clone(),
        at: Instant::now(),
        faulted: fault.is_some(),
    });
    match fault {
        Some(Fault::RateLimited(secs)) => {
            return (
                429,
                Ok(json!({"ok": false, "error_code": 429,
                    "description": format!("Too Many Requests: retry after {secs}"),
                    "parameters": {"retry_after": secs}})),
            )
        }
        Some(Fault::Status500) => {
            return (
                500,
                Ok(json!({"ok": false, "error_code": 500, "description": "Internal Server Error"})),
            )
        }
        Some(Fault::Garbage) => return (200, Err("<html>bad gateway</html>".into())),
        None => {}
    }
    let ok = |v: Value| (200, Ok(json!({"ok": true, "result": v})));
    let bad = |d: &str| {
        (
            400,
            Ok(json!({"ok": false, "error_code": 400, "description": format!("Bad Request: {d}")})),
        )
    };
    match method {
        "getMe" => ok(
            json!({"id": 99, "is_bot": true, "first_name": "Evolve", "username": "EvolveTestBot"}),
        ),
        "getUpdates" => {
            let offset = body["offset"].as_u64().unwrap_or(0);
            let wait = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(2));
            // Confirmed: the updates before the offset are forgotten.
            st.updates
                .retain(|u| u["update_id"].as_u64().unwrap_or(0) >= offset);
            let end = Instant::now() + wait;
            while st.updates.is_empty() && Instant::now() < end {
                st = cv.wait_timeout(st, end - Instant::now()).unwrap().0;
                st.updates
                    .retain(|u| u["update_id"].as_u64().unwrap_or(0) >= offset);
            }
            ok(json!(st.updates))
        }
        "sendMessage" => {
            let Some(chat) = body["chat_id"]
                .as_str()
                .map(str::to_string)
                .or_else(|| body["chat_id"].as_i64().map(|c| c.to_string()))
            else {
                return bad("chat_id is empty");
            };
            let text = body["text"].as_str().unwrap_or("");
            if text.is_empty() {
                return bad("message text is empty");
            }
            if text.encode_utf16().count() > 4096 * 2 {
                return bad("message is too long");
            }
            st.next_message += 1;
            let id = st.next_message;
            st.messages.insert((chat.clone(), id), body.clone());
            ok(
                json!({"message_id": id, "date": 0, "chat": {"id": chat.parse::<i64>().unwrap_or(0), "type": "private"}, "text": text}),
            )
        }
        "editMessageText" => {
            let chat = body["chat_id"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_default();
            let id = body["message_id"].as_i64().unwrap_or(0);
            let Some(old) = st.messages.get(&(chat.clone(), id)).cloned() else {
                return bad("message to edit not found");
            };
            if old["text"] == body["text"] && old["reply_markup"] == body["reply_markup"] {
                return bad("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message");
            }
            st.messages.insert((chat, id), body.clone());
            ok(json!({"message_id": id, "date": 0, "text": body["text"]}))
        }
        "answerCallbackQuery" => ok(json!(true)),
        "getFile" => {
            let id = body["file_id"].as_str().unwrap_or("");
            match st.files.get(id) {
                Some((path, bytes)) => ok(json!({"file_id": id, "file_unique_id": "u",
                    "file_size": bytes.len(), "file_path": path})),
                None => bad("invalid file_id"),
            }
        }
        _ => (
            404,
            Ok(json!({"ok": false, "error_code": 404, "description": "Not Found"})),
        ),
    }
}
