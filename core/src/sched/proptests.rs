//! Property tests: [`next_due`] finds exactly the minute a brute-force walk finds, for
//! random cron expressions in random fixed offsets; the reader never panics; a task
//! that has just run is not due again at the same instant; neither do the zone readers
//! panic, on damaged zone files or on any TZ string.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use proptest::prelude::*;

use super::*;

/// One list item of a field and the values it allows, computed here independently of
/// the parser.
fn item(lo: u32, hi: u32) -> impl Strategy<Value = (String, Vec<u32>)> {
    (0..5u8, lo..=hi, lo..=hi, 1..=(hi - lo + 1)).prop_map(move |(kind, a, b, step)| {
        let (a, b) = (a.min(b), a.max(b));
        let every = |from: u32, to: u32, step: u32| (from..=to).step_by(step as usize).collect();
        match kind {
            0 => (String::from("*"), every(lo, hi, 1)),
            1 => (format!("{a}"), every(a, a, 1)),
            2 => (format!("{a}-{b}"), every(a, b, 1)),
            3 => (format!("*/{step}"), every(lo, hi, step)),
            _ => (format!("{a}-{b}/{step}"), every(a, b, step)),
        }
    })
}

/// A field: one to three items, joined by commas.
fn field(lo: u32, hi: u32) -> impl Strategy<Value = (String, u64)> {
    proptest::collection::vec(item(lo, hi), 1..=3).prop_map(|items| {
        let text: Vec<String> = items.iter().map(|(t, _)| t.clone()).collect();
        let bits = items
            .iter()
            .flat_map(|(_, v)| v.iter())
            .fold(0u64, |b, &v| b | 1 << v);
        (text.join(","), bits)
    })
}

struct Oracle {
    fields: [u64; 5],
    either: bool,
}

impl Oracle {
    fn matches(&self, local: i64) -> bool {
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let d = civil_from_days(days);
        let on = |i: usize, v: u32| self.fields[i] & (1 << v) != 0;
        let wd = weekday(days);
        let dow = on(4, wd) || (wd == 0 && on(4, 7));
        let dom = on(2, d.day);
        let day_ok = if self.either { dom || dow } else { dom && dow };
        on(0, (secs / 60 % 60) as u32) && on(1, (secs / 3600) as u32) && on(3, d.month) && day_ok
    }
}

proptest! {
    #[test]
    fn next_due_is_the_first_matching_minute(
        minute in field(0, 59),
        hour in field(0, 23),
        dom in field(1, 31),
        month in field(1, 12),
        dow in field(0, 7),
        offset_minutes in -14 * 60..=14 * 60i32,
        after in 1_700_000_000i64..1_900_000_000,
    ) {
        let expr = format!("{} {} {} {} {}", minute.0, hour.0, dom.0, month.0, dow.0);
        let schedule = Schedule::cron(&expr).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let zone = FixedOffset::east(offset_minutes * 60).ok_or_else(|| TestCaseError::fail("offset"))?;
        let oracle = Oracle {
            fields: [minute.1, hour.1, dom.1, month.1, dow.1],
            either: !dom.0.starts_with('*') && !dow.0.starts_with('*'),
        };
        // Walk minute by minute for three days.
        let first = (after / 60 + 1) * 60;
        let window_end = first + 3 * 86_400;
        let brute = (first..window_end)
            .step_by(60)
            .find(|&u| oracle.matches(u + i64::from(zone.seconds())));
        let got = next_due(&schedule, &zone, after);
        match brute {
            Some(at) => prop_assert_eq!(got, Some(at), "`{}`", expr),
            None => prop_assert!(got.is_none_or(|at| at >= window_end), "`{}`: {:?}", expr, got),
        }
        // The text reads back into the same schedule.
        prop_assert_eq!(Schedule::parse(&schedule.to_string()).ok(), Some(schedule));
    }

    #[test]
    fn a_task_that_just_ran_is_not_due_again(
        text in prop_oneof![
            Just("* * * * *"), Just("*/5 * * * *"), Just("0 9 * * mon-fri"),
            Just("every 1m"), Just("every 2h"), Just("daily 07:30"),
        ],
        created in 1_700_000_000i64..1_800_000_000,
        run_after in 0i64..10_000_000,
    ) {
        let schedule = Schedule::parse(text).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let now = created + run_after;
        prop_assert!(!due_now(&schedule, &Utc, Some(now), created, now));
        if let Some(next) = next_due(&schedule, &Utc, now) {
            prop_assert!(next > now);
            prop_assert!(due_now(&schedule, &Utc, Some(now), created, next));
            prop_assert!(!due_now(&schedule, &Utc, Some(now), created, next - 1));
        }
    }

    #[test]
    fn the_reader_never_panics(text in "[0-9a-zA-Z*/,\\- :+TZ.]{0,40}") {
        let _ = Schedule::parse(&text);
        let _ = Schedule::parse_in(&text, &Utc);
        let _ = FixedOffset::parse(&text);
    }

    #[test]
    fn the_zone_readers_never_panic(
        text in "[A-Z<>+\\-0-9:,./J M]{0,40}",
        flips in proptest::collection::vec((0usize..200, any::<u8>()), 0..8),
        cut in 0usize..200,
        at in -4_000_000_000i64..8_000_000_000,
    ) {
        let _ = ZoneName::parse(&text);
        if let Some(zone) = LocalZone::posix(&text) {
            let _ = zone.offset_at_utc(at);
        }
        let mut file = super::tz_tests::block(b'3', 4, 1_000, 0, 0);
        file.extend(super::tz_tests::block(b'3', 8, 5_000_000_000, 3600, 7200));
        file.extend(b"\n");
        file.extend(text.as_bytes());
        file.extend(b"\n");
        let len = file.len();
        for (i, byte) in flips {
            file[i % len] = byte;
        }
        file.truncate(cut);
        if let Ok(zone) = Tzif::parse(&file) {
            let offset = zone.offset_at_utc(at);
            prop_assert!(offset.abs() <= 168 * 3600, "{}", offset);
        }
    }
}
