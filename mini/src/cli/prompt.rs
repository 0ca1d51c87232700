//! `evolve prompt …`: the versions of the agent's system prompt. `list` and `show` look
//! at them, `set` stores a version from a file, `evolve` has the cheap model rewrite the
//! active prompt from what the agent learned, `rollback` makes any earlier version — or
//! version 0, the built-in prompt — active again. The rules (checks, the evolve
//! request) are `agents::versions`, shared with `evolve serve`'s `/v1/prompt`.

use crate::cancel::Cancel;
use crate::cli::app::App;
use std::io::Write;
use std::path::{Path, PathBuf};

use argh::FromArgs;
use evolve_core::text::one_line;

use crate::agents::versions::{self, active_text, check_text, first_line, EvolveError, Evolved};
use crate::cli::app;
use crate::error::Error;
use crate::llm::Client;

/// manage the system prompt's versions
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "prompt")]
pub struct PromptCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    List(List),
    Show(Show),
    Evolve(Evolve),
    Rollback(Rollback),
    Set(Set),
}

/// list the versions (0 is the built-in prompt; * marks the active one)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// print JSON records
    #[argh(switch)]
    json: bool,
}

/// print the whole text of the active version, or of VERSION
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "show")]
struct Show {
    /// the version's number (from `evolve prompt list`; 0 = built-in)
    #[argh(positional, from_str_fn(parse_version))]
    version: Option<u64>,
    /// print a JSON record
    #[argh(switch)]
    json: bool,
}

/// have the cheap model write an improved prompt from recent lessons, low grades and the user's rules, and make it active
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "evolve")]
struct Evolve {}

/// make an earlier version active again (0 = the built-in prompt)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rollback")]
struct Rollback {
    /// the version's number (from `evolve prompt list`)
    #[argh(positional, from_str_fn(parse_version))]
    version: u64,
}

/// store the text of FILE (- for stdin) as a new version and make it active
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "set")]
struct Set {
    /// a text file holding the whole system prompt, or - to read it from stdin
    #[argh(positional)]
    file: String,
}

pub fn run(cmd: PromptCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::List(c) => list(c, profile),
        Action::Show(c) => show(c, profile),
        Action::Evolve(_) => evolve(profile),
        Action::Rollback(c) => rollback(c, profile),
        Action::Set(c) => set(c, profile),
    }
}

fn parse_version(s: &str) -> Result<u64, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "{s:?} is not a prompt version: use a number `evolve prompt list` shows (0 = built-in)"
        )
    })
}

fn unknown_version(version: u64) -> Error {
    Error::Usage(format!(
        "there is no system prompt version {version}: `evolve prompt list` shows the versions"
    ))
}

// ---- the commands ----

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let versions = versions::versions(&store)?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let records: Vec<serde_json::Value> = versions.iter().map(|v| v.json(false)).collect();
        writeln!(out, "{:#}", serde_json::Value::Array(records))?;
        return Ok(());
    }
    for v in &versions {
        writeln!(out, "{}", super::printable(&v.line(), false))?;
    }
    if versions.len() == 1 {
        writeln!(
            out,
            "(only the built-in prompt so far — `evolve prompt set FILE` or `evolve prompt evolve` writes a version)"
        )?;
    }
    Ok(())
}

fn show(c: Show, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let versions = versions::versions(&store)?;
    let shown = match c.version {
        Some(n) => versions.iter().find(|v| v.version == n),
        None => versions.iter().find(|v| v.active),
    };
    let Some(shown) = shown else {
        return Err(unknown_version(c.version.unwrap_or_default()));
    };
    let mut out = std::io::stdout().lock();
    if c.json {
        writeln!(out, "{:#}", shown.json(true))?;
    } else {
        writeln!(out, "{}", super::printable(&shown.text, true))?;
    }
    Ok(())
}

fn set(c: Set, profile: &Option<String>) -> Result<(), Error> {
    let (path, text) = if c.file == "-" || c.file == super::STDIN_ARG {
        (PathBuf::from("<stdin>"), super::positional_or_stdin("-")?)
    } else {
        let path = PathBuf::from(&c.file);
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        (path, text)
    };
    let text = check_text(&text).map_err(|message| Error::Invalid {
        path: path.clone(),
        message: format!("not a usable system prompt: {message}; nothing was stored"),
    })?;
    let (_app, store) = App::with_store(profile)?;
    let mut out = std::io::stdout().lock();
    if active_text(&store)? == text {
        writeln!(
            out,
            "that is already the active system prompt; nothing stored"
        )?;
        return Ok(());
    }
    let note = format!("set from {}", display_name(&path));
    let version = store.add_prompt_version(&text, &note, app::now())?;
    writeln!(
        out,
        "system prompt version {version} is active ({} characters, {note}); the next turn uses it",
        text.chars().count()
    )?;
    Ok(())
}

/// A path as a note names it: the file name, which says enough and leaks no home path.
fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn rollback(c: Rollback, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let versions = versions::versions(&store)?;
    let Some(target) = versions.iter().find(|v| v.version == c.version) else {
        return Err(unknown_version(c.version));
    };
    let mut out = std::io::stdout().lock();
    if target.active {
        writeln!(
            out,
            "version {} is already active; nothing changed",
            c.version
        )?;
        return Ok(());
    }
    if c.version == 0 {
        store.activate_builtin_prompt()?;
    } else {
        store.activate_prompt(c.version)?;
    }
    writeln!(
        out,
        "system prompt version {} ({}) is active; the next turn uses it",
        c.version,
        one_line(&first_line(&target.text), 60)
    )?;
    Ok(())
}

fn evolve(profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let client = Client::new(app.config.model.clone());
    let never = Cancel::new();
    let done = versions::evolve(
        &store,
        &client,
        app.config.agent.reflect_below,
        app::now(),
        &never,
        true,
    )
    .map_err(|e| match e {
        EvolveError::Model(e) => Error::from(e),
        EvolveError::Store(e) => Error::Store(e),
        other => Error::PromptNotEvolved(other.to_string()),
    })?;
    let mut out = std::io::stdout().lock();
    let Evolved::Stored {
        version,
        note,
        chars: (before, after),
        first_change: (line, changed),
    } = done
    else {
        writeln!(
            out,
            "the model kept the system prompt as it is; nothing stored"
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "system prompt version {version} is active ({note}); the next turn uses it\n\
         length: {before} → {after} characters\n\
         first change, line {line}: {}",
        super::printable(&one_line(&changed, 100), false)
    )?;
    writeln!(
        out,
        "`evolve prompt show` prints it; `evolve prompt rollback N` goes back"
    )?;
    Ok(())
}
