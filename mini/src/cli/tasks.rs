//! `evolve tasks add|list|rm|run|log`: scheduled asks.
//! A task runs inside `evolve serve`; these commands add, show and remove
//! tasks, run one now and show its runs.
//!
//! Decides the command line's side: exactly one schedule option (`--cron`, `--every`,
//! `--daily`, `--at`), usage errors (exit 2) for a schedule the core cannot read, and
//! where the work happens — while `evolve serve` runs it holds the store, so every
//! command goes through its `/v1/tasks` API (with its token), which is how a task is
//! added to a running server; otherwise the store is used directly. Either way the
//! output is made from the same JSON (the shared contract). `tasks run` prints the
//! answer and exits like `evolve ask` (0 answered, 3 model failed, 4 needed a person,
//! 1 anything else).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use argh::FromArgs;
use evolve_core::sched::Schedule;
use evolve_core::text::one_line;
use serde_json::{json, Value};

use super::app::App;
use crate::agents::NoGate;
use crate::agents::{Manager, Runtime};
use crate::cancel::Cancel;
use crate::config::LoadOptions;
use crate::error::Error;
use crate::sched::tasks;
use crate::store::Trigger;
use crate::web::endpoint::ServeError;

/// Runs `tasks log` shows without `--limit`.
const DEFAULT_LOG: usize = 20;

/// Characters of a question in `tasks list`.
const LISTED_QUESTION_CHARS: usize = 50;

/// scheduled asks: add, list, remove, run now, and see their runs
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "tasks")]
pub struct TasksCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    Add(Add),
    List(List),
    Rm(Rm),
    Run(Run),
    Log(Log),
}

/// add a task: a question asked on a schedule (give exactly one of --cron, --every,
/// --daily, --at); it runs inside `evolve serve`
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
struct Add {
    /// the question, or - to read it from stdin
    #[argh(positional)]
    question: String,
    /// a 5-field cron expression "m h dom mon dow", e.g. "0 9 * * mon-fri"
    #[argh(option)]
    cron: Option<String>,
    /// an interval, e.g. 30m, 2h, 1h30m (at least 1m)
    #[argh(option)]
    every: Option<String>,
    /// every day at HH:MM local time
    #[argh(option)]
    daily: Option<String>,
    /// once, at an RFC 3339 time (without offset: local time)
    #[argh(option)]
    at: Option<String>,
    /// run tool calls up to this level without a person: L1, L2 (default) or L3
    #[argh(option)]
    allow: Option<String>,
    /// also send each run's answer to a chat: telegram:CHAT_ID
    #[argh(option)]
    deliver: Option<String>,
    /// the tokens (both models) all its runs may use together; a run beyond it is not
    /// started and its log says why (default: no limit)
    #[argh(option)]
    budget_tokens: Option<u64>,
}

/// list the tasks: schedule, next run, last status, runs
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// print JSON ({"data": [task…], "time_zone": …})
    #[argh(switch)]
    json: bool,
}

/// remove a task and its runs (its session stays)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the task's id (from `evolve tasks list`)
    #[argh(positional)]
    id: u64,
}

/// run a task now: prints the answer and exits like `evolve ask`
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "run",
    error_code(0, "answered"),
    error_code(1, "anything else went wrong"),
    error_code(3, "the model could not be reached or kept failing"),
    error_code(4, "a tool call needed a person and was refused")
)]
struct Run {
    /// the task's id
    #[argh(positional)]
    id: u64,
}

/// show a task's runs, newest first
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "log")]
struct Log {
    /// the task's id
    #[argh(positional)]
    id: u64,
    /// print JSON ({"data": [run…]})
    #[argh(switch)]
    json: bool,
    /// at most this many runs (default 20)
    #[argh(option)]
    limit: Option<usize>,
}

pub fn run(cmd: TasksCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::Add(c) => add(c, profile),
        Action::List(c) => list(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Run(c) => run_now(c, profile),
        Action::Log(c) => log(c, profile),
    }
}

/// Where the commands do their work.
enum Place {
    /// A running `evolve serve` (it holds the store).
    Serve(Remote),
    /// The store, opened here.
    Local(Arc<Runtime>),
}

fn load(profile: &Option<String>) -> Result<App, Error> {
    App::load(&LoadOptions {
        profile: profile.clone(),
        workspace: None,
    })
}

fn place(app: App) -> Result<Place, Error> {
    if let Some(remote) = Remote::find(&app)? {
        return Ok(Place::Serve(remote));
    }
    let store = app.open_store()?;
    let App { config, tokenizer } = app;
    Ok(Place::Local(Runtime::new(config, store, tokenizer)))
}

fn print_json(v: &Value) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(v).map_err(|source| Error::Encode {
        what: "output",
        source,
    })?;
    writeln!(std::io::stdout().lock(), "{text}")?;
    Ok(())
}

// ---- add ------------------------------------------------------------------------

/// The one schedule option given, as a schedule.
fn schedule_of(c: &Add, zone: &dyn evolve_core::sched::Zone) -> Result<Schedule, Error> {
    let given: Vec<(&str, &str)> = [
        ("--cron", &c.cron),
        ("--every", &c.every),
        ("--daily", &c.daily),
        ("--at", &c.at),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.as_deref().map(|v| (name, v)))
    .collect();
    let [(name, value)] = given.as_slice() else {
        return Err(Error::Usage(format!(
            "give exactly one of --cron, --every, --daily, --at (got {})",
            if given.is_empty() {
                "none".to_string()
            } else {
                given
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(" and ")
            }
        )));
    };
    let parsed = match *name {
        "--cron" => Schedule::cron(value),
        "--every" => Schedule::every(value),
        "--daily" => Schedule::daily(value),
        _ => Schedule::at_in(value, zone),
    };
    parsed.map_err(|e| Error::Usage(format!("{name} {value:?}: {e}")))
}

fn add(c: Add, profile: &Option<String>) -> Result<(), Error> {
    let allow = c
        .allow
        .as_deref()
        .map(tasks::parse_allow)
        .transpose()
        .map_err(|e| Error::Usage(format!("--{e}")))?;
    let deliver = c
        .deliver
        .as_deref()
        .map(crate::channels::parse_target)
        .transpose()
        .map_err(|e| Error::Usage(format!("--deliver: {e}")))?;
    let question = super::positional_or_stdin(&c.question)?;
    let question = question.trim();
    if question.is_empty() {
        return Err(Error::Usage("the question is empty".into()));
    }
    let app = load(profile)?;
    let zone = app.config.scheduler.resolve();
    let schedule = schedule_of(&c, &zone.zone)?;
    let task = match place(app)? {
        Place::Serve(remote) => {
            let mut body = json!({"schedule": schedule.to_string(), "question": question});
            if let Some(l) = allow {
                body["allow"] = json!(l.to_string());
            }
            if let Some(d) = &deliver {
                body["deliver"] = json!(d);
            }
            if let Some(b) = c.budget_tokens {
                body["budget_tokens"] = json!(b);
            }
            remote.call("POST", "/v1/tasks", Some(body))?
        }
        Place::Local(rt) => {
            let mut task = tasks::add_task(
                &rt,
                &schedule,
                question,
                allow,
                deliver.as_deref(),
                crate::clock::now(),
            )?;
            if let Some(b) = c.budget_tokens {
                task = rt
                    .store
                    .update_task(task.id, |t| t.budget_tokens = Some(b))?;
            }
            crate::sched::show::task_json(
                &task,
                &zone.zone,
                false,
                rt.config.core.permission.headless_max_auto,
            )
        }
    };
    let next = task["next_run"].as_str().unwrap_or("none");
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "task {} added: {}; next run {next} ({}); allow {}",
        task["id"],
        task["schedule"].as_str().unwrap_or_default(),
        zone.name,
        task["allow"].as_str().unwrap_or_default(),
    )?;
    if let Schedule::At { utc } = schedule {
        if utc <= crate::clock::now() {
            writeln!(
                out,
                "that time has passed: the task runs once as soon as `evolve serve` runs"
            )?;
        }
    }
    let session = task["session"].as_str().unwrap_or_default();
    writeln!(
        out,
        "its runs are turns of session {session} (`evolve sessions show {session}`); it runs \
         while `evolve serve` runs"
    )?;
    Ok(())
}

// ---- list, rm, log --------------------------------------------------------------

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let doc = match place(load(profile)?)? {
        Place::Serve(remote) => remote.call("GET", "/v1/tasks", None)?,
        Place::Local(rt) => {
            let zone = tasks::zone_of(&rt);
            let data: Vec<Value> = rt
                .store
                .tasks()?
                .iter()
                .map(|t| {
                    crate::sched::show::task_json(
                        t,
                        &zone.zone,
                        false,
                        rt.config.core.permission.headless_max_auto,
                    )
                })
                .collect();
            json!({"data": data, "time_zone": zone.name})
        }
    };
    if c.json {
        return print_json(&doc);
    }
    let mut out = std::io::stdout().lock();
    let empty = Vec::new();
    let all = doc["data"].as_array().unwrap_or(&empty);
    if all.is_empty() {
        writeln!(
            out,
            "no tasks — add one with `evolve tasks add --every 1h \"QUESTION\"`"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>3}  {:<22}  {:<25}  {:<12}  {:>4}  question",
        "id", "schedule", "next run", "last", "runs"
    )?;
    let s = |v: &Value| v.as_str().unwrap_or("-").to_string();
    for t in all {
        let last = if t["running"] == true {
            "running".to_string()
        } else {
            s(&t["last_status"])
        };
        writeln!(
            out,
            "{:>3}  {:<22}  {:<25}  {:<12}  {:>4}  {}",
            t["id"].as_u64().unwrap_or_default(),
            s(&t["schedule"]),
            s(&t["next_run"]),
            last,
            t["runs"].as_u64().unwrap_or_default(),
            super::printable(
                &one_line(
                    t["question"].as_str().unwrap_or_default(),
                    LISTED_QUESTION_CHARS
                ),
                false
            )
        )?;
    }
    writeln!(out, "(times in {})", s(&doc["time_zone"]))?;
    Ok(())
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    match place(load(profile)?)? {
        Place::Serve(remote) => {
            remote.call("DELETE", &format!("/v1/tasks/{}", c.id), None)?;
        }
        Place::Local(rt) => tasks::remove_task(&rt.store, None, c.id)?,
    }
    writeln!(
        std::io::stdout().lock(),
        "removed task {} and its runs (its session stays: `evolve sessions list`)",
        c.id
    )?;
    Ok(())
}

fn log(c: Log, profile: &Option<String>) -> Result<(), Error> {
    let limit = c.limit.unwrap_or(DEFAULT_LOG).max(1);
    let doc = match place(load(profile)?)? {
        Place::Serve(remote) => remote.call(
            "GET",
            &format!("/v1/tasks/{}/runs?limit={limit}", c.id),
            None,
        )?,
        Place::Local(rt) => {
            let zone = tasks::zone_of(&rt);
            let data: Vec<Value> = rt
                .store
                .task_runs(c.id, limit)?
                .iter()
                .map(|r| crate::sched::show::run_json(r, &zone.zone))
                .collect();
            json!({ "data": data })
        }
    };
    if c.json {
        return print_json(&doc);
    }
    let mut out = std::io::stdout().lock();
    let empty = Vec::new();
    let runs = doc["data"].as_array().unwrap_or(&empty);
    if runs.is_empty() {
        writeln!(
            out,
            "task {} has not run yet (`evolve tasks run {}` runs it now)",
            c.id, c.id
        )?;
        return Ok(());
    }
    for r in runs {
        let turn = r["turn"]
            .as_u64()
            .map(|t| format!(", turn {t}"))
            .unwrap_or_default();
        let code = r["exit_code"]
            .as_u64()
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default();
        writeln!(
            out,
            "{}  {}{code}  {}{turn}",
            r["started_at"].as_str().unwrap_or_default(),
            r["status"].as_str().unwrap_or_default(),
            r["trigger"].as_str().unwrap_or_default(),
        )?;
        if let Some(e) = r["error"].as_str() {
            writeln!(out, "  {}", super::printable(&one_line(e, 200), false))?;
        }
        let answer = r["answer"].as_str().unwrap_or_default();
        if !answer.is_empty() {
            writeln!(out, "  {}", super::printable(&one_line(answer, 200), false))?;
        }
    }
    Ok(())
}

// ---- run ------------------------------------------------------------------------

fn run_now(c: Run, profile: &Option<String>) -> Result<(), Error> {
    let app = load(profile)?;
    let wait = app.config.agent.background_wait;
    match place(app)? {
        Place::Serve(remote) => run_remote(&remote, c.id),
        Place::Local(rt) => {
            let manager = Manager::new(rt);
            let cancel = Arc::new(Cancel::new());
            let outcome = tasks::run_task(&manager, c.id, Trigger::Manual, &cancel, &NoGate)?;
            let reply = outcome.reply.trim_end();
            if !reply.is_empty() {
                writeln!(std::io::stdout().lock(), "{reply}")?;
            }
            if !manager.flush(wait) {
                log::warn!(
                    "the background work (memories, evaluation) did not finish within {} s; it is skipped",
                    wait.as_secs()
                );
            }
            match outcome.error {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
    }
}

/// Starts the run on the server, waits for it to end, prints its (clipped) answer and
/// turns its status into `ask`'s exit code.
fn run_remote(remote: &Remote, id: u64) -> Result<(), Error> {
    let path = format!("/v1/tasks/{id}");
    let before = remote.call("GET", &path, None)?["runs"]
        .as_u64()
        .unwrap_or(0);
    remote.call("POST", &format!("{path}/run"), None)?;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let task = remote.call("GET", &path, None)?;
        if task["running"] == false && task["runs"].as_u64().unwrap_or(0) > before {
            break;
        }
    }
    let runs = remote.call("GET", &format!("{path}/runs?limit=1"), None)?;
    let run = &runs["data"][0];
    let answer = run["answer"].as_str().unwrap_or_default().trim_end();
    if !answer.is_empty() {
        writeln!(std::io::stdout().lock(), "{answer}")?;
    }
    let error = run["error"].as_str().unwrap_or_default().to_string();
    match run["status"].as_str() {
        Some("ok") => Ok(()),
        Some("needs_person") => Err(Error::NeedsPerson(error)),
        Some("model_error") => Err(Error::Remote(3, error)),
        _ => Err(Error::Remote(1, error)),
    }
}

// ---- the running server ---------------------------------------------------------

/// A running `evolve serve` of this home, reached over HTTP with its token.
struct Remote {
    agent: ureq::Agent,
    base: String,
    token: String,
}

impl Remote {
    /// The running server, if there is one (and this process is not it).
    fn find(app: &App) -> Result<Option<Remote>, Error> {
        let Some((ep, token)) = crate::web::endpoint::running_with_token(&app.config.home)? else {
            return Ok(None);
        };
        log::info!(
            "a running evolve serve (pid {}) handles this command",
            ep.pid
        );
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(3)))
            .build()
            .into();
        Ok(Some(Remote {
            agent,
            base: format!("http://{}", ep.addr),
            token,
        }))
    }

    /// One request; a 2xx answer's JSON, or the server's error as `ask` reports one
    /// (400 is a usage error, exit 2).
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, Error> {
        let url = format!("{}{path}", self.base);
        let auth = format!("Bearer {}", self.token);
        let result = match method {
            "POST" => self
                .agent
                .post(&url)
                .header("Content-Type", "application/json")
                .header("Authorization", &auth)
                .send(body.unwrap_or_else(|| json!({})).to_string()),
            "DELETE" => self
                .agent
                .delete(&url)
                .header("Authorization", &auth)
                .call(),
            _ => self.agent.get(&url).header("Authorization", &auth).call(),
        };
        let mut resp = result.map_err(|e| ServeError::Request {
            at: self.base.clone(),
            source: Box::new(e),
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| ServeError::Answer(Box::new(e)))?;
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        if (200..300).contains(&status) {
            return Ok(v);
        }
        let message = v["error"]["message"]
            .as_str()
            .unwrap_or(text.as_str())
            .to_string();
        Err(match status {
            400 => Error::Usage(message),
            _ => Error::Remote(1, message),
        })
    }
}
