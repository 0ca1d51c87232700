//! Timestamps for people: the store keeps Unix seconds; listings and exports show them
//! as UTC dates, and the command line accepts either Unix seconds or RFC 3339 times
//! (`--expires 2026-05-01T09:00:00+02:00`). The calendar arithmetic is the core's
//! (`evolve_core::sched`, shared with the scheduler), so no date crate is needed.

use evolve_core::sched::{civil_from_days, days_from_civil, days_in_month, Date};
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

/// Unix seconds (`1767225600`), an RFC 3339 time (`2026-01-01T00:00:00Z`,
/// `2026-01-01 09:30:00+09:00`, fractions ignored) or a date (`2026-01-01`, midnight
/// UTC). The error says what is accepted.
pub fn parse_time(text: &str) -> Result<Timestamp, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "{text:?} is not a time: use Unix seconds or RFC 3339, e.g. 2026-05-01T09:00:00Z \
             or 2026-05-01"
        )
    };
    if let Ok(n) = text.parse::<i64>() {
        return Ok(n);
    }
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let s = text.get(from..from + len)?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(mo), Some(d)) = (num(0, 4), num(5, 2), num(8, 2)) else {
        return Err(bad());
    };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return Err(bad());
    }
    let y = i64::from(y);
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) {
        return Err(bad());
    }
    let date = days_from_civil(Date {
        year: y,
        month: mo,
        day: d,
    }) * DAY;
    if b.len() == 10 {
        return Ok(date);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) || b.get(13) != Some(&b':') {
        return Err(bad());
    }
    let (Some(h), Some(mi)) = (num(11, 2), num(14, 2)) else {
        return Err(bad());
    };
    let mut i = 16;
    let mut s = 0;
    if b.get(i) == Some(&b':') {
        s = num(17, 2).ok_or_else(bad)?;
        i = 19;
        if b.get(i) == Some(&b'.') {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
    }
    if h > 23 || mi > 59 || s > 60 {
        return Err(bad());
    }
    let offset = match b.get(i) {
        Some(b'Z' | b'z') if b.len() == i + 1 => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && b.get(i + 3) == Some(&b':') => {
            let (Some(oh), Some(om)) = (num(i + 1, 2), num(i + 4, 2)) else {
                return Err(bad());
            };
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let o = i64::from(oh * 3600 + om * 60);
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return Err(bad()),
    };
    // A leap second (:60) counts as the last second of its minute.
    let clock = i64::from(h * 3600 + mi * 60 + s.min(59));
    Ok(date + clock - offset)
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
            ("2026-01-01T00:00:00.123456Z", Some(1_767_225_600)),
            ("2026-01-01T00:00Z", Some(1_767_225_600)),
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
        let e = parse_time("soon").unwrap_err();
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
