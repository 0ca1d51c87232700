//! Timestamps for people: the store keeps Unix seconds; listings and exports show them
//! as UTC dates, and the command line accepts either Unix seconds or RFC 3339 times
//! (`--expires 2026-05-01T09:00:00+02:00`). The calendar arithmetic and the one parser of
//! instants are the core's (`evolve_core::sched`, shared with the scheduler), so no date
//! crate is needed.

use evolve_core::sched::{civil_from_days, parse_instant, Date, SchedError};
use evolve_core::Timestamp;

const DAY: i64 = 86_400;

/// `2026-03-01 14:05` (UTC).
pub fn format_time(ts: Timestamp) -> String {
    let Date {
        year: y,
        month: m,
        day: d,
    } = civil_from_days(ts.div_euclid(DAY));
    let secs = ts.rem_euclid(DAY);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60
    )
}

/// `2026-03-01` (UTC).
pub fn format_date(ts: Timestamp) -> String {
    let Date {
        year: y,
        month: m,
        day: d,
    } = civil_from_days(ts.div_euclid(DAY));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Unix seconds (`1767225600`), or an instant as the core reads one
/// ([`evolve_core::sched::parse_instant`]: RFC 3339 such as `2026-01-01T00:00:00Z` or
/// `2026-01-01 09:30:00+09:00`, a fraction rounded up; or a date, `2026-01-01`, midnight
/// UTC).
pub fn parse_time(text: &str) -> Result<Timestamp, BadTime> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Ok(n);
    }
    parse_instant(text).map_err(|why| BadTime {
        text: text.into(),
        why,
    })
}

/// A text that is not a time; the words say what is wrong and what is accepted.
#[derive(Debug, thiserror::Error)]
#[error(
    "{text:?} is not a time ({why}): use Unix seconds or RFC 3339, e.g. \
     2026-05-01T09:00:00Z or 2026-05-01"
)]
pub struct BadTime {
    text: String,
    #[source]
    why: SchedError,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unix_seconds_rfc3339_and_dates() {
        let table: [(&str, Option<Timestamp>); 14] = [
            ("1767225600", Some(1_767_225_600)),
            ("2026-01-01", Some(1_767_225_600)),
            ("2026-01-01T00:00:00Z", Some(1_767_225_600)),
            ("2026-01-01t00:00:00z", Some(1_767_225_600)),
            ("2026-01-01 09:00:00+09:00", Some(1_767_225_600)),
            ("2025-12-31T19:00:00-05:00", Some(1_767_225_600)),
            ("2026-01-01T00:00:00.123456Z", Some(1_767_225_601)),
            ("2026-01-01T00:00Z", None),
            ("2024-02-29T12:00:00Z", Some(1_709_208_000)),
            ("2025-02-29", None),
            ("2026-13-01", None),
            ("2026-01-01T24:00:00Z", None),
            ("2026-01-01T10:00:00", None),
            ("next tuesday", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_time(text).ok(), want, "{text}");
        }
        let e = parse_time("soon").unwrap_err().to_string();
        assert!(e.contains("RFC 3339") && e.contains("soon"), "{e}");
    }

    #[test]
    fn formats_utc_and_round_trips_with_the_parser() {
        assert_eq!(format_time(0), "1970-01-01 00:00");
        assert_eq!(format_time(1_709_208_000 + 65), "2024-02-29 12:01");
        assert_eq!(format_date(-1), "1969-12-31");
        for ts in [0, 951_782_400, 1_709_208_000, 4_102_444_800] {
            assert_eq!(
                parse_time(&format_date(ts)).unwrap(),
                ts - ts.rem_euclid(DAY)
            );
        }
    }
}
