//! A session as a readable transcript: Markdown and a self-contained HTML page (title,
//! the session's facts, then one section per message; tool results kept whole). Both
//! front ends export through these — `evolve sessions export` and
//! `GET /v1/sessions/{id}/export` — and the JSON export is the stored records themselves.

use std::fmt::Write as _;

use evolve_core::history::{Message, Role};
use evolve_core::text::{escape_html as escape, one_line};

use super::{format_time, SessionExport};

/// The session's title, or `Session ID` for an untitled one.
pub(crate) fn title_of(export: &SessionExport) -> String {
    let t = export.session.title.trim();
    if t.is_empty() {
        format!("Session {}", export.session.id)
    } else {
        t.to_string()
    }
}

/// The one-line heading of a message: `user`, `tool get_time [c1]`.
pub(crate) fn heading(m: &Message) -> String {
    match (m.role, &m.name, &m.tool_call_id) {
        (Role::Tool, name, id) => format!(
            "tool {}{}",
            name.as_deref().unwrap_or("?"),
            id.as_deref().map(|i| format!(" [{i}]")).unwrap_or_default()
        ),
        (role, _, _) => role.name().to_string(),
    }
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
    let _ = writeln!(out, "- Created: {} UTC", format_time(s.created_at));
    let _ = writeln!(out, "- Updated: {} UTC", format_time(s.updated_at));
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
        let _ = writeln!(
            out,
            "## {}. {} (turn {}{})\n",
            i + 1,
            title,
            position(export, sm.turn),
            replaced(export, sm.turn)
        );
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
        if let Some(note) = unfinished(export, i) {
            let _ = writeln!(out, "> **{note}**\n");
        }
    }
    if let Some(summary) = &export.l3 {
        let _ = writeln!(out, "## Summary of older turns\n\n{}\n", summary.trim_end());
    }
    if !export.evaluations.is_empty() {
        let _ = writeln!(out, "## Evaluations\n");
        for e in &export.evaluations {
            let _ = writeln!(
                out,
                "- Turn {}{}: {:.2} — {}",
                position(export, e.turn),
                replaced(export, e.turn),
                e.score,
                e.reason
            );
        }
    }
    out
}

/// A self-contained HTML page of the transcript (print it for a PDF). Every text is
/// escaped: a message cannot inject markup or script.
/// After the last message of a turn that did not finish: that the person stopped the
/// answer (what precedes is all there is of it), or why it failed.
fn unfinished(export: &SessionExport, i: usize) -> Option<String> {
    let turn = export.messages[i].turn;
    let last = export
        .messages
        .get(i + 1)
        .is_none_or(|next| next.turn != turn);
    let why = export.failed.get(&turn).filter(|_| last)?;
    Some(if why == "stopped" {
        "Stopped: the answer was stopped here and is incomplete.".to_string()
    } else {
        format!("Not finished: {}", one_line(why, 300))
    })
}

/// The number a reader knows a turn by: its place in its conversation (a version of
/// turn 2 stored after turns 3 and 4 is still turn 2), not the order it was stored in.
fn position(export: &SessionExport, turn: u64) -> u64 {
    export.session.branches().position(turn)
}

/// After a turn's number: that it is not on the branch shown (a later turn answered
/// it, or one before it, again).
fn replaced(export: &SessionExport, turn: u64) -> &'static str {
    let s = &export.session;
    if turn <= s.turns && !s.branches().shown_path().contains(&turn) {
        ", answered again later"
    } else {
        ""
    }
}

pub(crate) fn html(export: &SessionExport) -> String {
    let s = &export.session;
    let title = escape(&title_of(export));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\n\
         <style>body{{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}}\
         section{{border-top:1px solid #ccc;padding:.5em 0}}h2{{font-size:1em;color:#555}}\
         pre{{background:#f4f4f4;padding:.5em;white-space:pre-wrap}}\
         @page{{margin:18mm}}@media print{{body{{margin:0;max-width:none}}section{{break-inside:avoid}}}}\
         </style></head><body>\n\
         <h1>{title}</h1>\n<p>Session <code>{}</code> · created {} UTC · updated {} UTC · \
         {} turns · {} messages</p>\n",
        escape(&s.id),
        format_time(s.created_at),
        format_time(s.updated_at),
        s.turns,
        s.messages
    );
    for (i, sm) in export.messages.iter().enumerate() {
        let m = &sm.message;
        let _ = writeln!(
            out,
            "<section><h2>{}. {} (turn {}{})</h2>",
            i + 1,
            escape(&heading(m)),
            position(export, sm.turn),
            replaced(export, sm.turn)
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
        if let Some(note) = unfinished(export, i) {
            let _ = writeln!(out, "<p><strong>{}</strong></p>", escape(&note));
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
pub(crate) mod tests {
    use super::*;
    use crate::store::{Evaluation, Session, StoredMessage};
    use evolve_core::history::ToolCall;

    pub(crate) fn sample() -> SessionExport {
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
                title_from: Default::default(),
                created_at: 1_767_225_600,
                updated_at: 1_767_225_660,
                turns: 1,
                messages: 4,
                superseded: Vec::new(),
                parents: Vec::new(),
                shown: Vec::new(),
                channel: None,
                offered_tools: Vec::new(),
                pinned: false,
                archived: false,
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
            tool_chain: None,
            evaluations: vec![Evaluation {
                session: "s0000000000ab".into(),
                turn: 1,
                score: 0.9,
                reason: "used the file".into(),
                at: 1_767_225_660,
            }],
            failed: Default::default(),
        }
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
    fn a_stopped_or_failed_turn_is_marked_after_its_last_message() {
        let mut two = sample();
        let mut next = two.messages.clone();
        for (k, m) in next.iter_mut().enumerate() {
            m.turn = 2;
            m.seq = 4 + k as u64;
        }
        two.messages.extend(next);
        for (failed, want_md, want_html) in [
            (
                vec![(1, "stopped")],
                vec!["They say **x**.\n\n> **Stopped: the answer was stopped here and is incomplete.**\n\n## 5. User (turn 2)"],
                1,
            ),
            (
                vec![(2, "the model at http://127.0.0.1:9/v1 timed out")],
                vec!["> **Not finished: the model at http://127.0.0.1:9/v1 timed out**\n"],
                1,
            ),
            (
                vec![(1, "stopped"), (2, "stopped")],
                vec!["They say **x**.\n\n> **Stopped", "> **Stopped"],
                2,
            ),
        ] {
            two.failed = failed.iter().map(|(t, w)| (*t, w.to_string())).collect();
            let md = markdown(&two);
            for want in &want_md {
                assert!(md.contains(want), "{failed:?}: {want:?} in\n{md}");
            }
            assert_eq!(
                md.matches("> **").count(),
                want_html,
                "{failed:?}: once per unfinished turn"
            );
            assert_eq!(
                html(&two).matches("<p><strong>").count(),
                want_html,
                "{failed:?}"
            );
        }
        two.failed.clear();
        assert!(
            !markdown(&two).contains("> **"),
            "a finished turn has no mark"
        );
    }

    #[test]
    fn html_escapes_every_text() {
        let text = html(&sample());
        assert!(text.contains("<title>Read my &lt;notes&gt;</title>"));
        assert!(!text.contains("<notes>"));
        assert_eq!(text.matches("<section>").count(), 4);
    }
}
