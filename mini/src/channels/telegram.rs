//! Telegram over the Bot API: `getUpdates` long polling (no public address needed),
//! `sendMessage` / `editMessageText` with `parse_mode: HTML`, inline-keyboard buttons and
//! `answerCallbackQuery`, `getFile` and the file download.
//!
//! Decides how Telegram's shapes map to [`Event`]s (a private chat is direct; in a group
//! the bot is addressed by an `@mention` of its username, a reply to one of its
//! messages, or a `/command@bot`), and what each answer of the API means: `ok: false`
//! with 429 is [`ChannelError::RateLimited`] for `parameters.retry_after` seconds; 401
//! and 404 (a wrong or revoked token) are [`ChannelError::Unauthorized`]; 5xx, a network
//! failure or a body that is not the API's JSON are [`ChannelError::Unavailable`];
//! other 4xx are [`ChannelError::Refused`]. The token is part of every request's path;
//! it is never in a message this module writes (ureq's errors are scrubbed of it).

use std::time::Duration;

use serde_json::{json, Value};

use super::{Attachment, Button, Channel, ChannelError, Event, Message, Press, Sender, Sent};
use crate::config::TelegramConfig;
use crate::secret::Secret;

/// Telegram's limit for one message's text (after entity parsing), in UTF-16 units.
pub const MAX_TEXT: usize = 4096;

/// Files larger than this are not fetched (the Bot API's own download limit is 20 MB).
const MAX_FILE: u64 = 20 * 1024 * 1024;

/// The Bot API client.
#[derive(Clone)]
pub struct Telegram {
    base: String,
    token: Secret,
    poll: Duration,
    agent: ureq::Agent,
    /// The bot's `@username` (from `getMe`), lowercased, to tell when it is mentioned.
    username: Option<String>,
    /// The bot's own user id: a reply to its message addresses it.
    bot_id: Option<i64>,
}

impl Telegram {
    /// A client for `config`; `None` when it has no token (the config says why).
    pub fn new(config: &TelegramConfig) -> Option<Telegram> {
        let token = config.token.clone()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(config.poll_secs + 30)))
            .tls_config(crate::tls::config())
            .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Some(Telegram {
            base: config.base_url.clone(),
            token,
            poll: Duration::from_secs(config.poll_secs),
            agent,
            username: None,
            bot_id: None,
        })
    }

    /// A message that never carries the token.
    fn scrub(&self, text: String) -> String {
        text.replace(self.token.expose(), "<token>")
    }

    /// Calls `method` with a JSON body; the API's `result`.
    fn call(&self, method: &str, body: &Value) -> Result<Value, ChannelError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token.expose());
        let sent = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.to_string());
        let mut resp = match sent {
            Ok(r) => r,
            Err(e) => {
                return Err(ChannelError::Unavailable(self.scrub(format!(
                    "cannot reach the Telegram Bot API at {} ({method}): {e}",
                    crate::secret::display_url(&self.base)
                ))))
            }
        };
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(8 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| {
                ChannelError::Unavailable(self.scrub(format!(
                    "the Telegram Bot API's answer to {method} could not be read: {e}"
                )))
            })?;
        self.result(method, status, &text)
    }

    /// What an answer of the API means (see the module docs).
    fn result(&self, method: &str, status: u16, text: &str) -> Result<Value, ChannelError> {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return Err(ChannelError::Unavailable(format!(
                "the Telegram Bot API answered {method} with HTTP {status} and a body that \
                 is not its JSON ({} bytes) — is base_url a Bot API server?",
                text.len()
            )));
        };
        if v.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(v.get("result").cloned().unwrap_or(Value::Null));
        }
        let code = v
            .get("error_code")
            .and_then(Value::as_u64)
            .map_or(status, |c| c as u16);
        let said = v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("no description");
        let said = self.scrub(evolve_core::text::one_line(said, 300));
        Err(match code {
            429 => {
                let secs = v
                    .pointer("/parameters/retry_after")
                    .and_then(Value::as_u64)
                    .unwrap_or(1);
                ChannelError::RateLimited(Duration::from_secs(secs.clamp(1, 3600)))
            }
            401 | 404 => ChannelError::Unauthorized(format!(
                "the Telegram Bot API refused the token ({code} {said}) — check \
                 [channels.telegram] token with @BotFather"
            )),
            c if c >= 500 || c == 409 => {
                ChannelError::Unavailable(format!("Telegram {method}: {code} {said}"))
            }
            _ => ChannelError::Refused(format!("Telegram {method}: {code} {said}")),
        })
    }

    /// `getUpdates` from the update after `after`, waiting up to `wait` for one.
    fn updates(
        &self,
        after: u64,
        wait: Duration,
    ) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
        let mut body = json!({
            "timeout": wait.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        if after > 0 {
            body["offset"] = json!(after + 1);
        }
        let result = self.call("getUpdates", &body)?;
        let Some(list) = result.as_array() else {
            return Err(ChannelError::Unavailable(
                "Telegram getUpdates: the result is not a list of updates".into(),
            ));
        };
        let mut out = Vec::new();
        for u in list {
            let Some(id) = u.get("update_id").and_then(Value::as_u64) else {
                log::warn!("telegram: an update without an update_id is skipped");
                continue;
            };
            if id > after {
                out.push((id, self.event(u)));
            }
        }
        out.sort_by_key(|(id, _)| *id);
        Ok(out)
    }

    fn keyboard(buttons: &[Button]) -> Value {
        let row: Vec<Value> = buttons
            .iter()
            .map(|b| json!({"text": b.label, "callback_data": b.data}))
            .collect();
        json!({ "inline_keyboard": [row] })
    }

    /// One update as an event; `None` for kinds the agent does not answer (edits,
    /// channel posts, a message without text or files).
    fn event(&self, u: &Value) -> Option<Event> {
        if let Some(q) = u.get("callback_query") {
            let from = q.get("from")?;
            let msg = q.get("message");
            let chat = msg
                .and_then(|m| m.pointer("/chat/id"))
                .and_then(Value::as_i64)
                .or_else(|| from.get("id").and_then(Value::as_i64))?;
            return Some(Event::Press(Press {
                id: q.get("id")?.as_str()?.to_string(),
                chat: match msg.and_then(topic) {
                    Some(t) => format!("{chat}/{t}"),
                    None => chat.to_string(),
                },
                message: msg
                    .and_then(|m| m.get("message_id"))
                    .and_then(Value::as_i64)
                    .map(|m| m.to_string()),
                sender: sender(from)?,
                data: q.get("data").and_then(Value::as_str)?.to_string(),
            }));
        }
        let m = u.get("message")?;
        let chat = m.get("chat")?;
        let kind = chat.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "channel" {
            return None;
        }
        let from = m.get("from")?;
        if from.get("is_bot").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let text = m
            .get("text")
            .or_else(|| m.get("caption"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut attachments = Vec::new();
        if let Some(sizes) = m.get("photo").and_then(Value::as_array) {
            // The sizes come smallest first; the largest is the last.
            if let Some(id) = sizes
                .last()
                .and_then(|p| p.get("file_id"))
                .and_then(Value::as_str)
            {
                attachments.push(Attachment::Image { file: id.into() });
            }
        }
        if let Some(d) = m.get("document") {
            if let Some(id) = d.get("file_id").and_then(Value::as_str) {
                attachments.push(Attachment::File {
                    file: id.into(),
                    name: d
                        .get("file_name")
                        .and_then(Value::as_str)
                        .unwrap_or("file")
                        .to_string(),
                });
            }
        }
        if let Some(v) = m.get("voice").or_else(|| m.get("audio")) {
            attachments.push(Attachment::Voice {
                file: v.get("file_id").and_then(Value::as_str).map(str::to_string),
                heard: None,
            });
        }
        if text.trim().is_empty() && attachments.is_empty() {
            return None;
        }
        let direct = kind == "private";
        let (mentioned, text) = self.addressed(m, &text);
        Some(Event::Message(Message {
            chat: chat.get("id")?.as_i64()?.to_string(),
            thread: topic(m),
            chat_title: chat
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_string),
            direct,
            sender: sender(from)?,
            text,
            mentioned: direct || mentioned,
            attachments,
        }))
    }

    /// Whether a group message addresses the bot, and its text without the mention.
    fn addressed(&self, m: &Value, text: &str) -> (bool, String) {
        let replied_to_bot = m
            .pointer("/reply_to_message/from/id")
            .and_then(Value::as_i64)
            .is_some_and(|id| Some(id) == self.bot_id);
        let Some(name) = &self.username else {
            return (replied_to_bot, text.to_string());
        };
        let at = format!("@{name}");
        let lower = text.to_lowercase();
        if let Some(pos) = lower.find(&at) {
            // Lowercasing keeps ASCII byte offsets; usernames are ASCII.
            let end = pos + at.len();
            if text.is_char_boundary(pos) && text.is_char_boundary(end) {
                let rest = format!("{}{}", &text[..pos], &text[end..]);
                return (true, rest.trim().to_string());
            }
        }
        (replied_to_bot, text.to_string())
    }
}

/// The forum topic a message is in (`message_thread_id` of a topic message).
fn topic(m: &Value) -> Option<String> {
    if m.get("is_topic_message").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    m.get("message_thread_id")
        .and_then(Value::as_i64)
        .map(|t| t.to_string())
}

/// `CHAT` or `CHAT/THREAD` as the chat id and the topic to post in.
fn split_place(place: &str) -> (&str, Option<i64>) {
    match place.split_once('/') {
        Some((chat, t)) => (chat, t.parse().ok()),
        None => (place, None),
    }
}

fn sender(from: &Value) -> Option<Sender> {
    let id = from.get("id")?.as_i64()?;
    let first = from.get("first_name").and_then(Value::as_str).unwrap_or("");
    let name = match from.get("username").and_then(Value::as_str) {
        Some(u) => format!("{first} (@{u})"),
        None => first.to_string(),
    };
    Some(Sender {
        id: id.to_string(),
        name: evolve_core::text::one_line(name.trim(), 80),
    })
}

impl Channel for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn max_text(&self) -> usize {
        MAX_TEXT
    }

    fn numbering(&self) -> Option<String> {
        // Update ids are the bot's: its id is the token's part before the `:`.
        let bot = self.token.expose().split(':').next().unwrap_or("");
        Some(format!("{}#{bot}", crate::secret::display_url(&self.base)))
    }

    fn connect(&mut self) -> Result<String, ChannelError> {
        let me = self.call("getMe", &json!({}))?;
        self.username = me
            .get("username")
            .and_then(Value::as_str)
            .map(str::to_lowercase);
        self.bot_id = me.get("id").and_then(Value::as_i64);
        Ok(format!(
            "@{}",
            self.username
                .as_deref()
                .unwrap_or("(a bot without a username)")
        ))
    }

    fn next(&mut self, after: u64) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
        self.updates(after, self.poll)
    }

    fn watcher(&self) -> Option<Box<dyn Channel>> {
        Some(Box::new(self.clone()))
    }

    fn peek(&mut self, after: u64) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
        // The offset is the acknowledged one's successor: nothing new is confirmed.
        self.updates(after, Duration::ZERO)
    }

    fn send(&mut self, chat: &str, text: &str, buttons: &[Button]) -> Result<Sent, ChannelError> {
        let (chat, topic) = split_place(chat);
        let mut body = json!({
            "chat_id": chat,
            "text": super::format::telegram_html(text),
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": true},
        });
        if let Some(t) = topic {
            body["message_thread_id"] = json!(t);
        }
        if !buttons.is_empty() {
            body["reply_markup"] = Self::keyboard(buttons);
        }
        let m = self.call("sendMessage", &body)?;
        let id = m.get("message_id").and_then(Value::as_i64).ok_or_else(|| {
            ChannelError::Unavailable("Telegram sendMessage: no message_id in the result".into())
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
        let mut body = json!({
            "chat_id": split_place(chat).0,
            "message_id": message.0.parse::<i64>().unwrap_or(0),
            "text": super::format::telegram_html(text),
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": true},
        });
        body["reply_markup"] = Self::keyboard(buttons);
        match self.call("editMessageText", &body) {
            // The same text again (a repeated final edit after a restart) is no failure.
            Err(ChannelError::Refused(m)) if m.contains("not modified") => Ok(()),
            other => other.map(|_| ()),
        }
    }

    fn answer_press(&mut self, press: &str, text: &str) -> Result<(), ChannelError> {
        self.call(
            "answerCallbackQuery",
            &json!({"callback_query_id": press, "text": text}),
        )
        .map(|_| ())
    }

    fn fetch(&mut self, file: &str) -> Result<Vec<u8>, ChannelError> {
        let f = self.call("getFile", &json!({ "file_id": file }))?;
        if f.get("file_size").and_then(Value::as_u64).unwrap_or(0) > MAX_FILE {
            return Err(ChannelError::Refused(
                "the file is larger than the 20 MB a bot may download".into(),
            ));
        }
        let Some(path) = f.get("file_path").and_then(Value::as_str) else {
            return Err(ChannelError::Refused(
                "Telegram getFile: the file cannot be downloaded (no file_path)".into(),
            ));
        };
        let url = format!("{}/file/bot{}/{path}", self.base, self.token.expose());
        let mut resp = self.agent.get(&url).call().map_err(|e| {
            ChannelError::Unavailable(self.scrub(format!("cannot download a Telegram file: {e}")))
        })?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(ChannelError::Unavailable(format!(
                "the Telegram file download answered HTTP {status}"
            )));
        }
        resp.body_mut()
            .with_config()
            .limit(MAX_FILE)
            .read_to_vec()
            .map_err(|e| {
                ChannelError::Unavailable(self.scrub(format!("cannot read a Telegram file: {e}")))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Telegram {
        let mut t = Telegram::new(&TelegramConfig {
            token: Some(Secret::new("123:SECRET")),
            problem: None,
            base_url: "http://127.0.0.1:9".into(),
            owner: None,
            enabled: true,
            poll_secs: 1,
        })
        .expect("a client");
        t.username = Some("evolvebot".into());
        t.bot_id = Some(99);
        t
    }

    #[test]
    fn each_answer_of_the_api_means_one_kind_of_failure() {
        let t = client();
        let ok = t.result(
            "sendMessage",
            200,
            r#"{"ok":true,"result":{"message_id":5}}"#,
        );
        assert_eq!(ok.ok(), Some(json!({"message_id": 5})));
        let cases: [(u16, &str, &str); 6] = [
            (
                429,
                r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#,
                "RateLimited(7s)",
            ),
            (
                401,
                r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#,
                "Unauthorized",
            ),
            (
                502,
                r#"{"ok":false,"error_code":502,"description":"Bad Gateway"}"#,
                "Unavailable",
            ),
            (200, "<html>proxy</html>", "Unavailable"),
            (
                400,
                r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found 123:SECRET"}"#,
                "Refused",
            ),
            (
                409,
                r#"{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}"#,
                "Unavailable",
            ),
        ];
        for (status, body, kind) in cases {
            let e = t.result("m", status, body).expect_err(body);
            let shown = format!("{e:?}");
            assert!(
                shown.starts_with(kind.split('(').next().unwrap()),
                "{shown}"
            );
            if kind == "RateLimited(7s)" {
                assert!(matches!(e, ChannelError::RateLimited(d) if d.as_secs() == 7));
            }
            assert!(!shown.contains("SECRET"), "the token leaked: {shown}");
        }
    }

    #[test]
    fn updates_become_events_and_groups_need_a_mention() {
        let t = client();
        let private = json!({"update_id": 1, "message": {"message_id": 1,
            "from": {"id": 7, "is_bot": false, "first_name": "Ann", "username": "ann"},
            "chat": {"id": 7, "type": "private"}, "date": 0, "text": "hi"}});
        let Some(Event::Message(m)) = t.event(&private) else {
            panic!("a message")
        };
        assert!(m.direct && m.mentioned);
        assert_eq!((m.chat.as_str(), m.sender.id.as_str()), ("7", "7"));
        assert_eq!(m.sender.name, "Ann (@ann)");
        let group = |text: &str, reply: Option<i64>| {
            let mut v = json!({"update_id": 2, "message": {"message_id": 2,
                "from": {"id": 8, "is_bot": false, "first_name": "Bo"},
                "chat": {"id": -100, "type": "supergroup", "title": "Team"},
                "date": 0, "text": text}});
            if let Some(id) = reply {
                v["message"]["reply_to_message"] = json!({"message_id": 1, "from": {"id": id}});
            }
            match t.event(&v) {
                Some(Event::Message(m)) => (m.mentioned, m.text),
                _ => panic!("a message"),
            }
        };
        assert_eq!(group("hello all", None), (false, "hello all".into()));
        assert_eq!(
            group("@EvolveBot what time", None),
            (true, "what time".into())
        );
        assert_eq!(group("thanks", Some(99)), (true, "thanks".into()));
        assert_eq!(group("thanks", Some(5)), (false, "thanks".into()));
        let press = json!({"update_id": 3, "callback_query": {"id": "cb1",
            "from": {"id": 7, "is_bot": false, "first_name": "Ann"},
            "message": {"message_id": 9, "chat": {"id": 7, "type": "private"}, "date": 0},
            "data": "a:c1:yes"}});
        let Some(Event::Press(p)) = t.event(&press) else {
            panic!("a press")
        };
        assert_eq!(
            (p.id.as_str(), p.chat.as_str(), p.data.as_str()),
            ("cb1", "7", "a:c1:yes")
        );
        // A forum topic is a place of its own; a plain reply in a group is not.
        let topic = json!({"update_id": 5, "message": {"message_id": 3,
            "from": {"id": 7, "is_bot": false, "first_name": "Ann"},
            "chat": {"id": -100, "type": "supergroup", "is_forum": true},
            "message_thread_id": 42, "is_topic_message": true,
            "date": 0, "text": "@evolvebot hi"}});
        let Some(Event::Message(m)) = t.event(&topic) else {
            panic!("a message")
        };
        assert_eq!(m.place(), "-100/42");
        assert_eq!(split_place(&m.place()), ("-100", Some(42)));
        let mut plain = topic.clone();
        plain["message"]["is_topic_message"] = json!(false);
        let Some(Event::Message(m)) = t.event(&plain) else {
            panic!("a message")
        };
        assert_eq!(m.place(), "-100");
        let edited = json!({"update_id": 4, "edited_message": {"message_id": 1}});
        assert!(t.event(&edited).is_none());
    }
}
