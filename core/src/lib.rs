//! # evolve-core — the deterministic brain of the Evolve agent
//!
//! Every rule of the agent that can be decided without I/O lives here: which memories
//! enter the prompt, how the history is cut to the token budget, whether a tool call
//! runs, asks or is refused, which skills match, how damaged JSON from a model is
//! repaired, which tool calls a model wrote as text. Like `quinn-proto`, this crate contains no networking code, reads no files
//! and never looks at a clock: every function takes what it needs — including `now` —
//! and returns decisions. The shell (`evolve-mini`) does the I/O.
//!
//! The crate is `#![no_std]` with `alloc`; the `std` feature only adds conveniences
//! such as `std::error::Error` impls.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod config;
pub mod history;
pub mod json;
pub mod memory;
mod number_or_name;
pub mod permission;
pub mod provenance;
pub mod sched;
pub mod skill;
pub mod text;
pub mod tool_plan;
pub mod turn;
pub mod watch;

pub use config::CoreConfig;

/// A point in time: whole seconds since the Unix epoch (UTC). The shell reads the
/// clock; the core only compares and subtracts.
pub type Timestamp = i64;

/// Seconds in one day, for the day-based thresholds of the memory rules.
pub const DAY: i64 = 86_400;
