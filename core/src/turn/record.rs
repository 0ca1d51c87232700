//! What happened to one tool call of a turn ([`CallRecord`]): its level, the decision,
//! a person's answer, whether it ran and how much output the model received. The turn
//! keeps one per call as each settles; the turn record's `tools` and the interfaces
//! show them.

use alloc::string::{String, ToString};

use serde::{Deserialize, Serialize};

use crate::history::ToolCall;
use crate::permission::{Decision, Level};

/// One tool call of the turn and what happened to it (the turn record's `tools`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call id from the model.
    pub id: String,
    /// The tool name the model used.
    pub name: String,
    /// The arguments as the tool read them.
    pub arguments: String,
    /// The call's level (class raised by the arguments); none when it was not checked
    /// (no such tool, unreadable arguments, a repeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// What the permission check decided; none when it was not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// How a person answered (`run`, `refused`), or why the call was not checked (`no
    /// such tool`, `unreadable arguments`, `repeated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Whether it ran.
    pub ran: bool,
    /// The tool reported an error (or the call could not be run).
    pub is_error: bool,
    /// Characters of output the model received.
    pub output_chars: usize,
}

impl CallRecord {
    /// A call answered without a permission check, not run.
    pub fn not_run(call: &ToolCall, why: &str) -> CallRecord {
        CallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            level: None,
            decision: None,
            answer: Some(why.to_string()),
            ran: false,
            is_error: true,
            output_chars: 0,
        }
    }

    /// A call the permission check has decided, not yet run.
    pub(super) fn checked(call: &ToolCall, level: Level, decision: Decision) -> CallRecord {
        CallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            level: Some(level),
            decision: Some(decision),
            answer: None,
            ran: false,
            is_error: false,
            output_chars: 0,
        }
    }
}
