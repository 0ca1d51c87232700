//! Relevance in 0–1 from the raw inputs: BM25 (with the dialog rules' parts) divided
//! by the best, or F1; the memories nearest by embedding; the fusion of both
//! (weighted or by reciprocal rank); and the exponent that sharpens it for the score.

use alloc::vec::Vec;

use super::lexical::Terms;
use crate::memory::fields::Fields;
use crate::memory::rank::{Fusion, Ranking, RRF_K};
use crate::memory::{Memory, MemoryConfig, MemoryId, Priority};
use crate::text::{cosine, sqrt};
use crate::Timestamp;

/// The question's embedding and the model that made it: only memories embedded by the
/// same model are compared.
#[derive(Debug, Clone, Copy)]
pub struct QueryVector<'a> {
    /// The embedding model's name.
    pub model: &'a str,
    /// The question's embedding.
    pub embedding: &'a [f32],
}

/// The vector a follow-up is ranked with: the question's embedding plus `weight` × the
/// previous user turn's, each of unit length first (clamped to 0–1: the question never
/// counts less than the turn before), so "and what about her sister?", whose embedding
/// says little alone, leans towards what the conversation was about — as the previous
/// turn's keywords join the words at a lower weight ([`RecallQuery::with_context`]).
/// The question's own vector when there is no usable previous one (other dimensions,
/// all zeros) or the weight is 0.
///
/// [`RecallQuery::with_context`]: crate::memory::RecallQuery::with_context
pub fn follow_up_vector(question: &[f32], previous: &[f32], weight: f32) -> Vec<f32> {
    let norm = |v: &[f32]| {
        let sum: f64 = v.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
        if sum.is_finite() {
            sqrt(sum)
        } else {
            0.0
        }
    };
    let weight = if weight.is_finite() {
        f64::from(weight.clamp(0.0, 1.0))
    } else {
        0.0
    };
    let (nq, np) = (norm(question), norm(previous));
    if weight <= 0.0 || previous.len() != question.len() || nq == 0.0 || np == 0.0 {
        return question.to_vec();
    }
    let mixed: Vec<f64> = question
        .iter()
        .zip(previous)
        .map(|(&q, &p)| f64::from(q) / nq + weight * f64::from(p) / np)
        .collect();
    let n = sqrt(mixed.iter().map(|x| x * x).sum());
    if n == 0.0 {
        return question.to_vec();
    }
    mixed.iter().map(|&x| (x / n) as f32).collect()
}

/// The memories closest to the question by cosine: the `k` best above zero, as
/// (slot, cosine), best first.
pub(super) fn nearest(
    memories: &[Memory],
    v: &QueryVector<'_>,
    k: usize,
    now: Timestamp,
) -> Vec<(u32, f32)> {
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
pub(super) fn ranks(values: &[(usize, f32)]) -> Vec<(usize, u32)> {
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

/// One memory's relevance inputs before normalisation, with what its score needs, so
/// each memory is read once however many passes follow.
#[derive(Debug, Clone, Copy)]
pub(super) struct Raw {
    pub(super) slot: u32,
    /// The memory's id, kept so propagation never reads the memory again.
    pub(super) id: MemoryId,
    pub(super) bm25: f32,
    /// [`MemoryConfig::reply_share`] × the BM25 of the turn it replies to.
    pub(super) propagated: f32,
    /// [`MemoryConfig::subject_boost`] when the question names a subject, else 1.
    pub(super) boost: f32,
    pub(super) shared_question: u32,
    pub(super) cosine: Option<f32>,
    pub(super) facts: Facts,
}

/// The fields of a memory its score, strong match and subject boost read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Facts {
    pub(super) created_at: Timestamp,
    pub(super) keywords: u32,
    pub(super) importance: u8,
    pub(super) priority: Priority,
    /// The memory has subjects (the boost reads the memory only then).
    pub(super) subjects: bool,
}

impl Facts {
    pub(super) fn of(f: &Fields) -> Self {
        Facts {
            created_at: f.created_at,
            keywords: f.keywords,
            importance: f.importance,
            priority: f.priority,
            subjects: f.has_subjects(),
        }
    }
}

impl Raw {
    pub(super) fn new(slot: u32, f: &Fields, bm25: f32, shared_question: u32) -> Self {
        Raw {
            slot,
            id: f.id,
            bm25,
            propagated: 0.0,
            boost: 1.0,
            shared_question,
            cosine: None,
            facts: Facts::of(f),
        }
    }

    /// The lexical score the relevance is normalised from.
    pub(super) fn lexical(&self) -> f32 {
        (self.bm25 + self.propagated) * self.boost
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
pub(super) fn relevance(
    raw: &[Raw],
    memories: &[Memory],
    terms: &Terms<'_>,
    cfg: &MemoryConfig,
) -> Vec<f32> {
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
