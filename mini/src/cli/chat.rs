//! `evolve chat`: the terminal conversation. Streams the answer as it arrives, shows
//! each tool call, asks before calls that need a person (L3 once, L4 twice — the second
//! question repeats the exact arguments; "always" grants L1–L3 tools for the session),
//! and has slash commands for memory, skills, sessions, reflection and permissions.
//! Ctrl-C stops the current answer; at the prompt Ctrl-C or Ctrl-D (EOF) ends.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use argh::FromArgs;
use evolve_core::permission::{AnswerOutcome, Decision, Level, PendingCall, Policy, RefusalReason};
use evolve_core::text::{one_line, KeywordSet, Lang};

use super::app::{now, open_store, App, STORE_WAIT};
use super::interrupt;
use super::printable;
use crate::agents::{Approval, Manager, Runtime, ToolRun, TurnInput, TurnIo};
use crate::config::LoadOptions;
use crate::error::Error;
use crate::llm::{Delta, LlmError};

/// talk with the agent in the terminal
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "chat")]
pub struct ChatCmd {
    /// continue this session
    #[argh(option)]
    session: Option<String>,
    /// file tools work inside this directory (default $EVOLVE_HOME/workspace)
    #[argh(option)]
    workspace: Option<PathBuf>,
}

const HELP: &str = "\
Type a message and press Enter. Commands:
  /memory [QUERY]        the memories that would be used (for QUERY), or the newest ones
  /skills                the skills the agent can use
  /session new|list|switch ID
  /reflect               reflect on this session now and save the lesson
  /permissions           tool levels, what is asked, and this session's grants
  /mcp                   the MCP servers and whether they are connected
  /mcp tools [NAME]      start them and list their tools with each tool's level
  /mcp level TOOL LEVEL  set an MCP tool's level (L0-L5, or auto)
  /mcp add|rm|import|enable|disable …   manage servers as `evolve mcp` does
  /help                  this help
  /quit                  leave (Ctrl-D works too)
Ctrl-C stops an answer. 命令同上；输入 /help 查看帮助。";

/// The terminal side of a turn.
struct Terminal<'a> {
    lines: &'a mut dyn Iterator<Item = String>,
    streamed: bool,
}

impl Terminal<'_> {
    fn say(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

impl TurnIo for Terminal<'_> {
    fn on_delta(&mut self, delta: &Delta<'_>) {
        if let Delta::Content(text) = delta {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(printable(text, true).as_bytes());
            let _ = out.flush();
            self.streamed = true;
        }
    }

    fn on_tool_start(&mut self, name: &str, arguments: &str, level: Level) {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        self.say(&format!(
            "  ⚙ {name} {} [{level}]",
            one_line(arguments, 160)
        ));
    }

    fn on_tool_end(&mut self, run: &ToolRun) {
        if !run.ran {
            let why = match (run.answer.as_deref(), run.decision) {
                (Some(answer), _) => answer.to_string(),
                (None, Some(Decision::Refuse(RefusalReason::Dangerous))) => format!(
                    "{}: dangerous, never run",
                    run.level.map_or("L5".to_string(), |l| l.to_string())
                ),
                _ => "refused".to_string(),
            };
            self.say(&format!(
                "  ✗ {} not run ({why})",
                printable(&run.name, false)
            ));
        } else if run.is_error {
            self.say(&format!("  ✗ {} failed", run.name));
        }
    }

    fn approve(&mut self, call: &mut PendingCall, lang: Lang) -> Approval {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        loop {
            let always = call.level <= Level::L3;
            let choices = match (lang, always) {
                (Lang::Zh, true) => "[是/否/总是]",
                (Lang::Zh, false) => "[是/否]",
                (Lang::En, true) => "[yes/no/always]",
                (Lang::En, false) => "[yes/no]",
            };
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{} {choices} ", printable(&call.prompt(lang), true));
            let _ = out.flush();
            drop(out);
            let Some(line) = self.lines.next() else {
                self.say("");
                return Approval::Refused;
            };
            if interrupt::cancelled() {
                self.say("(cancelled: the call is refused)");
                return Approval::Refused;
            }
            let reply = line.trim().to_lowercase();
            if always && matches!(reply.as_str(), "always" | "a" | "总是" | "始终" | "一直") {
                return Approval::AlwaysForSession;
            }
            match call.answer(&line) {
                AnswerOutcome::Run => return Approval::Run,
                AnswerOutcome::Refused => return Approval::Refused,
                AnswerOutcome::AskAgain | AnswerOutcome::NeedSecondConfirmation => continue,
            }
        }
    }
}

/// Lines of stdin without their newline; `None` at EOF or on a read error.
fn stdin_lines() -> impl Iterator<Item = String> {
    let stdin = std::io::stdin();
    std::iter::from_fn(move || {
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
        }
    })
}

pub fn run(cmd: ChatCmd, profile: &Option<String>) -> Result<(), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        workspace: cmd.workspace.clone(),
    })?;
    let wait = app.config.agent.background_wait;
    let stream = app.config.model.stream;
    let banner = format!(
        "evolve {} — model {} at {} · /help for commands, Ctrl-D to leave",
        env!("CARGO_PKG_VERSION"),
        app.config.model.main,
        crate::secret::display_url(&app.config.model.base_url)
    );
    let store = open_store(&app.config, &app.tokenizer, STORE_WAIT.max(wait))?;
    if let Some(id) = &cmd.session {
        store.session(id)?;
    }
    let App { config, tokenizer } = app;
    let manager = Arc::new(Manager::new(Runtime::new(config, store, tokenizer)));
    // The store is closed whenever chat waits (at the prompt, for the model, for a
    // person), so a cron `ask` can run while a chat window is open.
    manager.runtime().store.release();
    let mut session = cmd.session.clone();
    let tty = std::io::stdin().is_terminal();
    interrupt::install();
    let mut lines = stdin_lines();
    if tty {
        eprintln!("{banner}");
    }
    // Ctrl-C at the prompt ends chat once the last answer's background work is saved.
    let watcher = Arc::clone(&manager);
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(50));
        if interrupt::quit_requested() {
            watcher.flush(wait);
            watcher.runtime().mcp.shutdown();
            println!();
            std::process::exit(130);
        }
    });
    loop {
        if tty {
            print!("› ");
            let _ = std::io::stdout().flush();
        }
        let Some(line) = lines.next() else { break };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        // From here until the next prompt Ctrl-C cancels what runs, not chat.
        interrupt::begin_turn();
        // The previous answer's background work finishes first: its memories are then
        // in place for this one.
        manager.flush(wait);
        let go_on = input(text, &manager, &mut session, &mut lines, stream);
        // Closed once this input's background work is done.
        manager.release_when_idle();
        interrupt::end_turn();
        if !go_on {
            break;
        }
    }
    if !manager.flush(wait) {
        log::warn!(
            "the background work did not finish within {} s",
            wait.as_secs()
        );
    }
    // The watcher thread keeps the manager alive: stop the MCP servers here.
    manager.runtime().mcp.shutdown();
    if interrupt::quit_requested() {
        // Ctrl-C at the prompt, while the last work was being saved.
        println!();
        std::process::exit(130);
    }
    Ok(())
}

/// One line typed at the prompt: a slash command or a turn. `false` ends chat.
fn input(
    text: &str,
    manager: &Manager,
    session: &mut Option<String>,
    lines: &mut dyn Iterator<Item = String>,
    stream: bool,
) -> bool {
    if let Some(command) = text.strip_prefix('/') {
        return match slash(command, manager, session) {
            Ok(go_on) => go_on,
            Err(e) => {
                eprintln!("evolve: {e}");
                true
            }
        };
    }
    let mut term = Terminal {
        lines,
        streamed: false,
    };
    let result = manager.turn(
        TurnInput {
            session: session.as_deref(),
            text,
            policy: Policy::Interactive,
            stream,
            cancel: &interrupt::CANCEL,
            force_tool: None,
        },
        &mut term,
    );
    let streamed = term.streamed;
    match result {
        Ok((record, _post)) => {
            if streamed {
                println!();
            } else if record.reply.trim().is_empty() {
                println!("(the model returned an empty answer)");
            } else {
                println!("{}", printable(record.reply.trim_end(), true));
            }
            let big = record.reply.len() >= crate::heap::BIG_ANSWER;
            *session = Some(record.session.clone());
            drop(record);
            if big {
                crate::heap::give_back();
            }
        }
        Err(e) => {
            if let Error::Model(LlmError::Cancelled) = e {
                println!("\n(cancelled)");
            } else {
                if streamed {
                    // The part of the answer that arrived stays; the error starts a line.
                    println!();
                }
                eprintln!("evolve: {e}");
            }
            // The question (and any tool rounds) stay in the session: go on there.
            *session = manager.last_session();
        }
    }
    true
}

/// Runs a slash command; `Ok(false)` ends the chat.
fn slash(command: &str, manager: &Manager, session: &mut Option<String>) -> Result<bool, Error> {
    let rt = manager.runtime();
    let (name, rest) = command.split_once(' ').unwrap_or((command, ""));
    let rest = rest.trim();
    match name {
        "quit" | "exit" | "q" => return Ok(false),
        "help" | "h" | "?" => {
            println!("{HELP}");
            println!("The agents of each turn:");
            for agent in crate::agents::all(manager) {
                println!(
                    "  {:<9} {:<11} {}",
                    agent.id(),
                    agent.name(),
                    agent.description()
                );
            }
        }
        "memory" | "memories" => {
            if rest.is_empty() {
                let mut shown = 0;
                rt.store.with_memories(|all| {
                    for m in all.iter().rev().take(20) {
                        println!(
                            "  #{} [{}] {}",
                            m.id,
                            m.priority.name(),
                            printable(&one_line(&m.content, 100), false)
                        );
                        shown += 1;
                    }
                });
                if shown == 0 {
                    println!("  no memories yet — tell me something worth remembering");
                }
            } else {
                let keywords = KeywordSet::of(&rt.tokenizer, rest);
                let query = evolve_core::memory::RecallQuery::new(&keywords);
                rt.store.with_indexed_memories(|all, index| {
                    let cfg = &rt.config.core.memory;
                    let sel = evolve_core::memory::select_query(
                        all,
                        Some(index),
                        &query,
                        None,
                        now(),
                        cfg,
                    );
                    if sel.chosen.is_empty() {
                        println!("  no memory matches");
                    }
                    for c in &sel.chosen {
                        println!(
                            "  #{} {:.3} {:?} {}",
                            c.id,
                            c.score,
                            c.reason,
                            printable(&one_line(&all[c.index].content, 100), false)
                        );
                    }
                });
            }
        }
        "skills" => {
            let catalog = rt.skills.current();
            let all = catalog.all();
            if all.is_empty() {
                println!("  no skills installed (add $EVOLVE_HOME/skills/NAME/SKILL.md)");
            }
            for s in all {
                println!(
                    "  {} — {} ({})",
                    s.summary.name,
                    one_line(&s.summary.description, 100),
                    s.origin
                );
            }
        }
        "session" | "sessions" => {
            let (sub, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            match sub {
                "new" => {
                    *session = None;
                    println!("  a new session starts with your next message");
                }
                "list" | "" => {
                    for s in rt.store.sessions()?.iter().take(20) {
                        let mark = if session.as_deref() == Some(s.id.as_str()) {
                            "*"
                        } else {
                            " "
                        };
                        println!(
                            "  {mark} {} {:>3} turns  {}",
                            s.id,
                            s.turns,
                            printable(&one_line(&s.title, 60), false)
                        );
                    }
                }
                "switch" => {
                    let id = arg.trim();
                    let s = rt.store.session(id)?;
                    println!(
                        "  switched to {} ({} turns): {}",
                        s.id,
                        s.turns,
                        printable(&s.title, false)
                    );
                    *session = Some(s.id);
                }
                other => println!("  unknown: /session {other} — use new, list or switch ID"),
            }
        }
        "reflect" => match session.as_deref() {
            None => println!("  nothing to reflect on yet in this session"),
            Some(id) => {
                manager.flush(Duration::from_secs(30));
                let (lesson, problems) = manager.reflect_now(id, &interrupt::CANCEL);
                match lesson {
                    Some(l) => println!("  lesson saved: {}", printable(&l, false)),
                    None if problems.is_empty() => println!("  no lesson this time"),
                    None => println!("  reflection failed: {}", problems.join("; ")),
                }
            }
        },
        "permissions" | "perms" => {
            println!("  level  meaning                                        in chat");
            for level in Level::ALL {
                let action = match level {
                    Level::L0 | Level::L1 | Level::L2 => "runs",
                    Level::L3 => "asks once",
                    Level::L4 => "asks twice",
                    Level::L5 => "refused, never runs",
                };
                println!("  {level}     {:<46} {action}", level.meaning());
            }
            println!(
                "  shell: {} (config permission.shell_level)",
                rt.config.core.permission.shell_level
            );
            let recent = rt.store.audit_log(5)?;
            if !recent.is_empty() {
                println!("  last tool decisions:");
                for e in recent {
                    let answer = e
                        .answer
                        .map(|a| format!(", answered {a:?}"))
                        .unwrap_or_default();
                    println!("    {} {} → {:?}{answer}", e.tool, e.level, e.decision);
                }
            }
            if let Some(id) = session.as_deref() {
                let grants = rt.store.grants(id)?;
                if grants.is_empty() {
                    println!("  no \"always\" grants in this session");
                } else {
                    let names: Vec<String> = grants
                        .iter()
                        .map(evolve_core::permission::Grant::label)
                        .collect();
                    println!("  always allowed in this session: {}", names.join(", "));
                }
            }
        }
        "mcp" => mcp_command(rt, rest)?,
        other => println!("  unknown command /{other} — /help lists them"),
    }
    Ok(true)
}

/// `/mcp`, `/mcp tools [NAME]`, `/mcp level TOOL LEVEL`, `/mcp add|rm|import|enable|
/// disable …`: the same as `evolve mcp …`.
fn mcp_command(rt: &Runtime, rest: &str) -> Result<(), Error> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        [] | ["list"] => {
            let connected = rt.mcp.connected();
            let mut out = std::io::stdout().lock();
            super::mcp::write_servers(&mut out, &rt.config, &rt.mcp.specs(), Some(&connected))?;
        }
        ["tools"] => super::mcp::chat_tools(rt, None, &interrupt::CANCEL)?,
        ["tools", name] => super::mcp::chat_tools(rt, Some(name), &interrupt::CANCEL)?,
        ["level", tool, level] => {
            let said = super::mcp::set_level(&rt.config, &rt.store, &rt.mcp.specs(), tool, level)?;
            println!("  {said}");
        }
        [action, ..] if ["add", "rm", "import", "enable", "disable"].contains(action) => {
            manage_mcp(rt, &words)?
        }
        _ => println!(
            "  usage: /mcp, /mcp tools [NAME], /mcp level SERVER__TOOL L0-L5|auto, \
             /mcp add|rm|import|enable|disable … (as `evolve mcp`)"
        ),
    }
    Ok(())
}

/// `/mcp add|rm|import|enable|disable …`: `evolve mcp …` run from chat, then the
/// servers of this chat reloaded (new ones start on first use, removed and changed
/// ones stop).
fn manage_mcp(rt: &Runtime, words: &[&str]) -> Result<(), Error> {
    let cmd = match super::mcp::McpCmd::from_args(&["/mcp"], words) {
        Ok(cmd) => cmd,
        Err(early) => {
            println!("{}", early.output.trim_end());
            return Ok(());
        }
    };
    // The command opens the store itself: this chat lets go of it first.
    rt.store.release();
    // It works on this chat's profile.
    if let Err(e) = super::mcp::run(cmd, &Some(rt.config.profile.clone())) {
        println!("  {e}");
        return Ok(());
    }
    let servers = crate::mcp::servers::load(&rt.config, &rt.store)?;
    crate::mcp::hide_secret_variables(&servers);
    rt.mcp.reload(servers);
    Ok(())
}
