//! Selection of the memories that enter the prompt.
//!
//! Decides which active memories are injected for a query, in which order and why:
//! CRITICAL rules first (newest first, at most 10), then strong matches (the Evolve Agent design:
//! token-overlap F1 ≥ 0.7, at most 10), then the tier floors (HIGH ≥ 3, MEDIUM ≥ 2,
//! LOW ≥ 1) and the rest by score (tea-agent), at most 30 in all, optionally within a
//! character budget. Decay and expiry must have been applied before (see
//! [`super::apply_decay`]); writing `last_accessed_at` is the shell's (see
//! [`mark_accessed`]).
//!
//! Only CRITICAL memories are always in: they are rules to follow. Every other memory
//! must share at least one keyword with the query, reply to an active memory that does,
//! or with embeddings be among the nearest by cosine (`vector_candidates`) — an unrelated memory never enters the
//! prompt just to fill a quota, and a score of 0 is never chosen.
//!
//! **At most `max_critical` (10) CRITICAL memories in all** (tea-agent: CRITICAL 优先入选，
//! 上限 10 条，FIFO 取最新). The CRITICAL memories past the first ten never compete as
//! strong matches or by score, however related: the limit is what keeps rules from
//! crowding out everything else (分层保底策略：确保不会全选 CRITICAL).
//!
//! **The user's rules before reflection summaries.** Reflection stores its summaries as
//! CRITICAL too (tea-agent's 反思归纳: 摘要作为 CRITICAL/importance=5 存储), so the ten
//! slots go first to the CRITICAL memories the user stated ([`super::stated_by_user`]:
//! not summaries, not the model's promotions), newest first, and only the slots left to
//! the others, newest first. Otherwise a few reflection runs would push every
//! instruction of the user out of the prompt.
//!
//! **Relevance** is BM25 over the keywords, plus the reply share of the turn a dialog
//! memory answers, times the subject boost, divided by the query's best match (see
//! [`super::rank`]); the Evolve Agent design's strong match stays token-overlap F1 of
//! the question. A reply to a matched turn may compete though it shares no keyword
//! itself: it is the answer to what was asked.
//!
//! Speed: with the store's inverted index ([`MemoryIndex`]) only the memories that share
//! a term with the query are touched, and each through the index's dense array of what
//! ranking reads ([`super::fields`]), never its record (0.5 ms at 100 000 memories,
//! 60 µs at 10 000; 0.8 ms at 100 000 when every memory replies to the one before); an
//! entry that could not compete is dropped before its candidate is built; the scan
//! without the index gives the same selection. Only the best few candidates of each tier
//! survive a partial selection (`select_nth_unstable_by`), so the final ordering sorts
//! at most a hundred-odd candidates however large the store.

mod choose;
mod dialog;
mod lexical;
mod relevance;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;
use serde::Serialize;

use super::fields::{FieldSource, Fields};
use super::rank::{length_factor, MemoryIndex, Ranking, RecallQuery};
use super::{at_least, stated_by_user, Memory, MemoryConfig, MemoryId, Priority, IMPORTANCE_MAX};
use crate::text::KeywordSet;
use crate::{Timestamp, DAY};
use choose::{finish, Candidate};
use dialog::{boost_subjects, propagate, scan_replies};
use lexical::{lexical_indexed, lexical_scan, Terms};
pub(crate) use relevance::sharpen;
pub use relevance::{follow_up_vector, QueryVector};
use relevance::{nearest, relevance, Facts, Raw};

/// Why a memory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// One of the `max_critical` CRITICAL slots, the only way a CRITICAL memory enters.
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
    /// Relevance in 0–1: BM25 divided by the query's best (fused with the cosine when
    /// embeddings are compared).
    pub relevance: f32,
    /// The BM25 score before normalisation (0 when it shares no keyword).
    pub bm25: f32,
    /// The part of the BM25 score passed from the turn it replies to
    /// ([`super::REPLY_SHARE`] of that turn's BM25; 0 when none matched).
    pub propagated: f32,
    /// The factor applied because the question names its speaker or a person it names
    /// ([`super::SUBJECT_BOOST`]; 1 when not).
    pub boost: f32,
    /// Token-overlap F1 of the question with the memory (the Evolve Agent design's strong match).
    pub f1: f32,
    /// The cosine of the question's and the memory's embeddings, when compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f32>,
    /// Why it was chosen.
    pub reason: Reason,
    /// The memory's priority when it was chosen (for logs and the block order).
    pub priority: Priority,
}

/// The outcome of one selection.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// Chosen memories in prompt order: CRITICAL (rules newest first, then summaries
    /// newest first), then by priority and score.
    pub chosen: Vec<Chosen>,
    /// How many active memories were scored.
    pub considered: usize,
}

impl Selection {
    /// The ids whose `last_accessed_at` the shell should set, in prompt order.
    pub fn accessed_ids(&self) -> Vec<MemoryId> {
        self.chosen.iter().map(|c| c.id).collect()
    }

    /// The chosen memories themselves, in prompt order, ready for
    /// [`super::format_block`]. Indices that no longer fit `memories` are skipped.
    pub fn memories<'a>(&self, memories: &'a [Memory]) -> Vec<&'a Memory> {
        self.chosen
            .iter()
            .filter_map(|c| memories.get(c.index))
            .collect()
    }
}

/// Sets `last_accessed_at = now` on the chosen memories (matched by index and id, so a
/// stale selection touches nothing). The shell persists the same ids in one transaction.
pub fn mark_accessed(memories: &mut [Memory], selection: &Selection, now: Timestamp) {
    for c in &selection.chosen {
        if let Some(m) = memories.get_mut(c.index) {
            if m.id == c.id {
                m.last_accessed_at = Some(now);
            }
        }
    }
}

/// The recency factor of a memory created at `created_at` (tea-agent: 1.0 up to 1 day,
/// 0.9 up to 7, 0.7 up to 30, 0.5 up to 90, 0.3 after). Bounds are inclusive; a
/// creation time in the future counts as age 0.
pub fn recency_factor(created_at: Timestamp, now: Timestamp, cfg: &MemoryConfig) -> f32 {
    let age = now.saturating_sub(created_at).max(0);
    for step in &cfg.recency_steps {
        if age <= step.max_age_days.saturating_mul(DAY) {
            return step.factor;
        }
    }
    cfg.recency_after
}

/// The selection score of a memory with the given relevance (tea-agent):
/// `relevance × importance/5 × recency × (4 − priority)/4`. Importance is clamped to
/// 1–5 so a hand-edited record cannot outscore the scale.
pub fn score(memory: &Memory, relevance: f32, now: Timestamp, cfg: &MemoryConfig) -> f32 {
    score_of(
        memory.importance,
        memory.created_at,
        memory.priority,
        relevance,
        now,
        cfg,
    )
}

/// [`score`] from the three fields it reads.
fn score_of(
    importance: u8,
    created_at: Timestamp,
    priority: Priority,
    relevance: f32,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> f32 {
    let importance = importance.clamp(1, IMPORTANCE_MAX);
    relevance
        * (f32::from(importance) / f32::from(IMPORTANCE_MAX))
        * recency_factor(created_at, now, cfg)
        * priority.factor()
}

/// Chooses the memories for a prompt; see the module documentation for the rules.
/// Relevance is BM25 over the question's keywords (see [`super::rank`]); the memories
/// are scanned. [`select_query`] takes an index, the previous turn and an embedding.
pub fn select(
    memories: &[Memory],
    query: &KeywordSet,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Selection {
    select_query(memories, None, &RecallQuery::new(query), None, now, cfg)
}

/// Chooses the memories for a prompt: the rules of the module documentation, with
/// relevance from `query` (question and context terms), found through `index` when
/// given (which must mirror `memories`; the result is the same as without it) and
/// fused with the cosine to `vector` when given.
pub fn select_query(
    memories: &[Memory],
    index: Option<&MemoryIndex>,
    query: &RecallQuery,
    vector: Option<QueryVector<'_>>,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Selection {
    let terms = Terms::new(query);
    let lexical = match index {
        Some(ix) => lexical_indexed(ix, &terms, memories.len()),
        None => lexical_scan(memories, &terms),
    };
    let considered = lexical.docs;
    // What ranking reads of each memory: the index's dense array, else the records.
    let fields = match index {
        Some(ix) => FieldSource::Table(ix.fields()),
        None => FieldSource::Records(memories),
    };

    // Relevance inputs of every memory that shares a term or is near by embedding.
    let mut raw: Vec<Raw> = Vec::with_capacity(lexical.hits.len());
    for h in &lexical.hits {
        let Some(f) = fields.get(h.slot).filter(|f| f.is_active(now)) else {
            continue;
        };
        raw.push(Raw::new(
            h.slot,
            &f,
            h.weight * length_factor(f.ranked_len, lexical.mean_len),
            h.shared_question,
        ));
    }
    // The memories near by embedding (none without a vector, or when no memory has
    // an embedding of the question's model).
    let near = match vector.as_ref().filter(|v| !v.embedding.is_empty()) {
        Some(v) => nearest(memories, v, cfg.vector_candidates, now),
        None => Vec::new(),
    };
    if cfg.ranking == Ranking::Bm25 {
        let prune = near.is_empty();
        match index {
            Some(ix) => propagate(&mut raw, ix.replies(), fields, cfg, prune, now),
            None => {
                let replies = scan_replies(memories);
                propagate(&mut raw, &replies, fields, cfg, prune, now);
            }
        }
        // Through the index, a question naming no memory's subject skips the pass.
        let named = index.is_none_or(|ix| {
            query
                .question()
                .as_slice()
                .iter()
                .any(|&h| ix.is_subject(h))
        });
        if named {
            boost_subjects(&mut raw, memories, query, cfg.subject_boost);
        }
    }
    for (slot, c) in near {
        match raw.binary_search_by_key(&slot, |r| r.slot) {
            Ok(i) => raw[i].cosine = Some(c),
            Err(i) => {
                if let Some(f) = fields.get(slot) {
                    let mut r = Raw::new(slot, &f, 0.0, 0);
                    r.cosine = Some(c);
                    raw.insert(i, r);
                }
            }
        }
    }
    let relevances = relevance(&raw, memories, &terms, cfg);

    let mut criticals: Vec<Candidate> = Vec::new();
    let mut strong: Vec<Candidate> = Vec::new();
    let mut tiers: [Vec<Candidate>; 4] = Default::default();
    // A CRITICAL memory's candidate reads the memory (whose rule it is); the others
    // take what their raw entry kept.
    let candidate = |slot: u32, r: Option<(&Raw, f32)>| -> Option<Candidate> {
        let (facts, summary, id) = match r {
            Some((raw, _)) if raw.facts.priority != Priority::Critical => {
                (raw.facts, false, raw.id)
            }
            _ => {
                let m = memories.get(slot as usize)?;
                (
                    Facts::of(&Fields::of(m)),
                    m.priority == Priority::Critical && !stated_by_user(m, cfg),
                    m.id,
                )
            }
        };
        let (relevance, shared, cosine) = match r {
            Some((raw, rel)) => (rel, raw.shared_question, raw.cosine),
            None => (0.0, 0, None),
        };
        let (bm25, propagated, boost) = r.map_or((0.0, 0.0, 1.0), |(raw, _)| {
            (raw.bm25, raw.propagated, raw.boost)
        });
        let f1 = terms.f1(shared as usize, facts.keywords as usize);
        let s = if relevance > 0.0 {
            score_of(
                facts.importance,
                facts.created_at,
                facts.priority,
                sharpen(relevance, cfg.relevance_exponent),
                now,
                cfg,
            )
        } else {
            0.0
        };
        Some(Candidate {
            index: slot as usize,
            id,
            created_at: facts.created_at,
            score: s,
            relevance,
            bm25,
            propagated,
            boost,
            f1,
            cosine,
            priority: facts.priority,
            strong: shared > 0 && at_least(f1, cfg.strong_match_f1),
            summary,
        })
    };
    // An entry that is not CRITICAL, not relevant enough and could not be a strong
    // match even at its best (F1 is highest when the memory has nothing but the shared
    // keywords) would be dropped below: it is skipped before its candidate is made.
    let may_compete = |r: &Raw, rel: f32| {
        at_least(rel, cfg.min_relevance)
            || (r.shared_question > 0
                && at_least(
                    terms.f1(r.shared_question as usize, r.shared_question as usize),
                    cfg.strong_match_f1,
                ))
            || r.facts.priority == Priority::Critical
    };
    for (r, &rel) in raw.iter().zip(&relevances) {
        if !may_compete(r, rel) {
            continue;
        }
        let Some(c) = candidate(r.slot, Some((r, rel))) else {
            continue;
        };
        if c.priority == Priority::Critical {
            // CRITICAL memories enter only through their own slots, never by matching.
            criticals.push(c);
            continue;
        }
        // Related, scoring above zero and relevant enough: may compete. A strong
        // match always may.
        if c.strong || (c.score > 0.0 && at_least(c.relevance, cfg.min_relevance)) {
            if c.strong {
                strong.push(c);
            }
            if let Some(tier) = tiers.get_mut(usize::from(c.priority.as_u8())) {
                tier.push(c);
            }
        }
    }
    // The CRITICAL memories that matched nothing.
    let matched_critical = |slot: u32| raw.binary_search_by_key(&slot, |r| r.slot).is_ok();
    let mut unmatched_critical = |slot: usize, m: &Memory| {
        if m.priority == Priority::Critical && m.is_active(now) && !matched_critical(slot as u32) {
            if let Some(c) = candidate(slot as u32, None) {
                criticals.push(c);
            }
        }
    };
    match index {
        Some(ix) => {
            for &slot in ix.critical() {
                if let Some(m) = memories.get(slot as usize) {
                    unmatched_critical(slot as usize, m);
                }
            }
        }
        None => {
            for (slot, m) in memories.iter().enumerate() {
                unmatched_critical(slot, m);
            }
        }
    }
    finish(memories, criticals, strong, tiers, considered, cfg)
}
