//! `evolve sessions …`: list, read, remove and export conversations. Reading is for
//! people (roles, text, tool calls with their arguments, tool results clipped);
//! `--json` and `export --format json` give the stored records for scripts; Markdown and
//! HTML exports are a readable transcript (title, then one section per message).

use crate::cli::app::App;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use argh::FromArgs;
use evolve_core::history::{Message, Role};
use evolve_core::text::{clip_chars, one_line};

use crate::cli::memory::write_file;
use crate::error::Error;
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
    /// configuration profile to use
    #[argh(option)]
    profile: Option<String>,
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
    /// configuration profile to use
    #[argh(option)]
    profile: Option<String>,
}

/// delete a session and everything attached to it
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the session's id (from `evolve sessions list`)
    #[argh(positional)]
    id: String,
    /// configuration profile to use
    #[argh(option)]
    profile: Option<String>,
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
    /// configuration profile to use
    #[argh(option)]
    profile: Option<String>,
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

pub fn run(cmd: SessionsCmd) -> Result<(), Error> {
    match cmd.action {
        Action::List(c) => list(c),
        Action::Show(c) => show(c),
        Action::Rm(c) => rm(c),
        Action::Export(c) => export(c),
    }
}

fn list(c: List) -> Result<(), Error> {
    let (_app, store) = App::with_store(&c.profile)?;
    let sessions = store.sessions()?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let text = serde_json::to_string_pretty(&sessions)
            .map_err(|e| Error::Other(format!("cannot encode the sessions: {e}")))?;
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
        )?;
    }
    Ok(())
}

fn show(c: Show) -> Result<(), Error> {
    let (_app, store) = App::with_store(&c.profile)?;
    let export = store.export_session(&c.id)?;
    let mut out = std::io::stdout().lock();
    if c.json {
        writeln!(out, "{}", to_json(&export)?)?;
    } else {
        out.write_all(super::printable(&readable(&export), true).as_bytes())?;
    }
    Ok(())
}

fn rm(c: Rm) -> Result<(), Error> {
    let (_app, store) = App::with_store(&c.profile)?;
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

fn export(c: ExportCmd) -> Result<(), Error> {
    let (_app, store) = App::with_store(&c.profile)?;
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
    serde_json::to_string_pretty(export)
        .map_err(|e| Error::Other(format!("cannot encode the session: {e}")))
}

fn title_of(export: &SessionExport) -> String {
    let t = export.session.title.trim();
    if t.is_empty() {
        format!("Session {}", export.session.id)
    } else {
        t.to_string()
    }
}

/// The one-line heading of a message: `user`, `tool get_time [c1]`.
fn heading(m: &Message) -> String {
    match (m.role, &m.name, &m.tool_call_id) {
        (Role::Tool, name, id) => format!(
            "tool {}{}",
            name.as_deref().unwrap_or("?"),
            id.as_deref().map(|i| format!(" [{i}]")).unwrap_or_default()
        ),
        (role, _, _) => role.name().to_string(),
    }
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

/// A code fence longer than any run of backticks in `text`, so the block cannot end
/// early.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat(longest.max(2) + 1)
}

fn code_block(out: &mut String, lang: &str, text: &str) {
    let f = fence(text);
    let _ = writeln!(out, "{f}{lang}\n{}\n{f}\n", text.trim_end_matches('\n'));
}

/// The Markdown transcript: a title, the session's facts, one `##` section per message.
pub(crate) fn markdown(export: &SessionExport) -> String {
    let s = &export.session;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", one_line(&title_of(export), 200));
    let _ = writeln!(out, "- Session: `{}`", s.id);
    let _ = writeln!(out, "- Created: {} UTC", store::format_time(s.created_at));
    let _ = writeln!(out, "- Updated: {} UTC", store::format_time(s.updated_at));
    let _ = writeln!(out, "- Turns: {} · messages: {}\n", s.turns, s.messages);
    for (i, sm) in export.messages.iter().enumerate() {
        let m = &sm.message;
        let title = match m.role {
            Role::Tool => format!("Tool result · `{}`", m.name.as_deref().unwrap_or("tool")),
            role => {
                let name = role.name();
                let mut t = name[..1].to_ascii_uppercase();
                t.push_str(&name[1..]);
                t
            }
        };
        let _ = writeln!(out, "## {}. {} (turn {})\n", i + 1, title, sm.turn);
        if let Some(r) = m.reasoning.as_deref().filter(|r| !r.is_empty()) {
            let _ = writeln!(out, "<details><summary>Thinking</summary>\n");
            code_block(&mut out, "text", r);
            let _ = writeln!(out, "</details>\n");
        }
        match m.role {
            Role::Tool => code_block(&mut out, "text", &m.content),
            _ if !m.content.trim().is_empty() => {
                let _ = writeln!(out, "{}\n", m.content.trim_end());
            }
            _ => {}
        }
        for call in &m.tool_calls {
            let _ = writeln!(out, "Tool call `{}` (`{}`):\n", call.name, call.id);
            code_block(&mut out, "json", &call.arguments);
        }
        for image in &m.images {
            let _ = writeln!(out, "![image]({image})\n");
        }
    }
    if let Some(summary) = &export.l3 {
        let _ = writeln!(out, "## Summary of older turns\n\n{}\n", summary.trim_end());
    }
    if !export.evaluations.is_empty() {
        let _ = writeln!(out, "## Evaluations\n");
        for e in &export.evaluations {
            let _ = writeln!(out, "- Turn {}: {:.2} — {}", e.turn, e.score, e.reason);
        }
    }
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A self-contained HTML page of the transcript (print it for a PDF). Every text is
/// escaped: a message cannot inject markup or script.
pub(crate) fn html(export: &SessionExport) -> String {
    let s = &export.session;
    let title = escape(&title_of(export));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\n\
         <style>body{{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}}\
         section{{border-top:1px solid #ccc;padding:.5em 0}}h2{{font-size:1em;color:#555}}\
         pre{{background:#f4f4f4;padding:.5em;white-space:pre-wrap}}</style></head><body>\n\
         <h1>{title}</h1>\n<p>Session <code>{}</code> · created {} UTC · updated {} UTC · \
         {} turns · {} messages</p>\n",
        escape(&s.id),
        store::format_time(s.created_at),
        store::format_time(s.updated_at),
        s.turns,
        s.messages
    );
    for (i, sm) in export.messages.iter().enumerate() {
        let m = &sm.message;
        let _ = writeln!(
            out,
            "<section><h2>{}. {} (turn {})</h2>",
            i + 1,
            escape(&heading(m)),
            sm.turn
        );
        if m.role == Role::Tool || !m.content.is_empty() {
            let _ = writeln!(out, "<pre>{}</pre>", escape(&m.content));
        }
        for call in &m.tool_calls {
            let _ = writeln!(
                out,
                "<p>Tool call <code>{}</code> (<code>{}</code>):</p><pre>{}</pre>",
                escape(&call.name),
                escape(&call.id),
                escape(&call.arguments)
            );
        }
        out.push_str("</section>\n");
    }
    if let Some(summary) = &export.l3 {
        let _ = writeln!(
            out,
            "<section><h2>Summary of older turns</h2><pre>{}</pre></section>",
            escape(summary)
        );
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Evaluation, Session};
    use evolve_core::history::ToolCall;

    fn sample() -> SessionExport {
        let msg = |seq, turn, message| StoredMessage {
            seq,
            turn,
            at: 1_767_225_600,
            message,
        };
        let calls = vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"notes.md"}"#.into(),
        }];
        SessionExport {
            session: Session {
                id: "s0000000000ab".into(),
                title: "Read my <notes>".into(),
                created_at: 1_767_225_600,
                updated_at: 1_767_225_660,
                turns: 1,
                messages: 4,
            },
            messages: vec![
                msg(0, 1, Message::user("what do my notes say?")),
                msg(1, 1, Message::assistant_calls("", calls)),
                msg(
                    2,
                    1,
                    Message::tool_result("c1", "read_file", format!("```\n{}", "x".repeat(1000))),
                ),
                msg(3, 1, Message::assistant("They say **x**.")),
            ],
            l2: Default::default(),
            l3: None,
            evaluations: vec![Evaluation {
                session: "s0000000000ab".into(),
                turn: 1,
                score: 0.9,
                reason: "used the file".into(),
                at: 1_767_225_660,
            }],
        }
    }

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
    fn markdown_has_a_title_and_a_section_per_message_with_safe_fences() {
        let text = markdown(&sample());
        assert!(text.starts_with("# Read my <notes>\n"), "{text}");
        assert_eq!(
            text.matches("\n## ").count(),
            4 + 1,
            "4 messages + evaluations"
        );
        assert!(text.contains("## 1. User (turn 1)"));
        assert!(text.contains("## 3. Tool result · `read_file` (turn 1)"));
        assert!(
            text.contains("Tool call `read_file` (`c1`):\n\n```json\n{\"path\":\"notes.md\"}\n```")
        );
        // The result holds ``` itself: its fence is longer.
        assert!(text.contains("````text\n```\nxxx"), "{text}");
        assert!(
            text.contains(&"x".repeat(1000)),
            "exports keep results whole"
        );
    }

    #[test]
    fn html_escapes_every_text() {
        let text = html(&sample());
        assert!(text.contains("<title>Read my &lt;notes&gt;</title>"));
        assert!(!text.contains("<notes>"));
        assert_eq!(text.matches("<section>").count(), 4);
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
