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
//! a term with the query are touched (0.76 ms at 100 000 memories, 64 µs at 10 000; 1.4
//! ms at 100 000 when every memory replies to the one before); the scan without it gives
//! the same selection. Only the best few candidates of each tier
//! survive a partial selection (`select_nth_unstable_by`), so the final ordering sorts
//! at most a hundred-odd candidates however large the store.

use alloc::vec::Vec;
use core::cmp::Ordering;
use serde::Serialize;

use super::rank::{idf, length_factor, Fusion, MemoryIndex, Ranking, RecallQuery, RRF_K};
use super::{at_least, stated_by_user, Memory, MemoryConfig, MemoryId, Priority, IMPORTANCE_MAX};
use crate::text::{cosine, intersection_len, KeywordSet};
use crate::{Timestamp, DAY};

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
    let importance = memory.importance.clamp(1, IMPORTANCE_MAX);
    relevance
        * (f32::from(importance) / f32::from(IMPORTANCE_MAX))
        * recency_factor(memory.created_at, now, cfg)
        * memory.priority.factor()
}

/// A scored memory, small and `Copy` so the passes never allocate per memory.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    index: usize,
    id: MemoryId,
    created_at: Timestamp,
    score: f32,
    relevance: f32,
    bm25: f32,
    propagated: f32,
    boost: f32,
    f1: f32,
    cosine: Option<f32>,
    priority: Priority,
    strong: bool,
    /// A reflection summary (only computed for CRITICAL memories).
    summary: bool,
}

/// Best first: higher score, then newer, then higher id, then lower index (the last one
/// only matters for records with duplicate ids; it keeps the order total).
fn best_first(a: &Candidate, b: &Candidate) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(&a.id))
        .then(a.index.cmp(&b.index))
}

/// The order of the CRITICAL slots: the user's rules before reflection summaries, each
/// newest first (tea-agent: FIFO 取最新).
fn critical_order(a: &Candidate, b: &Candidate) -> Ordering {
    a.summary
        .cmp(&b.summary)
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(&a.id))
        .then(a.index.cmp(&b.index))
}

/// Keeps only the `k` best of `v` (unordered), in O(len).
fn keep_best(v: &mut Vec<Candidate>, k: usize) {
    if v.len() > k {
        if k == 0 {
            v.clear();
            return;
        }
        v.select_nth_unstable_by(k - 1, best_first);
        v.truncate(k);
    }
}

/// The query's terms plus a 256-bit mask of their top hash bits, so that most memory
/// keywords are rejected with one bit test when scanning.
struct Terms<'a> {
    terms: &'a [(u64, f32)],
    /// Per term: whether it is one of the question's own keywords.
    question: Vec<bool>,
    question_len: usize,
    mask: [u64; 4],
}

impl<'a> Terms<'a> {
    fn new(query: &'a RecallQuery) -> Self {
        let terms = query.terms();
        let mut mask = [0u64; 4];
        for &(h, _) in terms {
            let bit = (h >> 56) as usize;
            if let Some(word) = mask.get_mut(bit >> 6) {
                *word |= 1u64 << (bit & 63);
            }
        }
        let question: Vec<bool> = terms
            .iter()
            .map(|t| query.question().contains(t.0))
            .collect();
        Terms {
            terms,
            question,
            question_len: query.question().len(),
            mask,
        }
    }

    /// The position of a memory keyword among the terms, if it is one.
    fn find(&self, k: u64) -> Option<usize> {
        let bit = (k >> 56) as usize;
        let hit = self
            .mask
            .get(bit >> 6)
            .is_some_and(|w| w & (1u64 << (bit & 63)) != 0);
        if !hit {
            return None;
        }
        self.terms.binary_search_by_key(&k, |t| t.0).ok()
    }

    /// Token-overlap F1 of the question with a memory (`text::f1`):
    /// `2·shared / (|question| + |memory|)`.
    fn f1(&self, shared: usize, memory_len: usize) -> f32 {
        let total = self.question_len + memory_len;
        if total == 0 {
            return 0.0;
        }
        (2 * shared.min(self.question_len).min(memory_len)) as f32 / total as f32
    }
}

/// A memory sharing at least one term with the query: the sum of its terms'
/// weight × IDF (BM25's numerator for terms that occur once) and how many of the
/// question's own keywords it has.
#[derive(Debug, Clone, Copy)]
struct Hit {
    slot: u32,
    weight: f32,
    shared_question: u32,
}

/// The statistics BM25 needs and the hits, however they were found.
struct Lexical {
    docs: usize,
    mean_len: f32,
    hits: Vec<Hit>,
}

/// The hits through the inverted index: only the memories of the query's postings are
/// touched. The sums run term by term in term order, as [`lexical_scan`] adds them, so
/// both give the same bits.
fn lexical_indexed(index: &MemoryIndex, terms: &Terms<'_>, n: usize) -> Lexical {
    let mut weight = alloc::vec![0f32; n];
    let mut shared = alloc::vec![0u32; n];
    let mut touched: Vec<u32> = Vec::new();
    for (t, &(h, w)) in terms.terms.iter().enumerate() {
        let postings = index.postings(h);
        if postings.is_empty() {
            continue;
        }
        let add = w * idf(postings.len(), index.len());
        let question = terms.question.get(t).copied().unwrap_or(false);
        for &slot in postings {
            let (Some(acc), Some(sq)) =
                (weight.get_mut(slot as usize), shared.get_mut(slot as usize))
            else {
                continue;
            };
            if *acc == 0.0 {
                touched.push(slot);
            }
            *acc += add;
            *sq += u32::from(question);
        }
    }
    touched.sort_unstable();
    let hits = touched
        .into_iter()
        .map(|slot| Hit {
            slot,
            weight: weight[slot as usize],
            shared_question: shared[slot as usize],
        })
        .collect();
    Lexical {
        docs: index.len(),
        mean_len: index.mean_len(),
        hits,
    }
}

/// The hits by looking at every memory: the statistics over the live (not deleted)
/// ones, as [`MemoryIndex`] keeps them.
fn lexical_scan(memories: &[Memory], terms: &Terms<'_>) -> Lexical {
    let mut df = alloc::vec![0usize; terms.terms.len()];
    let mut docs = 0usize;
    let mut total_len = 0u64;
    // (slot, range of its matched terms in `matched`).
    let mut found: Vec<(u32, usize, usize)> = Vec::new();
    let mut matched: Vec<u32> = Vec::new();
    let mut mine: Vec<u32> = Vec::new();
    for (slot, m) in memories.iter().enumerate() {
        if m.deleted {
            continue;
        }
        docs += 1;
        total_len += u64::from(m.ranked_len());
        mine.clear();
        mine.extend(
            m.keywords
                .as_slice()
                .iter()
                .filter_map(|&k| terms.find(k))
                .map(|t| t as u32),
        );
        if mine.is_empty() {
            continue;
        }
        // In term order and once each, even for a record whose stored set is not sorted.
        mine.sort_unstable();
        mine.dedup();
        for &t in &mine {
            df[t as usize] += 1;
        }
        let from = matched.len();
        matched.extend_from_slice(&mine);
        found.push((slot as u32, from, matched.len()));
    }
    let idfs: Vec<f32> = terms
        .terms
        .iter()
        .zip(&df)
        .map(|(&(_, w), &d)| w * idf(d, docs))
        .collect();
    let hits = found
        .into_iter()
        .map(|(slot, from, to)| {
            let mut weight = 0f32;
            let mut shared_question = 0u32;
            for &t in &matched[from..to] {
                weight += idfs[t as usize];
                shared_question += u32::from(terms.question[t as usize]);
            }
            Hit {
                slot,
                weight,
                shared_question,
            }
        })
        .collect();
    let mean_len = if docs == 0 {
        0.0
    } else {
        (total_len as f64 / docs as f64) as f32
    };
    Lexical {
        docs,
        mean_len,
        hits,
    }
}

/// The question's embedding and the model that made it: only memories embedded by the
/// same model are compared.
#[derive(Debug, Clone, Copy)]
pub struct QueryVector<'a> {
    /// The embedding model's name.
    pub model: &'a str,
    /// The question's embedding.
    pub embedding: &'a [f32],
}

/// The memories closest to the question by cosine: the `k` best above zero, as
/// (slot, cosine), best first.
fn nearest(memories: &[Memory], v: &QueryVector<'_>, k: usize, now: Timestamp) -> Vec<(u32, f32)> {
    let mut near: Vec<(u32, f32)> = memories
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_active(now))
        .filter_map(|(slot, m)| {
            let c = cosine(v.embedding, m.embedding_of(v.model)?);
            (c > 0.0).then_some((slot as u32, c))
        })
        .collect();
    let by_cosine = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if near.len() > k && k > 0 {
        near.select_nth_unstable_by(k - 1, by_cosine);
        near.truncate(k);
    }
    near.sort_unstable_by(by_cosine);
    near
}

/// Ranks of `values` (1 = largest), ties broken by position, for rank fusion.
fn ranks(values: &[(usize, f32)]) -> Vec<(usize, u32)> {
    let mut order: Vec<(usize, f32)> = values.to_vec();
    order.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out: Vec<(usize, u32)> = order
        .iter()
        .enumerate()
        .map(|(r, &(i, _))| (i, r as u32 + 1))
        .collect();
    out.sort_unstable_by_key(|x| x.0);
    out
}

/// One memory's relevance inputs before normalisation.
#[derive(Debug, Clone, Copy)]
struct Raw {
    slot: u32,
    /// The memory's id, kept so propagation never reads the memory again.
    id: MemoryId,
    bm25: f32,
    /// [`MemoryConfig::reply_share`] × the BM25 of the turn it replies to.
    propagated: f32,
    /// [`MemoryConfig::subject_boost`] when the question names a subject, else 1.
    boost: f32,
    shared_question: u32,
    cosine: Option<f32>,
}

impl Raw {
    fn new(slot: u32, id: MemoryId, bm25: f32, shared_question: u32) -> Self {
        Raw {
            slot,
            id,
            bm25,
            propagated: 0.0,
            boost: 1.0,
            shared_question,
            cosine: None,
        }
    }

    /// The lexical score the relevance is normalised from.
    fn lexical(&self) -> f32 {
        (self.bm25 + self.propagated) * self.boost
    }
}

/// The (previous memory's id, position of its reply) pairs of the memories not
/// deleted, sorted, as [`MemoryIndex::replies`] keeps them.
fn scan_replies(memories: &[Memory]) -> Vec<(MemoryId, u32)> {
    let mut v: Vec<(MemoryId, u32)> = memories
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.deleted)
        .filter_map(|(slot, m)| Some((m.prev?, slot as u32)))
        .collect();
    v.sort_unstable();
    v
}

/// Reply propagation: each active memory replying to a matched one gains `share` × the
/// matched one's BM25 (added to `raw`, kept sorted by position, when it matched
/// nothing itself). O(matches × log replies); nothing when no memory replies to another.
///
/// A reply that matched nothing itself and whose gain could never bring it to
/// `min_relevance` of the best match (even boosted) is left out, so a question of
/// common words over a long dialog does not double the candidates: its relevance would
/// stay under the threshold whatever the rest (the best only grows). Only when no
/// memory is near by embedding, where relevance is the lexical score alone.
fn propagate(
    raw: &mut Vec<Raw>,
    replies: &[(MemoryId, u32)],
    memories: &[Memory],
    cfg: &MemoryConfig,
    prune: bool,
    now: Timestamp,
) {
    let share = cfg.reply_share;
    if replies.is_empty() || !(share.is_finite() && share > 0.0) {
        return;
    }
    // The smallest gain that may matter to a reply that matched nothing (with a margin
    // for rounding: the threshold is compared with a tolerance).
    let floor = if prune && cfg.min_relevance > 1e-4 {
        let best = raw.iter().map(|r| r.bm25).fold(0f32, f32::max);
        let boost = if cfg.subject_boost.is_finite() {
            cfg.subject_boost.max(1.0)
        } else {
            1.0
        };
        0.99 * cfg.min_relevance * best / boost
    } else {
        0.0
    };
    // (reply position, the part it gains), in the order of the matched positions.
    let mut gains: Vec<(u32, f32)> = Vec::new();
    let mut from = 0usize;
    let mut last: Option<MemoryId> = None;
    for r in raw.iter().filter(|r| r.bm25 > 0.0) {
        let id = r.id;
        // Matches come by position; in the store that is id order, so the search
        // starts where the last one ended.
        if last.is_none_or(|l| id < l) {
            from = 0;
        }
        last = Some(id);
        from += replies[from..].partition_point(|e| e.0 < id);
        let gain = share * r.bm25;
        for &(_, reply) in replies[from..].iter().take_while(|e| e.0 == id) {
            let weak = gain < floor && raw.binary_search_by_key(&reply, |x| x.slot).is_err();
            if !weak
                && memories
                    .get(reply as usize)
                    .is_some_and(|m| m.is_active(now))
            {
                gains.push((reply, gain));
            }
        }
    }
    if gains.is_empty() {
        return;
    }
    gains.sort_by_key(|g| g.0);
    let id_of = |slot: u32| memories.get(slot as usize).map_or(0, |m| m.id);
    // One merge of two position-sorted lists (inserting one by one would be
    // quadratic when most matches have a reply).
    let mut merged: Vec<Raw> = Vec::with_capacity(raw.len() + gains.len());
    let mut gains = gains.into_iter().peekable();
    for r in raw.drain(..) {
        while let Some(&(reply, gain)) = gains.peek().filter(|g| g.0 < r.slot) {
            gains.next();
            match merged.last_mut().filter(|m| m.slot == reply) {
                Some(m) => m.propagated += gain,
                None => {
                    let mut n = Raw::new(reply, id_of(reply), 0.0, 0);
                    n.propagated = gain;
                    merged.push(n);
                }
            }
        }
        let mut r = r;
        while let Some(&(_, gain)) = gains.peek().filter(|g| g.0 == r.slot) {
            gains.next();
            r.propagated += gain;
        }
        merged.push(r);
    }
    for (reply, gain) in gains {
        match merged.last_mut().filter(|m| m.slot == reply) {
            Some(m) => m.propagated += gain,
            None => {
                let mut n = Raw::new(reply, id_of(reply), 0.0, 0);
                n.propagated = gain;
                merged.push(n);
            }
        }
    }
    *raw = merged;
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

    // Relevance inputs of every memory that shares a term or is near by embedding.
    let mut raw: Vec<Raw> = Vec::with_capacity(lexical.hits.len());
    for h in &lexical.hits {
        let Some(m) = memories.get(h.slot as usize) else {
            continue;
        };
        if !m.is_active(now) {
            continue;
        }
        raw.push(Raw::new(
            h.slot,
            m.id,
            h.weight * length_factor(m.ranked_len(), lexical.mean_len),
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
            Some(ix) => propagate(&mut raw, ix.replies(), memories, cfg, prune, now),
            None => {
                let replies = scan_replies(memories);
                propagate(&mut raw, &replies, memories, cfg, prune, now);
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
                let mut r = Raw::new(
                    slot,
                    memories.get(slot as usize).map_or(0, |m| m.id),
                    0.0,
                    0,
                );
                r.cosine = Some(c);
                raw.insert(i, r);
            }
        }
    }
    let relevances = relevance(&raw, memories, &terms, cfg);

    let mut criticals: Vec<Candidate> = Vec::new();
    let mut strong: Vec<Candidate> = Vec::new();
    let mut tiers: [Vec<Candidate>; 4] = Default::default();
    let candidate = |slot: u32, r: Option<(&Raw, f32)>| -> Option<Candidate> {
        let m = memories.get(slot as usize)?;
        let (relevance, shared, cosine) = match r {
            Some((raw, rel)) => (rel, raw.shared_question, raw.cosine),
            None => (0.0, 0, None),
        };
        let (bm25, propagated, boost) = r.map_or((0.0, 0.0, 1.0), |(raw, _)| {
            (raw.bm25, raw.propagated, raw.boost)
        });
        let f1 = terms.f1(shared as usize, m.keywords.len());
        let s = if relevance > 0.0 {
            score(m, sharpen(relevance, cfg.relevance_exponent), now, cfg)
        } else {
            0.0
        };
        Some(Candidate {
            index: slot as usize,
            id: m.id,
            created_at: m.created_at,
            score: s,
            relevance,
            bm25,
            propagated,
            boost,
            f1,
            cosine,
            priority: m.priority,
            strong: shared > 0 && at_least(f1, cfg.strong_match_f1),
            summary: m.priority == Priority::Critical && !stated_by_user(m, cfg),
        })
    };
    for (r, &rel) in raw.iter().zip(&relevances) {
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

/// The subject boost: `factor` on each entry whose memory's subjects (speaker, people
/// named) the question's own keywords name, and which is about the rest of the question
/// too — it shares another of the question's keywords, or gained a share from the turn
/// it replies to. A memory that only names the person ("Mel says hi.") is not boosted:
/// measured on stores that mix extracted facts with turns, boosting it pushed the facts
/// about the person out for the person's chit-chat. A factor that is not a number above
/// 0 counts as 1.
fn boost_subjects(raw: &mut [Raw], memories: &[Memory], query: &RecallQuery, factor: f32) {
    if !(factor.is_finite() && factor > 0.0) || factor == 1.0 || query.question().is_empty() {
        return;
    }
    let question = query.question().as_slice();
    for r in raw.iter_mut() {
        let Some(m) = memories.get(r.slot as usize) else {
            continue;
        };
        if m.subjects.is_empty() || intersection_len(m.subjects.as_slice(), question) == 0 {
            continue;
        }
        // The question's keywords the memory shares only as a subject's name.
        let by_name = question
            .iter()
            .filter(|&&h| m.subjects.contains(h) && m.keywords.contains(h))
            .count();
        if r.propagated > 0.0 || r.shared_question as usize > by_name {
            r.boost = factor;
        }
    }
}

/// `relevance^exponent` for the score (a relevance in 0–1 stays in 0–1; an exponent
/// that is not a positive number counts as 1).
pub(crate) fn sharpen(relevance: f32, exponent: f32) -> f32 {
    if !(exponent.is_finite() && exponent > 0.0) || exponent == 1.0 {
        return relevance;
    }
    let mut r = 1.0f32;
    let whole = exponent as u32;
    for _ in 0..whole.min(8) {
        r *= relevance;
    }
    let frac = exponent - whole as f32;
    if frac > 0.0 {
        // relevance^frac between relevance^0 = 1 and relevance^1, linearly: exact at the
        // integers, monotone in between (the core has no powf).
        r *= 1.0 - frac * (1.0 - relevance);
    }
    r
}

/// Relevance in 0–1 of each raw entry: BM25 divided by the best BM25 among them (or F1
/// with [`Ranking::F1`]), fused with the cosine when there are embeddings.
fn relevance(raw: &[Raw], memories: &[Memory], terms: &Terms<'_>, cfg: &MemoryConfig) -> Vec<f32> {
    let lexical: Vec<f32> = match cfg.ranking {
        Ranking::Bm25 => {
            let best = raw.iter().map(Raw::lexical).fold(0f32, f32::max);
            raw.iter()
                .map(|r| if best > 0.0 { r.lexical() / best } else { 0.0 })
                .collect()
        }
        Ranking::F1 => raw
            .iter()
            .map(|r| {
                let len = memories
                    .get(r.slot as usize)
                    .map_or(0, |m| m.keywords.len());
                if r.shared_question == 0 {
                    0.0
                } else {
                    terms.f1(r.shared_question as usize, len)
                }
            })
            .collect(),
    };
    if raw.iter().all(|r| r.cosine.is_none()) {
        return lexical;
    }
    match cfg.fusion {
        Fusion::Weighted => {
            let best = raw.iter().filter_map(|r| r.cosine).fold(0f32, f32::max);
            let w = cfg.vector_weight.clamp(0.0, 1.0);
            raw.iter()
                .zip(&lexical)
                .map(|(r, &l)| {
                    let v = match r.cosine {
                        Some(c) if best > 0.0 => c / best,
                        _ => 0.0,
                    };
                    (1.0 - w) * l + w * v
                })
                .collect()
        }
        Fusion::Rrf => {
            let lex: Vec<(usize, f32)> = lexical
                .iter()
                .enumerate()
                .filter(|(_, &l)| l > 0.0)
                .map(|(i, &l)| (i, l))
                .collect();
            let vec: Vec<(usize, f32)> = raw
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.cosine.map(|c| (i, c)))
                .collect();
            let mut fused = alloc::vec![0f32; raw.len()];
            for (i, r) in ranks(&lex) {
                fused[i] += 1.0 / (RRF_K + r as f32);
            }
            for (i, r) in ranks(&vec) {
                fused[i] += 1.0 / (RRF_K + r as f32);
            }
            let best = fused.iter().copied().fold(0f32, f32::max);
            fused
                .iter()
                .map(|&f| if best > 0.0 { f / best } else { 0.0 })
                .collect()
        }
    }
}

/// Steps 1–4 of the module documentation over the scored candidates, then the budget
/// and the prompt order.
fn finish(
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
fn fit_budget(chosen: &mut Vec<Chosen>, memories: &[Memory], budget: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec;

    const NOW: Timestamp = 1_000 * DAY;

    fn mem(id: MemoryId, text: &str, priority: Priority, age_secs: i64) -> Memory {
        let mut m = Memory::new(text, Category::General, NOW - age_secs, &FallbackTokenizer);
        m.id = id;
        m.priority = priority;
        m
    }

    fn query(text: &str) -> KeywordSet {
        KeywordSet::of(&FallbackTokenizer, text)
    }

    fn ids(sel: &Selection) -> Vec<MemoryId> {
        sel.accessed_ids()
    }

    /// `n` distinct filler words, w0 w1 …, with a prefix so sets can be kept apart.
    fn words(prefix: &str, n: usize) -> String {
        (0..n)
            .map(|i| format!("{prefix}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn recency_steps_at_and_just_past_each_boundary() {
        let cfg = MemoryConfig::default();
        let table = [
            (0, 1.0),
            (DAY, 1.0),
            (DAY + 1, 0.9),
            (7 * DAY, 0.9),
            (7 * DAY + 1, 0.7),
            (30 * DAY, 0.7),
            (30 * DAY + 1, 0.5),
            (90 * DAY, 0.5),
            (90 * DAY + 1, 0.3),
            (10_000 * DAY, 0.3),
            (-5 * DAY, 1.0), // created in the future: as new
        ];
        for (age, want) in table {
            assert_eq!(recency_factor(NOW - age, NOW, &cfg), want, "age {age}");
        }
    }

    #[test]
    fn score_multiplies_the_four_factors() {
        let cfg = MemoryConfig::default();
        let mut m = mem(1, "tea", Priority::Medium, 10 * DAY);
        m.importance = 4;
        // 0.5 × 4/5 × 0.7 × 2/4
        assert!((score(&m, 0.5, NOW, &cfg) - 0.14).abs() < 1e-6);
        m.importance = 0; // hand-edited record: clamped to 1
        assert!((score(&m, 1.0, NOW, &cfg) - 0.2 * 0.7 * 0.5).abs() < 1e-6);
    }

    #[test]
    fn strong_match_f1_boundary_at_point_seven() {
        let cfg = MemoryConfig::default();
        let q = query(&words("q", 10));
        // 7 shared of 10 + 10 → F1 = 14/20 = 0.7: strong.
        // 7 shared of 10 + 11 → F1 = 14/21 ≈ 0.667: not strong.
        let table = [(0usize, true), (1, false)];
        for (extra, strong) in table {
            let text = format!("{} {}", words("q", 7), words("x", 3 + extra));
            let m = mem(1, &text, Priority::Low, 200 * DAY);
            let sel = select(core::slice::from_ref(&m), &q, NOW, &cfg);
            let c = &sel.chosen[0];
            assert!((c.f1 - crate::text::f1(q.as_slice(), m.keywords.as_slice())).abs() < 1e-7);
            let want = if strong {
                Reason::StrongMatch
            } else {
                Reason::TierFloor
            };
            assert_eq!(c.reason, want, "extra {extra}");
        }
    }

    #[test]
    fn matches_far_weaker_than_the_best_do_not_fill_the_prompt() {
        let cfg = MemoryConfig::default();
        let q = query("alpha beta gamma delta");
        let mut ms: Vec<Memory> = (0..40)
            .map(|i| {
                mem(
                    i,
                    &format!("alpha filler{i} more words here"),
                    Priority::Low,
                    0,
                )
            })
            .collect();
        // 39 memories share "alpha" — a word most of them have, so it weighs little.
        ms.push(mem(99, "beta gamma delta", Priority::Low, 0));
        let sel = select(&ms, &q, NOW, &cfg);
        assert_eq!(ids(&sel), vec![99], "{sel:?}");
        let lax = MemoryConfig {
            min_relevance: 0.0,
            ..cfg
        };
        assert_eq!(select(&ms, &q, NOW, &lax).chosen.len(), 30);
    }

    #[test]
    fn strong_match_is_taken_over_better_scored_weak_matches() {
        // Weak matches may compete however weak (the default drops those below 0.2 of
        // the best; see the next test).
        let cfg = MemoryConfig {
            min_relevance: 0.0,
            ..MemoryConfig::default()
        };
        let q = query("alpha beta gamma delta");
        // 40 fresh, important HIGH memories with one keyword in common.
        let mut ms: Vec<Memory> = (0..40)
            .map(|i| {
                let mut m = mem(i, &format!("alpha filler{i}"), Priority::High, 0);
                m.importance = 5;
                m
            })
            .collect();
        // One old, trivial LOW memory matching the whole query (F1 = 1).
        let mut strong = mem(99, "alpha beta gamma delta", Priority::Low, 400 * DAY);
        strong.importance = 1;
        ms.push(strong);
        let sel = select(&ms, &q, NOW, &cfg);
        assert_eq!(sel.chosen.len(), 30);
        let c = sel
            .chosen
            .iter()
            .find(|c| c.id == 99)
            .expect("strong match chosen");
        assert_eq!(c.reason, Reason::StrongMatch);
    }

    #[test]
    fn at_most_ten_strong_matches_the_rest_compete_by_score() {
        let cfg = MemoryConfig {
            floor_high: 0,
            floor_medium: 0,
            floor_low: 0,
            max_selected: 12,
            ..MemoryConfig::default()
        };
        let q = query("alpha beta");
        let ms: Vec<Memory> = (0..15)
            .map(|i| {
                mem(
                    i,
                    "alpha beta",
                    Priority::Medium,
                    i64::try_from(i).unwrap() * DAY,
                )
            })
            .collect();
        let sel = select(&ms, &q, NOW, &cfg);
        let strong = sel
            .chosen
            .iter()
            .filter(|c| c.reason == Reason::StrongMatch)
            .count();
        assert_eq!(strong, 10);
        assert_eq!(sel.chosen.len(), 12);
        // The newest (best recency) are the strong ones; ids 10 and 11 come by rank.
        let ranked: Vec<_> = sel
            .chosen
            .iter()
            .filter(|c| c.reason == Reason::Ranked)
            .map(|c| c.id)
            .collect();
        assert_eq!(ranked, vec![10, 11]);
    }

    #[test]
    fn critical_first_newest_first_at_most_ten_even_if_unrelated() {
        let cfg = MemoryConfig::default();
        let ms: Vec<Memory> = (0..12)
            .map(|i| {
                mem(
                    i,
                    &format!("rule{i}"),
                    Priority::Critical,
                    i64::try_from(i).unwrap() * 3600,
                )
            })
            .collect();
        let sel = select(&ms, &query("something else"), NOW, &cfg);
        assert_eq!(ids(&sel), (0..10).collect::<Vec<_>>());
        assert!(sel.chosen.iter().all(|c| c.reason == Reason::Critical));
        assert_eq!(sel.considered, 12);
    }

    #[test]
    fn critical_beyond_ten_never_enters_even_when_related() {
        // Review case (rv_critical_cap_10): 15 CRITICAL rules, all strongly related to
        // the query. Only the 10 newest enter; the other 5 do not compete as strong
        // matches or by rank (tea-agent: CRITICAL 优先入选，上限 10 条，FIFO 取最新).
        let cfg = MemoryConfig::default();
        let ms: Vec<Memory> = (0..15)
            .map(|i| {
                mem(
                    i,
                    &format!("always answer deploy questions rule{i}"),
                    Priority::Critical,
                    i64::try_from(i).unwrap() * 3600,
                )
            })
            .collect();
        let sel = select(&ms, &query("deploy questions answer always"), NOW, &cfg);
        assert_eq!(ids(&sel), (0..10).collect::<Vec<_>>());
        assert!(sel.chosen.iter().all(|c| c.reason == Reason::Critical));

        // An 11th rule related to the query stays out; with a cap of 11 it is in.
        let mut ms: Vec<Memory> = (0..10)
            .map(|i| mem(i, &format!("rule{i}"), Priority::Critical, 0))
            .collect();
        ms.push(mem(50, "tea green", Priority::Critical, 5 * DAY));
        let sel = select(&ms, &query("green tea"), NOW, &cfg);
        assert!(!ids(&sel).contains(&50), "{:?}", ids(&sel));
        let eleven = MemoryConfig {
            max_critical: 11,
            ..cfg
        };
        assert!(ids(&select(&ms, &query("green tea"), NOW, &eleven)).contains(&50));
    }

    /// A reflection summary: CRITICAL, tagged `summary`.
    fn summary(id: MemoryId, text: &str, age_secs: i64) -> Memory {
        let mut m = mem(id, text, Priority::Critical, age_secs);
        m.tags.push("summary".into());
        m.refresh_derived(&FallbackTokenizer);
        m
    }

    #[test]
    fn critical_slots_go_to_rules_before_summaries() {
        // Review case (rv_summaries_evict_instructions): 3 rules 5 days old, 15 newer
        // summaries. The rules take 3 of the 10 slots, newest first; then the 7 newest
        // summaries, newest first.
        let cfg = MemoryConfig::default();
        let mut ms: Vec<Memory> = (1..=3)
            .map(|id| {
                let age = 5 * DAY + i64::try_from(id).unwrap() * 60;
                mem(
                    id,
                    &format!("always answer in Chinese rule {id}"),
                    Priority::Critical,
                    age,
                )
            })
            .collect();
        for k in 0..15 {
            let age = 4 * DAY - i64::try_from(k).unwrap() * 3600; // 114 is the newest
            ms.push(summary(100 + k, &format!("偏好归纳（2 条）：绿茶{k}"), age));
        }
        let sel = select(&ms, &query("hello"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![1, 2, 3, 114, 113, 112, 111, 110, 109, 108]);
        // With fewer slots than rules, only rules are in.
        let two = MemoryConfig {
            max_critical: 2,
            ..cfg
        };
        assert_eq!(ids(&select(&ms, &query("hello"), NOW, &two)), vec![1, 2]);
    }

    #[test]
    fn a_character_budget_drops_summaries_before_rules() {
        let ms = vec![
            mem(1, "rule old", Priority::Critical, DAY), // 8 chars
            summary(2, "summary new", 0),                // 11 chars
        ];
        let cfg = MemoryConfig {
            max_chars: Some(10),
            ..MemoryConfig::default()
        };
        assert_eq!(ids(&select(&ms, &query("x"), NOW, &cfg)), vec![1]);
    }

    #[test]
    fn unrelated_memories_never_fill_quotas() {
        let cfg = MemoryConfig::default();
        let ms = vec![
            mem(1, "green tea morning", Priority::High, 0),
            mem(2, "rust compiler", Priority::High, 0),
            mem(3, "python snakes", Priority::Medium, 0),
            mem(4, "jazz music", Priority::Low, 0),
        ];
        let sel = select(&ms, &query("tea please"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![1]);
        let sel = select(&ms, &query(""), NOW, &cfg);
        assert!(sel.chosen.is_empty());
        assert_eq!(sel.considered, 4);
    }

    #[test]
    fn tier_floors_beat_better_scores_of_other_tiers() {
        // 3 slots after the floors would all go to HIGH by score; floors keep a MEDIUM
        // and a LOW in.
        let cfg = MemoryConfig {
            max_selected: 6,
            ..MemoryConfig::default()
        };
        let q = query("tea");
        let mut ms: Vec<Memory> = (0..10)
            .map(|i| mem(i, &format!("tea h{i}"), Priority::High, 0))
            .collect();
        ms.push(mem(20, "tea m0 old", Priority::Medium, 400 * DAY));
        ms.push(mem(21, "tea m1 old", Priority::Medium, 400 * DAY));
        ms.push(mem(22, "tea m2 old", Priority::Medium, 400 * DAY));
        ms.push(mem(30, "tea l0 old", Priority::Low, 400 * DAY));
        let sel = select(&ms, &q, NOW, &cfg);
        let count = |p| sel.chosen.iter().filter(|c| c.priority == p).count();
        assert_eq!(
            (
                count(Priority::High),
                count(Priority::Medium),
                count(Priority::Low)
            ),
            (3, 2, 1)
        );
        let floors = sel
            .chosen
            .iter()
            .filter(|c| c.reason == Reason::TierFloor)
            .count();
        assert_eq!(floors, 6);

        // Without floors, HIGH takes everything.
        let no_floors = MemoryConfig {
            floor_high: 0,
            floor_medium: 0,
            floor_low: 0,
            ..cfg
        };
        let sel = select(&ms, &q, NOW, &no_floors);
        assert!(sel.chosen.iter().all(|c| c.priority == Priority::High));
    }

    #[test]
    fn deleted_and_expired_are_skipped_even_when_critical() {
        let cfg = MemoryConfig::default();
        let mut a = mem(1, "tea", Priority::Critical, 0);
        a.deleted = true;
        let mut b = mem(2, "tea", Priority::High, 0);
        b.expires_at = Some(NOW);
        let mut c = mem(3, "tea", Priority::High, 0);
        c.expires_at = Some(NOW + 1);
        let sel = select(&[a, b, c], &query("tea"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![3]);
        // Every memory not deleted is ranked against (expired ones count in the
        // statistics until the store removes them).
        assert_eq!(sel.considered, 2);
    }

    #[test]
    fn ties_are_broken_by_newer_then_higher_id() {
        let cfg = MemoryConfig {
            max_selected: 2,
            floor_high: 0,
            ..MemoryConfig::default()
        };
        let q = query("tea cup");
        // Same score (same age step, same F1): newer wins, then the higher id.
        let ms = vec![
            mem(1, "tea pot", Priority::High, 3 * DAY),
            mem(2, "tea pot", Priority::High, 2 * DAY),
            mem(3, "tea pot", Priority::High, 2 * DAY),
        ];
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), vec![3, 2]);
        let mut rev = ms.clone();
        rev.reverse();
        assert_eq!(ids(&select(&rev, &q, NOW, &cfg)), vec![3, 2]);
    }

    #[test]
    fn character_budget_drops_lowest_scored_non_critical_first() {
        let q = query("tea");
        let ms = vec![
            mem(1, "rule keep tea", Priority::Critical, 0), // 13 chars
            mem(2, "tea best", Priority::High, 0),          // 8
            mem(3, "tea worst old one", Priority::Low, 400 * DAY), // 17
        ];
        let cfg = MemoryConfig {
            max_chars: Some(25),
            ..MemoryConfig::default()
        };
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), vec![1, 2]);
        let cfg = MemoryConfig {
            max_chars: Some(12),
            ..MemoryConfig::default()
        };
        // Even the rule does not fit: nothing is better than a broken budget.
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), Vec::<MemoryId>::new());
        let cfg = MemoryConfig {
            max_chars: Some(13),
            ..MemoryConfig::default()
        };
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), vec![1]);
    }

    #[test]
    fn prompt_order_is_critical_then_priority_then_score() {
        let cfg = MemoryConfig::default();
        let ms = vec![
            mem(1, "tea low", Priority::Low, 0),
            mem(2, "tea medium", Priority::Medium, 0),
            mem(3, "tea high", Priority::High, 0),
            mem(4, "rule", Priority::Critical, 0),
        ];
        let sel = select(&ms, &query("tea"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![4, 3, 2, 1]);
        let picked: Vec<_> = sel.memories(&ms).iter().map(|m| m.id).collect();
        assert_eq!(picked, vec![4, 3, 2, 1]);
    }

    #[test]
    fn mark_accessed_touches_exactly_the_chosen() {
        let cfg = MemoryConfig::default();
        let mut ms = vec![
            mem(1, "tea", Priority::High, 0),
            mem(2, "jazz", Priority::High, 0),
        ];
        let sel = select(&ms, &query("tea"), NOW, &cfg);
        mark_accessed(&mut ms, &sel, NOW + 5);
        assert_eq!(ms[0].last_accessed_at, Some(NOW + 5));
        assert_eq!(ms[1].last_accessed_at, None);
    }

    #[test]
    fn reason_serialises_snake_case() {
        assert_eq!(
            serde_json::to_string(&Reason::StrongMatch).unwrap(),
            "\"strong_match\""
        );
        assert_eq!(
            serde_json::to_string(&Reason::TierFloor).unwrap(),
            "\"tier_floor\""
        );
    }

    /// A dialog turn: `speaker` said `text`, replying to memory `prev`.
    fn turn(id: MemoryId, speaker: &str, text: &str, prev: Option<MemoryId>) -> Memory {
        let mut m = mem(id, &format!("{speaker}: {text}"), Priority::Low, DAY);
        m.speaker = Some(speaker.into());
        m.prev = prev;
        m.refresh_derived(&FallbackTokenizer);
        m
    }

    #[test]
    fn a_reply_sharing_no_word_gains_a_share_of_the_turn_it_answers() {
        let ms = vec![
            turn(
                1,
                "Mel",
                "which instrument do you practise these days?",
                None,
            ),
            turn(2, "Anna", "the cello, every evening after dinner", Some(1)),
            turn(3, "Anna", "the garden needs rain", Some(2)),
        ];
        let q = query("what instrument does she practise");
        // (reply share, is the reply chosen, its propagated part ÷ the asked turn's BM25)
        let table = [(0.0, false, 0.0), (0.3, true, 0.3), (0.5, true, 0.5)];
        for (share, chosen, part) in table {
            let cfg = MemoryConfig {
                reply_share: share,
                ..MemoryConfig::default()
            };
            let sel = select(&ms, &q, NOW, &cfg);
            let asked = sel.chosen.iter().find(|c| c.id == 1).expect("the question");
            let reply = sel.chosen.iter().find(|c| c.id == 2);
            assert_eq!(reply.is_some(), chosen, "share {share}: {sel:?}");
            if let Some(r) = reply {
                assert_eq!(r.bm25, 0.0, "the reply shares no word");
                assert!((r.propagated / asked.bm25 - part).abs() < 1e-6);
                assert!((r.relevance - part).abs() < 1e-6, "relative to the best");
            }
            assert!(
                !ids(&sel).contains(&3),
                "only the turn right after a match gains"
            );
        }
    }

    #[test]
    fn a_reply_gains_nothing_from_a_deleted_or_expired_turn() {
        let q = query("which instrument");
        for gone in ["deleted", "expired"] {
            let mut asked = turn(1, "Mel", "which instrument do you practise?", None);
            match gone {
                "deleted" => asked.deleted = true,
                _ => asked.expires_at = Some(NOW - 1),
            }
            let ms = vec![asked, turn(2, "Anna", "the cello", Some(1))];
            let sel = select(&ms, &q, NOW, &MemoryConfig::default());
            assert!(sel.chosen.is_empty(), "{gone}: {sel:?}");
        }
    }

    #[test]
    fn a_question_naming_the_speaker_boosts_their_turn_above_a_shorter_match() {
        // Both share "cello" and "mel"; the plain memory is shorter (BM25 prefers it),
        // but only the other is Mel's own turn.
        let mut own = mem(
            1,
            "I play the cello every day after work",
            Priority::Low,
            DAY,
        );
        own.speaker = Some("Mel".into());
        own.refresh_derived(&FallbackTokenizer);
        let plain = mem(2, "cello mel tuesday evening", Priority::Low, DAY);
        let q = query("mel cello");
        // (subject boost, the first chosen, the speaker's boost factor)
        let table = [(1.0, 2, 1.0), (1.5, 1, 1.5), (2.0, 1, 2.0)];
        for (boost, first, factor) in table {
            let cfg = MemoryConfig {
                subject_boost: boost,
                max_selected: 1,
                floor_low: 0,
                ..MemoryConfig::default()
            };
            let sel = select(&[own.clone(), plain.clone()], &q, NOW, &cfg);
            assert_eq!(ids(&sel), vec![first], "boost {boost}");
            let all = select(
                &[own.clone(), plain.clone()],
                &q,
                NOW,
                &MemoryConfig {
                    subject_boost: boost,
                    ..MemoryConfig::default()
                },
            );
            let of = |id| all.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
            assert_eq!(of(1), Some(factor));
            assert_eq!(of(2), Some(1.0), "a lower-case word is no name");
        }
    }

    #[test]
    fn a_person_named_inside_a_turn_is_a_subject_too() {
        let cfg = MemoryConfig {
            min_relevance: 0.0,
            ..MemoryConfig::default()
        };
        let ms = vec![
            turn(1, "Anna", "I saw Jon at the concert", None),
            turn(2, "Anna", "the concert was loud", None),
        ];
        let sel = select(&ms, &query("did jon like the concert"), NOW, &cfg);
        let boost = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
        assert_eq!((boost(1), boost(2)), (Some(1.5), Some(1.0)));
        // The speaker named: both are Anna's.
        let sel = select(&ms, &query("anna concert"), NOW, &cfg);
        assert!(sel.chosen.iter().all(|c| c.boost == 1.5), "{sel:?}");
    }

    #[test]
    fn a_turn_sharing_only_the_speakers_name_is_not_boosted() {
        let cfg = MemoryConfig {
            min_relevance: 0.0,
            ..MemoryConfig::default()
        };
        let ms = vec![
            turn(1, "Mel", "see you soon", None),
            turn(2, "Mel", "my cello is out of tune", None),
            turn(3, "Jon", "which instrument do you play?", None),
            turn(4, "Mel", "the flute", Some(3)),
        ];
        let sel = select(&ms, &query("what instrument does mel play"), NOW, &cfg);
        let boost = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
        // (only the name; no other word; a reply to a matched turn)
        assert_eq!(boost(1), Some(1.0), "only her name: {sel:?}");
        assert_eq!(
            boost(2),
            Some(1.0),
            "her turn, no other word of the question"
        );
        assert_eq!(boost(4), Some(1.5), "her reply to the question asked");
        let sel = select(&ms, &query("mel cello"), NOW, &cfg);
        let boost = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
        assert_eq!((boost(1), boost(2)), (Some(1.0), Some(1.5)));
    }

    #[test]
    fn weighted_fusion_is_the_default_and_rrf_a_setting() {
        // A memory matching the word and one only near by embedding.
        let mut by_word = mem(1, "cello lessons", Priority::Low, DAY);
        by_word.embedding = Some(vec![0.0, 1.0]);
        by_word.embedding_model = Some("e".into());
        let mut by_meaning = mem(2, "she plays strings", Priority::Low, DAY);
        by_meaning.embedding = Some(vec![1.0, 0.0]);
        by_meaning.embedding_model = Some("e".into());
        let ms = [by_word, by_meaning];
        let q = RecallQuery::new(&query("cello"));
        let v = QueryVector {
            model: "e",
            embedding: &[1.0, 0.0],
        };
        assert_eq!(MemoryConfig::default().fusion, Fusion::Weighted);
        // (fusion, vector weight, relevance by word, relevance by meaning)
        let table = [
            (Fusion::Weighted, super::super::VECTOR_WEIGHT, 0.6, 0.4),
            (Fusion::Weighted, 0.3, 0.7, 0.3),
            (Fusion::Weighted, 0.5, 0.5, 0.5),
            (Fusion::Rrf, super::super::VECTOR_WEIGHT, 1.0, 1.0),
        ];
        for (fusion, w, word, meaning) in table {
            let cfg = MemoryConfig {
                fusion,
                vector_weight: w,
                min_relevance: 0.0,
                ..MemoryConfig::default()
            };
            let sel = select_query(&ms, None, &q, Some(v), NOW, &cfg);
            let rel = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.relevance);
            let got = (rel(1).unwrap_or(-1.0), rel(2).unwrap_or(-1.0));
            assert!(
                (got.0 - word).abs() < 1e-6 && (got.1 - meaning).abs() < 1e-6,
                "{fusion:?} {w}: {got:?}"
            );
        }
    }

    #[test]
    fn unsorted_stored_keywords_do_not_panic_or_inflate_relevance() {
        let cfg = MemoryConfig::default();
        let mut m = mem(1, "tea", Priority::High, 0);
        let h = crate::text::keyword_hash("tea");
        m.keywords = serde_json::from_str(&format!("[{h},{h},{h}]")).unwrap();
        let sel = select(&[m], &query("tea"), NOW, &cfg);
        assert!(sel.chosen[0].relevance <= 1.0);
    }
}
