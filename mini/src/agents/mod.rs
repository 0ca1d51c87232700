//! The agents of one turn (ARCHITECTURE.md § The turn): the [`Manager`] runs the
//! turn and hands work to the [`MemoryAgent`], the [`ToolAgent`], the
//! [`EvaluateAgent`] and the [`ReflectionAgent`]. Each agent is a small struct with an
//! id, a name and a description ([`Agent`]) and methods that do one thing; the rules
//! they apply are the core's, the I/O (model, store, tools) is theirs.
//!
//! What runs where: memory search and skill matching run side by side before the first
//! model call (scoped threads); the tool loop runs on the caller's thread (it streams);
//! everything after the reply — memory extraction, evaluation, reflection, style
//! learning, skills crystallized from tasks that worked, lessons from tasks that went
//! wrong, the L3 summary — runs on the [`Worker`] so the answer is not delayed.

mod catalog;
pub(crate) mod crystallize;
mod evaluate;
mod host;
mod io;
mod lesson;
pub mod maintain;
mod manager;
pub(crate) mod mcp_levels;
mod memory;
mod notes;
mod post_turn;
pub(crate) mod prompts;
mod record;
mod reflect;
mod runtime;
pub(crate) mod style;
pub mod subtasks;
mod tool;
mod trace;
pub(crate) mod versions;
mod worker;
mod yield_gate;

pub use host::{Host, NoGate, TurnGate};
pub use io::{Heard, SubEvent, TurnInput, TurnIo};
pub use manager::{check_replace, Manager};
pub use record::{PostTurn, Refused, ToolRun, TurnRecord};
pub use runtime::Runtime;

pub use catalog::offered as offered_tools;
pub use evaluate::EvaluateAgent;
pub use memory::MemoryAgent;
pub use reflect::{ReflectionAgent, REFLECTION_TAG};
pub use tool::ToolAgent;

/// Records a problem of the background work: logged (the worker has no terminal of
/// its own) and kept for the turn record.
fn note(problems: &mut Vec<String>, problem: String) {
    log::warn!("{problem}");
    problems.push(problem);
}

/// Every agent of a turn, for `/help` and logs.
pub fn all(manager: &Manager) -> [&dyn Agent; 5] {
    [
        manager,
        &MemoryAgent,
        &ToolAgent,
        &EvaluateAgent,
        &ReflectionAgent,
    ]
}

/// Every agent of a turn (the five of the Evolve Agent design): what it says about itself — shown by `/help` and
/// in logs, and named by each of the turn's actions ([`evolve_core::turn::Action::agent`])
/// — and how it stops. What each one does is its own typed methods, run by the
/// [`Manager`]'s driver as the turn's actions ask.
pub trait Agent {
    /// Which agent it is.
    fn agent(&self) -> AgentId;
    /// A stable id (`manager`, `memory`, `tool`, `evaluate`, `reflect`).
    fn id(&self) -> &'static str {
        self.agent().as_str()
    }
    /// A display name.
    fn name(&self) -> &'static str;
    /// One line: what it does.
    fn description(&self) -> &'static str;
    /// Stops what it keeps running (the Tool agent its MCP servers, the Manager its
    /// background work after finishing what was queued, within `wait`).
    fn close(&self, _rt: &Runtime, _wait: std::time::Duration) {}
}

pub use evolve_core::turn::AgentId;

/// Closes every agent (before the process exits).
pub fn close_all(manager: &Manager, wait: std::time::Duration) {
    let rt = manager.runtime();
    for agent in all(manager) {
        agent.close(rt, wait);
    }
}

/// The three describing methods of an [`Agent`] impl: which agent, its display name and
/// its one-line description.
macro_rules! describe {
    ($id:ident, $name:literal, $desc:literal) => {
        fn agent(&self) -> $crate::agents::AgentId {
            $crate::agents::AgentId::$id
        }

        fn name(&self) -> &'static str {
            $name
        }

        fn description(&self) -> &'static str {
            $desc
        }
    };
}
pub(crate) use describe;
