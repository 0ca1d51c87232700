//! Text: keywords, stems, similarity and the token-count estimate.
//!
//! Decides how a piece of text becomes a set of keywords (through a [`Tokenizer`]; the
//! shell plugs jieba in, the core ships a [`FallbackTokenizer`]), which stem an English
//! word reduces to ([`stem_english`]), how alike two keyword sets are (token-overlap F1,
//! Jaccard) or two embeddings are (cosine), where a searched phrase occurs as whole words,
//! and how many tokens a text will cost. It
//! leaves to others what the numbers are used for.

mod clip;
mod estimate;
mod find;
mod html;
mod lang;
mod similarity;
mod stem;
mod tokenize;

pub use clip::{clip_chars, escape_controls, one_line};
pub use estimate::{
    estimate_message_tokens, estimate_text_tokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS,
};
pub use find::find_words;
pub use html::escape_html;
pub use lang::Lang;
pub(crate) use similarity::sqrt;
pub use similarity::{cosine, f1, intersection_len, jaccard};
pub use stem::stem_english;
pub use tokenize::{
    is_cjk, keyword_hash, FallbackTokenizer, Fnv1a, KeywordSet, RuledTokenizer, Rules, Tokenizer,
};
