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
    /// Where it was learned from: a `world` memory puts world text in the turn.
    #[serde(skip_serializing_if = "is_person")]
    pub source: evolve_core::provenance::Source,
}

fn is_person(s: &evolve_core::provenance::Source) -> bool {
    *s == evolve_core::provenance::Source::Person
}

/// One tool call of the turn and what happened to it (the core's record).
pub use evolve_core::turn::CallRecord as ToolRun;

/// The calls of a turn refused because they needed a person (a headless run cannot ask
/// one): what `ask`, a scheduled task and a plain API client report after the answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Refused {
    /// Name and level of each refused call, in order.
    pub calls: Vec<(String, Level)>,
    /// A call of the turn would have sent data off the machine after outside text
    /// entered it (the egress rule): listing the host lets it through.
    pub sends_data: bool,
}

impl Refused {
    /// From the turn's calls.
    pub fn of(tools: &[ToolRun]) -> Refused {
        Refused {
            calls: tools
                .iter()
                .filter(|t| !t.ran && t.decision.is_some_and(Decision::needs_person))
                .map(|t| (t.name.clone(), t.level.unwrap_or(Level::L4)))
                .collect(),
            sends_data: tools
                .iter()
                .any(|t| t.decision.is_some_and(Decision::sends_data)),
        }
    }

    /// From the `tools` of a turn record read as JSON (a server's answer to `ask`), each
    /// field on its own so that a record with fewer fields still reads (a missing level
    /// counts as L4).
    pub fn of_json(tools: &serde_json::Value) -> Refused {
        let tools = tools.as_array().map(Vec::as_slice).unwrap_or_default();
        let decision =
            |t: &serde_json::Value| serde_json::from_value::<Decision>(t["decision"].clone()).ok();
        Refused {
            calls: tools
                .iter()
                .filter(|t| t["ran"] == false && decision(t).is_some_and(Decision::needs_person))
                .map(|t| {
                    let level = serde_json::from_value(t["level"].clone()).unwrap_or(Level::L4);
                    (t["name"].as_str().unwrap_or("?").to_string(), level)
                })
                .collect(),
            sends_data: tools
                .iter()
                .any(|t| decision(t).is_some_and(Decision::sends_data)),
        }
    }

    /// No call was refused.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// A refused call was above L3: no flag lets it through, only a person.
    pub fn above_l3(&self) -> bool {
        self.calls.iter().any(|(_, l)| *l > Level::L3)
    }

    /// `shell (L3), http_get (L3)`.
    pub fn names(&self) -> String {
        let names: Vec<String> = self
            .calls
            .iter()
            .map(|(n, l)| format!("{n} ({l})"))
            .collect();
        names.join(", ")
    }

    /// The error a headless run ends with, with what lets the calls through (`hint`).
    pub fn message(&self, hint: &str) -> String {
        format!(
            "refused tool calls that need a person: {} — {hint}",
            self.names()
        )
    }
}

/// Characters of one sub-turn's answer given back to the parent model (and shown).
pub const SUBTASK_REPLY_CHARS: usize = 6_000;

/// One sub-turn and what came of it.
#[derive(Debug, Clone, Serialize)]
pub struct SubtaskRun {
    /// From 1, in the order the model gave them.
    pub index: usize,
    /// The subtask's text.
    pub task: String,
    /// Its answer (empty when it failed).
    pub reply: String,
    /// Its tool calls, in order.
    pub tools: Vec<ToolRun>,
    /// Its model round trips.
    pub steps: usize,
    /// Milliseconds from its start to its answer.
    pub ms: u64,
    /// Its main-model tokens (counted in the parent's usage too).
    pub usage: Usage,
    /// One of its calls needed a person and was refused (a headless run).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_person: bool,
    /// Why it has no answer (the model's error, stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
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
    /// The name of a skill drafted from this task that read outside text: it waits for
    /// the person's review (`evolve skills approve NAME`), not used until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_pending: Option<String>,
    /// The lesson saved from this task when it went wrong, as the prompt shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson: Option<String>,
    /// The session's new title, when this turn gave it one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether the session's tool-chain review was updated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tool_chain: bool,
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
    /// The turn is parked: this call waits for a person, and the session's next input
    /// answers it (the reply is empty until then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<evolve_core::permission::PendingCall>,
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
    /// A skill drafted from this task that waits for the person's review (see
    /// [`PostTurn`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_pending: Option<String>,
    /// The lesson saved from this task, if it went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson: Option<String>,
    /// Token usage per model.
    pub usage: TurnUsage,
    /// Milliseconds from input to the answer (waiting for the model and for a person
    /// included).
    pub answer_ms: u64,
    /// Milliseconds the agent itself spent (all but waiting for the model or a person).
    pub overhead_ms: f64,
    /// Milliseconds of `answer_ms` spent waiting for a person to answer a question
    /// about a call (0, and left out, when nobody was asked).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub person_ms: u64,
    /// What the background work skipped, and why (an unusable grade, a failed cheap
    /// call, an expiry that could not be read); empty when nothing was skipped or the
    /// background work was not waited for.
    pub problems: Vec<String>,
    /// Why the turn has no answer: the model's error, or `stopped` (the person
    /// stopped it). The question (and the tool rounds that ran) are kept in the session,
    /// so an interface can show the failure after a reload and offer to ask again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The sub-turns its `subtasks` calls ran, each with its own calls and answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subtasks: Vec<SubtaskRun>,
}

impl TurnRecord {
    /// Stores the record (given without its reply, which is stored once, as the turn's
    /// last message). A failure is logged: the turn itself is already stored.
    pub fn save(&self, store: &crate::store::Store) {
        if let Ok(json) = serde_json::to_string(self) {
            if let Err(e) = store.put_turn(&self.session, self.turn, &json) {
                log::warn!("saving the turn record failed: {e}");
            }
        }
    }

    /// The record of a turn that did nothing yet.
    pub fn empty(session: &str, turn: u64) -> TurnRecord {
        TurnRecord {
            session: session.to_string(),
            turn,
            reply: String::new(),
            memories: Vec::new(),
            memories_considered: 0,
            skills: Vec::new(),
            tools: Vec::new(),
            steps: 0,
            needs_person: false,
            waiting: None,
            evaluation: None,
            reflection: None,
            learned_skill: None,
            skill_pending: None,
            lesson: None,
            subtasks: Vec::new(),
            usage: TurnUsage::default(),
            answer_ms: 0,
            overhead_ms: 0.0,
            person_ms: 0,
            problems: Vec::new(),
            failed: None,
        }
    }

    /// Folds the background results in.
    pub fn absorb(&mut self, post: &PostTurn) {
        self.evaluation = post.evaluation.clone();
        self.reflection = post.reflection.clone();
        self.learned_skill = post.learned_skill.clone();
        self.skill_pending = post.skill_pending.clone();
        self.lesson = post.lesson.clone();
        // The turn's own problems stay; the background's follow (once).
        for p in &post.problems {
            if !self.problems.contains(p) {
                self.problems.push(p.clone());
            }
        }
        self.usage.cheap.add(post.usage);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
