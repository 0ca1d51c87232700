//! The six permission levels of the Evolve Agent design (ARCHITECTURE.md § Permission levels) and what each does by default.

use core::fmt;
use core::str::FromStr;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::number_or_name::{self, NumberOrName};

use super::Decision;

/// How much a tool call can hurt, from L0 (no tool at all) to L5 (never run).
///
/// The table of the Evolve Agent design, with the action each level gets by default:
///
/// | level | meaning | default action ([`Level::default_decision`]) |
/// |---|---|---|
/// | L0 | no tool: the model answers directly | run ([`Decision::Run`]) |
/// | L1 | public read-only (web search, weather, public docs) | run ([`Decision::Run`]) |
/// | L2 | restricted read-only (workspace files, local status, read-only DB) | run, scoped to the workspace ([`Decision::RunScoped`]) |
/// | L3 | side effects, reversible (create file, edit draft, open page, test request) | ask once ([`Decision::AskOnce`]) |
/// | L4 | high risk or visible outside (mail, message, form, DB write, git push) | ask twice ([`Decision::AskTwice`]) |
/// | L5 | dangerous (rm -rf, mass delete, arbitrary shell, secrets, paths outside scope) | refuse ([`Decision::Refuse`]) |
///
/// Levels are ordered: the level of a call is the maximum of everything that knows
/// something about it. Serialised as `"L0"`…`"L5"`; on input `"l3"`, `"3"` and the
/// number `3` are accepted too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// No tool: the model answers directly.
    L0 = 0,
    /// Public read-only: runs without asking.
    L1 = 1,
    /// Restricted read-only: runs without asking, scoped to the workspace.
    L2 = 2,
    /// Side effects but reversible: one confirmation.
    L3 = 3,
    /// High risk or visible outside: two confirmations. Also the level of a tool nobody
    /// could classify.
    L4 = 4,
    /// Dangerous or unacceptable: always refused.
    L5 = 5,
}

impl Level {
    /// All levels, lowest first.
    pub const ALL: [Level; 6] = [
        Level::L0,
        Level::L1,
        Level::L2,
        Level::L3,
        Level::L4,
        Level::L5,
    ];

    /// The number 0–5.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// From 0–5; `None` otherwise.
    pub fn from_u8(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n)).copied()
    }

    /// `"L0"` … `"L5"`.
    pub fn name(self) -> &'static str {
        match self {
            Level::L0 => "L0",
            Level::L1 => "L1",
            Level::L2 => "L2",
            Level::L3 => "L3",
            Level::L4 => "L4",
            Level::L5 => "L5",
        }
    }

    /// From `"L3"`, `"l3"` or `"3"` (surrounding whitespace ignored); `None` otherwise.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let digits = s
            .strip_prefix('L')
            .or_else(|| s.strip_prefix('l'))
            .unwrap_or(s);
        match digits.as_bytes() {
            [d @ b'0'..=b'5'] => Self::from_u8(d - b'0'),
            _ => None,
        }
    }

    /// The design's one-line meaning, in English.
    pub fn meaning(self) -> &'static str {
        match self {
            Level::L0 => "no tool",
            Level::L1 => "public read-only",
            Level::L2 => "restricted read-only",
            Level::L3 => "side effects, reversible",
            Level::L4 => "high risk or visible outside",
            Level::L5 => "dangerous",
        }
    }

    /// The design's one-line meaning, in Chinese (its own wording).
    pub fn meaning_zh(self) -> &'static str {
        match self {
            Level::L0 => "不调用工具",
            Level::L1 => "公开只读工具",
            Level::L2 => "受限只读工具",
            Level::L3 => "有副作用但可逆",
            Level::L4 => "高风险或外部可见",
            Level::L5 => "危险或不可接受",
        }
    }

    /// What a person at the keyboard gets for this level when nothing else (grants,
    /// headless policy) applies — the "default action" column of the table above.
    pub fn default_decision(self) -> Decision {
        match self {
            Level::L0 | Level::L1 => Decision::Run,
            Level::L2 => Decision::RunScoped,
            Level::L3 => Decision::AskOnce,
            Level::L4 => Decision::AskTwice,
            Level::L5 => Decision::Refuse(super::RefusalReason::Dangerous),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The text was not a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLevelError;

impl fmt::Display for ParseLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a permission level: expected L0, L1, L2, L3, L4 or L5")
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ParseLevelError {}

impl FromStr for Level {
    type Err = ParseLevelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Level::parse(s).ok_or(ParseLevelError)
    }
}

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl NumberOrName for Level {
    const EXPECTING: &'static str = "a permission level L0-L5";
    fn from_number(n: u8) -> Option<Self> {
        Level::from_u8(n)
    }
    fn from_name(name: &str) -> Option<Self> {
        Level::parse(name)
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        number_or_name::deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::RefusalReason;

    #[test]
    fn parse_accepts_names_digits_and_lowercase() {
        let cases: &[(&str, Option<Level>)] = &[
            ("L0", Some(Level::L0)),
            ("L5", Some(Level::L5)),
            ("l3", Some(Level::L3)),
            ("4", Some(Level::L4)),
            (" L2 ", Some(Level::L2)),
            ("L6", None),
            ("6", None),
            ("-1", None),
            ("L", None),
            ("", None),
            ("L33", None),
            ("level3", None),
        ];
        for (text, want) in cases {
            assert_eq!(Level::parse(text), *want, "{text:?}");
        }
    }

    #[test]
    fn levels_are_ordered() {
        for pair in Level::ALL.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        assert_eq!(Level::L3.max(Level::L1), Level::L3);
    }

    #[test]
    fn default_decisions_follow_the_seed_table() {
        let table = [
            (Level::L0, Decision::Run),
            (Level::L1, Decision::Run),
            (Level::L2, Decision::RunScoped),
            (Level::L3, Decision::AskOnce),
            (Level::L4, Decision::AskTwice),
            (Level::L5, Decision::Refuse(RefusalReason::Dangerous)),
        ];
        for (level, want) in table {
            assert_eq!(level.default_decision(), want, "{level}");
        }
    }

    #[test]
    fn serde_round_trip_and_lenient_input() {
        for level in Level::ALL {
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(json, alloc::format!("\"{}\"", level.name()));
            assert_eq!(serde_json::from_str::<Level>(&json).unwrap(), level);
        }
        assert_eq!(serde_json::from_str::<Level>("3").unwrap(), Level::L3);
        assert_eq!(serde_json::from_str::<Level>("\"l4\"").unwrap(), Level::L4);
        assert_eq!(serde_json::from_str::<Level>("\"2\"").unwrap(), Level::L2);
        assert!(serde_json::from_str::<Level>("6").is_err());
        assert!(serde_json::from_str::<Level>("\"L9\"").is_err());
        assert!(serde_json::from_str::<Level>("-1").is_err());
    }
}
