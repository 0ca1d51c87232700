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
use evolve_core::permission::Policy;
use evolve_core::text::Lang;

use super::app::{open_store, App, STORE_WAIT};
use super::interrupt;
use super::printable;
use crate::agents::{Manager, PostTurn, Runtime, TurnInput};
use crate::config::LoadOptions;
use crate::error::Error;

mod slash;
mod terminal;

use slash::slash;
use terminal::{dim, post_line, turn_line, Terminal};

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
            if let Error::Cancelled = e {
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
