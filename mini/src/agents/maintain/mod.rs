//! Memory maintenance (tea-agent's 长期记忆系统: 衰减, CRITICAL FIFO, 反思归纳):
//! `evolve memory maintain`, `POST /v1/memory/maintain`, and once a day inside
//! `evolve serve`.
//!
//! Runs core's memory rules against the live store, in this order, each step's writes
//! in one store transaction:
//!
//! 1. **expiry** — memories past `expires_at` are soft-deleted ([`memory::expired`]);
//! 2. **decay** — priorities lowered by age, pinned exempt ([`memory::apply_decay`]);
//! 3. **CRITICAL FIFO** — beyond `critical_cap` (15) the overflow is retired
//!    ([`memory::critical_overflow`], [`memory::retire`]): summaries and the model's
//!    promotions first (a summary is soft-deleted, a promotion goes back to HIGH), then
//!    the oldest of the user's rules (soft-deleted);
//! 4. **duplicates** — with `[model] embedding_model` set, memories without an embedding
//!    get one from `/v1/embeddings` (stored with them); pairs whose embeddings reach
//!    `duplicate_cosine`
//!    ([`memory::embedding_duplicates`]), then pairs whose keyword similarity reaches
//!    `merge_jaccard` and whose merge keeps every word (pinned memories never merge) ([`memory::merge_similarity`],
//!    [`memory::merge_loses_nothing`]) are merged into the older one
//!    ([`memory::merge`]), the newer soft-deleted, until no pair is left;
//! 5. **summaries** — each category with ≥ 2 memories created since the last summary
//!    (and within `summary_window_days`) gets a CRITICAL summary of importance 5 (of
//!    memories learned from world text, clustered apart: a MEDIUM one of the world's), and
//!    its originals lose 1 importance ([`memory::clusters`], [`memory::draft_summary`],
//!    [`memory::demote_summarised`]); the text is the cheap model's digest, or core's
//!    deterministic keyword draft when the model fails;
//! 6. **priorities** — the cheap model reviews a listing ([`memory::adjustment_listing`])
//!    and proposes changes; core's [`memory::adjust_priorities`] applies at most 3, one
//!    level each, whatever the model says, and never raises a memory learned from world
//!    text. Memories of the world and of the person are never merged with each other.
//!
//! Steps 5 and 6 may add CRITICAL memories, so the cap is enforced again in their own
//! transaction. **A run never retires what it wrote**: a summary or a promotion to
//! CRITICAL is made only while [`memory::critical_room`] has room for it, counting what
//! the run already added, so the cap makes way for it by retiring older summaries and
//! promotions, never the user's rules. A summary with no room is not written (a note
//! says why) and its originals keep their importance: importance is only lowered for
//! memories a live summary covers. A model that fails or answers garbage skips step 6
//! with a note; the rule steps still apply. Running it twice in a row changes nothing
//! the second time (apart from what a model proposes anew): every rule only changes what
//! is out of line, merges run to a fixed point, and the last summary's time bounds the
//! next clustering. Summaries are never merged or summarised again.
//!
//! The files, one concept each: `report.rs` what a run reports, `working_copy.rs` the
//! memories a run works on and how a step's changes reach the store, `ageing.rs` steps
//! 1–3, `duplicates.rs` step 4 (with the pure `keyword_pairs.rs`), `summaries.rs` step
//! 5, `priorities.rs` step 6, `replies.rs` what the model's answers are read as (pure).
//! This file runs the steps in order and stops at a cancel or a failed write.

mod ageing;
mod duplicates;
mod keyword_pairs;
mod priorities;
mod replies;
mod report;
mod summaries;
mod working_copy;

use crate::cancel::Cancel;

use evolve_core::memory::{self, Memory};
use evolve_core::Timestamp;

pub use report::{MaintainReport, PriorityChange};

use super::runtime::Runtime;
use working_copy::Run;

/// The daily job of `evolve serve` and the whole of `evolve memory maintain`: runs
/// every step against the store and writes the changes.
pub fn maintain(rt: &Runtime, now: Timestamp, cancel: &Cancel) -> MaintainReport {
    run(rt, now, false, cancel)
}

/// [`maintain`], or with `dry_run` the same decisions without a single write (the model
/// is still asked, so the report shows what it would propose).
pub fn run(rt: &Runtime, now: Timestamp, dry_run: bool, cancel: &Cancel) -> MaintainReport {
    let cfg = &rt.config.core.memory;
    let mut report = MaintainReport {
        dry_run,
        at: now,
        ..MaintainReport::default()
    };
    let all = match rt.store.all_memories() {
        Ok(all) => all,
        Err(e) => {
            report.error = Some(format!("the memories cannot be read: {e}"));
            return report;
        }
    };
    let last_summary = all
        .iter()
        .filter(|m| memory::is_summary(m, cfg))
        .map(|m| m.created_at)
        .max();
    let mems: Vec<Memory> = all.into_iter().filter(|m| !m.deleted).collect();
    let mut run = Run {
        base: mems.iter().cloned().map(Some).collect(),
        mems,
        rt,
        dry_run,
        report,
        new_ids: Vec::new(),
        critical_added: 0,
    };
    run.report.memories_before = run.mems.len();
    for step in STEPS {
        if cancel.is_cancelled() {
            run.report
                .problems
                .push(format!("cancelled before the {step} step"));
            break;
        }
        let changed = match step {
            "expiry" => run.expiry(now),
            "decay" => run.decay(now),
            "CRITICAL cap" => run.critical_cap(now),
            "duplicates" => run.duplicates(now, cancel),
            "summaries" => run.summaries(now, last_summary, cancel),
            _ => run.priorities(now, cancel),
        };
        if let Err(e) = run.save(changed) {
            run.report.error = Some(format!("the {step} step could not be stored: {e}"));
            break;
        }
    }
    run.finish()
}

/// The steps, in order (names for messages).
const STEPS: [&str; 6] = [
    "expiry",
    "decay",
    "CRITICAL cap",
    "duplicates",
    "summaries",
    "priorities",
];

#[cfg(test)]
mod tests;
