//! What Evolve says to a person, as a stable code with the values it names.
//!
//! Every error body of the API carries one beside its English `message` (`error.said`),
//! and so do the model check's cause and the Settings test's checks (`said` beside the
//! text): a page says it in its own language (the web UI's `srv_*` strings, with the
//! `params` put in) and shows the English text only for a code it does not know. A
//! message without a code of its own gets its status's (`not_found`, with the English
//! text as its `message` parameter). The codes are [`Code::ALL`]: a test holds the web
//! UI's 中文 to every one of them. Who says what decides its code (a model error:
//! `LlmError::said`; a schedule: [`schedule`]); this module only names them.

use evolve_core::sched::{Field, SchedError};
use serde_json::{json, Map, Value};

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $s:literal,)*) => {
        /// A message's stable code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Code {
            $($(#[$doc])* $name,)*
        }

        impl Code {
            /// Every code the server sends (the tests hold the UI's strings to them).
            #[cfg(test)]
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];

            /// The code as sent (`no_skill`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$name => $s,)*
                }
            }
        }
    };
}

codes! {
    /// Any 400 without a code of its own (`message`).
    InvalidRequest = "invalid_request",
    /// 401 (`message`).
    Unauthorized = "unauthorized",
    /// 403 (`message`).
    Forbidden = "forbidden",
    /// 404 (`message`).
    NotFound = "not_found",
    /// 405 (`message`).
    MethodNotAllowed = "method_not_allowed",
    /// 409 (`message`).
    Conflict = "conflict",
    /// 413 (`message`).
    TooLarge = "too_large",
    /// 429 (`message`).
    TooManyRequests = "too_many_requests",
    /// Any 5xx (`message`).
    ServerError = "server_error",
    /// The model cannot be reached (`url`, `why`).
    ModelUnreachable = "model_unreachable",
    /// The model did not answer in time (`url`, `phase`).
    ModelTimeout = "model_timeout",
    /// The model's server answered an error status (`url`, `status`, `message`).
    ModelStatus = "model_status",
    /// The model's server answered something that is not a chat completion (`url`, `detail`).
    ModelProtocol = "model_protocol",
    /// The request to the model was cancelled.
    ModelCancelled = "model_cancelled",
    /// A turn of the chat is running (`session`).
    SessionBusy = "session_busy",
    /// Today's token budget is spent (`used`, `limit`).
    BudgetSpent = "budget_spent",
    /// A task's own token budget is spent (`task`, `used`, `limit`).
    TaskBudgetSpent = "task_budget_spent",
    /// The turn rated has no answer (`turn`).
    NothingToRate = "nothing_to_rate",
    /// An upload's name is taken in the workspace (`path`).
    FileExists = "file_exists",
    /// A task's question is empty.
    QuestionEmpty = "question_empty",
    /// The memory was deleted (`id`).
    MemoryDeleted = "memory_deleted",
    /// No skill of that name (`name`).
    NoSkill = "no_skill",
    /// No pairing code of that name waits (`code`).
    PairingUnknown = "pairing_unknown",
    /// The pairing code expired (`code`).
    PairingExpired = "pairing_expired",
    /// The channel is not configured (`channel`).
    ChannelNotConfigured = "channel_not_configured",
    /// The user or group is not paired on the channel (`user`, `channel`).
    NotPaired = "not_paired",
    /// A check of the model server: who answered, in how long (`who`, `ms`).
    CheckAnswered = "check_answered",
    /// The server's model list (`count`, `models`).
    CheckModels = "check_models",
    /// The model is in the server's list (`model`).
    CheckServed = "check_served",
    /// The model is not in the server's list (`model`).
    CheckNotListed = "check_not_listed",
    /// The model called the test tool (`model`).
    CheckToolCalled = "check_tool_called",
    /// The model called the test tool, written as text (`model`).
    CheckToolAsText = "check_tool_as_text",
    /// The model called another tool (`model`, `tool`).
    CheckWrongTool = "check_wrong_tool",
    /// The model answered with text instead of a tool call (`model`).
    CheckNoToolCall = "check_no_tool_call",
    /// An empty schedule.
    ScheduleEmpty = "schedule_empty",
    /// A cron expression without five fields (`expr`, `found`).
    CronFields = "cron_fields",
    /// A cron number out of its field's range (`field`, `value`, `lo`, `hi`, `expr`).
    CronRange = "cron_range",
    /// A cron list item that is empty (`field`, `expr`).
    CronEmptyItem = "cron_empty_item",
    /// A cron value that is not a number or name (`field`, `text`, `expr`).
    CronValue = "cron_value",
    /// A cron range that runs backwards (`field`, `text`, `expr`).
    CronBackwards = "cron_backwards",
    /// A cron step of 0 (`field`, `expr`).
    CronZeroStep = "cron_zero_step",
    /// `every` without an interval.
    IntervalMissing = "interval_missing",
    /// `every` with something that is not an interval (`text`).
    IntervalBad = "interval_bad",
    /// An interval below the scheduler's resolution (`text`).
    IntervalShort = "interval_short",
    /// An interval longer than a year (`text`).
    IntervalLong = "interval_long",
    /// `daily` without a time of day.
    TimeMissing = "time_missing",
    /// Not a time of day HH:MM (`text`).
    TimeBad = "time_bad",
    /// `at` without a date and time.
    TimestampMissing = "timestamp_missing",
    /// Not an RFC 3339 timestamp (`text`, `problem`).
    TimestampBad = "timestamp_bad",
    /// Not a UTC offset (`text`).
    OffsetBad = "offset_bad",
}

/// A message as a code and the values its text names.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub code: Code,
    pub params: Map<String, Value>,
}

impl Said {
    /// `code` with `params` (a JSON object; anything else is no parameter).
    pub fn new(code: Code, params: Value) -> Said {
        let params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Said { code, params }
    }

    /// A message with no code of its own: its status's, the text as `message`.
    pub fn status(status: u16, message: &str) -> Said {
        let code = match status {
            401 => Code::Unauthorized,
            403 => Code::Forbidden,
            404 => Code::NotFound,
            405 => Code::MethodNotAllowed,
            409 => Code::Conflict,
            413 => Code::TooLarge,
            429 => Code::TooManyRequests,
            s if s >= 500 => Code::ServerError,
            _ => Code::InvalidRequest,
        };
        Said::new(code, json!({ "message": message }))
    }

    /// As sent: `{"code": …, "params": {…}}`.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code.as_str(), "params": self.params})
    }
}

/// A schedule that could not be read. `field` is sent as a key (`day_of_week`).
pub fn schedule(e: &SchedError) -> Said {
    let key = |f: &Field| match f {
        Field::Minute => "minute",
        Field::Hour => "hour",
        Field::DayOfMonth => "day_of_month",
        Field::Month => "month",
        Field::DayOfWeek => "day_of_week",
    };
    match e {
        SchedError::Empty => Said::new(Code::ScheduleEmpty, json!({})),
        SchedError::FieldCount { expr, found } => {
            Said::new(Code::CronFields, json!({"expr": expr, "found": found}))
        }
        SchedError::OutOfRange { field, value, expr } => {
            let (lo, hi) = field.range();
            Said::new(
                Code::CronRange,
                json!({"field": key(field), "value": value, "lo": lo, "hi": hi, "expr": expr}),
            )
        }
        SchedError::BadValue { field, text, expr } if text.is_empty() => Said::new(
            Code::CronEmptyItem,
            json!({"field": key(field), "expr": expr}),
        ),
        SchedError::BadValue { field, text, expr } => Said::new(
            Code::CronValue,
            json!({"field": key(field), "text": text, "expr": expr}),
        ),
        SchedError::BackwardsRange { field, text, expr } => Said::new(
            Code::CronBackwards,
            json!({"field": key(field), "text": text, "expr": expr}),
        ),
        SchedError::ZeroStep { field, expr } => Said::new(
            Code::CronZeroStep,
            json!({"field": key(field), "expr": expr}),
        ),
        SchedError::BadInterval { text } if text.is_empty() => {
            Said::new(Code::IntervalMissing, json!({}))
        }
        SchedError::BadInterval { text } => Said::new(Code::IntervalBad, json!({"text": text})),
        SchedError::IntervalTooShort { text } => {
            Said::new(Code::IntervalShort, json!({"text": text}))
        }
        SchedError::IntervalTooLong { text } => {
            Said::new(Code::IntervalLong, json!({"text": text}))
        }
        SchedError::BadTimeOfDay { text } if text.is_empty() => {
            Said::new(Code::TimeMissing, json!({}))
        }
        SchedError::BadTimeOfDay { text } => Said::new(Code::TimeBad, json!({"text": text})),
        SchedError::BadTimestamp { text, .. } if text.is_empty() => {
            Said::new(Code::TimestampMissing, json!({}))
        }
        SchedError::BadTimestamp { text, problem } => Said::new(
            Code::TimestampBad,
            json!({"text": text, "problem": problem}),
        ),
        SchedError::BadOffset { text } => Said::new(Code::OffsetBad, json!({"text": text})),
    }
}

#[cfg(test)]
#[path = "said_tests.rs"]
mod tests;
