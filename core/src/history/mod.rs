//! History: building the messages sent to the model under the token budget.

use serde::{Deserialize, Serialize};

/// Constants of the history rules (defaults from tea-agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryConfig {
    /// Tool output longer than this is cut (128 KiB).
    pub max_tool_output_bytes: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            max_tool_output_bytes: 128 * 1024,
        }
    }
}
