//! The 5-field cron expression (Vixie cron / POSIX `crontab(5)`): reading it into bit
//! sets and asking whether a local date or time matches.
//!
//! Decides what an expression means: `*`, lists `1,2`, ranges `1-5`, steps `*/15` and
//! `10-50/10` (and `5/15`, meaning `5-59/15`, as cronie and most libraries read it),
//! month and weekday names in any case, 0 and 7 both Sunday. When both day-of-month and
//! day-of-week are restricted, a day matching *either* fires (`crontab(5)`: "If both
//! fields are restricted (i.e., don't start with *), the command will be run when either
//! field matches the current time"); a field starting with `*` (also `*/2`) counts as
//! unrestricted, as in Vixie cron.

use super::civil::{civil_from_days, weekday};
use super::error::{Field, SchedError};
use alloc::string::{String, ToString};
use core::fmt;

/// Month names, `jan` = 1.
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
/// Weekday names, `sun` = 0.
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// A parsed cron expression: one bit per allowed value of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    /// The expression as written (trimmed, single spaces), shown back to the user.
    text: String,
    minutes: u64,
    hours: u32,
    /// Bit d for day d (1–31).
    days: u32,
    /// Bit m for month m (1–12).
    months: u16,
    /// Bit w for weekday w (0–6, Sunday = 0; 7 is folded onto 0).
    weekdays: u8,
    /// Both day fields restricted: a day matching either fires.
    either_day: bool,
}

impl Cron {
    /// Reads a 5-field expression.
    pub fn parse(expr: &str) -> Result<Cron, SchedError> {
        let fields: alloc::vec::Vec<&str> = expr.split_whitespace().collect();
        let text = fields.join(" ");
        if fields.is_empty() {
            return Err(SchedError::Empty);
        }
        if fields.len() != 5 {
            return Err(SchedError::FieldCount {
                expr: text,
                found: fields.len(),
            });
        }
        let mut bits = [0u64; 5];
        for (i, field) in Field::ALL.into_iter().enumerate() {
            bits[i] = parse_field(field, fields[i], &text)?;
        }
        // Sunday is 0 and 7.
        let weekdays = (bits[4] | (bits[4] >> 7)) & 0x7f;
        let restricted = |s: &str| !s.starts_with('*');
        Ok(Cron {
            either_day: restricted(fields[2]) && restricted(fields[4]),
            text,
            minutes: bits[0],
            hours: bits[1] as u32,
            days: bits[2] as u32,
            months: bits[3] as u16,
            weekdays: weekdays as u8,
        })
    }

    /// The same schedule as `daily HH:MM`.
    pub(crate) fn daily(hour: u32, minute: u32) -> Cron {
        Cron {
            text: alloc::format!("{minute} {hour} * * *"),
            minutes: 1 << minute,
            hours: 1 << hour,
            days: !1, // days 1–31
            months: 0x1ffe,
            weekdays: 0x7f,
            either_day: false,
        }
    }

    /// Whether the day `days` after 1970-01-01 (a local date) can fire at all.
    pub(crate) fn matches_day(&self, days: i64) -> bool {
        let date = civil_from_days(days);
        if self.months & (1 << date.month) == 0 {
            return false;
        }
        let dom = self.days & (1 << date.day) != 0;
        let dow = self.weekdays & (1 << weekday(days)) != 0;
        if self.either_day {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// Whether the expression fires in `month` at all on some day of it, ignoring the
    /// weekday — used to skip whole months quickly.
    pub(crate) fn matches_month(&self, month: u32) -> bool {
        self.months & (1 << month) != 0
    }

    /// The first allowed hour ≥ `from`, if any.
    pub(crate) fn hour_from(&self, from: u32) -> Option<u32> {
        next_bit(u64::from(self.hours), from, 23)
    }

    /// The first allowed minute ≥ `from`, if any.
    pub(crate) fn minute_from(&self, from: u32) -> Option<u32> {
        next_bit(self.minutes, from, 59)
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The lowest set bit ≥ `from` and ≤ `max`.
fn next_bit(bits: u64, from: u32, max: u32) -> Option<u32> {
    if from > max {
        return None;
    }
    let rest = bits >> from;
    (rest != 0)
        .then(|| from + rest.trailing_zeros())
        .filter(|&v| v <= max)
}

/// One field: a comma-separated list of `*`, `N`, `N-M`, each with an optional `/S`.
fn parse_field(field: Field, text: &str, expr: &str) -> Result<u64, SchedError> {
    let (lo, hi) = field.range();
    let mut bits = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step = number(field, step, expr)?;
                if step == 0 {
                    return Err(SchedError::ZeroStep {
                        field,
                        expr: expr.to_string(),
                    });
                }
                (range, Some(step))
            }
            None => (item, None),
        };
        let (start, end) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (value(field, a, expr)?, value(field, b, expr)?);
            if a > b {
                return Err(SchedError::BackwardsRange {
                    field,
                    text: range.to_string(),
                    expr: expr.to_string(),
                });
            }
            (a, b)
        } else {
            let a = value(field, range, expr)?;
            // `5/15` means from 5 to the end in steps of 15.
            (a, if step.is_some() { hi } else { a })
        };
        let step = step.unwrap_or(1);
        let mut v = u64::from(start);
        while v <= u64::from(end) {
            bits |= 1 << v;
            let Some(next) = v.checked_add(step) else {
                break;
            };
            v = next;
        }
    }
    Ok(bits)
}

/// A number or, for months and weekdays, a name; checked against the field's range.
fn value(field: Field, text: &str, expr: &str) -> Result<u32, SchedError> {
    let names: &[&str] = match field {
        Field::Month => &MONTHS,
        Field::DayOfWeek => &WEEKDAYS,
        _ => &[],
    };
    let first = if field == Field::Month { 1 } else { 0 };
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(i as u32 + first);
    }
    let n = number(field, text, expr)?;
    let (lo, hi) = field.range();
    if n < u64::from(lo) || n > u64::from(hi) {
        return Err(SchedError::OutOfRange {
            field,
            value: n,
            expr: expr.to_string(),
        });
    }
    Ok(n as u32)
}

/// Plain decimal digits (no sign, no spaces); too many digits count as out of range.
fn number(field: Field, text: &str, expr: &str) -> Result<u64, SchedError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SchedError::BadValue {
            field,
            text: text.to_string(),
            expr: expr.to_string(),
        });
    }
    Ok(text.parse::<u64>().unwrap_or(u64::MAX))
}
