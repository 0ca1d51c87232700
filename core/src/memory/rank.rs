//! Ranked relevance: how well a memory answers a query.
//!
//! Decides the relevance that enters the selection score (relevance × importance/5 ×
//! recency × priority factor, see [`super::select`]): BM25 over the memories' keywords
//! (Robertson–Spärck Jones IDF from document frequencies, length normalisation with
//! k1 = 1.2, b = 0.75), optionally fused with the cosine of embeddings; and keeps the
//! inverted index (keyword → memories) that finds the memories sharing a keyword
//! without looking at the others, with the document frequencies kept up to date as
//! memories are added, changed and removed.
//!
//! Why not token-overlap F1 (the first rule of both sources, still used for the strong match):
//! measured on a public long-conversation benchmark, F1 found 34.5% of the evidence and
//! BM25 with stemming 62%. F1 favours short memories ("Thanks, Mel!" outranks the long
//! turn with the answer) and weighs every word alike, so a name or a place counts no
//! more than "great"; BM25 weighs a word by how rare it is and normalises length.
//!
//! A term counts once per memory (memories are a sentence or two: a content word rarely
//! repeats, and the records keep distinct keywords only); the length is the keyword
//! count with repeats ([`Memory::ranked_len`]). The statistics (number of memories,
//! their mean length, each keyword's document frequency) are those of every memory the
//! index holds — the live ones, expired included — so the indexed and the scanning
//! paths ([`super::select_query`] with and without an index) rank alike to the bit.
//!
//! The query ([`RecallQuery`]) is the question's keywords at weight 1 and, for a
//! follow-up ("and where does she live?"), the previous user turn's at a lower weight.
//!
//! Two rules for dialog memories act on the BM25 score before it is divided by the
//! best (so relevance stays in 0–1, and the index and the scan still agree): a turn
//! that replies to a matched turn ([`Memory::prev`]) gains [`REPLY_SHARE`] of that
//! turn's BM25 — it competes even when it shares no word with the question — and a
//! memory whose speaker or a person it names is named by the question
//! ([`Memory::subjects`]) is multiplied by [`SUBJECT_BOOST`]. The index keeps the
//! replies of each memory, so propagation costs one lookup per match.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::fields::Fields;
use super::{Memory, MemoryId, Priority};
use crate::text::KeywordSet;

/// BM25's term-frequency saturation (the usual 1.2).
pub const BM25_K1: f32 = 1.2;
/// BM25's length normalisation (the usual 0.75).
pub const BM25_B: f32 = 0.75;

/// How relevance is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    /// BM25 over the keywords (the default).
    #[default]
    Bm25,
    /// Token-overlap F1 with the question (the rule before 2026-12, kept to measure
    /// against).
    F1,
}

/// How lexical and embedding ranks are fused when an embedding model is configured.
///
/// Weighted is the default: measured on a public long-conversation benchmark with a
/// small sentence model (MiniLM-L6), RRF lost 3 points of recall at ten memories
/// against words alone while a weighted sum with w 0.3–0.5 gained 4.6. RRF throws the
/// scores away and keeps only ranks, so a weak lexical match ranked first counts as
/// much as a strong one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Reciprocal rank fusion (k = 60): `1/(60 + lexical rank) + 1/(60 + vector rank)`.
    Rrf,
    /// A weighted sum of the lexical score (divided by the best) and the cosine
    /// (divided by the best): `(1 − w)·lexical + w·vector`, w = `vector_weight`.
    #[default]
    Weighted,
}

/// The vector's share in [`Fusion::Weighted`] (0.3–0.5 measured best on the benchmark
/// above; ZeroClaw and NullClaw use 0.7, which lets meaning outvote the words).
pub const VECTOR_WEIGHT: f32 = 0.4;

/// The reciprocal-rank-fusion constant (Cormack et al.).
pub const RRF_K: f32 = 60.0;

/// The share of a turn's BM25 score passed to the turn that replies to it
/// ([`Memory::prev`]): the answer often shares no word with the question while the
/// turn it answers does. Measured on a public long-conversation benchmark: 0.3–0.5
/// gains, 1.0 hurts (the reply then outranks what it replies to).
pub const REPLY_SHARE: f32 = 0.3;

/// The factor on the BM25 score of a memory whose subjects (speaker, people named:
/// [`Memory::subjects`]) the question names: the named person's own statements rank
/// above turns that share a common word (measured with [`REPLY_SHARE`]: +4.8 points of
/// recall at ten memories on the benchmark above).
pub const SUBJECT_BOOST: f32 = 1.5;

/// A query: distinct keywords with weights (the question's at 1, the context's lower),
/// and the question's own keywords, which alone decide a strong match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecallQuery {
    /// (keyword hash, weight), sorted by hash, distinct.
    terms: Vec<(u64, f32)>,
    question: KeywordSet,
}

impl RecallQuery {
    /// The question alone.
    pub fn new(question: &KeywordSet) -> Self {
        RecallQuery {
            terms: question.as_slice().iter().map(|&h| (h, 1.0)).collect(),
            question: question.clone(),
        }
    }

    /// Adds the keywords of `context` (the previous user turn) that the question does
    /// not have, at `weight` (clamped to 0–1; 0 adds nothing).
    pub fn with_context(mut self, context: &KeywordSet, weight: f32) -> Self {
        let weight = if weight.is_finite() {
            weight.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if weight <= 0.0 {
            return self;
        }
        for &h in context.as_slice() {
            if let Err(at) = self.terms.binary_search_by_key(&h, |t| t.0) {
                self.terms.insert(at, (h, weight));
            }
        }
        self
    }

    /// The weighted terms, sorted by hash.
    pub fn terms(&self) -> &[(u64, f32)] {
        &self.terms
    }

    /// The question's keywords.
    pub fn question(&self) -> &KeywordSet {
        &self.question
    }

    /// The hashes of `memory`'s keywords that are terms of the query, in term order
    /// (for explaining a choice: the shell maps them back to words).
    pub fn matched(&self, memory: &Memory) -> Vec<u64> {
        self.terms
            .iter()
            .map(|t| t.0)
            .filter(|&h| memory.keywords.contains(h))
            .collect()
    }
}

/// The inverse document frequency of a keyword found in `df` of `n` memories:
/// `ln(1 + (n − df + 0.5)/(df + 0.5))`, always positive.
pub fn idf(df: usize, n: usize) -> f32 {
    let (df, n) = (df as f64, n.max(1) as f64);
    ln(1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)) as f32
}

/// BM25's length factor of a memory of `len` keywords where the mean is `mean_len`:
/// `(k1 + 1) / (1 + k1·(1 − b + b·len/mean))`, for a term that occurs once.
pub fn length_factor(len: u32, mean_len: f32) -> f32 {
    let ratio = if mean_len > 0.0 {
        len as f32 / mean_len
    } else {
        1.0
    };
    (BM25_K1 + 1.0) / (1.0 + BM25_K1 * (1.0 - BM25_B + BM25_B * ratio))
}

/// Natural logarithm for `x > 0` (the core is `no_std`): `x = m·2^e` with m in
/// [1, 2), `ln m = 2·atanh((m − 1)/(m + 1))` by its series (|s| ≤ 1/3: 12 terms reach
/// f64 precision).
fn ln(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if (bits >> 52) & 0x7ff == 0 {
        // Subnormal: scale into the normal range first.
        return ln(x * (1u64 << 54) as f64) - 54.0 * core::f64::consts::LN_2;
    }
    if m > core::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let (mut term, mut sum) = (s, 0.0);
    for k in 0..12 {
        sum += term / f64::from(2 * k + 1);
        term *= s2;
    }
    e as f64 * core::f64::consts::LN_2 + 2.0 * sum
}

/// The reply links of a slice of memories: (previous memory's id, position of the
/// memory replying to it), sorted, kept as two arrays so that finding a matched
/// memory's replies reads the ids alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replies {
    prev: Vec<MemoryId>,
    slot: Vec<u32>,
}

impl Replies {
    /// The links of `pairs` (previous id, reply's position), in any order.
    pub fn of(mut pairs: Vec<(MemoryId, u32)>) -> Self {
        pairs.sort_unstable();
        Replies {
            prev: pairs.iter().map(|p| p.0).collect(),
            slot: pairs.iter().map(|p| p.1).collect(),
        }
    }

    /// The previous ids, ascending.
    pub fn prev(&self) -> &[MemoryId] {
        &self.prev
    }

    /// The replies' positions, in the order of [`Replies::prev`].
    pub fn slots(&self) -> &[u32] {
        &self.slot
    }

    /// Number of links.
    pub fn len(&self) -> usize {
        self.prev.len()
    }

    /// True when no memory replies to another.
    pub fn is_empty(&self) -> bool {
        self.prev.is_empty()
    }

    /// The links as (previous id, reply's position), sorted.
    pub fn pairs(&self) -> impl Iterator<Item = (MemoryId, u32)> + '_ {
        self.prev.iter().copied().zip(self.slot.iter().copied())
    }

    fn find(&self, link: (MemoryId, u32)) -> Result<usize, usize> {
        let from = self.prev.partition_point(|&p| p < link.0);
        let to = from + self.prev[from..].partition_point(|&p| p == link.0);
        self.slot[from..to]
            .binary_search(&link.1)
            .map_or_else(|at| Err(from + at), |at| Ok(from + at))
    }

    fn insert(&mut self, link: (MemoryId, u32)) {
        if let Err(at) = self.find(link) {
            self.prev.insert(at, link.0);
            self.slot.insert(at, link.1);
        }
    }

    fn remove(&mut self, link: (MemoryId, u32)) {
        if let Ok(at) = self.find(link) {
            self.prev.remove(at);
            self.slot.remove(at);
        }
    }
}

/// The inverted index of a slice of memories, kept in step with it: each keyword's
/// memories (by position in the slice), the CRITICAL ones, the statistics BM25
/// needs, and what ranking reads of each memory in one dense array by position
/// (one short record per position). Deleted memories are not indexed (their fields say
/// they are deleted).
///
/// The slice it mirrors changes through [`MemoryIndex::insert`],
/// [`MemoryIndex::replace`] and [`MemoryIndex::remove`] at the same positions; a
/// position past an insertion or removal moves with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryIndex {
    postings: BTreeMap<u64, Vec<u32>>,
    critical: Vec<u32>,
    /// (previous memory's id, position of the memory replying to it), sorted: the
    /// replies of a memory that matched, for [`REPLY_SHARE`].
    replies: Replies,
    /// Subject keyword → how many indexed memories have it ([`Memory::subjects`]): a
    /// question naming none of them skips the subject boost without touching a memory.
    subjects: BTreeMap<u64, u32>,
    /// Per position, deleted memories included: what ranking reads of the memory.
    fields: Vec<Fields>,
    docs: usize,
    total_len: u64,
    /// Length of the slice mirrored (deleted memories included), so an insertion at
    /// the end moves nothing.
    slots: u32,
}

impl MemoryIndex {
    /// The index of `memories`.
    pub fn build(memories: &[Memory]) -> Self {
        // Positions come in ascending order, so each list only grows at its end.
        let mut ix = MemoryIndex {
            slots: u32::try_from(memories.len()).unwrap_or(u32::MAX),
            fields: memories.iter().map(Fields::of).collect(),
            ..MemoryIndex::default()
        };
        let mut replies = Vec::new();
        for (slot, m) in memories.iter().enumerate() {
            if m.deleted {
                continue;
            }
            let slot = slot as u32;
            for &h in m.keywords.as_slice() {
                let list = ix.postings.entry(h).or_default();
                if list.last() != Some(&slot) {
                    list.push(slot);
                }
            }
            if m.priority == Priority::Critical {
                ix.critical.push(slot);
            }
            if let Some(prev) = m.prev {
                replies.push((prev, slot));
            }
            for &h in m.subjects.as_slice() {
                *ix.subjects.entry(h).or_default() += 1;
            }
            ix.docs += 1;
            ix.total_len += u64::from(m.ranked_len());
        }
        ix.replies = Replies::of(replies);
        ix
    }

    /// Number of memories indexed.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// The mean keyword count of the indexed memories.
    pub fn mean_len(&self) -> f32 {
        if self.docs == 0 {
            0.0
        } else {
            (self.total_len as f64 / self.docs as f64) as f32
        }
    }

    /// In how many indexed memories the keyword is.
    pub fn df(&self, hash: u64) -> usize {
        self.postings.get(&hash).map_or(0, Vec::len)
    }

    /// The positions of the memories holding the keyword, ascending.
    pub fn postings(&self, hash: u64) -> &[u32] {
        self.postings.get(&hash).map_or(&[], Vec::as_slice)
    }

    /// The positions of the CRITICAL memories, ascending.
    pub fn critical(&self) -> &[u32] {
        &self.critical
    }

    /// (previous memory's id, position of its reply) of every indexed memory that
    /// replies to another, sorted.
    pub fn replies(&self) -> &Replies {
        &self.replies
    }

    /// True when some indexed memory has the keyword among its subjects.
    pub fn is_subject(&self, hash: u64) -> bool {
        self.subjects.contains_key(&hash)
    }

    /// What ranking reads of each memory, by position (deleted ones included).
    pub(crate) fn fields(&self) -> &[Fields] {
        &self.fields
    }

    /// `memory` was inserted at `slot` (later positions move up by one).
    pub fn insert(&mut self, slot: usize, memory: &Memory) {
        let slot = slot as u32;
        if slot < self.slots {
            self.shift(slot, true);
        }
        self.slots += 1;
        let at = (slot as usize).min(self.fields.len());
        self.fields.insert(at, Fields::of(memory));
        self.add_at(slot, memory);
    }

    /// The memory at `slot` changed from `old` to `new`.
    pub fn replace(&mut self, slot: usize, old: &Memory, new: &Memory) {
        let slot = slot as u32;
        self.remove_at(slot, old);
        if let Some(f) = self.fields.get_mut(slot as usize) {
            *f = Fields::of(new);
        }
        self.add_at(slot, new);
    }

    /// `memory` was removed from `slot` (later positions move down by one).
    pub fn remove(&mut self, slot: usize, memory: &Memory) {
        let slot = slot as u32;
        self.remove_at(slot, memory);
        if (slot as usize) < self.fields.len() {
            self.fields.remove(slot as usize);
        }
        self.slots = self.slots.saturating_sub(1);
        if slot < self.slots {
            self.shift(slot, false);
        }
    }

    fn add_at(&mut self, slot: u32, m: &Memory) {
        if m.deleted {
            return;
        }
        for &h in m.keywords.as_slice() {
            let list = self.postings.entry(h).or_default();
            if let Err(at) = list.binary_search(&slot) {
                list.insert(at, slot);
            }
        }
        if m.priority == Priority::Critical {
            if let Err(at) = self.critical.binary_search(&slot) {
                self.critical.insert(at, slot);
            }
        }
        if let Some(prev) = m.prev {
            self.replies.insert((prev, slot));
        }
        for &h in m.subjects.as_slice() {
            *self.subjects.entry(h).or_default() += 1;
        }
        self.docs += 1;
        self.total_len += u64::from(m.ranked_len());
    }

    fn remove_at(&mut self, slot: u32, m: &Memory) {
        if m.deleted {
            return;
        }
        for &h in m.keywords.as_slice() {
            if let Some(list) = self.postings.get_mut(&h) {
                if let Ok(at) = list.binary_search(&slot) {
                    list.remove(at);
                }
                if list.is_empty() {
                    self.postings.remove(&h);
                }
            }
        }
        if let Ok(at) = self.critical.binary_search(&slot) {
            self.critical.remove(at);
        }
        if let Some(prev) = m.prev {
            self.replies.remove((prev, slot));
        }
        for &h in m.subjects.as_slice() {
            if let Some(n) = self.subjects.get_mut(&h) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.subjects.remove(&h);
                }
            }
        }
        self.docs = self.docs.saturating_sub(1);
        self.total_len = self.total_len.saturating_sub(u64::from(m.ranked_len()));
    }

    /// Moves every position at or past `from` up (insertion) or past `from` down
    /// (removal): a pass over every list. Not called for an insertion or a removal at
    /// the end, the usual case (new memories get the highest id).
    fn shift(&mut self, from: u32, up: bool) {
        let fix = |list: &mut Vec<u32>| {
            let start = list.partition_point(|&s| if up { s < from } else { s <= from });
            for s in &mut list[start..] {
                *s = if up { *s + 1 } else { *s - 1 };
            }
        };
        for list in self.postings.values_mut() {
            fix(list);
        }
        fix(&mut self.critical);
        // Every position moves alike, so the (id, position) order stays.
        for s in &mut self.replies.slot {
            if (up && *s >= from) || (!up && *s > from) {
                *s = if up { *s + 1 } else { *s - 1 };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;
    use alloc::vec;

    fn mem(text: &str) -> Memory {
        Memory::new(text, Category::General, 0, &FallbackTokenizer)
    }

    #[test]
    fn ln_matches_known_values() {
        let table = [
            (1.0, 0.0),
            (core::f64::consts::E, 1.0),
            (2.0, core::f64::consts::LN_2),
            (10.0, core::f64::consts::LN_10),
            (0.5, -core::f64::consts::LN_2),
            (1e-310, -713.801_378_828_154_3),
            (1e300, 690.775_527_898_213_7),
        ];
        for (x, want) in table {
            assert!((ln(x) - want).abs() < 1e-12 * want.abs().max(1.0), "ln {x}");
        }
        assert_eq!(ln(0.0), 0.0);
        assert_eq!(ln(-1.0), 0.0);
        assert_eq!(ln(f64::NAN), 0.0);
    }

    #[test]
    fn rare_words_weigh_more_and_idf_stays_positive() {
        assert!(idf(1, 1000) > idf(10, 1000));
        assert!(idf(10, 1000) > idf(500, 1000));
        assert!(idf(1000, 1000) > 0.0);
        assert!(idf(0, 0) > 0.0);
        // Lucene's formula at n = 1000, df = 1: ln(1 + 999.5/1.5)
        assert!((idf(1, 1000) - 6.503_29).abs() < 1e-4);
    }

    #[test]
    fn longer_memories_get_a_smaller_length_factor() {
        assert!(length_factor(5, 10.0) > length_factor(10, 10.0));
        assert!(length_factor(10, 10.0) > length_factor(40, 10.0));
        assert!((length_factor(10, 10.0) - 1.0).abs() < 1e-6);
        assert!(length_factor(3, 0.0).is_finite());
    }

    #[test]
    fn the_context_adds_only_new_terms_at_its_weight() {
        let q = KeywordSet::of(&FallbackTokenizer, "where does she live");
        let prev = KeywordSet::of(&FallbackTokenizer, "tell me about Caroline's sister live");
        let rq = RecallQuery::new(&q).with_context(&prev, 0.5);
        let live = crate::text::keyword_hash("live");
        let sister = crate::text::keyword_hash("sister");
        let w = |h: u64| rq.terms().iter().find(|t| t.0 == h).map(|t| t.1);
        assert_eq!(w(live), Some(1.0), "a question term keeps weight 1");
        assert_eq!(w(sister), Some(0.5));
        assert!(rq.terms().windows(2).all(|p| p[0].0 < p[1].0));
        assert_eq!(rq.question(), &q);
        assert_eq!(
            RecallQuery::new(&q).with_context(&prev, 0.0),
            RecallQuery::new(&q)
        );
        assert_eq!(
            RecallQuery::new(&q).with_context(&prev, f32::NAN),
            RecallQuery::new(&q)
        );
    }

    #[test]
    fn the_index_follows_inserts_replacements_and_removals() {
        let a = mem("green tea every morning");
        let b = mem("black coffee after lunch");
        let c = mem("green salad for dinner");
        let mut ms = vec![a.clone(), c.clone()];
        let mut ix = MemoryIndex::build(&ms);
        ms.insert(1, b.clone());
        ix.insert(1, &b);
        assert_eq!(ix, MemoryIndex::build(&ms));
        let green = crate::text::keyword_hash("green");
        assert_eq!(ix.postings(green), &[0, 2]);
        let mut b2 = b.clone();
        b2.content = "green juice".into();
        b2.refresh_derived(&FallbackTokenizer);
        b2.priority = Priority::Critical;
        ix.replace(1, &ms[1], &b2);
        ms[1] = b2;
        assert_eq!(ix, MemoryIndex::build(&ms));
        assert_eq!(ix.df(green), 3);
        assert_eq!(ix.critical(), &[1]);
        let removed = ms.remove(0);
        ix.remove(0, &removed);
        assert_eq!(ix, MemoryIndex::build(&ms));
        assert_eq!(ix.postings(green), &[0, 1]);
        assert_eq!(ix.critical(), &[0]);
        let mut gone = ms[0].clone();
        gone.deleted = true;
        ix.replace(0, &ms[0], &gone);
        ms[0] = gone;
        assert_eq!(ix, MemoryIndex::build(&ms));
        assert_eq!(ix.len(), 1);
    }

    #[test]
    fn the_index_keeps_each_reply_under_the_turn_it_answers() {
        let reply = |text: &str, prev: MemoryId| {
            let mut m = mem(text);
            m.prev = Some(prev);
            m
        };
        let mut ms = vec![mem("a"), reply("b", 1), reply("c", 1)];
        let mut ix = MemoryIndex::build(&ms);
        assert_eq!(ix.replies().pairs().collect::<Vec<_>>(), [(1, 1), (1, 2)]);
        let front = reply("d", 7);
        ix.insert(0, &front);
        ms.insert(0, front);
        assert_eq!(
            ix.replies().pairs().collect::<Vec<_>>(),
            [(1, 2), (1, 3), (7, 0)]
        );
        assert_eq!(ix, MemoryIndex::build(&ms));
        let removed = ms.remove(1);
        ix.remove(1, &removed);
        assert_eq!(
            ix.replies().pairs().collect::<Vec<_>>(),
            [(1, 1), (1, 2), (7, 0)]
        );
        let mut gone = ms[1].clone();
        gone.deleted = true;
        ix.replace(1, &ms[1], &gone);
        ms[1] = gone;
        assert_eq!(ix.replies().pairs().collect::<Vec<_>>(), [(1, 2), (7, 0)]);
        assert_eq!(ix, MemoryIndex::build(&ms));
    }
}
