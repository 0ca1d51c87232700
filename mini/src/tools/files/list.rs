//! `list_dir`: a folder's entries, sorted, with sizes, descending a few levels when
//! recursive; symlinks are listed, never entered, and secret-looking names are marked.

use std::fs;
use std::io;
use std::path::Path;

use evolve_core::permission::names_secret;

use super::bytes::human_size;
use super::open::{missing, resolve, workspace};
use crate::tools::args::Args;
use crate::tools::{ToolContext, ToolOutput};

/// Depth `list_dir` descends to when recursive (the listed folder is depth 1).
pub const LIST_MAX_DEPTH: usize = 3;
/// Entries `list_dir` shows at most.
pub const LIST_MAX_ENTRIES: usize = 500;

/// `list_dir {path?, recursive?}`.
pub fn list_dir(args: &Args, ctx: &ToolContext<'_>) -> ToolOutput {
    let ws = match workspace(ctx) {
        Ok(ws) => ws,
        Err(e) => return e,
    };
    let r = match resolve(&ws, args.str("path").unwrap_or(".")) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match fs::metadata(&r.path) {
        Err(e) => return missing(&r.shown, &e),
        Ok(m) if !m.is_dir() => {
            return ToolOutput::error(format!(
                "{} is a file, not a directory; use read_file to read it",
                r.shown
            ))
        }
        Ok(_) => {}
    }
    let depth = if args.flag("recursive").unwrap_or(false) {
        LIST_MAX_DEPTH
    } else {
        1
    };
    let mut lines = Vec::new();
    let mut full = false;
    if let Err(e) = walk_list(&r.path, "", depth, &mut lines, &mut full) {
        return ToolOutput::error(format!("cannot list {}: {e}", r.shown));
    }
    let mut out = format!("{}/\n", r.shown);
    if lines.is_empty() {
        out.push_str("(empty directory)\n");
    }
    for line in &lines {
        out.push_str(line);
        out.push('\n');
    }
    if full {
        out.push_str(&format!(
            "[stopped at {LIST_MAX_ENTRIES} entries; list a subfolder to see more]\n"
        ));
    }
    ToolOutput::ok(out)
}

/// Entries of `dir` sorted by name.
pub(super) fn sorted_entries(dir: &Path) -> io::Result<Vec<fs::DirEntry>> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    Ok(entries)
}

fn walk_list(
    dir: &Path,
    prefix: &str,
    depth: usize,
    lines: &mut Vec<String>,
    full: &mut bool,
) -> io::Result<()> {
    for entry in sorted_entries(dir)? {
        if lines.len() >= LIST_MAX_ENTRIES {
            *full = true;
            return Ok(());
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}{name}");
        let Ok(kind) = entry.file_type() else {
            lines.push(rel);
            continue;
        };
        if kind.is_symlink() {
            let target = fs::read_link(entry.path())
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            lines.push(format!("{rel} -> {target}"));
        } else if kind.is_dir() {
            lines.push(format!("{rel}/"));
            // `.git` is listed but not entered: thousands of objects, nothing to read;
            // nor a folder of secrets (`.ssh`, `.gnupg`), whose reads are refused anyway.
            if depth > 1 && name != ".git" && !names_secret(&rel) {
                // An unreadable subfolder is listed without its content.
                let _ = walk_list(&entry.path(), &format!("{rel}/"), depth - 1, lines, full);
                if *full {
                    return Ok(());
                }
            }
        } else {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            lines.push(format!("{rel}  ({})", human_size(size)));
        }
    }
    Ok(())
}
