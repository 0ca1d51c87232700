//! `evolve ask`: one headless question for scripts and cron (DESIGN.md "Command-line
//! contract"). The answer goes to stdout, logs to stderr. Nothing is interactive: a call
//! that needs a person is refused and reported (exit 4), calls above `--allow` (default
//! L2) are refused, `--yes` allows up to L3, never L4 or L5.
//!
//! Exit codes: 0 answered; 2 usage or configuration error; 3 the model could not be
//! reached or kept failing; 4 a tool call needed a person and was refused (the answer so
//! far is printed); 1 anything else.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use argh::FromArgs;
use evolve_core::permission::{Decision, Level, PendingCall, Policy, RefusalReason};
use evolve_core::text::Lang;

use super::app::App;
use crate::agents::{Approval, Manager, Runtime, TurnInput, TurnIo};
use crate::config::LoadOptions;
use crate::error::Error;

/// ask one question headlessly: the answer on stdout, for scripts and cron
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "ask",
    error_code(0, "answered"),
    error_code(1, "anything else went wrong"),
    error_code(2, "usage or configuration error"),
    error_code(3, "the model could not be reached or kept failing"),
    error_code(
        4,
        "a tool call needed a person and was refused (the answer is still printed)"
    )
)]
pub struct AskCmd {
    /// the question, or - to read it from stdin
    #[argh(positional)]
    question: String,
    /// print the whole turn record as JSON (reply, session, memories, tools, score, usage)
    #[argh(switch)]
    json: bool,
    /// continue this session instead of starting a new one
    #[argh(option)]
    session: Option<String>,
    /// run tool calls up to this level without asking: L1, L2 (default) or L3
    #[argh(option)]
    allow: Option<String>,
    /// allow calls up to L3 (never L4 or L5)
    #[argh(switch)]
    yes: bool,
    /// use this configuration profile
    #[argh(option)]
    profile: Option<String>,
    /// file tools work inside this directory (default $EVOLVE_HOME/workspace)
    #[argh(option)]
    workspace: Option<PathBuf>,
    /// make the model call this tool first (its permission check still applies)
    #[argh(option)]
    tool: Option<String>,
}

/// A headless run: nobody to ask. The policy refuses before `approve` could be called;
/// should it be called anyway, the answer is no.
struct Headless;

impl TurnIo for Headless {
    fn approve(&mut self, call: &mut PendingCall, _lang: Lang) -> Approval {
        log::warn!("{} needs a person; refused in a headless run", call.tool);
        Approval::Refused
    }
}

pub fn run(cmd: AskCmd) -> Result<(), Error> {
    let allow = match cmd.allow.as_deref() {
        None => None,
        Some(s) => match s.parse::<Level>() {
            Ok(l) if l <= Level::L3 => Some(l),
            Ok(l) => {
                return Err(Error::Usage(format!(
                    "--allow {l}: ask never runs L4 or L5 calls without a person; use evolve chat"
                )))
            }
            Err(e) => return Err(Error::Usage(format!("--allow {s}: {e}"))),
        },
    };
    let question = super::positional_or_stdin(&cmd.question)?;
    if question.trim().is_empty() {
        return Err(Error::Usage("the question is empty".into()));
    }
    let app = App::load(&LoadOptions {
        profile: cmd.profile.clone(),
        workspace: cmd.workspace.clone(),
    })?;
    let policy = Policy::headless(allow, cmd.yes, &app.config.core.permission);
    let store = app.open_store()?;
    if let Some(id) = cmd.session.as_deref() {
        if let Err(e) = store.session(id) {
            return Err(match e {
                crate::store::StoreError::NotFound(_) => Error::Usage(format!(
                    "--session {id}: no such session (`evolve sessions list` shows them)"
                )),
                other => other.into(),
            });
        }
    }
    let wait = app.config.agent.background_wait;
    let App { config, tokenizer } = app;
    let manager = Manager::new(Runtime::new(config, store, tokenizer));
    if let Some(name) = cmd.tool.as_deref() {
        let tools = &manager.runtime().tools;
        if !tools.has(name) {
            let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
            return Err(Error::Usage(format!(
                "--tool {name}: no such tool; the tools are {}",
                names.join(", ")
            )));
        }
    }
    let cancel = AtomicBool::new(false);
    let (mut record, post) = manager.turn(
        TurnInput {
            session: cmd.session.as_deref(),
            text: question.trim(),
            policy,
            stream: false,
            cancel: &cancel,
            force_tool: cmd.tool.as_deref(),
        },
        &mut Headless,
    )?;
    let mut out = std::io::stdout().lock();
    if cmd.json {
        // The record includes the evaluation and reflection: wait for them (bounded).
        let started = Instant::now();
        match post.recv_timeout(wait) {
            Ok(p) => {
                record.absorb(&p);
                for problem in &p.problems {
                    log::info!("after the answer: {problem}");
                }
            }
            Err(_) => log::warn!(
                "the background work did not finish within {} s; the record has no evaluation",
                started.elapsed().as_secs()
            ),
        }
        let json = serde_json::to_string_pretty(&record)
            .map_err(|e| Error::Other(format!("cannot encode the turn record: {e}")))?;
        writeln!(out, "{json}")?;
    } else {
        writeln!(out, "{}", record.reply.trim_end())?;
        out.flush()?;
        if !manager.flush(wait) {
            log::warn!(
                "the background work (memories, evaluation) did not finish within {} s; it is skipped",
                wait.as_secs()
            );
        }
    }
    drop(out);
    if record.needs_person {
        let refused: Vec<(String, Level)> = record
            .tools
            .iter()
            .filter(|t| {
                !t.ran
                    && matches!(
                        t.decision,
                        Some(Decision::Refuse(RefusalReason::NeedsPerson { .. }))
                    )
            })
            .map(|t| (t.name.clone(), t.level.unwrap_or(Level::L4)))
            .collect();
        let names: Vec<String> = refused.iter().map(|(n, l)| format!("{n} ({l})")).collect();
        let hint = if refused.iter().any(|(_, l)| *l > Level::L3) {
            "L4 calls always need a person: run it in `evolve chat`"
        } else {
            "allow L3 calls with --yes (or --allow L3), or run it in `evolve chat`"
        };
        return Err(Error::NeedsPerson(format!(
            "refused tool calls that need a person: {} — {hint}",
            names.join(", ")
        )));
    }
    if record.reply.trim().is_empty() {
        return Err(Error::Other(format!(
            "the model returned an empty answer (session {}) — try again, or check the model with `evolve doctor`",
            record.session
        )));
    }
    Ok(())
}
