//! POSIX TZ strings as found in TZif footers and the `TZ` variable: `CST-8`,
//! `CET-1CEST,M3.5.0,M10.5.0/3`, `EST5EDT,M3.2.0,M11.1.0`, `<+0330>-3:30`.
//!
//! Decides which offset such a rule gives at an instant: standard time, or daylight time
//! between the start rule (in standard local time) and the end rule (in daylight local
//! time), across the new year in the southern hemisphere. Where the string comes from
//! (a zone file's footer, `$TZ`) is the caller's business.

use super::civil::{civil_from_days, days_from_civil, is_leap, weekday, Date};
use super::zone::Zone;

/// A zone read from a POSIX TZ string. Offsets here are seconds *east* (the string itself
/// counts west).
#[derive(Debug, Clone, PartialEq)]
pub struct PosixTz {
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
    /// Reads a TZ string; `None` when it is not one (a standard-time name of at least
    /// three letters or `<…>`, an offset, and for daylight time a name, an optional
    /// offset and exactly two rules).
    pub fn parse(text: &str) -> Option<PosixTz> {
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

    /// The standard-time offset, seconds east: what applies before the first transition
    /// of a zone that is this rule alone.
    pub(super) fn std_offset(&self) -> i32 {
        self.std
    }
}

impl Zone for PosixTz {
    fn offset_at_utc(&self, utc: i64) -> i32 {
        let Some((dst, start, end)) = self.dst else {
            return self.std;
        };
        let year = civil_from_days((utc + i64::from(self.std)).div_euclid(86_400)).year;
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
