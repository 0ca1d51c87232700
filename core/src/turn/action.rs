//! What a turn and its shell say to each other: the [`Action`] the turn asks for next
//! (with the [`AgentId`] that acts), what one model call offers ([`ModelStep`]), and
//! what the shell reports about the model's answer ([`Reply`], with a [`Precheck`] for
//! each call). The vocabulary only: what the turn does with it is `mod.rs`.

use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::record::CallRecord;
use crate::history::{Message, ToolCall};
use crate::permission::{AuditEntry, Grant, Level, PendingCall};

/// The agents a turn's actions belong to (the five agents of ARCHITECTURE.md § The turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentId {
    /// Runs the turn: asks the model, asks a person.
    Manager,
    /// Chooses and learns memories.
    Memory,
    /// Offers, checks and runs tools.
    Tool,
    /// Scores answers.
    Evaluate,
    /// Reflects on sessions, learns style and lessons.
    Reflection,
}

impl AgentId {
    /// The stable id (`manager`, `memory`, `tool`, `evaluate`, `reflect`).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentId::Manager => "manager",
            AgentId::Memory => "memory",
            AgentId::Tool => "tool",
            AgentId::Evaluate => "evaluate",
            AgentId::Reflection => "reflect",
        }
    }
}

/// What the shell does next (ARCHITECTURE.md § The turn: [`Action::CallModel`] is steps
/// 5–6, [`Action::CheckCall`] step 7, [`Action::AskPerson`] step 8, [`Action::RunTool`]
/// step 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Ask the main model: the prompt is the context plus [`Turn::messages`](super::Turn::messages).
    CallModel(ModelStep),
    /// Check this call's permission (class, escalation, decision with
    /// [`Turn::grants`](super::Turn::grants) and [`Turn::policy`](super::Turn::policy)) and report it with
    /// [`Turn::handle_check`](super::Turn::handle_check).
    CheckCall(ToolCall),
    /// Ask a person about this call ([`PendingCall::prompt`] says what to show) and
    /// report the reply with [`Turn::handle_answer`](super::Turn::handle_answer). Before asking, the shell parks the
    /// turn (its state) so that the question survives the process.
    AskPerson(PendingCall),
    /// Run this call at this level and report its output with
    /// [`Turn::handle_output`](super::Turn::handle_output).
    RunTool {
        /// The call.
        call: ToolCall,
        /// The level the check gave it (a shell command is confined by it).
        level: Level,
        /// World text is in the turn and no person said yes to this call (it runs by
        /// its level, a grant or a headless run's allowance): a command it starts gets
        /// no network, so what it read cannot leave through it.
        offline: bool,
    },
    /// Append this entry to the audit log.
    Audit(AuditEntry),
    /// Add this grant to the session's (an "always" answer), in one write — not the
    /// turn's whole copy, which a revoke made meanwhile would be undone by.
    SaveGrant(Grant),
    /// A call is settled (ran, refused or not run): tell the interface.
    CallSettled(CallRecord),
    /// The turn is over: the answer is the last of [`Turn::messages`](super::Turn::messages).
    Done,
}

impl Action {
    /// The agent that acts.
    pub fn agent(&self) -> AgentId {
        match self {
            Action::CallModel(_) | Action::AskPerson(_) | Action::Done => AgentId::Manager,
            Action::CheckCall(_)
            | Action::RunTool { .. }
            | Action::Audit(_)
            | Action::SaveGrant(_)
            | Action::CallSettled(_) => AgentId::Tool,
        }
    }
}

/// One call of the main model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStep {
    /// 1 for the first call of the turn.
    pub step: usize,
    /// Whether tools are offered (never on the last step).
    pub offer_tools: bool,
    /// Make the model call this tool (`evolve ask --tool NAME`; the first step only).
    pub force_tool: Option<String>,
}

/// What the shell found out about a call before its permission check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precheck {
    /// A known tool with readable arguments (given canonical in the message).
    Ready,
    /// The arguments passed the answer cap (the cap as shown) and were cut: never run.
    Cut(String),
    /// No tool of that name; the text says which tools there are.
    Unknown(String),
    /// The arguments are not one JSON object; the text says why.
    Unreadable(String),
}

/// What the model answered in one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The assistant message, with its tool calls.
    pub message: Message,
    /// For each tool call, what the shell found before the check (missing entries are
    /// [`Precheck::Ready`]).
    pub prechecks: Vec<Precheck>,
}
