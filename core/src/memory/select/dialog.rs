//! The two rules for dialog memories, on the raw BM25 scores: reply propagation (a
//! turn gains a share of the turn it replies to) and the subject boost (a memory whose
//! speaker or named person the question names).

use alloc::vec::Vec;

use super::relevance::Raw;
use crate::memory::fields::FieldSource;
use crate::memory::rank::{RecallQuery, Replies};
use crate::memory::{Memory, MemoryConfig, MemoryId};
use crate::text::intersection_len;
use crate::Timestamp;

/// The reply links of the memories not deleted, as
/// [`crate::memory::MemoryIndex::replies`] keeps them.
pub(super) fn scan_replies(memories: &[Memory]) -> Replies {
    Replies::of(
        memories
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.deleted)
            .filter_map(|(slot, m)| Some((m.prev?, slot as u32)))
            .collect(),
    )
}

/// Reply propagation: each active memory replying to a matched one gains `share` × the
/// matched one's BM25 (added to `raw`, kept sorted by position, when it matched
/// nothing itself). O(matches × log distance between them) and one merge; nothing when no
/// memory replies to another.
///
/// A reply that matched nothing itself and whose gain could never bring it to
/// `min_relevance` of the best match (even boosted) is left out, so a question of
/// common words over a long dialog does not double the candidates: its relevance would
/// stay under the threshold whatever the rest (the best only grows). Only when no
/// memory is near by embedding, where relevance is the lexical score alone.
pub(super) fn propagate(
    raw: &mut Vec<Raw>,
    replies: &Replies,
    fields: FieldSource<'_>,
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
        // starts where the last one ended and gallops (the next match is near).
        if last.is_none_or(|l| id < l) {
            from = 0;
        }
        last = Some(id);
        from = gallop(replies.prev(), from, id);
        let gain = share * r.bm25;
        let to = from + count_equal(replies.prev().get(from..).unwrap_or(&[]), id);
        for &reply in replies.slots().get(from..to).unwrap_or(&[]) {
            gains.push((reply, gain));
        }
    }
    if gains.is_empty() {
        return;
    }
    // Stable, and nearly sorted already: replies usually follow what they answer.
    gains.sort_by_key(|g| g.0);
    // A gain to a memory that matched nothing itself: dropped when weak (below
    // `floor`), else kept when that memory is active (a matched one is).
    let add_new = |merged: &mut Vec<Raw>, reply: u32, gain: f32| {
        if gain < floor {
            return;
        }
        match merged.last_mut().filter(|m| m.slot == reply) {
            Some(m) => m.propagated += gain,
            None => {
                if let Some(f) = fields.get(reply).filter(|f| f.is_active(now)) {
                    let mut n = Raw::new(reply, &f, 0.0, 0);
                    n.propagated = gain;
                    merged.push(n);
                }
            }
        }
    };
    // One merge of two position-sorted lists (inserting one by one would be
    // quadratic when most matches have a reply).
    let mut merged: Vec<Raw> = Vec::with_capacity(raw.len() + gains.len());
    let mut gains = gains.into_iter().peekable();
    for r in raw.drain(..) {
        while let Some(&(reply, gain)) = gains.peek().filter(|g| g.0 < r.slot) {
            gains.next();
            add_new(&mut merged, reply, gain);
        }
        let mut r = r;
        while let Some(&(_, gain)) = gains.peek().filter(|g| g.0 == r.slot) {
            gains.next();
            r.propagated += gain;
        }
        merged.push(r);
    }
    for (reply, gain) in gains {
        add_new(&mut merged, reply, gain);
    }
    *raw = merged;
}

/// The first position at or after `from` whose previous id is not below `id`: the
/// next few entries one by one (where the next match's replies usually are: no
/// unpredictable branch), then an exponential search, O(log distance) rather than
/// O(log len).
fn gallop(prev: &[MemoryId], from: usize, id: MemoryId) -> usize {
    let rest = prev.get(from..).unwrap_or(&[]);
    let near = rest.get(..GALLOP_AFTER).unwrap_or(rest);
    if let Some(at) = near.iter().position(|&p| p >= id) {
        return from + at;
    }
    let from = from + near.len();
    let rest = prev.get(from..).unwrap_or(&[]);
    let mut hi = 1usize;
    while hi < rest.len() && rest[hi - 1] < id {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(rest.len());
    from + lo + rest[lo.min(hi)..hi].partition_point(|&p| p < id)
}

/// How many of the first ids of `prev` are `id`.
fn count_equal(prev: &[MemoryId], id: MemoryId) -> usize {
    prev.iter().take_while(|&&p| p == id).count()
}

/// How many entries [`gallop`] looks at one by one before it searches.
const GALLOP_AFTER: usize = 24;

/// The subject boost: `factor` on each entry whose memory's subjects (speaker, people
/// named) the question's own keywords name, and which is about the rest of the question
/// too — it shares another of the question's keywords, or gained a share from the turn
/// it replies to. A memory that only names the person ("Mel says hi.") is not boosted:
/// measured on stores that mix extracted facts with turns, boosting it pushed the facts
/// about the person out for the person's chit-chat. A factor that is not a number above
/// 0 counts as 1.
pub(super) fn boost_subjects(
    raw: &mut [Raw],
    memories: &[Memory],
    query: &RecallQuery,
    factor: f32,
) {
    if !(factor.is_finite() && factor > 0.0) || factor == 1.0 || query.question().is_empty() {
        return;
    }
    let question = query.question().as_slice();
    for r in raw.iter_mut().filter(|r| r.facts.subjects) {
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
