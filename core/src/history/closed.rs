//! How a closed turn enters the session's history, and which stored turns the next
//! turn sends whole.
//!
//! What it decides: what of a failed or stopped turn is kept (only what the model saw
//! complete: the question and whole tool rounds, plus the text of an answer the person
//! stopped, which they saw); the note that stands in for an answer a turn never had;
//! the L2 entry of a closed turn and the ring it goes into (the overflow stays in the
//! ring until it is summarised); and the split of a session's turns into L1 (sent
//! whole) and the L2 entries shown before them. What it leaves to the shell: loading
//! and storing the messages and the ring, and summarising the overflow.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::{cut_to_tokens, is_chosen, HistoryConfig, L2Entry, L2Ring, Message, Role, Window};
use crate::text::clip_chars;

/// What the history says in place of the answer of a turn the person stopped before
/// any answer.
pub const NO_ANSWER_STOPPED: &str = "(no answer: the user stopped this turn)";
/// What the history says in place of the answer of a turn the model failed on.
pub const NO_ANSWER_FAILED: &str = "(no answer: the model failed on this turn)";
/// What L1 says in place of a missing answer (a stopped or failed turn's question
/// followed by another question).
pub const NO_ANSWER: &str = "(no answer: this turn was stopped or failed)";
/// After the part of an answer the user stopped, in L2.
pub const STOPPED_HERE: &str = "(the user stopped the answer here)";

/// The history with a note in place of each missing answer (a stopped or failed turn's
/// question followed by the next question, or by this turn's), so user and assistant
/// messages alternate: strict chat templates (llama.cpp's, some Mistral ones) refuse
/// two user messages in a row.
pub fn with_answers(msgs: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(msgs.len());
    for m in msgs {
        let unanswered = out
            .last()
            .is_some_and(|p| m.role == Role::User && matches!(p.role, Role::User | Role::Tool));
        if unanswered {
            out.push(Message::assistant(NO_ANSWER));
        }
        out.push(m);
    }
    // The turn's own question comes next.
    if out
        .last()
        .is_some_and(|p| matches!(p.role, Role::User | Role::Tool))
    {
        out.push(Message::assistant(NO_ANSWER));
    }
    out
}

/// Whether every tool call of the last assistant message with calls has its result.
pub fn round_complete(msgs: &[Message]) -> bool {
    let Some(at) = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return true;
    };
    let results = msgs[at + 1..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    results >= msgs[at].tool_calls.len()
}

/// How a turn ended without a whole answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfinished {
    /// The person stopped it.
    Stopped,
    /// The model (or the shell) failed.
    Failed,
}

/// What is stored of a turn that ended without a whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptTurn {
    /// Its messages: the question, whole tool rounds, and a stopped answer's text.
    pub messages: Vec<Message>,
    /// What its L2 entry says in place of the answer.
    pub note: String,
}

/// What is kept of a turn with these `messages` that ended as `how`: only what the
/// model saw complete — the question and whole tool rounds (an unanswered call, or a
/// round interrupted half way, is not replayed). The text of an answer the person
/// stopped (`partial`) is kept as its answer: the person saw it.
pub fn unfinished_turn(messages: &[Message], how: Unfinished, partial: &str) -> KeptTurn {
    let stopped = how == Unfinished::Stopped;
    let mut keep = messages.to_vec();
    while keep.len() > 1
        && keep.last().is_some_and(|m| {
            m.role == Role::Assistant || m.role == Role::Tool && !round_complete(&keep)
        })
    {
        keep.pop();
    }
    let partial = partial.trim_end();
    if stopped && !partial.trim().is_empty() {
        keep.push(Message::assistant(partial));
    }
    let note = match (stopped, keep.last()) {
        (true, Some(m)) if m.role == Role::Assistant => format!("{partial} {STOPPED_HERE}"),
        (true, _) => NO_ANSWER_STOPPED.to_string(),
        _ => NO_ANSWER_FAILED.to_string(),
    };
    KeptTurn {
        messages: keep,
        note,
    }
}

/// The L2 entry of a finished turn: question, answer, the tool rounds' text, the files
/// the file tools touched.
///
/// The answer is kept up to `max_tokens`, the prompt's input budget: a longer one could
/// never be shown whole from L2 (the history is trimmed to that budget), and the ring is
/// read and written again on every turn, so a long answer is not copied into it whole.
pub fn l2_entry(question: &str, reply: &str, turn: &[Message], max_tokens: usize) -> L2Entry {
    let mut thinking = String::new();
    let mut files = Vec::new();
    for m in turn {
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            if !m.content.trim().is_empty() {
                thinking.push_str(m.content.trim());
                thinking.push('\n');
            }
            for c in &m.tool_calls {
                thinking.push_str(&format!(
                    "→ {}({})\n",
                    c.name,
                    clip_chars(&c.arguments, 200)
                ));
                if let Some(p) = crate::permission::string_arg(&c.arguments, "path") {
                    if !files.contains(&p) {
                        files.push(p);
                    }
                }
            }
        }
    }
    L2Entry {
        user: question.to_string(),
        assistant: cut_to_tokens(reply, max_tokens).unwrap_or_else(|| reply.to_string()),
        thinking,
        files,
        turn: 0,
    }
}

/// The L2 ring with the finished turn's `entry` added (saved with the turn's messages
/// in one transaction); `replacing`: the last entry is the replaced turn's and leaves
/// first. When the ring overflows, the overflowing entries stay in it until the
/// background summary has folded them into L3 (which then trims the ring and writes
/// the summary in one transaction): if the summary fails, they are summarised after a
/// later turn, never dropped. Returns the ring and the overflow.
pub fn next_l2(
    ring: L2Ring,
    entry: L2Entry,
    replacing: bool,
    cfg: &HistoryConfig,
) -> (L2Ring, Vec<L2Entry>) {
    let mut entries = ring.entries().to_vec();
    if replacing {
        entries.pop();
    }
    let mut trimmed = L2Ring::from_entries(entries.clone());
    let overflow = trimmed.push(entry.clone(), cfg);
    if overflow.is_empty() {
        (trimmed, overflow)
    } else {
        entries.push(entry);
        (L2Ring::from_entries(entries), overflow)
    }
}

/// A turn's view of its session's earlier turns: L1 and which of L2 goes before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels {
    /// The turns sent whole, each missing answer noted ([`with_answers`]).
    pub l1: Vec<Message>,
    /// How many of the first user turns of `l1` show placeholders for their tool
    /// outputs.
    pub old_user_turns: usize,
    /// The ring entries shown before L1, by index, oldest first: those of the turns
    /// on the branch that L1 does not hold whole.
    pub l2_shown: Vec<usize>,
}

/// The turns of `path` (the branch before the new turn, first turn first) that L1
/// holds whole under `window` (counted in positions on the branch).
pub fn l1_turns(window: Window, path: &[u64]) -> &[u64] {
    let from = (window.first_turn.max(1) - 1) as usize;
    path.get(from..).unwrap_or(&[])
}

/// The split of a session's stored turns for the turn after `path` (the turns of the
/// shown branch before it, see [`crate::history::Branches`]), with `window` counted in
/// positions on that branch: `stored` holds messages (with their turn numbers) of at
/// least L1's turns; only L1's turns are kept. `ring_turns`: the turn of each L2 ring
/// entry (0: not known, an old entry, shown when older than L1); the entries of turns
/// on the branch before L1 are shown, those of other branches and of L1 are not.
pub fn levels(
    window: Window,
    path: &[u64],
    stored: Vec<(u64, Message)>,
    ring_turns: &[u64],
) -> Levels {
    let l1_set = l1_turns(window, path);
    let with_outputs = l1_turns(window_outputs(window), path);
    let stored: Vec<(u64, Message)> = stored
        .into_iter()
        .filter(|m| l1_set.contains(&m.0))
        .collect();
    let old_user_turns = stored
        .iter()
        .filter(|(t, m)| !with_outputs.contains(t) && m.role == Role::User && !is_chosen(m))
        .count();
    let l1 = with_answers(stored.into_iter().map(|(_, m)| m).collect());
    let first_l1 = l1_set.first().copied().unwrap_or(u64::MAX);
    let l2_shown = ring_turns
        .iter()
        .enumerate()
        .filter(|(_, &t)| {
            if t == 0 {
                // An old entry of unknown turn: shown while older than L1, as the
                // ring always was.
                true
            } else {
                path.contains(&t) && !l1_set.contains(&t) && t < first_l1
            }
        })
        .map(|(i, _)| i)
        .collect();
    Levels {
        l1,
        old_user_turns,
        l2_shown,
    }
}

/// The window whose first turn is `window`'s first with tool outputs.
fn window_outputs(window: Window) -> Window {
    Window {
        first_turn: window.outputs_from,
        outputs_from: window.outputs_from,
    }
}

#[cfg(test)]
#[path = "closed_tests.rs"]
mod tests;
