//! Scheduled tasks: adding one, running one, and the loop inside `evolve serve` that
//! runs them when they are due (ARCHITECTURE.md § Where does X live, 24).
//!
//! Decides: that a task is a headless ask in its own session, under the same
//! permission rules as `evolve ask` (calls up to the task's `allow` level run, anything
//! needing a person is refused and the run says so); how a run's outcome is recorded
//! (status and `ask`'s exit code, the answer clipped to [`ANSWER_CHARS`]); that one task
//! never runs twice at once ([`Scheduler::claim`]: a schedule that fires while it runs
//! is skipped, a manual run is refused); and when the loop wakes — at the earliest next
//! due time, at least every [`MAX_SLEEP`], and at once when a task is added or removed.
//! Whether a task is due is `evolve_core::sched::due_now`'s decision (after downtime a
//! missed task runs once).
//!
//! The loop also runs the daily built-in jobs of [`DAILY_JOBS`] (memory maintenance),
//! each remembering its last run in the store's meta table.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use evolve_core::permission::{Level, ParseLevelError, PendingCall, Policy};
use evolve_core::sched::{due_now, next_due, Schedule};
use evolve_core::text::{clip_chars, one_line, Lang};
use evolve_core::Timestamp;

use crate::agents::{Heard, Host, Manager, Refused, Runtime, TurnGate, TurnInput, TurnIo};
use crate::cancel::Cancel;
use crate::clock::now;
use crate::error::Error;
use crate::store::{RunEnd, RunStatus, Store, StoreError, Task, Trigger};

use super::daily::{job_due, DailyJob, DAILY_JOBS};
use super::show::{next_run, schedule_of, trigger_name};

/// A run's answer is kept up to this many characters (the session has all of it).
pub const ANSWER_CHARS: usize = 4000;

/// The loop looks at the clock at least this often, so a changed clock or a task added
/// by another way than this process is noticed within half a minute.
pub const MAX_SLEEP: Duration = Duration::from_secs(30);

/// Characters of the question in the title of a task's session.
const TITLE_QUESTION_CHARS: usize = 48;

/// Which runs are going, and the loop's alarm clock. Shared by the loop, the API and
/// the runs themselves.
#[derive(Default)]
pub struct Scheduler {
    /// Task id → the cancel of its running turn.
    running: Mutex<HashMap<u64, Arc<Cancel>>>,
    /// Daily jobs running now, by name.
    jobs_running: Mutex<HashSet<&'static str>>,
    /// Cancels the daily jobs when the server stops.
    jobs_cancel: Arc<Cancel>,
    /// Task id → until when the schedule leaves it alone: its last run failed before
    /// it could be recorded (e.g. the store cannot be written), so its last run did not
    /// move and it would be due again at once, over and over.
    held: Mutex<HashMap<u64, Timestamp>>,
    /// Bumped by [`Scheduler::notify`]; the loop sleeps until it changes.
    wake: Mutex<u64>,
    alarm: Condvar,
    stopped: AtomicBool,
}

/// A claimed task: while it lives the task counts as running; dropping it frees the
/// task and wakes the loop (its next due time has moved).
pub struct Claim {
    sched: Arc<Scheduler>,
    id: u64,
    /// The run's cancel.
    pub cancel: Arc<Cancel>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.sched
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        self.sched.notify();
    }
}

impl Scheduler {
    /// A scheduler with nothing running.
    pub fn new() -> Arc<Scheduler> {
        Arc::new(Scheduler::default())
    }

    /// Until when the schedule leaves task `id` alone after a failed start (see
    /// [`Scheduler::held`]); `None` when it is not held (any more) at `now`.
    fn held_until(&self, id: u64, now: Timestamp) -> Option<Timestamp> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        match held.get(&id) {
            Some(&until) if until > now => Some(until),
            Some(_) => {
                held.remove(&id);
                None
            }
            None => None,
        }
    }

    /// Wakes the loop at once: a task was added or removed, or a run ended.
    pub fn notify(&self) {
        *self.wake.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.alarm.notify_all();
    }

    /// Marks a task as running; `None` when it already is.
    pub fn claim(self: &Arc<Self>, id: u64) -> Option<Claim> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.contains_key(&id) {
            return None;
        }
        let cancel = Arc::new(Cancel::new());
        running.insert(id, Arc::clone(&cancel));
        Some(Claim {
            sched: Arc::clone(self),
            id,
            cancel,
        })
    }

    /// Whether a run of the task is going.
    pub fn is_running(&self, id: u64) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&id)
    }

    /// Cancels a task's running turn (the task is being removed).
    pub fn cancel(&self, id: u64) {
        if let Some(flag) = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            flag.cancel();
        }
    }

    /// Stops the loop and cancels every running task and daily job (the server is
    /// stopping).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.jobs_cancel.cancel();
        for flag in self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            flag.cancel();
        }
        self.notify();
    }

    /// Waits up to `timeout` for every run and daily job to end; false if some still
    /// run.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let started = Instant::now();
        loop {
            let busy = !self
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
                || !self
                    .jobs_running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_empty();
            if !busy {
                return true;
            }
            if started.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sleeps until `deadline`, a [`Scheduler::notify`] after `seen`, or a stop.
    fn sleep(&self, seen: u64, timeout: Duration) {
        let guard = self.wake.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .alarm
            .wait_timeout_while(guard, timeout, |n| {
                *n == seen && !self.stopped.load(Ordering::SeqCst)
            })
            .unwrap_or_else(PoisonError::into_inner);
    }

    fn generation(&self) -> u64 {
        *self.wake.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// ---- adding a task --------------------------------------------------------------

/// Why a task's `allow` is refused; the words start with `allow` (the CLI puts `--`
/// before them).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum BadAllow {
    /// A level above L3: a task has no person to ask.
    #[error("allow {0}: a task never runs L4 or L5 calls without a person; use L1, L2 or L3")]
    NeedsPerson(Level),
    /// Not a level at all.
    #[error("allow {text}: {why}")]
    NotALevel {
        text: String,
        #[source]
        why: ParseLevelError,
    },
}

/// The levels a task may run calls at without a person: like `evolve ask --allow`, at
/// most L3.
pub fn parse_allow(text: &str) -> Result<Level, BadAllow> {
    match text.trim().parse::<Level>() {
        Ok(l) if l <= Level::L3 => Ok(l),
        Ok(l) => Err(BadAllow::NeedsPerson(l)),
        Err(why) => Err(BadAllow::NotALevel {
            text: text.into(),
            why,
        }),
    }
}

/// Adds a task with its own session, titled `Task 3: <question>`. Without `allow` its
/// runs get the headless default of `evolve ask` (`[permission] headless_max_auto`, L2)
/// as configured at each run.
///
/// `deliver` (`telegram:CHAT`, checked by [`crate::channels::parse_target`]) sends each
/// run's answer to that chat too.
pub fn add_task(
    rt: &Runtime,
    schedule: &Schedule,
    question: &str,
    allow: Option<Level>,
    deliver: Option<&str>,
    now: Timestamp,
) -> Result<Task, StoreError> {
    let mut task = rt
        .store
        .add_task(&schedule.to_string(), question.trim(), "", allow, now)?;
    let session = rt.store.create_session(&session_title(&task), now)?;
    rt.store.set_task_session(task.id, &session.id)?;
    task.session = session.id;
    if let Some(target) = deliver {
        task = rt
            .store
            .update_task(task.id, |t| t.deliver = Some(target.to_string()))?;
    }
    Ok(task)
}

fn session_title(task: &Task) -> String {
    format!(
        "Task {}: {}",
        task.id,
        one_line(&task.question, TITLE_QUESTION_CHARS)
    )
}

// ---- running a task -------------------------------------------------------------

/// How a run went.
pub struct Outcome {
    /// The whole answer (the record keeps it clipped).
    pub reply: String,
    /// The failure as `evolve ask` reports it (its exit code), for `evolve tasks run`.
    pub error: Option<Error>,
}

/// Nobody to ask: the headless policy refuses before `approve` could be called;
/// should it be called anyway, the answer is no.
struct Headless;

impl TurnIo for Headless {
    fn ask(&mut self, call: &PendingCall, _lang: Lang) -> Heard {
        log::warn!("{} needs a person; refused in a scheduled task", call.tool);
        Heard::Away
    }
}

/// Runs one task now: a headless ask in the task's session (made again if the user
/// deleted it), recorded as a run from start to end. `Err` only when the run could not
/// be recorded at all (no such task, the store failed).
pub fn run_task(
    manager: &Manager,
    id: u64,
    trigger: Trigger,
    cancel: &Arc<Cancel>,
    gate: &dyn TurnGate,
) -> Result<Outcome, Error> {
    let rt = manager.runtime();
    let store = &rt.store;
    let task = store.task(id)?;
    let session = match store.session(&task.session) {
        Ok(s) => s.id,
        Err(StoreError::NotFound(_)) => {
            let s = store.create_session(&session_title(&task), now())?;
            store.set_task_session(id, &s.id)?;
            log::info!(
                "task {id}: its session was deleted; runs go to {} now",
                s.id
            );
            s.id
        }
        Err(e) => return Err(e.into()),
    };
    let run = store.start_task_run(id, trigger, now())?;
    let (end, reply, error) = if let Some(spent) = budget_spent(store, &task)? {
        (
            ended(
                RunStatus::Error,
                String::new(),
                Some(spent.to_string()),
                None,
            ),
            String::new(),
            Some(spent),
        )
    } else if gate.begin(&session, cancel) {
        let result = manager.turn(
            TurnInput {
                session: Some(&session),
                text: &task.question,
                policy: Policy::headless(task.allow, false, &rt.config.core.permission),
                stream: false,
                cancel,
                force_tool: None,
                images: &[],
                from: evolve_core::provenance::Source::Person,
                replaces: None,
            },
            &mut Headless,
        );
        gate.end(&session);
        judge(result, &session, cancel.is_cancelled())
    } else {
        let error = Error::SessionBusy {
            session: session.to_string(),
        };
        (
            ended(
                RunStatus::Error,
                String::new(),
                Some(error.to_string()),
                None,
            ),
            String::new(),
            Some(error),
        )
    };
    store.finish_task_run(id, run.seq, &end)?;
    if let Some(target) = &task.deliver {
        let text = match &error {
            None => reply.clone(),
            Some(e) => format!("{reply}\n\n⚠ {e}"),
        };
        let text = format!(
            "**Task {id}** — {}\n\n{}",
            one_line(&task.question, TITLE_QUESTION_CHARS),
            text.trim()
        );
        if let Err(e) = crate::channels::enqueue(store, target, &text) {
            log::warn!("task {id}: the answer cannot be queued for {target}: {e}");
        }
    }
    log::info!(
        "task {id} ran ({}): {}",
        trigger_name(trigger),
        end.status.name()
    );
    Ok(Outcome { reply, error })
}

/// Why the task may not run: its runs have used its `budget_tokens`. `None`: it may.
fn budget_spent(store: &Store, task: &Task) -> Result<Option<Error>, Error> {
    let Some(limit) = task.budget_tokens else {
        return Ok(None);
    };
    let used = store.task_tokens(task.id)?;
    Ok((used >= limit).then(|| Error::Budget {
        message: format!(
            "task {}'s token budget is spent: its runs used {used} of {limit} tokens \
             (--budget-tokens); the run was not started",
            task.id
        ),
        used,
        limit,
        task: Some(task.id),
    }))
}

fn ended(status: RunStatus, answer: String, error: Option<String>, turn: Option<u64>) -> RunEnd {
    RunEnd {
        status,
        answer,
        error,
        turn,
        at: now(),
    }
}

/// A turn's result as a run's end, its whole reply, and the error `ask` would exit with.
fn judge(
    result: Result<
        (
            crate::agents::TurnRecord,
            std::sync::mpsc::Receiver<crate::agents::PostTurn>,
        ),
        Error,
    >,
    session: &str,
    cancelled: bool,
) -> (RunEnd, String, Option<Error>) {
    match result {
        Ok((record, _post)) => {
            let answer = clip_chars(record.reply.trim(), ANSWER_CHARS);
            let turn = Some(record.turn);
            let refused = Refused::of(&record.tools);
            if record.needs_person {
                let mut message = needs_person_note(&refused, session);
                if refused.sends_data {
                    message.push_str(SENDS_DATA_HINT);
                }
                let end = ended(RunStatus::NeedsPerson, answer, Some(message.clone()), turn);
                return (end, record.reply, Some(Error::NeedsPerson(message)));
            }
            if cancelled {
                let error = Error::ServeStopped;
                let end = ended(RunStatus::Error, answer, Some(error.to_string()), turn);
                return (end, record.reply, Some(error));
            }
            if record.reply.trim().is_empty() {
                let error = Error::EmptyAnswer {
                    session: session.to_string(),
                };
                let end = ended(RunStatus::Error, answer, Some(error.to_string()), turn);
                return (end, record.reply, Some(error));
            }
            (ended(RunStatus::Ok, answer, None, turn), record.reply, None)
        }
        Err(e) => {
            let status = match &e {
                _ if cancelled => RunStatus::Error,
                Error::Model(_) => RunStatus::ModelError,
                _ => RunStatus::Error,
            };
            let message = match &e {
                // The run's cancel: `evolve serve` stopped (a deleted task's run is not
                // recorded).
                Error::Cancelled => Error::ServeStopped.to_string(),
                _ if cancelled => format!("cancelled: evolve serve stopped during the run ({e})"),
                _ => e.to_string(),
            };
            (
                ended(status, String::new(), Some(message), None),
                String::new(),
                Some(e),
            )
        }
    }
}

/// What a run refused and how to let it through, like `evolve ask`'s note.
/// Said after the refused calls when one would have sent data off the machine.
pub(crate) const SENDS_DATA_HINT: &str = " (a call would have sent data that you did not give off the machine after outside text entered the turn: list its host under [tools] http_hosts in config.toml if it may receive anything)";

fn needs_person_note(refused: &Refused, session: &str) -> String {
    if refused.above_l3() {
        refused.message(&format!(
            "L4 calls always need a person: run it in `evolve chat --session {session}`"
        ))
    } else {
        refused.message("add the task again with --allow L3, or run it in `evolve chat`")
    }
}

// ---- the loop -------------------------------------------------------------------

/// Starts the loop on its own thread; it ends after [`Scheduler::stop`].
pub fn spawn_loop(
    host: Arc<dyn Host>,
    sched: Arc<Scheduler>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("scheduler".into())
        .spawn(move || run_loop(&host, &sched))
}

fn run_loop(host: &Arc<dyn Host>, sched: &Arc<Scheduler>) {
    {
        let manager = host.manager();
        let rt = manager.runtime();
        let zone = rt.config.scheduler.resolve();
        if let Some(w) = &zone.warning {
            log::warn!("{w}");
        }
        log::info!("scheduler: time zone {}", zone.name);
        match rt.store.settle_interrupted_runs(now()) {
            Ok(0) => {}
            Ok(n) => log::warn!("{n} task run(s) were interrupted when evolve last stopped"),
            Err(e) => log::warn!("cannot settle interrupted task runs: {e}"),
        }
    }
    while !sched.stopped.load(Ordering::SeqCst) && !host.stopping() {
        let seen = sched.generation();
        let wait = match tick(host, sched, now()) {
            Ok(wait) => wait,
            Err(e) => {
                log::warn!("scheduler: {e}");
                MAX_SLEEP
            }
        };
        sched.sleep(seen, wait);
    }
}

/// One look at the clock: starts the due tasks and daily jobs, returns how long to
/// sleep.
fn tick(host: &Arc<dyn Host>, sched: &Arc<Scheduler>, now: Timestamp) -> Result<Duration, Error> {
    let manager = host.manager();
    let rt = Arc::clone(manager.runtime());
    let zone = rt.config.scheduler.resolve().zone;
    let mut next: Option<Timestamp> = None;
    for task in rt.store.tasks()? {
        if sched.is_running(task.id) || task.paused {
            continue;
        }
        let Some(schedule) = schedule_of(&task) else {
            continue;
        };
        if let Some(until) = sched.held_until(task.id, now) {
            next = Some(next.map_or(until, |n| n.min(until)));
            continue;
        }
        if due_now(&schedule, &zone, task.last_run, task.created_at, now) {
            if let Some(claim) = sched.claim(task.id) {
                spawn_run(
                    Arc::clone(host),
                    Arc::clone(&manager),
                    claim,
                    Trigger::Schedule,
                );
            }
            continue;
        }
        if let Some(at) = next_run(&task, &zone) {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    for job in DAILY_JOBS {
        let last = rt.store.meta_time(job.meta_key)?;
        match job_due(job, &zone, last, now) {
            Err(first) => rt.store.set_meta_time(job.meta_key, first)?,
            Ok(true) => start_job(sched, &rt, job, now)?,
            Ok(false) => {}
        }
        let last = rt.store.meta_time(job.meta_key)?.unwrap_or(now);
        let daily = Schedule::Daily {
            hour: job.hour,
            minute: job.minute,
        };
        if let Some(at) = next_due(&daily, &zone, last) {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    Ok(sleep_for(next, now))
}

/// Until the next due time (at least a second), at most [`MAX_SLEEP`].
fn sleep_for(next: Option<Timestamp>, now: Timestamp) -> Duration {
    let secs = next.map_or(MAX_SLEEP.as_secs(), |at| {
        u64::try_from(at.saturating_sub(now)).unwrap_or(0).max(1)
    });
    Duration::from_secs(secs).min(MAX_SLEEP)
}

/// Starts a daily job on its own thread, recording its run first (a job that fails is
/// not retried until the next day).
fn start_job(
    sched: &Arc<Scheduler>,
    rt: &Arc<Runtime>,
    job: &'static DailyJob,
    now: Timestamp,
) -> Result<(), Error> {
    if !sched
        .jobs_running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(job.name)
    {
        return Ok(());
    }
    rt.store.set_meta_time(job.meta_key, now)?;
    let (sched, rt) = (Arc::clone(sched), Arc::clone(rt));
    let spawned = std::thread::Builder::new()
        .name(format!("job {}", job.name))
        .spawn(move || {
            log::info!("daily job: {}", job.name);
            (job.run)(&rt, now, &sched.jobs_cancel);
            sched
                .jobs_running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(job.name);
        });
    if let Err(e) = spawned {
        log::warn!("cannot start the daily job {}: {e}", job.name);
    }
    Ok(())
}

/// The host's turn bookkeeping as a [`TurnGate`].
struct ViaHost<'a>(&'a dyn Host);

impl TurnGate for ViaHost<'_> {
    fn begin(&self, session: &str, cancel: &Arc<Cancel>) -> bool {
        self.0.begin(session, cancel)
    }
    fn end(&self, session: &str) {
        self.0.end(session)
    }
}

/// Seconds a task whose run failed before it was recorded is left alone by the schedule.
pub const RETRY_AFTER: Timestamp = 60;

/// Runs a claimed task on its own thread (the loop and `POST /v1/tasks/{id}/run`).
pub fn spawn_run(host: Arc<dyn Host>, manager: Arc<Manager>, claim: Claim, trigger: Trigger) {
    let id = claim.id;
    let spawned = std::thread::Builder::new()
        .name(format!("task {id}"))
        .spawn(move || {
            if let Err(e) = run_task(&manager, id, trigger, &claim.cancel, &ViaHost(&*host)) {
                log::warn!(
                    "task {id}: the run could not be recorded: {e}; the schedule retries it \
                     in {RETRY_AFTER} s"
                );
                claim
                    .sched
                    .held
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id, now() + RETRY_AFTER);
            }
            drop(claim);
        });
    if let Err(e) = spawned {
        log::warn!("cannot start a thread for task {id}: {e}");
    }
}

/// The time zone's name and zone for the API and the command line.
pub fn zone_of(rt: &Runtime) -> crate::config::SchedZone {
    rt.config.scheduler.resolve()
}

/// Removes a task; a run still going is cancelled (its end is then not recorded).
pub fn remove_task(store: &Store, sched: Option<&Scheduler>, id: u64) -> Result<(), StoreError> {
    store.remove_task(id)?;
    if let Some(s) = sched {
        s.cancel(id);
        s.notify();
    }
    Ok(())
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
