//! When to try a model call again and how long to wait first.
//!
//! Retried: connect errors, 429 and 5xx — what a busy or restarting server answers.
//! Not retried: other 4xx (the same request would fail the same way) and timeouts after
//! the connection was made (a model too slow once is as slow again, and the user has
//! already waited). The wait is an exponential backoff from 500 ms, doubled per retry,
//! capped at 8 s, with "equal jitter" (half fixed, half random) so clients that failed
//! together do not come back together; a server's `Retry-After` (in seconds) replaces
//! it, capped at 60 s. The randomness comes from the clock's nanoseconds: retries are
//! rare and need no better.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cancel::Cancel;

/// The first retry's backoff.
pub(crate) const BACKOFF_START: Duration = Duration::from_millis(500);
/// No backoff waits longer.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(8);
/// A server's `Retry-After` is honoured up to this.
pub(crate) const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);

/// How a failed attempt may continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// The error stands.
    No,
    /// Try again after the backoff.
    Backoff,
    /// Try again after what the server asked (`Retry-After`).
    After(Duration),
}

/// Whether an HTTP status is worth another attempt, given its `Retry-After` header.
pub(crate) fn for_status(status: u16, retry_after: Option<&str>) -> Retry {
    if status == 429 || status >= 500 {
        retry_after
            .and_then(parse_retry_after)
            .map_or(Retry::Backoff, Retry::After)
    } else {
        Retry::No
    }
}

/// `Retry-After` in seconds, capped; the HTTP-date form is left to the backoff.
pub(crate) fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: u64 = v.trim().parse().ok()?;
    Some(Duration::from_secs(secs).min(RETRY_AFTER_MAX))
}

/// The wait before retry number `retry` (0 = the first retry): half of
/// `start · 2^retry` (capped at 8 s) plus a jittered share of the other half, `seed`
/// picking the share.
pub(crate) fn backoff(retry: u32, start: Duration, seed: u32) -> Duration {
    let full = start
        .checked_mul(1u32 << retry.min(16))
        .unwrap_or(BACKOFF_MAX)
        .min(BACKOFF_MAX);
    let half = full / 2;
    half + half.mul_f64(f64::from(seed % 1001) / 1000.0)
}

/// A jitter seed from the clock.
pub(crate) fn seed() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// Sleeps `d`, looking at `cancel` every 50 ms; false when cancelled.
pub(crate) fn sleep(d: Duration, cancel: &Cancel) -> bool {
    let end = Instant::now() + d;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_that_are_retried() {
        let cases = [
            (429, None, Retry::Backoff),
            (429, Some("3"), Retry::After(Duration::from_secs(3))),
            (429, Some("3600"), Retry::After(RETRY_AFTER_MAX)),
            (503, Some("Wed, 21 Oct 2015 07:28:00 GMT"), Retry::Backoff),
            (500, None, Retry::Backoff),
            (502, Some(" 0 "), Retry::After(Duration::ZERO)),
            (400, Some("3"), Retry::No),
            (401, None, Retry::No),
            (404, None, Retry::No),
            (422, None, Retry::No),
        ];
        for (status, header, expected) in cases {
            assert_eq!(for_status(status, header), expected, "{status} {header:?}");
        }
    }

    #[test]
    fn backoff_doubles_from_half_a_second_up_to_eight_with_jitter() {
        let ms = |retry, seed| backoff(retry, BACKOFF_START, seed).as_millis();
        // (retry, lowest, highest)
        let cases = [
            (0, 250, 500),
            (1, 500, 1000),
            (2, 1000, 2000),
            (4, 4000, 8000),
            (9, 4000, 8000),
            (40, 4000, 8000),
        ];
        for (retry, low, high) in cases {
            assert_eq!(ms(retry, 0), low, "retry {retry}, no jitter");
            assert_eq!(ms(retry, 1000), high, "retry {retry}, full jitter");
            let mid = ms(retry, 500);
            assert!(low < mid && mid < high, "retry {retry}: {mid}");
        }
    }

    #[test]
    fn sleep_stops_when_cancelled() {
        let cancel = Cancel::new();
        cancel.cancel();
        assert!(!sleep(Duration::from_secs(60), &cancel));
        let go_on = Cancel::new();
        assert!(sleep(Duration::ZERO, &go_on));
    }
}
