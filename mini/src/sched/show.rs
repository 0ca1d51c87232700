//! When a task runs next, and a task and a run as the API and `evolve tasks` show them:
//! times in the scheduler's zone (RFC 3339 with the offset), the schedule as written.

use evolve_core::permission::Level;
use evolve_core::sched::{civil_from_days, next_due, Schedule, Zone};
use evolve_core::Timestamp;
use serde_json::{json, Value};

use crate::store::{RunStatus, Task, TaskRun, Trigger};

/// A stored task's schedule; `None` (logged) for text this build cannot read.
pub(super) fn schedule_of(task: &Task) -> Option<Schedule> {
    match Schedule::parse(&task.schedule) {
        Ok(s) => Some(s),
        Err(e) => {
            log::warn!(
                "task {}: cannot read its schedule {:?}: {e}",
                task.id,
                task.schedule
            );
            None
        }
    }
}

/// When the task runs next: a one-off that ran has none; an overdue task's time lies
/// in the past (it runs at the loop's next look).
pub fn next_run(task: &Task, zone: &dyn Zone) -> Option<Timestamp> {
    match schedule_of(task)? {
        Schedule::At { utc } => {
            evolve_core::sched::one_off_pending(utc, task.last_run).then_some(utc)
        }
        s => next_due(&s, zone, task.last_run.unwrap_or(task.created_at)),
    }
}

/// An instant as RFC 3339 in `zone` (`2026-03-29T09:00:00+02:00`, `…Z` in UTC).
pub fn rfc3339(zone: &dyn Zone, utc: Timestamp) -> String {
    let offset = i64::from(zone.offset_at_utc(utc));
    let local = utc + offset;
    let d = civil_from_days(local.div_euclid(86_400));
    let secs = local.rem_euclid(86_400);
    let off = if offset == 0 {
        "Z".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let a = offset.abs();
        format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{off}",
        d.year,
        d.month,
        d.day,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A task as the API and `evolve tasks list --json` show it (the shared contract);
/// `default_allow` is what a task added without `--allow` gets now.
pub fn task_json(task: &Task, zone: &dyn Zone, running: bool, default_allow: Level) -> Value {
    json!({
        "id": task.id,
        "schedule": task.schedule,
        "question": task.question,
        "session": task.session,
        "allow": task.allow.unwrap_or(default_allow).to_string(),
        "created_at": rfc3339(zone, task.created_at),
        "last_run": task.last_run.map(|t| rfc3339(zone, t)),
        "next_run": (!task.paused).then(|| next_run(task, zone)).flatten().map(|t| rfc3339(zone, t)),
        "paused": task.paused,
        "running": running,
        "last_status": task.last_status.map(RunStatus::name),
        "runs": task.runs,
        "deliver": task.deliver,
        "budget_tokens": task.budget_tokens,
    })
}

/// A run as the API and `evolve tasks log --json` show it (the shared contract).
pub fn run_json(run: &TaskRun, zone: &dyn Zone) -> Value {
    json!({
        "task": run.task,
        "started_at": rfc3339(zone, run.started_at),
        "finished_at": run.finished_at.map(|t| rfc3339(zone, t)),
        "status": run.status.name(),
        "exit_code": run.status.exit_code(),
        "answer": run.answer,
        "error": run.error,
        "session": run.session,
        "turn": run.turn,
        "trigger": trigger_name(run.trigger),
    })
}

/// How a run's trigger is named in the API and `evolve tasks`.
pub(super) fn trigger_name(t: Trigger) -> &'static str {
    match t {
        Trigger::Schedule => "schedule",
        Trigger::Manual => "manual",
    }
}
