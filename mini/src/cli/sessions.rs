//! `evolve sessions …`: list, read, remove and export conversations. Reading is for
//! people (roles, text, tool calls with their arguments, tool results clipped);
//! `--json` and `export --format json` give the stored records for scripts; Markdown and
//! HTML exports are a readable transcript (title, then one section per message).

use crate::cli::app::App;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use argh::FromArgs;
use evolve_core::history::Role;
use evolve_core::text::{clip_chars, one_line};

use crate::cli::write_file;
use crate::error::Error;
use crate::store::transcript::{heading, html, markdown, title_of};
use crate::store::{self, SessionExport, StoredMessage};

/// Tool results longer than this are cut in `sessions show` (exports keep them whole).
const SHOWN_RESULT_CHARS: usize = 400;

/// list, show, remove and export conversations
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "sessions")]
pub struct SessionsCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    List(List),
    Show(Show),
    Rm(Rm),
    Export(ExportCmd),
}

/// list the sessions, most recently used first
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// print JSON records
    #[argh(switch)]
    json: bool,
}

/// print a session's messages
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "show")]
struct Show {
    /// the session's id (from `evolve sessions list`)
    #[argh(positional)]
    id: String,
    /// print the session, its messages, L2/L3 and evaluations as JSON
    #[argh(switch)]
    json: bool,
}

/// delete a session and everything attached to it
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the session's id (from `evolve sessions list`)
    #[argh(positional)]
    id: String,
}

/// write a session as Markdown (default), JSON or HTML
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "export")]
struct ExportCmd {
    /// the session's id (from `evolve sessions list`)
    #[argh(positional)]
    id: String,
    /// md, json or html (default md)
    #[argh(option, default = "Format::Markdown", from_str_fn(parse_format))]
    format: Format,
    /// the file to write (stdout when absent)
    #[argh(option)]
    out: Option<PathBuf>,
}

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Markdown,
    Json,
    Html,
}

fn parse_format(s: &str) -> Result<Format, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "md" | "markdown" => Ok(Format::Markdown),
        "json" => Ok(Format::Json),
        "html" => Ok(Format::Html),
        _ => Err(format!("unknown format {s:?}: use md, json or html")),
    }
}

pub fn run(cmd: SessionsCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::List(c) => list(c, profile),
        Action::Show(c) => show(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Export(c) => export(c, profile),
    }
}

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let sessions = store.sessions()?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let text = serde_json::to_string_pretty(&sessions).map_err(|source| Error::Encode {
            what: "sessions",
            source,
        })?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(
            out,
            "no sessions yet — start one with `evolve chat` or `evolve ask`"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<13}  {:<16}  {:>5}  {:>5}  title",
        "id", "updated (UTC)", "turns", "msgs"
    )?;
    for s in &sessions {
        writeln!(
            out,
            "{:<13}  {:<16}  {:>5}  {:>5}  {}",
            s.id,
            store::format_time(s.updated_at),
            s.turns,
            s.messages,
            super::printable(&one_line(&s.title, 60), false)
                + &s.channel
                    .as_deref()
                    .map(|c| format!("  [{c}]"))
                    .unwrap_or_default()
        )?;
    }
    Ok(())
}

fn show(c: Show, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let export = store.export_session(&c.id)?;
    let mut out = std::io::stdout().lock();
    if c.json {
        writeln!(out, "{}", to_json(&export)?)?;
    } else {
        out.write_all(super::printable(&readable(&export), true).as_bytes())?;
    }
    Ok(())
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let session = store.session(&c.id)?;
    store.remove_session(&c.id)?;
    writeln!(
        std::io::stdout().lock(),
        "removed session {} ({:?}, {} messages)",
        session.id,
        session.title,
        session.messages
    )?;
    Ok(())
}

fn export(c: ExportCmd, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let export = store.export_session(&c.id)?;
    let text = match c.format {
        Format::Markdown => markdown(&export),
        Format::Json => to_json(&export)?,
        Format::Html => html(&export),
    };
    match &c.out {
        None => writeln!(std::io::stdout().lock(), "{}", text.trim_end())?,
        Some(path) => {
            write_file(path, text.trim_end())?;
            eprintln!("exported session {} to {}", c.id, path.display());
        }
    }
    Ok(())
}

fn to_json(export: &SessionExport) -> Result<String, Error> {
    serde_json::to_string_pretty(export).map_err(|source| Error::Encode {
        what: "session",
        source,
    })
}

/// `sessions show`: a header, then each message under its role, turn by turn.
fn readable(export: &SessionExport) -> String {
    let s = &export.session;
    let mut out = String::new();
    let _ = writeln!(out, "{}  {}", s.id, title_of(export));
    let _ = writeln!(
        out,
        "created {} · updated {} (UTC) · {} turns · {} messages",
        store::format_time(s.created_at),
        store::format_time(s.updated_at),
        s.turns,
        s.messages
    );
    let mut turn = None;
    for StoredMessage {
        turn: t,
        message: m,
        ..
    } in &export.messages
    {
        if turn != Some(*t) {
            let _ = writeln!(out, "\n── turn {t} ──");
            turn = Some(*t);
        }
        let text = if m.role == Role::Tool {
            clip_chars(&m.content, SHOWN_RESULT_CHARS)
        } else {
            m.content.clone()
        };
        let _ = writeln!(out, "{}:{}", heading(m), indented(&text));
        if let Some(r) = m.reasoning.as_deref().filter(|r| !r.is_empty()) {
            let _ = writeln!(out, "  (thinking: {} characters)", r.chars().count());
        }
        for call in &m.tool_calls {
            let _ = writeln!(out, "  → {} {} [{}]", call.name, call.arguments, call.id);
        }
        if !m.images.is_empty() {
            let _ = writeln!(out, "  ({} images)", m.images.len());
        }
    }
    if let Some(summary) = &export.l3 {
        let _ = writeln!(out, "\nsummary of older turns:{}", indented(summary));
    }
    for e in &export.evaluations {
        let _ = writeln!(out, "turn {} scored {:.2}: {}", e.turn, e.score, e.reason);
    }
    out
}

/// Text after a `label:` — on the same line when it is one line, else indented below.
fn indented(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    if !text.contains('\n') {
        return format!(" {text}");
    }
    let mut out = String::new();
    for line in text.lines() {
        out.push('\n');
        if !line.is_empty() {
            out.push_str("  ");
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::transcript::tests::sample;

    #[test]
    fn show_prints_roles_tool_calls_with_arguments_and_clipped_results() {
        let text = readable(&sample());
        for part in [
            "s0000000000ab  Read my <notes>",
            "2026-01-01 00:00",
            "user: what do my notes say?",
            r#"→ read_file {"path":"notes.md"} [c1]"#,
            "tool read_file [c1]:",
            "assistant: They say **x**.",
            "turn 1 scored 0.90",
        ] {
            assert!(text.contains(part), "{text}\nlacks {part:?}");
        }
        assert!(
            !text.contains(&"x".repeat(SHOWN_RESULT_CHARS)),
            "results are clipped"
        );
        assert!(text.contains('…'));
    }

    #[test]
    fn formats_are_named_and_others_refused() {
        assert_eq!(parse_format("md"), Ok(Format::Markdown));
        assert_eq!(parse_format("JSON"), Ok(Format::Json));
        assert_eq!(parse_format("html"), Ok(Format::Html));
        assert!(parse_format("pdf")
            .unwrap_err()
            .contains("md, json or html"));
    }
}
