//! What a maintenance run reports: every record it changed or added, step by step, the
//! model's tokens, the problems that skipped a step and a store error that stopped the
//! run. The CLI prints it, the API returns it as JSON, serve's daily job logs it; the
//! report decides nothing, it only says what the steps decided.

use evolve_core::memory::{Category, MemoryId, RejectReason};
use evolve_core::Timestamp;
use serde::Serialize;

/// One priority changed, by age or by the model's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorityChange {
    /// The memory.
    pub id: MemoryId,
    /// Priority before (`critical` … `low`).
    pub from: &'static str,
    /// Priority after.
    pub to: &'static str,
}

/// Two memories merged into one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeDone {
    /// The memory kept (the older), now holding the merge.
    pub kept: MemoryId,
    /// The memory merged into it and soft-deleted.
    pub dropped: MemoryId,
    /// Their similarity (cosine or keyword Jaccard with the category bonus).
    pub similarity: f32,
    /// `embedding` or `keywords`.
    pub by: &'static str,
}

/// One importance lowered because the memory was summarised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportanceDrop {
    /// The memory.
    pub id: MemoryId,
    /// Importance before.
    pub from: u8,
    /// Importance after.
    pub to: u8,
}

/// A summary written for a cluster of one category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SummaryDone {
    /// The new summary's id (0 in a dry run: it was not stored).
    pub id: MemoryId,
    /// How to name it to a person: `#18` once stored, `new summary 1` (numbered in
    /// the run) when it is not, as in a dry run.
    pub label: String,
    /// The cluster's category.
    pub category: Category,
    /// The summarised memories.
    pub members: Vec<MemoryId>,
    /// The summary's text.
    pub content: String,
    /// The originals whose importance dropped (pinned ones and those at 1 do not).
    pub importance: Vec<ImportanceDrop>,
}

/// A proposal of the model that core's rule refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// The memory the model named.
    pub id: MemoryId,
    /// Why (`jump`, `pinned`, `limit_reached`, …).
    pub reason: RejectReason,
}

/// What one maintenance run did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MaintainReport {
    /// Nothing was written.
    pub dry_run: bool,
    /// The moment the rules were applied at (Unix seconds).
    pub at: Timestamp,
    /// Live memories before the run.
    pub memories_before: usize,
    /// Live memories after the run.
    pub memories_after: usize,
    /// Step 1: expired memories soft-deleted.
    pub expired: Vec<MemoryId>,
    /// Step 2: priorities lowered by age.
    pub decayed: Vec<PriorityChange>,
    /// Step 3 (and after steps 5 and 6): CRITICAL memories soft-deleted over the cap.
    pub critical_evicted: Vec<MemoryId>,
    /// Step 3 (and after steps 5 and 6): the model's promotions to CRITICAL taken back
    /// over the cap (HIGH again).
    pub critical_demoted: Vec<PriorityChange>,
    /// Step 4: duplicates merged.
    pub merged: Vec<MergeDone>,
    /// Step 5: summaries written.
    pub summaries: Vec<SummaryDone>,
    /// Step 6: priorities changed on the model's proposal.
    pub adjusted: Vec<PriorityChange>,
    /// Step 6: proposals refused by the rule.
    pub refused: Vec<Refused>,
    /// Model tokens used (prompt + completion).
    pub tokens: u64,
    /// Problems that skipped a step (a model that failed or answered garbage, a
    /// cancelled run); the other steps still ran.
    pub problems: Vec<String>,
    /// A store write that failed: the run stopped there; earlier steps are stored.
    pub error: Option<String>,
}

impl MaintainReport {
    /// How many memory records the run changed or added.
    pub fn changes(&self) -> usize {
        self.expired.len()
            + self.decayed.len()
            + self.critical_evicted.len()
            + self.critical_demoted.len()
            + self.merged.len() * 2
            + self
                .summaries
                .iter()
                .map(|s| 1 + s.importance.len())
                .sum::<usize>()
            + self.adjusted.len()
    }
}
