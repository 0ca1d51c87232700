//! The agents of one turn (DESIGN.md "One turn", seed 002): the [`Manager`] runs the
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

mod crystallize;
mod evaluate;
mod lesson;
pub mod maintain;
mod manager;
mod memory;
pub(crate) mod prompts;
mod record;
mod reflect;
mod runtime;
pub(crate) mod style;
mod tool;
mod trace;
pub(crate) mod versions;
mod worker;

pub use manager::{Approval, Manager, TurnInput, TurnIo};
pub use record::{PostTurn, ToolRun, TurnRecord};
pub use runtime::Runtime;

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

/// What every agent says about itself (shown by `/help` and in logs).
pub trait Agent {
    /// A stable id (`manager`, `memory`, `tool`, `evaluate`, `reflect`).
    fn id(&self) -> &'static str;
    /// A display name.
    fn name(&self) -> &'static str;
    /// One line: what it does.
    fn description(&self) -> &'static str;
}

/// Implements [`Agent`] for a unit-like agent struct.
macro_rules! describe_agent {
    ($ty:ty, $id:literal, $name:literal, $desc:literal) => {
        impl $crate::agents::Agent for $ty {
            fn id(&self) -> &'static str {
                $id
            }
            fn name(&self) -> &'static str {
                $name
            }
            fn description(&self) -> &'static str {
                $desc
            }
        }
    };
}
pub(crate) use describe_agent;
