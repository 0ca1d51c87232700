//! `evolve memory style …`: the style notes learned from replies that scored high and
//! added to every prompt — list them, remove one by its number, clear them. The rules
//! are [`crate::agents::style`]'s, shared with `/v1/memory/style`.

use crate::cli::app::App;
use std::io::Write;

use argh::FromArgs;

use crate::agents::style::{self, Removal};
use crate::error::Error;

/// show or forget the style notes learned from well-rated answers (added to every prompt)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "style")]
pub struct StyleCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    List(List),
    Rm(Rm),
    Clear(Clear),
}

/// list the style notes, numbered, oldest first
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// print JSON records
    #[argh(switch)]
    json: bool,
}

/// forget style note N (its number in `evolve memory style list`)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the note's number
    #[argh(positional, from_str_fn(parse_number))]
    n: usize,
}

/// forget every style note
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "clear")]
struct Clear {}

pub fn run(cmd: StyleCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::List(c) => list(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Clear(_) => clear(profile),
    }
}

fn parse_number(s: &str) -> Result<usize, String> {
    match s.trim().trim_start_matches('#').parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{s:?} is not a style note number: use the number `evolve memory style list` shows"
        )),
    }
}

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let notes = style::list(&store)?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let records: Vec<serde_json::Value> = notes
            .iter()
            .enumerate()
            .map(|(i, note)| serde_json::json!({"n": i + 1, "note": note}))
            .collect();
        writeln!(out, "{:#}", serde_json::Value::Array(records))?;
    } else if notes.is_empty() {
        writeln!(
            out,
            "no style notes yet (they are learned from answers the evaluator rates highly)"
        )?;
    } else {
        for (i, note) in notes.iter().enumerate() {
            writeln!(out, "{}. {}", i + 1, super::printable(note, false))?;
        }
    }
    Ok(())
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    match style::remove(&store, c.n, None)? {
        Removal::Done(note) => {
            writeln!(
                std::io::stdout().lock(),
                "removed style note {}: {}",
                c.n,
                super::printable(&note, false)
            )?;
            Ok(())
        }
        Removal::NoSuch(0) => Err(Error::Usage(format!(
            "no style note {}: there are none",
            c.n
        ))),
        Removal::NoSuch(count) => Err(Error::Usage(format!(
            "no style note {}: there are {count} (`evolve memory style list` shows them)",
            c.n
        ))),
        // Only asked for with an expected text, which the command line does not give.
        Removal::Changed(_) => Err(Error::Conflict(format!(
            "style note {} changed meanwhile; nothing was removed",
            c.n
        ))),
    }
}

fn clear(profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let n = style::clear(&store)?;
    let plural = if n == 1 { "" } else { "s" };
    writeln!(std::io::stdout().lock(), "removed {n} style note{plural}")?;
    Ok(())
}
