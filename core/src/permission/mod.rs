//! Permission: levels L0–L5 and the decision for one tool call.

use serde::{Deserialize, Serialize};

/// Constants of the permission rules.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionConfig {}
