//! DingTalk in Stream mode: a long connection, so no public address is needed.
//!
//! The connection: `POST /v1.0/gateway/connections/open` with the robot app's
//! `clientId`/`clientSecret` and its subscriptions gives an `endpoint` and a `ticket`;
//! the WebSocket at `endpoint?ticket=…` carries JSON frames `{type, headers, data}`.
//! `SYSTEM` frames are the platform's `ping` (answered with its data) and `disconnect`
//! (a new connection is opened); `CALLBACK` frames on the topic
//! `/v1.0/im/bot/messages/get` are messages to the robot, and `EVENT` frames other
//! events. Every frame is acknowledged with `{code: 200, headers: {messageId}}` once
//! stored ([`super::link`]).
//!
//! Decides how DingTalk's shapes map to [`Event`]s: a one-to-one conversation is direct
//! and its chat is the person's staff id; a group's chat is its `conversationId`, and
//! there the robot only ever receives messages that @mention it. Answers go through the
//! message's `sessionWebhook` while it lives, else through the robot API with an app
//! access token (`/v1.0/robot/groupMessages/send` for a group,
//! `/v1.0/robot/oToMessages/batchSend` for a person): Markdown messages, which DingTalk
//! cannot edit — an answer is sent once, whole, and a question for the person says which
//! words answer it (yes / no / always), which the parked call takes as the answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::link::{self, Frame, Link, Protocol};
use super::{Attachment, Button, Channel, ChannelError, Event, Message, Sender, Sent};
use crate::config::DingtalkConfig;
use crate::secret::Secret;
use crate::store::Store;
use crate::ws::{self, WebSocket};

/// One message's Markdown, in UTF-16 units (DingTalk cuts Markdown at 5 000 characters).
pub const MAX_TEXT: usize = 4500;

/// The topic of messages to the robot.
const BOT_TOPIC: &str = "/v1.0/im/bot/messages/get";

/// The DingTalk client.
#[derive(Clone)]
pub struct Dingtalk {
    api: Api,
    /// The app access token for the robot API, until a minute before it expires.
    token: Arc<Mutex<Option<(Secret, Instant)>>>,
    /// Each chat's `sessionWebhook` and when it expires.
    hooks: Arc<Mutex<HashMap<String, (String, i64)>>>,
    store: Option<Arc<Store>>,
    link: Option<Link>,
}

#[derive(Clone)]
struct Api {
    base: String,
    id: String,
    secret: Secret,
    agent: ureq::Agent,
}

impl Api {
    /// POSTs JSON to `url` (a path of the API, or a whole webhook address); the status
    /// and the JSON answer.
    fn post(
        &self,
        url: &str,
        token: Option<&Secret>,
        body: &Value,
    ) -> Result<(u16, Value), ChannelError> {
        let full = if url.starts_with("http") {
            url.to_string()
        } else {
            format!("{}{url}", self.base)
        };
        let shown = url.split('?').next().unwrap_or(url);
        let mut req = self
            .agent
            .post(&full)
            .header("Content-Type", "application/json");
        if let Some(t) = token {
            req = req.header("x-acs-dingtalk-access-token", t.expose());
        }
        let mut resp = req.send(body.to_string()).map_err(|e| {
            ChannelError::Unavailable(format!(
                "cannot reach DingTalk at {} ({shown}): {}",
                crate::secret::display_url(&self.base),
                e.to_string().replace(self.secret.expose(), "<secret>")
            ))
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(4 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| {
                ChannelError::Unavailable(format!("DingTalk's answer could not be read: {e}"))
            })?;
        let v = serde_json::from_str::<Value>(&text).map_err(|_| {
            ChannelError::Unavailable(format!(
                "DingTalk answered {shown} with HTTP {status} and a body that is not its JSON \
                 ({} bytes) — is base_url https://api.dingtalk.com?",
                text.len()
            ))
        })?;
        Ok((status, v))
    }
}

/// What a refusal means: 429 waits, 401/403 and a bad app are the credentials, 5xx
/// and a busy platform are passing, the rest is this one request.
fn failure(status: u16, v: &Value, what: &str) -> ChannelError {
    let code = v
        .get("code")
        .or_else(|| v.get("errcode"))
        .map(|c| c.to_string())
        .unwrap_or_default();
    let msg = v
        .get("message")
        .or_else(|| v.get("errmsg"))
        .and_then(Value::as_str)
        .unwrap_or("no message");
    let said = format!(
        "DingTalk {what}: HTTP {status} {code} {}",
        evolve_core::text::one_line(msg, 300)
    );
    match status {
        429 => ChannelError::RateLimited(Duration::from_secs(2)),
        401 | 403 => ChannelError::Unauthorized(format!(
            "{said} — check [channels.dingtalk] client_id and client_secret"
        )),
        s if s >= 500 => ChannelError::Unavailable(said),
        _ if code.contains("Throttling") || code == "130101" => {
            ChannelError::RateLimited(Duration::from_secs(2))
        }
        _ => ChannelError::Refused(said),
    }
}

impl Dingtalk {
    /// A client for `config`, its inbox in `store` (`None`: one that only sends); `None`
    /// when it has no secret.
    pub fn new(config: &DingtalkConfig, store: Option<Arc<Store>>) -> Option<Dingtalk> {
        let secret = config.secret.clone()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(30)))
            .tls_config(crate::tls::config())
            .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Some(Dingtalk {
            api: Api {
                base: config.base_url.clone(),
                id: config.id.clone(),
                secret,
                agent,
            },
            token: Arc::new(Mutex::new(None)),
            hooks: Arc::new(Mutex::new(HashMap::new())),
            store,
            link: None,
        })
    }

    /// The app access token of the robot API.
    fn token(&self) -> Result<Secret, ChannelError> {
        let mut held = self.token.lock().map_err(|_| {
            ChannelError::Unavailable("dingtalk: the token lock is poisoned".into())
        })?;
        if let Some((t, until)) = held.as_ref() {
            if Instant::now() < *until {
                return Ok(t.clone());
            }
        }
        let (status, v) = self.api.post(
            "/v1.0/oauth2/accessToken",
            None,
            &json!({"appKey": self.api.id, "appSecret": self.api.secret.expose()}),
        )?;
        let Some(t) = v.get("accessToken").and_then(Value::as_str) else {
            return Err(match failure(status, &v, "oauth2/accessToken") {
                ChannelError::Refused(m) => ChannelError::Unauthorized(format!(
                    "{m} — check [channels.dingtalk] client_id and client_secret"
                )),
                e => e,
            });
        };
        let life = v.get("expireIn").and_then(Value::as_u64).unwrap_or(7200);
        let t = Secret::new(t);
        *held = Some((
            t.clone(),
            Instant::now() + Duration::from_secs(life.saturating_sub(60).max(60)),
        ));
        Ok(t)
    }

    /// One stored frame as an [`Event`].
    fn event(&self, v: &Value) -> Option<Event> {
        if v.pointer("/headers/topic").and_then(Value::as_str) != Some(BOT_TOPIC) {
            return None;
        }
        let data: Value = serde_json::from_str(v.get("data")?.as_str()?).ok()?;
        let direct = data.get("conversationType").and_then(Value::as_str) == Some("1");
        let sender = data
            .get("senderStaffId")
            .or_else(|| data.get("senderId"))
            .and_then(Value::as_str)?
            .to_string();
        let chat = if direct {
            sender.clone()
        } else {
            data.get("conversationId")?.as_str()?.to_string()
        };
        if let (Some(hook), Some(until)) = (
            data.get("sessionWebhook").and_then(Value::as_str),
            data.get("sessionWebhookExpiredTime")
                .and_then(Value::as_i64),
        ) {
            if let Ok(mut hooks) = self.hooks.lock() {
                hooks.insert(chat.clone(), (hook.to_string(), until));
            }
        }
        let content = |field: &str| {
            data.pointer(&format!("/content/{field}"))
                .and_then(Value::as_str)
        };
        let (text, attachments) = match data.get("msgtype").and_then(Value::as_str) {
            Some("text") => (
                data.pointer("/text/content")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim()
                    .to_string(),
                Vec::new(),
            ),
            Some("picture") => {
                let code = content("downloadCode").or_else(|| content("pictureDownloadCode"))?;
                (
                    String::new(),
                    vec![Attachment::Image {
                        file: code.to_string(),
                    }],
                )
            }
            Some("file") => (
                String::new(),
                vec![Attachment::File {
                    file: content("downloadCode")?.to_string(),
                    name: content("fileName").unwrap_or("file").to_string(),
                }],
            ),
            Some("richText") => rich_text(data.pointer("/content/richText")?),
            // A voice note DingTalk recognised is the sender's words already; otherwise
            // its audio is fetched by its download code and transcribed.
            Some("audio") => (
                String::new(),
                vec![Attachment::Voice {
                    file: content("downloadCode").map(str::to_string),
                    heard: data
                        .pointer("/content/recognition")
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_string),
                }],
            ),
            _ => return None,
        };
        if text.is_empty() && attachments.is_empty() {
            return None;
        }
        Some(Event::Message(Message {
            chat,
            thread: None,
            chat_title: data
                .get("conversationTitle")
                .and_then(Value::as_str)
                .map(str::to_string),
            direct,
            sender: Sender {
                id: sender,
                name: data
                    .get("senderNick")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            },
            text,
            // In a group the robot only receives what @mentions it.
            mentioned: true,
            attachments,
        }))
    }
}

/// A rich-text message's parts: the text ones joined, the pictures as images.
fn rich_text(parts: &Value) -> (String, Vec<Attachment>) {
    let mut text = String::new();
    let mut images = Vec::new();
    for part in parts.as_array().into_iter().flatten() {
        if let Some(t) = part.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        let code = part
            .get("downloadCode")
            .or_else(|| part.get("pictureDownloadCode"))
            .and_then(Value::as_str);
        if let Some(code) =
            code.filter(|_| part.get("type").and_then(Value::as_str) == Some("picture"))
        {
            images.push(Attachment::Image {
                file: code.to_string(),
            });
        }
    }
    (text.trim().to_string(), images)
}

/// The Markdown message, with the words that answer a question under it.
fn markdown(text: &str, buttons: &[Button]) -> Value {
    let mut text = text.to_string();
    if !buttons.is_empty() {
        let words: Vec<&str> = buttons
            .iter()
            .filter_map(|b| b.data.rsplit(':').next())
            .collect();
        text.push_str(&format!(
            "\n\nReply **{}**. 回复 {}。",
            words.join("** / **"),
            words.join(" / ")
        ));
    }
    let title: String = text
        .lines()
        .next()
        .unwrap_or("Evolve")
        .chars()
        .take(20)
        .collect();
    json!({"title": title, "text": text})
}

impl Channel for Dingtalk {
    fn name(&self) -> &'static str {
        "dingtalk"
    }

    fn max_text(&self) -> usize {
        MAX_TEXT
    }

    fn edits(&self) -> bool {
        false
    }

    fn check(&mut self) -> Result<String, ChannelError> {
        self.token()?;
        Ok(format!("the robot app {}", self.api.id))
    }

    fn connect(&mut self) -> Result<String, ChannelError> {
        let who = self.check()?;
        let api = self.api.clone();
        link::start_once(&mut self.link, "dingtalk", self.store.as_ref(), || Wire {
            api,
        })?;
        Ok(who)
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
        let md = markdown(text, buttons);
        let now_ms = crate::clock::now() * 1000;
        let hook = self
            .hooks
            .lock()
            .ok()
            .and_then(|h| h.get(chat).cloned())
            .filter(|(_, until)| *until > now_ms + 60_000);
        let (status, v, what) = match hook {
            Some((url, _)) => {
                let (s, v) =
                    self.api
                        .post(&url, None, &json!({"msgtype": "markdown", "markdown": md}))?;
                (s, v, "sessionWebhook")
            }
            None => {
                let token = self.token()?;
                let param = md.to_string();
                if chat.starts_with("cid") {
                    let (s, v) = self.api.post(
                        "/v1.0/robot/groupMessages/send",
                        Some(&token),
                        &json!({"robotCode": self.api.id, "openConversationId": chat,
                                "msgKey": "sampleMarkdown", "msgParam": param}),
                    )?;
                    (s, v, "robot/groupMessages/send")
                } else {
                    let (s, v) = self.api.post(
                        "/v1.0/robot/oToMessages/batchSend",
                        Some(&token),
                        &json!({"robotCode": self.api.id, "userIds": [chat],
                                "msgKey": "sampleMarkdown", "msgParam": param}),
                    )?;
                    (s, v, "robot/oToMessages/batchSend")
                }
            }
        };
        let errcode = v.get("errcode").and_then(Value::as_i64).unwrap_or(0);
        if status >= 300 || errcode != 0 {
            return Err(failure(status, &v, what));
        }
        let id = v
            .get("processQueryKey")
            .and_then(Value::as_str)
            .unwrap_or("sent");
        Ok(Sent(id.to_string()))
    }

    fn edit(
        &mut self,
        chat: &str,
        _message: &Sent,
        text: &str,
        buttons: &[Button],
    ) -> Result<(), ChannelError> {
        // DingTalk cannot edit a robot's message: what would replace it comes anew.
        self.send(chat, text, buttons).map(|_| ())
    }

    fn answer_press(&mut self, _press: &str, _text: &str) -> Result<(), ChannelError> {
        Ok(())
    }

    fn fetch(&mut self, file: &str) -> Result<Vec<u8>, ChannelError> {
        // The message's download code is traded for a short-lived address.
        let token = self.token()?;
        let (status, v) = self.api.post(
            "/v1.0/robot/messageFiles/download",
            Some(&token),
            &json!({"downloadCode": file, "robotCode": self.api.id}),
        )?;
        let Some(url) = v.get("downloadUrl").and_then(Value::as_str) else {
            return Err(failure(status, &v, "robot/messageFiles/download"));
        };
        let resp = self.api.agent.get(url).call().map_err(|e| {
            ChannelError::Unavailable(format!("cannot download a DingTalk file: {e}"))
        })?;
        super::download::body(resp, "DingTalk")
    }
}

/// The connection's side: the gateway, the frames, their acknowledgements.
struct Wire {
    api: Api,
}

impl Protocol for Wire {
    fn open(&mut self) -> Result<WebSocket, ChannelError> {
        let (status, v) = self.api.post(
            "/v1.0/gateway/connections/open",
            None,
            &json!({
                "clientId": self.api.id,
                "clientSecret": self.api.secret.expose(),
                "subscriptions": [
                    {"type": "EVENT", "topic": "*"},
                    {"type": "CALLBACK", "topic": BOT_TOPIC},
                ],
                "ua": concat!("evolve/", env!("CARGO_PKG_VERSION")),
            }),
        )?;
        let endpoint = v.get("endpoint").and_then(Value::as_str);
        let ticket = v.get("ticket").and_then(Value::as_str);
        let (Some(endpoint), Some(ticket)) = (endpoint, ticket) else {
            return Err(match failure(status, &v, "gateway/connections/open") {
                ChannelError::Refused(m) => ChannelError::Unauthorized(format!(
                    "{m} — check client_id and client_secret, and that the robot receives \
                     messages in Stream mode"
                )),
                e => e,
            });
        };
        let ticket: String =
            percent_encoding::utf8_percent_encode(ticket, percent_encoding::NON_ALPHANUMERIC)
                .collect();
        let sep = if endpoint.contains('?') { '&' } else { '?' };
        ws::connect(
            &format!("{endpoint}{sep}ticket={ticket}"),
            &[],
            Duration::from_secs(15),
        )
        .map_err(|e| {
            ChannelError::Unavailable(format!("dingtalk: cannot open the long connection: {e}"))
        })
    }

    fn keepalive(&mut self, _now: Instant) -> Option<ws::Message> {
        // The platform pings (a SYSTEM frame, answered below); WebSocket pings are
        // answered by the client itself.
        None
    }

    fn frame(&mut self, message: ws::Message) -> Frame {
        let ws::Message::Text(text) = message else {
            return Frame::default();
        };
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            log::warn!(
                "dingtalk: a frame that is not JSON ({} bytes) is skipped",
                text.len()
            );
            return Frame::default();
        };
        let id = v
            .pointer("/headers/messageId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let topic = v
            .pointer("/headers/topic")
            .and_then(Value::as_str)
            .unwrap_or("");
        let ack = |data: Value| {
            ws::Message::Text(
                json!({
                    "code": 200,
                    "headers": {"contentType": "application/json", "messageId": id},
                    "message": "OK",
                    "data": data.to_string(),
                })
                .to_string(),
            )
        };
        let mut out = Frame::default();
        match v.get("type").and_then(Value::as_str) {
            Some("SYSTEM") if topic == "ping" => {
                let data: Value = v
                    .get("data")
                    .and_then(Value::as_str)
                    .and_then(|d| serde_json::from_str(d).ok())
                    .unwrap_or(json!({}));
                out.reply = Some(ack(data));
            }
            Some("SYSTEM") if topic == "disconnect" => out.reconnect = true,
            Some("CALLBACK") => {
                // The robot message's own id, when it has one: the frame of a message
                // pushed again may carry a new frame id.
                let msg_id = v
                    .get("data")
                    .and_then(Value::as_str)
                    .and_then(|d| serde_json::from_str::<Value>(d).ok())
                    .and_then(|d| d.get("msgId").and_then(Value::as_str).map(str::to_string))
                    .filter(|m| !m.is_empty())
                    .map_or_else(|| id.clone(), |m| format!("msg:{m}"));
                out.events.push((msg_id, v.clone()));
                out.reply = Some(ack(json!({"response": null})));
            }
            Some("EVENT") => {
                out.reply = Some(ack(json!({"status": "SUCCESS", "message": "success"})));
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Dingtalk {
        Dingtalk::new(
            &DingtalkConfig {
                id: "ding_app".into(),
                secret: Some(Secret::new("SECRET")),
                problem: None,
                base_url: "http://127.0.0.1:9".into(),
                owner: None,
                enabled: true,
            },
            None,
        )
        .expect("a client")
    }

    fn frame(kind: &str, topic: &str, data: Value) -> String {
        json!({"specVersion": "1.0", "type": kind,
               "headers": {"messageId": "m1", "topic": topic, "contentType": "application/json"},
               "data": data.to_string()})
        .to_string()
    }

    #[test]
    fn pings_are_answered_messages_stored_and_acknowledged_and_disconnect_moves() {
        let mut wire = Wire { api: client().api };
        let ping = wire.frame(ws::Message::Text(frame(
            "SYSTEM",
            "ping",
            json!({"opaque": "x"}),
        )));
        let Some(ws::Message::Text(reply)) = ping.reply else {
            panic!("a pong")
        };
        let reply: Value = serde_json::from_str(&reply).expect("JSON");
        assert_eq!(
            (reply["code"].clone(), reply["headers"]["messageId"].clone()),
            (json!(200), json!("m1"))
        );
        assert!(reply["data"].as_str().unwrap_or("").contains("opaque"));
        let msg = wire.frame(ws::Message::Text(frame(
            "CALLBACK",
            BOT_TOPIC,
            json!({"text": {"content": "hi"}}),
        )));
        assert_eq!(msg.events.len(), 1);
        assert!(msg.reply.is_some());
        let bye = wire.frame(ws::Message::Text(frame("SYSTEM", "disconnect", json!({}))));
        assert!(bye.reconnect && bye.events.is_empty());
        let junk = wire.frame(ws::Message::Text("<html>".into()));
        assert!(junk.events.is_empty() && junk.reply.is_none());
    }

    #[test]
    fn messages_become_events_with_the_person_as_the_direct_chat() {
        let d = client();
        let data = |kind: &str| {
            json!({"conversationId": "cidG1", "conversationType": kind,
                   "senderStaffId": "staff7", "senderNick": "Ann",
                   "msgtype": "text", "text": {"content": " what time "},
                   "sessionWebhook": "http://127.0.0.1:9/hook", "sessionWebhookExpiredTime": 1})
        };
        let stored = |d: Value| json!({"headers": {"topic": BOT_TOPIC}, "data": d.to_string()});
        let Some(Event::Message(m)) = d.event(&stored(data("1"))) else {
            panic!("a message")
        };
        assert_eq!(
            (m.chat.as_str(), m.direct, m.text.as_str()),
            ("staff7", true, "what time")
        );
        let Some(Event::Message(g)) = d.event(&stored(data("2"))) else {
            panic!("a message")
        };
        assert_eq!(
            (g.chat.as_str(), g.direct, g.mentioned),
            ("cidG1", false, true)
        );
        let other = json!({"headers": {"topic": "/v1.0/other"}, "data": "{}"});
        assert!(d.event(&other).is_none());
    }

    #[test]
    fn a_question_says_which_words_answer_it() {
        let buttons = [
            Button {
                label: "✅ yes".into(),
                data: "a:c1:yes".into(),
            },
            Button {
                label: "❌ no".into(),
                data: "a:c1:no".into(),
            },
        ];
        let md = markdown("Run `ls`?", &buttons);
        let text = md["text"].as_str().unwrap_or("");
        assert!(text.contains("Reply **yes** / **no**"), "{text}");
        assert_eq!(md["title"], "Run `ls`?");
    }
}
