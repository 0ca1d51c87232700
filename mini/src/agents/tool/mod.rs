//! The Tool agent: lists the tools the model may call, checks each call against the
//! permission rules (core's `check_call`: the tool's class raised by its arguments,
//! then the decision for this interface and session), runs the allowed ones and cuts
//! their output by the core's rule. Asking a person is the Manager's (through the
//! interface); the audit entries are written here.
//!
//! `listing.rs` says which tools a turn has and offers, `check.rs` checks a call,
//! `run.rs` runs it; this file holds the agent and the turn's tools they share.

mod check;
mod listing;
mod run;

use std::sync::Arc;

use evolve_core::text::KeywordSet;

use super::catalog::Catalog;
use super::runtime::Runtime;
use crate::llm::ToolSpec;

/// Tool listing, permission checks and execution.
pub struct ToolAgent;

impl super::Agent for ToolAgent {
    super::describe!(Tool, "Tool", "offers tools to the model, checks every call against the six permission levels and runs the allowed ones");
    fn close(&self, rt: &Runtime, _wait: std::time::Duration) {
        rt.mcp.shutdown();
    }
}

/// The tools of one turn: the built-in ones and a snapshot of the MCP servers' tools,
/// listed when the turn starts (and again when a server says its list changed). The
/// permission check and the run of a call use the entry the model was shown; turns of
/// other sessions running at the same time have their own.
pub struct TurnTools {
    mcp: Option<Arc<Catalog>>,
    generation: u64,
    /// Every tool's schema and keywords, in the order the model sees them.
    cards: Vec<(ToolSpec, KeywordSet)>,
    /// Tools the model asked for with `more_tools` in this turn.
    requested: Vec<String>,
    /// The tools the session has been offered in full, in the order first offered:
    /// offered again on every step (a later request then repeats the earlier one's
    /// tools as its prefix, which a model server's prompt cache reuses).
    offered: Vec<String>,
    /// How many of `offered` the session had stored when the turn began.
    offered_stored: usize,
}

impl TurnTools {
    /// No tools: for a turn that calls neither the model nor a tool (a parked turn
    /// closed by a new message).
    pub fn none() -> TurnTools {
        TurnTools {
            mcp: None,
            generation: 0,
            cards: Vec::new(),
            requested: Vec::new(),
            offered: Vec::new(),
            offered_stored: 0,
        }
    }

    /// Starts from the tools the session has been offered (its stored list).
    pub fn with_offered(mut self, offered: Vec<String>) -> TurnTools {
        self.offered_stored = offered.len();
        self.offered = offered;
        self
    }

    /// The session's offered tools when this turn offered new ones (to be stored).
    pub fn offered_to_store(&mut self) -> Option<Vec<String>> {
        (self.offered.len() > self.offered_stored).then(|| {
            self.offered_stored = self.offered.len();
            self.offered.clone()
        })
    }
}

/// The tool that names the tools not offered in full, and offers those the model asks
/// for from the next step on.
pub const MORE_TOOLS: &str = "more_tools";
