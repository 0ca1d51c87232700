//! JSON: tolerant extraction and repair of JSON emitted by models.
//!
//! Decides what JSON a model meant when its answer is wrapped in prose or code fences,
//! cut off at the token limit, or written in the JSON-ish dialect models drift into
//! (single quotes, trailing commas, raw newlines, `True`/`None`, comments). tea-agent:
//! "LLM JSON 容错 — 智能修复截断JSON、控制字符、单引号、尾逗号" and 容错解析 1–4.
//!
//! It has its own small [`Value`] and strict parser (the core carries no `serde_json`);
//! [`Value::to_json_string`] gives standard JSON that the shell hands to `serde_json`
//! for typed decoding. What the values mean (memories, tool calls, priorities) is left
//! to the callers.
//!
//! Why not `serde_json` here, though the shell links it and it runs without std: what
//! this module promises is not what `serde_json::Value` keeps. Numbers stay as written
//! (`12345678901234567890` and `1e-400` reach the tool untouched, `1.0` is not `1`;
//! `serde_json` rounds them through f64 unless its `arbitrary_precision` feature is on,
//! and features are shared by the whole binary, so turning it on would change every
//! number the shell reads). Objects keep their members in the order written, duplicates
//! included (`serde_json`'s map sorts its keys unless `preserve_order`, again for the
//! whole binary, and keeps one of each), so a repaired tool call shows its arguments as
//! the model wrote them. The table tests of `extract.rs` (numbers out of range or
//! beyond f64's precision) and `value.rs` (duplicates) hold these behaviours, so
//! replacing the parser would change what tests rely on.
//!
//! Nothing here panics or recurses without bound on any input: nesting beyond
//! [`MAX_DEPTH`] is an error.

mod error;
mod extract;
mod repair;
mod strict;
mod value;

pub use error::{JsonError, SyntaxError, SyntaxErrorKind};
pub(crate) use extract::{balanced_end, fenced_spans};
pub use extract::{extract, extract_items, LIST_KEYS};
pub use repair::repair;
pub use strict::parse_strict;
pub use value::{Number, Value};

/// Deepest nesting of arrays and objects accepted. Model output never comes close; the
/// limit exists so hostile input cannot overflow the stack, and stays below the 127
/// levels `serde_json` accepts so that everything we hand on parses there too.
pub const MAX_DEPTH: usize = 100;

/// Most candidates [`extract`] tries in each of its search steps (code blocks, opening
/// brackets), so that a text full of brackets costs at most this many linear passes.
pub const MAX_CANDIDATES: usize = 64;

#[cfg(test)]
mod proptests;
