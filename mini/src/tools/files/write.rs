//! The tools that change files: `write_file` (create, replace, append) and `edit_file`
//! (one exact replacement, or all of them; a near miss names the line the model's copy
//! was close to). Hard links are refused, so an edit cannot reach a file outside.

use std::fs;
use std::io;

use super::open::{missing, resolve, workspace};
use crate::tools::args::Args;
use crate::tools::workspace::refuse_hard_links;
use crate::tools::{ToolContext, ToolOutput};

/// `write_file {path, content, append?}`.
pub fn write_file(args: &Args, ctx: &ToolContext<'_>) -> ToolOutput {
    let ws = match workspace(ctx) {
        Ok(ws) => ws,
        Err(e) => return e,
    };
    let r = match resolve(&ws, args.text("path")) {
        Ok(r) => r,
        Err(e) => return e,
    };
    if r.path == ws.root() || r.path.is_dir() {
        return ToolOutput::error(format!(
            "{} is a directory; give a file path such as {}/notes.md",
            r.shown, r.shown
        ));
    }
    if let Err(e) = refuse_hard_links(&r) {
        return ToolOutput::error(e);
    }
    let content = args.text("content");
    let append = args.flag("append").unwrap_or(false);
    let existed = r.path.exists();
    if let Some(parent) = r.path.parent() {
        if let Err(e) = fs::create_dir_all(parent) {
            return ToolOutput::error(format!("cannot create the folder for {}: {e}", r.shown));
        }
    }
    let written = if append {
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&r.path)
            .and_then(|mut f| io::Write::write_all(&mut f, content.as_bytes()))
    } else {
        fs::write(&r.path, content)
    };
    if let Err(e) = written {
        return ToolOutput::error(format!("cannot write {}: {e}", r.shown));
    }
    let n = content.len();
    let what = match (append, existed) {
        (true, true) => format!("appended {n} bytes to {}", r.shown),
        (true, false) => format!("created {} with {n} bytes", r.shown),
        (false, true) => format!("replaced {} with {n} bytes", r.shown),
        (false, false) => format!("created {} with {n} bytes", r.shown),
    };
    ToolOutput::ok(what)
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `edit_file {path, old, new, replace_all?}`.
pub fn edit_file(args: &Args, ctx: &ToolContext<'_>) -> ToolOutput {
    let ws = match workspace(ctx) {
        Ok(ws) => ws,
        Err(e) => return e,
    };
    let r = match resolve(&ws, args.text("path")) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let old = args.text("old");
    let new = args.text("new");
    if old.is_empty() {
        return ToolOutput::error(
            "`old` is empty; give the exact text to replace (use write_file to create or overwrite a whole file)",
        );
    }
    if old == new {
        return ToolOutput::error("`old` and `new` are the same; nothing would change");
    }
    let bytes = match fs::read(&r.path) {
        Ok(b) => b,
        Err(e) if r.path.is_dir() => {
            return ToolOutput::error(format!("{} is a directory ({e})", r.shown))
        }
        Err(e) => return missing(&r.shown, &e),
    };
    let Ok(content) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "{} is not UTF-8 text; edit_file edits text files only",
            r.shown
        ));
    };
    if let Err(e) = refuse_hard_links(&r) {
        return ToolOutput::error(e);
    }
    // A file with CRLF line ends and `old` written with LF: the model meant the same
    // lines, so match them with CRLF (and write `new` the same way).
    let crlf_old;
    let crlf_new;
    let (old, new) = if !content.contains(old) && old.contains('\n') && content.contains("\r\n") {
        crlf_old = old.replace("\r\n", "\n").replace('\n', "\r\n");
        crlf_new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        (crlf_old.as_str(), crlf_new.as_str())
    } else {
        (old, new)
    };
    let positions: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    let replace_all = args.flag("replace_all").unwrap_or(false);
    match positions.len() {
        0 => {
            let mut msg = format!(
                "`old` was not found in {}. It must match the file exactly, including spaces, indentation and line breaks; read_file the region and copy the text",
                r.shown
            );
            if let Some(line) = loose_match_line(&content, old) {
                msg.push_str(&format!(
                    " (text like it, with different case or spacing, is at line {line})"
                ));
            }
            return ToolOutput::error(msg);
        }
        n if n > 1 && !replace_all => {
            let lines: Vec<String> = positions
                .iter()
                .take(10)
                .map(|&p| line_of(&content, p).to_string())
                .collect();
            return ToolOutput::error(format!(
                "`old` appears {n} times in {} (lines {}{}); include more surrounding text to make it unique, or set replace_all to true",
                r.shown,
                lines.join(", "),
                if n > 10 { ", …" } else { "" }
            ));
        }
        _ => {}
    }
    let updated = if replace_all {
        content.replace(old, new)
    } else {
        content.replacen(old, new, 1)
    };
    if let Err(e) = fs::write(&r.path, updated) {
        return ToolOutput::error(format!("cannot write {}: {e}", r.shown));
    }
    let first = positions.first().map_or(1, |&p| line_of(&content, p));
    match positions.len() {
        1 => ToolOutput::ok(format!("edited {} at line {first}", r.shown)),
        n => ToolOutput::ok(format!(
            "replaced {n} occurrences in {} (first at line {first})",
            r.shown
        )),
    }
}

/// The line where `old` appears when case and runs of white space are ignored, to tell
/// the model its copy was close.
fn loose_match_line(content: &str, old: &str) -> Option<usize> {
    let squash = |s: &str| -> (String, Vec<usize>) {
        // The squashed text and, for each of its bytes, the byte offset in `s`.
        let mut out = String::new();
        let mut map = Vec::new();
        let mut in_space = false;
        for (i, c) in s.char_indices() {
            if c.is_whitespace() {
                if !in_space {
                    out.push(' ');
                    map.push(i);
                }
                in_space = true;
            } else {
                in_space = false;
                for l in c.to_lowercase() {
                    let start = out.len();
                    out.push(l);
                    map.extend(std::iter::repeat_n(i, out.len() - start));
                }
            }
        }
        (out, map)
    };
    let (hay, map) = squash(content);
    let (needle, _) = squash(old.trim());
    if needle.trim().is_empty() {
        return None;
    }
    let at = hay.find(needle.trim())?;
    Some(line_of(content, map.get(at).copied().unwrap_or(0)))
}
