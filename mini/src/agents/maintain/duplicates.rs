//! Step 4, duplicates: embeds the memories that have none yet (when an embedding model
//! is configured), merges the pairs core finds by embedding, then the keyword pairs
//! ([`keyword_pairs`]) round after round until none is left. Decides which pair may
//! merge at all: both live, neither pinned nor a summary, both of the person or both of
//! the world.

use crate::cancel::Cancel;

use evolve_core::memory::{self, MemoryConfig, MemoryId};
use evolve_core::text::Tokenizer;
use evolve_core::Timestamp;

use super::keyword_pairs::keyword_pairs;
use super::report::MergeDone;
use super::working_copy::{Run, Step};

/// Memories embedded per `/v1/embeddings` request.
const EMBED_BATCH: usize = 64;

/// Keyword merging runs at most this many rounds (each round merges at least one pair,
/// so this only bounds a pathological chain).
const MERGE_ROUNDS: usize = 8;

impl Run<'_> {
    /// Embeds the live memories that have no embedding yet, when an embedding model is
    /// configured, in batches; a failure is noted and leaves the rest to keywords.
    fn embed_missing(&mut self, now: Timestamp, cancel: &Cancel) -> Step {
        let cfg = self.cfg().clone();
        // The model the embeddings are stored under (the client itself says whether
        // one is configured: `embed` answers `None` when not).
        let model = self
            .rt
            .config
            .model
            .embedding_model
            .clone()
            .unwrap_or_default();
        // Missing, or made by another model (recomputed when the model changes).
        let missing: Vec<usize> = (0..self.mems.len())
            .filter(|&i| {
                let m = &self.mems[i];
                m.is_active(now) && m.embedding_of(&model).is_none() && !memory::is_summary(m, &cfg)
            })
            .collect();
        let mut changed = Vec::new();
        for batch in missing.chunks(EMBED_BATCH) {
            let inputs: Vec<String> = batch
                .iter()
                .map(|&i| self.mems[i].content.clone())
                .collect();
            match self.rt.model.embed(&inputs, cancel) {
                None => break,
                Some(Err(e)) => {
                    self.report.problems.push(format!(
                        "embeddings skipped, duplicates found by keywords only: {e}"
                    ));
                    break;
                }
                Some(Ok(vectors)) => {
                    for (&i, v) in batch.iter().zip(vectors) {
                        self.mems[i].embedding = Some(v);
                        self.mems[i].embedding_model = Some(model.clone());
                        changed.push(i);
                    }
                }
            }
        }
        changed
    }

    /// Step 4: merges the duplicates, by stored embeddings first, then by keywords.
    pub(super) fn duplicates(&mut self, now: Timestamp, cancel: &Cancel) -> Step {
        let mut changed = self.embed_missing(now, cancel);
        let cfg = self.cfg().clone();
        let tokenizer = &self.rt.tokenizer;
        // Stored embeddings first (one pass: each memory is in at most one pair).
        let pairs: Vec<(MemoryId, MemoryId, f32)> =
            memory::embedding_duplicates(&self.mems, now, &cfg)
                .into_iter()
                .map(|p| (p.keep, p.drop, p.cosine))
                .collect();
        changed.extend(self.merge_pairs(&pairs, "embedding", &cfg, tokenizer));
        // Then keywords, until no pair is left (a merged text may match a third one).
        for _ in 0..MERGE_ROUNDS {
            let pairs = keyword_pairs(&self.mems, now, &cfg, tokenizer);
            if pairs.is_empty() {
                break;
            }
            changed.extend(self.merge_pairs(&pairs, "keywords", &cfg, tokenizer));
        }
        changed
    }

    /// Merges each `(keep, drop, similarity)` pair whose two memories are still live and
    /// not summaries.
    fn merge_pairs(
        &mut self,
        pairs: &[(MemoryId, MemoryId, f32)],
        by: &'static str,
        cfg: &MemoryConfig,
        tokenizer: &dyn Tokenizer,
    ) -> Step {
        let mut changed = Vec::new();
        for &(keep, drop, similarity) in pairs {
            let (Some(k), Some(d)) = (self.index_of(keep), self.index_of(drop)) else {
                continue;
            };
            let (a, b) = (&self.mems[k], &self.mems[d]);
            // A pinned memory is the user's own wording: never rewritten nor dropped.
            if a.deleted
                || b.deleted
                || a.pinned
                || b.pinned
                || memory::is_summary(a, cfg)
                || memory::is_summary(b, cfg)
                // What a page said never merges into the person's memory.
                || a.is_world() != b.is_world()
            {
                continue;
            }
            let merged = memory::merge(a, b, tokenizer);
            self.mems[k] = merged;
            self.mems[d].deleted = true;
            changed.extend([k, d]);
            self.report.merged.push(MergeDone {
                kept: keep,
                dropped: drop,
                similarity,
                by,
            });
        }
        changed
    }
}
