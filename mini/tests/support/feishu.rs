//! A loopback fake of Feishu/Lark's open platform, written from its public documentation
//! and the official SDKs' long-connection protocol: `POST
//! /open-apis/auth/v3/tenant_access_token/internal`, `GET /open-apis/bot/v3/info`,
//! `POST /callback/ws/endpoint` (the WebSocket address and `ClientConfig`), the
//! WebSocket itself (protobuf `Frame`s: pings answered with pongs, events pushed as
//! data frames, the client's answers recorded as acknowledgements), and the message API
//! `POST /open-apis/im/v1/messages?receive_id_type=chat_id`, `POST
//! /open-apis/im/v1/messages/{id}/reply`, `PATCH /open-apis/im/v1/messages/{id}` and
//! `GET /open-apis/im/v1/messages/{id}/resources/{key}`. API answers are `{"code": 0,
//! "msg": "success", "data": …}`; a wrong tenant token is `99991663`.
//!
//! A test pushes events (messages, card button presses) and reads what the bot did:
//! each chat's cards as they read now (after patches), every call, and which events it
//! acknowledged. Faults are queued per call: a 500, a body that is not JSON, or a 429.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::BufReader;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::loopback::{accept_websocket, read_frame, reply, write_frame, Request};

pub const APP_ID: &str = "cli_test_app";
pub const APP_SECRET: &str = "feishu-SECRET-value";
const TENANT_TOKEN: &str = "t-tenant-token";
pub const BOT: &str = "ou_bot";

/// A queued failure of one call.
#[derive(Debug, Clone)]
pub enum Fault {
    Status500,
    Garbage,
    RateLimited,
}

/// One call the bot made.
#[derive(Debug, Clone)]
pub struct Call {
    /// `send`, `reply`, `patch`, `token`, `info`, `endpoint`, `resource`.
    pub what: String,
    pub body: Value,
    pub at: Instant,
    pub faulted: bool,
}

/// A message the bot sent: where, and the card.
#[derive(Debug, Clone)]
struct Sent {
    place: String,
    card: Value,
}

#[derive(Default)]
struct State {
    next: u64,
    calls: Vec<Call>,
    messages: BTreeMap<String, Sent>,
    faults: HashMap<String, VecDeque<Fault>>,
    acked: HashSet<String>,
    socket: Option<TcpStream>,
    sockets_opened: usize,
    files: HashMap<String, Vec<u8>>,
    /// The chat of each message a person wrote (a reply in its thread goes there).
    origins: HashMap<String, String>,
    /// Every event pushed: its frame's message id and the event.
    pushed: Vec<(String, Value)>,
    lose_acks: bool,
}

/// The running fake.
pub struct FakeFeishu {
    pub port: u16,
    shared: Arc<Mutex<State>>,
}

impl FakeFeishu {
    pub fn start() -> FakeFeishu {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Feishu");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Mutex::new(State {
            next: 100,
            ..State::default()
        }));
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(conn, &s, port));
            }
        });
        FakeFeishu { port, shared }
    }

    /// The `[channels.feishu]` section pointing at this fake.
    pub fn config(&self) -> String {
        format!(
            "[channels.feishu]\napp_id = \"{APP_ID}\"\napp_secret = \"{APP_SECRET}\"\nbase_url = \"http://127.0.0.1:{}\"\n",
            self.port
        )
    }

    fn id(&self, prefix: &str) -> String {
        let mut st = self.shared.lock().unwrap();
        st.next += 1;
        format!("{prefix}{}", st.next)
    }

    /// Pushes an event over the connection (waiting for one); its message id.
    fn push(&self, event_type: &str, event: Value) -> String {
        let mid = self.id("msg");
        let eid = self.id("ev");
        let body = json!({
            "schema": "2.0",
            "header": {"event_id": eid, "event_type": event_type, "create_time": "0",
                       "token": "", "app_id": APP_ID, "tenant_key": "tk"},
            "event": event,
        });
        self.shared
            .lock()
            .unwrap()
            .pushed
            .push((mid.clone(), body.clone()));
        self.send_event(&mid, &body);
        mid
    }

    fn send_event(&self, mid: &str, body: &Value) {
        let frame = event_frame(mid, body);
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            {
                let mut st = self.shared.lock().unwrap();
                if let Some(sock) = st.socket.as_mut() {
                    if write_frame(sock, 2, &frame).is_ok() {
                        return;
                    }
                    st.socket = None;
                }
            }
            assert!(
                Instant::now() < end,
                "no long connection to push an event on"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Pushes the event first pushed as `mid` again, as the platform does when it did not
    /// hear the acknowledgement: the same `event_id` in a frame of a new message id
    /// (returned).
    pub fn redeliver(&self, mid: &str) -> String {
        let body = {
            let st = self.shared.lock().unwrap();
            let (_, body) = st
                .pushed
                .iter()
                .find(|(m, _)| m == mid)
                .expect("an event pushed before");
            body.clone()
        };
        let again = self.id("msg");
        self.shared
            .lock()
            .unwrap()
            .pushed
            .push((again.clone(), body.clone()));
        self.send_event(&again, &body);
        again
    }

    /// While on, the client's acknowledgements are lost on the way: the platform pushes
    /// what it did not hear acknowledged again on the next connection.
    pub fn lose_acks(&self, on: bool) {
        self.shared.lock().unwrap().lose_acks = on;
    }

    /// A text message from `from` in `chat` (`p2p` when `direct`); `mention` @s the bot.
    pub fn say(&self, chat: &str, direct: bool, from: &str, text: &str, mention: bool) -> String {
        let message_id = self.id("om_");
        let (text, mentions) = if mention {
            (
                format!("@_user_1 {text}"),
                json!([{"key": "@_user_1", "id": {"open_id": BOT}, "name": "Evolve"}]),
            )
        } else {
            (text.to_string(), json!([]))
        };
        self.push(
            "im.message.receive_v1",
            json!({
                "sender": {"sender_id": {"open_id": from}, "sender_type": "user", "tenant_key": "tk"},
                "message": {
                    "message_id": message_id, "chat_id": chat,
                    "chat_type": if direct { "p2p" } else { "group" },
                    "message_type": "text", "content": json!({"text": text}).to_string(),
                    "mentions": mentions, "create_time": "0",
                }
            }),
        )
    }

    /// A message in a thread of a group whose root is `root`.
    pub fn say_in_thread(&self, chat: &str, root: &str, from: &str, text: &str) -> String {
        let message_id = self.id("om_");
        self.shared
            .lock()
            .unwrap()
            .origins
            .insert(root.to_string(), chat.to_string());
        self.push(
            "im.message.receive_v1",
            json!({
                "sender": {"sender_id": {"open_id": from}, "sender_type": "user"},
                "message": {
                    "message_id": message_id, "chat_id": chat, "chat_type": "group",
                    "root_id": root, "thread_id": "omt_1",
                    "message_type": "text",
                    "content": json!({"text": format!("@_user_1 {text}")}).to_string(),
                    "mentions": [{"key": "@_user_1", "id": {"open_id": BOT}, "name": "Evolve"}],
                }
            }),
        )
    }

    /// An image message.
    pub fn image(&self, chat: &str, from: &str, bytes: &[u8]) -> String {
        let message_id = self.id("om_");
        self.shared
            .lock()
            .unwrap()
            .files
            .insert("img_1".into(), bytes.to_vec());
        self.push(
            "im.message.receive_v1",
            json!({
                "sender": {"sender_id": {"open_id": from}, "sender_type": "user"},
                "message": {
                    "message_id": message_id, "chat_id": chat, "chat_type": "p2p",
                    "message_type": "image",
                    "content": json!({"image_key": "img_1"}).to_string(),
                }
            }),
        )
    }

    /// A voice message (`audio`) from `from` in `chat` (`p2p` when `direct`, else the
    /// bot is @mentioned), its bytes served as the message's resource.
    #[allow(dead_code)] // only the voice cases send audio
    pub fn audio(&self, chat: &str, direct: bool, from: &str, bytes: &[u8]) -> String {
        let message_id = self.id("om_");
        let key = format!("file_v_{message_id}");
        self.shared
            .lock()
            .unwrap()
            .files
            .insert(key.clone(), bytes.to_vec());
        let mentions = if direct {
            json!([])
        } else {
            json!([{"key": "@_user_1", "id": {"open_id": BOT}, "name": "Evolve"}])
        };
        self.push(
            "im.message.receive_v1",
            json!({
                "sender": {"sender_id": {"open_id": from}, "sender_type": "user"},
                "message": {
                    "message_id": message_id, "chat_id": chat,
                    "chat_type": if direct { "p2p" } else { "group" },
                    "message_type": "audio",
                    "content": json!({"file_key": key, "duration": 2000}).to_string(),
                    "mentions": mentions,
                }
            }),
        )
    }

    /// `from` presses the button whose data is `data` on card `message`.
    pub fn press(&self, message: &str, from: &str, data: &str) -> String {
        let (place, value) = {
            let st = self.shared.lock().unwrap();
            let sent = st.messages.get(message).expect("the card");
            let value = buttons_of(&sent.card)
                .into_iter()
                .find(|v| v["evolve"] == data)
                .expect("the button");
            (sent.place.clone(), value)
        };
        let chat = place.split('/').next().unwrap_or("").to_string();
        self.push(
            "card.action.trigger",
            json!({
                "operator": {"open_id": from},
                "token": "c-token",
                "action": {"tag": "button", "value": value},
                "context": {"open_message_id": message, "open_chat_id": chat},
            }),
        )
    }

    /// Closes the long connection as a platform restart would.
    pub fn drop_socket(&self) {
        if let Some(s) = self.shared.lock().unwrap().socket.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn sockets_opened(&self) -> usize {
        self.shared.lock().unwrap().sockets_opened
    }

    pub fn fail_next(&self, what: &str, fault: Fault) {
        let mut st = self.shared.lock().unwrap();
        st.faults.entry(what.into()).or_default().push_back(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.lock().unwrap().faults.clear();
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().unwrap().calls.clone()
    }

    pub fn calls_of(&self, what: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.what == what && !c.faulted)
            .collect()
    }

    /// Whether the event pushed with message id `mid` was acknowledged.
    pub fn acked(&self, mid: &str) -> bool {
        self.shared.lock().unwrap().acked.contains(mid)
    }

    pub fn wait_acked(&self, mid: &str, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        while !self.acked(mid) {
            assert!(Instant::now() < end, "event {mid} was not acknowledged");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The cards in `place` (a chat, or `chat/root` for a thread), oldest first: (id,
    /// Markdown, buttons' data).
    pub fn chat(&self, place: &str) -> Vec<(String, String, Vec<String>)> {
        let st = self.shared.lock().unwrap();
        let mut out: Vec<(u64, String, String, Vec<String>)> = st
            .messages
            .iter()
            .filter(|(_, m)| m.place == place)
            .map(|(id, m)| {
                let n: u64 = id.trim_start_matches("om_sent").parse().unwrap_or(0);
                let text = m.card["elements"][0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                let buttons = buttons_of(&m.card)
                    .into_iter()
                    .filter_map(|v| v["evolve"].as_str().map(str::to_string))
                    .collect();
                (n, id.clone(), text, buttons)
            })
            .collect();
        out.sort_by_key(|m| m.0);
        out.into_iter().map(|(_, a, b, c)| (a, b, c)).collect()
    }

    pub fn wait_for(
        &self,
        place: &str,
        secs: u64,
        pred: impl Fn(&(String, String, Vec<String>)) -> bool,
    ) -> (String, String, Vec<String>) {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let msgs = self.chat(place);
            if let Some(m) = msgs.iter().find(|m| pred(m)) {
                return m.clone();
            }
            if Instant::now() > end {
                panic!("no such card in {place} after {secs} s: {msgs:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn buttons_of(card: &Value) -> Vec<Value> {
    card["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["tag"] == "action")
        .flat_map(|e| e["actions"].as_array().cloned().unwrap_or_default())
        .map(|b| b["value"].clone())
        .collect()
}

fn serve(mut conn: TcpStream, shared: &Arc<Mutex<State>>, port: u16) {
    let Some(mut req) = Request::read(&conn) else {
        return;
    };
    if req.path.starts_with("/ws") {
        if !accept_websocket(&mut conn, &req) {
            return;
        }
        {
            let mut st = shared.lock().unwrap();
            if let Some(old) = st.socket.take() {
                let _ = old.shutdown(Shutdown::Both);
            }
            st.socket = Some(conn.try_clone().expect("clone"));
            st.sockets_opened += 1;
            // What was pushed and not acknowledged comes again on the new connection.
            let unacked: Vec<(String, Value)> = st
                .pushed
                .iter()
                .filter(|(m, _)| !st.acked.contains(m))
                .cloned()
                .collect();
            let mut c = conn.try_clone().expect("clone");
            for (mid, body) in unacked {
                let _ = write_frame(&mut c, 2, &event_frame(&mid, &body));
            }
        }
        socket_loop(req.reader, conn, shared);
        return;
    }
    let Some(body) = req.body() else {
        return;
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let auth = req.header("authorization").unwrap_or("").to_string();
    let (method, route) = (req.method.clone(), req.route().to_string());
    let segs: Vec<&str> = route.trim_start_matches('/').split('/').collect();
    let what = match (method.as_str(), segs.as_slice()) {
        ("POST", ["open-apis", "auth", "v3", "tenant_access_token", "internal"]) => "token",
        ("GET", ["open-apis", "bot", "v3", "info"]) => "info",
        ("POST", ["callback", "ws", "endpoint"]) => "endpoint",
        ("POST", ["open-apis", "im", "v1", "messages"]) => "send",
        ("POST", ["open-apis", "im", "v1", "messages", _, "reply"]) => "reply",
        ("PATCH", ["open-apis", "im", "v1", "messages", _]) => "patch",
        ("GET", ["open-apis", "im", "v1", "messages", _, "resources", _]) => "resource",
        _ => "unknown",
    };
    let mut st = shared.lock().unwrap();
    let fault = st.faults.get_mut(what).and_then(VecDeque::pop_front);
    st.calls.push(Call {
        what: what.into(),
        body: body.clone(),
        at: Instant::now(),
        faulted: fault.is_some(),
    });
    match fault {
        Some(Fault::Status500) => {
            let b = json!({"code": 1500, "msg": "internal error"}).to_string();
            return reply(&mut conn, 500, "application/json", b.as_bytes());
        }
        Some(Fault::Garbage) => {
            return reply(&mut conn, 200, "text/html", b"<html>gateway</html>");
        }
        Some(Fault::RateLimited) => {
            let b = json!({"code": 99991400, "msg": "request trigger frequency limit"});
            return reply(&mut conn, 429, "application/json", b.to_string().as_bytes());
        }
        None => {}
    }
    let authorised = auth == format!("Bearer {TENANT_TOKEN}");
    let ok = |data: Value| json!({"code": 0, "msg": "success", "data": data});
    let answer = match what {
        "token" => {
            if body["app_id"] == APP_ID && body["app_secret"] == APP_SECRET {
                json!({"code": 0, "msg": "ok", "tenant_access_token": TENANT_TOKEN, "expire": 7200})
            } else {
                json!({"code": 10014, "msg": "app secret invalid"})
            }
        }
        "endpoint" => {
            if body["AppID"] == APP_ID && body["AppSecret"] == APP_SECRET {
                ok(json!({
                    "URL": format!("ws://127.0.0.1:{port}/ws?device_id=d1&service_id=33"),
                    "ClientConfig": {"ReconnectCount": -1, "ReconnectInterval": 120,
                                     "ReconnectNonce": 30, "PingInterval": 120},
                }))
            } else {
                json!({"code": 514, "msg": "auth failed"})
            }
        }
        _ if !authorised => json!({"code": 99991663, "msg": "Invalid access token"}),
        "info" => {
            json!({"code": 0, "msg": "ok", "bot": {"app_name": "Evolve Test", "open_id": BOT}})
        }
        "send" | "reply" => {
            st.next += 1;
            let id = format!("om_sent{}", st.next);
            let place = if what == "send" {
                body["receive_id"].as_str().unwrap_or("").to_string()
            } else {
                let root = segs[4];
                let chat = st
                    .origins
                    .get(root)
                    .cloned()
                    .or_else(|| st.messages.get(root).map(|m| m.place.clone()))
                    .unwrap_or_else(|| "oc_unknown".into());
                format!("{chat}/{root}")
            };
            let card: Value =
                serde_json::from_str(body["content"].as_str().unwrap_or("")).unwrap_or(json!({}));
            st.messages.insert(id.clone(), Sent { place, card });
            ok(json!({"message_id": id}))
        }
        "patch" => {
            let id = segs[4].to_string();
            let card: Value =
                serde_json::from_str(body["content"].as_str().unwrap_or("")).unwrap_or(json!({}));
            match st.messages.get_mut(&id) {
                Some(m) => {
                    m.card = card;
                    ok(json!({}))
                }
                None => json!({"code": 230001, "msg": "message not found"}),
            }
        }
        "resource" => {
            let key = segs[6];
            if let Some(bytes) = st.files.get(key).cloned() {
                drop(st);
                return reply(&mut conn, 200, "application/octet-stream", &bytes);
            }
            json!({"code": 234003, "msg": "file not found"})
        }
        _ => json!({"code": 404, "msg": "no such API in the fake"}),
    };
    drop(st);
    reply(
        &mut conn,
        200,
        "application/json",
        answer.to_string().as_bytes(),
    );
}

/// The data frame of an event pushed with frame message id `mid`.
fn event_frame(mid: &str, body: &Value) -> Vec<u8> {
    Frame {
        method: 1,
        service: 33,
        headers: vec![
            ("type".into(), "event".into()),
            ("message_id".into(), mid.to_string()),
            ("sum".into(), "1".into()),
            ("seq".into(), "0".into()),
            ("trace_id".into(), "tr".into()),
        ],
        payload: body.to_string().into_bytes(),
        ..Frame::default()
    }
    .encode()
}

/// The server side of the long connection: answers pings, records acknowledgements.
fn socket_loop(mut reader: BufReader<TcpStream>, conn: TcpStream, shared: &Arc<Mutex<State>>) {
    while let Some((opcode, data)) = read_frame(&mut reader) {
        if opcode == 8 {
            break;
        }
        if opcode == 9 {
            send_locked(shared, &conn, 10, &data);
            continue;
        }
        if opcode != 2 {
            continue;
        }
        let Some(frame) = Frame::decode(&data) else {
            continue;
        };
        let kind = frame.header("type").unwrap_or("");
        if frame.method == 0 && kind == "ping" {
            let pong = Frame {
                method: 0,
                service: frame.service,
                headers: vec![("type".into(), "pong".into())],
                payload: br#"{"PingInterval":120}"#.to_vec(),
                ..Frame::default()
            };
            send_locked(shared, &conn, 2, &pong.encode());
        } else if frame.method == 1 {
            let said: Value = serde_json::from_slice(&frame.payload).unwrap_or(json!({}));
            if said["code"] == 200 {
                if let Some(mid) = frame.header("message_id") {
                    let mut st = shared.lock().unwrap();
                    if !st.lose_acks {
                        st.acked.insert(mid.to_string());
                    }
                }
            }
        }
    }
}

/// Writes a frame on `conn` under the state's lock, so it never interleaves with a push.
fn send_locked(shared: &Arc<Mutex<State>>, conn: &TcpStream, opcode: u8, data: &[u8]) {
    let _st = shared.lock().unwrap();
    let mut c = conn.try_clone().expect("clone");
    let _ = write_frame(&mut c, opcode, data);
}

/// The long connection's protobuf `Frame` (pbbp2.proto's field numbers).
#[derive(Debug, Default, Clone)]
pub struct Frame {
    pub seq_id: u64,
    pub log_id: u64,
    pub service: i64,
    pub method: i64,
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    varint(out, field << 3 | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn read_varint(d: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *d.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

fn read_fields(d: &[u8]) -> Option<Vec<(u64, u64, &[u8])>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < d.len() {
        let tag = read_varint(d, &mut at)?;
        match tag & 7 {
            0 => out.push((tag >> 3, read_varint(d, &mut at)?, &d[0..0])),
            2 => {
                let len = read_varint(d, &mut at)? as usize;
                let b = d.get(at..at + len)?;
                at += len;
                out.push((tag >> 3, 0, b));
            }
            _ => return None,
        }
    }
    Some(out)
}

impl Frame {
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (f, v) in [
            (1, self.seq_id),
            (2, self.log_id),
            (3, self.service as u64),
            (4, self.method as u64),
        ] {
            varint(&mut out, f << 3);
            varint(&mut out, v);
        }
        for (k, v) in &self.headers {
            let mut h = Vec::new();
            bytes_field(&mut h, 1, k.as_bytes());
            bytes_field(&mut h, 2, v.as_bytes());
            bytes_field(&mut out, 5, &h);
        }
        if !self.payload.is_empty() {
            bytes_field(&mut out, 8, &self.payload);
        }
        out
    }

    pub fn decode(d: &[u8]) -> Option<Frame> {
        let mut f = Frame::default();
        for (n, v, b) in read_fields(d)? {
            match n {
                1 => f.seq_id = v,
                2 => f.log_id = v,
                3 => f.service = v as i64,
                4 => f.method = v as i64,
                5 => {
                    let (mut k, mut val) = (String::new(), String::new());
                    for (hn, _, hb) in read_fields(b)? {
                        let s = String::from_utf8(hb.to_vec()).ok()?;
                        if hn == 1 {
                            k = s;
                        } else if hn == 2 {
                            val = s;
                        }
                    }
                    f.headers.push((k, val));
                }
                8 => f.payload = b.to_vec(),
                _ => {}
            }
        }
        Some(f)
    }
}
