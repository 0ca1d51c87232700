//! What a valid message sequence is, and the repair that makes any sequence valid.
//!
//! Hosts reject (HTTP 400) a tool message that answers no call, an assistant call left
//! unanswered, an assistant message with neither text nor calls, or system messages
//! in the middle; several chat templates also want the first turn to be the user's.
//! Sessions get into these shapes when a turn is interrupted, a tool crashes, or old
//! turns are cut away, so the builder repairs before sending.

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::message::{Message, Role};

/// The content of the tool result added for a call that never got one.
pub const INTERRUPTED_RESULT: &str = "[no result: the call was interrupted]";

/// The prefix of a system message found after the start, turned into a user message.
pub const MOVED_SYSTEM_PREFIX: &str = "[system] ";

/// Why a sequence is not valid (the first problem found; `index` into the sequence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SequenceError {
    /// A system message after a non-system message.
    SystemNotAtStart {
        /// Position of the message.
        index: usize,
    },
    /// The first non-system message is not a user message.
    FirstNotUser {
        /// Position of the message.
        index: usize,
    },
    /// A tool message that does not directly follow (within the run of tool messages)
    /// an assistant message with a call of its id, or that answers a call twice.
    OrphanTool {
        /// Position of the message.
        index: usize,
    },
    /// An assistant call with no tool message answering it.
    UnansweredCall {
        /// Position of the assistant message.
        index: usize,
        /// The call's id.
        id: String,
    },
    /// Two calls with the same id in one assistant message.
    DuplicateCallId {
        /// Position of the assistant message.
        index: usize,
        /// The repeated id.
        id: String,
    },
    /// An assistant message with no text and no tool call.
    EmptyAssistant {
        /// Position of the message.
        index: usize,
    },
    /// Tool calls on a message that is not the assistant's.
    CallsOnNonAssistant {
        /// Position of the message.
        index: usize,
    },
}

impl core::fmt::Display for SequenceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SequenceError::SystemNotAtStart { index } => {
                write!(f, "message {index}: system message after the start")
            }
            SequenceError::FirstNotUser { index } => {
                write!(
                    f,
                    "message {index}: the first non-system message is not the user's"
                )
            }
            SequenceError::OrphanTool { index } => {
                write!(f, "message {index}: tool result answering no pending call")
            }
            SequenceError::UnansweredCall { index, id } => {
                write!(f, "message {index}: tool call {id:?} has no result")
            }
            SequenceError::DuplicateCallId { index, id } => {
                write!(f, "message {index}: tool call id {id:?} used twice")
            }
            SequenceError::EmptyAssistant { index } => {
                write!(
                    f,
                    "message {index}: assistant message with no text and no tool call"
                )
            }
            SequenceError::CallsOnNonAssistant { index } => {
                write!(f, "message {index}: tool calls on a non-assistant message")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SequenceError {}

/// Checks that a sequence can be sent: system messages only at the start; then a user
/// message first; tool calls only on assistant messages, with distinct ids, each
/// answered exactly once by the run of tool messages right after it; no other tool
/// message; no assistant message with neither text nor calls. Consecutive messages of
/// the same role are allowed (OpenAI-compatible hosts accept them).
pub fn is_valid_sequence(messages: &[Message]) -> Result<(), SequenceError> {
    let mut seen_non_system = false;
    let mut i = 0;
    while let Some(m) = messages.get(i) {
        let index = i;
        i += 1;
        if m.role == Role::System {
            if seen_non_system {
                return Err(SequenceError::SystemNotAtStart { index });
            }
            continue;
        }
        if !seen_non_system && m.role != Role::User {
            return Err(SequenceError::FirstNotUser { index });
        }
        seen_non_system = true;
        if m.role != Role::Assistant && !m.tool_calls.is_empty() {
            return Err(SequenceError::CallsOnNonAssistant { index });
        }
        match m.role {
            Role::Tool => return Err(SequenceError::OrphanTool { index }),
            Role::Assistant if m.is_empty_assistant() => {
                return Err(SequenceError::EmptyAssistant { index })
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut pending = BTreeSet::new();
                for c in &m.tool_calls {
                    if !pending.insert(c.id.as_str()) {
                        return Err(SequenceError::DuplicateCallId {
                            index,
                            id: c.id.clone(),
                        });
                    }
                }
                while let Some(t) = messages.get(i).filter(|t| t.role == Role::Tool) {
                    let answered = t
                        .tool_call_id
                        .as_deref()
                        .is_some_and(|id| pending.remove(id));
                    if !answered {
                        return Err(SequenceError::OrphanTool { index: i });
                    }
                    if !t.tool_calls.is_empty() {
                        return Err(SequenceError::CallsOnNonAssistant { index: i });
                    }
                    i += 1;
                }
                if let Some(id) = m
                    .tool_calls
                    .iter()
                    .find(|c| pending.contains(c.id.as_str()))
                {
                    return Err(SequenceError::UnansweredCall {
                        index,
                        id: id.id.clone(),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What [`repair_sequence`] changed (all zero: the sequence was already valid).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairReport {
    /// System messages after the start, turned into user messages prefixed `"[system] "`.
    pub moved_system: usize,
    /// Messages dropped because they came before the first user message.
    pub dropped_leading: usize,
    /// Tool messages dropped because they answered no pending call.
    pub dropped_orphan_tools: usize,
    /// Tool results added for calls that had none ([`INTERRUPTED_RESULT`]).
    pub added_results: usize,
    /// Assistant messages dropped for having neither text nor calls.
    pub dropped_empty_assistants: usize,
    /// Tool calls removed: repeated ids within one message, or calls on a message that
    /// is not the assistant's.
    pub dropped_calls: usize,
}

impl RepairReport {
    /// True when nothing had to change.
    pub fn is_clean(&self) -> bool {
        *self == RepairReport::default()
    }

    /// Adds the counts of another report to these.
    pub fn merge(&mut self, other: &RepairReport) {
        self.moved_system += other.moved_system;
        self.dropped_leading += other.dropped_leading;
        self.dropped_orphan_tools += other.dropped_orphan_tools;
        self.added_results += other.added_results;
        self.dropped_empty_assistants += other.dropped_empty_assistants;
        self.dropped_calls += other.dropped_calls;
    }
}

/// Makes any sequence valid ([`is_valid_sequence`]) with the smallest changes, and
/// says what it changed. Idempotent: repairing a repaired sequence changes nothing.
///
/// - A system message after the start becomes a user message `"[system] …"` in place
///   (its position may matter, e.g. "the user switched the model here").
/// - Messages before the first user message (after the leading system messages) are
///   dropped: a turn without its question misleads the model.
/// - A tool message that does not answer a pending call of the assistant message right
///   before its run of tool messages is dropped.
/// - **An unanswered call gets a synthetic result** [`INTERRUPTED_RESULT`] right after
///   the answered ones, rather than the call being removed: the model then knows it
///   asked for something that did not happen, instead of silently losing its own step.
/// - An assistant message with neither text nor calls is dropped (its reasoning too).
/// - Tool calls on a non-assistant message, and repeated call ids in one message, are
///   removed.
pub fn repair_sequence(messages: &mut Vec<Message>) -> RepairReport {
    let mut report = RepairReport::default();
    if is_valid_sequence(messages).is_ok() {
        return report;
    }
    let input = core::mem::take(messages);
    let mut out: Vec<Message> = Vec::with_capacity(input.len() + 2);
    let mut seen_user = false;
    let mut iter = input.into_iter().peekable();
    while let Some(mut m) = iter.next() {
        if m.role == Role::System {
            if out.iter().all(|o| o.role == Role::System) {
                out.push(m);
                continue;
            }
            report.moved_system += 1;
            m.role = Role::User;
            m.content.insert_str(0, MOVED_SYSTEM_PREFIX);
        }
        if !seen_user && m.role != Role::User {
            report.dropped_leading += 1;
            continue;
        }
        if m.role != Role::Assistant && !m.tool_calls.is_empty() {
            report.dropped_calls += m.tool_calls.len();
            m.tool_calls.clear();
        }
        match m.role {
            Role::User => {
                seen_user = true;
                out.push(m);
            }
            Role::Tool => report.dropped_orphan_tools += 1,
            Role::System => {} // handled above
            Role::Assistant => {
                let before = m.tool_calls.len();
                let mut ids = BTreeSet::new();
                m.tool_calls.retain(|c| ids.insert(c.id.clone()));
                report.dropped_calls += before - m.tool_calls.len();
                if m.is_empty_assistant() {
                    report.dropped_empty_assistants += 1;
                    continue;
                }
                let calls = m.tool_calls.clone();
                out.push(m);
                while let Some(t) = iter.next_if(|t| t.role == Role::Tool) {
                    let answered = t.tool_call_id.as_deref().is_some_and(|id| ids.remove(id));
                    if answered {
                        let mut t = t;
                        report.dropped_calls += t.tool_calls.len();
                        t.tool_calls.clear();
                        out.push(t);
                    } else {
                        report.dropped_orphan_tools += 1;
                    }
                }
                for c in calls.iter().filter(|c| ids.contains(&c.id)) {
                    report.added_results += 1;
                    out.push(Message::tool_result(
                        c.id.clone(),
                        c.name.clone(),
                        INTERRUPTED_RESULT,
                    ));
                }
            }
        }
    }
    *messages = out;
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ToolCall;
    use alloc::string::ToString;
    use alloc::vec;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: "read".to_string(),
            arguments: "{}".to_string(),
        }
    }

    fn calls(ids: &[&str]) -> Message {
        Message::assistant_calls("", ids.iter().map(|i| call(i)).collect())
    }

    fn tool(id: &str) -> Message {
        Message::tool_result(id, "read", "out")
    }

    #[test]
    fn validity_rules_one_by_one() {
        use SequenceError::*;
        let sys = Message::system("s");
        let u = Message::user("u");
        let a = Message::assistant("a");
        let cases: Vec<(Vec<Message>, Result<(), SequenceError>)> = vec![
            (vec![], Ok(())),
            (vec![sys.clone()], Ok(())),
            (
                vec![sys.clone(), sys.clone(), u.clone(), a.clone(), u.clone()],
                Ok(()),
            ),
            (vec![u.clone(), u.clone()], Ok(())),
            (vec![a.clone()], Err(FirstNotUser { index: 0 })),
            (vec![sys.clone(), tool("x")], Err(FirstNotUser { index: 1 })),
            (
                vec![u.clone(), sys.clone()],
                Err(SystemNotAtStart { index: 1 }),
            ),
            (vec![u.clone(), tool("x")], Err(OrphanTool { index: 1 })),
            (vec![u.clone(), calls(&["1"]), tool("1")], Ok(())),
            (
                vec![u.clone(), calls(&["1", "2"]), tool("2"), tool("1")],
                Ok(()),
            ),
            (
                vec![u.clone(), calls(&["1"]), tool("2")],
                Err(OrphanTool { index: 2 }),
            ),
            (
                vec![u.clone(), calls(&["1"]), tool("1"), tool("1")],
                Err(OrphanTool { index: 3 }),
            ),
            (
                vec![u.clone(), calls(&["1", "2"]), tool("1")],
                Err(UnansweredCall {
                    index: 1,
                    id: "2".into(),
                }),
            ),
            (
                vec![u.clone(), calls(&["1"]), u.clone(), tool("1")],
                Err(UnansweredCall {
                    index: 1,
                    id: "1".into(),
                }),
            ),
            (
                vec![u.clone(), calls(&["1", "1"]), tool("1")],
                Err(DuplicateCallId {
                    index: 1,
                    id: "1".into(),
                }),
            ),
            (
                vec![u.clone(), Message::assistant(" ")],
                Err(EmptyAssistant { index: 1 }),
            ),
            (
                vec![Message::assistant_calls("", vec![]), u.clone()],
                Err(FirstNotUser { index: 0 }),
            ),
            (
                vec![
                    Message::assistant_calls("x", vec![call("1")]).with_content(String::new()),
                    tool("1"),
                ]
                .into_iter()
                .map(|mut m| {
                    m.role = Role::User;
                    m
                })
                .collect(),
                Err(CallsOnNonAssistant { index: 0 }),
            ),
        ];
        for (i, (msgs, want)) in cases.into_iter().enumerate() {
            assert_eq!(is_valid_sequence(&msgs), want, "case {i}");
        }
    }

    #[test]
    fn repair_fixes_each_problem_as_documented() {
        let mut m = vec![
            Message::system("s"),
            Message::assistant("leading"),
            tool("0"),
            Message::user("u1"),
            calls(&["1", "2", "1"]),
            tool("2"),
            tool("9"),
            Message::system("note"),
            tool("1"),
            Message::assistant(""),
            Message::user("u2"),
        ];
        let r = repair_sequence(&mut m);
        assert_eq!(
            r,
            RepairReport {
                moved_system: 1,
                dropped_leading: 2,
                dropped_orphan_tools: 2,
                added_results: 1,
                dropped_empty_assistants: 1,
                dropped_calls: 1,
            }
        );
        assert_eq!(is_valid_sequence(&m), Ok(()));
        let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
        use Role::*;
        assert_eq!(roles, vec![System, User, Assistant, Tool, Tool, User, User]);
        assert_eq!(m[3].content, "out");
        assert_eq!(m[4].content, INTERRUPTED_RESULT);
        assert_eq!(m[4].tool_call_id.as_deref(), Some("1"));
        assert_eq!(m[5].content, "[system] note");
        // Idempotent.
        let again = m.clone();
        assert!(repair_sequence(&mut m).is_clean());
        assert_eq!(m, again);
    }

    #[test]
    fn no_user_message_leaves_only_the_system_prompt() {
        let mut m = vec![
            Message::system("s"),
            Message::assistant("hi"),
            calls(&["1"]),
        ];
        repair_sequence(&mut m);
        assert_eq!(m, vec![Message::system("s")]);
    }
}
