//! Feishu and Lark (the same platform at `open.feishu.cn` and `open.larksuite.com`): the
//! long-connection event mode, so no public address is needed, and the `im/v1` message
//! API.
//!
//! The connection: `POST /callback/ws/endpoint` with the app's id and secret gives a
//! `wss://` address; frames on it are protobuf `Frame`s ([`pb`]). A data frame carries an
//! event's JSON (cut in parts when large: `sum`/`seq` headers); it is answered with the
//! same frame whose payload is `{"code":200}` once the event is stored ([`super::link`]).
//! The client pings (a control frame) every `PingInterval` the endpoint gives.
//!
//! Decides how Feishu's shapes map to [`Event`]s: `im.message.receive_v1` (a `p2p` chat
//! is direct; in a group the bot is addressed by an @mention of it; a message in a
//! thread gets the thread's session and its answers go into the thread) and
//! `card.action.trigger` (a button of a card). Every answer is an interactive card with
//! one Markdown element (cards render Markdown, and only cards can be updated: a
//! streamed answer is `PATCH`ed). API failures: HTTP 429 or code 99991400 is
//! [`ChannelError::RateLimited`]; a refused app id or secret is
//! [`ChannelError::Unauthorized`]; an expired tenant token is fetched again once; 5xx,
//! a network failure or a body that is not the API's JSON are
//! [`ChannelError::Unavailable`]; other refusals are [`ChannelError::Refused`]. The
//! secret and the tenant token are never in a message this module writes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use super::link::{self, Frame, Link, Protocol};
use super::{Attachment, Button, Channel, ChannelError, Event, Message, Press, Sender, Sent};
use crate::config::FeishuConfig;
use crate::secret::Secret;
use crate::store::Store;
use crate::ws::{self, WebSocket};

/// One card's Markdown, in UTF-16 units: a card's request is at most 30 KB, and a
/// Chinese character takes three bytes of it.
pub const MAX_TEXT: usize = 7000;

/// The ping interval until the endpoint says otherwise (the official SDKs' default).
const PING_EVERY: Duration = Duration::from_secs(120);

/// Frame methods: control (ping, pong) and data (events).
const METHOD_CONTROL: i64 = 0;
const METHOD_DATA: i64 = 1;

/// The tenant access token, until a minute before it expires.
#[derive(Default)]
struct Token(Option<(Secret, Instant)>);

/// The Feishu/Lark client.
#[derive(Clone)]
pub struct Feishu {
    api: Api,
    token: Arc<Mutex<Token>>,
    /// Where the long connection keeps its inbox (`None`: a client that only sends).
    store: Option<Arc<Store>>,
    link: Option<Link>,
    /// The bot's own `open_id` (from `bot/v3/info`): a mention of it addresses the bot.
    bot: Option<String>,
}

/// What the message API and the endpoint need.
#[derive(Clone)]
struct Api {
    base: String,
    app_id: String,
    secret: Secret,
    agent: ureq::Agent,
}

impl Api {
    fn scrub(&self, text: String) -> String {
        text.replace(self.secret.expose(), "<secret>")
    }

    /// Sends a request; the API's JSON and the HTTP status.
    fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&Secret>,
        body: Option<&Value>,
    ) -> Result<(u16, Value, Option<u64>), ChannelError> {
        let url = format!("{}{path}", self.base);
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Content-Type", "application/json; charset=utf-8");
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {}", t.expose()));
        }
        let req = req
            .body(body.map(Value::to_string).unwrap_or_default())
            .map_err(|e| ChannelError::Refused(format!("Feishu {path}: {e}")))?;
        let where_ = crate::secret::display_url(&self.base);
        let mut resp = self.agent.run(req).map_err(|e| {
            ChannelError::Unavailable(
                self.scrub(format!("cannot reach Feishu at {where_} ({path}): {e}")),
            )
        })?;
        let status = resp.status().as_u16();
        let reset = resp
            .headers()
            .get("x-ogw-ratelimit-reset")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let text = resp
            .body_mut()
            .with_config()
            .limit(8 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| {
                ChannelError::Unavailable(format!(
                    "Feishu's answer to {path} could not be read: {e}"
                ))
            })?;
        let v = serde_json::from_str::<Value>(&text).map_err(|_| {
            ChannelError::Unavailable(format!(
                "Feishu answered {path} with HTTP {status} and a body that is not its JSON \
                 ({} bytes) — is base_url https://open.feishu.cn or https://open.larksuite.com?",
                text.len()
            ))
        })?;
        Ok((status, v, reset))
    }

    /// The tenant access token and how long it lives.
    fn tenant_token(&self) -> Result<(Secret, Duration), ChannelError> {
        let (status, v, reset) = self.request(
            "POST",
            "/open-apis/auth/v3/tenant_access_token/internal",
            None,
            Some(&json!({"app_id": self.app_id, "app_secret": self.secret.expose()})),
        )?;
        let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
        match v.get("tenant_access_token").and_then(Value::as_str) {
            Some(t) if code == 0 => {
                let life = v.get("expire").and_then(Value::as_u64).unwrap_or(7200);
                Ok((
                    Secret::new(t),
                    Duration::from_secs(life.saturating_sub(60).max(60)),
                ))
            }
            _ => Err(match failure(status, &v, reset, "tenant_access_token") {
                ChannelError::Refused(m) => ChannelError::Unauthorized(format!(
                    "{m} — check [channels.feishu] app_id and app_secret (the app's \
                     credentials page)"
                )),
                e => e,
            }),
        }
    }
}

/// What a refusal of the API means (see the module docs).
fn failure(status: u16, v: &Value, reset: Option<u64>, what: &str) -> ChannelError {
    let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
    let msg = v.get("msg").and_then(Value::as_str).unwrap_or("no message");
    let said = evolve_core::text::one_line(msg, 300);
    if status == 429 || code == 99991400 {
        return ChannelError::RateLimited(Duration::from_secs(reset.unwrap_or(1).clamp(1, 3600)));
    }
    if status >= 500 {
        return ChannelError::Unavailable(format!("Feishu {what}: HTTP {status} {code} {said}"));
    }
    // 10003/10014: app id or secret; 99991663/99991661/99991668: the token.
    if matches!(
        code,
        10003 | 10014 | 99991663 | 99991661 | 99991668 | 99991664
    ) {
        return ChannelError::Unauthorized(format!("Feishu {what}: {code} {said}"));
    }
    ChannelError::Refused(format!("Feishu {what}: {code} {said}"))
}

impl Feishu {
    /// A client for `config`, its long connection's inbox in `store` (`None`: a client
    /// that only sends); `None` when it has no secret (the config says why).
    pub fn new(config: &FeishuConfig, store: Option<Arc<Store>>) -> Option<Feishu> {
        let secret = config.secret.clone()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(30)))
            .tls_config(crate::tls::config())
            .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Some(Feishu {
            api: Api {
                base: config.base_url.clone(),
                app_id: config.id.clone(),
                secret,
                agent,
            },
            token: Arc::new(Mutex::new(Token::default())),
            store,
            link: None,
            bot: None,
        })
    }

    /// The tenant token, fetched when there is none or it is about to expire.
    fn token(&self, fresh: bool) -> Result<Secret, ChannelError> {
        let mut held = self
            .token
            .lock()
            .map_err(|_| ChannelError::Unavailable("feishu: the token lock is poisoned".into()))?;
        if let (false, Some((t, until))) = (fresh, &held.0) {
            if Instant::now() < *until {
                return Ok(t.clone());
            }
        }
        let (t, life) = self.api.tenant_token()?;
        held.0 = Some((t.clone(), Instant::now() + life));
        Ok(t)
    }

    /// Calls the API with the tenant token (fetched again once when it is refused);
    /// the whole answer.
    fn call_whole(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ChannelError> {
        let mut fresh = false;
        loop {
            let token = self.token(fresh)?;
            let (status, v, reset) = self.api.request(method, path, Some(&token), body)?;
            if status < 300 && v.get("code").and_then(Value::as_i64) == Some(0) {
                return Ok(v);
            }
            let what = path.split('?').next().unwrap_or(path);
            match failure(status, &v, reset, what) {
                ChannelError::Unauthorized(_) if !fresh => fresh = true,
                e => return Err(e),
            }
        }
    }

    /// [`Feishu::call_whole`]'s `data`.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, ChannelError> {
        let mut v = self.call_whole(method, path, body)?;
        Ok(v["data"].take())
    }

    /// A card showing `text` (Markdown) with `buttons` under it; `place` rides in each
    /// button so a press finds its chat (and thread) again.
    fn card(text: &str, buttons: &[Button], place: &str) -> String {
        let mut elements = vec![json!({"tag": "markdown", "content": text})];
        if !buttons.is_empty() {
            let actions: Vec<Value> = buttons
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    json!({
                        "tag": "button",
                        "text": {"tag": "plain_text", "content": b.label},
                        "type": if i == 0 { "primary" } else { "default" },
                        "value": {"evolve": b.data, "place": place},
                    })
                })
                .collect();
            elements.push(json!({"tag": "action", "actions": actions}));
        }
        json!({
            "config": {"wide_screen_mode": true, "update_multi": true},
            "elements": elements,
        })
        .to_string()
    }

    /// One stored event as an [`Event`]; `None` for what the agent does not answer.
    fn event(&self, v: &Value) -> Option<Event> {
        let kind = v.pointer("/header/event_type").and_then(Value::as_str)?;
        let e = v.get("event")?;
        match kind {
            "im.message.receive_v1" => self.message(e).map(Event::Message),
            "card.action.trigger" => {
                let value = e.pointer("/action/value")?;
                let chat = e
                    .pointer("/context/open_chat_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let place = value
                    .get("place")
                    .and_then(Value::as_str)
                    .filter(|p| p.split('/').next() == Some(chat) || chat.is_empty())
                    .unwrap_or(chat);
                let who = e.pointer("/operator/open_id").and_then(Value::as_str)?;
                Some(Event::Press(Press {
                    id: v
                        .pointer("/header/event_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    chat: place.to_string(),
                    message: e
                        .pointer("/context/open_message_id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    sender: Sender {
                        id: who.to_string(),
                        name: who.to_string(),
                    },
                    data: value.get("evolve").and_then(Value::as_str)?.to_string(),
                }))
            }
            _ => None,
        }
    }

    fn message(&self, e: &Value) -> Option<Message> {
        if e.pointer("/sender/sender_type").and_then(Value::as_str) != Some("user") {
            return None;
        }
        let sender = e
            .pointer("/sender/sender_id/open_id")
            .and_then(Value::as_str)?;
        let m = e.get("message")?;
        let id = m.get("message_id").and_then(Value::as_str)?;
        let chat = m.get("chat_id").and_then(Value::as_str)?;
        let direct = m.get("chat_type").and_then(Value::as_str) == Some("p2p");
        let content: Value = m
            .get("content")
            .and_then(Value::as_str)
            .and_then(|c| serde_json::from_str(c).ok())
            .unwrap_or(Value::Null);
        let mut text = String::new();
        let mut attachments = Vec::new();
        match m.get("message_type").and_then(Value::as_str).unwrap_or("") {
            "text" => text = content["text"].as_str().unwrap_or("").to_string(),
            "post" => {
                // Rich text: a title and paragraphs of elements; the text ones are kept.
                let body = content
                    .get("content")
                    .or_else(|| content.pointer("/zh_cn/content"))
                    .or_else(|| content.pointer("/en_us/content"));
                let lines = body.and_then(Value::as_array).into_iter().flatten();
                let lines: Vec<String> = lines
                    .map(|p| {
                        p.as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|el| el.get("text").and_then(Value::as_str))
                            .collect::<String>()
                    })
                    .collect();
                text = lines.join("\n");
            }
            "image" => {
                let key = content["image_key"].as_str()?;
                attachments.push(Attachment::Image {
                    file: format!("{id}/{key}/image"),
                });
            }
            "file" => {
                let key = content["file_key"].as_str()?;
                attachments.push(Attachment::File {
                    file: format!("{id}/{key}/file"),
                    name: content["file_name"].as_str().unwrap_or("file").to_string(),
                });
            }
            "audio" => attachments.push(Attachment::Voice {
                file: content["file_key"]
                    .as_str()
                    .map(|k| format!("{id}/{k}/file")),
            }),
            _ => return None,
        }
        // Mentions are `@_user_1` placeholders in the text; the bot's one is taken out.
        let mut mentioned = false;
        for mention in m
            .get("mentions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = mention.get("key").and_then(Value::as_str).unwrap_or("");
            let who = mention.pointer("/id/open_id").and_then(Value::as_str);
            if who.is_some() && who == self.bot.as_deref() {
                mentioned = true;
                text = text.replace(key, "");
            } else if let Some(name) = mention.get("name").and_then(Value::as_str) {
                text = text.replace(key, &format!("@{name}"));
            }
        }
        let text = text.trim().to_string();
        if text.is_empty() && attachments.is_empty() {
            return None;
        }
        // A message in a thread: the thread's own session, the answers into it.
        let thread = m
            .get("thread_id")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(|_| {
                m.get("root_id")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                    .unwrap_or(id)
                    .to_string()
            });
        Some(Message {
            chat: chat.to_string(),
            thread,
            chat_title: None,
            direct,
            sender: Sender {
                id: sender.to_string(),
                name: sender.to_string(),
            },
            text,
            mentioned: direct || mentioned,
            attachments,
        })
    }
}

impl Channel for Feishu {
    fn name(&self) -> &'static str {
        "feishu"
    }

    fn max_text(&self) -> usize {
        MAX_TEXT
    }

    fn check(&mut self) -> Result<String, ChannelError> {
        self.token(true)?;
        // `bot/v3/info` answers with `bot` beside `code`, not in `data`.
        let info = self.call_whole("GET", "/open-apis/bot/v3/info", None)?;
        self.bot = info
            .pointer("/bot/open_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(info
            .pointer("/bot/app_name")
            .and_then(Value::as_str)
            .unwrap_or("the app")
            .to_string())
    }

    fn connect(&mut self) -> Result<String, ChannelError> {
        let name = self.check()?;
        let api = self.api.clone();
        link::start_once(&mut self.link, "feishu", self.store.as_ref(), || Wire {
            api,
            service: 0,
            ping_every: PING_EVERY,
            last_ping: None,
            parts: HashMap::new(),
        })?;
        Ok(name)
    }

    fn inbox(&self) -> Option<&Link> {
        self.link.as_ref()
    }

    fn read(&self, stored: &Value) -> Option<Event> {
        self.event(stored)
    }

    fn watcher(&self) -> Option<Box<dyn Channel>> {
        Some(Box::new(self.clone()))
    }

    fn send(&mut self, chat: &str, text: &str, buttons: &[Button]) -> Result<Sent, ChannelError> {
        let content = Self::card(text, buttons, chat);
        let data = match chat.split_once('/') {
            Some((_, root)) => self.call(
                "POST",
                &format!("/open-apis/im/v1/messages/{root}/reply"),
                Some(&json!({"msg_type": "interactive", "content": content, "reply_in_thread": true})),
            )?,
            None => {
                // `ou_…` is a user (a pairing told in their chat with the bot).
                let kind = if chat.starts_with("ou_") {
                    "open_id"
                } else {
                    "chat_id"
                };
                self.call(
                    "POST",
                    &format!("/open-apis/im/v1/messages?receive_id_type={kind}"),
                    Some(&json!({"receive_id": chat, "msg_type": "interactive", "content": content})),
                )?
            }
        };
        let id = data
            .get("message_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ChannelError::Unavailable(
                    "Feishu im/v1/messages: no message_id in the answer".into(),
                )
            })?;
        Ok(Sent(id.to_string()))
    }

    fn edit(
        &mut self,
        chat: &str,
        message: &Sent,
        text: &str,
        buttons: &[Button],
    ) -> Result<(), ChannelError> {
        let content = Self::card(text, buttons, chat);
        self.call(
            "PATCH",
            &format!("/open-apis/im/v1/messages/{}", message.0),
            Some(&json!({ "content": content })),
        )
        .map(|_| ())
    }

    fn answer_press(&mut self, _press: &str, _text: &str) -> Result<(), ChannelError> {
        // The press was answered on the connection when it was stored (a toast).
        Ok(())
    }

    fn fetch(&mut self, file: &str) -> Result<Vec<u8>, ChannelError> {
        let mut parts = file.splitn(3, '/');
        let (Some(message), Some(key), Some(kind)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(ChannelError::Refused(format!(
                "feishu: {file:?} is not a file"
            )));
        };
        let token = self.token(false)?;
        let url = format!(
            "{}/open-apis/im/v1/messages/{message}/resources/{key}?type={kind}",
            self.api.base
        );
        let resp = self
            .api
            .agent
            .get(&url)
            .header("Authorization", format!("Bearer {}", token.expose()))
            .call()
            .map_err(|e| {
                ChannelError::Unavailable(format!("cannot download a Feishu file: {e}"))
            })?;
        super::download::body(resp, "Feishu")
    }
}

/// The connection's side: endpoint, frames, pings.
struct Wire {
    api: Api,
    /// `service_id` of the connection's address: pings carry it.
    service: i64,
    ping_every: Duration,
    last_ping: Option<Instant>,
    /// Parts of events cut in several frames, by message id.
    parts: HashMap<String, Vec<Option<Vec<u8>>>>,
}

impl Protocol for Wire {
    fn open(&mut self) -> Result<WebSocket, ChannelError> {
        let (status, v, reset) = self.api.request(
            "POST",
            "/callback/ws/endpoint",
            None,
            Some(&json!({"AppID": self.api.app_id, "AppSecret": self.api.secret.expose()})),
        )?;
        let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
        let url = v.pointer("/data/URL").and_then(Value::as_str);
        let Some(url) = url.filter(|_| code == 0 && status < 300) else {
            return Err(match (status, code) {
                (429, _) => ChannelError::RateLimited(Duration::from_secs(reset.unwrap_or(5))),
                (s, _) if s >= 500 => failure(status, &v, reset, "callback/ws/endpoint"),
                // 1: busy; 1000040343: an error of theirs.
                (_, 1 | 1000040343) => failure(500, &v, reset, "callback/ws/endpoint"),
                _ => ChannelError::Unauthorized(format!(
                    "Feishu refused the long connection ({code} {}) — check app_id and \
                     app_secret, and that the app subscribes to events by long connection",
                    v.get("msg").and_then(Value::as_str).unwrap_or("")
                )),
            });
        };
        if let Some(secs) = v
            .pointer("/data/ClientConfig/PingInterval")
            .and_then(Value::as_u64)
            .filter(|s| *s > 0)
        {
            self.ping_every = Duration::from_secs(secs);
        }
        self.service = url
            .split(['?', '&'])
            .find_map(|kv| kv.strip_prefix("service_id="))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        self.last_ping = None;
        self.parts.clear();
        ws::connect(url, &[], Duration::from_secs(15)).map_err(|e| {
            ChannelError::Unavailable(format!("feishu: cannot open the long connection: {e}"))
        })
    }

    fn keepalive(&mut self, now: Instant) -> Option<ws::Message> {
        if self
            .last_ping
            .is_some_and(|at| now.duration_since(at) < self.ping_every)
        {
            return None;
        }
        self.last_ping = Some(now);
        let ping = pb::Frame {
            service: self.service,
            method: METHOD_CONTROL,
            headers: vec![("type".into(), "ping".into())],
            ..pb::Frame::default()
        };
        Some(ws::Message::Binary(ping.encode()))
    }

    fn frame(&mut self, message: ws::Message) -> Frame {
        let ws::Message::Binary(bytes) = message else {
            log::debug!("feishu: a frame that is not binary is skipped");
            return Frame::default();
        };
        let Some(mut frame) = pb::Frame::decode(&bytes) else {
            log::warn!("feishu: a frame that is not the platform's protobuf is skipped");
            return Frame::default();
        };
        let kind = frame.header("type").unwrap_or("").to_string();
        if frame.method == METHOD_CONTROL {
            if kind == "pong" {
                let conf: Value = serde_json::from_slice(&frame.payload).unwrap_or(Value::Null);
                if let Some(secs) = conf["PingInterval"].as_u64().filter(|s| *s > 0) {
                    self.ping_every = Duration::from_secs(secs);
                }
            }
            return Frame::default();
        }
        if frame.method != METHOD_DATA {
            return Frame::default();
        }
        let sum: usize = frame
            .header("sum")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        let seq: usize = frame
            .header("seq")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let id = frame.header("message_id").unwrap_or("").to_string();
        let payload = if sum > 1 && sum <= 64 && seq < sum {
            let parts = self
                .parts
                .entry(id.clone())
                .or_insert_with(|| vec![None; sum]);
            if parts.len() != sum {
                *parts = vec![None; sum];
            }
            parts[seq] = Some(std::mem::take(&mut frame.payload));
            if parts.iter().any(Option::is_none) {
                return Frame::default();
            }
            let whole: Vec<u8> = parts.iter().flatten().flatten().copied().collect();
            self.parts.remove(&id);
            whole
        } else {
            std::mem::take(&mut frame.payload)
        };
        let mut out = Frame::default();
        let mut data = None;
        match serde_json::from_slice::<Value>(&payload) {
            Ok(event) if kind == "event" || kind == "card" => {
                let event_id = event
                    .pointer("/header/event_id")
                    .and_then(Value::as_str)
                    .unwrap_or(&id)
                    .to_string();
                if event.pointer("/header/event_type").and_then(Value::as_str)
                    == Some("card.action.trigger")
                {
                    let toast = json!({"toast": {"type": "info", "content": "✓"}});
                    data =
                        Some(base64::engine::general_purpose::STANDARD.encode(toast.to_string()));
                }
                out.events.push((event_id, event));
            }
            Ok(_) => {}
            Err(_) => log::warn!(
                "feishu: an event frame whose payload is not JSON ({} bytes) is skipped",
                payload.len()
            ),
        }
        frame.headers.push(("biz_rt".into(), "0".into()));
        let mut response = json!({"code": 200, "headers": {}});
        if let Some(d) = data {
            response["data"] = json!(d);
        }
        frame.payload = response.to_string().into_bytes();
        out.reply = Some(ws::Message::Binary(frame.encode()));
        out
    }
}

/// The few fields of the connection's protobuf `Frame` (field numbers of the public
/// `pbbp2.proto`): 1 SeqID, 2 LogID, 3 service, 4 method, 5 headers (key 1, value 2),
/// 6 payload_encoding, 7 payload_type, 8 payload, 9 LogIDNew. Unknown fields are
/// skipped on reading; everything read is written back, so a reply echoes its frame.
pub(super) mod pb {
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct Frame {
        pub seq_id: u64,
        pub log_id: u64,
        pub service: i64,
        pub method: i64,
        pub headers: Vec<(String, String)>,
        pub payload_encoding: String,
        pub payload_type: String,
        pub payload: Vec<u8>,
        pub log_id_new: String,
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
        put_varint(out, field << 3 | 2);
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }

    fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *data.get(*at)?;
            *at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// A field's value: a varint (`Ok`) or bytes (`Err`).
    type Field<'a> = Result<u64, &'a [u8]>;

    /// The fields of a message: `(number, value)`.
    fn fields(data: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < data.len() {
            let tag = get_varint(data, &mut at)?;
            let value = match tag & 7 {
                0 => Ok(get_varint(data, &mut at)?),
                1 => {
                    at = at.checked_add(8).filter(|&e| e <= data.len())?;
                    continue;
                }
                2 => {
                    let len = usize::try_from(get_varint(data, &mut at)?).ok()?;
                    let end = at.checked_add(len).filter(|&e| e <= data.len())?;
                    let bytes = &data[at..end];
                    at = end;
                    Err(bytes)
                }
                5 => {
                    at = at.checked_add(4).filter(|&e| e <= data.len())?;
                    continue;
                }
                _ => return None,
            };
            out.push((tag >> 3, value));
        }
        Some(out)
    }

    fn text(b: &[u8]) -> Option<String> {
        String::from_utf8(b.to_vec()).ok()
    }

    impl Frame {
        pub fn header(&self, key: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        }

        pub fn encode(&self) -> Vec<u8> {
            let mut out = Vec::with_capacity(self.payload.len() + 64);
            for (field, v) in [(1, self.seq_id), (2, self.log_id)] {
                put_varint(&mut out, field << 3);
                put_varint(&mut out, v);
            }
            // int32 fields: a negative one is ten bytes of two's complement.
            for (field, v) in [(3, self.service), (4, self.method)] {
                put_varint(&mut out, field << 3);
                put_varint(&mut out, v as u64);
            }
            for (k, v) in &self.headers {
                let mut h = Vec::new();
                put_bytes(&mut h, 1, k.as_bytes());
                put_bytes(&mut h, 2, v.as_bytes());
                put_bytes(&mut out, 5, &h);
            }
            for (field, s) in [(6, &self.payload_encoding), (7, &self.payload_type)] {
                if !s.is_empty() {
                    put_bytes(&mut out, field, s.as_bytes());
                }
            }
            if !self.payload.is_empty() {
                put_bytes(&mut out, 8, &self.payload);
            }
            if !self.log_id_new.is_empty() {
                put_bytes(&mut out, 9, self.log_id_new.as_bytes());
            }
            out
        }

        /// `None` for bytes that are not a frame.
        pub fn decode(data: &[u8]) -> Option<Frame> {
            let mut f = Frame::default();
            for (field, value) in fields(data)? {
                match (field, value) {
                    (1, Ok(v)) => f.seq_id = v,
                    (2, Ok(v)) => f.log_id = v,
                    (3, Ok(v)) => f.service = v as i32 as i64,
                    (4, Ok(v)) => f.method = v as i32 as i64,
                    (5, Err(b)) => {
                        let (mut k, mut v) = (String::new(), String::new());
                        for (n, x) in fields(b)? {
                            match (n, x) {
                                (1, Err(s)) => k = text(s)?,
                                (2, Err(s)) => v = text(s)?,
                                _ => {}
                            }
                        }
                        f.headers.push((k, v));
                    }
                    (6, Err(b)) => f.payload_encoding = text(b)?,
                    (7, Err(b)) => f.payload_type = text(b)?,
                    (8, Err(b)) => f.payload = b.to_vec(),
                    (9, Err(b)) => f.log_id_new = text(b)?,
                    // A known field of the wrong wire type: not a frame.
                    (1..=9, _) => return None,
                    _ => {}
                }
            }
            Some(f)
        }
    }
}

#[cfg(test)]
#[path = "feishu_tests.rs"]
mod tests;
