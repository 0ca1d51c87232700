//! The keyword near-duplicates among live memories: which pairs merge when no embedding
//! says so. A pure rule over the working copy (no store, no model, no clock), tested by
//! a table in `keyword_pairs_tests.rs`.

use evolve_core::memory::{self, Memory, MemoryConfig, MemoryId};
use evolve_core::text::Tokenizer;
use evolve_core::Timestamp;

/// The keyword near-duplicates among live memories that are not summaries: similarity
/// at least `merge_jaccard` and a merge that keeps every word (core's ingest rule), each
/// memory in at most one pair, most similar first, the older kept. The newest
/// `duplicate_scan_limit` are compared with every other one.
pub(super) fn keyword_pairs(
    mems: &[Memory],
    now: Timestamp,
    cfg: &MemoryConfig,
    tokenizer: &dyn Tokenizer,
) -> Vec<(MemoryId, MemoryId, f32)> {
    let mut live: Vec<&Memory> = mems
        .iter()
        .filter(|m| m.is_active(now) && !m.pinned && !memory::is_summary(m, cfg))
        .collect();
    // Oldest first, so for i < j the older is `live[i]`.
    live.sort_by_key(|m| (m.created_at, m.id));
    let first_scanned = live.len().saturating_sub(cfg.duplicate_scan_limit);
    let mut candidates = Vec::new();
    for j in first_scanned..live.len() {
        for i in 0..j {
            let (older, newer) = (live[i], live[j]);
            // What a page said never merges with the person's memory.
            if older.is_world() != newer.is_world() {
                continue;
            }
            let s = memory::merge_similarity(older, newer, cfg);
            if s > 0.0
                && s + 1e-6 >= cfg.merge_jaccard
                && memory::merge_loses_nothing(older, newer, tokenizer)
            {
                candidates.push((older.id, newer.id, s));
            }
        }
    }
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    let mut used: Vec<MemoryId> = Vec::new();
    let mut pairs = Vec::new();
    for (keep, drop, s) in candidates {
        if used.contains(&keep) || used.contains(&drop) {
            continue;
        }
        used.extend([keep, drop]);
        pairs.push((keep, drop, s));
    }
    pairs
}

#[cfg(test)]
#[path = "keyword_pairs_tests.rs"]
mod tests;
