//! Feishu and Lark (the same platform at `open.feishu.cn` and `open.larksuite.com`): the
//! long-connection event mode, so no public address is needed, and the `im/v1` message
//! API. One concept a file: the HTTP API and its failures ([`api`]), the connection
//! ([`wire`]) and its protobuf frames ([`pb`]), events read ([`event`]), the answer's
//! card ([`card`]). This file is the client: the tenant token kept, and the
//! [`Channel`] a driver runs — messages sent as cards and `PATCH`ed while an answer
//! streams, into a thread when the message was in one; files downloaded by message
//! and key. An expired tenant token is fetched again once.

mod api;
mod card;
mod event;
mod pb;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use self::api::{failure, Api};
use self::card::card;
use self::wire::Wire;
use super::link::{self, Link};
use super::{Button, Channel, ChannelError, Event, Sent};
use crate::config::FeishuConfig;
use crate::secret::Secret;
use crate::store::Store;

/// One card's Markdown, in UTF-16 units: a card's request is at most 30 KB, and a
/// Chinese character takes three bytes of it.
pub const MAX_TEXT: usize = 7000;

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
        link::start_once(&mut self.link, "feishu", self.store.as_ref(), || {
            Wire::new(api)
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
        let content = card(text, buttons, chat);
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
        let content = card(text, buttons, chat);
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

#[cfg(test)]
mod tests;
