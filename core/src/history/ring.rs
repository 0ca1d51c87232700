//! The L2 ring: one entry per finished turn of a session, oldest first.
//!
//! Decides when the ring overflows and which entries leave it. Summarising the overflow
//! into the L3 text (a cheap-model call) and storing the ring are the shell's.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::HistoryConfig;

/// One finished turn, as kept in L2 (tea-agent `push_to_level2`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct L2Entry {
    /// The user's original message.
    pub user: String,
    /// The model's final reply (without the intermediate tool rounds).
    pub assistant: String,
    /// The text of the tool-calling rounds (their assistant content and reasoning).
    pub thinking: String,
    /// File paths the turn touched, if any (raise the entry's relevance when the new
    /// message names one of them).
    pub files: Vec<String>,
    /// The turn it summarises (0 in entries written before they said): the history
    /// shows only the entries of the branch shown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turn: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The L2 ring of a session, oldest entry first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct L2Ring {
    entries: Vec<L2Entry>,
}

impl L2Ring {
    /// An empty ring.
    pub fn new() -> Self {
        Self::default()
    }

    /// A ring holding `entries` (oldest first), e.g. as loaded from the store. No
    /// overflow is applied until the next [`push`](Self::push).
    pub fn from_entries(entries: Vec<L2Entry>) -> Self {
        L2Ring { entries }
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[L2Entry] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no turn was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends a finished turn. When the ring then holds `l2_capacity` (50) entries or
    /// more, the oldest `l2_overflow` (30) leave it and are returned, to be summarised
    /// into L3; the newest 20 stay (tea-agent: `if len >= 50: overflow = l2[:30];
    /// l2 = l2[-20:]`). An empty result means nothing needs summarising.
    ///
    /// An `l2_overflow` of 0 is read as 1 so that the ring stays bounded.
    pub fn push(&mut self, entry: L2Entry, cfg: &HistoryConfig) -> Vec<L2Entry> {
        self.entries.push(entry);
        if self.entries.len() < cfg.l2_capacity {
            return Vec::new();
        }
        let n = cfg.l2_overflow.max(1).min(self.entries.len());
        self.entries.drain(..n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn entry(i: usize) -> L2Entry {
        L2Entry {
            user: format!("q{i}"),
            assistant: format!("a{i}"),
            ..L2Entry::default()
        }
    }

    #[test]
    fn overflows_exactly_at_fifty_returning_the_oldest_thirty() {
        let cfg = HistoryConfig::default();
        let mut ring = L2Ring::new();
        // (entries before the push, overflow returned, entries after)
        for i in 0..49 {
            assert!(ring.push(entry(i), &cfg).is_empty(), "push #{i}");
        }
        assert_eq!(ring.len(), 49);
        let overflow = ring.push(entry(49), &cfg);
        assert_eq!(overflow.len(), 30);
        assert_eq!(overflow[0].user, "q0");
        assert_eq!(overflow[29].user, "q29");
        assert_eq!(ring.len(), 20);
        assert_eq!(ring.entries()[0].user, "q30");
        assert_eq!(ring.entries()[19].user, "q49");
        // The next overflow comes 30 pushes later, again at 50.
        for i in 50..79 {
            assert!(ring.push(entry(i), &cfg).is_empty(), "push #{i}");
        }
        assert_eq!(ring.push(entry(79), &cfg).len(), 30);
        assert_eq!(ring.len(), 20);
    }

    #[test]
    fn a_loaded_oversized_ring_overflows_on_the_next_push() {
        let cfg = HistoryConfig::default();
        let mut ring = L2Ring::from_entries((0..60).map(entry).collect());
        let overflow = ring.push(entry(60), &cfg);
        assert_eq!(overflow.len(), 30);
        assert_eq!(ring.len(), 31);
    }

    #[test]
    fn zero_overflow_still_bounds_the_ring() {
        let cfg = HistoryConfig {
            l2_capacity: 2,
            l2_overflow: 0,
            ..HistoryConfig::default()
        };
        let mut ring = L2Ring::new();
        assert!(ring.push(entry(0), &cfg).is_empty());
        assert_eq!(ring.push(entry(1), &cfg).len(), 1);
        assert_eq!(ring.len(), 1);
    }

    #[test]
    fn serde_round_trip_is_a_plain_list() {
        let mut ring = L2Ring::new();
        ring.push(entry(1), &HistoryConfig::default());
        let json = serde_json::to_string(&ring).unwrap();
        assert_eq!(
            json,
            r#"[{"user":"q1","assistant":"a1","thinking":"","files":[]}]"#
        );
        let back: L2Ring = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ring);
        let partial: L2Entry = serde_json::from_str(r#"{"user":"x"}"#).unwrap();
        assert_eq!(partial.user, "x");
    }
}
