//! The jobs the scheduler runs once a day at a local time besides the tasks (memory
//! maintenance), and when one is due: once after downtime, never twice a day.

use evolve_core::sched::{due_now, Schedule, Zone};
use evolve_core::Timestamp;

use crate::agents::Runtime;
use crate::cancel::Cancel;

/// A job the loop runs once a day at a local time (after downtime, once), e.g. memory
/// maintenance. Its last run is kept in the store's meta table under `meta_key`.
pub struct DailyJob {
    /// For the log.
    pub name: &'static str,
    /// The store's meta key holding its last run ([`Store::meta_time`]).
    pub meta_key: &'static str,
    /// Local hour, 0–23.
    pub hour: u32,
    /// Local minute, 0–59.
    pub minute: u32,
    /// The job; it should stop soon when the flag is set (the server is stopping).
    pub run: fn(&Runtime, Timestamp, &Cancel),
}

/// The meta key for memory maintenance's last run.
pub const LAST_MAINTENANCE_KEY: &str = "last_maintenance";

/// The daily built-in jobs. Memory maintenance (ARCHITECTURE.md § Memory: decay, expiry, the
/// CRITICAL cap, duplicate merging, category summaries, the model's priority review)
/// runs at 03:30 local time, when a personal server is least likely to be in use.
pub const DAILY_JOBS: &[DailyJob] = &[DailyJob {
    name: "memory maintenance",
    meta_key: LAST_MAINTENANCE_KEY,
    hour: 3,
    minute: 30,
    run: maintenance,
}];

/// The memory maintenance job: its report goes to the log (one line; problems as
/// warnings), as `evolve memory maintain` would print it.
pub(super) fn maintenance(rt: &Runtime, now: Timestamp, cancel: &Cancel) {
    let report = crate::agents::maintain::maintain(rt, now, cancel);
    log::info!(
        "memory maintenance: {} changes ({} expired, {} decayed, {} over the CRITICAL cap, \
         {} merged, {} summaries, {} priorities reviewed); {} → {} memories",
        report.changes(),
        report.expired.len(),
        report.decayed.len(),
        report.critical_evicted.len() + report.critical_demoted.len(),
        report.merged.len(),
        report.summaries.len(),
        report.adjusted.len(),
        report.memories_before,
        report.memories_after
    );
    for p in &report.problems {
        log::warn!("memory maintenance: {p}");
    }
    if let Some(e) = &report.error {
        log::warn!("memory maintenance stopped: {e}");
    }
}

/// Whether a daily job runs at `now`. A job never run before first records `now`
/// (returned as `Err(now)`) instead of running at once: a new server does not start
/// its day with maintenance.
pub(super) fn job_due(
    job: &DailyJob,
    zone: &dyn Zone,
    last: Option<Timestamp>,
    now: Timestamp,
) -> Result<bool, Timestamp> {
    let daily = Schedule::Daily {
        hour: job.hour,
        minute: job.minute,
    };
    match last {
        None => Err(now),
        Some(last) => Ok(due_now(&daily, zone, Some(last), last, now)),
    }
}
