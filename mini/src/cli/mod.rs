//! The command line: argh definitions and dispatch. Command and flag names are a
//! contract users and scripts rely on: add, never rename.

pub(crate) mod app;
mod ask;
mod channels;
mod chat;
mod config;
mod doctor;
mod interrupt;
mod lend;
pub(crate) mod mcp;
mod memory;
mod open;
mod prompt;
mod serve;
pub(crate) mod sessions;
mod skills;
mod style;
mod tasks;
mod usage;

use std::path::Path;

use argh::FromArgs;

use crate::error::Error;

/// What a bare `-` on the command line becomes before argh sees it (argh would take it
/// for an option): "read this from stdin".
pub const STDIN_ARG: &str = "\u{0}stdin";

/// Text safe to print on a terminal (the core's rule, shared with the model client).
pub use evolve_core::text::escape_controls as printable;

/// A positional argument, or stdin read to the end when it was `-`.
pub fn positional_or_stdin(arg: &str) -> Result<String, Error> {
    if arg == "-" || arg == STDIN_ARG {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
            Error::System {
                doing: "read stdin",
                source,
            }
        })?;
        Ok(text)
    } else {
        Ok(arg.to_string())
    }
}

/// Evolve: a small, safe personal AI agent in one static binary.
#[derive(FromArgs, Debug)]
#[argh(help_triggers("-h", "--help"))]
pub struct Evolve {
    /// print the version and exit
    #[argh(switch, short = 'V')]
    version: bool,
    /// the profile of config.toml to use (default: EVOLVE_PROFILE, else `profile = …` in
    /// the file); also accepted after the command (`evolve ask --profile alt …`)
    #[argh(option)]
    profile: Option<String>,
    #[argh(subcommand)]
    command: Option<Command>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Command {
    Ask(ask::AskCmd),
    Chat(chat::ChatCmd),
    Memory(memory::MemoryCmd),
    Prompt(prompt::PromptCmd),
    Sessions(sessions::SessionsCmd),
    Skills(skills::SkillsCmd),
    Tasks(tasks::TasksCmd),
    Channels(channels::ChannelsCmd),
    Mcp(mcp::McpCmd),
    Serve(serve::ServeCmd),
    Open(open::OpenCmd),
    Config(config::ConfigCmd),
    Doctor(doctor::DoctorCmd),
    Usage(usage::UsageCmd),
}

/// Runs the parsed command line.
pub fn run(args: Evolve) -> Result<(), Error> {
    if args.version {
        println!("evolve {}", env!("CARGO_PKG_VERSION"));
        return Ok(());
    }
    crate::tls::init().map_err(|e| crate::config::ConfigError::Env {
        var: crate::tls::VAR,
        message: e.to_string(),
    })?;
    match args.command {
        Some(Command::Ask(cmd)) => ask::run(cmd, &args.profile),
        Some(Command::Chat(cmd)) => chat::run(cmd, &args.profile),
        Some(Command::Memory(cmd)) => memory::run(cmd, &args.profile),
        Some(Command::Prompt(cmd)) => prompt::run(cmd, &args.profile),
        Some(Command::Sessions(cmd)) => sessions::run(cmd, &args.profile),
        Some(Command::Skills(cmd)) => skills::run(cmd, &args.profile),
        Some(Command::Tasks(cmd)) => tasks::run(cmd, &args.profile),
        Some(Command::Channels(cmd)) => channels::run(cmd, &args.profile),
        Some(Command::Mcp(cmd)) => mcp::run(cmd, &args.profile),
        Some(Command::Serve(cmd)) => serve::run(cmd, &args.profile),
        Some(Command::Open(cmd)) => open::run(cmd, &args.profile),
        Some(Command::Config(cmd)) => config::run(cmd, &args.profile),
        Some(Command::Doctor(cmd)) => doctor::run(cmd, &args.profile),
        Some(Command::Usage(cmd)) => usage::run(cmd, &args.profile),
        None => Err(Error::Usage("no command given".into())),
    }
}

/// Writes `text` (and a final newline) to `path`, naming it on failure.
fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    let mut body = String::with_capacity(text.len() + 1);
    body.push_str(text);
    body.push('\n');
    std::fs::write(path, body).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })
}
