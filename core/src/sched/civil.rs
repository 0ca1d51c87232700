//! Calendar arithmetic on the proleptic Gregorian calendar, and the RFC 3339 reader.
//!
//! Decides which day a number of days since 1970-01-01 is (and back), how long a month
//! is, which weekday a day falls on, and what instant an RFC 3339 timestamp names. The
//! day conversions are Howard Hinnant's `days_from_civil` / `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>): exact for every year an
//! `i64` of seconds can reach, no tables, no loops.

use super::SchedError;
use alloc::string::String;

/// A calendar date: year, month 1–12, day 1–31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    /// The year (astronomical: 0 is 1 BC; only positive years are written by users).
    pub year: i64,
    /// 1 = January.
    pub month: u32,
    /// 1-based day of the month.
    pub day: u32,
}

/// Seconds in a day; local wall times are counted like UTC, in days of 86 400 seconds.
pub(crate) const DAY: i64 = 86_400;

/// Whether `year` has a 29 February.
pub fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1–12) of `year`.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date (negative before it).
pub fn days_from_civil(date: Date) -> i64 {
    let y = if date.month <= 2 {
        date.year - 1
    } else {
        date.year
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(date.month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(date.day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` days after 1970-01-01.
pub fn civil_from_days(days: i64) -> Date {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Date { year, month, day }
}

/// Day of the week, 0 = Sunday … 6 = Saturday (cron's numbering); 1970-01-01 was a
/// Thursday.
pub fn weekday(days: i64) -> u32 {
    (days + 4).rem_euclid(7) as u32
}

/// An example the RFC 3339 errors show.
pub(crate) const RFC3339_EXAMPLE: &str = "2026-03-29T09:00:00+02:00";

/// Reads an RFC 3339 timestamp (`2026-03-29T09:00:00+02:00`, `…Z`, fractions allowed)
/// into Unix seconds. A fraction rounds *up*, so a one-off task never fires before the
/// instant it names; `:60` (a leap second) is the first second of the next minute, as in
/// POSIX time. The date-time separator may be `T`, `t` or a space (RFC 3339 §5.6 note).
pub fn parse_rfc3339(text: &str) -> Result<i64, SchedError> {
    match parse_timestamp(text)? {
        (wall, Some(offset)) => Ok(wall - offset),
        (_, None) => Err(bad_timestamp(
            text,
            "it needs a UTC offset at the end: `Z` or `+HH:MM`",
        )),
    }
}

/// The one reading of an instant written by a person: RFC 3339 as [`parse_rfc3339`]
/// reads it (fractions rounded up, `Z` or `±HH:MM` required), or a bare date
/// `YYYY-MM-DD`, which is its midnight in UTC. Memory expiries and whatever else takes a
/// date use it; a schedule's `at` takes [`parse_rfc3339`], where a bare date would be a
/// guess at the hour.
pub fn parse_instant(text: &str) -> Result<i64, SchedError> {
    let t = text.trim();
    if t.len() == 10 {
        // Only the date part is read: the same checks, with midnight UTC appended.
        let mut full = String::from(t);
        full.push_str("T00:00:00Z");
        return parse_rfc3339(&full).map_err(|e| match e {
            SchedError::BadTimestamp { problem, .. } => bad_timestamp(t, problem),
            other => other,
        });
    }
    parse_rfc3339(t)
}

fn bad_timestamp(text: &str, problem: &'static str) -> SchedError {
    SchedError::BadTimestamp {
        text: String::from(text.trim()),
        problem,
    }
}

/// A timestamp as written: its wall time (counted like Unix seconds) and its offset
/// east of UTC in seconds, `None` when it has none. Without an offset the seconds may be
/// left out (`2026-03-29 09:00`, a local time); with one RFC 3339 requires them.
pub(crate) fn parse_timestamp(text: &str) -> Result<(i64, Option<i64>), SchedError> {
    let bad = |problem: &'static str| bad_timestamp(text, problem);
    let b = text.trim().as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let expect = |at: usize, chars: &[u8]| b.get(at).is_some_and(|c| chars.contains(c));
    let year = num(0, 4).ok_or_else(|| bad("it must start with a date YYYY-MM-DD"))?;
    if !expect(4, b"-") || !expect(7, b"-") {
        return Err(bad("it must start with a date YYYY-MM-DD"));
    }
    let month = num(5, 2).ok_or_else(|| bad("the month must be two digits"))? as u32;
    let day = num(8, 2).ok_or_else(|| bad("the day must be two digits"))? as u32;
    if !(1..=12).contains(&month) {
        return Err(bad("the month must be 01–12"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(bad("that day does not exist in that month"));
    }
    if !expect(10, b"Tt ") {
        return Err(bad("the date must be followed by `T` and a time HH:MM:SS"));
    }
    let hour = num(11, 2).ok_or_else(|| bad("the time must be HH:MM:SS"))?;
    let minute = num(14, 2)
        .filter(|_| expect(13, b":"))
        .ok_or_else(|| bad("the time must be HH:MM:SS"))?;
    let (second, mut at) = if expect(16, b":") {
        let second = num(17, 2).ok_or_else(|| bad("the time must be HH:MM:SS"))?;
        (second, 19)
    } else {
        (0, 16)
    };
    let has_seconds = at == 19;
    if hour > 23 || minute > 59 || second > 60 {
        return Err(bad("the time must be 00:00:00–23:59:59"));
    }
    let mut round_up = 0;
    if has_seconds && expect(at, b".") {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            round_up |= i64::from(b[at] != b'0');
            at += 1;
        }
        if at == start {
            return Err(bad("a `.` must be followed by the fraction of a second"));
        }
    }
    let offset = match b.get(at) {
        None => None,
        Some(_) if !has_seconds => return Err(bad("the time must be HH:MM:SS")),
        Some(b'Z' | b'z') if at + 1 == b.len() => Some(0),
        Some(&sign @ (b'+' | b'-')) if at + 6 == b.len() && expect(at + 3, b":") => {
            let h = num(at + 1, 2).ok_or_else(|| bad("the offset must be +HH:MM"))?;
            let m = num(at + 4, 2).ok_or_else(|| bad("the offset must be +HH:MM"))?;
            if h > 23 || m > 59 {
                return Err(bad("the offset must be between -23:59 and +23:59"));
            }
            let seconds = h * 3600 + m * 60;
            Some(if sign == b'-' { -seconds } else { seconds })
        }
        _ => {
            return Err(bad(
                "after the time only a fraction and `Z` or `+HH:MM` may follow",
            ))
        }
    };
    let days = days_from_civil(Date { year, month, day });
    Ok((
        days * DAY + hour * 3600 + minute * 60 + second + round_up,
        offset,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn days_round_trip_and_weekdays() {
        for (date, days, wd) in [
            ((1970, 1, 1), 0, 4),
            ((2000, 2, 29), 11_016, 2),
            ((2026, 3, 29), 20_541, 0),
            ((1969, 12, 31), -1, 3),
            ((2100, 3, 1), 47_541, 1),
        ] {
            let d = Date {
                year: date.0,
                month: date.1,
                day: date.2,
            };
            assert_eq!(days_from_civil(d), days, "{d:?}");
            assert_eq!(civil_from_days(days), d);
            assert_eq!(weekday(days), wd, "{d:?}");
        }
        for days in -800_000..800_000 {
            assert_eq!(days_from_civil(civil_from_days(days)), days);
        }
    }

    #[test]
    fn month_lengths() {
        for (y, m, n) in [
            (2024, 2, 29),
            (2026, 2, 28),
            (1900, 2, 28),
            (2000, 2, 29),
            (2026, 4, 30),
            (2026, 12, 31),
        ] {
            assert_eq!(days_in_month(y, m), n, "{y}-{m}");
        }
    }

    #[test]
    fn rfc3339_table() {
        for (text, want) in [
            ("1970-01-01T00:00:00Z", Ok(0)),
            ("2026-03-29T09:00:00+02:00", Ok(1_774_767_600)),
            ("2026-03-29t07:00:00z", Ok(1_774_767_600)),
            ("2026-03-29 07:00:00Z", Ok(1_774_767_600)),
            ("2026-03-29T07:00:00.000Z", Ok(1_774_767_600)),
            ("2026-03-29T07:00:00.25Z", Ok(1_774_767_601)),
            ("2026-03-28T23:00:00-08:00", Ok(1_774_767_600)),
            ("2016-12-31T23:59:60Z", Ok(1_483_228_800)),
            (
                "2026-02-29T00:00:00Z",
                Err("that day does not exist in that month"),
            ),
            ("2026-13-01T00:00:00Z", Err("the month must be 01–12")),
            (
                "2026-03-29T24:00:00Z",
                Err("the time must be 00:00:00–23:59:59"),
            ),
            (
                "2026-03-29T09:00:00",
                Err("it needs a UTC offset at the end: `Z` or `+HH:MM`"),
            ),
            ("2026-03-29T09:00Z", Err("the time must be HH:MM:SS")),
            (
                "2026-03-29T09:00",
                Err("it needs a UTC offset at the end: `Z` or `+HH:MM`"),
            ),
            ("2026-03-29T09:0", Err("the time must be HH:MM:SS")),
            (
                "2026-03-29",
                Err("the date must be followed by `T` and a time HH:MM:SS"),
            ),
            ("tomorrow", Err("it must start with a date YYYY-MM-DD")),
            (
                "2026-03-29T09:00:00+0200",
                Err("after the time only a fraction and `Z` or `+HH:MM` may follow"),
            ),
        ] {
            let got = parse_rfc3339(text).map_err(|e| match e {
                SchedError::BadTimestamp { problem, .. } => problem,
                other => panic!("{other:?}"),
            });
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn instants_are_read_one_way() {
        // (text, Unix seconds or the problem named)
        let table: &[(&str, Result<i64, &str>)] = &[
            ("2026-01-01T00:00:00Z", Ok(1_767_225_600)),
            ("2026-01-01t00:00:00z", Ok(1_767_225_600)),
            ("2026-01-01 09:00:00+09:00", Ok(1_767_225_600)),
            ("2025-12-31T19:00:00-05:00", Ok(1_767_225_600)),
            // A fraction rounds up: never before the instant it names.
            ("2026-01-01T00:00:00.000Z", Ok(1_767_225_600)),
            ("2026-01-01T00:00:00.123456Z", Ok(1_767_225_601)),
            // A leap second is the first second of the next minute (POSIX time).
            ("2016-12-31T23:59:60Z", Ok(1_483_228_800)),
            // A bare date is its midnight in UTC.
            ("2026-01-01", Ok(1_767_225_600)),
            ("  2024-02-29  ", Ok(1_709_164_800)),
            ("2025-02-29", Err("that day does not exist in that month")),
            ("2026-13-01", Err("the month must be 01–12")),
            (
                "2026-01-01T24:00:00Z",
                Err("the time must be 00:00:00–23:59:59"),
            ),
            ("2026-01-01T10:00:00", Err("it needs a UTC offset")),
            ("2026-01-01T00:00Z", Err("the time must be HH:MM:SS")),
            ("2026-01-01T00:00:00.Z", Err("fraction")),
            (
                "2026-01-01T00:00:00+24:00",
                Err("between -23:59 and +23:59"),
            ),
            ("next tuesday", Err("YYYY-MM-DD")),
            ("", Err("needs a date and time")),
        ];
        for (text, want) in table {
            match (parse_instant(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{text}"),
                (Err(e), Err(part)) => {
                    let message = e.to_string();
                    assert!(message.contains(part), "{text}: {message}");
                }
                (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
