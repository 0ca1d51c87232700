//! What the post-reply learners (crystallization, lessons) see of a turn's tool calls:
//! each call's name, arguments, outcome and the head of its result, clipped so that a
//! long tool output never becomes a long cheap-model prompt.

use evolve_core::history::{Message, Role};
use evolve_core::text::{clip_chars, one_line};

use super::record::ToolRun;

/// Characters of a call's arguments shown to the cheap model.
pub const ARGUMENT_CHARS: usize = 300;
/// Characters of the head of a call's result shown to the cheap model: enough to see
/// what came back, not the data itself.
pub const RESULT_HEAD_CHARS: usize = 400;

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and the tool reported success.
    Worked,
    /// It ran (or could not be run: unknown tool, unreadable arguments, a repeat) and
    /// failed.
    Failed,
    /// The permission check or a person refused it.
    Refused,
}

/// One tool call of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolStep {
    /// The tool's name.
    pub name: String,
    /// The arguments, clipped to [`ARGUMENT_CHARS`].
    pub arguments: String,
    /// How it ended.
    pub outcome: Outcome,
    /// The first [`RESULT_HEAD_CHARS`] characters of what the model received.
    pub result_head: String,
}

impl ToolStep {
    /// One line for a cheap-model prompt: `name(args) → outcome: head`.
    pub fn line(&self) -> String {
        let outcome = match self.outcome {
            Outcome::Worked => "worked",
            Outcome::Failed => "FAILED",
            Outcome::Refused => "REFUSED",
        };
        format!(
            "- {}({}) → {outcome}: {}",
            self.name,
            one_line(&self.arguments, ARGUMENT_CHARS),
            one_line(&self.result_head, RESULT_HEAD_CHARS)
        )
    }
}

/// The steps of a turn from its runs and its messages (a run's result is the tool
/// message answering its call id).
pub fn steps(runs: &[ToolRun], turn: &[Message]) -> Vec<ToolStep> {
    runs.iter()
        .map(|r| {
            let result = turn
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&r.id))
                .map(|m| clip_chars(&m.content, RESULT_HEAD_CHARS))
                .unwrap_or_default();
            let outcome = if r.ran && !r.is_error {
                Outcome::Worked
            } else if r.ran || r.decision.is_none() {
                Outcome::Failed
            } else {
                Outcome::Refused
            };
            ToolStep {
                name: r.name.clone(),
                arguments: clip_chars(&r.arguments, ARGUMENT_CHARS),
                outcome,
                result_head: result,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::permission::{Decision, Level};

    fn run(id: &str, ran: bool, is_error: bool, decision: Option<Decision>) -> ToolRun {
        ToolRun {
            id: id.into(),
            name: format!("tool_{id}"),
            arguments: "{\"path\": \"x\"}".into(),
            level: decision.map(|_| Level::L2),
            decision,
            answer: None,
            ran,
            is_error,
            output_chars: 0,
        }
    }

    #[test]
    fn outcomes_and_result_heads_come_from_runs_and_tool_messages() {
        let runs = [
            run("a", true, false, Some(Decision::Run)),
            run("b", true, true, Some(Decision::Run)),
            run("c", false, false, Some(Decision::AskOnce)),
            run("d", false, true, None),
        ];
        let long = "y".repeat(RESULT_HEAD_CHARS * 3);
        let turn = [
            Message::user("q"),
            Message::tool_result("a", "tool_a", long.clone()),
            Message::tool_result("b", "tool_b", "error: no such file"),
        ];
        let s = steps(&runs, &turn);
        let outcomes: Vec<Outcome> = s.iter().map(|x| x.outcome).collect();
        assert_eq!(
            outcomes,
            [
                Outcome::Worked,
                Outcome::Failed,
                Outcome::Refused,
                Outcome::Failed
            ]
        );
        assert!(s[0].result_head.chars().count() <= RESULT_HEAD_CHARS + 1);
        assert_eq!(s[1].result_head, "error: no such file");
        assert_eq!(s[2].result_head, "");
        assert!(s[1]
            .line()
            .contains("tool_b({\"path\": \"x\"}) → FAILED: error"));
    }
}
