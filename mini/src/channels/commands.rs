//! The chat's commands: `/new`, `/stop`, `/sessions`, `/permissions`, `/memory`,
//! `/help` (and `/start`), read with or without the bot's name (`/new@EvolveBot`).

use evolve_core::provenance::Source;

use super::driver::Driver;
#[cfg(test)]
use super::slash::command;
use super::{key, Message};

const HELP: &str = "I am your Evolve agent. Write to me as in `evolve chat`.\n\
    /new — start a new session\n\
    /sessions — the sessions of this chat\n\
    /stop — refuse the call waiting for your answer\n\
    /permissions — what this session may do without asking\n\
    /memory — what I remember\n\
    /help — this list\n\n\
    我是你的 Evolve 助手，像在 `evolve chat` 里一样直接说话即可。\n\
    /new 新会话 · /sessions 会话列表 · /stop 拒绝等待中的调用 · /permissions 权限 · /memory 记忆";

impl Driver {
    pub(super) fn on_command(&mut self, seq: u64, m: &Message, name: &str) {
        let rt = self.store();
        let chat = m.place();
        let reply = match name {
            "new" => {
                let _ = rt
                    .store
                    .channel_remove(&key(self.name, &format!("chat/{chat}")));
                "A new session starts with your next message. 下一条消息将开始新会话。".to_string()
            }
            "stop" if self.stopped_by.load(std::sync::atomic::Ordering::SeqCst) == seq => {
                "Stopped. 已停止。".to_string()
            }
            "stop" => {
                let parked = self
                    .current_session(&chat)
                    .and_then(|sid| rt.store.parked(&sid).ok().flatten().map(|_| sid));
                if parked.is_some() {
                    // Refusing is an answer: the turn goes on without the call.
                    self.turn(seq, &chat, "no", Source::Person, &[]);
                    return;
                }
                "Nothing is waiting or running. 没有正在进行的操作。".to_string()
            }
            "sessions" => {
                let current = self.current_session(&chat);
                let mine = format!("{}:{chat}", self.name);
                let list: Vec<String> = rt
                    .store
                    .sessions()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|s| s.channel.as_deref() == Some(mine.as_str()))
                    .map(|s| {
                        let mark = if current.as_deref() == Some(s.id.as_str()) {
                            "▶ "
                        } else {
                            "• "
                        };
                        format!("{mark}{} — {} ({} turns)", s.id, s.title, s.turns)
                    })
                    .collect();
                if list.is_empty() {
                    "No sessions in this chat yet. 此聊天还没有会话。".to_string()
                } else {
                    list.join("\n")
                }
            }
            "permissions" => {
                let grants = self
                    .current_session(&chat)
                    .and_then(|sid| rt.store.grants(&sid).ok());
                let lines: Vec<String> = grants
                    .iter()
                    .flat_map(|g| g.iter())
                    .map(|g| match &g.command {
                        Some(c) => format!("• {} `{c}` ({})", g.tool, g.level),
                        None => format!("• {} ({})", g.tool, g.level),
                    })
                    .collect();
                if lines.is_empty() {
                    "Nothing is allowed “always” in this session: calls above the automatic \
                     level are asked. 本会话没有“总是允许”的调用。"
                        .to_string()
                } else {
                    format!("Allowed always in this session:\n{}", lines.join("\n"))
                }
            }
            "memory" => {
                let (n, newest) = rt.store.with_memories(|ms| {
                    let mut v: Vec<&evolve_core::memory::Memory> = ms.iter().collect();
                    v.sort_by_key(|m| std::cmp::Reverse(m.id));
                    (
                        ms.len(),
                        v.iter()
                            .take(5)
                            .map(|m| {
                                format!(
                                    "• #{} {}",
                                    m.id,
                                    evolve_core::text::one_line(&m.content, 80)
                                )
                            })
                            .collect::<Vec<_>>(),
                    )
                });
                format!("{n} memories; the newest:\n{}", newest.join("\n"))
            }
            _ => HELP.to_string(),
        };
        self.say(&chat, &reply);
        self.ack(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_with_or_without_the_bots_name() {
        let cases = [
            ("/new", Some(("new", ""))),
            ("/NEW@EvolveBot", Some(("new", ""))),
            ("/sessions  ", Some(("sessions", ""))),
            ("/help me", Some(("help", "me"))),
            ("/unknown", None),
            ("not /new", None),
            ("", None),
        ];
        for (text, want) in cases {
            let got = command(text);
            assert_eq!(
                got.as_ref().map(|(n, a)| (n.as_str(), *a)),
                want,
                "{text:?}"
            );
        }
    }
}
