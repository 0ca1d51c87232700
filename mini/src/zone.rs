//! Time zones from the system's zone database, for the core's [`Zone`] trait: the
//! scheduler's `[scheduler] time_zone` and the `get_time` tool read zones here, so both
//! know the same names.
//!
//! Decides how a configured zone name becomes offsets: `UTC` and fixed `+08:00` forms
//! directly; a name such as `Europe/Berlin` from the TZif file (RFC 8536, versions 1–4)
//! under `$TZDIR` or `/usr/share/zoneinfo`. The 64-bit section is used when the file has
//! one (version 2+), so transitions after 2038 are right. Before the first transition the
//! first local time type applies (RFC 8536 §3.2). After the last transition the footer's
//! POSIX TZ string (`CET-1CEST,M3.5.0,M10.5.0/3`) gives the offsets, so a "slim" file
//! without precomputed future transitions still knows next year's DST; a footer that
//! cannot be read falls back to the last transition's offset.

use std::fmt;
use std::path::{Path, PathBuf};

use evolve_core::sched::{days_from_civil, is_leap, weekday, Date, FixedOffset, Zone};

/// Where zone files live when `$TZDIR` is not set (Debian's tzdata, most Unixes).
pub const DEFAULT_TZDIR: &str = "/usr/share/zoneinfo";

/// A time zone the scheduler can use.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalZone {
    /// UTC (also `Z`, `Etc/UTC` when written as `UTC`).
    Utc,
    /// A fixed offset such as `+08:00`.
    Fixed(FixedOffset),
    /// A zone read from a TZif file.
    Tzif(Tzif),
}

impl Zone for LocalZone {
    fn offset_at_utc(&self, utc: i64) -> i32 {
        match self {
            LocalZone::Utc => 0,
            LocalZone::Fixed(f) => f.seconds(),
            LocalZone::Tzif(t) => t.offset_at_utc(utc),
        }
    }
}

/// Why a zone could not be loaded; every message names the zone and the file.
#[derive(Debug)]
pub enum ZoneError {
    /// The name contains `..`, is absolute, or is empty.
    BadName(String),
    /// No file for the name.
    Unknown { name: String, path: PathBuf },
    /// The file exists but could not be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a TZif file, or a damaged one.
    Invalid { path: PathBuf, problem: String },
}

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZoneError::BadName(name) => write!(
                f,
                "`{name}` is not a time zone — use a name from the zone database such as \
                 `Europe/Berlin` or `Asia/Shanghai`, `UTC`, or an offset such as `+08:00`"
            ),
            ZoneError::Unknown { name, path } => write!(
                f,
                "unknown time zone `{name}`: there is no file {} — check the spelling \
                 (e.g. `Europe/Berlin`, `America/New_York`), install the tzdata package, \
                 or use `UTC` or an offset such as `+08:00`",
                path.display()
            ),
            ZoneError::Read { path, source } => {
                write!(
                    f,
                    "cannot read the time zone file {}: {source}",
                    path.display()
                )
            }
            ZoneError::Invalid { path, problem } => write!(
                f,
                "{} is not a usable time zone file ({problem}) — reinstall tzdata or use \
                 `UTC` or an offset such as `+08:00`",
                path.display()
            ),
        }
    }
}

impl std::error::Error for ZoneError {}

/// Reads a zone as configured: `UTC`, `+08:00`, or a database name looked up under
/// `$TZDIR` (or [`DEFAULT_TZDIR`]).
pub fn load(spec: &str) -> Result<LocalZone, ZoneError> {
    let dir = std::env::var_os("TZDIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_TZDIR));
    load_from(spec, &dir)
}

/// The zone the system runs in, for when none is configured: `$TZ` when set (a name,
/// an offset or a POSIX TZ string), else `/etc/localtime`, else UTC (containers often
/// have neither).
pub fn system() -> Result<LocalZone, ZoneError> {
    if let Some(tz) = std::env::var("TZ").ok().filter(|tz| !tz.trim().is_empty()) {
        return load(&tz);
    }
    let localtime = Path::new("/etc/localtime");
    if localtime.exists() {
        return load_file(localtime);
    }
    Ok(LocalZone::Utc)
}

/// Reads one TZif file.
pub fn load_file(path: &Path) -> Result<LocalZone, ZoneError> {
    let bytes = std::fs::read(path).map_err(|source| ZoneError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Tzif::parse(&bytes)
        .map(LocalZone::Tzif)
        .map_err(|problem| ZoneError::Invalid {
            path: path.to_path_buf(),
            problem: problem.to_string(),
        })
}

/// [`load`] with the zone directory given. A leading `:` (POSIX `TZ=:Europe/Berlin`)
/// is ignored; a name with no file that reads as a POSIX TZ string
/// (`CET-1CEST,M3.5.0,M10.5.0/3`) is used as one.
pub fn load_from(spec: &str, dir: &Path) -> Result<LocalZone, ZoneError> {
    let spec = spec.trim();
    let spec = spec.strip_prefix(':').unwrap_or(spec);
    if spec.eq_ignore_ascii_case("utc") || spec.eq_ignore_ascii_case("z") {
        return Ok(LocalZone::Utc);
    }
    if spec.starts_with(['+', '-']) {
        return FixedOffset::parse(spec)
            .map(LocalZone::Fixed)
            .map_err(|_| ZoneError::BadName(spec.to_string()));
    }
    let bad = spec.is_empty()
        || spec.starts_with('/')
        || spec
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(ZoneError::BadName(spec.to_string()));
    }
    let path = dir.join(spec);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(rule) = PosixTz::parse(spec) {
                return Ok(LocalZone::Tzif(Tzif {
                    transitions: Vec::new(),
                    offsets_after: Vec::new(),
                    initial: rule.std,
                    rule: Some(rule),
                }));
            }
            return Err(ZoneError::Unknown {
                name: spec.to_string(),
                path,
            });
        }
        Err(source) => return Err(ZoneError::Read { path, source }),
    };
    Tzif::parse(&bytes)
        .map(LocalZone::Tzif)
        .map_err(|problem| ZoneError::Invalid {
            path,
            problem: problem.to_string(),
        })
}

/// The offsets of a zone read from a TZif file.
#[derive(Debug, Clone, PartialEq)]
pub struct Tzif {
    /// Transition instants, ascending.
    transitions: Vec<i64>,
    /// The offset in force from each transition on.
    offsets_after: Vec<i32>,
    /// The offset before the first transition (local time type 0).
    initial: i32,
    /// The footer's rule for instants after the last transition.
    rule: Option<PosixTz>,
}

impl Tzif {
    /// Reads a TZif file (RFC 8536): the version-1 block, and for version 2+ the 64-bit
    /// block and the footer.
    pub fn parse(bytes: &[u8]) -> Result<Tzif, &'static str> {
        let mut r = Reader { bytes, at: 0 };
        let v1 = Header::read(&mut r)?;
        if v1.version == 0 {
            return v1.read_block(&mut r, 4, None);
        }
        r.skip(v1.block_len(4))?;
        let v2 = Header::read(&mut r)?;
        let start = r.at + v2.block_len(8);
        let footer = bytes
            .get(start..)
            .and_then(|rest| rest.strip_prefix(b"\n"))
            .and_then(|rest| {
                rest.iter()
                    .position(|&b| b == b'\n')
                    .map(|end| &rest[..end])
            })
            .and_then(|tz| std::str::from_utf8(tz).ok())
            .and_then(PosixTz::parse);
        v2.read_block(&mut r, 8, footer)
    }
}

impl Zone for Tzif {
    fn offset_at_utc(&self, utc: i64) -> i32 {
        let after = self.transitions.partition_point(|&t| t <= utc);
        if after == self.transitions.len() {
            if let Some(rule) = &self.rule {
                return rule.offset_at_utc(utc);
            }
        }
        match after.checked_sub(1) {
            Some(i) => self.offsets_after[i],
            None => self.initial,
        }
    }
}

/// A byte cursor that fails instead of panicking on a short file.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        let end = self.at.checked_add(n).ok_or("the file is cut short")?;
        let s = self
            .bytes
            .get(self.at..end)
            .ok_or("the file is cut short")?;
        self.at = end;
        Ok(s)
    }

    fn skip(&mut self, n: usize) -> Result<(), &'static str> {
        self.take(n).map(|_| ())
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn time(&mut self, size: usize) -> Result<i64, &'static str> {
        let b = self.take(size)?;
        Ok(if size == 8 {
            i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        } else {
            i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        })
    }
}

/// The counts of a TZif header.
struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    fn read(r: &mut Reader) -> Result<Header, &'static str> {
        if r.take(4)? != b"TZif" {
            return Err("it does not start with `TZif`");
        }
        let version = match r.take(1)?[0] {
            0 => 0,
            v @ b'2'..=b'4' => v - b'0',
            _ => return Err("unknown TZif version"),
        };
        r.skip(15)?;
        let mut n = [0usize; 6];
        for slot in &mut n {
            *slot = r.u32()? as usize;
        }
        let [isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt] = n;
        if typecnt == 0 {
            return Err("it has no local time types");
        }
        Ok(Header {
            version,
            isutcnt,
            isstdcnt,
            leapcnt,
            timecnt,
            typecnt,
            charcnt,
        })
    }

    /// Bytes of the data block after this header, with `size`-byte times.
    fn block_len(&self, size: usize) -> usize {
        self.timecnt * size
            + self.timecnt
            + self.typecnt * 6
            + self.charcnt
            + self.leapcnt * (size + 4)
            + self.isstdcnt
            + self.isutcnt
    }

    fn read_block(
        &self,
        r: &mut Reader,
        size: usize,
        rule: Option<PosixTz>,
    ) -> Result<Tzif, &'static str> {
        let mut transitions = Vec::with_capacity(self.timecnt);
        for _ in 0..self.timecnt {
            transitions.push(r.time(size)?);
        }
        if transitions.windows(2).any(|w| w[0] >= w[1]) {
            return Err("its transitions are not in order");
        }
        let indices = r.take(self.timecnt)?;
        let mut offsets = Vec::with_capacity(self.typecnt);
        for _ in 0..self.typecnt {
            let utoff = r.u32()? as i32;
            r.skip(2)?; // isdst, desigidx
            if utoff == i32::MIN || utoff.abs() > 26 * 3600 {
                return Err("a UTC offset is out of range");
            }
            offsets.push(utoff);
        }
        let mut offsets_after = Vec::with_capacity(self.timecnt);
        for &i in indices {
            offsets_after.push(
                *offsets
                    .get(usize::from(i))
                    .ok_or("a transition names a missing local time type")?,
            );
        }
        Ok(Tzif {
            transitions,
            offsets_after,
            initial: offsets[0],
            rule,
        })
    }
}

/// A POSIX TZ string as found in TZif footers: `CST-8`, `CET-1CEST,M3.5.0,M10.5.0/3`,
/// `EST5EDT,M3.2.0,M11.1.0`, `<+0330>-3:30`. Offsets here are seconds *east* (the
/// string itself counts west).
#[derive(Debug, Clone, PartialEq)]
struct PosixTz {
    std: i32,
    dst: Option<(i32, Rule, Rule)>,
}

/// A day-and-time of year on which DST starts or ends, in local time before the change.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rule {
    day: Day,
    /// Seconds after local midnight (may be negative or beyond 24 h in version 3).
    time: i64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Day {
    /// `Jn`: day 1–365, 29 February never counted.
    Julian1(u32),
    /// `n`: day 0–365, 29 February counted.
    Julian0(u32),
    /// `Mm.w.d`: weekday d (0 = Sunday) of week w (5 = last) of month m.
    Month { month: u32, week: u32, weekday: u32 },
}

impl PosixTz {
    fn parse(text: &str) -> Option<PosixTz> {
        let mut p = Cursor {
            s: text.as_bytes(),
            at: 0,
        };
        p.name()?;
        let std = -p.offset()?;
        if p.done() {
            return Some(PosixTz { std, dst: None });
        }
        p.name()?;
        let dst = if p.peek() == Some(b',') {
            std + 3600
        } else {
            -p.offset()?
        };
        if !p.eat(b',') {
            return None;
        }
        let start = p.rule()?;
        if !p.eat(b',') {
            return None;
        }
        let end = p.rule()?;
        p.done().then_some(PosixTz {
            std,
            dst: Some((dst, start, end)),
        })
    }

    fn offset_at_utc(&self, utc: i64) -> i32 {
        let Some((dst, start, end)) = self.dst else {
            return self.std;
        };
        let year =
            evolve_core::sched::civil_from_days((utc + i64::from(self.std)).div_euclid(86_400))
                .year;
        // The start is given in standard time, the end in daylight time.
        let starts = start.local(year) - i64::from(self.std);
        let ends = end.local(year) - i64::from(dst);
        let in_dst = if starts < ends {
            (starts..ends).contains(&utc)
        } else {
            // Southern hemisphere: DST spans the new year.
            !(ends..starts).contains(&utc)
        };
        if in_dst {
            dst
        } else {
            self.std
        }
    }
}

impl Rule {
    /// The local wall time (seconds since local 1970-01-01) of this rule in `year`.
    fn local(&self, year: i64) -> i64 {
        let jan1 = days_from_civil(Date {
            year,
            month: 1,
            day: 1,
        });
        let day = match self.day {
            Day::Julian1(n) => {
                let n = i64::from(n) - 1;
                jan1 + n + i64::from(is_leap(year) && n >= 59)
            }
            Day::Julian0(n) => jan1 + i64::from(n),
            Day::Month {
                month,
                week,
                weekday: wd,
            } => {
                let first = days_from_civil(Date {
                    year,
                    month,
                    day: 1,
                });
                let shift = (i64::from(wd) - i64::from(weekday(first))).rem_euclid(7);
                let mut day = first + shift + 7 * (i64::from(week) - 1);
                let next_month = if month == 12 {
                    days_from_civil(Date {
                        year: year + 1,
                        month: 1,
                        day: 1,
                    })
                } else {
                    days_from_civil(Date {
                        year,
                        month: month + 1,
                        day: 1,
                    })
                };
                while day >= next_month {
                    day -= 7;
                }
                day
            }
        };
        day * 86_400 + self.time
    }
}

/// A tiny parser over the TZ string's bytes.
struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at == self.s.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.at += usize::from(hit);
        hit
    }

    /// `CET` (3+ letters) or `<+0330>`.
    fn name(&mut self) -> Option<()> {
        let start = self.at;
        if self.eat(b'<') {
            while self.peek()? != b'>' {
                self.at += 1;
            }
            self.at += 1;
            return Some(());
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.at += 1;
        }
        (self.at - start >= 3).then_some(())
    }

    fn number(&mut self) -> Option<i64> {
        let start = self.at;
        let mut n: i64 = 0;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            n = n.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
            self.at += 1;
        }
        (self.at > start && n <= 1000).then_some(n)
    }

    /// `[+-]hh[:mm[:ss]]` in seconds (west positive, as written).
    fn offset(&mut self) -> Option<i32> {
        let sign = if self.eat(b'-') {
            -1
        } else {
            self.eat(b'+');
            1
        };
        let mut seconds = self.number()? * 3600;
        if self.eat(b':') {
            seconds += self.number()? * 60;
            if self.eat(b':') {
                seconds += self.number()?;
            }
        }
        (seconds <= 167 * 3600).then(|| sign * seconds as i32)
    }

    /// `Mm.w.d[/time]`, `Jn[/time]` or `n[/time]`; the time defaults to 02:00.
    fn rule(&mut self) -> Option<Rule> {
        let day = if self.eat(b'M') {
            let month = self.number()? as u32;
            self.eat(b'.').then_some(())?;
            let week = self.number()? as u32;
            self.eat(b'.').then_some(())?;
            let weekday = self.number()? as u32;
            ((1..=12).contains(&month) && (1..=5).contains(&week) && weekday <= 6).then_some(
                Day::Month {
                    month,
                    week,
                    weekday,
                },
            )?
        } else if self.eat(b'J') {
            let n = self.number()? as u32;
            (1..=365).contains(&n).then_some(Day::Julian1(n))?
        } else {
            let n = self.number()? as u32;
            (n <= 365).then_some(Day::Julian0(n))?
        };
        let time = if self.eat(b'/') {
            i64::from(self.offset()?)
        } else {
            7200
        };
        Some(Rule { day, time })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::sched::{next_due, parse_rfc3339, Schedule};

    fn t(text: &str) -> i64 {
        parse_rfc3339(text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The system's zone, or `None` with a note when tzdata is not installed.
    fn system_zone(name: &str) -> Option<LocalZone> {
        let dir = Path::new(DEFAULT_TZDIR);
        if !dir.join(name).exists() {
            eprintln!("skipped: {DEFAULT_TZDIR}/{name} is missing (install tzdata)");
            return None;
        }
        Some(load_from(name, dir).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn system_zones_give_the_known_offsets() {
        // (zone, instant, seconds east)
        let table = [
            ("Europe/Berlin", "2026-01-15T12:00:00Z", 3600),
            ("Europe/Berlin", "2026-03-29T00:59:59Z", 3600),
            ("Europe/Berlin", "2026-03-29T01:00:00Z", 7200),
            ("Europe/Berlin", "2026-10-25T00:59:59Z", 7200),
            ("Europe/Berlin", "2026-10-25T01:00:00Z", 3600),
            ("Europe/Berlin", "2045-07-01T00:00:00Z", 7200),
            ("Europe/Berlin", "1975-07-01T00:00:00Z", 3600),
            // 1945: Berlin kept double summer time (+3) under Soviet occupation.
            ("Europe/Berlin", "1945-06-01T00:00:00Z", 10_800),
            ("Europe/Berlin", "1990-07-01T00:00:00Z", 7200),
            ("Asia/Shanghai", "2026-01-15T12:00:00Z", 28_800),
            ("Asia/Shanghai", "2026-07-15T12:00:00Z", 28_800),
            ("Asia/Shanghai", "2045-07-01T00:00:00Z", 28_800),
            ("America/New_York", "2026-01-15T12:00:00Z", -18_000),
            ("America/New_York", "2026-03-08T06:59:59Z", -18_000),
            ("America/New_York", "2026-03-08T07:00:00Z", -14_400),
            ("America/New_York", "2026-11-01T05:59:59Z", -14_400),
            ("America/New_York", "2026-11-01T06:00:00Z", -18_000),
            ("America/New_York", "2045-07-01T00:00:00Z", -14_400),
        ];
        for (name, at, want) in table {
            let Some(zone) = system_zone(name) else {
                continue;
            };
            assert_eq!(zone.offset_at_utc(t(at)), want, "{name} at {at}");
        }
    }

    #[test]
    fn a_daily_task_across_berlins_clock_changes() {
        let Some(berlin) = system_zone("Europe/Berlin") else {
            return;
        };
        let daily = Schedule::parse("daily 02:30").unwrap_or_else(|e| panic!("{e}"));
        for (after, want) in [
            ("2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"),
            ("2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z"),
            ("2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"),
        ] {
            assert_eq!(
                next_due(&daily, &berlin, t(after)),
                Some(t(want)),
                "after {after}"
            );
        }
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
    fn names_and_offsets() {
        let dir = Path::new("/nonexistent-zoneinfo");
        assert_eq!(load_from("UTC", dir).ok(), Some(LocalZone::Utc));
        let plus8 = load_from("+08:00", dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plus8.offset_at_utc(0), 28_800);
        let posix = load_from(":CET-1CEST,M3.5.0,M10.5.0/3", dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(posix.offset_at_utc(t("2026-07-01T00:00:00Z")), 7200);
        assert_eq!(posix.offset_at_utc(t("2026-12-01T00:00:00Z")), 3600);
        for (name, message) in [
            (
                "Europe/Berln",
                "unknown time zone `Europe/Berln`: there is no file /nonexistent-zoneinfo/Europe/Berln — check the spelling (e.g. `Europe/Berlin`, `America/New_York`), install the tzdata package, or use `UTC` or an offset such as `+08:00`",
            ),
            (
                "../etc/passwd",
                "`../etc/passwd` is not a time zone — use a name from the zone database such as `Europe/Berlin` or `Asia/Shanghai`, `UTC`, or an offset such as `+08:00`",
            ),
            (
                "+25:00",
                "`+25:00` is not a time zone — use a name from the zone database such as `Europe/Berlin` or `Asia/Shanghai`, `UTC`, or an offset such as `+08:00`",
            ),
        ] {
            match load_from(name, dir) {
                Ok(z) => panic!("{name} loaded as {z:?}"),
                Err(e) => assert_eq!(e.to_string(), message),
            }
        }
    }

    /// A TZif block: header with `version`, one transition at `at` from offset
    /// `before` to `after`, `size`-byte times.
    fn block(version: u8, size: usize, at: i64, before: i32, after: i32) -> Vec<u8> {
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
    fn damaged_files_are_refused_not_panicked_on() {
        let Ok(good) = std::fs::read(Path::new(DEFAULT_TZDIR).join("Europe/Berlin")) else {
            eprintln!("skipped: no {DEFAULT_TZDIR}/Europe/Berlin (install tzdata)");
            return;
        };
        assert!(Tzif::parse(&good).is_ok());
        let missing = load_file(Path::new("/nonexistent-zoneinfo/Europe/Berlin"));
        assert!(matches!(missing, Err(ZoneError::Read { .. })));
        for cut in [0, 3, 10, 44, 60, good.len() / 2] {
            assert!(Tzif::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(
            Tzif::parse(b"not a zone file at all, just text ....................."),
            Err("it does not start with `TZif`")
        );
    }
}
