//! What a turn measures while it runs: the time spent waiting for the model and, apart
//! from it, for a person; the main model's tokens; the answer streamed so far (kept
//! when the person stops it); and what went wrong on the way without failing the turn,
//! as typed [`Problem`]s. The turn's record is made of these
//! ([`Manager::record`](super::Manager)): its `overhead_ms` is the turn's time minus
//! both waits, its `person_ms` the time a person took to answer.

use std::fmt;
use std::time::Duration;

use crate::agents::record::SubtaskRun;
use crate::llm::Usage;

/// Time spent waiting (not the agent's overhead), and the main model's tokens.
#[derive(Default)]
pub(super) struct Timing {
    pub(super) usage_main: Usage,
    /// Waiting for the model.
    pub(super) model_time: Duration,
    /// Waiting for a person's answer to a question about a call (not model time).
    pub(super) person_time: Duration,
    /// The answer text streamed by the model step in progress (kept when it is stopped).
    pub(super) partial: String,
    /// What went wrong on the way without failing the turn (the record's `problems`).
    pub(super) problems: Vec<Problem>,
    /// The sub-turns of the turn's `subtasks` calls.
    pub(super) subtasks: Vec<SubtaskRun>,
    /// The person stopped the turn at a question about a call: its reply says so, and
    /// nothing is learned from it.
    pub(super) stopped: bool,
    /// What the last request chose for the question (the L2 picks and the context
    /// block before it): kept with the turn, so the next turn's request repeats this
    /// one as its prefix.
    pub(super) chosen: evolve_core::history::Chosen,
}

impl Timing {
    /// All the turn waited for: the model and a person. The rest of its time is the
    /// agent's own overhead.
    pub(super) fn waited(&self) -> Duration {
        self.model_time + self.person_time
    }

    /// Notes `problem` once: a step that meets the same problem again adds nothing.
    pub(super) fn note(&mut self, problem: Problem) {
        let kind = std::mem::discriminant(&problem);
        if self
            .problems
            .iter()
            .all(|p| std::mem::discriminant(p) != kind)
        {
            self.problems.push(problem);
        }
    }

    /// The problems as the record says them.
    pub(super) fn problem_texts(&self) -> Vec<String> {
        self.problems.iter().map(Problem::to_string).collect()
    }
}

/// Something that went wrong during a turn without failing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Problem {
    /// The model takes no images: this many of the question's were left out, with a
    /// note in their place.
    ImagesLeftOut(usize),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::ImagesLeftOut(n) => write!(
                f,
                "the model does not take images: {n} left out, the text sent with a note in \
                 their place"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_met_on_every_step_is_noted_once_with_the_first_count() {
        let mut t = Timing::default();
        t.note(Problem::ImagesLeftOut(2));
        t.note(Problem::ImagesLeftOut(3));
        assert_eq!(
            t.problem_texts(),
            [
                "the model does not take images: 2 left out, the text sent with a note in \
              their place"
            ]
        );
    }

    #[test]
    fn waiting_for_a_person_is_waiting_but_not_model_time() {
        let t = Timing {
            model_time: Duration::from_millis(300),
            person_time: Duration::from_secs(20),
            ..Timing::default()
        };
        assert_eq!(t.waited(), Duration::from_millis(20_300));
        assert_eq!(t.model_time, Duration::from_millis(300));
    }
}
