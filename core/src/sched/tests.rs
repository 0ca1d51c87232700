//! Tables for the scheduler: every field form, names, Sunday 0/7, the either-day rule,
//! month ends, leap days, year rollover, `every` / `daily` / `at`, downtime, impossible
//! and invalid expressions, and the 2026 clock changes in Berlin.

use super::*;
use alloc::string::ToString;

/// An RFC 3339 instant in a table.
fn t(text: &str) -> i64 {
    match parse_rfc3339(text) {
        Ok(utc) => utc,
        Err(e) => panic!("bad test timestamp {text}: {e}"),
    }
}

fn sched(text: &str) -> Schedule {
    Schedule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Europe/Berlin under the EU rule: CET (+1), CEST (+2) from the last Sunday of March
/// 01:00 UTC to the last Sunday of October 01:00 UTC — in 2026, 29 March 02:00 → 03:00
/// and 25 October 03:00 → 02:00 local.
struct Berlin;

impl Berlin {
    fn last_sunday_0100_utc(year: i64, month: u32) -> i64 {
        let last = days_from_civil(Date {
            year,
            month,
            day: 31,
        });
        (last - i64::from(weekday(last))) * 86_400 + 3600
    }
}

impl Zone for Berlin {
    fn offset_at_utc(&self, utc: i64) -> i32 {
        let year = civil_from_days(utc.div_euclid(86_400)).year;
        let start = Berlin::last_sunday_0100_utc(year, 3);
        let end = Berlin::last_sunday_0100_utc(year, 10);
        if (start..end).contains(&utc) {
            7200
        } else {
            3600
        }
    }
}

#[test]
fn next_due_in_utc() {
    // (schedule, after, next)
    let table: &[(&str, &str, Option<&str>)] = &[
        (
            "* * * * *",
            "2026-01-01T00:00:00Z",
            Some("2026-01-01T00:01:00Z"),
        ),
        (
            "* * * * *",
            "2026-01-01T00:00:30Z",
            Some("2026-01-01T00:01:00Z"),
        ),
        (
            "*/15 * * * *",
            "2026-01-01T00:07:00Z",
            Some("2026-01-01T00:15:00Z"),
        ),
        (
            "*/15 * * * *",
            "2026-01-01T00:45:00Z",
            Some("2026-01-01T01:00:00Z"),
        ),
        (
            "10-50/10 * * * *",
            "2026-01-01T00:50:00Z",
            Some("2026-01-01T01:10:00Z"),
        ),
        (
            "5/20 * * * *",
            "2026-01-01T00:45:00Z",
            Some("2026-01-01T01:05:00Z"),
        ),
        (
            "1,2,58 * * * *",
            "2026-01-01T00:02:00Z",
            Some("2026-01-01T00:58:00Z"),
        ),
        (
            "0 9-17/4 * * *",
            "2026-01-01T13:00:00Z",
            Some("2026-01-01T17:00:00Z"),
        ),
        (
            "0 9 * * *",
            "2026-01-01T08:59:59Z",
            Some("2026-01-01T09:00:00Z"),
        ),
        (
            "0 9 * * *",
            "2026-01-01T09:00:00Z",
            Some("2026-01-02T09:00:00Z"),
        ),
        // 2 January 2026 is a Friday.
        (
            "0 9 * * mon-fri",
            "2026-01-02T10:00:00Z",
            Some("2026-01-05T09:00:00Z"),
        ),
        (
            "0 9 * * MON,Wed",
            "2026-01-05T09:00:00Z",
            Some("2026-01-07T09:00:00Z"),
        ),
        (
            "0 0 * * 0",
            "2026-01-01T00:00:00Z",
            Some("2026-01-04T00:00:00Z"),
        ),
        (
            "0 0 * * 7",
            "2026-01-01T00:00:00Z",
            Some("2026-01-04T00:00:00Z"),
        ),
        (
            "0 0 * * sun",
            "2026-01-01T00:00:00Z",
            Some("2026-01-04T00:00:00Z"),
        ),
        (
            "0 0 * * 6-7",
            "2026-01-03T00:00:00Z",
            Some("2026-01-04T00:00:00Z"),
        ),
        // Both day fields restricted: the 13th OR a Friday.
        (
            "0 0 13 * fri",
            "2026-01-01T00:00:00Z",
            Some("2026-01-02T00:00:00Z"),
        ),
        (
            "0 0 13 * fri",
            "2026-01-09T00:00:00Z",
            Some("2026-01-13T00:00:00Z"),
        ),
        // A day field starting with `*` is unrestricted: odd days AND Fridays.
        (
            "0 0 */2 * fri",
            "2026-01-01T00:00:00Z",
            Some("2026-01-09T00:00:00Z"),
        ),
        (
            "0 0 1 jan *",
            "2026-06-01T00:00:00Z",
            Some("2027-01-01T00:00:00Z"),
        ),
        (
            "0 0 1 JUL-aug *",
            "2026-07-01T00:00:00Z",
            Some("2026-08-01T00:00:00Z"),
        ),
        // The 31st skips the 30-day months.
        (
            "0 0 31 * *",
            "2026-03-31T00:00:00Z",
            Some("2026-05-31T00:00:00Z"),
        ),
        (
            "0 0 30 * *",
            "2026-01-30T00:00:00Z",
            Some("2026-03-30T00:00:00Z"),
        ),
        // 29 February only in leap years, up to 8 years apart.
        (
            "0 0 29 2 *",
            "2026-01-01T00:00:00Z",
            Some("2028-02-29T00:00:00Z"),
        ),
        (
            "0 0 29 2 *",
            "2096-03-01T00:00:00Z",
            Some("2104-02-29T00:00:00Z"),
        ),
        // Year rollover.
        (
            "59 23 31 12 *",
            "2026-12-31T23:59:00Z",
            Some("2027-12-31T23:59:00Z"),
        ),
        (
            "0 0 * * *",
            "2026-12-31T12:00:00Z",
            Some("2027-01-01T00:00:00Z"),
        ),
        (
            "*/30 * * * *",
            "2026-12-31T23:45:00Z",
            Some("2027-01-01T00:00:00Z"),
        ),
        // Impossible: None, not a loop.
        ("0 0 31 2 *", "2026-01-01T00:00:00Z", None),
        ("0 0 30 2 *", "2026-01-01T00:00:00Z", None),
        ("0 0 31 4,6,9,11 *", "2026-01-01T00:00:00Z", None),
        // The other forms.
        (
            "every 30m",
            "2026-01-01T00:00:00Z",
            Some("2026-01-01T00:30:00Z"),
        ),
        (
            "every 1h30m",
            "2026-01-01T00:00:00Z",
            Some("2026-01-01T01:30:00Z"),
        ),
        (
            "every 90s",
            "2026-01-01T00:00:00Z",
            Some("2026-01-01T00:01:30Z"),
        ),
        (
            "every 1d",
            "2026-01-01T00:00:00Z",
            Some("2026-01-02T00:00:00Z"),
        ),
        (
            "daily 07:30",
            "2026-01-01T07:30:00Z",
            Some("2026-01-02T07:30:00Z"),
        ),
        (
            "daily 7:30",
            "2026-01-01T07:29:00Z",
            Some("2026-01-01T07:30:00Z"),
        ),
        (
            "at 2026-03-29T09:00:00+02:00",
            "2026-03-29T06:59:59Z",
            Some("2026-03-29T07:00:00Z"),
        ),
        ("at 2026-03-29T09:00:00+02:00", "2026-03-29T07:00:00Z", None),
    ];
    for &(schedule, after, want) in table {
        let got = next_due(&sched(schedule), &Utc, t(after));
        assert_eq!(got, want.map(t), "`{schedule}` after {after}");
    }
}

#[test]
fn next_due_in_other_zones() {
    let shanghai = FixedOffset::east(8 * 3600).expect("valid offset");
    let new_york = FixedOffset::parse("-05:00").expect("valid offset");
    let table: &[(&str, &dyn Zone, &str, &str)] = &[
        // 08:00 in Shanghai: 07:30 local is tomorrow.
        (
            "daily 07:30",
            &shanghai,
            "2026-01-01T00:00:00Z",
            "2026-01-01T23:30:00Z",
        ),
        (
            "0 9 * * mon",
            &shanghai,
            "2026-01-04T00:00:00Z",
            "2026-01-05T01:00:00Z",
        ),
        // Local day boundaries decide the weekday: Sunday 20:00 in New York is Monday UTC.
        (
            "0 20 * * sun",
            &new_york,
            "2026-01-01T00:00:00Z",
            "2026-01-05T01:00:00Z",
        ),
        (
            "0 9 * * *",
            &Berlin,
            "2026-03-28T12:00:00Z",
            "2026-03-29T07:00:00Z",
        ),
        (
            "0 9 * * *",
            &Berlin,
            "2026-01-01T00:00:00Z",
            "2026-01-01T08:00:00Z",
        ),
    ];
    for &(schedule, zone, after, want) in table {
        let got = next_due(&sched(schedule), zone, t(after));
        assert_eq!(got, Some(t(want)), "`{schedule}` after {after}");
    }
}

#[test]
fn clock_changes_in_berlin_2026() {
    // (schedule, after, next): a daily 02:30 task and a task in the changing hour.
    let table: &[(&str, &str, &str)] = &[
        // Spring forward: 02:30 does not exist; it fires at 03:00 CEST (01:00 UTC).
        (
            "daily 02:30",
            "2026-03-28T12:00:00Z",
            "2026-03-29T01:00:00Z",
        ),
        (
            "daily 02:30",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z",
        ),
        (
            "daily 02:30",
            "2026-03-27T12:00:00Z",
            "2026-03-28T01:30:00Z",
        ),
        // Every slot of the missing hour is one run at 03:00, then 03:00 itself is
        // the same instant and not run again.
        (
            "*/30 2,3 * * *",
            "2026-03-29T00:00:00Z",
            "2026-03-29T01:00:00Z",
        ),
        (
            "*/30 2,3 * * *",
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:30:00Z",
        ),
        // Fall back: 02:30 happens twice; it fires at the first (CEST, 00:30 UTC) only.
        (
            "daily 02:30",
            "2026-10-24T12:00:00Z",
            "2026-10-25T00:30:00Z",
        ),
        (
            "daily 02:30",
            "2026-10-25T00:30:00Z",
            "2026-10-26T01:30:00Z",
        ),
        (
            "daily 02:30",
            "2026-10-25T01:00:00Z",
            "2026-10-26T01:30:00Z",
        ),
        ("0 * * * *", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"),
        (
            "daily 02:30",
            "2026-10-26T01:30:00Z",
            "2026-10-27T01:30:00Z",
        ),
    ];
    for &(schedule, after, want) in table {
        let got = next_due(&sched(schedule), &Berlin, t(after));
        assert_eq!(got, Some(t(want)), "`{schedule}` after {after}");
    }
}

#[test]
fn local_wall_times_resolve_once() {
    let wall = |s: &str| t(s); // a local wall time written as if it were UTC
    for (local, utc) in [
        ("2026-03-29T01:59:00Z", "2026-03-29T00:59:00Z"),
        ("2026-03-29T02:00:00Z", "2026-03-29T01:00:00Z"),
        ("2026-03-29T02:59:59Z", "2026-03-29T01:00:00Z"),
        ("2026-03-29T03:00:00Z", "2026-03-29T01:00:00Z"),
        ("2026-10-25T02:00:00Z", "2026-10-25T00:00:00Z"),
        ("2026-10-25T02:59:00Z", "2026-10-25T00:59:00Z"),
        ("2026-10-25T03:00:00Z", "2026-10-25T02:00:00Z"),
    ] {
        assert_eq!(local_to_utc(&Berlin, wall(local)), t(utc), "{local}");
    }
    assert_eq!(
        to_local(&Berlin, t("2026-10-25T01:30:00Z")),
        wall("2026-10-25T02:30:00Z")
    );
}

#[test]
fn due_now_runs_a_missed_task_once() {
    let created = t("2026-01-01T00:00:00Z");
    // (schedule, last run, now, due)
    let table: &[(&str, Option<&str>, &str, bool)] = &[
        ("0 9 * * *", None, "2026-01-01T08:59:00Z", false),
        ("0 9 * * *", None, "2026-01-01T09:00:00Z", true),
        (
            "0 9 * * *",
            Some("2026-01-01T09:00:05Z"),
            "2026-01-01T12:00:00Z",
            false,
        ),
        // Down from the 1st to the 5th: four slots missed, one run…
        (
            "0 9 * * *",
            Some("2026-01-01T09:00:05Z"),
            "2026-01-05T12:00:00Z",
            true,
        ),
        // …after which the missed slots are gone until the next one.
        (
            "0 9 * * *",
            Some("2026-01-05T12:00:00Z"),
            "2026-01-05T12:01:00Z",
            false,
        ),
        (
            "0 9 * * *",
            Some("2026-01-05T12:00:00Z"),
            "2026-01-06T08:59:59Z",
            false,
        ),
        (
            "0 9 * * *",
            Some("2026-01-05T12:00:00Z"),
            "2026-01-06T09:00:00Z",
            true,
        ),
        ("every 30m", None, "2026-01-01T00:29:59Z", false),
        ("every 30m", None, "2026-01-01T00:30:00Z", true),
        (
            "every 30m",
            Some("2026-01-01T00:30:00Z"),
            "2026-01-01T03:00:00Z",
            true,
        ),
        (
            "every 30m",
            Some("2026-01-01T03:00:00Z"),
            "2026-01-01T03:01:00Z",
            false,
        ),
        ("daily 07:30", None, "2026-01-01T07:30:00Z", true),
        // One-off: due once its time has come, also long after; never after a run.
        (
            "at 2026-01-02T00:00:00Z",
            None,
            "2026-01-01T23:59:59Z",
            false,
        ),
        (
            "at 2026-01-02T00:00:00Z",
            None,
            "2026-01-02T00:00:00Z",
            true,
        ),
        (
            "at 2026-01-02T00:00:00Z",
            None,
            "2026-02-01T00:00:00Z",
            true,
        ),
        (
            "at 2026-01-02T00:00:00Z",
            Some("2026-02-01T00:00:00Z"),
            "2026-03-01T00:00:00Z",
            false,
        ),
        // Run by hand before its time: it still runs at its time.
        (
            "at 2026-01-02T00:00:00Z",
            Some("2026-01-01T12:00:00Z"),
            "2026-01-02T00:00:00Z",
            true,
        ),
        (
            "at 2025-12-31T00:00:00Z",
            None,
            "2026-01-01T00:00:01Z",
            true,
        ),
        // Impossible: never due.
        ("0 0 31 2 *", None, "2036-01-01T00:00:00Z", false),
        // A clock set back before the last run does not fire.
        (
            "* * * * *",
            Some("2026-01-02T00:00:00Z"),
            "2026-01-01T00:00:00Z",
            false,
        ),
    ];
    for &(schedule, last, now, want) in table {
        let got = due_now(&sched(schedule), &Utc, last.map(t), created, t(now));
        assert_eq!(got, want, "`{schedule}` last {last:?} now {now}");
    }
}

#[test]
fn invalid_schedules_say_what_is_wrong() {
    let table: &[(&str, &str)] = &[
        ("61 * * * *", "minute 61 is out of range 0–59 in `61 * * * *` — e.g. `*/15 * * * *` (every 15 minutes)"),
        ("0 24 * * *", "hour 24 is out of range 0–23 in `0 24 * * *` — e.g. `0 9 * * *` (09:00 every day)"),
        ("0 0 0 * *", "day of month 0 is out of range 1–31 in `0 0 0 * *` — e.g. `0 9 1,15 * *` (09:00 on the 1st and the 15th)"),
        ("0 0 1 13 *", "month 13 is out of range 1–12 in `0 0 1 13 *` — e.g. `0 9 1 jan,jul *` (09:00 on 1 January and 1 July)"),
        ("0 0 * * 8", "day of week 8 is out of range 0–7 in `0 0 * * 8` — e.g. `0 9 * * mon-fri` (09:00 on weekdays)"),
        ("0 0 * * fry", "day of week `fry` is not a number or weekday name (sun–sat) in `0 0 * * fry` — e.g. `0 9 * * mon-fri` (09:00 on weekdays)"),
        ("0 0 1 janu *", "month `janu` is not a number or month name (jan–dec) in `0 0 1 janu *` — e.g. `0 9 1 jan,jul *` (09:00 on 1 January and 1 July)"),
        ("0 mon * * *", "hour `mon` is not a number in `0 mon * * *` — e.g. `0 9 * * *` (09:00 every day)"),
        ("1,,2 * * * *", "the minute field has an empty list item in `1,,2 * * * *` — e.g. `*/15 * * * *` (every 15 minutes)"),
        ("*/0 * * * *", "the minute step `/0` in `*/0 * * * *` never advances — use a step of 1 or more, e.g. `*/15 * * * *` (every 15 minutes)"),
        ("0 17-9 * * *", "the hour range `17-9` runs backwards in `0 17-9 * * *` — write the smaller value first or a list, e.g. `0 9 * * *` (09:00 every day)"),
        ("0 9 * *", "a cron expression has 5 fields (minute hour day-of-month month day-of-week), `0 9 * *` has 4 — e.g. `30 7 * * mon-fri` (07:30 on weekdays)"),
        ("0 0 9 * * *", "a cron expression has 5 fields (minute hour day-of-month month day-of-week), `0 0 9 * * *` has 6 — e.g. `30 7 * * mon-fri` (07:30 on weekdays)"),
        ("  ", "the schedule is empty — give a cron expression such as `0 9 * * mon-fri`, `every 30m`, `daily 07:30` or `at 2026-03-29T09:00:00+02:00`"),
        ("every 30s", "`every 30s` is below the scheduler's resolution of one minute — e.g. `every 1m`"),
        ("every 0m", "`every 0m` is below the scheduler's resolution of one minute — e.g. `every 1m`"),
        ("every 400d", "`every 400d` is longer than a year — use a cron expression such as `0 9 1 jan *` (yearly) or `at 2027-01-01T09:00:00+01:00` (once)"),
        ("every 30", "`30` is not an interval — write a number and a unit s, m, h or d, e.g. `every 30m`, `every 2h`, `every 1h30m`, `every 1d`"),
        ("every 2w", "`2w` is not an interval — write a number and a unit s, m, h or d, e.g. `every 30m`, `every 2h`, `every 1h30m`, `every 1d`"),
        ("every", "`every` needs an interval: a number and a unit s, m, h or d, e.g. `every 30m`, `every 2h`, `every 1h30m`, `every 1d`"),
        ("daily", "`daily` needs a time of day HH:MM between 00:00 and 23:59 — e.g. `daily 07:30`"),
        ("at ", "`at` needs a date and time — e.g. `at 2026-03-29T09:00:00+02:00`"),
        ("daily 25:00", "`25:00` is not a time of day HH:MM between 00:00 and 23:59 — e.g. `daily 07:30`"),
        ("daily 7:5", "`7:5` is not a time of day HH:MM between 00:00 and 23:59 — e.g. `daily 07:30`"),
        ("daily noon", "`noon` is not a time of day HH:MM between 00:00 and 23:59 — e.g. `daily 07:30`"),
        ("at 2026-02-30T09:00:00Z", "`2026-02-30T09:00:00Z` is not an RFC 3339 timestamp: that day does not exist in that month — e.g. `2026-03-29T09:00:00+02:00`"),
        ("at 2026-03-29T09:00", "`2026-03-29T09:00` is not an RFC 3339 timestamp: it needs a UTC offset at the end: `Z` or `+HH:MM` — e.g. `2026-03-29T09:00:00+02:00`"),
        ("at 2026-03-29T09:00Z", "`2026-03-29T09:00Z` is not an RFC 3339 timestamp: the time must be HH:MM:SS — e.g. `2026-03-29T09:00:00+02:00`"),
    ];
    for &(input, message) in table {
        match Schedule::parse(input) {
            Ok(s) => panic!("`{input}` was accepted as {s:?}"),
            Err(e) => assert_eq!(e.to_string(), message, "`{input}`"),
        }
    }
}

#[test]
fn schedules_read_back_from_their_text() {
    for text in [
        "*/15 9-17 * * mon-fri",
        "every 30m",
        "every 1d2h",
        "every 1m30s",
        "daily 07:05",
        "at 2026-03-29T07:00:00Z",
    ] {
        let schedule = sched(text);
        assert_eq!(schedule.to_string(), text);
        assert_eq!(sched(&schedule.to_string()), schedule);
    }
    assert_eq!(sched("  0   9 * *  * ").to_string(), "0 9 * * *");
    assert_eq!(sched("EVERY 90s").to_string(), "every 1m30s");
}

#[test]
fn fixed_offsets() {
    for (text, want) in [
        ("+08:00", Some(28_800)),
        ("-05:30", Some(-19_800)),
        ("+0800", Some(28_800)),
        ("+8", Some(28_800)),
        ("UTC", Some(0)),
        ("z", Some(0)),
        ("+24:00", None),
        ("08:00", None),
        ("+8:60", None),
        ("Asia/Shanghai", None),
    ] {
        assert_eq!(
            FixedOffset::parse(text).ok().map(FixedOffset::seconds),
            want,
            "{text}"
        );
    }
}

#[test]
fn one_offs_in_the_configured_zone() {
    let shanghai = FixedOffset::east(8 * 3600).expect("valid offset");
    // (text, zone, instant)
    let table: &[(&str, &dyn Zone, &str)] = &[
        ("at 2026-03-29 09:00", &shanghai, "2026-03-29T01:00:00Z"),
        ("at 2026-03-29T09:00:30", &shanghai, "2026-03-29T01:00:30Z"),
        ("AT 2026-03-29 09:00", &Berlin, "2026-03-29T07:00:00Z"),
        // An offset in the text wins over the zone.
        ("at 2026-03-29T09:00:00Z", &Berlin, "2026-03-29T09:00:00Z"),
        // In the gap: the first instant after it; in the repeated hour: the first.
        ("at 2026-03-29 02:30", &Berlin, "2026-03-29T01:00:00Z"),
        ("at 2026-10-25 02:30", &Berlin, "2026-10-25T00:30:00Z"),
    ];
    for &(text, zone, want) in table {
        let got = Schedule::parse_in(text, zone).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(got, Schedule::At { utc: t(want) }, "{text}");
    }
    assert_eq!(
        Schedule::parse_in("daily 07:30", &Berlin),
        Schedule::daily("07:30")
    );
    let e = Schedule::parse_in("at 2026-03-29 9:00", &Berlin).map_err(|e| e.to_string());
    assert_eq!(
        e,
        Err("`2026-03-29 9:00` is not an RFC 3339 timestamp: the time must be HH:MM:SS — e.g. `2026-03-29T09:00:00+02:00`".to_string())
    );
}
