//! Selection of the memories that enter the prompt.

use alloc::vec::Vec;
use serde::Serialize;

use super::{Memory, MemoryConfig, MemoryId};
use crate::text::KeywordSet;
use crate::Timestamp;

/// Why a memory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// CRITICAL memories go first.
    Critical,
    /// Token-overlap F1 with the query at or above the strong-match threshold.
    StrongMatch,
    /// Taken to fill its priority tier's floor.
    TierFloor,
    /// Taken by score among the rest.
    Ranked,
}

/// One chosen memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chosen {
    /// Index into the slice given to [`select`].
    pub index: usize,
    /// The memory's id.
    pub id: MemoryId,
    /// relevance × importance/5 × recency × priority factor.
    pub score: f32,
    /// Token-overlap F1 with the query.
    pub relevance: f32,
    /// Why it was chosen.
    pub reason: Reason,
}

/// The outcome of one selection.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// Chosen memories in prompt order.
    pub chosen: Vec<Chosen>,
    /// How many active memories were scored.
    pub considered: usize,
}

/// Chooses the memories for a prompt. Skeleton: replaced by the full algorithm.
pub fn select(
    memories: &[Memory],
    query: &KeywordSet,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Selection {
    let _ = (memories, query, now, cfg);
    Selection::default()
}
