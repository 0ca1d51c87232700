//! Skills: SKILL.md parsing and matching (the Agent Skills convention).
//!
//! Decides whether a SKILL.md is valid and what it says ([`parse_skill_md`]), which
//! skills fit a request ([`rank`]) and how they are announced to the model
//! ([`summary_block`]): progressive disclosure — the prompt carries names and
//! descriptions, the body is fetched with the `load_skill` tool. Reading the skill
//! directories, checking that a skill's name matches its directory, bundling skills and
//! writing crystallised skills back are the shell's work.

mod error;
mod parse;
mod prompt;
mod rank;

pub use error::{NameProblem, SkillError};
pub use parse::{parse_skill_md, validate_name, SkillDoc};
pub use prompt::{summary_block, Lang, SKILLS_CLOSE, SKILLS_OPEN, SUMMARY_DESCRIPTION_CHARS};
pub use rank::{rank, SkillSummary};

/// Longest skill name, in characters (Agent Skills specification: `name` ≤ 64).
pub const MAX_NAME_CHARS: usize = 64;

/// Longest description, in characters (Agent Skills specification: `description`
/// 1–1024 characters).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

#[cfg(test)]
mod proptests;
