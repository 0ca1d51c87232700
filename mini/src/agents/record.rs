//! The turn record: what one turn did, returned to the interface (`ask --json`, the
//! web API's extension field) and stored with the session.

use evolve_core::memory::Reason;
use evolve_core::permission::{Decision, Level};
use serde::Serialize;

use crate::llm::Usage;

/// A memory that entered the prompt.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryUsed {
    /// Its id.
    pub id: u64,
    /// Its text.
    pub content: String,
    /// relevance × importance × recency × priority.
    pub score: f32,
    /// Token-overlap F1 with the question.
    pub relevance: f32,
    /// Why it was chosen.
    pub reason: Reason,
}

/// One tool call of the turn and what happened to it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolRun {
    /// The call id from the model.
    pub id: String,
    /// The tool name the model used.
    pub name: String,
    /// The arguments exactly as the model sent them.
    pub arguments: String,
    /// The call's level (class raised by the arguments); none when it was not checked
    /// (no such tool, unreadable arguments, a repeat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// What the permission check decided; none when it was not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// How a person answered (`run`, `refused`), or why the call was not checked (`no
    /// such tool`, `unreadable arguments`, `repeated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Whether it ran.
    pub ran: bool,
    /// The tool reported an error.
    pub is_error: bool,
    /// Characters of output the model received.
    pub output_chars: usize,
}

impl ToolRun {
    /// A call that was answered without a permission check and did not run.
    pub fn not_run(call: &evolve_core::history::ToolCall, why: &str) -> ToolRun {
        ToolRun {
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
}

/// Token usage of the turn per model.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TurnUsage {
    /// The main model (answer, tool loop).
    pub main: Usage,
    /// The cheap model (extraction, evaluation, reflection, summaries).
    pub cheap: Usage,
}

/// The evaluation of the reply.
#[derive(Debug, Clone, Serialize)]
pub struct Scored {
    /// 0–1.
    pub score: f32,
    /// The evaluator's reason.
    pub reason: String,
}

/// What the background work after the reply produced.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PostTurn {
    /// The evaluation, when the evaluator gave a usable answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Scored>,
    /// The lesson written by a reflection, if one ran and found one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reflection: Option<String>,
    /// Memories saved (inserted or merged) from this exchange.
    pub memories_saved: usize,
    /// A style note learned from this reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style_note: Option<String>,
    /// The name of the skill learned from this task (crystallization).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned_skill: Option<String>,
    /// The lesson saved from this task when it went wrong, as the prompt shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson: Option<String>,
    /// Cheap-model usage of the background work.
    pub usage: Usage,
    /// Problems that were logged and skipped (unusable JSON, a failed call).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Everything one turn did.
#[derive(Debug, Clone, Serialize)]
pub struct TurnRecord {
    /// The session.
    pub session: String,
    /// The turn's number in the session, from 1.
    pub turn: u64,
    /// The final answer.
    pub reply: String,
    /// Memories in the prompt.
    pub memories: Vec<MemoryUsed>,
    /// How many memories were scored to choose them.
    pub memories_considered: usize,
    /// Skills whose summaries were in the prompt.
    pub skills: Vec<String>,
    /// Tool calls, in order.
    pub tools: Vec<ToolRun>,
    /// Model round trips.
    pub steps: usize,
    /// A tool call needed a person and was refused (`ask` exits 4).
    pub needs_person: bool,
    /// The evaluation score (after the background work, when waited for). Always in the
    /// record, `null` when there is none (not waited for, or the grade was unusable:
    /// `problems` says why), so scripts read one shape.
    pub evaluation: Option<Scored>,
    /// A reflection's lesson, if one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reflection: Option<String>,
    /// The skill learned from this task, if it was crystallized (see [`PostTurn`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned_skill: Option<String>,
    /// The lesson saved from this task, if it went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson: Option<String>,
    /// Token usage per model.
    pub usage: TurnUsage,
    /// Milliseconds from input to the answer (model time included).
    pub answer_ms: u64,
    /// Milliseconds the agent itself spent (all but waiting for the model or a person).
    pub overhead_ms: f64,
    /// What the background work skipped, and why (an unusable grade, a failed cheap
    /// call, an expiry that could not be read); empty when nothing was skipped or the
    /// background work was not waited for.
    pub problems: Vec<String>,
}

impl TurnRecord {
    /// Folds the background results in.
    pub fn absorb(&mut self, post: &PostTurn) {
        self.evaluation = post.evaluation.clone();
        self.reflection = post.reflection.clone();
        self.learned_skill = post.learned_skill.clone();
        self.lesson = post.lesson.clone();
        self.problems.clone_from(&post.problems);
        self.usage.cheap.add(post.usage);
    }
}
