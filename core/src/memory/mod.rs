//! Memory: everything that decides about long-term memories.
//!
//! Decides which memories enter the prompt ([`select`]), how they are written there
//! ([`format_block`]), how they age ([`apply_decay`], [`expired`]), whether a newly
//! extracted memory is new, a duplicate or a restatement to merge ([`decide_ingest`],
//! [`merge`]), which CRITICAL memories fall out of the FIFO cap and how
//! ([`critical_overflow`], [`retire`]: summaries and the model's promotions before the
//! user's rules, [`stated_by_user`]),
//! which pairs are semantic duplicates ([`embedding_duplicates`]), what is clustered and
//! summarised by reflection ([`clusters`], [`draft_summary`]), and which priority changes
//! proposed by a model are allowed ([`adjust_priorities`]), and whose words a learned
//! memory stands on ([`learned_source`]), and whether an exchange has anything to learn
//! from at all ([`nothing_to_learn`]: small talk does not).
//!
//! Every memory keeps its source ([`Memory::source`]): one learned from world text (a
//! page, a file, a tool's output) is information, never a rule — never CRITICAL, never
//! an instruction or preference ([`Memory::confine_world`]); merging never lets it
//! change the person's memory, maintenance never promotes it, a summary of it is the
//! world's too, and the block marks it as information ([`format_block`]).
//!
//! Storage, embeddings, the model calls and the clock are the shell's: every function
//! here takes `now` and the records, and returns decisions (ids, changes, text). The
//! order the shell runs things in each turn is: [`expired`] and [`apply_decay`], then
//! [`critical_overflow`], then [`select`], then [`mark_accessed`] (one write
//! transaction, off the answer path).
//!
//! Sources (ARCHITECTURE.md § Sources): tea-agent's memory system (长期记忆系统) and
//! the Evolve Agent design's memory search (记忆搜索: token-overlap F1 ≥ 0.7 is a
//! strong match, at most 10).

mod adjust;
mod decay;
mod dedup;
mod dialog;
mod fields;
mod format;
mod ingest;
mod learned;
mod rank;
mod record;
mod select;
mod summarize;
mod worth;

#[cfg(test)]
mod proptests;

pub use crate::text::clip_chars;
pub use adjust::{
    adjust_priorities, adjustment_listing, AdjustOutcome, Applied, Change, Proposal, RejectReason,
    Rejected,
};
pub use decay::{
    apply_decay, critical_overflow, critical_room, decayed_priority, expired, retire,
    stated_by_user, DecayChange, Retired,
};
pub use dedup::{embedding_duplicates, DuplicatePair};
pub use dialog::{leading_label, subjects};
pub use format::{
    flatten_content, format_block, prefix, Lang, BLOCK_CLOSE, BLOCK_OPEN, WORLD_PREFIX_EN,
    WORLD_PREFIX_ZH,
};
pub use ingest::{decide_ingest, merge, merge_loses_nothing, merge_similarity, IngestDecision};
pub use learned::{grounded, learned_source, GROUNDED_SHARE, PARAPHRASE_WORDS};
pub use rank::{
    idf, length_factor, Fusion, MemoryIndex, Ranking, RecallQuery, Replies, BM25_B, BM25_K1,
    REPLY_SHARE, RRF_K, SUBJECT_BOOST, VECTOR_WEIGHT,
};
pub use record::{
    content_hash, Category, Memory, MemoryId, Priority, IMPORTANCE_MAX, IMPORTANCE_MIN,
    KEYWORDS_VERSION, WORLD_MAX_IMPORTANCE, WORLD_MAX_PRIORITY,
};
pub use select::{
    follow_up_vector, mark_accessed, recency_factor, score, select, select_query, Chosen,
    QueryVector, Reason, Selection,
};
pub use summarize::{
    clusters, demote_summarised, draft_summary, is_summary, summary_memory, Cluster,
    ImportanceChange,
};
pub use worth::nothing_to_learn;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// One step of the recency factor: a memory at most `max_age_days` old scores `factor`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecencyStep {
    /// Inclusive upper bound of the age, in days since `created_at`.
    pub max_age_days: i64,
    /// The factor for memories in this step.
    pub factor: f32,
}

/// Constants of the memory rules (defaults from tea-agent and the Evolve Agent design; ARCHITECTURE.md § Design constants).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// At most this many memories enter the prompt (tea-agent: ≤ 30).
    pub max_selected: usize,
    /// How relevance is computed (BM25; F1 only to measure against).
    pub ranking: Ranking,
    /// The weight of the previous user turn's keywords in the query (the question's
    /// are 1), so a follow-up ("and where does she live?") finds what it refers to;
    /// 0 leaves it out.
    pub context_weight: f32,
    /// A memory whose relevance (0–1, relative to the best match) is below this does
    /// not compete for a tier floor or by score (a strong match and CRITICAL still
    /// enter): weak, one-common-word matches only cost prompt.
    pub min_relevance: f32,
    /// Relevance enters the score raised to this power (1 = as is): above 1 it weighs
    /// more against importance, recency and priority, so a memory that answers the
    /// question is not outscored by a newer or higher-priority one that shares a word.
    pub relevance_exponent: f32,
    /// The share of a turn's BM25 score passed to the turn replying to it
    /// ([`REPLY_SHARE`]; 0 turns it off).
    pub reply_share: f32,
    /// The factor on a memory whose speaker or a person it names is named by the
    /// question ([`SUBJECT_BOOST`]; 1 turns it off).
    pub subject_boost: f32,
    /// With embeddings: how lexical and vector ranks are fused.
    pub fusion: Fusion,
    /// With [`Fusion::Weighted`]: the vector's share ([`VECTOR_WEIGHT`]).
    pub vector_weight: f32,
    /// With embeddings: the nearest memories by cosine that may compete even without a
    /// shared keyword.
    pub vector_candidates: usize,
    /// CRITICAL memories always go first, at most this many in all (tea-agent: 上限 10
    /// 条, FIFO 取最新): the user's rules newest first, then reflection summaries newest
    /// first. CRITICAL memories past this limit never enter, not even as strong matches.
    pub max_critical: usize,
    /// Token-overlap F1 with the query at or above which a memory is a strong match and
    /// always taken (the Evolve Agent design: 超过 0.7).
    pub strong_match_f1: f32,
    /// At most this many strong matches (the Evolve Agent design: 最多加入 10 条).
    pub max_strong: usize,
    /// Recency factor by age, checked in order; the first step whose bound the age does
    /// not exceed wins (tea-agent: 1 d = 1.0, 7 d = 0.9, 30 d = 0.7, 90 d = 0.5).
    pub recency_steps: Vec<RecencyStep>,
    /// Recency factor past the last step (tea-agent: > 90 d = 0.3).
    pub recency_after: f32,
    /// At least this many HIGH memories when enough related ones exist (tea-agent: 3).
    pub floor_high: usize,
    /// At least this many MEDIUM memories when enough related ones exist (tea-agent: 2).
    pub floor_medium: usize,
    /// At least this many LOW memories when enough related ones exist (tea-agent: 1).
    pub floor_low: usize,
    /// Optional budget for the selected contents, in characters; the lowest-scored
    /// non-critical choices are dropped first (our addition; none by default).
    pub max_chars: Option<usize>,
    /// CRITICAL older than this many days decays to HIGH (tea-agent: > 30 d).
    pub decay_critical_days: i64,
    /// HIGH older than this many days decays to MEDIUM (tea-agent: > 60 d).
    pub decay_high_days: i64,
    /// MEDIUM older than this many days decays to LOW (tea-agent: > 90 d).
    pub decay_medium_days: i64,
    /// Keyword Jaccard at or above which a new memory is merged into an existing one
    /// (tea-agent: ≥ 0.3).
    pub merge_jaccard: f32,
    /// Multiplier of the Jaccard when both memories have the same category
    /// (tea-agent: 同分类加权 10%, i.e. × 1.1).
    pub same_category_bonus: f32,
    /// At most this many active CRITICAL memories; beyond it reflection summaries and the
    /// model's promotions are retired first, then the oldest, pinned last (tea-agent:
    /// 上限 15 条, FIFO).
    pub critical_cap: usize,
    /// Embedding cosine at or above which two memories are duplicates (tea-agent: 0.92).
    pub duplicate_cosine: f32,
    /// Each run compares the newest this many memories with embeddings against every
    /// active memory with an embedding (tea-agent: 扫描全部活跃记忆), O(limit × n) cosines;
    /// pairs of two older memories were compared by earlier runs (our cap, 1 000).
    pub duplicate_scan_limit: usize,
    /// Reflection clusters memories created within this many days (our choice;
    /// tea-agent says only 近期).
    pub summary_window_days: i64,
    /// A category needs at least this many recent memories to be summarised
    /// (tea-agent: 每类 ≥ 2 条).
    pub summary_min_cluster: usize,
    /// The draft summary lists at most this many keywords (our choice).
    pub summary_keywords: usize,
    /// Priority of a summary memory (tea-agent: CRITICAL).
    pub summary_priority: Priority,
    /// Importance of a summary memory (tea-agent: 5).
    pub summary_importance: u8,
    /// Importance taken off each summarised original, never below 1 (tea-agent: −1).
    pub summary_importance_drop: u8,
    /// Tag carried by summary memories, so they are never summarised again.
    pub summary_tag: String,
    /// At most this many priority changes proposed by a model are applied per run
    /// (tea-agent: 每次最多调整 3 条).
    pub max_adjustments: usize,
    /// The model sees at most this many active memories when proposing adjustments
    /// (tea-agent: ≤ 100 条).
    pub adjust_listed: usize,
    /// Each listed memory is previewed in at most this many characters (tea-agent: ≤ 80).
    pub adjust_preview_chars: usize,
    /// The summary of recent conversation topics is cut to this many characters
    /// (tea-agent: ≤ 2000 字符).
    pub adjust_topics_chars: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            max_selected: 30,
            ranking: Ranking::Bm25,
            context_weight: 0.25,
            min_relevance: 0.2,
            relevance_exponent: 2.0,
            reply_share: REPLY_SHARE,
            subject_boost: SUBJECT_BOOST,
            fusion: Fusion::Weighted,
            vector_weight: VECTOR_WEIGHT,
            vector_candidates: 60,
            max_critical: 10,
            strong_match_f1: 0.7,
            max_strong: 10,
            recency_steps: vec![
                RecencyStep {
                    max_age_days: 1,
                    factor: 1.0,
                },
                RecencyStep {
                    max_age_days: 7,
                    factor: 0.9,
                },
                RecencyStep {
                    max_age_days: 30,
                    factor: 0.7,
                },
                RecencyStep {
                    max_age_days: 90,
                    factor: 0.5,
                },
            ],
            recency_after: 0.3,
            floor_high: 3,
            floor_medium: 2,
            floor_low: 1,
            max_chars: None,
            decay_critical_days: 30,
            decay_high_days: 60,
            decay_medium_days: 90,
            merge_jaccard: 0.3,
            same_category_bonus: 1.1,
            critical_cap: 15,
            duplicate_cosine: 0.92,
            duplicate_scan_limit: 1000,
            summary_window_days: 7,
            summary_min_cluster: 2,
            summary_keywords: 8,
            summary_priority: Priority::Critical,
            summary_importance: 5,
            summary_importance_drop: 1,
            summary_tag: String::from("summary"),
            max_adjustments: 3,
            adjust_listed: 100,
            adjust_preview_chars: 80,
            adjust_topics_chars: 2000,
        }
    }
}

impl MemoryConfig {
    /// The tier floor of a priority (CRITICAL has none: it is always in).
    pub fn floor(&self, priority: Priority) -> usize {
        match priority {
            Priority::Critical => 0,
            Priority::High => self.floor_high,
            Priority::Medium => self.floor_medium,
            Priority::Low => self.floor_low,
        }
    }
}

/// `x ≥ threshold`, tolerant of the rounding of fractions such as 3/11 × 1.1, so that a
/// similarity exactly at a threshold counts as reaching it.
pub(crate) fn at_least(x: f32, threshold: f32) -> bool {
    x + 1e-6 >= threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_are_the_seed_numbers_and_round_trip() {
        let c = MemoryConfig::default();
        assert_eq!(
            (c.max_selected, c.max_critical, c.max_strong, c.critical_cap),
            (30, 10, 10, 15)
        );
        assert_eq!((c.floor_high, c.floor_medium, c.floor_low), (3, 2, 1));
        let json = serde_json::to_string(&c).unwrap();
        let back: MemoryConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        let partial: MemoryConfig = serde_json::from_str(r#"{"max_selected": 5}"#).unwrap();
        assert_eq!(partial.max_selected, 5);
        assert_eq!(partial.max_critical, 10);
        assert!(serde_json::from_str::<MemoryConfig>(r#"{"max_selectd": 5}"#).is_err());
    }

    #[test]
    fn at_least_accepts_rounded_fractions_at_the_threshold() {
        assert!(at_least(3.0 / 11.0 * 1.1, 0.3));
        assert!(at_least(0.3, 0.3));
        assert!(!at_least(0.299, 0.3));
    }
}
