//! `today`: the product's selection as it ships — `evolve_core::memory::select` with the
//! default configuration, the query's keywords from the shell's tokenizer, relevance the
//! token-overlap F1 inside the seeds' score (importance, recency, priority), CRITICAL
//! first, strong matches, tier floors.

use evolve_core::memory::{select, Memory, MemoryConfig};
use evolve_core::text::KeywordSet;

use super::System;
use crate::data::Question;
use crate::text::ShellTokenizer;

pub struct Today {
    tokenizer: ShellTokenizer,
    config: MemoryConfig,
}

impl Today {
    pub fn new(tokenizer: ShellTokenizer) -> Self {
        Today {
            tokenizer,
            config: MemoryConfig::default(),
        }
    }
}

impl System for Today {
    fn name(&self) -> String {
        "today".into()
    }

    fn prepare(&mut self, _memories: &[Memory]) {}

    fn recall(&self, question: &Question, memories: &[Memory]) -> Vec<usize> {
        let query = KeywordSet::of(&self.tokenizer, &question.text);
        select(memories, &query, question.now, &self.config)
            .chosen
            .iter()
            .map(|c| c.index)
            .collect()
    }
}
