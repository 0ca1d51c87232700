//! The ranges the memory and history constants (`[memory]`, `[history]`) must stay in for
//! the agent to keep working: one table of keys and bounds, checked by one function.

use std::fmt;

use evolve_core::CoreConfig;

/// One end of a range.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// No limit on this side.
    Open,
    /// The value may equal it.
    At(f64),
    /// The value must be strictly beyond it.
    Past(f64),
    /// Another key's value, which the value may equal (`false`) or must stay short of
    /// (`true`); its name is what the message says.
    Key(&'static str, f64, bool),
}

impl Bound {
    fn below(self, v: f64) -> bool {
        match self {
            Bound::Open => true,
            Bound::At(min) | Bound::Key(_, min, false) => v >= min,
            Bound::Past(min) | Bound::Key(_, min, true) => v > min,
        }
    }

    fn above(self, v: f64) -> bool {
        match self {
            Bound::Open => true,
            Bound::At(max) | Bound::Key(_, max, false) => v <= max,
            Bound::Past(max) | Bound::Key(_, max, true) => v < max,
        }
    }
}

/// A constant outside its range: the key, its value as written, and the range in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OutOfRange {
    pub key: &'static str,
    value: String,
    range: String,
}

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {} must be {}", self.key, self.value, self.range)
    }
}

impl std::error::Error for OutOfRange {}

/// The range in the words of the message: "at least 1", "between 0 and 1", "above 0 and
/// at most 1", "at least 1 and below history.l2_capacity".
fn words(min: Bound, max: Bound) -> String {
    match (min, max) {
        (Bound::At(a), Bound::Open) => format!("at least {a}"),
        (Bound::Open, Bound::At(b)) => format!("at most {b}"),
        (Bound::At(a), Bound::At(b)) => format!("between {a} and {b}"),
        (Bound::Past(a), Bound::At(b)) => format!("above {a} and at most {b}"),
        (Bound::At(a), Bound::Key(k, _, false)) => format!("between {a} and {k}"),
        (Bound::At(a), Bound::Key(k, _, true)) => format!("at least {a} and below {k}"),
        (min, max) => format!("within {min:?} and {max:?}"),
    }
}

/// The memory and history constants within the ranges where the agent still works: a
/// value outside them would, for example, delete every new CRITICAL memory at once
/// (`critical_cap = 0`) or never select a memory (`max_selected = 0`). The first key
/// out of its range, in the table's order, is the error.
pub(super) fn check_core(core: &CoreConfig) -> Result<(), OutOfRange> {
    let m = &core.memory;
    let h = &core.history;
    let share = (Bound::At(0.0), Bound::At(1.0));
    let unit = (Bound::Past(0.0), Bound::At(1.0));
    let at_least = |n: f64| (Bound::At(n), Bound::Open);
    let count = |n: usize| n as f64;
    // (key, value, value as written, (min, max)); a float is compared as the f64 it
    // widens to exactly, and shown as the f32 it is.
    #[rustfmt::skip]
    let rows: [(&'static str, f64, String, (Bound, Bound)); 19] = [
        ("memory.max_selected", count(m.max_selected), m.max_selected.to_string(), at_least(1.0)),
        ("memory.context_weight", m.context_weight.into(), m.context_weight.to_string(), share),
        ("memory.min_relevance", m.min_relevance.into(), m.min_relevance.to_string(), share),
        ("memory.relevance_exponent", m.relevance_exponent.into(), m.relevance_exponent.to_string(), (Bound::At(0.5), Bound::At(4.0))),
        ("memory.reply_share", m.reply_share.into(), m.reply_share.to_string(), share),
        ("memory.subject_boost", m.subject_boost.into(), m.subject_boost.to_string(), (Bound::At(1.0), Bound::At(4.0))),
        ("memory.vector_weight", m.vector_weight.into(), m.vector_weight.to_string(), share),
        ("memory.vector_candidates", count(m.vector_candidates), m.vector_candidates.to_string(), (Bound::Open, Bound::At(10_000.0))),
        ("memory.critical_cap", count(m.critical_cap), m.critical_cap.to_string(), at_least(1.0)),
        ("memory.merge_jaccard", m.merge_jaccard.into(), m.merge_jaccard.to_string(), unit),
        ("memory.same_category_bonus", m.same_category_bonus.into(), m.same_category_bonus.to_string(), (Bound::At(1.0), Bound::At(2.0))),
        ("memory.strong_match_f1", m.strong_match_f1.into(), m.strong_match_f1.to_string(), unit),
        ("memory.duplicate_cosine", m.duplicate_cosine.into(), m.duplicate_cosine.to_string(), unit),
        ("history.l2_capacity", count(h.l2_capacity), h.l2_capacity.to_string(), at_least(2.0)),
        ("history.l2_overflow", count(h.l2_overflow), h.l2_overflow.to_string(), (Bound::At(1.0), Bound::Key("history.l2_capacity", count(h.l2_capacity), true))),
        ("history.trim_threshold", h.trim_threshold.into(), h.trim_threshold.to_string(), unit),
        ("history.max_tool_output_bytes", count(h.max_tool_output_bytes), h.max_tool_output_bytes.to_string(), at_least(1024.0)),
        ("history.keep_user_turns", count(h.keep_user_turns), h.keep_user_turns.to_string(), at_least(1.0)),
        // Also at most 1, as every share is.
        ("history.relevance_digest", h.relevance_digest.into(), h.relevance_digest.to_string(), (Bound::At(0.0), Bound::Key("history.relevance_full", f64::from(h.relevance_full).min(1.0), false))),
    ];
    match rows
        .into_iter()
        .find(|(_, v, _, (min, max))| !(min.below(*v) && max.above(*v)))
    {
        None => Ok(()),
        Some((key, _, value, (min, max))) => Err(OutOfRange {
            key,
            value,
            range: words(min, max),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_constant_out_of_range_is_named_with_its_range() {
        let fine = CoreConfig::default();
        assert_eq!(check_core(&fine), Ok(()));
        type Change = fn(&mut CoreConfig);
        #[rustfmt::skip]
        let cases: [(Change, &str); 9] = [
            (|c| c.memory.max_selected = 0, "memory.max_selected = 0 must be at least 1"),
            (|c| c.memory.context_weight = 1.5, "memory.context_weight = 1.5 must be between 0 and 1"),
            (|c| c.memory.relevance_exponent = 0.25, "memory.relevance_exponent = 0.25 must be between 0.5 and 4"),
            (|c| c.memory.vector_candidates = 10_001, "memory.vector_candidates = 10001 must be at most 10000"),
            (|c| c.memory.merge_jaccard = 0.0, "memory.merge_jaccard = 0 must be above 0 and at most 1"),
            (|c| c.memory.min_relevance = f32::NAN, "memory.min_relevance = NaN must be between 0 and 1"),
            (|c| { c.history.l2_capacity = 10; c.history.l2_overflow = 10 }, "history.l2_overflow = 10 must be at least 1 and below history.l2_capacity"),
            (|c| { c.history.relevance_full = 0.3; c.history.relevance_digest = 0.4 }, "history.relevance_digest = 0.4 must be between 0 and history.relevance_full"),
            (|c| { c.history.relevance_full = 2.0; c.history.relevance_digest = 1.5 }, "history.relevance_digest = 1.5 must be between 0 and history.relevance_full"),
        ];
        for (change, want) in cases {
            let mut c = CoreConfig::default();
            change(&mut c);
            let got = check_core(&c).expect_err(want);
            assert_eq!(got.to_string(), want);
            assert!(want.starts_with(got.key), "{want}");
        }
    }
}
