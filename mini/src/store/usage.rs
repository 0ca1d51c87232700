//! What the models' work added up to, read from the turn records (prompt and completion
//! tokens as the model server reported them, by role: the main model's answers and
//! tool planning, the cheap model's work after them): per day, per session and per
//! scheduled task, and what the day has used against `[model] daily_tokens`. Turning
//! tokens into money and presenting the sums is the callers' (`evolve usage`,
//! `GET /v1/usage`).

use std::collections::HashMap;

use evolve_core::{Timestamp, DAY};
use serde::Serialize;
use serde_json::Value;

use super::{Store, StoreError};

/// Prompt and completion tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Tokens {
    pub fn add(&mut self, other: Tokens) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }

    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// `usage.main` / `usage.cheap` of a turn record (0 for what it lacks).
    fn of(record: &Value, role: &str) -> Tokens {
        let n = |k: &str| record["usage"][role][k].as_u64().unwrap_or(0);
        Tokens {
            prompt_tokens: n("prompt_tokens"),
            completion_tokens: n("completion_tokens"),
        }
    }
}

/// The sums over some turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sum {
    pub turns: u64,
    pub main: Tokens,
    pub cheap: Tokens,
}

impl Sum {
    pub fn add(&mut self, main: Tokens, cheap: Tokens) {
        self.turns += 1;
        self.main.add(main);
        self.cheap.add(cheap);
    }

    /// Every token, both models.
    pub fn total(&self) -> u64 {
        self.main.total() + self.cheap.total()
    }
}

/// One session's sums.
#[derive(Debug, Clone)]
pub struct SessionSum {
    pub session: String,
    pub title: String,
    pub sum: Sum,
}

/// One scheduled task's sums over its recorded runs.
#[derive(Debug, Clone)]
pub struct TaskSum {
    pub task: u64,
    /// The task's question, on one line.
    pub name: String,
    /// Runs with a turn record.
    pub runs: u64,
    pub sum: Sum,
}

/// Everything the turn records add up to.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Turns since the start of the local day.
    pub today: Sum,
    pub total: Sum,
    /// Per local day, newest first, `days` of them (today first, days without a turn
    /// included): the day's start and its sums.
    pub days: Vec<(Timestamp, Sum)>,
    /// Most tokens first.
    pub sessions: Vec<SessionSum>,
    /// Most tokens first.
    pub tasks: Vec<TaskSum>,
}

/// The start of the local day that `now` is in, for a zone `offset` seconds east of UTC.
pub fn day_start(now: i64, offset: i64) -> i64 {
    let local = now + offset;
    local - local.rem_euclid(DAY) - offset
}

/// The offset east of UTC of the system's zone at `at` (0, UTC, when it cannot be read).
fn offset_at(at: Timestamp) -> i64 {
    match crate::zone::system() {
        Ok(zone) => {
            use evolve_core::sched::Zone;
            i64::from(zone.offset_at_utc(at))
        }
        Err(e) => {
            log::warn!("{e}; days are counted in UTC");
            0
        }
    }
}

/// The start of the local day (the system's zone) that `now` is in: where "today"
/// begins for usage and the daily budget.
pub fn today_start(now: Timestamp) -> Timestamp {
    day_start(now, offset_at(now))
}

/// `2026-03-01`: the local date of a day that starts at `start`.
pub fn local_date(start: Timestamp) -> String {
    super::format_date(start + offset_at(start))
}

impl Store {
    /// Sums every turn record of every session; a turn counts on the day its first
    /// message was stored, the days starting at `today_from` and going back `days`.
    pub fn ledger(&self, today_from: Timestamp, days: usize) -> Result<Ledger, StoreError> {
        let mut ledger = Ledger {
            days: (0..days as i64)
                .map(|k| (today_from - k * DAY, Sum::default()))
                .collect(),
            ..Ledger::default()
        };
        let mut per_turn: HashMap<(String, u64), (Tokens, Tokens)> = HashMap::new();
        for session in self.sessions()? {
            let records = self.turns(&session.id)?;
            if records.is_empty() {
                continue;
            }
            let messages = self.messages(&session.id, 1)?;
            let mut sum = Sum::default();
            for (turn, json) in records {
                let Ok(record) = serde_json::from_str::<Value>(&json) else {
                    log::warn!("the record of turn {turn} of {} cannot be read", session.id);
                    continue;
                };
                let (m, c) = (Tokens::of(&record, "main"), Tokens::of(&record, "cheap"));
                sum.add(m, c);
                ledger.total.add(m, c);
                let at = messages
                    .iter()
                    .find(|msg| msg.turn == turn)
                    .map_or(session.updated_at, |msg| msg.at);
                if at >= today_from {
                    ledger.today.add(m, c);
                }
                // Days back from today: 0 for today (and anything later), 1 yesterday, …
                let back = if at >= today_from {
                    0
                } else {
                    (today_from - at + DAY - 1) / DAY
                };
                if let Some((_, day)) = ledger.days.get_mut(back as usize) {
                    day.add(m, c);
                }
                per_turn.insert((session.id.clone(), turn), (m, c));
            }
            ledger.sessions.push(SessionSum {
                session: session.id,
                title: session.title,
                sum,
            });
        }
        ledger
            .sessions
            .sort_by_key(|s| std::cmp::Reverse(s.sum.total()));
        for task in self.tasks()? {
            let mut sum = Sum::default();
            let mut runs = 0;
            for run in self.task_runs(task.id, usize::MAX)? {
                let Some(turn) = run.turn else { continue };
                if let Some((m, c)) = per_turn.get(&(run.session.to_string(), turn)) {
                    sum.add(*m, *c);
                    runs += 1;
                }
            }
            ledger.tasks.push(TaskSum {
                task: task.id,
                name: evolve_core::text::one_line(&task.question, 60),
                runs,
                sum,
            });
        }
        ledger
            .tasks
            .sort_by_key(|t| std::cmp::Reverse(t.sum.total()));
        Ok(ledger)
    }

    /// Tokens (both models) all recorded runs of task `task` used.
    pub fn task_tokens(&self, task: u64) -> Result<u64, StoreError> {
        let mut used = 0;
        for run in self.task_runs(task, usize::MAX)? {
            let Some(turn) = run.turn else { continue };
            let record = self
                .turns(&run.session)?
                .into_iter()
                .find(|(n, _)| *n == turn);
            if let Some(record) =
                record.and_then(|(_, json)| serde_json::from_str::<Value>(&json).ok())
            {
                used += Tokens::of(&record, "main").total() + Tokens::of(&record, "cheap").total();
            }
        }
        Ok(used)
    }

    /// Tokens (both models) of the turns that began at or after `from`: what a day's
    /// budget has used. Reads only the sessions changed since.
    pub fn tokens_since(&self, from: Timestamp) -> Result<u64, StoreError> {
        let mut used = 0;
        for session in self.sessions()? {
            if session.updated_at < from {
                continue;
            }
            let records = self.turns(&session.id)?;
            let messages = self.messages(&session.id, 1)?;
            for (turn, json) in records {
                let at = messages
                    .iter()
                    .find(|msg| msg.turn == turn)
                    .map_or(session.updated_at, |msg| msg.at);
                if at < from {
                    continue;
                }
                if let Ok(record) = serde_json::from_str::<Value>(&json) {
                    used +=
                        Tokens::of(&record, "main").total() + Tokens::of(&record, "cheap").total();
                }
            }
        }
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_day_starts_at_local_midnight() {
        // (now, offset east of UTC, start of its local day)
        let table = [
            (10 * DAY + 3_600, 0, 10 * DAY),
            (10 * DAY, 0, 10 * DAY),
            (10 * DAY - 1, 0, 9 * DAY),
            // 23:00 UTC is 07:00 the next day at +08:00.
            (10 * DAY - 3_600, 8 * 3_600, 10 * DAY - 8 * 3_600),
            // 01:00 UTC is 20:00 the day before at −05:00.
            (10 * DAY + 3_600, -5 * 3_600, 9 * DAY + 5 * 3_600),
        ];
        for (now, offset, want) in table {
            assert_eq!(day_start(now, offset), want, "{now} at {offset}");
            assert!(day_start(now, offset) <= now && now - day_start(now, offset) < DAY);
        }
    }
}
