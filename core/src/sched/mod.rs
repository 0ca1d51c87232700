//! The scheduler's rules: what a schedule says, when it is next
//! due, and whether a task is due now.
//!
//! Decides: how `0 9 * * mon-fri`, `every 30m`, `daily 07:30` and
//! `at 2026-03-29T09:00:00+02:00` are read ([`Schedule::parse`]); the next instant a
//! schedule fires in a time zone ([`next_due`]), with the clock changes resolved as
//! [`zone`] says; and whether a task runs at `now` given its last run ([`due_now`]):
//! after downtime a missed task runs once, not once per missed slot, and a one-off runs
//! once, also if its time passed while the server was down.
//!
//! Also decides what a zone name and a zone file say: [`ZoneName`] reads `UTC`, `+08:00`
//! or a database name, [`Tzif`] a zone file's bytes, [`PosixTz`] the rule in its footer
//! or in `TZ`; all three become a [`LocalZone`].
//!
//! Left to the shell (`mini/src/sched/`): reading the clock, finding
//! and reading the zone database's files (`mini/src/zone.rs`: `$TZDIR`, `TZ`,
//! `/etc/localtime`), the task store (`evolve tasks add|list|rm|run|log` keeps the
//! schedule's [`Display`] text and the last run), the loop inside `evolve serve` that
//! calls [`due_now`] for each task, runs due ones as headless asks and prevents
//! overlapping runs of one task.
//!
//! [`Display`]: core::fmt::Display

mod civil;
mod cron;
mod due;
mod error;
mod local_zone;
mod posix_tz;
mod tzif;
pub mod zone;

pub use civil::{
    civil_from_days, days_from_civil, days_in_month, is_leap, parse_instant, parse_rfc3339,
    weekday, Date,
};
pub use cron::Cron;
pub use due::{due_now, next_due, one_off_pending, SEARCH_YEARS};
pub use error::{BadZoneName, Field, SchedError, TzifError};
pub use local_zone::{LocalZone, ZoneName};
pub use posix_tz::PosixTz;
pub use tzif::Tzif;
pub use zone::{local_to_utc, to_local, FixedOffset, Utc, Zone};

use alloc::string::ToString;
use core::fmt;

/// When a task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// A 5-field cron expression, in the configured time zone.
    Cron(Cron),
    /// A fixed interval after the previous run (or the task's creation), in seconds;
    /// at least [`MIN_INTERVAL`].
    Every {
        /// The interval in seconds.
        seconds: i64,
    },
    /// Every day at a local wall time.
    Daily {
        /// 0–23.
        hour: u32,
        /// 0–59.
        minute: u32,
    },
    /// Once, at an instant (Unix seconds).
    At {
        /// The instant.
        utc: i64,
    },
}

/// The shortest `every` interval: the scheduler checks once a minute, like cron.
pub const MIN_INTERVAL: i64 = 60;

/// The longest `every` interval (366 days); longer ones are better said as cron or `at`.
pub const MAX_INTERVAL: i64 = 366 * civil::DAY;

impl Schedule {
    /// Reads any of the four forms: `every 30m`, `daily 07:30`, `at <RFC 3339>`, or a
    /// 5-field cron expression. The keyword is case-insensitive.
    pub fn parse(text: &str) -> Result<Schedule, SchedError> {
        let text = text.trim();
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        if word.eq_ignore_ascii_case("every") {
            Schedule::every(rest)
        } else if word.eq_ignore_ascii_case("daily") {
            Schedule::daily(rest)
        } else if word.eq_ignore_ascii_case("at") {
            Schedule::at(rest)
        } else {
            Schedule::cron(text)
        }
    }

    /// A 5-field cron expression (`--cron`).
    pub fn cron(expr: &str) -> Result<Schedule, SchedError> {
        Cron::parse(expr).map(Schedule::Cron)
    }

    /// An interval (`--every`): one or more number-unit pairs, units `s`, `m`, `h`, `d`
    /// (`30m`, `2h`, `1h30m`, `90s`), at least one minute and at most 366 days.
    pub fn every(text: &str) -> Result<Schedule, SchedError> {
        let text = text.trim();
        let bad = || SchedError::BadInterval {
            text: text.to_string(),
        };
        if text.is_empty() {
            return Err(bad());
        }
        let mut seconds: i64 = 0;
        let mut digits: Option<i64> = None;
        for c in text.chars() {
            if let Some(d) = c.to_digit(10) {
                let n = digits
                    .unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(i64::from(d));
                digits = Some(n.min(MAX_INTERVAL + 1));
                continue;
            }
            let unit = match c.to_ascii_lowercase() {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => civil::DAY,
                _ => return Err(bad()),
            };
            let n = digits.take().ok_or_else(bad)?;
            seconds = seconds.saturating_add(n.saturating_mul(unit));
        }
        if digits.is_some() {
            return Err(bad());
        }
        if seconds < MIN_INTERVAL {
            return Err(SchedError::IntervalTooShort {
                text: text.to_string(),
            });
        }
        if seconds > MAX_INTERVAL {
            return Err(SchedError::IntervalTooLong {
                text: text.to_string(),
            });
        }
        Ok(Schedule::Every { seconds })
    }

    /// A local time of day `HH:MM` (`--daily`); `7:30` is accepted too.
    pub fn daily(text: &str) -> Result<Schedule, SchedError> {
        let text = text.trim();
        let bad = || SchedError::BadTimeOfDay {
            text: text.to_string(),
        };
        let (h, m) = text.split_once(':').ok_or_else(bad)?;
        let part = |s: &str, max: u32| {
            (matches!(s.len(), 1 | 2) && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u32>().ok())
                .flatten()
                .filter(|&n| n <= max)
        };
        match (part(h, 23), part(m, 59)) {
            (Some(hour), Some(minute)) if m.len() == 2 => Ok(Schedule::Daily { hour, minute }),
            _ => Err(bad()),
        }
    }

    /// A one-off instant (`--at`), as an RFC 3339 timestamp with its offset.
    pub fn at(text: &str) -> Result<Schedule, SchedError> {
        parse_rfc3339(text).map(|utc| Schedule::At { utc })
    }

    /// A one-off instant as a user types it for the configured zone: an RFC 3339
    /// timestamp, or a local date and time without offset (`2026-03-29 09:00`,
    /// `2026-03-29T09:00:00`) read in `zone` — a time in a spring-forward gap is the
    /// first instant after it, a repeated one the first occurrence (see [`zone`]).
    pub fn at_in(text: &str, zone: &dyn Zone) -> Result<Schedule, SchedError> {
        let utc = match civil::parse_timestamp(text)? {
            (wall, Some(offset)) => wall - offset,
            (wall, None) => local_to_utc(zone, wall),
        };
        Ok(Schedule::At { utc })
    }

    /// [`Schedule::parse`] with `at` times allowed without offset, read in `zone`
    /// ([`Schedule::at_in`]); what `evolve tasks add` uses.
    pub fn parse_in(text: &str, zone: &dyn Zone) -> Result<Schedule, SchedError> {
        let trimmed = text.trim();
        match trimmed.split_once(char::is_whitespace) {
            Some((word, rest)) if word.eq_ignore_ascii_case("at") => Schedule::at_in(rest, zone),
            _ => Schedule::parse(trimmed),
        }
    }
}

/// The text [`Schedule::parse`] reads back into the same schedule, for the task store.
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Cron(cron) => write!(f, "{cron}"),
            Schedule::Every { seconds } => {
                f.write_str("every ")?;
                let mut rest = *seconds;
                for (unit, size) in [("d", civil::DAY), ("h", 3600), ("m", 60), ("s", 1)] {
                    if rest >= size {
                        write!(f, "{}{unit}", rest / size)?;
                        rest %= size;
                    }
                }
                Ok(())
            }
            Schedule::Daily { hour, minute } => write!(f, "daily {hour:02}:{minute:02}"),
            Schedule::At { utc } => {
                let days = utc.div_euclid(civil::DAY);
                let secs = utc.rem_euclid(civil::DAY);
                let d = civil_from_days(days);
                write!(
                    f,
                    "at {:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                    d.year,
                    d.month,
                    d.day,
                    secs / 3600,
                    secs / 60 % 60,
                    secs % 60
                )
            }
        }
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tz_tests;
