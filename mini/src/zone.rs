//! Time zones from the system's zone database, for the core's `Zone` trait: the
//! scheduler's `[scheduler] time_zone` and the `get_time` tool read zones here, so both
//! know the same names.
//!
//! Finds a configured zone's file: a database name such as `Europe/Berlin` under
//! `$TZDIR` or [`DEFAULT_TZDIR`]; with no zone configured, `$TZ` or `/etc/localtime`.
//! What a name means (`UTC`, `+08:00`, a safe database name, a POSIX TZ string) and what
//! a zone file's bytes say are the core's rules (`evolve_core::sched`: `ZoneName`,
//! `Tzif`, `PosixTz`, `LocalZone`); this module only reads the files and the
//! environment and says which file failed.

use std::fmt;
use std::path::{Path, PathBuf};

pub use evolve_core::sched::LocalZone;
use evolve_core::sched::{BadZoneName, Tzif, TzifError, ZoneName};

/// Where zone files live when `$TZDIR` is not set (Debian's tzdata, most Unixes).
pub const DEFAULT_TZDIR: &str = "/usr/share/zoneinfo";

/// Why a zone could not be loaded; every message names the zone and the file.
#[derive(Debug)]
pub enum ZoneError {
    /// The name contains `..`, is absolute, or is empty.
    BadName(BadZoneName),
    /// No file for the name.
    Unknown { name: String, path: PathBuf },
    /// The file exists but could not be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a TZif file, or a damaged one.
    Invalid { path: PathBuf, problem: TzifError },
}

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZoneError::BadName(bad) => write!(f, "{bad}"),
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

impl From<BadZoneName> for ZoneError {
    fn from(bad: BadZoneName) -> ZoneError {
        ZoneError::BadName(bad)
    }
}

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
    from_file(&bytes, path.to_path_buf())
}

/// [`load`] with the zone directory given. A leading `:` (POSIX `TZ=:Europe/Berlin`)
/// is ignored; a name with no file that reads as a POSIX TZ string
/// (`CET-1CEST,M3.5.0,M10.5.0/3`) is used as one.
pub fn load_from(spec: &str, dir: &Path) -> Result<LocalZone, ZoneError> {
    let name = match ZoneName::parse(spec)? {
        ZoneName::Zone(zone) => return Ok(zone),
        ZoneName::Database(name) => name,
    };
    let path = dir.join(name);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return LocalZone::posix(name).ok_or_else(|| ZoneError::Unknown {
                name: name.to_string(),
                path,
            });
        }
        Err(source) => return Err(ZoneError::Read { path, source }),
    };
    from_file(&bytes, path)
}

/// The zone in a file's bytes, or why `path` is not a usable zone file.
fn from_file(bytes: &[u8], path: PathBuf) -> Result<LocalZone, ZoneError> {
    Tzif::parse(bytes)
        .map(LocalZone::Tzif)
        .map_err(|problem| ZoneError::Invalid { path, problem })
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::sched::{next_due, parse_rfc3339, Schedule, Zone};

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
    }

    /// A file that is no zone file, read directly or by its name in the database's
    /// folder: the error names the file, the core's reason and what to do.
    #[test]
    fn a_file_that_is_no_zone_is_named_in_the_error() {
        let dir = crate::testing::TempDir::new("zone");
        std::fs::write(
            dir.path().join("Notes"),
            "not a zone file at all, just text .....................",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("Notes");
        let want = format!(
            "{} is not a usable time zone file (it does not start with `TZif`) — \
             reinstall tzdata or use `UTC` or an offset such as `+08:00`",
            path.display()
        );
        for loaded in [load_file(&path), load_from("Notes", dir.path())] {
            match loaded {
                Ok(z) => panic!("loaded as {z:?}"),
                Err(e) => assert_eq!(e.to_string(), want),
            }
        }
    }
}
