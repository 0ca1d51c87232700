//! `GET /v1/usage`: the tokens the models used, as `evolve usage` counts them (the
//! sums are the store's [`Ledger`]), shaped for the Usage page: today, the last
//! [`DAYS`] days newest first, the sessions that used most, the scheduled tasks, the
//! cost when prices are configured, and today's use against `[model] daily_tokens`.

use serde_json::{json, Value};

use super::http::Response;
use super::request::{store_error, Reply};
use super::State;
use crate::config::Spending;
use crate::store::{local_date, today_start, Ledger, Sum, Tokens};

/// Days listed.
pub const DAYS: usize = 14;
/// Sessions listed, most tokens first.
pub const SESSIONS: usize = 20;

/// `{"today": {...}, "days": [...], "sessions": [...], "tasks": [...], "budget": {...}}`.
pub fn get(state: &State) -> Reply {
    let rt = state.rt();
    let today = today_start(crate::clock::now());
    match rt.store.ledger(today, DAYS) {
        Ok(ledger) => Response::json(200, &body(&ledger, &rt.config.spending)),
        Err(e) => store_error(e),
    }
}

fn tokens(t: Tokens) -> Value {
    json!({"prompt_tokens": t.prompt_tokens, "completion_tokens": t.completion_tokens})
}

/// A sum with its cost (`null` without prices).
fn priced(sum: &Sum, spending: &Spending) -> Value {
    json!({
        "turns": sum.turns,
        "main": tokens(sum.main),
        "cheap": tokens(sum.cheap),
        "cost": spending.cost(sum.main, sum.cheap),
    })
}

/// The response body of a ledger.
fn body(ledger: &Ledger, spending: &Spending) -> Value {
    let days: Vec<Value> = ledger
        .days
        .iter()
        .map(|(start, sum)| {
            let mut v = priced(sum, spending);
            v["date"] = json!(local_date(*start));
            v
        })
        .collect();
    let sessions: Vec<Value> = ledger
        .sessions
        .iter()
        .take(SESSIONS)
        .map(|s| {
            json!({
                "id": s.session,
                "title": s.title,
                "turns": s.sum.turns,
                "main": tokens(s.sum.main),
                "cheap": tokens(s.sum.cheap),
            })
        })
        .collect();
    let tasks: Vec<Value> = ledger
        .tasks
        .iter()
        .map(|t| {
            json!({
                "id": t.task.to_string(),
                "name": t.name,
                "runs": t.runs,
                "main": tokens(t.sum.main),
                "cheap": tokens(t.sum.cheap),
            })
        })
        .collect();
    json!({
        "today": priced(&ledger.today, spending),
        "days": days,
        "sessions": sessions,
        "tasks": tasks,
        "budget": {
            "daily_tokens": spending.daily_tokens,
            "used_today": ledger.today.total(),
        },
    })
}
