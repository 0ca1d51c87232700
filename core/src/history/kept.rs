//! What a request chose for its question — the earlier exchanges picked from the L2
//! ring ([`HISTORY_PREFIX`] pairs, the [`DIGEST_HEADER`] block) and the context block
//! ([`CONTEXT_HEADER`]: memories, skills, the tool-chain review) — kept with the turn
//! and put back before that turn's question in the later requests whose history holds
//! the turn. A request then repeats the previous one as its prefix (what was chosen
//! sits where it sat), which a model server's prompt cache reuses. The shell stores
//! the kept messages apart from the session's messages, which a person sees.
//!
//! What a kept block of the history shows already is not repeated in the new block
//! ([`not_yet_shown`]): a memory or a skill chosen turn after turn is sent once while
//! its turn is in the history.
//!
//! A kept block counts as no turn of its own: the history's turn counts (which turns'
//! tool outputs become placeholders) skip it ([`is_chosen`]).

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::message::{Message, Role};
use super::summary::CONTEXT_HEADER;

/// Prefix of the user side of a full L2 pair (tea-agent `[历史记录]`).
pub const HISTORY_PREFIX: &str = "[history] ";

/// First line of the digest block.
pub const DIGEST_HEADER: &str = "[history, in brief — earlier exchanges of this session]";

/// What one request chose for its question, as kept with its turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chosen {
    /// The messages, in the order sent ([`chosen_for_question`]).
    pub messages: Vec<Message>,
    /// Some of it came from world text (a memory learned from a page, an earlier
    /// exchange that read a file): in a later turn it is world text still.
    #[serde(default)]
    pub world: bool,
}

/// Whether `m` is the opening message of a block chosen for a question.
pub fn is_chosen(m: &Message) -> bool {
    m.role == Role::User
        && [CONTEXT_HEADER, DIGEST_HEADER, HISTORY_PREFIX]
            .iter()
            .any(|h| m.content.starts_with(h))
}

/// The messages a built request placed right before its current question (the last
/// user message): the pairs that open with a chosen block, each with the reply after
/// it. Empty when nothing was chosen.
pub fn chosen_for_question(messages: &[Message]) -> &[Message] {
    let Some(question) = messages.iter().rposition(|m| m.role == Role::User) else {
        return &[];
    };
    let mut start = question;
    while start >= 2
        && is_chosen(&messages[start - 2])
        && messages[start - 1].role == Role::Assistant
    {
        start -= 2;
    }
    &messages[start..question]
}

/// A session's stored messages (in order, with their turns) with each turn's kept
/// messages put back before the turn's first message, tagged with the turn.
pub fn with_chosen(
    stored: Vec<(u64, Message)>,
    mut chosen: Vec<(u64, Vec<Message>)>,
) -> Vec<(u64, Message)> {
    if chosen.is_empty() {
        return stored;
    }
    let extra: usize = chosen.iter().map(|(_, m)| m.len()).sum();
    let mut out = Vec::with_capacity(stored.len() + extra);
    let mut previous: Option<u64> = None;
    for (turn, message) in stored {
        if previous != Some(turn) {
            if let Some(i) = chosen.iter().position(|(t, _)| *t == turn) {
                let (_, kept) = chosen.swap_remove(i);
                out.extend(kept.into_iter().map(|m| (turn, m)));
            }
            previous = Some(turn);
        }
        out.push((turn, message));
    }
    out
}

/// `block` (one part of a context block: a `<tag>` line, lines, a `</tag>` line)
/// without the items a kept context block of `history` shows already: the lines of a
/// `<memories>` section but the rules (`!!!`), which are always repeated, and the
/// `- ` lines of any other section (skills). When no item is left the part is empty;
/// a part of another shape (the TODO items, the tool-chain review) is left out whole
/// when a kept block holds it whole.
pub fn not_yet_shown(block: &str, history: &[Message]) -> String {
    let kept: Vec<&str> = history
        .iter()
        .filter(|m| m.role == Role::User && m.content.starts_with(CONTEXT_HEADER))
        .map(|m| m.content.as_str())
        .collect();
    let trimmed = block.trim();
    if kept.is_empty() || trimmed.is_empty() {
        return String::from(block);
    }
    let lines: Vec<&str> = trimmed.lines().collect();
    let open = lines.first().copied().unwrap_or("");
    let sectioned = lines.len() >= 2
        && open.starts_with('<')
        && !open.starts_with("</")
        && lines.last().is_some_and(|l| l.starts_with("</"));
    if !sectioned {
        let shown = kept.iter().any(|k| k.contains(trimmed));
        return if shown {
            String::new()
        } else {
            String::from(block)
        };
    }
    let shown: BTreeSet<&str> = kept.iter().flat_map(|k| k.lines()).collect();
    let memories = open == crate::memory::BLOCK_OPEN;
    let is_item = |line: &str| {
        if memories {
            !line.starts_with("!!!")
        } else {
            line.starts_with("- ")
        }
    };
    let inner = &lines[1..lines.len() - 1];
    let left: Vec<&str> = inner
        .iter()
        .copied()
        .filter(|l| !(is_item(l) && shown.contains(l)))
        .collect();
    if left.len() == inner.len() {
        return String::from(block);
    }
    let rules_or_items = left
        .iter()
        .any(|l| is_item(l) || (memories && l.starts_with("!!!")));
    if !rules_or_items {
        return String::new();
    }
    let mut out = String::from(open);
    for l in left {
        out.push('\n');
        out.push_str(l);
    }
    out.push('\n');
    out.push_str(lines[lines.len() - 1]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{CONTEXT_ACK, DIGEST_ACK};
    use alloc::format;
    use alloc::string::String;
    use alloc::vec;

    fn user(t: &str) -> Message {
        Message::user(t)
    }
    fn assistant(t: &str) -> Message {
        Message::assistant(t)
    }

    #[test]
    fn the_blocks_right_before_the_question_are_what_was_chosen() {
        let context = user(&format!("{CONTEXT_HEADER}\n\nThe user likes tea"));
        let digest = user(&format!("{DIGEST_HEADER}\n- turn 1"));
        let pair = user(&format!("{HISTORY_PREFIX}Where is Lyon?"));
        let history = [user("Hi"), assistant("Hello")];
        // (messages, how many before the question are chosen)
        let cases: Vec<(Vec<Message>, usize)> = vec![
            (vec![user("q")], 0),
            (
                [
                    &history[..],
                    &[context.clone(), assistant(CONTEXT_ACK), user("q")],
                ]
                .concat(),
                2,
            ),
            (
                [
                    &history[..],
                    &[
                        digest.clone(),
                        assistant(DIGEST_ACK),
                        pair.clone(),
                        assistant("In France"),
                        context.clone(),
                        assistant(CONTEXT_ACK),
                        user("q"),
                        assistant(""),
                    ],
                ]
                .concat(),
                6,
            ),
            // A block kept from an earlier turn, then that turn's question: not this
            // question's.
            (
                vec![
                    context.clone(),
                    assistant(CONTEXT_ACK),
                    user("earlier"),
                    assistant("a"),
                    user("q"),
                ],
                0,
            ),
            (vec![], 0),
        ];
        for (messages, want) in cases {
            let got = chosen_for_question(&messages);
            assert_eq!(got.len(), want, "{messages:?}");
            assert!(got.iter().step_by(2).all(is_chosen));
        }
        assert!(!is_chosen(&user("What is the context?")));
        assert!(!is_chosen(&assistant(&String::from(CONTEXT_HEADER))));
    }

    #[test]
    fn what_a_kept_block_shows_is_not_repeated() {
        let kept = |text: &str| {
            vec![
                user(&format!("{CONTEXT_HEADER}\n\n{text}")),
                assistant(CONTEXT_ACK),
                user("earlier question"),
                assistant("earlier answer"),
            ]
        };
        let skills = "<available_skills>\nSkills that may help.\n- plan-tasks: Plan.\n- translate: Translate.\n</available_skills>";
        let memories =
            "<memories>\n📎 The user likes tea\n!!! MUST FOLLOW: Answer in English\n</memories>";
        // (what the history shows, the new part, what is sent)
        let cases: Vec<(Vec<Message>, &str, String)> = vec![
            // Nothing kept: everything is sent.
            (vec![user("hi"), assistant("hello")], skills, String::from(skills)),
            // One skill shown: the other is sent, with the section's own lines.
            (
                kept("<available_skills>\nSkills that may help.\n- plan-tasks: Plan.\n</available_skills>"),
                skills,
                String::from("<available_skills>\nSkills that may help.\n- translate: Translate.\n</available_skills>"),
            ),
            // Both shown: nothing.
            (kept(skills), skills, String::new()),
            // A memory shown: the rule is still sent.
            (
                kept("<memories>\n📎 The user likes tea\n</memories>"),
                memories,
                String::from("<memories>\n!!! MUST FOLLOW: Answer in English\n</memories>"),
            ),
            // A rule shown is sent again.
            (kept(memories), memories, String::from("<memories>\n!!! MUST FOLLOW: Answer in English\n</memories>")),
            // The same review: left out; a changed one: sent.
            (kept("##### Recent tool-call chain\n- read a.txt"), "##### Recent tool-call chain\n- read a.txt", String::new()),
            (
                kept("##### Recent tool-call chain\n- read a.txt"),
                "##### Recent tool-call chain\n- read a.txt\n- wrote b.txt",
                String::from("##### Recent tool-call chain\n- read a.txt\n- wrote b.txt"),
            ),
            // The same lines in the person's own words are not a kept block.
            (vec![user("- plan-tasks: Plan.\n- translate: Translate."), assistant("ok")], skills, String::from(skills)),
        ];
        for (history, block, want) in cases {
            assert_eq!(
                not_yet_shown(block, &history),
                want,
                "{block:?} after {history:?}"
            );
        }
    }

    #[test]
    fn kept_blocks_go_back_before_their_turns_first_message() {
        let stored = vec![
            (1, user("one")),
            (1, assistant("a1")),
            (2, user("two")),
            (2, assistant("a2")),
            (3, user("three")),
        ];
        let kept = vec![
            (3, vec![user("c3"), assistant("ok")]),
            (1, vec![user("c1"), assistant("ok")]),
            (9, vec![user("gone"), assistant("ok")]),
        ];
        let got: Vec<(u64, String)> = with_chosen(stored, kept)
            .into_iter()
            .map(|(t, m)| (t, m.content))
            .collect();
        let want: Vec<(u64, String)> = [
            (1, "c1"),
            (1, "ok"),
            (1, "one"),
            (1, "a1"),
            (2, "two"),
            (2, "a2"),
            (3, "c3"),
            (3, "ok"),
            (3, "three"),
        ]
        .iter()
        .map(|(t, c)| (*t, String::from(*c)))
        .collect();
        assert_eq!(got, want);
    }
}
