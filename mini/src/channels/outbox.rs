//! Deliveries: a scheduled task's answer for `PLATFORM:CHAT` waits in a durable outbox
//! in the store ([`enqueue`]) and leaves it only once the platform took it, so a
//! restart, an outage or a 429 delays a message and never loses or doubles it.

use serde::{Deserialize, Serialize};

use super::driver::Driver;
use super::{format, ChannelError};
use crate::clock::now;
use crate::store::Store;

/// A message waiting in the outbox (a scheduled task's answer for a chat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub channel: String,
    pub chat: String,
    pub text: String,
    pub at: i64,
}

/// A delivery target as a task names it: `telegram:CHAT` (a chat id, negative for
/// groups), `feishu:CHAT` (an `oc_…` chat id) or `dingtalk:CHAT` (a conversation id).
/// Returned in its normal form.
pub fn parse_target(text: &str) -> Result<String, String> {
    let text = text.trim();
    let (channel, chat) = text.split_once(':').ok_or_else(|| {
        format!(
            "{text:?} is not a chat: write telegram:CHAT_ID, feishu:CHAT_ID or \
             dingtalk:CHAT_ID (`evolve channels list` shows ids)"
        )
    })?;
    let channel = channel.trim().to_ascii_lowercase();
    let chat = chat.trim();
    match channel.as_str() {
        "telegram" => {
            let id: i64 = chat.parse().map_err(|_| {
                format!("{chat:?} is not a Telegram chat id (a number, negative for groups)")
            })?;
            Ok(format!("telegram:{id}"))
        }
        "feishu" | "dingtalk" => {
            // Platform ids are ASCII letters, digits and a few marks (`oc_…`, `cid…==`).
            let ok = !chat.is_empty()
                && chat.len() <= 200
                && chat
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-=+$.".contains(c));
            if !ok {
                return Err(format!("{chat:?} is not a {channel} chat id"));
            }
            Ok(format!("{channel}:{chat}"))
        }
        _ => Err(format!(
            "{channel}: unknown channel — this build has telegram, feishu and dingtalk"
        )),
    }
}

/// Puts `text` for `target` (`PLATFORM:CHAT`) in the outbox, durably: the channel sends
/// it when it can (after a restart, an outage or a 429) and only then removes it.
pub fn enqueue(store: &Store, target: &str, text: &str) -> Result<(), String> {
    let target = parse_target(target)?;
    let (channel, chat) = target.split_once(':').unwrap_or(("telegram", ""));
    let at = now();
    // Time first, so the outbox reads oldest first; a counter keeps same-second ones apart.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let k = format!("outbox/{at:012}-{}-{n:06}", std::process::id());
    let d = Delivery {
        channel: channel.to_string(),
        chat: chat.to_string(),
        text: text.to_string(),
        at,
    };
    store.channel_put(&k, &d).map_err(|e| e.to_string())
}

impl Driver {
    /// Sends what waits in the outbox for this channel, oldest first; each is removed
    /// once sent. A platform that cannot be reached leaves the rest for the next round.
    pub(super) fn drain_outbox(&mut self) {
        let waiting: Vec<(String, Delivery)> = match self.store().store.channel_scan("outbox/") {
            Ok(w) => w,
            Err(e) => {
                log::warn!("{}: cannot read the outbox: {e}", self.name);
                return;
            }
        };
        let name = self.name;
        for (k, d) in waiting.into_iter().filter(|(_, d)| d.channel == name) {
            if self.stopping() {
                return;
            }
            let pieces = format::split(&d.text, self.ch.max_text());
            let mut result = Ok(());
            for piece in &pieces {
                result = self
                    .retry("send", |ch| ch.send(&d.chat, piece, &[]))
                    .map(|_| ());
                if result.is_err() {
                    break;
                }
            }
            match result {
                Ok(()) => {
                    log::info!(
                        "{}: delivered a task's answer to chat {}",
                        self.name,
                        d.chat
                    );
                }
                Err(ChannelError::Refused(e)) => {
                    // The chat will not take it (the bot was blocked, the chat is gone).
                    log::warn!(
                        "{}: chat {} refused a task's answer, which is dropped: {e}",
                        self.name,
                        d.chat
                    );
                }
                Err(e) => {
                    log::warn!(
                        "{}: a task's answer for chat {} waits in the outbox: {e}",
                        self.name,
                        d.chat
                    );
                    return;
                }
            }
            if let Err(e) = self.store().store.channel_remove(&k) {
                log::warn!(
                    "{}: cannot remove a sent message from the outbox: {e}",
                    self.name
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_targets_name_a_chat_of_a_known_platform() {
        let cases = [
            ("telegram:42", Ok("telegram:42")),
            (" Telegram:-1001234 ", Ok("telegram:-1001234")),
            ("telegram:@ann", Err("not a Telegram chat id")),
            ("Feishu:oc_5e2a", Ok("feishu:oc_5e2a")),
            ("dingtalk:cidAbC+9==", Ok("dingtalk:cidAbC+9==")),
            ("feishu:oc 1/../x", Err("not a feishu chat id")),
            ("slack:C1", Err("unknown channel")),
            ("42", Err("not a chat")),
        ];
        for (text, want) in cases {
            match (parse_target(text), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, w, "{text}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{text}: {e}"),
                (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
