//! `evolve usage`: the model work the turn records counted (prompt and completion
//! tokens, as the model server reported them), summed for today, per session, per
//! scheduled task and per model — the main model (answers, tool planning) and the cheap
//! one (titles, memories, grades, summaries) — with what it cost when prices are
//! configured, and today's use against `[model] daily_tokens`. A turn records its usage
//! by role; the model names shown are the ones configured now.

use std::io::Write;

use argh::FromArgs;
use serde::Serialize;

use crate::cli::app::App;
use crate::config::Config;
use crate::error::Error;
use crate::store::{today_start, Ledger, Sum, Tokens};

/// show the tokens the models used: today, per session and per model
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "usage")]
pub struct UsageCmd {
    /// print JSON
    #[argh(switch)]
    json: bool,
}

/// One session's sums.
#[derive(Debug, Clone, Serialize)]
pub struct SessionLine {
    pub session: String,
    pub title: String,
    #[serde(flatten)]
    pub sum: Sum,
}

/// One scheduled task's sums.
#[derive(Debug, Clone, Serialize)]
pub struct TaskLine {
    pub task: u64,
    pub name: String,
    pub runs: u64,
    pub main: Tokens,
    pub cheap: Tokens,
    /// What they cost, when prices are configured.
    pub cost: Option<f64>,
}

/// One model's sums.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSum {
    /// `main` or `cheap`.
    pub role: &'static str,
    /// The model configured for the role now.
    pub model: String,
    pub turns: u64,
    #[serde(flatten)]
    pub tokens: Tokens,
    /// What they cost, when the model's price is configured.
    pub cost: Option<f64>,
}

/// Everything `evolve usage` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Turns since local midnight.
    pub today: Sum,
    pub total: Sum,
    /// Today's and the total cost, when prices are configured (`[model]
    /// price_in_per_mtok` …).
    pub cost_today: Option<f64>,
    pub cost_total: Option<f64>,
    /// `[model] daily_tokens`, when set.
    pub daily_tokens: Option<u64>,
    pub models: Vec<ModelSum>,
    /// Most tokens first.
    pub sessions: Vec<SessionLine>,
    /// Most tokens first.
    pub tasks: Vec<TaskLine>,
}

pub fn run(cmd: UsageCmd, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let ledger = store.ledger(today_start(crate::clock::now()), 1)?;
    let report = report(ledger, &app.config);
    let mut out = std::io::stdout().lock();
    if cmd.json {
        let text = serde_json::to_string_pretty(&report).map_err(|source| Error::Encode {
            what: "usage",
            source,
        })?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let line = |s: &Sum| {
        format!(
            "{} turns, main {} tokens ({} in, {} out), cheap {} tokens ({} in, {} out)",
            s.turns,
            s.main.total(),
            s.main.prompt_tokens,
            s.main.completion_tokens,
            s.cheap.total(),
            s.cheap.prompt_tokens,
            s.cheap.completion_tokens
        )
    };
    let cost = |c: Option<f64>| c.map(|c| format!(", cost {c:.4}")).unwrap_or_default();
    writeln!(
        out,
        "today: {}{}",
        line(&report.today),
        cost(report.cost_today)
    )?;
    if let Some(limit) = report.daily_tokens {
        writeln!(
            out,
            "today's budget: {} of {limit} tokens used ([model] daily_tokens)",
            report.today.total()
        )?;
    }
    writeln!(
        out,
        "total: {}{}",
        line(&report.total),
        cost(report.cost_total)
    )?;
    writeln!(out, "per model:")?;
    for m in &report.models {
        writeln!(
            out,
            "  {:<5} {}: {} tokens ({} in, {} out){}",
            m.role,
            m.model,
            m.tokens.total(),
            m.tokens.prompt_tokens,
            m.tokens.completion_tokens,
            cost(m.cost)
        )?;
    }
    writeln!(out, "per session:")?;
    for s in &report.sessions {
        writeln!(out, "  {} {:?}: {}", s.session, s.title, line(&s.sum))?;
    }
    if !report.tasks.is_empty() {
        writeln!(out, "per task:")?;
        for t in &report.tasks {
            let sum = Sum {
                turns: t.runs,
                main: t.main,
                cheap: t.cheap,
            };
            writeln!(
                out,
                "  task {} {:?}: {}{}",
                t.task,
                t.name,
                line(&sum).replacen("turns", "runs", 1),
                cost(t.cost)
            )?;
        }
    }
    Ok(())
}

/// The report of the ledger, with costs from the configured prices.
fn report(ledger: Ledger, config: &Config) -> Report {
    let spending = &config.spending;
    let none = Tokens::default();
    let models = vec![
        ModelSum {
            role: "main",
            model: config.model.main.clone(),
            turns: ledger.total.turns,
            tokens: ledger.total.main,
            cost: spending.cost(ledger.total.main, none),
        },
        ModelSum {
            role: "cheap",
            model: config.model.cheap.clone(),
            turns: ledger.total.turns,
            tokens: ledger.total.cheap,
            cost: spending.cost(none, ledger.total.cheap),
        },
    ];
    Report {
        cost_today: spending.cost(ledger.today.main, ledger.today.cheap),
        cost_total: spending.cost(ledger.total.main, ledger.total.cheap),
        daily_tokens: spending.daily_tokens,
        today: ledger.today,
        total: ledger.total,
        models,
        sessions: ledger
            .sessions
            .into_iter()
            .map(|s| SessionLine {
                session: s.session,
                title: s.title,
                sum: s.sum,
            })
            .collect(),
        tasks: ledger
            .tasks
            .into_iter()
            .map(|t| TaskLine {
                cost: spending.cost(t.sum.main, t.sum.cheap),
                task: t.task,
                name: t.name,
                runs: t.runs,
                main: t.sum.main,
                cheap: t.sum.cheap,
            })
            .collect(),
    }
}
