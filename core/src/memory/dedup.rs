//! Semantic duplicates by embedding (tea-agent `detect_duplicates` / `auto_dedup`).
//!
//! Decides which pairs of active memories are near-duplicates: both have an embedding,
//! their cosine is at least 0.92, and both or neither were learned from world text (a
//! page's copy of the person's memory is never merged into it). Computing the embeddings and performing the merge
//! (with [`super::merge`], then soft-deleting the dropped one) are the shell's.
//!
//! **Scope.** tea-agent scans all active memories (扫描全部活跃记忆). Each run compares
//! the newest `duplicate_scan_limit` (1 000) memories with embeddings against every
//! active memory with an embedding, O(limit × n) cosines instead of O(n²): a pair of
//! two older memories was compared by the run in which the newer of them was new (if
//! the shell runs the scan at least once per 1 000 new memories), so a new copy of
//! however old a memory is always found, while a store of 10 000 costs ≈ 10 million
//! cosines rather than 50 million. Each memory appears in at most one pair
//! per run (pairs are taken greedily, most similar first), so merging all pairs of one
//! run never merges a memory twice; the older of a pair is kept.
//!
//! **Speed.** Squared norms are computed once per memory; each pair then costs one
//! `f32` dot product in eight independent lanes (vectorised by the compiler). That dot
//! only pre-filters, with a margin larger than its rounding error: every pair it lets
//! through is decided by `text::cosine`, so the result is exactly that of computing
//! every cosine with `text::cosine`. The scanned memories are taken in blocks of 64, so
//! each older embedding is read from memory once per block rather than once per
//! scanned memory (the scan is otherwise bound by memory bandwidth).

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

/// Dot product in `f32` with eight independent accumulators, so the compiler can keep
/// them in vector registers. Only for the pre-filter: see [`Prefilter`].
fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((s, p), q) in acc.iter_mut().zip(x).zip(y) {
            *s += p * q;
        }
    }
    let mut tail = 0f32;
    for (p, q) in ra.iter().zip(rb) {
        tail += p * q;
    }
    acc.iter().sum::<f32>() + tail
}

/// A cheap test that rejects pairs whose cosine is certainly below the threshold.
///
/// The `f32` dot of vectors of length `d` is off by at most about `d · ε/2 · |a||b|`
/// (ε = `f32::EPSILON`; Cauchy–Schwarz bounds `Σ|aᵢbᵢ|` by `|a||b|`), so its cosine is
/// off by at most `d · ε/2` plus the `f64` norms' negligible error. The filter passes
/// every pair whose estimate reaches `threshold − 1e-6 − (d · ε + 1e-4)`, twice that
/// bound plus a margin, and leaves the decision to `text::cosine`. Vectors so small that
/// their `f32` products underflow (`|a|·|b| < 1e-30`) or so large that they overflow
/// (the dot is not finite) are always computed exactly.
struct Prefilter {
    /// `threshold − tolerance − margin` before the per-length margin; `None` when the
    /// threshold is so low (≤ the margins) that every pair is computed exactly.
    lower: Option<f64>,
}

impl Prefilter {
    fn new(threshold: f32) -> Self {
        // `at_least` accepts 1e-6 below the threshold.
        let lower = f64::from(threshold) - 1e-6 - 1e-4;
        Prefilter {
            lower: (lower > 0.0).then_some(lower),
        }
    }

    /// False only when the cosine of `a` and `b` (squared norms `na`, `nb`, computed
    /// in `f64`) is certainly below the threshold.
    fn may_pass(&self, a: &[f32], na: f64, b: &[f32], nb: f64) -> bool {
        let Some(lower) = self.lower else {
            return true;
        };
        // `text::cosine` is 0 for these, below any positive threshold.
        if a.len() != b.len() || !(na > 0.0 && nb > 0.0 && na.is_finite() && nb.is_finite()) {
            return false;
        }
        let lower = lower - a.len() as f64 * f64::from(f32::EPSILON);
        // Tiny vectors: f32 products would underflow, so the bound above fails.
        if lower <= 0.0 || na * nb < 1e-60 {
            return true;
        }
        let dot = f64::from(dot_f32(a, b));
        if !dot.is_finite() {
            return true; // overflow in f32: decide exactly
        }
        // cos ≥ lower > 0  ⇔  dot > 0 and dot² ≥ lower² · |a|² · |b|²
        dot > 0.0 && dot * dot >= lower * lower * na * nb
    }
}

/// Scanned memories compared together against each older one (64 embeddings of 384
/// `f32` are 96 KiB, which stays in the L2 cache).
const SCAN_BLOCK: usize = 64;

/// Squared norm in `f64`.
fn norm2(v: &[f32]) -> f64 {
    v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum()
}

/// The near-duplicate pairs among the active memories with embeddings: each of the
/// newest `duplicate_scan_limit` is compared with every older one.
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
    // Newest first: the first `scan` are the ones not compared before.
    with.sort_by(|(a, _), (b, _)| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    let scan = with.len().min(cfg.duplicate_scan_limit);
    let norms: Vec<f64> = with.iter().map(|(_, e)| norm2(e)).collect();
    let filter = Prefilter::new(cfg.duplicate_cosine);

    // For each scanned memory, its most similar older partner above the threshold.
    // Blocked: each older embedding is read once per block of scanned ones (kept in
    // cache), not once per scanned one; for each scanned memory the partners are still
    // visited in order, so the result is that of the plain double loop.
    let mut candidates: Vec<(usize, usize, f32)> = Vec::new();
    let mut best: Vec<Option<(usize, f32)>> = Vec::new();
    for start in (0..scan).step_by(SCAN_BLOCK) {
        let end = start.saturating_add(SCAN_BLOCK).min(scan);
        let (Some(rows), Some(row_norms)) = (with.get(start..end), norms.get(start..end)) else {
            break;
        };
        best.clear();
        best.resize(rows.len(), None);
        for (j, ((mj, ej), nj)) in with.iter().zip(&norms).enumerate().skip(start + 1) {
            // Only the scanned memories newer than j (i < j).
            let newer = rows
                .iter()
                .zip(row_norms)
                .zip(best.iter_mut())
                .take(j - start);
            for (((mi, ei), ni), best) in newer {
                // World text never merges with the person's memory.
                if mi.is_world() != mj.is_world() || !filter.may_pass(ei, *ni, ej, *nj) {
                    continue;
                }
                let c = cosine(ei, ej);
                if at_least(c, cfg.duplicate_cosine) && best.is_none_or(|(_, b)| c > b) {
                    *best = Some((j, c));
                }
            }
        }
        for (i, b) in (start..).zip(&best) {
            if let Some((j, c)) = *b {
                candidates.push((i, j, c));
            }
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
    fn a_world_copy_pairs_with_world_memories_only() {
        use crate::provenance::Source;
        let cfg = MemoryConfig::default();
        let world = |m: Memory| m.with_source(Source::World);
        // 1 (person) and 2, 3 (world) say the same; 2 and 3 pair, 1 is left alone.
        let ms = vec![
            mem(1, 10, Some(vec![1.0, 0.0])),
            world(mem(2, 20, Some(vec![1.0, 0.01]))),
            world(mem(3, 30, Some(vec![1.0, 0.02]))),
        ];
        let pairs: Vec<(MemoryId, MemoryId)> = embedding_duplicates(&ms, 100, &cfg)
            .iter()
            .map(|p| (p.keep, p.drop))
            .collect();
        assert_eq!(pairs, vec![(2, 3)]);
        // Alone with the person's, a world copy pairs with nothing.
        assert!(embedding_duplicates(&ms[..2], 100, &cfg).is_empty());
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
        // Only the newest (3) is scanned, but against every older memory: (2, 3) found.
        let capped = MemoryConfig {
            duplicate_scan_limit: 1,
            ..cfg.clone()
        };
        let pairs = embedding_duplicates(&ms, 100, &capped);
        assert_eq!((pairs[0].keep, pairs[0].drop), (2, 3));
        let none = MemoryConfig {
            duplicate_scan_limit: 0,
            ..cfg
        };
        assert!(embedding_duplicates(&ms, 100, &none).is_empty());
    }

    #[test]
    fn a_new_copy_of_a_memory_older_than_the_newest_thousand_is_found() {
        // Review case: 1 002 memories with embeddings. The oldest (id 1) is past the
        // newest 1 000; the newest (id 1002) says the same thing. tea-agent: 扫描全部活跃记忆.
        let cfg = MemoryConfig::default();
        let mut ms = vec![mem(1, 0, Some(vec![1.0, 0.0, 0.0]))];
        for id in 2..=1001 {
            // Fillers: all alike, so they pair among themselves, never with 1 or 1002.
            ms.push(mem(id, 10 + id as Timestamp, Some(vec![0.0, 1.0, 0.0])));
        }
        ms.push(mem(1002, 5_000, Some(vec![1.0, 0.0, 0.01])));
        let pairs = embedding_duplicates(&ms, 10_000, &cfg);
        let found = pairs.iter().find(|p| p.drop == 1002).map(|p| p.keep);
        assert_eq!(found, Some(1), "pairs: {}", pairs.len());
        // Still each memory in at most one pair, the older kept.
        let mut seen: Vec<MemoryId> = Vec::new();
        for p in &pairs {
            assert!(!seen.contains(&p.keep) && !seen.contains(&p.drop));
            seen.extend([p.keep, p.drop]);
            assert!(p.keep < p.drop, "older kept");
        }
    }

    #[test]
    fn tiny_and_huge_embeddings_are_compared_by_direction() {
        let cfg = MemoryConfig::default();
        for scale in [1e-30f32, 1e-20, 1.0, 1e20, 1e30] {
            let ms = vec![
                mem(1, 10, Some(vec![scale, 0.0, 0.0])),
                mem(2, 20, Some(vec![scale, 0.1 * scale, 0.0])), // cos 0.995
                mem(3, 30, Some(vec![0.0, 0.0, scale])),
            ];
            let pairs = embedding_duplicates(&ms, 100, &cfg);
            let got: Vec<_> = pairs.iter().map(|p| (p.keep, p.drop)).collect();
            assert_eq!(got, vec![(1, 2)], "scale {scale}");
        }
    }

    #[test]
    fn cosine_just_below_and_at_the_threshold_with_long_embeddings() {
        // 384 dimensions; the pair's cosine is set exactly around 0.92, so the fast
        // pre-filter must agree with `text::cosine` at the boundary.
        let dims = 384;
        let a: Vec<f32> = (0..dims).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        for (t, duplicate) in [
            (0.4f32, true),
            (0.4259, true),
            (0.4261, false),
            (0.45, false),
        ] {
            // (1, t): cos = 1 / sqrt(1 + t²); 0.4259 → 0.920033, 0.4261 → 0.919966.
            let mut b = a.clone();
            b[7] = t;
            let cfg = MemoryConfig::default();
            let ms = vec![mem(1, 10, Some(a.clone())), mem(2, 20, Some(b))];
            let pairs = embedding_duplicates(&ms, 100, &cfg);
            let want = crate::text::cosine(
                &ms[0].embedding.clone().unwrap(),
                ms[1].embedding.as_deref().unwrap(),
            );
            assert_eq!(pairs.len() == 1, duplicate, "t {t}: cosine {want}");
            if duplicate {
                assert_eq!(pairs[0].cosine, want);
            }
        }
    }
}
