//! The lexical hits of a query: the memories that share a term with it, their summed
//! term weights and the BM25 statistics, found through the inverted index or by a
//! scan that gives the same bits.

use alloc::vec::Vec;

use crate::memory::rank::{idf, MemoryIndex, RecallQuery};
use crate::memory::Memory;

/// The query's terms plus a 256-bit mask of their top hash bits, so that most memory
/// keywords are rejected with one bit test when scanning.
pub(super) struct Terms<'a> {
    pub(super) terms: &'a [(u64, f32)],
    /// Per term: whether it is one of the question's own keywords.
    pub(super) question: Vec<bool>,
    pub(super) question_len: usize,
    pub(super) mask: [u64; 4],
}

impl<'a> Terms<'a> {
    pub(super) fn new(query: &'a RecallQuery) -> Self {
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
    pub(super) fn find(&self, k: u64) -> Option<usize> {
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
    pub(super) fn f1(&self, shared: usize, memory_len: usize) -> f32 {
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
pub(super) struct Hit {
    pub(super) slot: u32,
    pub(super) weight: f32,
    pub(super) shared_question: u32,
}

/// The statistics BM25 needs and the hits, however they were found.
pub(super) struct Lexical {
    pub(super) docs: usize,
    pub(super) mean_len: f32,
    pub(super) hits: Vec<Hit>,
}

/// The hits through the inverted index: only the memories of the query's postings are
/// touched. Each term's weight × IDF is added in term order, as [`lexical_scan`] adds
/// them, so both give the same bits.
///
/// Up to 32 terms (every question and most follow-ups), a memory's matched terms are
/// gathered as the bits of one `u32` and a bitset marks the memories touched, so the
/// hits come out in position order without a sort and the sums are made once per
/// memory; past 32, [`lexical_indexed_wide`].
pub(super) fn lexical_indexed(index: &MemoryIndex, terms: &Terms<'_>, n: usize) -> Lexical {
    if terms.terms.len() > 32 {
        return lexical_indexed_wide(index, terms, n);
    }
    let adds: Vec<f32> = terms
        .terms
        .iter()
        .map(|&(h, w)| w * idf(index.df(h), index.len()))
        .collect();
    let question = terms
        .question
        .iter()
        .enumerate()
        .fold(0u32, |q, (t, &is)| q | (u32::from(is) << t));
    let mut masks = alloc::vec![0u32; n];
    let mut touched = alloc::vec![0u64; n.div_ceil(64)];
    for (t, &(h, _)) in terms.terms.iter().enumerate() {
        for &slot in index.postings(h) {
            let (Some(mask), Some(word)) = (
                masks.get_mut(slot as usize),
                touched.get_mut(slot as usize / 64),
            ) else {
                continue;
            };
            *mask |= 1 << t;
            *word |= 1 << (slot % 64);
        }
    }
    let mut hits = Vec::new();
    for (w, &word) in touched.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let slot = w * 64 + rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let mask = masks.get(slot).copied().unwrap_or(0);
            let mut weight = 0f32;
            let mut bits = mask;
            while bits != 0 {
                weight += adds
                    .get(bits.trailing_zeros() as usize)
                    .copied()
                    .unwrap_or(0.0);
                bits &= bits - 1;
            }
            hits.push(Hit {
                slot: slot as u32,
                weight,
                shared_question: (mask & question).count_ones(),
            });
        }
    }
    Lexical {
        docs: index.len(),
        mean_len: index.mean_len(),
        hits,
    }
}

/// [`lexical_indexed`] for more than 32 terms: per-memory sums in two arrays.
fn lexical_indexed_wide(index: &MemoryIndex, terms: &Terms<'_>, n: usize) -> Lexical {
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
pub(super) fn lexical_scan(memories: &[Memory], terms: &Terms<'_>) -> Lexical {
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
