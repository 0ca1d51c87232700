//! The scheduler's shell side (issue 6, "Scheduler"). The rules — parsing schedules,
//! the next due time, the run-once-after-downtime rule — are `evolve_core::sched`; this
//! module gives them what only the shell can: the system's time zones ([`zone`]).
//!
//! Still to plug in here (another part of issue 6): the task store behind
//! `evolve tasks add|list|rm|run|log`, `/v1/tasks`, and the loop inside `evolve serve`
//! that reads the clock, asks `evolve_core::sched::due_now` for each task with the zone
//! from [`zone::load`] (`[sched] time_zone` or `TZ`), and runs due tasks as headless asks.

pub mod zone;
