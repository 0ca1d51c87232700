//! Why a SKILL.md was rejected, with the line to look at.

use alloc::string::String;
use core::fmt;

/// What is wrong with a skill name (Agent Skills: lowercase letters, digits and
/// hyphens, at most 64 characters, no hyphen at either end or twice in a row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameProblem {
    /// The name is empty.
    Empty,
    /// Longer than [`MAX_NAME_CHARS`](super::MAX_NAME_CHARS) characters (the count).
    TooLong(usize),
    /// A character other than `a-z`, `0-9` and `-`.
    InvalidChar(char),
    /// Starts or ends with a hyphen.
    EdgeHyphen,
    /// Two hyphens in a row.
    DoubleHyphen,
}

/// Why a SKILL.md could not be read. Line numbers count from 1, as editors show them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillError {
    /// The file does not start with a `---` line.
    NoFrontMatter,
    /// The `---` on line 1 is never closed by another `---` line.
    UnclosedFrontMatter,
    /// A front-matter line is not `key: value`, a list item or an indented continuation.
    MalformedLine {
        /// The line.
        line: usize,
    },
    /// A quoted value has no closing quote.
    UnclosedQuote {
        /// The line the value starts on.
        line: usize,
    },
    /// A key appears twice.
    DuplicateKey {
        /// The line of the second occurrence.
        line: usize,
        /// The key.
        key: String,
    },
    /// The front matter has no `name`.
    MissingName,
    /// The front matter has no `description`, or it is empty.
    MissingDescription,
    /// The name breaks the naming rule.
    InvalidName {
        /// The line of `name:`.
        line: usize,
        /// The name as written.
        name: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
    /// The description is longer than [`MAX_DESCRIPTION_CHARS`](super::MAX_DESCRIPTION_CHARS).
    DescriptionTooLong {
        /// The line of `description:`.
        line: usize,
        /// Its length in characters.
        chars: usize,
    },
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillError::NoFrontMatter => write!(
                f,
                "SKILL.md line 1: expected `---` to open the front matter (name, description)"
            ),
            SkillError::UnclosedFrontMatter => write!(
                f,
                "SKILL.md: the front matter opened on line 1 is never closed — add a `---` line after it"
            ),
            SkillError::MalformedLine { line } => write!(
                f,
                "SKILL.md line {line}: expected `key: value`, a `- item` or an indented continuation"
            ),
            SkillError::UnclosedQuote { line } => {
                write!(f, "SKILL.md line {line}: the quoted value has no closing quote")
            }
            SkillError::DuplicateKey { line, key } => {
                write!(f, "SKILL.md line {line}: `{key}` is already set above")
            }
            SkillError::MissingName => {
                write!(f, "SKILL.md: the front matter has no `name:` — add one, e.g. `name: pdf-tools`")
            }
            SkillError::MissingDescription => write!(
                f,
                "SKILL.md: the front matter has no `description:` — say what the skill does and when to use it"
            ),
            SkillError::InvalidName { line, name, problem } => {
                write!(f, "SKILL.md line {line}: the name {name:?} ")?;
                match problem {
                    NameProblem::Empty => write!(f, "is empty"),
                    NameProblem::TooLong(n) => write!(
                        f,
                        "has {n} characters; at most {} are allowed",
                        super::MAX_NAME_CHARS
                    ),
                    NameProblem::InvalidChar(c) => write!(
                        f,
                        "may only contain lowercase letters, digits and hyphens (found {c:?})"
                    ),
                    NameProblem::EdgeHyphen => write!(f, "must not start or end with a hyphen"),
                    NameProblem::DoubleHyphen => write!(f, "must not contain two hyphens in a row"),
                }
            }
            SkillError::DescriptionTooLong { line, chars } => write!(
                f,
                "SKILL.md line {line}: the description has {chars} characters; at most {} are allowed",
                super::MAX_DESCRIPTION_CHARS
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SkillError {}
