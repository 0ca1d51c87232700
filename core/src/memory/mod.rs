//! Memory: everything that decides about long-term memories.
//!
//! Scoring and selection with tier quotas, age decay, expiry, ingest (merge or insert),
//! the CRITICAL FIFO cap, embedding duplicates, clustering for summaries, the
//! priority-adjustment rules and the injected block. Storage and the model calls are the
//! shell's.

mod record;
mod select;

pub use record::{
    content_hash, Category, Memory, MemoryId, Priority, IMPORTANCE_MAX, IMPORTANCE_MIN,
};
pub use select::{select, Chosen, Reason, Selection};

use serde::{Deserialize, Serialize};

/// Constants of the memory rules (defaults from tea-agent and seed 002).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// At most this many memories enter the prompt (tea-agent: 30).
    pub max_selected: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { max_selected: 30 }
    }
}
