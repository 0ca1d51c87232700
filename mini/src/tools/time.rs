//! The `get_time` tool: the current time as RFC 3339 with the weekday, in UTC, a fixed
//! offset or a named zone. No time-zone database ships in the binary (size): named zones
//! come from the system's, through `crate::zone`, as the scheduler's do; the offsets
//! are the core's `FixedOffset` and the civil date the core's calendar arithmetic.

use evolve_core::sched::{civil_from_days, Date, FixedOffset, Zone};
use evolve_core::Timestamp;

use super::ToolOutput;
use crate::zone::LocalZone;

const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The zone `get_time` was asked for: `UTC`, an offset (`+08:00`, `+0800`, `+8`, also
/// written `UTC+8` or `GMT-05:30`, east of UTC as ISO 8601 counts), or a name from the
/// zone database (`Asia/Shanghai`) — the same names the scheduler knows. `Err` says
/// what is accepted.
pub fn zone_of(tz: &str) -> Result<LocalZone, String> {
    let t = tz.trim();
    let upper = t.to_ascii_uppercase();
    // `UTC+8` as people and models write it, not as POSIX `TZ` reads it (`UTC+8` there
    // is eight hours *west*): the offset after the prefix, read by the core.
    let offset = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
        .filter(|rest| rest.starts_with(['+', '-']));
    if let Some(rest) = offset {
        return FixedOffset::parse(rest).map(LocalZone::Fixed).map_err(|_| {
            format!("timezone {t:?} is not an offset such as \"+08:00\" or \"-05:30\"")
        });
    }
    crate::zone::load(t).map_err(|e| format!("timezone {t:?}: {e}"))
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
    match zone_of(timezone.unwrap_or("UTC")) {
        Ok(zone) => {
            let offset = i64::from(zone.offset_at_utc(now));
            ToolOutput::ok(format!("{} — Unix time {now}", format_time(now, offset)))
        }
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
    fn offsets_and_named_zones_are_read_like_the_schedulers() {
        let offset = |tz: &str| zone_of(tz).map(|z| z.offset_at_utc(1_714_538_096));
        let ok: &[(&str, i32)] = &[
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
            assert_eq!(offset(tz), Ok(*secs), "{tz}");
        }
        for tz in [
            "PST/Nowhere",
            "UTC+24:00",
            "+08:60",
            "../etc/passwd",
            "+aa",
            "+123:00",
        ] {
            assert!(offset(tz).is_err(), "{tz}");
        }
        let e = get_time(Some("Mars/Olympus_Mons"), 0);
        assert!(e.is_error && e.content.contains("+08:00"), "{}", e.content);
    }

    /// Where the system has the zone database, `get_time` knows `Asia/Shanghai` as the
    /// scheduler does.
    #[test]
    fn a_named_zone_is_known_where_the_scheduler_knows_it() {
        let Ok(zone) = crate::zone::load("Asia/Shanghai") else {
            return; // no tzdata on this machine: the scheduler does not know it either
        };
        assert_eq!(zone.offset_at_utc(1_714_538_096), 28_800);
        let out = get_time(Some("Asia/Shanghai"), 1_714_538_096);
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .starts_with("2024-05-01T12:34:56+08:00 (Wednesday)"),
            "{}",
            out.content
        );
    }
}
