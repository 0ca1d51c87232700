//! `evolve usage`: the model work the turn records counted (prompt and completion
//! tokens, as the model server reported them), summed for today, per session and per
//! model — the main model (answers, tool planning) and the cheap one (titles,
//! memories, grades, summaries). A turn records its usage by role; the model names
//! shown are the ones configured now.

use std::io::Write;

use argh::FromArgs;
use serde::Serialize;
use serde_json::Value;

use crate::cli::app::App;
use crate::error::Error;
use crate::store::Store;

/// show the tokens the models used: today, per session and per model
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "usage")]
pub struct UsageCmd {
    /// print JSON
    #[argh(switch)]
    json: bool,
}

/// Prompt and completion tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Tokens {
    fn add(&mut self, other: Tokens) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }

    fn total(&self) -> u64 {
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sum {
    pub turns: u64,
    pub main: Tokens,
    pub cheap: Tokens,
}

impl Sum {
    fn add(&mut self, main: Tokens, cheap: Tokens) {
        self.turns += 1;
        self.main.add(main);
        self.cheap.add(cheap);
    }
}

/// One session's sums.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSum {
    pub session: String,
    pub title: String,
    #[serde(flatten)]
    pub sum: Sum,
}

/// One model's sums.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSum {
    /// `main` or `cheap`.
    pub role: &'static str,
    /// The model configured for the role now.
    pub model: String,
    pub turns: u64,
    #[serde(flatten)]
    pub tokens: Tokens,
}

/// Everything `evolve usage` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Turns since local midnight.
    pub today: Sum,
    pub total: Sum,
    pub models: Vec<ModelSum>,
    /// Most tokens first.
    pub sessions: Vec<SessionSum>,
}

/// The start of the local day that `now` is in, for a zone `offset` seconds east of UTC.
pub fn day_start(now: i64, offset: i64) -> i64 {
    let local = now + offset;
    local - local.rem_euclid(evolve_core::DAY) - offset
}

pub fn run(cmd: UsageCmd, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let now = crate::clock::now();
    let offset = match crate::zone::system() {
        Ok(zone) => {
            use evolve_core::sched::Zone;
            i64::from(zone.offset_at_utc(now))
        }
        Err(e) => {
            log::warn!("{e}; today is counted in UTC");
            0
        }
    };
    let report = report(
        &store,
        day_start(now, offset),
        &app.config.model.main,
        &app.config.model.cheap,
    )?;
    let mut out = std::io::stdout().lock();
    if cmd.json {
        let text = serde_json::to_string_pretty(&report).map_err(|source| Error::Encode {
            what: "usage",
            source,
        })?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let line = |s: &Sum| {
        format!(
            "{} turns, main {} tokens ({} in, {} out), cheap {} tokens ({} in, {} out)",
            s.turns,
            s.main.total(),
            s.main.prompt_tokens,
            s.main.completion_tokens,
            s.cheap.total(),
            s.cheap.prompt_tokens,
            s.cheap.completion_tokens
        )
    };
    writeln!(out, "today: {}", line(&report.today))?;
    writeln!(out, "total: {}", line(&report.total))?;
    writeln!(out, "per model:")?;
    for m in &report.models {
        writeln!(
            out,
            "  {:<5} {}: {} tokens ({} in, {} out)",
            m.role,
            m.model,
            m.tokens.total(),
            m.tokens.prompt_tokens,
            m.tokens.completion_tokens
        )?;
    }
    writeln!(out, "per session:")?;
    for s in &report.sessions {
        writeln!(out, "  {} {:?}: {}", s.session, s.title, line(&s.sum))?;
    }
    Ok(())
}

/// Sums every turn record of every session; a turn counts as today when its first
/// message was stored at or after `today_from`.
fn report(store: &Store, today_from: i64, main: &str, cheap: &str) -> Result<Report, Error> {
    let mut today = Sum::default();
    let mut total = Sum::default();
    let mut sessions = Vec::new();
    for session in store.sessions()? {
        let mut sum = Sum::default();
        let records = store.turns(&session.id)?;
        if records.is_empty() {
            continue;
        }
        let messages = store.messages(&session.id, 1)?;
        for (turn, json) in records {
            let Ok(record) = serde_json::from_str::<Value>(&json) else {
                log::warn!("the record of turn {turn} of {} cannot be read", session.id);
                continue;
            };
            let (m, c) = (Tokens::of(&record, "main"), Tokens::of(&record, "cheap"));
            sum.add(m, c);
            total.add(m, c);
            let at = messages
                .iter()
                .find(|msg| msg.turn == turn)
                .map_or(session.updated_at, |msg| msg.at);
            if at >= today_from {
                today.add(m, c);
            }
        }
        sessions.push(SessionSum {
            session: session.id,
            title: session.title,
            sum,
        });
    }
    sessions.sort_by_key(|s| std::cmp::Reverse(s.sum.main.total() + s.sum.cheap.total()));
    let models = vec![
        ModelSum {
            role: "main",
            model: main.to_string(),
            turns: total.turns,
            tokens: total.main,
        },
        ModelSum {
            role: "cheap",
            model: cheap.to_string(),
            turns: total.turns,
            tokens: total.cheap,
        },
    ];
    Ok(Report {
        today,
        total,
        models,
        sessions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_day_starts_at_local_midnight() {
        let day = evolve_core::DAY;
        // (now, offset east of UTC, start of its local day)
        let table = [
            (10 * day + 3_600, 0, 10 * day),
            (10 * day, 0, 10 * day),
            (10 * day - 1, 0, 9 * day),
            // 23:00 UTC is 07:00 the next day at +08:00.
            (10 * day - 3_600, 8 * 3_600, 10 * day - 8 * 3_600),
            // 01:00 UTC is 20:00 the day before at −05:00.
            (10 * day + 3_600, -5 * 3_600, 9 * day + 5 * 3_600),
        ];
        for (now, offset, want) in table {
            assert_eq!(day_start(now, offset), want, "{now} at {offset}");
            assert!(day_start(now, offset) <= now && now - day_start(now, offset) < day);
        }
    }
}
