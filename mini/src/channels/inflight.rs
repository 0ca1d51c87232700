//! An event whose turn has started and is not yet acknowledged, as the store keeps it:
//! after a restart its answer goes into the messages already sent.

use serde::{Deserialize, Serialize};

use super::Sent;

/// An event whose turn has started and is not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub(super) struct Inflight {
    pub(super) seq: u64,
    pub(super) chat: String,
    pub(super) session: String,
    /// The messages the answer is shown in so far.
    pub(super) sent: Vec<Sent>,
    /// The turn is stored: the answer to deliver (`None`: a question with buttons was
    /// the last thing, already sent).
    pub(super) done: Option<Option<String>>,
}
