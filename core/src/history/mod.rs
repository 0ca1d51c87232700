//! History: building the messages sent to the model under the token budget
//! (tea-agent's four levels, "四级历史压缩"; ARCHITECTURE.md § History).
//!
//! - **L0** the system message: the prompt.
//! - **L3** the semantic summary of turns that left the L2 ring, with an
//!   acknowledgement ([`summary_messages`]).
//! - **L2** the per-session ring of finished turns ([`L2Ring`]: 50 entries, then the
//!   oldest 30 leave for summarising), filtered by relevance to the new message
//!   ([`select_l2`]: Jaccard ≥ 0.15 full pair, ≥ 0.05 one-line digest).
//! - **L1** the live session: old tool outputs become placeholders, huge ones are cut
//!   to head + tail ([`truncate_tool_output`]).
//!
//! - **Context** what was chosen for the new message (recommended skills, pending
//!   TODO, memories, the tool-chain review), right before it ([`context_messages`]).
//!
//! [`build`] assembles them, stable parts first (a request repeats the previous one as
//! its prefix; [`window()`] moves L1 in steps for the same reason), trims progressively
//! when the estimate passes 80% of the input budget ([`TrimStep`], module `trim`), and
//! always returns a valid sequence
//! ([`is_valid_sequence`], [`repair_sequence`]).
//!
//! The closed-turn rules (module `closed`) say how a turn enters the history once it is closed
//! ([`unfinished_turn`], [`l2_entry`], [`next_l2`]) and which stored turns the next one
//! sends whole ([`levels`], [`with_answers`]).
//!
//! Left to others: storing sessions and rings, calling the cheap model for the L3
//! summary, converting [`Message`] to wire JSON, choosing memories and skills
//! (their blocks arrive as text), and the tokenizer (a [`crate::text::Tokenizer`]).

mod branch;
mod budget;
mod build;
mod closed;
mod cut;
mod kept;
mod message;
mod relevance;
mod ring;
mod sequence;
mod summary;
pub mod trim;
mod truncate;
mod window;

pub use branch::{choose, ring_turns, summarised, Branches};
pub use budget::Budget;
pub use build::{
    build, BuildInput, Built, DIGEST_ACK, MIN_INPUT_BUDGET, MIN_TRIM_TARGET, NO_REPLY,
};
pub use closed::{
    l1_turns, l2_entry, levels, next_l2, round_complete, unfinished_turn, with_answers, KeptTurn,
    Levels, Unfinished, NO_ANSWER, NO_ANSWER_FAILED, NO_ANSWER_STOPPED, STOPPED_HERE,
};
pub use cut::{ceil_char_boundary, char_prefix, cut_to_chars, cut_to_tokens, floor_char_boundary};
pub use kept::{
    chosen_for_question, is_chosen, not_yet_shown, with_chosen, Chosen, DIGEST_HEADER,
    HISTORY_PREFIX,
};
pub use message::{estimate_messages_tokens, Message, Role, ToolCall};
pub use relevance::{
    classify, digest_line, entry_keywords, file_overlap, query_keywords, score_entry, select_l2,
    select_l2_cached, L2Pick, Relevance,
};
pub use ring::{L2Entry, L2Ring};
pub use sequence::{
    is_valid_sequence, repair_sequence, RepairReport, SequenceError, INTERRUPTED_RESULT,
    MOVED_SYSTEM_PREFIX,
};
pub use summary::{
    context_messages, summary_messages, CONTEXT_ACK, CONTEXT_HEADER, SUMMARY_ACK, SUMMARY_HEADER,
};
pub use trim::TrimStep;
pub use truncate::{
    is_placeholder, old_turns_end, omit_old_tool_outputs, omitted_placeholder,
    truncate_tool_output, truncation_marker,
};
pub use window::{window, Window};

use serde::{Deserialize, Serialize};

/// Constants of the history rules (defaults from tea-agent's; ARCHITECTURE.md § Design
/// constants).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryConfig {
    /// The L2 ring overflows when it holds this many entries (tea-agent: 50).
    pub l2_capacity: usize,
    /// Entries that leave the ring on overflow, oldest first, to be summarised into L3
    /// (tea-agent: 30, keeping the newest 20).
    pub l2_overflow: usize,
    /// Relevance at or above which an L2 entry is shown as a full pair (0.15).
    pub relevance_full: f32,
    /// Relevance at or above which an L2 entry is shown as a one-line digest (0.05).
    pub relevance_digest: f32,
    /// File bonus: an entry touching a file the query names scores at least
    /// `file_bonus_base + file_bonus_per_file × count` (0.4 + 0.1 × count).
    pub file_bonus_base: f32,
    /// See `file_bonus_base` (0.1 per named file).
    pub file_bonus_per_file: f32,
    /// Characters of the user side of a digest line (our choice: 80; tea-agent only
    /// writes "User: xxx…").
    pub digest_user_chars: usize,
    /// Characters of the assistant side of a digest line (our choice: 120).
    pub digest_assistant_chars: usize,
    /// Tool output longer than this many bytes is cut to half head, half tail
    /// (tea-agent: 128 KiB). 0 means no limit.
    pub max_tool_output_bytes: usize,
    /// Tool outputs outside the last this-many user turns become placeholders on every
    /// build (tea-agent `_find_prune_cutoff`: 3).
    pub keep_tool_output_turns: usize,
    /// Trimming starts when the estimate passes this fraction of the input budget and
    /// goes on until the estimate is at most that (tea-agent: 80%).
    pub trim_threshold: f32,
    /// Trim step 2 replaces tool outputs outside the last this-many user turns (our
    /// choice: 1, "more aggressive" than the always-on 3; tea-agent does not say).
    /// 0 acts as 1: the current turn's outputs are only ever cut by the last resorts.
    pub trim_keep_tool_output_turns: usize,
    /// Trim step 4 cuts texts to this many characters (tea-agent: 4096), except in
    /// the current turn (the last user message and what follows it).
    pub max_text_chars: usize,
    /// Trim step 5 drops old L1 turns but keeps the last this-many user turns
    /// (tea-agent: 5).
    pub keep_user_turns: usize,
    /// The last resort keeps the first 1/this of the final message (tea-agent: 3).
    pub final_message_keep_divisor: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            l2_capacity: 50,
            l2_overflow: 30,
            relevance_full: 0.15,
            relevance_digest: 0.05,
            file_bonus_base: 0.4,
            file_bonus_per_file: 0.1,
            digest_user_chars: 80,
            digest_assistant_chars: 120,
            max_tool_output_bytes: 128 * 1024,
            keep_tool_output_turns: 3,
            trim_threshold: 0.8,
            trim_keep_tool_output_turns: 1,
            max_text_chars: 4096,
            keep_user_turns: 5,
            final_message_keep_divisor: 3,
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
