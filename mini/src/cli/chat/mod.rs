//! `evolve chat`: the terminal conversation. Streams the answer as it arrives, shows
//! each tool call, asks before calls that need a person (L3 once, L4 twice — the second
//! question repeats the exact arguments; "always" grants L1–L3 tools for the session),
//! and has slash commands for memory, skills, sessions, reflection and permissions.
//! Ctrl-C stops the current answer; at the prompt Ctrl-C or Ctrl-D (EOF) ends.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

use argh::FromArgs;
use evolve_core::permission::{Decision, Level, PendingCall, Policy, RefusalReason, Revoke};
use evolve_core::text::{one_line, KeywordSet, Lang};

use super::app::{now, open_store, App, STORE_WAIT};
use super::interrupt;
use super::printable;
use crate::agents::SubEvent;
use crate::agents::{Heard, Manager, PostTurn, Runtime, ToolRun, TurnInput, TurnIo};
use crate::config::LoadOptions;
use crate::error::Error;
use crate::llm::{Delta, LlmError};
use crate::mcp::elicit::{ElicitReply, Elicitation};

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
  /permissions revoke N|LABEL|all   withdraw this session's \"always\" grants
  /mcp                   the MCP servers and whether they are connected
  /mcp tools [NAME]      start them and list their tools with each tool's level
  /mcp level TOOL LEVEL  set an MCP tool's level (L0-L5, or auto)
  /mcp add|rm|import|enable|disable …   manage servers as `evolve mcp` does
  /help                  this help
  /quit                  leave (Ctrl-D works too)
Ctrl-C stops an answer. 命令同上；输入 /help 查看帮助。";

/// The terminal side of a turn.
struct Terminal<'a> {
    lines: &'a mut Lines,
    streamed: bool,
    /// When the last progress line was printed (at most one a second).
    progressed: Option<std::time::Instant>,
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

    fn on_notice(&mut self, text: &str) {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        self.say(&format!("  ⚠ {}", printable(text, false)));
    }

    fn on_tool_progress(&mut self, _name: &str, progress: &crate::mcp::Progress) {
        let finished = progress.finished();
        if !finished
            && self
                .progressed
                .is_some_and(|at| at.elapsed() < std::time::Duration::from_secs(1))
        {
            return;
        }
        self.progressed = Some(std::time::Instant::now());
        self.say(&format!("    … {}", printable(&progress.line(), false)));
    }

    fn on_subtask(&mut self, event: &SubEvent) {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        // Indented under the subtasks call: a line per sub-turn, and its calls below it.
        match event {
            SubEvent::Start { index, task } => {
                self.say(&format!("    ↳ {index}. {}", one_line(task, 140)));
            }
            SubEvent::ToolStart {
                name,
                arguments,
                level,
                ..
            } => self.say(&format!(
                "        ⚙ {name} {} [{level}]",
                one_line(arguments, 120)
            )),
            SubEvent::ToolEnd { run, .. } if !run.ran => {
                let why = run.answer.as_deref().unwrap_or("refused");
                self.say(&format!(
                    "        ✗ {} not run ({why})",
                    printable(&run.name, false)
                ));
            }
            SubEvent::ToolEnd { .. } => {}
            SubEvent::End(run) => match &run.failed {
                Some(why) => self.say(&format!("    ✗ {}. failed: {why}", run.index)),
                None => self.say(&format!(
                    "    ✓ {}. {} ({} ms)",
                    run.index,
                    one_line(&run.reply, 100),
                    run.ms
                )),
            },
        }
    }

    fn on_tool_end(&mut self, run: &ToolRun, _output: &str) {
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

    fn elicit(&mut self, _name: &str, question: &Elicitation, lang: Lang) -> ElicitReply {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        let zh = lang == Lang::Zh;
        self.say(&format!(
            "  ? {} {}: {}",
            if zh { "MCP 服务器" } else { "MCP server" },
            printable(&question.server, false),
            printable(&question.message, true)
        ));
        let prompt = |text: &str| {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{text}");
            let _ = out.flush();
        };
        prompt(if zh {
            "    回答吗？[是/否] "
        } else {
            "    Answer it? [yes/no] "
        });
        let Some(line) = self.lines.next_unless_cancelled() else {
            self.say("");
            return ElicitReply::Cancel;
        };
        if !matches!(
            line.trim().to_lowercase().as_str(),
            "y" | "yes" | "是" | "好" | "ok"
        ) {
            return ElicitReply::Decline;
        }
        let mut content = serde_json::Map::new();
        let mut ask: Vec<&crate::mcp::elicit::Field> = question.fields.iter().collect();
        for _ in 0..3 {
            for field in &ask {
                prompt(&format!(
                    "    {} ({}): ",
                    printable(&field.title, false),
                    field.hint()
                ));
                let Some(line) = self.lines.next_unless_cancelled() else {
                    self.say("");
                    return ElicitReply::Cancel;
                };
                if line.trim().is_empty() {
                    content.remove(&field.name);
                } else {
                    content.insert(field.name.clone(), serde_json::Value::String(line));
                }
            }
            match question.check(&content) {
                Ok(checked) => return ElicitReply::Accept(checked),
                Err(wrong) => {
                    for (name, why) in &wrong {
                        self.say(&format!("    ✗ {} {why}", printable(name, false)));
                    }
                    ask = question
                        .fields
                        .iter()
                        .filter(|f| wrong.iter().any(|(n, _)| *n == f.name))
                        .collect();
                }
            }
        }
        ElicitReply::Cancel
    }

    fn ask(&mut self, call: &PendingCall, lang: Lang) -> Heard {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
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
        match self.lines.next_unless_cancelled() {
            Some(line) => Heard::Reply(line),
            // Ctrl-C: refused, and the turn ends here (kept in the session).
            None if interrupt::cancelled() => {
                self.say("");
                Heard::Stop
            }
            // End of input (Ctrl-D, a closed terminal): the call waits in the session;
            // the next message there answers it.
            None => {
                self.say("");
                self.say(match lang {
                    Lang::Zh => "（这个调用仍在等待回答：在这个会话里的下一条消息回答 是/否，其他消息则视为拒绝）",
                    Lang::En => "(the call waits for an answer: the next message in this session answers it with yes or no; anything else refuses it)",
                });
                Heard::Away
            }
        }
    }
}

/// The line after an answer: what the turn did (the Evolve Agent design shows it with the reply).
fn turn_line(r: &crate::agents::TurnRecord) -> String {
    let mut bits = vec![format!("turn {}", r.turn)];
    bits.push(match r.memories.len() {
        1 => "1 memory".to_string(),
        n => format!("{n} memories"),
    });
    if !r.skills.is_empty() {
        bits.push(format!("skills: {}", r.skills.join(", ")));
    }
    if !r.tools.is_empty() {
        let tools: Vec<String> = r
            .tools
            .iter()
            .map(|t| {
                let mark = match (t.ran, t.is_error) {
                    (true, false) => "✓",
                    (true, true) => "!",
                    _ => "✗",
                };
                format!("{} {mark}", printable(&t.name, false))
            })
            .collect();
        bits.push(format!("tools: {}", tools.join(", ")));
    }
    bits.push(format!("{:.1} s", r.answer_ms as f64 / 1000.0));
    format!("  ↳ {}", bits.join(" · "))
}

/// The line for the background work of the last answer, when it found something.
fn post_line(p: &PostTurn) -> Option<String> {
    let mut bits = Vec::new();
    if let Some(e) = &p.evaluation {
        bits.push(format!(
            "score {:.2} — {}",
            e.score,
            printable(&one_line(&e.reason, 100), false)
        ));
    }
    if p.memories_saved > 0 {
        bits.push(format!("{} saved to memory", p.memories_saved));
    }
    if let Some(r) = p.reflection.as_ref().or(p.lesson.as_ref()) {
        bits.push(format!("lesson: {}", printable(&one_line(r, 100), false)));
    }
    if let Some(s) = &p.learned_skill {
        bits.push(format!("learned the skill {}", printable(s, false)));
    }
    if let Some(s) = &p.skill_pending {
        let s = printable(s, false);
        bits.push(format!(
            "drafted the skill {s} from outside text: `evolve skills show {s}`, then `evolve skills approve {s}`"
        ));
    }
    (!bits.is_empty()).then(|| format!("  ↳ {}", bits.join(" · ")))
}

/// Dim on a terminal (unless NO_COLOR), as it is otherwise.
fn dim(text: &str, tty: bool) -> String {
    if tty && std::env::var_os("NO_COLOR").is_none() {
        format!("\x1b[2m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Lines of stdin without their newline, read on a thread of their own so that a
/// wait for one can end on Ctrl-C; `None` at EOF or on a read error.
struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
}

impl Lines {
    fn stdin() -> Lines {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                match stdin.lock().read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = line.trim_end_matches(['\n', '\r']).to_string();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Lines { rx }
    }

    /// The next line, or `None` at the end of input — or when Ctrl-C is pressed
    /// meanwhile (during a turn).
    fn next_unless_cancelled(&mut self) -> Option<String> {
        loop {
            if interrupt::cancelled() {
                return None;
            }
            match self.rx.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => return Some(line),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

impl Lines {
    /// The next line (`None` at the end of input), running `meanwhile` every 100 ms
    /// while it waits.
    fn next_or_meanwhile(&mut self, mut meanwhile: impl FnMut()) -> Option<String> {
        loop {
            match self.rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => return Some(line),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => meanwhile(),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

impl Iterator for Lines {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        self.rx.recv().ok()
    }
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
        // A call of this session waits for an answer: the first message settles it.
        let question = store.parked(id)?.map(|p| p.state.question().to_string());
        for call in store.pending(id)? {
            let lang = Lang::guess(question.as_deref().unwrap_or(&call.arguments));
            println!("{}", printable(&call.prompt(lang), true));
            println!(
                "{}",
                match lang {
                    Lang::Zh => "（这个调用在等待你的回答：回答 是/否/总是；其他消息视为拒绝）",
                    Lang::En => "(this call waits for your answer: yes, no or always; any other message refuses it)",
                }
            );
        }
    }
    let App { config, tokenizer } = app;
    let manager = Arc::new(Manager::new(Runtime::new(config, store, tokenizer)));
    // The store is closed whenever chat waits (at the prompt, for the model, for a
    // person), so a cron `ask` can run while a chat window is open.
    manager.runtime().store.release();
    let mut session = cmd.session.clone();
    let tty = std::io::stdin().is_terminal();
    interrupt::install();
    let mut lines = Lines::stdin();
    if tty {
        eprintln!("{banner}");
    }
    // Ctrl-C at the prompt ends chat once the last answer's background work is saved.
    let watcher = Arc::clone(&manager);
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(50));
        if interrupt::quit_requested() {
            crate::agents::close_all(&watcher, wait);
            println!();
            std::process::exit(130);
        }
    });
    let turn_line = manager.runtime().config.agent.turn_line;
    // The last answer's background work (score, lesson): its line when it comes.
    let mut pending: Option<Receiver<PostTurn>> = None;
    loop {
        if tty {
            print!("› ");
            let _ = std::io::stdout().flush();
        }
        let Some(line) = lines.next_or_meanwhile(|| {
            if let Some(post) = pending.as_ref().and_then(|rx| rx.try_recv().ok()) {
                pending = None;
                if let Some(text) = post_line(&post) {
                    println!("\r{}", dim(&text, tty));
                    if tty {
                        print!("› ");
                        let _ = std::io::stdout().flush();
                    }
                }
            }
        }) else {
            break;
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        // From here until the next prompt Ctrl-C cancels what runs, not chat.
        interrupt::begin_turn();
        // The previous answer's background work finishes first: its memories are then
        // in place for this one.
        manager.flush(wait);
        if let Some(post) = pending.take().and_then(|rx| rx.try_recv().ok()) {
            if let Some(text) = post_line(&post) {
                println!("{}", dim(&text, tty));
            }
        }
        let go_on = input(
            text,
            &manager,
            &mut session,
            &mut lines,
            stream,
            &mut pending,
        );
        if !turn_line {
            pending = None;
        }
        // Closed once this input's background work is done.
        manager.release_when_idle();
        interrupt::end_turn();
        if !go_on {
            break;
        }
    }
    // The watcher thread keeps the manager alive: every agent is closed here (the
    // background work finishes, the MCP servers stop).
    crate::agents::close_all(&manager, wait);
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
    lines: &mut Lines,
    stream: bool,
    pending: &mut Option<Receiver<PostTurn>>,
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
        progressed: None,
    };
    let result = manager.turn(
        TurnInput {
            session: session.as_deref(),
            text,
            policy: Policy::Interactive,
            stream,
            cancel: &interrupt::CANCEL,
            force_tool: None,
            images: &[],
            from: evolve_core::provenance::Source::Person,
            replaces: None,
        },
        &mut term,
    );
    let streamed = term.streamed;
    match result {
        Ok((record, post)) => {
            if record.waiting.is_some() {
                // Parked: the note was printed with the question.
            } else if streamed {
                println!();
            } else if record.reply.trim().is_empty() {
                println!("(the model returned an empty answer)");
            } else {
                println!("{}", printable(record.reply.trim_end(), true));
            }
            if record.waiting.is_none() && manager.runtime().config.agent.turn_line {
                let tty = std::io::stdout().is_terminal();
                println!("{}", dim(&turn_line(&record), tty));
                *pending = Some(post);
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
        "permissions" | "perms" if !rest.is_empty() => {
            permissions_command(rt, session.as_deref(), rest)?;
        }
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
            match session.as_deref() {
                Some(id) => {
                    let grants = rt.store.grants(id)?;
                    if grants.is_empty() {
                        println!("  no \"always\" grants in this session");
                    } else {
                        println!(
                            "  always allowed in this session \
                             (/permissions revoke N|LABEL|all withdraws):"
                        );
                        for (n, g) in grants.iter().enumerate() {
                            println!(
                                "    {}. {} ({})",
                                n + 1,
                                printable(&g.label(), false),
                                g.level
                            );
                        }
                    }
                }
                None => println!("  no \"always\" grants yet: this session has no turn"),
            }
        }
        "mcp" => mcp_command(rt, rest)?,
        other => println!("  unknown command /{other} — /help lists them"),
    }
    Ok(true)
}

/// `/permissions revoke N|LABEL|all`: withdraws "always" grants of this session and
/// says which.
fn permissions_command(rt: &Runtime, session: Option<&str>, rest: &str) -> Result<(), Error> {
    let (sub, arg) = rest.split_once(' ').unwrap_or((rest, ""));
    let arg = arg.trim();
    if sub != "revoke" || arg.is_empty() {
        println!("  use /permissions, or /permissions revoke N|LABEL|all");
        return Ok(());
    }
    let Some(id) = session else {
        println!("  nothing to revoke: this session has no grants");
        return Ok(());
    };
    let what = match arg {
        "all" => Revoke::All,
        n if n.bytes().all(|b| b.is_ascii_digit()) => Revoke::Number(n.parse().unwrap_or(0)),
        label => Revoke::Label(label),
    };
    let gone = rt.store.revoke_grants(id, what)?;
    if gone.is_empty() && what == Revoke::All {
        println!("  nothing to revoke: this session has no grants");
    } else if gone.is_empty() {
        println!(
            "  no grant {} in this session — /permissions lists them",
            printable(arg, false)
        );
    }
    for g in &gone {
        println!(
            "  revoked: {} (asked again next time)",
            printable(&g.label(), false)
        );
    }
    Ok(())
}

/// `/mcp`, `/mcp tools [NAME]`, `/mcp level TOOL LEVEL`, `/mcp add|rm|import|enable|
/// disable …`: the same as `evolve mcp …`.
fn mcp_command(rt: &Runtime, rest: &str) -> Result<(), Error> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        [] | ["list"] => {
            let connected = rt.mcp.connected();
            let mut out = std::io::stdout().lock();
            super::mcp::write_servers(
                &mut out,
                &rt.config,
                &rt.mcp.specs(),
                Some(&connected),
                Some(&rt.store),
            )?;
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
