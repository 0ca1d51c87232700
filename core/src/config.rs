//! The configuration of every rule in the core, with the design's numbers as defaults
//! (ARCHITECTURE.md § Design constants). The shell deserialises it from `config.toml`
//! (unknown keys rejected) and hands the parts to the functions that need them.

use serde::{Deserialize, Serialize};

use crate::{history::HistoryConfig, memory::MemoryConfig, permission::PermissionConfig};

/// All tunable constants of the core.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoreConfig {
    /// Memory selection, decay, ingest and maintenance.
    pub memory: MemoryConfig,
    /// Building the messages sent to the model under the token budget.
    pub history: HistoryConfig,
    /// Permission levels and escalation.
    pub permission: PermissionConfig,
}
