//! The scheduler's shell side (issue 6, "Scheduler"). The rules — parsing schedules,
//! the next due time, the run-once-after-downtime rule — are `evolve_core::sched`; this
//! module gives them what only the shell can: the system's time zones ([`zone`]), and
//! running tasks ([`tasks`]): a task as a headless ask in its own session, and the
//! loop inside `evolve serve` that reads the clock, asks `evolve_core::sched::due_now`
//! for each task in the configured zone (`[scheduler] time_zone`, else `TZ` or the
//! system's) and runs the due ones. The task store is `crate::store`'s; the command
//! line `crate::cli`'s; the HTTP routes `crate::web`'s.

pub mod tasks;
pub mod zone;
