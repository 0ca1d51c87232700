//! How Feishu's events map to [`Event`]s: `im.message.receive_v1` (a `p2p` chat is
//! direct; in a group the bot is addressed by an @mention of it; a message in a thread
//! gets the thread's session and its answers go into the thread; text, rich text,
//! images, files and audio) and `card.action.trigger` (a button of a card).

use serde_json::Value;

use super::Feishu;
use crate::channels::{Attachment, Event, Message, Press, Sender};

impl Feishu {
    /// One stored event as an [`Event`]; `None` for what the agent does not answer.
    pub(super) fn event(&self, v: &Value) -> Option<Event> {
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
                heard: None,
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
