//! The long connection's side of Feishu: `POST /callback/ws/endpoint` with the app's id
//! and secret gives a `wss://` address; frames on it are protobuf `Frame`s ([`super::pb`]).
//! A data frame carries an event's JSON (cut in parts when large: `sum`/`seq` headers);
//! it is answered with the same frame whose payload is `{"code":200}` once the event is
//! stored ([`crate::channels::link`]). The client pings (a control frame) every
//! `PingInterval` the endpoint gives.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use super::api::{failure, Api};
use super::pb;
use crate::channels::link::{Frame, Protocol};
use crate::channels::ChannelError;
use crate::ws::{self, WebSocket};

/// The ping interval until the endpoint says otherwise (the official SDKs' default).
pub(super) const PING_EVERY: Duration = Duration::from_secs(120);

/// Frame methods: control (ping, pong) and data (events).
pub(super) const METHOD_CONTROL: i64 = 0;
pub(super) const METHOD_DATA: i64 = 1;

/// The connection's side: endpoint, frames, pings.
pub(super) struct Wire {
    pub(super) api: Api,
    /// `service_id` of the connection's address: pings carry it.
    pub(super) service: i64,
    pub(super) ping_every: Duration,
    pub(super) last_ping: Option<Instant>,
    /// Parts of events cut in several frames, by message id.
    pub(super) parts: HashMap<String, Vec<Option<Vec<u8>>>>,
}

impl Wire {
    pub(super) fn new(api: Api) -> Wire {
        Wire {
            api,
            service: 0,
            ping_every: PING_EVERY,
            last_ping: None,
            parts: HashMap::new(),
        }
    }
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
