//! Semantic duplicates by embedding (tea-agent `detect_duplicates` / `auto_dedup`).
//!
//! Decides which pairs of active memories are near-duplicates: both have an embedding
//! and their cosine is at least 0.92. Computing the embeddings and performing the merge
//! (with [`super::merge`], then soft-deleting the dropped one) are the shell's.
//!
//! The scan is O(n²) in the number of memories with embeddings, so only the newest
//! `duplicate_scan_limit` (1 000 by default, ≈ 500 000 cosines) are compared; older ones
//! were compared by earlier runs. Each memory appears in at most one pair per run (pairs
//! are taken greedily, most similar first), so merging all pairs of one run never merges
//! a memory twice.

use alloc::vec::Vec;
use serde::Serialize;

use super::{at_least, Memory, MemoryConfig, MemoryId};
use crate::text::cosine;
use crate::Timestamp;

/// Two memories that say the same thing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DuplicatePair {
    /// The one to keep and merge into: the older (then lower id).
    pub keep: MemoryId,
    /// The one to merge from and soft-delete.
    pub drop: MemoryId,
    /// Their embeddings' cosine.
    pub cosine: f32,
}

/// The near-duplicate pairs among the active memories with embeddings.
pub fn embedding_duplicates(
    memories: &[Memory],
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Vec<DuplicatePair> {
    let mut with: Vec<(&Memory, &[f32])> = memories
        .iter()
        .filter(|m| m.is_active(now))
        .filter_map(|m| m.embedding.as_deref().map(|e| (m, e)))
        .filter(|(_, e)| !e.is_empty())
        .collect();
    // Newest first, so the cap keeps the ones not compared before.
    with.sort_by(|(a, _), (b, _)| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    with.truncate(cfg.duplicate_scan_limit);

    // For each memory, its most similar later partner above the threshold: O(n) memory.
    let mut candidates: Vec<(usize, usize, f32)> = Vec::new();
    for (i, (_, ei)) in with.iter().enumerate() {
        let mut best: Option<(usize, f32)> = None;
        for (j, (_, ej)) in with.iter().enumerate().skip(i + 1) {
            let c = cosine(ei, ej);
            if at_least(c, cfg.duplicate_cosine) && best.is_none_or(|(_, b)| c > b) {
                best = Some((j, c));
            }
        }
        if let Some((j, c)) = best {
            candidates.push((i, j, c));
        }
    }
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));

    let mut used = alloc::vec![false; with.len()];
    let mut pairs = Vec::new();
    for (i, j, c) in candidates {
        if used.get(i).copied().unwrap_or(true) || used.get(j).copied().unwrap_or(true) {
            continue;
        }
        let (Some((a, _)), Some((b, _))) = (with.get(i), with.get(j)) else {
            continue;
        };
        if let Some(u) = used.get_mut(i) {
            *u = true;
        }
        if let Some(u) = used.get_mut(j) {
            *u = true;
        }
        let (keep, drop) = if (a.created_at, a.id) <= (b.created_at, b.id) {
            (a, b)
        } else {
            (b, a)
        };
        pairs.push(DuplicatePair {
            keep: keep.id,
            drop: drop.id,
            cosine: c,
        });
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;
    use alloc::vec;

    fn mem(id: MemoryId, created: Timestamp, e: Option<Vec<f32>>) -> Memory {
        let mut m = Memory::new("x", Category::Fact, created, &FallbackTokenizer);
        m.id = id;
        m.embedding = e;
        m
    }

    #[test]
    fn pairs_at_or_above_point_nine_two_older_kept() {
        let cfg = MemoryConfig::default();
        // cos(θ) for (1, t): 1/sqrt(1+t²). t = 0.4 → 0.928; t = 0.45 → 0.912.
        let ms = vec![
            mem(1, 10, Some(vec![1.0, 0.0])),
            mem(2, 20, Some(vec![1.0, 0.4])),
            mem(3, 30, Some(vec![0.0, 1.0])),
            mem(4, 40, Some(vec![0.45, 1.0])),
            mem(5, 50, None),
        ];
        let pairs = embedding_duplicates(&ms, 100, &cfg);
        assert_eq!(pairs.len(), 1);
        assert_eq!((pairs[0].keep, pairs[0].drop), (1, 2));
        assert!(pairs[0].cosine >= 0.92);
    }

    #[test]
    fn each_memory_in_one_pair_and_inactive_skipped() {
        let cfg = MemoryConfig::default();
        let mut ms = vec![
            mem(1, 10, Some(vec![1.0, 0.0])),
            mem(2, 20, Some(vec![1.0, 0.0])),
            mem(3, 30, Some(vec![1.0, 0.0])),
        ];
        let pairs = embedding_duplicates(&ms, 100, &cfg);
        assert_eq!(pairs.len(), 1, "three copies: one pair this run");
        ms[0].deleted = true;
        let pairs = embedding_duplicates(&ms, 100, &cfg);
        assert_eq!((pairs[0].keep, pairs[0].drop), (2, 3));
        let capped = MemoryConfig {
            duplicate_scan_limit: 1,
            ..cfg
        };
        assert!(embedding_duplicates(&ms, 100, &capped).is_empty());
    }
}
