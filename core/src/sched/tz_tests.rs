//! Tables for time zones without a zone database: POSIX TZ rules north and south of the
//! equator, what a configured name means, TZif files of versions 1–3 built byte by byte,
//! and damaged files refused with their reason.

use super::*;
use alloc::string::ToString;
use alloc::vec::Vec;

fn t(text: &str) -> i64 {
    parse_rfc3339(text).unwrap_or_else(|e| panic!("bad test timestamp {text}: {e}"))
}

#[test]
fn footer_rules_match_the_transitions() {
    // Past the last transition only the footer speaks: the same answers.
    for (text, at, want) in [
        ("CET-1CEST,M3.5.0,M10.5.0/3", "2026-03-29T01:00:00Z", 7200),
        ("CET-1CEST,M3.5.0,M10.5.0/3", "2026-03-29T00:59:59Z", 3600),
        ("CET-1CEST,M3.5.0,M10.5.0/3", "2026-10-25T01:00:00Z", 3600),
        ("EST5EDT,M3.2.0,M11.1.0", "2026-03-08T07:00:00Z", -14_400),
        ("EST5EDT,M3.2.0,M11.1.0", "2026-11-01T06:00:00Z", -18_000),
        ("CST-8", "2026-07-01T00:00:00Z", 28_800),
        ("<+0330>-3:30", "2026-07-01T00:00:00Z", 12_600),
        // Southern hemisphere (Sydney): DST over the new year.
        (
            "AEST-10AEDT,M10.1.0,M4.1.0/3",
            "2026-01-15T00:00:00Z",
            39_600,
        ),
        (
            "AEST-10AEDT,M10.1.0,M4.1.0/3",
            "2026-07-15T00:00:00Z",
            36_000,
        ),
        ("XXX3YYY,J60/1,300", "2026-03-01T04:00:00Z", -7200),
    ] {
        let tz = PosixTz::parse(text).unwrap_or_else(|| panic!("{text} not read"));
        assert_eq!(tz.offset_at_utc(t(at)), want, "{text} at {at}");
    }
    for bad in [
        "",
        "CE-1",
        "CET-1CEST,M13.5.0,M10.5.0",
        "CET-1CEST,M3.5.0",
        "CET",
    ] {
        assert_eq!(PosixTz::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn what_a_zone_name_means() {
    let Some(plus8) = FixedOffset::east(28_800).map(LocalZone::Fixed) else {
        panic!("+08:00 is an offset");
    };
    for (spec, want) in [
        ("UTC", LocalZone::Utc),
        (" utc ", LocalZone::Utc),
        ("Z", LocalZone::Utc),
        (":UTC", LocalZone::Utc),
        ("+08:00", plus8.clone()),
        ("+0800", plus8),
    ] {
        assert_eq!(ZoneName::parse(spec), Ok(ZoneName::Zone(want)), "{spec:?}");
    }
    for (spec, name) in [
        ("Europe/Berlin", "Europe/Berlin"),
        (":Europe/Berlin", "Europe/Berlin"),
        (" Asia/Shanghai ", "Asia/Shanghai"),
        ("CET-1CEST,M3.5.0,M10.5.0/3", "CET-1CEST,M3.5.0,M10.5.0/3"),
    ] {
        assert_eq!(
            ZoneName::parse(spec),
            Ok(ZoneName::Database(name)),
            "{spec:?}"
        );
    }
    for (spec, named) in [
        ("../etc/passwd", "../etc/passwd"),
        ("/etc/passwd", "/etc/passwd"),
        ("Europe//Berlin", "Europe//Berlin"),
        ("Europe/./Berlin", "Europe/./Berlin"),
        ("", ""),
        (":", ""),
        ("+25:00", "+25:00"),
        ("-8x", "-8x"),
    ] {
        let message = alloc::format!(
            "`{named}` is not a time zone — use a name from the zone database such as \
             `Europe/Berlin` or `Asia/Shanghai`, `UTC`, or an offset such as `+08:00`"
        );
        match ZoneName::parse(spec) {
            Ok(name) => panic!("{spec:?} read as {name:?}"),
            Err(e) => assert_eq!(e.to_string(), message),
        }
    }
}

#[test]
fn a_posix_string_alone_is_a_zone() {
    let Some(zone) = LocalZone::posix("CET-1CEST,M3.5.0,M10.5.0/3") else {
        panic!("not read");
    };
    assert_eq!(zone.offset_at_utc(t("1900-07-01T00:00:00Z")), 7200);
    assert_eq!(zone.offset_at_utc(t("2026-07-01T00:00:00Z")), 7200);
    assert_eq!(zone.offset_at_utc(t("2026-12-01T00:00:00Z")), 3600);
    assert_eq!(LocalZone::posix("Europe/Berln"), None);
}

/// A TZif block: header with `version`, one transition at `at` from offset `before` to
/// `after`, `size`-byte times.
pub(super) fn block(version: u8, size: usize, at: i64, before: i32, after: i32) -> Vec<u8> {
    let mut b = b"TZif".to_vec();
    b.push(version);
    b.extend([0; 15]);
    for n in [0u32, 0, 0, 1, 2, 4] {
        b.extend(n.to_be_bytes());
    }
    if size == 8 {
        b.extend(at.to_be_bytes());
    } else {
        b.extend((at as i32).to_be_bytes());
    }
    b.push(1);
    for (off, dst) in [(before, 0u8), (after, 1)] {
        b.extend(off.to_be_bytes());
        b.extend([dst, 0]);
    }
    b.extend(b"AB\0\0");
    b
}

#[test]
fn versions_one_to_three_are_read() {
    // Version 1: 32-bit times only.
    let v1 = Tzif::parse(&block(0, 4, 1_000, 3600, 7200)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (v1.offset_at_utc(999), v1.offset_at_utc(1_000)),
        (3600, 7200)
    );
    // Version 2 and 3: the 64-bit block wins over a (deliberately different) v1
    // block; a transition beyond 2038 is kept; the footer rules after it.
    for version in [b'2', b'3'] {
        let mut file = block(version, 4, 1_000, 0, 0);
        file.extend(block(version, 8, 5_000_000_000, 3600, 7200));
        file.extend(b"\nCST-8\n");
        let z = Tzif::parse(&file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(z.offset_at_utc(4_999_999_999), 3600);
        assert_eq!(z.offset_at_utc(5_000_000_000), 28_800, "the footer applies");
        // Without a footer the last offset stays.
        let mut bare = block(version, 4, 1_000, 0, 0);
        bare.extend(block(version, 8, 5_000_000_000, 3600, 7200));
        bare.extend(b"\n\n");
        let z = Tzif::parse(&bare).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(z.offset_at_utc(6_000_000_000), 7200);
    }
}

#[test]
fn damaged_files_are_refused_with_their_reason() {
    let mut good = block(b'2', 4, 1_000, 0, 0);
    good.extend(block(b'2', 8, 5_000_000_000, 3600, 7200));
    good.extend(b"\nCST-8\n");
    assert!(Tzif::parse(&good).is_ok());
    // Every cut up to the end of the last block's local time types (the zone
    // abbreviations after them are not read, the footer is optional).
    let read = good.len() - b"AB\0\0\nCST-8\n".len();
    for cut in 0..read {
        assert!(Tzif::parse(&good[..cut]).is_err(), "cut at {cut}");
    }
    let with = |at: usize, bytes: &[u8]| {
        let mut file = block(0, 4, 1_000, 3600, 7200);
        file[at..at + bytes.len()].copy_from_slice(bytes);
        Tzif::parse(&file).map(|_| ()).map_err(|e| e.to_string())
    };
    // The header's counts start at byte 20: isutcnt, isstdcnt, leapcnt, timecnt,
    // typecnt, charcnt; the block at 44: one time, one index, two types.
    for (at, bytes, problem) in [
        (0, &b"TZip"[..], "it does not start with `TZif`"),
        (4, b"1", "unknown TZif version"),
        (36, &0u32.to_be_bytes(), "it has no local time types"),
        (48, &[2], "a transition names a missing local time type"),
        (
            49,
            &(27 * 3600i32).to_be_bytes(),
            "a UTC offset is out of range",
        ),
        (49, &i32::MIN.to_be_bytes(), "a UTC offset is out of range"),
        // A header that claims four billion transitions: refused, not allocated.
        (32, &u32::MAX.to_be_bytes(), "the file is cut short"),
    ] {
        assert_eq!(with(at, bytes), Err(problem.to_string()), "{problem}");
    }
    let mut backwards = block(0, 4, 1_000, 3600, 7200);
    backwards[32..36].copy_from_slice(&2u32.to_be_bytes());
    backwards.splice(
        44..48,
        [2000i32.to_be_bytes(), 1000i32.to_be_bytes()].concat(),
    );
    backwards.insert(52, 0);
    assert_eq!(
        Tzif::parse(&backwards).map(|_| ()),
        Err(TzifError::TransitionsOutOfOrder)
    );
    assert_eq!(
        Tzif::parse(b"not a zone file at all, just text .....................").map(|_| ()),
        Err(TzifError::NotTzif)
    );
}
