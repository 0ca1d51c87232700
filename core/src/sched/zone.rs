//! Time zones as the core sees them: one question — "what is the UTC offset at this
//! instant?" — and the local ↔ UTC conversions derived from it.
//!
//! Decides what a local wall time means when the clocks change: a wall time that does
//! not exist (spring forward, 02:30 on 29 March 2026 in Berlin) resolves to the first
//! instant after the gap (03:00 CEST); a wall time that happens twice (fall back, 02:30
//! on 25 October 2026) resolves to its first occurrence (02:30 CEST), so a task set for
//! it fires once. The core ships [`Utc`] and [`FixedOffset`] here, and reads zone files
//! from their bytes ([`super::Tzif`]); finding and reading the files is the shell's work
//! (`mini/src/zone.rs`).

use super::SchedError;
use alloc::string::ToString;

/// The offset of a time zone at any instant. The shell implements it from the system's
/// zone database; tests implement it with a few hard-coded transitions.
pub trait Zone {
    /// Seconds east of UTC in force at `utc` (Unix seconds): +3600 for CET.
    fn offset_at_utc(&self, utc: i64) -> i32;
}

/// Coordinated Universal Time: offset 0 always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Utc;

impl Zone for Utc {
    fn offset_at_utc(&self, _utc: i64) -> i32 {
        0
    }
}

/// A zone that never changes its offset (`+08:00`), for servers configured without a
/// zone name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedOffset {
    seconds: i32,
}

/// The largest offset accepted, just under a day (RFC 3339 allows ±23:59).
const MAX_OFFSET: i32 = 86_399;

impl FixedOffset {
    /// An offset of `seconds` east of UTC, if it is within ±23:59:59.
    pub fn east(seconds: i32) -> Option<FixedOffset> {
        (-MAX_OFFSET..=MAX_OFFSET)
            .contains(&seconds)
            .then_some(FixedOffset { seconds })
    }

    /// Reads `+08:00`, `-05:30`, `+0800`, `+8`, or `UTC` / `Z` (offset 0).
    pub fn parse(text: &str) -> Result<FixedOffset, SchedError> {
        let t = text.trim();
        let bad = || SchedError::BadOffset {
            text: t.to_string(),
        };
        if t.eq_ignore_ascii_case("utc") || t.eq_ignore_ascii_case("z") {
            return Ok(FixedOffset { seconds: 0 });
        }
        let (sign, rest) = match t.as_bytes().first() {
            Some(b'+') => (1, &t[1..]),
            Some(b'-') => (-1, &t[1..]),
            _ => return Err(bad()),
        };
        let (h, m) = match rest.split_once(':') {
            Some((h, m)) => (h, m),
            None if rest.len() == 4 => rest.split_at(2),
            None => (rest, "0"),
        };
        let digits = |s: &str, max: i32| -> Option<i32> {
            (!s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<i32>().ok())
                .flatten()
                .filter(|&n| n <= max)
        };
        let (Some(h), Some(m)) = (digits(h, 23), digits(m, 59)) else {
            return Err(bad());
        };
        Ok(FixedOffset {
            seconds: sign * (h * 3600 + m * 60),
        })
    }

    /// Seconds east of UTC.
    pub fn seconds(self) -> i32 {
        self.seconds
    }
}

impl Zone for FixedOffset {
    fn offset_at_utc(&self, _utc: i64) -> i32 {
        self.seconds
    }
}

impl<Z: Zone + ?Sized> Zone for &Z {
    fn offset_at_utc(&self, utc: i64) -> i32 {
        (**self).offset_at_utc(utc)
    }
}

/// The local wall time at `utc`, counted like Unix seconds (days of 86 400 seconds since
/// local 1970-01-01 00:00).
pub fn to_local(zone: &dyn Zone, utc: i64) -> i64 {
    utc + i64::from(zone.offset_at_utc(utc))
}

/// Far enough either side of a wall time to bracket every instant that can show it
/// (offsets stay within ±26 hours: Kiribati +14, Baker Island −12, plus margin).
const BRACKET: i64 = 30 * 3600;

/// The instant a local wall time names: the only one; the first of two (fall back); or,
/// inside a spring-forward gap, the first instant after the gap.
///
/// Assumes at most one offset change within 30 hours either side of `local` — true of
/// every zone in use today; with two, the answer is still an instant near `local`.
pub fn local_to_utc(zone: &dyn Zone, local: i64) -> i64 {
    let before = i64::from(zone.offset_at_utc(local - BRACKET));
    let after = i64::from(zone.offset_at_utc(local + BRACKET));
    let mut first: Option<i64> = None;
    for offset in [before, after] {
        let utc = local - offset;
        if to_local(zone, utc) == local {
            first = Some(first.map_or(utc, |f| f.min(utc)));
        }
    }
    if let Some(utc) = first {
        return utc;
    }
    // In a gap: the wall clock jumps over `local`. Find the first instant whose wall
    // time is at or past it; the wall clock only moves forward across a gap.
    let (mut lo, mut hi) = (local - BRACKET, local + BRACKET);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if to_local(zone, mid) >= local {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}
