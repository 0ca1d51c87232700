//! What the store keeps about scheduled tasks (`evolve tasks`, `/v1/tasks`): the tasks
//! themselves and, per task, its runs — newest first, the last [`RUNS_KEPT`] of them.
//!
//! Decides: task ids (never reused, like memory ids, so a log line naming task 3 keeps
//! meaning the same task), what a run records at its start and at its end, and that a
//! task's removal removes its runs in the same transaction (its session stays: it is
//! the conversation, which the user may still want). When a task is due and how a run
//! goes are the scheduler's (`crate::sched::tasks`) and the core's decisions.

use evolve_core::permission::Level;
use evolve_core::Timestamp;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::Fail;
use super::schema::*;
use super::{SessionId, Store, StoreError};

/// Runs kept per task; older ones are dropped when a new one starts.
pub const RUNS_KEPT: u64 = 200;

/// A scheduled task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// 1, 2, …; never reused.
    pub id: u64,
    /// The schedule as `evolve_core::sched::Schedule`'s `Display` writes it.
    pub schedule: String,
    /// The question asked at every run.
    pub question: String,
    /// The task's own session: every run is a turn in it.
    pub session: SessionId,
    /// Tool calls up to this level run without a person (like `evolve ask --allow`);
    /// `None`: the headless default of the configuration at the time of each run
    /// (`[permission] headless_max_auto`), so lowering it later also holds back the
    /// tasks added without `--allow`.
    #[serde(default)]
    pub allow: Option<Level>,
    /// When it was added.
    pub created_at: Timestamp,
    /// When the last run started.
    pub last_run: Option<Timestamp>,
    /// How many runs were started.
    pub runs: u64,
    /// How the last finished run ended.
    pub last_status: Option<RunStatus>,
    /// Paused by the user: not run on its schedule (a run can still be started by hand).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Where each run's answer is also sent (`telegram:CHAT`), through the outbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver: Option<String>,
    /// Tokens (both models) all of its runs may use together; a run that would start
    /// beyond it is not started, and its log says why. `None`: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
}

/// How a run ended (or that it is still running).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Answered (exit code 0, like `evolve ask`).
    Ok,
    /// A tool call needed a person and was refused (4).
    NeedsPerson,
    /// The model could not be reached or kept failing (3).
    ModelError,
    /// Anything else (1), including a run cut short by the server stopping.
    Error,
    /// Not finished yet.
    Running,
}

impl RunStatus {
    /// The name in JSON and listings.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::NeedsPerson => "needs_person",
            RunStatus::ModelError => "model_error",
            RunStatus::Error => "error",
            RunStatus::Running => "running",
        }
    }

    /// `evolve ask`'s exit code for the same outcome; none while running.
    pub fn exit_code(self) -> Option<u8> {
        match self {
            RunStatus::Ok => Some(0),
            RunStatus::NeedsPerson => Some(4),
            RunStatus::ModelError => Some(3),
            RunStatus::Error => Some(1),
            RunStatus::Running => None,
        }
    }
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The schedule (the loop inside `evolve serve`).
    Schedule,
    /// `evolve tasks run`, `POST /v1/tasks/{id}/run`.
    Manual,
}

/// One run of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRun {
    /// The task.
    pub task: u64,
    /// 1, 2, … within the task.
    pub seq: u64,
    /// Started.
    pub started_at: Timestamp,
    /// Finished; none while running.
    pub finished_at: Option<Timestamp>,
    /// The outcome.
    pub status: RunStatus,
    /// The answer (clipped by the scheduler).
    pub answer: String,
    /// What went wrong, for the statuses other than `ok`.
    pub error: Option<String>,
    /// The session the turn ran in.
    pub session: SessionId,
    /// The turn's number in the session, when a turn was recorded.
    pub turn: Option<u64>,
    /// What started it.
    pub trigger: Trigger,
}

/// How a finished run is recorded ([`Store::finish_task_run`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// The outcome (not `Running`).
    pub status: RunStatus,
    /// The answer.
    pub answer: String,
    /// What went wrong.
    pub error: Option<String>,
    /// The turn's number.
    pub turn: Option<u64>,
    /// When it ended.
    pub at: Timestamp,
}

/// `next_task_id` in [`META`].
const NEXT_TASK_ID_KEY: &str = "next_task_id";

fn no_task(id: u64) -> String {
    format!("no task {id} (`evolve tasks list` shows them)")
}

fn run_keys(task: u64) -> std::ops::RangeInclusive<(u64, u64)> {
    (task, 0)..=(task, u64::MAX)
}

impl Store {
    /// Adds a task with the next id; `session` is its (already created) session.
    pub fn add_task(
        &self,
        schedule: &str,
        question: &str,
        session: &str,
        allow: Option<Level>,
        now: Timestamp,
    ) -> Result<Task, StoreError> {
        self.write(|txn| {
            let mut meta = txn.open_table(META)?;
            let next = meta.get(NEXT_TASK_ID_KEY)?.map_or(1, |v| v.value());
            meta.insert(NEXT_TASK_ID_KEY, next + 1)?;
            let task = Task {
                id: next,
                schedule: schedule.to_string(),
                question: question.to_string(),
                session: session.to_string(),
                allow,
                created_at: now,
                last_run: None,
                runs: 0,
                last_status: None,
                paused: false,
                deliver: None,
                budget_tokens: None,
            };
            put_json(&mut txn.open_table(TASKS)?, "tasks", next, &task)?;
            Ok(task)
        })
    }

    /// One task.
    pub fn task(&self, id: u64) -> Result<Task, StoreError> {
        self.read(|txn| {
            get_json(&txn.open_table(TASKS)?, "tasks", id)?
                .ok_or_else(|| Fail::NotFound(no_task(id)))
        })
    }

    /// Every task, ids ascending.
    pub fn tasks(&self) -> Result<Vec<Task>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(TASKS)?;
            let mut out = Vec::new();
            for row in table.iter()? {
                let (key, value) = row?;
                out.push(decode("tasks", &key.value(), value.value())?);
            }
            Ok(out)
        })
    }

    /// Changes a task (its schedule, question, level or pause) in one transaction; the
    /// changed task is returned.
    pub fn update_task(&self, id: u64, f: impl FnOnce(&mut Task)) -> Result<Task, StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(TASKS)?;
            let mut task: Task =
                get_json(&table, "tasks", id)?.ok_or_else(|| Fail::NotFound(no_task(id)))?;
            f(&mut task);
            put_json(&mut table, "tasks", id, &task)?;
            Ok(task)
        })
    }

    /// Points a task at another session (its own was deleted by the user).
    pub fn set_task_session(&self, id: u64, session: &str) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(TASKS)?;
            let mut task: Task =
                get_json(&table, "tasks", id)?.ok_or_else(|| Fail::NotFound(no_task(id)))?;
            task.session = session.to_string();
            put_json(&mut table, "tasks", id, &task)
        })
    }

    /// Removes a task and its runs (its session stays).
    pub fn remove_task(&self, id: u64) -> Result<(), StoreError> {
        self.write(|txn| {
            if txn.open_table(TASKS)?.remove(id)?.is_none() {
                return Err(Fail::NotFound(no_task(id)));
            }
            let mut runs = txn.open_table(TASK_RUNS)?;
            runs.retain_in(run_keys(id), |_, _| false)?;
            Ok(())
        })
    }

    /// Records the start of a run: a `running` run, the task's `last_run` and run
    /// count, and drops the runs beyond [`RUNS_KEPT`]. One transaction, so the loop
    /// never sees a run started without the task saying so.
    pub fn start_task_run(
        &self,
        id: u64,
        trigger: Trigger,
        now: Timestamp,
    ) -> Result<TaskRun, StoreError> {
        self.write(|txn| {
            let mut tasks = txn.open_table(TASKS)?;
            let mut task: Task =
                get_json(&tasks, "tasks", id)?.ok_or_else(|| Fail::NotFound(no_task(id)))?;
            let mut runs = txn.open_table(TASK_RUNS)?;
            let last_seq = match runs.range(run_keys(id))?.next_back() {
                Some(row) => row?.0.value().1,
                None => 0,
            };
            let run = TaskRun {
                task: id,
                seq: last_seq + 1,
                started_at: now,
                finished_at: None,
                status: RunStatus::Running,
                answer: String::new(),
                error: None,
                session: task.session.clone(),
                turn: None,
                trigger,
            };
            put_json(&mut runs, "task_runs", (id, run.seq), &run)?;
            let oldest_kept = run.seq.saturating_sub(RUNS_KEPT - 1);
            runs.retain_in((id, 0)..(id, oldest_kept), |_, _| false)?;
            task.last_run = Some(now);
            task.runs += 1;
            put_json(&mut tasks, "tasks", id, &task)?;
            Ok(run)
        })
    }

    /// Records how a run ended, and the task's last status. A task removed meanwhile
    /// is not an error: there is nothing left to record it in.
    pub fn finish_task_run(&self, id: u64, seq: u64, end: &RunEnd) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut runs = txn.open_table(TASK_RUNS)?;
            let Some(mut run): Option<TaskRun> = get_json(&runs, "task_runs", (id, seq))? else {
                return Ok(());
            };
            run.finished_at = Some(end.at);
            run.status = end.status;
            run.answer = end.answer.clone();
            run.error = end.error.clone();
            run.turn = end.turn;
            put_json(&mut runs, "task_runs", (id, seq), &run)?;
            let mut tasks = txn.open_table(TASKS)?;
            if let Some(mut task) = get_json::<_, Task>(&tasks, "tasks", id)? {
                task.last_status = Some(end.status);
                put_json(&mut tasks, "tasks", id, &task)?;
            }
            Ok(())
        })
    }

    /// A task's runs, newest first, at most `limit`.
    pub fn task_runs(&self, id: u64, limit: usize) -> Result<Vec<TaskRun>, StoreError> {
        self.read(|txn| {
            if get_json::<_, Task>(&txn.open_table(TASKS)?, "tasks", id)?.is_none() {
                return Err(Fail::NotFound(no_task(id)));
            }
            let table = txn.open_table(TASK_RUNS)?;
            let mut out = Vec::new();
            for row in table.range(run_keys(id))?.rev().take(limit) {
                let (key, value) = row?;
                out.push(decode("task_runs", &key.value(), value.value())?);
            }
            Ok(out)
        })
    }

    /// Runs left `running` by a server that stopped without finishing them (killed,
    /// or the machine went down) become errors saying so; returns how many. Called
    /// when the scheduler starts, before any run of its own.
    pub fn settle_interrupted_runs(&self, now: Timestamp) -> Result<usize, StoreError> {
        self.write(|txn| {
            let mut runs = txn.open_table(TASK_RUNS)?;
            let mut stale = Vec::new();
            for row in runs.iter()? {
                let (key, value) = row?;
                let run: TaskRun = decode("task_runs", &key.value(), value.value())?;
                if run.status == RunStatus::Running {
                    stale.push(run);
                }
            }
            let mut tasks = txn.open_table(TASKS)?;
            for mut run in stale.iter().cloned() {
                run.status = RunStatus::Error;
                run.finished_at = Some(now);
                run.error = Some("interrupted: evolve stopped during the run".into());
                put_json(&mut runs, "task_runs", (run.task, run.seq), &run)?;
                if let Some(mut task) = get_json::<_, Task>(&tasks, "tasks", run.task)? {
                    task.last_status = Some(RunStatus::Error);
                    put_json(&mut tasks, "tasks", run.task, &task)?;
                }
            }
            Ok(stale.len())
        })
    }

    /// A time kept in [`META`] under `key` (the last run of a daily built-in job such
    /// as memory maintenance); none when never set.
    pub fn meta_time(&self, key: &str) -> Result<Option<Timestamp>, StoreError> {
        self.read(|txn| {
            let meta = txn.open_table(META)?;
            let v = meta.get(key)?.map(|v| v.value());
            Ok(v.map(|v| Timestamp::try_from(v).unwrap_or(Timestamp::MAX)))
        })
    }

    /// Keeps a time in [`META`] under `key` (times before 1970 are kept as 1970).
    pub fn set_meta_time(&self, key: &str, at: Timestamp) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.open_table(META)?
                .insert(key, u64::try_from(at).unwrap_or(0))?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::temp_path;
    use evolve_core::text::FallbackTokenizer;

    fn store(name: &str) -> Store {
        Store::open(&temp_path(name), &FallbackTokenizer).unwrap()
    }

    fn end(status: RunStatus, answer: &str, at: Timestamp) -> RunEnd {
        RunEnd {
            status,
            answer: answer.into(),
            error: None,
            turn: Some(1),
            at,
        }
    }

    #[test]
    fn ids_are_never_reused_and_removal_takes_the_runs() {
        let s = store("tasks-ids");
        let a = s
            .add_task("every 30m", "a?", "s1", Some(Level::L2), 100)
            .unwrap();
        let b = s
            .add_task("daily 07:30", "b?", "s2", Some(Level::L1), 100)
            .unwrap();
        assert_eq!((a.id, b.id), (1, 2));
        s.start_task_run(2, Trigger::Manual, 200).unwrap();
        s.remove_task(2).unwrap();
        assert!(matches!(s.task(2), Err(StoreError::NotFound(_))));
        assert!(matches!(s.remove_task(2), Err(StoreError::NotFound(_))));
        let c = s
            .add_task("every 1h", "c?", "s3", Some(Level::L2), 300)
            .unwrap();
        assert_eq!(c.id, 3, "the id of a removed task is not given again");
        s.start_task_run(3, Trigger::Manual, 400).unwrap();
        let runs = s.task_runs(3, 10).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].seq, 1, "the removed task's runs are gone");
        let ids: Vec<u64> = s.tasks().unwrap().iter().map(|t| t.id).collect();
        assert_eq!(ids, [1, 3]);
    }

    #[test]
    fn a_run_is_recorded_at_its_start_and_its_end() {
        let s = store("tasks-run");
        s.add_task("every 30m", "q", "s1", Some(Level::L2), 100)
            .unwrap();
        let run = s.start_task_run(1, Trigger::Schedule, 200).unwrap();
        let t = s.task(1).unwrap();
        assert_eq!((t.last_run, t.runs, t.last_status), (Some(200), 1, None));
        assert_eq!(s.task_runs(1, 5).unwrap()[0].status, RunStatus::Running);
        s.finish_task_run(1, run.seq, &end(RunStatus::NeedsPerson, "partial", 210))
            .unwrap();
        let r = &s.task_runs(1, 5).unwrap()[0];
        assert_eq!(
            (r.status, r.finished_at, r.answer.as_str(), r.turn),
            (RunStatus::NeedsPerson, Some(210), "partial", Some(1))
        );
        assert_eq!(s.task(1).unwrap().last_status, Some(RunStatus::NeedsPerson));
        // A run of a task removed meanwhile ends quietly.
        let run = s.start_task_run(1, Trigger::Manual, 300).unwrap();
        s.remove_task(1).unwrap();
        s.finish_task_run(1, run.seq, &end(RunStatus::Ok, "x", 310))
            .unwrap();
    }

    #[test]
    fn runs_are_listed_newest_first_and_only_the_last_ones_are_kept() {
        let s = store("tasks-keep");
        s.add_task("every 1m", "q", "s1", Some(Level::L2), 0)
            .unwrap();
        for i in 0..RUNS_KEPT + 5 {
            let run = s.start_task_run(1, Trigger::Schedule, i as i64).unwrap();
            s.finish_task_run(1, run.seq, &end(RunStatus::Ok, "a", i as i64))
                .unwrap();
        }
        let all = s.task_runs(1, usize::MAX).unwrap();
        assert_eq!(all.len() as u64, RUNS_KEPT);
        assert_eq!(all[0].seq, RUNS_KEPT + 5, "newest first");
        assert_eq!(all.last().unwrap().seq, 6, "the oldest five were dropped");
        assert_eq!(s.task_runs(1, 3).unwrap().len(), 3);
        assert_eq!(s.task(1).unwrap().runs, RUNS_KEPT + 5);
        assert!(matches!(s.task_runs(9, 3), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn runs_left_running_by_a_stopped_server_become_errors() {
        let s = store("tasks-interrupted");
        s.add_task("every 1m", "q", "s1", Some(Level::L2), 0)
            .unwrap();
        let done = s.start_task_run(1, Trigger::Schedule, 10).unwrap();
        s.finish_task_run(1, done.seq, &end(RunStatus::Ok, "a", 11))
            .unwrap();
        s.start_task_run(1, Trigger::Schedule, 20).unwrap();
        assert_eq!(s.settle_interrupted_runs(30).unwrap(), 1);
        let runs = s.task_runs(1, 5).unwrap();
        assert_eq!(runs[0].status, RunStatus::Error);
        assert!(runs[0].error.as_deref().unwrap().contains("interrupted"));
        assert_eq!(
            runs[1].status,
            RunStatus::Ok,
            "finished runs stay as they were"
        );
        assert_eq!(s.task(1).unwrap().last_status, Some(RunStatus::Error));
        assert_eq!(s.settle_interrupted_runs(40).unwrap(), 0);
    }

    #[test]
    fn meta_times_round_trip() {
        let s = store("tasks-meta");
        assert_eq!(s.meta_time("last_maintenance").unwrap(), None);
        s.set_meta_time("last_maintenance", 1_767_225_600).unwrap();
        assert_eq!(
            s.meta_time("last_maintenance").unwrap(),
            Some(1_767_225_600)
        );
    }
}
