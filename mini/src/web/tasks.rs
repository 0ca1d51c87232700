//! `/v1/tasks`: scheduled tasks over HTTP, for the UI and for `evolve tasks` while
//! `serve` holds the store. The JSON shapes are the shared contract
//! ([`crate::sched::crate::sched::show::task_json`], [`crate::sched::crate::sched::show::run_json`]).
//!
//! Decides the HTTP side only: statuses (201 for a new task, 202 for a started run,
//! 409 for a run of a task already running, 400 with the core's message for a schedule
//! it cannot read) and how `serve` takes part in a run ([`Host`]: the run's turn is one
//! of the server's turns, so stopping cancels it and a chat in the same session waits).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::request::{tri, Reply};
use super::{error, State};
use crate::agents::{Host, TurnGate};
use crate::cancel::Cancel;
use crate::clock::now;
use crate::sched::tasks;
use crate::store::Trigger;
use evolve_core::sched::Schedule;

/// How many runs `GET /v1/tasks/{id}/runs` lists without `?limit`.
const DEFAULT_RUNS: usize = 20;

impl TurnGate for State {
    fn begin(&self, session: &str, cancel: &Arc<Cancel>) -> bool {
        let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
        if turns.contains_key(session) {
            return false;
        }
        turns.insert(session.to_string(), Arc::clone(cancel));
        true
    }

    fn end(&self, session: &str) {
        self.turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
    }
}

impl Host for State {
    fn manager(&self) -> Arc<crate::agents::Manager> {
        State::manager(self)
    }

    fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}

/// A task id from the path.
fn task_id(text: &str) -> Result<u64, Reply> {
    text.parse::<u64>()
        .map_err(|_| error(400, format!("{text:?} is not a task id (a number)")))
}

macro_rules! id {
    ($e:expr) => {
        match task_id($e) {
            Ok(v) => v,
            Err(resp) => return resp,
        }
    };
}

/// `GET /v1/tasks`: every task, with the zone their times are in.
pub fn list(state: &State) -> Reply {
    let rt = state.rt();
    let zone = tasks::zone_of(&rt);
    let all = tri!(rt.store.tasks());
    let data: Vec<Value> = all
        .iter()
        .map(|t| {
            crate::sched::show::task_json(
                t,
                &zone.zone,
                state.scheduler.is_running(t.id),
                rt.config.core.permission.headless_max_auto,
            )
        })
        .collect();
    Response::json(200, &json!({"data": data, "time_zone": zone.name}))
}

/// `POST /v1/tasks {"schedule", "question", "allow"?, "deliver"?, "budget_tokens"?}`.
pub fn create(state: &State, req: &Request) -> Reply {
    let body: Value = if req.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(&req.body) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return error(400, "the body must be a JSON object"),
            Err(e) => return error(400, format!("the body is not valid JSON: {e}")),
        }
    };
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::trim);
    let usage = "send {\"schedule\": \"every 30m\", \"question\": \"…\", \"allow\": \"L2\"}";
    let (Some(schedule), Some(question)) = (text("schedule"), text("question")) else {
        return error(400, usage);
    };
    if question.is_empty() {
        return super::said_error(
            400,
            "the question is empty",
            crate::said::Said::new(crate::said::Code::QuestionEmpty, json!({})),
        );
    }
    let allow = match body.get("allow") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match tasks::parse_allow(s) {
            Ok(l) => Some(l),
            Err(e) => return error(400, e.to_string()),
        },
        Some(_) => return error(400, "`allow` must be \"L1\", \"L2\" or \"L3\""),
    };
    let deliver = match body.get("deliver") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match crate::channels::parse_target(s) {
            Ok(t) => Some(t),
            Err(e) => return error(400, e),
        },
        Some(_) => return error(400, "`deliver` must be \"telegram:CHAT\""),
    };
    let budget = match body.get("budget_tokens") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|&n| n > 0) {
            Some(n) => Some(n),
            None => return error(400, "`budget_tokens` must be a number of tokens, 1 or more"),
        },
    };
    let rt = state.rt();
    let zone = tasks::zone_of(&rt);
    let schedule = match Schedule::parse_in(schedule, &zone.zone) {
        Ok(s) => s,
        Err(e) => return bad_schedule(&e),
    };
    let mut task = tri!(tasks::add_task(
        &rt,
        &schedule,
        question,
        allow,
        deliver.as_deref(),
        now()
    ));
    if budget.is_some() {
        task = tri!(rt.store.update_task(task.id, |t| t.budget_tokens = budget));
    }
    state.scheduler.notify();
    Response::json(
        201,
        &crate::sched::show::task_json(
            &task,
            &zone.zone,
            false,
            rt.config.core.permission.headless_max_auto,
        ),
    )
}

/// `GET /v1/tasks/{id}`.
pub fn get(state: &State, id: &str) -> Reply {
    let id = id!(id);
    let rt = state.rt();
    let task = tri!(rt.store.task(id));
    shown(state, &rt, &task)
}

/// A task as `GET` shows it (200).
fn shown(state: &State, rt: &crate::agents::Runtime, task: &crate::store::Task) -> Reply {
    Response::json(
        200,
        &crate::sched::show::task_json(
            task,
            &tasks::zone_of(rt).zone,
            state.scheduler.is_running(task.id),
            rt.config.core.permission.headless_max_auto,
        ),
    )
}

/// `DELETE /v1/tasks/{id}`: a run still going is cancelled.
pub fn delete(state: &State, id: &str) -> Reply {
    let id = id!(id);
    tri!(tasks::remove_task(
        &state.rt().store,
        Some(&*state.scheduler),
        id
    ));
    Response::json(200, &json!({"deleted": true}))
}

/// `PATCH /v1/tasks/{id}`: `{schedule?, question?, allow?, paused?}` — what is sent
/// changes (a schedule is read like a new task's); the task as `GET` shows it.
pub fn update(state: &State, req: &Request, id: &str) -> Reply {
    let id = id!(id);
    let body = match super::request::body(req) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let rt = state.rt();
    let zone = tasks::zone_of(&rt);
    let text = |k: &str| match body.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(error(400, format!("`{k}` must be a string"))),
    };
    let schedule = match text("schedule") {
        Ok(Some(s)) => match Schedule::parse_in(&s, &zone.zone) {
            Ok(s) => Some(s),
            Err(e) => return bad_schedule(&e),
        },
        Ok(None) => None,
        Err(r) => return r,
    };
    let question = match text("question") {
        Ok(Some(q)) if q.is_empty() => return error(400, "the question is empty"),
        Ok(q) => q,
        Err(r) => return r,
    };
    let allow = match text("allow") {
        Ok(Some(a)) => match tasks::parse_allow(&a) {
            Ok(l) => Some(l),
            Err(e) => return error(400, e.to_string()),
        },
        Ok(None) => None,
        Err(r) => return r,
    };
    let paused = match body.get("paused") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(p)) => Some(*p),
        Some(_) => return error(400, "`paused` must be true or false"),
    };
    let task = tri!(rt.store.update_task(id, |t| {
        if let Some(s) = &schedule {
            t.schedule = s.to_string();
        }
        if let Some(q) = question {
            t.question = q;
        }
        if let Some(a) = allow {
            t.allow = Some(a);
        }
        if let Some(p) = paused {
            t.paused = p;
        }
    }));
    state.scheduler.notify();
    shown(state, &rt, &task)
}

/// `POST /v1/tasks/{id}/run`: starts a run now; 409 while one runs.
pub fn run(state: &Arc<State>, id: &str) -> Reply {
    let id = id!(id);
    let manager = state.manager();
    tri!(manager.runtime().store.task(id));
    if state.shutdown.load(Ordering::SeqCst) {
        return error(503, "the server is stopping");
    }
    let Some(claim) = state.scheduler.claim(id) else {
        return error(
            409,
            format!("task {id} is running; wait for its run to finish"),
        );
    };
    tasks::spawn_run(
        Arc::clone(state) as Arc<dyn Host>,
        manager,
        claim,
        Trigger::Manual,
    );
    Response::json(202, &json!({"started": true}))
}

/// `GET /v1/tasks/{id}/runs?limit=N`: newest first.
pub fn runs(state: &State, req: &Request, id: &str) -> Reply {
    let id = id!(id);
    let limit = match req.query_param("limit").map(|l| l.parse::<usize>()) {
        None => DEFAULT_RUNS,
        Some(Ok(n)) => n.max(1),
        Some(Err(_)) => return error(400, "limit must be a positive number"),
    };
    let rt = state.rt();
    let zone = tasks::zone_of(&rt);
    let all = tri!(rt.store.task_runs(id, limit));
    let data: Vec<Value> = all
        .iter()
        .map(|r| crate::sched::show::run_json(r, &zone.zone))
        .collect();
    Response::json(200, &json!({ "data": data }))
}

/// A 400 for a schedule that cannot be read: core's message, and its code.
fn bad_schedule(e: &evolve_core::sched::SchedError) -> Reply {
    super::said_error(400, e.to_string(), crate::said::schedule(e))
}
