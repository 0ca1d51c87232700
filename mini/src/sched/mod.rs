//! The scheduler's shell side. The rules — parsing schedules,
//! the next due time, the run-once-after-downtime rule — are `evolve_core::sched`; this
//! module runs tasks ([`tasks`]; [`show`] says when they run next, [`daily`] holds the
//! built-in daily jobs): a task as a headless ask in its own session, and the
//! loop inside `evolve serve` that reads the clock, asks `evolve_core::sched::due_now`
//! for each task in the configured zone (`[scheduler] time_zone`, else `TZ` or the
//! system's, read by `zone.rs` at the crate's root) and runs the due ones. The task
//! store, the command line and the HTTP routes each keep their own side.

pub mod daily;
pub mod show;
pub mod tasks;
