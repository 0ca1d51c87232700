//! Why a schedule or a time zone was rejected: every message names the part that is
//! wrong, the whole input and a schedule (or zone) that would work.

use alloc::string::String;
use core::fmt;

/// One of the five fields of a cron expression, in their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// 0–59.
    Minute,
    /// 0–23.
    Hour,
    /// 1–31.
    DayOfMonth,
    /// 1–12 or `jan`–`dec`.
    Month,
    /// 0–7 (0 and 7 are Sunday) or `sun`–`sat`.
    DayOfWeek,
}

impl Field {
    /// The fields in the order a cron expression writes them.
    pub const ALL: [Field; 5] = [
        Field::Minute,
        Field::Hour,
        Field::DayOfMonth,
        Field::Month,
        Field::DayOfWeek,
    ];

    /// The smallest and largest value a user may write (7 for Sunday included).
    pub fn range(self) -> (u32, u32) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 7),
        }
    }

    /// A valid expression that uses this field, for the error messages.
    fn example(self) -> &'static str {
        match self {
            Field::Minute => "`*/15 * * * *` (every 15 minutes)",
            Field::Hour => "`0 9 * * *` (09:00 every day)",
            Field::DayOfMonth => "`0 9 1,15 * *` (09:00 on the 1st and the 15th)",
            Field::Month => "`0 9 1 jan,jul *` (09:00 on 1 January and 1 July)",
            Field::DayOfWeek => "`0 9 * * mon-fri` (09:00 on weekdays)",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day of month",
            Field::Month => "month",
            Field::DayOfWeek => "day of week",
        })
    }
}

/// Why a schedule could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedError {
    /// Nothing was given.
    Empty,
    /// A cron expression without exactly five fields.
    FieldCount {
        /// The expression.
        expr: String,
        /// How many fields it has.
        found: usize,
    },
    /// A number outside its field's range.
    OutOfRange {
        /// The field.
        field: Field,
        /// The number as read.
        value: u64,
        /// The whole expression.
        expr: String,
    },
    /// Text that is neither a number nor a name the field knows.
    BadValue {
        /// The field.
        field: Field,
        /// The offending part (empty for `1,,2`).
        text: String,
        /// The whole expression.
        expr: String,
    },
    /// A range whose start is after its end (`5-1`).
    BackwardsRange {
        /// The field.
        field: Field,
        /// The range as written.
        text: String,
        /// The whole expression.
        expr: String,
    },
    /// A step of 0 (`*/0`).
    ZeroStep {
        /// The field.
        field: Field,
        /// The whole expression.
        expr: String,
    },
    /// An `every` interval that is not a number and a unit.
    BadInterval {
        /// The interval as written.
        text: String,
    },
    /// An `every` interval below one minute (the scheduler's resolution).
    IntervalTooShort {
        /// The interval as written.
        text: String,
    },
    /// An `every` interval above a year.
    IntervalTooLong {
        /// The interval as written.
        text: String,
    },
    /// A `daily` time that is not HH:MM.
    BadTimeOfDay {
        /// The time as written.
        text: String,
    },
    /// An `at` time that is not an RFC 3339 timestamp.
    BadTimestamp {
        /// The timestamp as written.
        text: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A fixed UTC offset that is not `+HH:MM`.
    BadOffset {
        /// The offset as written.
        text: String,
    },
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedError::Empty => write!(
                f,
                "the schedule is empty — give a cron expression such as `0 9 * * mon-fri`, \
                 `every 30m`, `daily 07:30` or `at 2026-03-29T09:00:00+02:00`"
            ),
            SchedError::FieldCount { expr, found } => write!(
                f,
                "a cron expression has 5 fields (minute hour day-of-month month \
                 day-of-week), `{expr}` has {found} — e.g. `30 7 * * mon-fri` (07:30 on weekdays)"
            ),
            SchedError::OutOfRange { field, value, expr } => {
                let (lo, hi) = field.range();
                write!(
                    f,
                    "{field} {value} is out of range {lo}–{hi} in `{expr}` — e.g. {}",
                    field.example()
                )
            }
            SchedError::BadValue { field, text, expr } if text.is_empty() => write!(
                f,
                "the {field} field has an empty list item in `{expr}` — e.g. {}",
                field.example()
            ),
            SchedError::BadValue { field, text, expr } => {
                write!(f, "{field} `{text}` is not a number")?;
                match field {
                    Field::Month => write!(f, " or month name (jan–dec)")?,
                    Field::DayOfWeek => write!(f, " or weekday name (sun–sat)")?,
                    _ => {}
                }
                write!(f, " in `{expr}` — e.g. {}", field.example())
            }
            SchedError::BackwardsRange { field, text, expr } => write!(
                f,
                "the {field} range `{text}` runs backwards in `{expr}` — write the smaller \
                 value first or a list, e.g. {}",
                field.example()
            ),
            SchedError::ZeroStep { field, expr } => write!(
                f,
                "the {field} step `/0` in `{expr}` never advances — use a step of 1 or \
                 more, e.g. {}",
                Field::Minute.example()
            ),
            SchedError::BadInterval { text } if text.is_empty() => write!(
                f,
                "`every` needs an interval: a number and a unit s, m, h or d, e.g. \
                 `every 30m`, `every 2h`, `every 1h30m`, `every 1d`"
            ),
            SchedError::BadTimeOfDay { text } if text.is_empty() => write!(
                f,
                "`daily` needs a time of day HH:MM between 00:00 and 23:59 — e.g. `daily 07:30`"
            ),
            SchedError::BadTimestamp { text, .. } if text.is_empty() => write!(
                f,
                "`at` needs a date and time — e.g. `at {}`",
                super::civil::RFC3339_EXAMPLE
            ),
            SchedError::BadInterval { text } => write!(
                f,
                "`{text}` is not an interval — write a number and a unit s, m, h or d, \
                 e.g. `every 30m`, `every 2h`, `every 1h30m`, `every 1d`"
            ),
            SchedError::IntervalTooShort { text } => write!(
                f,
                "`every {text}` is below the scheduler's resolution of one minute — e.g. `every 1m`"
            ),
            SchedError::IntervalTooLong { text } => write!(
                f,
                "`every {text}` is longer than a year — use a cron expression such as \
                 `0 9 1 jan *` (yearly) or `at 2027-01-01T09:00:00+01:00` (once)"
            ),
            SchedError::BadTimeOfDay { text } => write!(
                f,
                "`{text}` is not a time of day HH:MM between 00:00 and 23:59 — e.g. `daily 07:30`"
            ),
            SchedError::BadTimestamp { text, problem } => write!(
                f,
                "`{text}` is not an RFC 3339 timestamp: {problem} — e.g. `{}`",
                super::civil::RFC3339_EXAMPLE
            ),
            SchedError::BadOffset { text } => write!(
                f,
                "`{text}` is not a UTC offset — write `UTC` or `+HH:MM` / `-HH:MM` up to \
                 ±23:59, e.g. `+08:00`"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SchedError {}

/// A configured zone that cannot name a zone: empty, absolute, with an empty, `.` or
/// `..` part, or an offset beyond ±23:59. Holds the name as given (without a leading
/// `:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadZoneName(pub String);

impl fmt::Display for BadZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a time zone — use a name from the zone database such as \
             `Europe/Berlin` or `Asia/Shanghai`, `UTC`, or an offset such as `+08:00`",
            self.0
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BadZoneName {}

/// Why bytes are not a usable TZif file; the message is what the shell puts in
/// parentheses after the file's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TzifError {
    /// The bytes end inside a header or a data block.
    CutShort,
    /// The magic `TZif` is missing.
    NotTzif,
    /// A version byte other than 0, `2`, `3` or `4`.
    UnknownVersion,
    /// A header with no local time types (RFC 8536 requires one).
    NoLocalTimeTypes,
    /// Transition times that do not strictly ascend.
    TransitionsOutOfOrder,
    /// A UTC offset beyond ±26 hours.
    OffsetOutOfRange,
    /// A transition whose local time type index is past the types.
    MissingLocalTimeType,
}

impl fmt::Display for TzifError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TzifError::CutShort => "the file is cut short",
            TzifError::NotTzif => "it does not start with `TZif`",
            TzifError::UnknownVersion => "unknown TZif version",
            TzifError::NoLocalTimeTypes => "it has no local time types",
            TzifError::TransitionsOutOfOrder => "its transitions are not in order",
            TzifError::OffsetOutOfRange => "a UTC offset is out of range",
            TzifError::MissingLocalTimeType => "a transition names a missing local time type",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for TzifError {}
