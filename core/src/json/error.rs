//! What can go wrong when reading JSON, in words a user (or a log reader) can act on.

use core::fmt;

/// Why the strict parser rejected a text, and where (byte offset into the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the offending character (the text length for an early end).
    pub offset: usize,
    /// What was wrong there.
    pub kind: SyntaxErrorKind,
}

/// The kinds of strict-parse failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// The text is empty or only whitespace.
    Empty,
    /// The text ended inside a value (truncated output).
    UnexpectedEnd,
    /// A character that cannot start or continue a value here.
    UnexpectedChar(char),
    /// A number outside the JSON grammar (`01`, `1.`, `+1`, …).
    InvalidNumber,
    /// A backslash escape JSON does not define, or a malformed `\u` escape.
    InvalidEscape,
    /// A raw control character (U+0000–U+001F) inside a string.
    ControlCharacter,
    /// A `\u` escape naming half of a surrogate pair without the other half.
    LoneSurrogate,
    /// Arrays and objects nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    TooDeep,
    /// Something other than whitespace follows the value.
    TrailingCharacters,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.offset;
        match self.kind {
            SyntaxErrorKind::Empty => write!(f, "no JSON: the text is empty"),
            SyntaxErrorKind::UnexpectedEnd => write!(f, "JSON ends early at byte {at}"),
            SyntaxErrorKind::UnexpectedChar(c) => {
                write!(f, "unexpected character {c:?} at byte {at}")
            }
            SyntaxErrorKind::InvalidNumber => write!(f, "invalid number at byte {at}"),
            SyntaxErrorKind::InvalidEscape => write!(f, "invalid escape at byte {at}"),
            SyntaxErrorKind::ControlCharacter => {
                write!(f, "unescaped control character in a string at byte {at}")
            }
            SyntaxErrorKind::LoneSurrogate => write!(f, "unpaired surrogate escape at byte {at}"),
            SyntaxErrorKind::TooDeep => write!(
                f,
                "JSON nested deeper than {} levels at byte {at}",
                super::MAX_DEPTH
            ),
            SyntaxErrorKind::TrailingCharacters => {
                write!(f, "unexpected text after the JSON value at byte {at}")
            }
        }
    }
}

/// Why no usable JSON could be taken from a model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// The answer is empty or only whitespace.
    Empty,
    /// The answer holds no JSON value: no code block, no `[` or `{`.
    NotFound,
    /// Something looked like JSON but could neither be parsed nor repaired; the error is
    /// the strict parser's verdict on the first candidate (offsets relative to it).
    Invalid(SyntaxError),
    /// A list was expected ([`extract_items`](super::extract_items)) but the JSON is a
    /// scalar of this kind (`"string"`, `"number"`, `"boolean"`).
    NotAList(&'static str),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Empty => write!(f, "the model's answer is empty"),
            JsonError::NotFound => write!(f, "the model's answer contains no JSON"),
            JsonError::Invalid(e) => write!(f, "the model's JSON is broken beyond repair: {e}"),
            JsonError::NotAList(kind) => {
                write!(f, "expected a JSON list from the model, got a {kind}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SyntaxError {}

#[cfg(feature = "std")]
impl std::error::Error for JsonError {}
