//! A loopback fake of DingTalk's Stream mode and robot API, written from the public
//! documentation: `POST /v1.0/oauth2/accessToken`, `POST
//! /v1.0/gateway/connections/open` (an endpoint and a ticket), the WebSocket at
//! `endpoint?ticket=…` with JSON frames (`SYSTEM` ping/disconnect, `CALLBACK` messages
//! to the robot; the client's `{code: 200, headers: {messageId}}` recorded as the
//! acknowledgement), the message's `sessionWebhook`, and `POST
//! /v1.0/robot/groupMessages/send` / `/v1.0/robot/oToMessages/batchSend`.
//!
//! A test pushes messages and reads what the robot said in each chat (a staff id for a
//! person, a `cid…` conversation for a group). Faults are queued per call.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::loopback::{accept_websocket, read_frame, reply, write_frame, Request};

pub const CLIENT_ID: &str = "dingtestapp";
pub const CLIENT_SECRET: &str = "ding-SECRET-value";
const TICKET: &str = "tk+/1=";

#[derive(Debug, Clone)]
pub enum Fault {
    Status500,
    Garbage,
}

#[derive(Default)]
struct State {
    next: u64,
    /// (chat, Markdown text) in the order said.
    said: Vec<(String, String)>,
    /// What each call was (`hook`, `group`, `oto`, `token`, `open`).
    calls: Vec<(String, bool)>,
    faults: HashMap<String, VecDeque<Fault>>,
    acked: HashSet<String>,
    socket: Option<TcpStream>,
    sockets_opened: usize,
    /// Every frame pushed, by its message id.
    pushed: Vec<(String, Value)>,
    lose_acks: bool,
    /// Files a person sent, by download code.
    files: HashMap<String, Vec<u8>>,
}

pub struct FakeDingtalk {
    pub port: u16,
    shared: Arc<Mutex<State>>,
}

impl FakeDingtalk {
    pub fn start() -> FakeDingtalk {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake DingTalk");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Mutex::new(State::default()));
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(conn, &s, port));
            }
        });
        FakeDingtalk { port, shared }
    }

    pub fn config(&self) -> String {
        format!(
            "[channels.dingtalk]\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\nbase_url = \"http://127.0.0.1:{}\"\n",
            self.port
        )
    }

    fn send_text(&self, frame: &Value) {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            {
                let mut st = self.shared.lock().unwrap();
                if let Some(sock) = st.socket.as_mut() {
                    if write_frame(sock, 1, frame.to_string().as_bytes()).is_ok() {
                        return;
                    }
                    st.socket = None;
                }
            }
            assert!(Instant::now() < end, "no long connection to push on");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A message from `staff`: in a one-to-one chat, or in group `group` (@mentioning
    /// the robot, as DingTalk only then delivers it). The frame's message id.
    pub fn say(&self, staff: &str, group: Option<&str>, text: &str) -> String {
        self.message(
            staff,
            group,
            json!({"msgtype": "text", "text": {"content": text}}),
        )
    }

    /// A voice message from `staff`, with DingTalk's own `recognition` of it when
    /// `Some` (the robot callback carries it when DingTalk recognised the speech) and its
    /// audio behind a download code when `audio` is `Some`.
    pub fn voice(
        &self,
        staff: &str,
        group: Option<&str>,
        recognition: Option<&str>,
        audio: Option<&[u8]>,
    ) -> String {
        let mut content = json!({"duration": 2});
        if let Some(bytes) = audio {
            content["downloadCode"] = json!(self.file_code(bytes));
        }
        if let Some(r) = recognition {
            content["recognition"] = json!(r);
        }
        self.message(
            staff,
            group,
            json!({"msgtype": "audio", "content": content}),
        )
    }

    /// A voice message whose download code the platform no longer knows (expired), not
    /// recognised.
    pub fn expired_voice(&self, staff: &str) -> String {
        self.message(
            staff,
            None,
            json!({"msgtype": "audio", "content": {"duration": 2, "downloadCode": "expired"}}),
        )
    }

    /// A picture from `staff` in a one-to-one chat (its bytes behind a download code).
    pub fn picture(&self, staff: &str, bytes: &[u8]) -> String {
        let code = self.file_code(bytes);
        self.message(
            staff,
            None,
            json!({"msgtype": "picture", "content": {"downloadCode": code, "pictureDownloadCode": "pic-x"}}),
        )
    }

    /// A file from `staff` in a one-to-one chat.
    pub fn file(&self, staff: &str, name: &str, bytes: &[u8]) -> String {
        let code = self.file_code(bytes);
        self.message(
            staff,
            None,
            json!({"msgtype": "file", "content": {"downloadCode": code, "fileName": name, "fileId": "f1", "spaceId": "s1"}}),
        )
    }

    /// A rich-text message from `staff`: `text`, then a picture.
    pub fn rich_text(&self, staff: &str, text: &str, bytes: &[u8]) -> String {
        let code = self.file_code(bytes);
        self.message(
            staff,
            None,
            json!({"msgtype": "richText", "content": {"richText": [
                {"text": text},
                {"type": "picture", "downloadCode": code, "pictureDownloadCode": "pic-y"},
            ]}}),
        )
    }

    /// A message whose download code the platform no longer knows (expired).
    pub fn expired_file(&self, staff: &str, name: &str) -> String {
        self.message(
            staff,
            None,
            json!({"msgtype": "file", "content": {"downloadCode": "expired", "fileName": name}}),
        )
    }

    fn file_code(&self, bytes: &[u8]) -> String {
        let mut st = self.shared.lock().unwrap();
        st.next += 1;
        let code = format!("dl+/{}=", st.next);
        st.files.insert(code.clone(), bytes.to_vec());
        code
    }

    /// Pushes a robot message whose type-specific fields are `body`.
    fn message(&self, staff: &str, group: Option<&str>, body: Value) -> String {
        let mid = {
            let mut st = self.shared.lock().unwrap();
            st.next += 1;
            format!("mid{}", st.next)
        };
        let chat = group.unwrap_or(staff);
        let mut data = json!({
            "conversationId": group.unwrap_or("cidDirect"),
            "conversationType": if group.is_some() { "2" } else { "1" },
            "conversationTitle": if group.is_some() { "Team" } else { "" },
            "msgId": format!("msg-{mid}"), "senderNick": staff, "senderStaffId": staff, "senderId": format!("$:{staff}"),
            "chatbotUserId": "bot",
            "sessionWebhook": format!("http://127.0.0.1:{}/hook/{chat}", self.port),
            "sessionWebhookExpiredTime": 4_102_444_800_000i64,
            "isInAtList": true, "robotCode": CLIENT_ID,
        });
        for (k, v) in body.as_object().into_iter().flatten() {
            data[k] = v.clone();
        }
        let frame = json!({
            "specVersion": "1.0", "type": "CALLBACK",
            "headers": {"appId": "a", "connectionId": "c", "contentType": "application/json",
                        "messageId": mid, "time": "0", "topic": "/v1.0/im/bot/messages/get"},
            "data": data.to_string(),
        });
        self.shared
            .lock()
            .unwrap()
            .pushed
            .push((mid.clone(), frame.clone()));
        self.send_text(&frame);
        mid
    }

    /// Pushes the message first pushed as `mid` again, as the platform does when it did
    /// not hear the acknowledgement: the same robot message (`msgId`) in a frame of a new
    /// message id (returned).
    pub fn redeliver(&self, mid: &str) -> String {
        let mut frame = {
            let st = self.shared.lock().unwrap();
            let (_, f) = st
                .pushed
                .iter()
                .find(|(m, _)| m == mid)
                .expect("a frame pushed before");
            f.clone()
        };
        let again = {
            let mut st = self.shared.lock().unwrap();
            st.next += 1;
            format!("mid{}", st.next)
        };
        frame["headers"]["messageId"] = json!(again);
        self.shared
            .lock()
            .unwrap()
            .pushed
            .push((again.clone(), frame.clone()));
        self.send_text(&frame);
        again
    }

    /// While on, the client's acknowledgements are lost on the way: the platform pushes
    /// what it did not hear acknowledged again on the next connection.
    pub fn lose_acks(&self, on: bool) {
        self.shared.lock().unwrap().lose_acks = on;
    }

    /// A `SYSTEM` ping; its message id.
    pub fn ping(&self) -> String {
        let mid = "ping1".to_string();
        self.send_text(&json!({
            "specVersion": "1.0", "type": "SYSTEM",
            "headers": {"messageId": mid, "topic": "ping", "contentType": "application/json"},
            "data": "{\"opaque\":\"abc\"}",
        }));
        mid
    }

    /// The platform asks the client to move (`SYSTEM` disconnect), then closes.
    pub fn disconnect(&self) {
        self.send_text(&json!({
            "specVersion": "1.0", "type": "SYSTEM",
            "headers": {"messageId": "bye", "topic": "disconnect"},
            "data": "{}",
        }));
        std::thread::sleep(Duration::from_millis(200));
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

    /// How many calls of `what` were answered with a queued fault.
    pub fn faulted(&self, what: &str) -> usize {
        let st = self.shared.lock().unwrap();
        st.calls.iter().filter(|(w, f)| w == what && *f).count()
    }

    pub fn calls(&self, what: &str) -> usize {
        let st = self.shared.lock().unwrap();
        st.calls.iter().filter(|(w, f)| w == what && !f).count()
    }

    pub fn acked(&self, mid: &str) -> bool {
        self.shared.lock().unwrap().acked.contains(mid)
    }

    pub fn wait_acked(&self, mid: &str, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        while !self.acked(mid) {
            assert!(Instant::now() < end, "frame {mid} was not acknowledged");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the robot said in `chat`, oldest first.
    pub fn chat(&self, chat: &str) -> Vec<String> {
        let st = self.shared.lock().unwrap();
        st.said
            .iter()
            .filter(|(c, _)| c == chat)
            .map(|(_, t)| t.clone())
            .collect()
    }

    pub fn wait_for(&self, chat: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let said = self.chat(chat);
            if let Some(t) = said.iter().find(|t| pred(t)) {
                return t.clone();
            }
            if Instant::now() > end {
                panic!("nothing such said in {chat} after {secs} s: {said:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn serve(mut conn: TcpStream, shared: &Arc<Mutex<State>>, port: u16) {
    let Some(mut req) = Request::read(&conn) else {
        return;
    };
    if let Some(query) = req.path.strip_prefix("/connect?") {
        // The ticket must come back as it was given (percent-encoded in the query).
        if query != "ticket=tk%2B%2F1%3D" {
            return reply(&mut conn, 401, "text/plain", b"bad ticket");
        }
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
            let mut c = conn.try_clone().expect("clone");
            for (_, frame) in st.pushed.iter().filter(|(m, _)| !st.acked.contains(m)) {
                let _ = write_frame(&mut c, 1, frame.to_string().as_bytes());
            }
        }
        while let Some((opcode, data)) = read_frame(&mut req.reader) {
            if opcode == 8 {
                break;
            }
            if opcode != 1 {
                continue;
            }
            let v: Value = serde_json::from_slice(&data).unwrap_or(json!({}));
            if v["code"] == 200 {
                if let Some(mid) = v["headers"]["messageId"].as_str() {
                    let mut st = shared.lock().unwrap();
                    if !st.lose_acks {
                        st.acked.insert(mid.to_string());
                    }
                }
            }
        }
        return;
    }
    let Some(body) = req.body() else {
        return;
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let route = req.route().to_string();
    let what = match route.as_str() {
        "/v1.0/oauth2/accessToken" => "token",
        "/v1.0/gateway/connections/open" => "open",
        "/v1.0/robot/groupMessages/send" => "group",
        "/v1.0/robot/oToMessages/batchSend" => "oto",
        "/v1.0/robot/messageFiles/download" => "download",
        r if r.starts_with("/hook/") => "hook",
        r if r.starts_with("/files/") => "file",
        _ => "unknown",
    };
    let mut st = shared.lock().unwrap();
    let fault = st.faults.get_mut(what).and_then(VecDeque::pop_front);
    st.calls.push((what.to_string(), fault.is_some()));
    match fault {
        Some(Fault::Status500) => {
            return reply(
                &mut conn,
                500,
                "application/json",
                br#"{"code":"ServiceUnavailable","message":"busy"}"#,
            )
        }
        Some(Fault::Garbage) => return reply(&mut conn, 200, "text/html", b"<html>gw</html>"),
        None => {}
    }
    let token_ok = req.header("x-acs-dingtalk-access-token") == Some("at-1");
    let (status, answer) = match what {
        "token" if body["appKey"] == CLIENT_ID && body["appSecret"] == CLIENT_SECRET => {
            (200, json!({"accessToken": "at-1", "expireIn": 7200}))
        }
        "token" => (
            400,
            json!({"code": "invalidClientIdOrSecret", "message": "bad app"}),
        ),
        "open" if body["clientId"] == CLIENT_ID && body["clientSecret"] == CLIENT_SECRET => (
            200,
            json!({"endpoint": format!("ws://127.0.0.1:{port}/connect"), "ticket": TICKET}),
        ),
        "open" => (401, json!({"code": "Forbidden", "message": "bad app"})),
        "hook" => {
            let chat = route.trim_start_matches("/hook/").to_string();
            let text = body["markdown"]["text"].as_str().unwrap_or("").to_string();
            st.said.push((chat, text));
            (200, json!({"errcode": 0, "errmsg": "ok"}))
        }
        "group" | "oto" | "download" if !token_ok => {
            (401, json!({"code": "InvalidAuthentication"}))
        }
        "download" if body["robotCode"] != CLIENT_ID => (
            400,
            json!({"code": "invalidParameter.robotCode", "message": "robotCode"}),
        ),
        "download" => {
            let code = body["downloadCode"].as_str().unwrap_or("");
            if st.files.contains_key(code) {
                let at: String = percent_encode(code);
                (
                    200,
                    json!({"downloadUrl": format!("http://127.0.0.1:{port}/files/{at}")}),
                )
            } else {
                (
                    400,
                    json!({"code": "invalidParameter.downloadCode", "message": "downloadCode is expired"}),
                )
            }
        }
        "file" => {
            let code = percent_decode(route.trim_start_matches("/files/"));
            if let Some(bytes) = st.files.get(&code).cloned() {
                drop(st);
                return reply(&mut conn, 200, "application/octet-stream", &bytes);
            }
            (404, json!({"code": "NotFound"}))
        }
        "group" | "oto" => {
            let param: Value =
                serde_json::from_str(body["msgParam"].as_str().unwrap_or("")).unwrap_or_default();
            let text = param["text"].as_str().unwrap_or("").to_string();
            let chats: Vec<String> = if what == "group" {
                vec![body["openConversationId"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()]
            } else {
                body["userIds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|u| u.as_str().map(str::to_string))
                    .collect()
            };
            for c in chats {
                st.said.push((c, text.clone()));
            }
            (200, json!({"processQueryKey": "pq1"}))
        }
        _ => (404, json!({"code": "NotFound"})),
    };
    drop(st);
    reply(
        &mut conn,
        status,
        "application/json",
        answer.to_string().as_bytes(),
    );
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() + 1 {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..(i + 3).min(s.len())], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
