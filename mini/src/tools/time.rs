//! The `get_time` tool: the current time as RFC 3339 with the weekday, in UTC or a
//! fixed offset. No time-zone database ships in the binary (size), so named zones are
//! refused with a hint to give their offset; the civil date comes from the core's
//! calendar arithmetic (`evolve_core::sched`).

use evolve_core::sched::{civil_from_days, Date};
use evolve_core::Timestamp;

use super::ToolOutput;

const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// An offset from UTC in seconds, read from `UTC`, `Z`, `+08:00`, `+0800`, `+08`,
/// `UTC+8`, `GMT-05:30`. `Err` says what is accepted.
pub fn parse_offset(tz: &str) -> Result<i64, String> {
    let t = tz.trim();
    let upper = t.to_ascii_uppercase();
    let rest = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
        .unwrap_or(&upper);
    if rest.is_empty() || rest == "Z" {
        return Ok(0);
    }
    let refuse = || {
        format!(
            "timezone {t:?} is not supported: give \"UTC\" or a fixed offset like \"+08:00\" or \"-05:00\" (named zones such as Asia/Shanghai are not known here; use their current offset)"
        )
    };
    let (sign, digits) = match rest.as_bytes().first() {
        Some(b'+') => (1, &rest[1..]),
        Some(b'-') => (-1, &rest[1..]),
        _ => return Err(refuse()),
    };
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None if digits.len() == 4 => digits.split_at(2),
        None => (digits, "0"),
    };
    let valid = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !valid(h) || !valid(m) {
        return Err(refuse());
    }
    let (h, m): (i64, i64) = (
        h.parse().map_err(|_| refuse())?,
        m.parse().map_err(|_| refuse())?,
    );
    if h > 14 || m > 59 || (h == 14 && m > 0) {
        return Err(format!(
            "timezone {t:?} is out of range: offsets go from -14:00 to +14:00"
        ));
    }
    Ok(sign * (h * 3600 + m * 60))
}

/// `2024-05-01T12:34:56+08:00 (Wednesday)`.
pub fn format_time(now: Timestamp, offset: i64) -> String {
    let local = now + offset;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let Date {
        year: y,
        month: mo,
        day: d,
    } = civil_from_days(days);
    let (hh, mm, ss) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let weekday = WEEKDAYS[(days + 3).rem_euclid(7) as usize]; // 1970-01-01 was a Thursday
    let zone = if offset == 0 {
        "Z".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let a = offset.abs();
        format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
    };
    format!("{y:04}-{mo:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}{zone} ({weekday})")
}

/// `get_time {timezone?}`.
pub fn get_time(timezone: Option<&str>, now: Timestamp) -> ToolOutput {
    match parse_offset(timezone.unwrap_or("UTC")) {
        Ok(offset) => ToolOutput::ok(format!("{} — Unix time {now}", format_time(now, offset))),
        Err(e) => ToolOutput::error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_format_as_rfc3339_with_the_weekday() {
        let cases: &[(i64, i64, &str)] = &[
            (0, 0, "1970-01-01T00:00:00Z (Thursday)"),
            (1_714_538_096, 0, "2024-05-01T04:34:56Z (Wednesday)"),
            (
                1_714_538_096,
                8 * 3600,
                "2024-05-01T12:34:56+08:00 (Wednesday)",
            ),
            (
                1_714_538_096,
                -5 * 3600 - 1800,
                "2024-04-30T23:04:56-05:30 (Tuesday)",
            ),
            (951_782_400, 0, "2000-02-29T00:00:00Z (Tuesday)"),
            (4_107_542_399, 0, "2100-02-28T23:59:59Z (Sunday)"),
            (-1, 0, "1969-12-31T23:59:59Z (Wednesday)"),
            (253_402_300_799, 0, "9999-12-31T23:59:59Z (Friday)"),
        ];
        for (now, offset, want) in cases {
            assert_eq!(format_time(*now, *offset), *want, "{now} {offset}");
        }
    }

    #[test]
    fn offsets_are_read_and_named_zones_refused() {
        let ok: &[(&str, i64)] = &[
            ("UTC", 0),
            ("utc", 0),
            ("Z", 0),
            ("+08:00", 28_800),
            ("+0800", 28_800),
            ("+8", 28_800),
            ("UTC+8", 28_800),
            ("GMT-05:30", -19_800),
            ("-00:00", 0),
            ("+14:00", 50_400),
        ];
        for (tz, secs) in ok {
            assert_eq!(parse_offset(tz), Ok(*secs), "{tz}");
        }
        for tz in [
            "Asia/Shanghai",
            "PST",
            "+15:00",
            "+08:60",
            "8",
            "+aa",
            "+123:00",
        ] {
            assert!(parse_offset(tz).is_err(), "{tz}");
        }
        let e = get_time(Some("Asia/Shanghai"), 0);
        assert!(e.is_error && e.content.contains("+08:00"), "{}", e.content);
    }
}
