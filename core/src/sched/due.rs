//! When a schedule fires: the next instant after a given one, and whether a task is due.
//!
//! Decides the rule for downtime: a task is due when at least one of its slots
//! lies between its last run (or creation) and `now` — however many slots were missed,
//! that is one run, after which the last run is `now` and the missed slots are gone. A
//! one-off runs once, also if its time passed while the server was down.

use super::civil::{civil_from_days, days_in_month, DAY};
use super::cron::Cron;
use super::zone::{local_to_utc, to_local, Zone};
use super::Schedule;

/// How far [`next_due`] looks for a cron slot: the longest gap between two slots of a
/// satisfiable expression is 8 years (`0 0 29 2 *`: 29 February 2096, then 2104), so
/// nothing within 9 years means the expression can never fire (`0 0 31 2 *`).
pub const SEARCH_YEARS: i64 = 9;

/// Instants beyond about ±34 000 years are not scheduled (keeps the arithmetic exact).
const LIMIT: i64 = 1 << 40;

/// The first instant strictly after `after` (Unix seconds) at which `schedule` fires in
/// `zone`; `None` for a one-off already past and for a cron expression that never
/// matches. For `every`, the interval counts from `after` (the previous run), as
/// systemd's `OnUnitActiveSec=` does.
pub fn next_due(schedule: &Schedule, zone: &dyn Zone, after: i64) -> Option<i64> {
    if !(-LIMIT..LIMIT).contains(&after) {
        return None;
    }
    match schedule {
        Schedule::At { utc } => (*utc > after).then_some(*utc),
        Schedule::Every { seconds } => Some(after + seconds),
        Schedule::Daily { hour, minute } => next_cron(&Cron::daily(*hour, *minute), zone, after),
        Schedule::Cron(cron) => next_cron(cron, zone, after),
    }
}

/// Whether a task runs at `now`: a slot of its schedule lies in `(last run or creation,
/// now]`. A one-off is due once its time has come until a run starts at or after
/// that time (a run by hand before it does not count: see [`one_off_pending`]).
pub fn due_now(
    schedule: &Schedule,
    zone: &dyn Zone,
    last_run: Option<i64>,
    created: i64,
    now: i64,
) -> bool {
    if let Schedule::At { utc } = schedule {
        return *utc <= now && one_off_pending(*utc, last_run);
    }
    let since = last_run.unwrap_or(created);
    next_due(schedule, zone, since).is_some_and(|at| at <= now)
}

/// Whether the one-off at `utc` still has its run to do: no run yet, or only runs
/// started before its time (the user trying it by hand must not cancel it).
pub fn one_off_pending(utc: i64, last_run: Option<i64>) -> bool {
    last_run.is_none_or(|l| l < utc)
}

/// Walks local days from the wall time just after `after`, skipping months and days
/// that cannot match, and within a matching day only the allowed hours and minutes.
/// Wall times are resolved with [`local_to_utc`]; a slot that resolves to an instant
/// not after `after` (the repeated hour of a fall back, or the gap of a spring forward
/// already fired) is passed over.
fn next_cron(cron: &Cron, zone: &dyn Zone, after: i64) -> Option<i64> {
    let local = to_local(zone, after + 1);
    let local = (local + 59).div_euclid(60) * 60; // the next whole minute
    let mut day = local.div_euclid(DAY);
    let mut from = local.rem_euclid(DAY) / 60; // minute of the day to start from
    let last_day = day + SEARCH_YEARS * 366;
    while day <= last_day {
        let date = civil_from_days(day);
        if !cron.matches_month(date.month) {
            day += i64::from(days_in_month(date.year, date.month) - date.day) + 1;
            from = 0;
            continue;
        }
        if cron.matches_day(day) {
            let (h0, m0) = ((from / 60) as u32, (from % 60) as u32);
            let mut hour = cron.hour_from(h0);
            while let Some(h) = hour {
                let mut minute = cron.minute_from(if h == h0 { m0 } else { 0 });
                while let Some(m) = minute {
                    let wall = day * DAY + i64::from(h) * 3600 + i64::from(m) * 60;
                    let utc = local_to_utc(zone, wall);
                    if utc > after {
                        return Some(utc);
                    }
                    minute = cron.minute_from(m + 1);
                }
                hour = cron.hour_from(h + 1);
            }
        }
        day += 1;
        from = 0;
    }
    None
}
