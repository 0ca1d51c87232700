//! `bm25-plain`: Okapi BM25 as a baseline, written here and kept plain on purpose — terms
//! are lower-cased words split on anything not alphanumeric, and runs of Han characters
//! as the shell's tokenizer gives them (jieba, search mode); no stop words, no stemming,
//! no recency or importance. An inverted index is built once; a query scores only the
//! memories that share a term with it. The best [`MAX_CHOSEN`] with a score above zero,
//! best first (the newer first on equal scores).

use std::collections::HashMap;

use evolve_core::memory::Memory;
use evolve_core::text::{is_cjk, Tokenizer};

use super::{System, MAX_CHOSEN};
use crate::data::Question;
use crate::text::ShellTokenizer;

/// Term-frequency saturation (the usual default, as Lucene and Elasticsearch use).
const K1: f32 = 1.2;
/// Length normalisation (the usual default).
const B: f32 = 0.75;

pub struct Bm25Plain {
    tokenizer: ShellTokenizer,
    /// Term → (memory index, occurrences in it).
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Terms per memory.
    lengths: Vec<u32>,
    average_length: f32,
}

impl Bm25Plain {
    pub fn new(tokenizer: ShellTokenizer) -> Self {
        Bm25Plain {
            tokenizer,
            postings: HashMap::new(),
            lengths: Vec::new(),
            average_length: 0.0,
        }
    }

    /// Calls `emit` with every term of `text`, in order.
    fn terms(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        let mut word = String::new();
        let mut han: Option<usize> = None;
        for (at, c) in text.char_indices() {
            if is_cjk(c) {
                if !word.is_empty() {
                    emit(&word);
                    word.clear();
                }
                han.get_or_insert(at);
                continue;
            }
            if let Some(start) = han.take() {
                self.tokenizer.for_each_keyword(&text[start..at], emit);
            }
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else if !word.is_empty() {
                emit(&word);
                word.clear();
            }
        }
        if let Some(start) = han {
            self.tokenizer.for_each_keyword(&text[start..], emit);
        }
        if !word.is_empty() {
            emit(&word);
        }
    }
}

impl System for Bm25Plain {
    fn name(&self) -> String {
        "bm25-plain".into()
    }

    fn prepare(&mut self, memories: &[Memory]) {
        self.postings.clear();
        self.lengths.clear();
        let mut counts: HashMap<String, u32> = HashMap::new();
        for (i, m) in memories.iter().enumerate() {
            counts.clear();
            let mut length = 0u32;
            self.terms(&m.content, &mut |t| {
                length += 1;
                *counts.entry(t.to_string()).or_default() += 1;
            });
            self.lengths.push(length);
            for (term, &n) in &counts {
                self.postings
                    .entry(term.clone())
                    .or_default()
                    .push((i as u32, n));
            }
        }
        let total: u64 = self.lengths.iter().map(|&l| u64::from(l)).sum();
        self.average_length = total as f32 / self.lengths.len().max(1) as f32;
    }

    fn recall(&self, question: &Question, _memories: &[Memory]) -> Vec<usize> {
        let mut query: Vec<String> = Vec::new();
        self.terms(&question.text, &mut |t| query.push(t.to_string()));
        query.sort_unstable();
        query.dedup();

        let n = self.lengths.len() as f32;
        let mut scores = vec![0f32; self.lengths.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in &query {
            let Some(postings) = self.postings.get(term) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let tf = tf as f32;
                let length = self.lengths[doc as usize] as f32;
                let norm = K1 * (1.0 - B + B * length / self.average_length);
                let score = &mut scores[doc as usize];
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        // Best first; on equal scores the newer (the store is in creation order).
        let best_first = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then(b.cmp(a))
        };
        if touched.len() > MAX_CHOSEN {
            touched.select_nth_unstable_by(MAX_CHOSEN - 1, best_first);
            touched.truncate(MAX_CHOSEN);
        }
        touched.sort_unstable_by(best_first);
        touched.into_iter().map(|d| d as usize).collect()
    }
}
