//! Steps 1–4 of the selection over the scored candidates: the CRITICAL slots, the
//! strong matches, the tier floors and the rest by score, then the character budget
//! and the prompt order.

use alloc::vec::Vec;
use core::cmp::Ordering;

use super::{Chosen, Reason, Selection};
use crate::memory::{Memory, MemoryConfig, MemoryId, Priority};
use crate::Timestamp;

/// A scored memory, small and `Copy` so the passes never allocate per memory.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub(super) index: usize,
    pub(super) id: MemoryId,
    pub(super) created_at: Timestamp,
    pub(super) score: f32,
    pub(super) relevance: f32,
    pub(super) bm25: f32,
    pub(super) propagated: f32,
    pub(super) boost: f32,
    pub(super) f1: f32,
    pub(super) cosine: Option<f32>,
    pub(super) priority: Priority,
    pub(super) strong: bool,
    /// A reflection summary (only computed for CRITICAL memories).
    pub(super) summary: bool,
}

/// Best first: higher score, then newer, then higher id, then lower index (the last one
/// only matters for records with duplicate ids; it keeps the order total).
pub(super) fn best_first(a: &Candidate, b: &Candidate) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(&a.id))
        .then(a.index.cmp(&b.index))
}

/// The order of the CRITICAL slots: the user's rules before reflection summaries, each
/// newest first (tea-agent: FIFO 取最新).
pub(super) fn critical_order(a: &Candidate, b: &Candidate) -> Ordering {
    a.summary
        .cmp(&b.summary)
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(&a.id))
        .then(a.index.cmp(&b.index))
}

/// Keeps only the `k` best of `v` (unordered), in O(len).
pub(super) fn keep_best(v: &mut Vec<Candidate>, k: usize) {
    if v.len() > k {
        if k == 0 {
            v.clear();
            return;
        }
        v.select_nth_unstable_by(k - 1, best_first);
        v.truncate(k);
    }
}

/// Steps 1–4 of the module documentation over the scored candidates, then the budget
/// and the prompt order.
pub(super) fn finish(
    memories: &[Memory],
    mut criticals: Vec<Candidate>,
    mut strong: Vec<Candidate>,
    mut tiers: [Vec<Candidate>; 4],
    considered: usize,
    cfg: &MemoryConfig,
) -> Selection {
    let limit = cfg.max_selected;
    let mut chosen: Vec<Chosen> = Vec::new();
    let take = |chosen: &mut Vec<Chosen>, c: &Candidate, reason: Reason| {
        chosen.push(Chosen {
            index: c.index,
            id: c.id,
            score: c.score,
            relevance: c.relevance,
            bm25: c.bm25,
            propagated: c.propagated,
            boost: c.boost,
            f1: c.f1,
            cosine: c.cosine,
            reason,
            priority: c.priority,
        });
    };

    // 1. CRITICAL: rules newest first, then summaries newest first; the rest never
    //    enter.
    criticals.sort_unstable_by(critical_order);
    for c in criticals.iter().take(cfg.max_critical.min(limit)) {
        take(&mut chosen, c, Reason::Critical);
    }

    // Partial selection: an entry chosen by strong match is among the best max_strong
    // strong candidates; an entry chosen for a floor or by rank is among the best
    // `limit` of its tier (everything better in its tier was taken before it). Nothing
    // else can be chosen, so nothing else needs ordering. The pool holds no CRITICAL.
    keep_best(&mut strong, cfg.max_strong);
    let mut pool: Vec<Candidate> = strong;
    for tier in &mut tiers {
        keep_best(tier, limit);
        pool.append(tier);
    }
    pool.sort_unstable_by_key(|c| c.index);
    pool.dedup_by_key(|c| c.index);
    pool.sort_unstable_by(best_first);
    let mut taken = alloc::vec![false; pool.len()];

    // 2. Strong matches, best score first.
    let mut strong_taken = 0usize;
    for (c, t) in pool.iter().zip(taken.iter_mut()) {
        if chosen.len() >= limit || strong_taken >= cfg.max_strong {
            break;
        }
        if c.strong {
            take(&mut chosen, c, Reason::StrongMatch);
            *t = true;
            strong_taken += 1;
        }
    }

    // 3. Tier floors, counting what the tier already has.
    for tier in [Priority::High, Priority::Medium, Priority::Low] {
        let have = chosen.iter().filter(|x| x.priority == tier).count();
        let mut need = cfg.floor(tier).saturating_sub(have);
        for (c, t) in pool.iter().zip(taken.iter_mut()) {
            if need == 0 || chosen.len() >= limit {
                break;
            }
            if !*t && c.priority == tier {
                take(&mut chosen, c, Reason::TierFloor);
                *t = true;
                need -= 1;
            }
        }
    }

    // 4. The rest by score.
    for (c, t) in pool.iter().zip(taken.iter_mut()) {
        if chosen.len() >= limit {
            break;
        }
        if !*t {
            take(&mut chosen, c, Reason::Ranked);
            *t = true;
        }
    }

    if let Some(budget) = cfg.max_chars {
        fit_budget(&mut chosen, memories, budget);
    }

    // Prompt order: CRITICAL in slot order (already), then by priority, then score.
    let n_critical = chosen
        .iter()
        .take_while(|c| c.reason == Reason::Critical)
        .count();
    if let Some(rest) = chosen.get_mut(n_critical..) {
        let created = |c: &Chosen| memories.get(c.index).map(|m| m.created_at);
        rest.sort_by(|a, b| {
            a.priority
                .cmp(&b.priority)
                .then(b.score.total_cmp(&a.score))
                .then(created(b).cmp(&created(a)))
                .then(b.id.cmp(&a.id))
                .then(a.index.cmp(&b.index))
        });
    }
    Selection { chosen, considered }
}

/// Drops choices until the contents fit `budget` characters: the lowest-scored
/// non-critical first, then (only if the CRITICAL ones alone overflow) the last
/// CRITICAL in slot order: the oldest summary, then the oldest rule.
pub(super) fn fit_budget(chosen: &mut Vec<Chosen>, memories: &[Memory], budget: usize) {
    let chars = |c: &Chosen| -> usize {
        memories
            .get(c.index)
            .map_or(0, |m| m.content.chars().count())
    };
    let mut total: usize = chosen.iter().map(chars).sum();
    while total > budget {
        // The worst non-critical (lowest score, then older, then lower id).
        let worst = chosen
            .iter()
            .enumerate()
            .filter(|(_, c)| c.reason != Reason::Critical)
            .min_by(|(_, a), (_, b)| {
                a.score
                    .total_cmp(&b.score)
                    .then(
                        memories
                            .get(a.index)
                            .map(|m| m.created_at)
                            .cmp(&memories.get(b.index).map(|m| m.created_at)),
                    )
                    .then(a.id.cmp(&b.id))
                    .then(b.index.cmp(&a.index))
            })
            .map(|(i, _)| i);
        // Otherwise the last CRITICAL: the oldest summary, else the oldest rule.
        let Some(drop) = worst.or(chosen.len().checked_sub(1)) else {
            break;
        };
        let removed = chosen.remove(drop);
        total = total.saturating_sub(chars(&removed));
    }
}
