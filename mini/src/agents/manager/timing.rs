//! What a turn measures while it runs: the time spent waiting for the model, the main
//! model's tokens, the answer streamed so far (kept when the person stops it) and what
//! went wrong on the way without failing the turn. The record of the turn is made of
//! these ([`Manager::record`](super::Manager)).

use std::time::Duration;

use crate::agents::record::SubtaskRun;
use crate::llm::Usage;

/// Time spent waiting for the model or for a person (not the agent's overhead), and
/// the main model's tokens.
#[derive(Default)]
pub(super) struct Timing {
    pub(super) usage_main: Usage,
    /// Waiting for the model *and* for a person's answer: all that is not the agent's
    /// own overhead (the record's `overhead_ms` is the turn's time minus this).
    pub(super) model_time: Duration,
    /// The answer text streamed by the model step in progress (kept when it is stopped).
    pub(super) partial: String,
    /// What went wrong on the way without failing the turn (the record's `problems`).
    pub(super) problems: Vec<String>,
    /// The sub-turns of the turn's `subtasks` calls.
    pub(super) subtasks: Vec<SubtaskRun>,
}
