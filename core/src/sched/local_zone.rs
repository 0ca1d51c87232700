//! The zone a user names (`[scheduler] time_zone`, `TZ`, the `get_time` tool) and what
//! the name means.
//!
//! Decides how a name is read ([`ZoneName::parse`]): `UTC` / `Z` and fixed offsets
//! (`+08:00`) are zones at once; anything else is a name for the zone database
//! (`Europe/Berlin`) unless it could escape the database's folder (absolute, empty, `.`
//! or `..` parts). A database name with no file may still be a POSIX TZ string
//! ([`LocalZone::posix`]). Which folder the database lives in and reading its file are
//! the shell's work; the file's bytes come back here through [`Tzif::parse`].

use alloc::string::ToString;

use super::error::BadZoneName;
use super::posix_tz::PosixTz;
use super::tzif::Tzif;
use super::zone::{FixedOffset, Zone};

/// A time zone the scheduler and `get_time` can use.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalZone {
    /// UTC (also `Z`, `Etc/UTC` when written as `UTC`).
    Utc,
    /// A fixed offset such as `+08:00`.
    Fixed(FixedOffset),
    /// A zone read from a TZif file (or a POSIX TZ string alone).
    Tzif(Tzif),
}

impl LocalZone {
    /// A name that named no zone file, read as a POSIX TZ string
    /// (`CET-1CEST,M3.5.0,M10.5.0/3`), if it is one.
    pub fn posix(name: &str) -> Option<LocalZone> {
        PosixTz::parse(name).map(|rule| LocalZone::Tzif(Tzif::from(rule)))
    }
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

/// What a configured zone name asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum ZoneName<'a> {
    /// A zone known without the database: UTC or a fixed offset.
    Zone(LocalZone),
    /// A name to look up under the zone database's folder, safe to join to it.
    Database(&'a str),
}

impl<'a> ZoneName<'a> {
    /// Reads `UTC`, `+08:00`, or a database name. Surrounding space and a leading `:`
    /// (POSIX `TZ=:Europe/Berlin`) are ignored.
    pub fn parse(spec: &'a str) -> Result<ZoneName<'a>, BadZoneName> {
        let spec = spec.trim();
        let spec = spec.strip_prefix(':').unwrap_or(spec);
        if spec.eq_ignore_ascii_case("utc") || spec.eq_ignore_ascii_case("z") {
            return Ok(ZoneName::Zone(LocalZone::Utc));
        }
        if spec.starts_with(['+', '-']) {
            return FixedOffset::parse(spec)
                .map(|offset| ZoneName::Zone(LocalZone::Fixed(offset)))
                .map_err(|_| BadZoneName(spec.to_string()));
        }
        let bad = spec.is_empty()
            || spec.starts_with('/')
            || spec
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..");
        if bad {
            return Err(BadZoneName(spec.to_string()));
        }
        Ok(ZoneName::Database(spec))
    }
}
