//! `search_files`: the lines that contain a text, in the files of a folder whose names
//! match a glob, within limits on hits, files and file sizes; binary files and
//! secret-looking names are skipped, symlinks never followed.

use std::fs;
use std::io::Read;
use std::path::Path;

use evolve_core::permission::names_secret;

use super::bytes::{human_size, looks_binary};
use super::list::sorted_entries;
use super::open::{missing, resolve, workspace};
use crate::tools::args::Args;
use crate::tools::workspace::Confined;
use crate::tools::{ToolContext, ToolOutput};

/// Matching lines `search_files` returns at most.
pub const SEARCH_MAX_HITS: usize = 200;
/// Files larger than this are not searched (logs, data dumps, build outputs).
pub const SEARCH_MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Files `search_files` opens at most, so a search of a huge tree ends.
pub const SEARCH_MAX_FILES: usize = 20_000;
/// A matching line is cut to this many characters.
pub const HIT_LINE_CHARS: usize = 240;

/// A file-name pattern with `*` (any run) and `?` (one character), ASCII
/// case-insensitive: `*.rs`, `test_*`, `*.tar.gz`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    let n: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[derive(Default)]
struct Search {
    needle: String,
    glob: Option<String>,
    hits: Vec<String>,
    files_searched: usize,
    files_matched: usize,
    skipped_binary: usize,
    skipped_large: usize,
    /// Files and folders with secrets in their names, never read.
    skipped_secret: usize,
    truncated: bool,
}

impl Search {
    fn full(&self) -> bool {
        self.hits.len() >= SEARCH_MAX_HITS || self.files_searched >= SEARCH_MAX_FILES
    }

    fn file(&mut self, path: &Path, shown: &str) {
        if names_secret(shown) {
            self.skipped_secret += 1;
            return;
        }
        let Ok(meta) = fs::metadata(path) else { return };
        if !meta.is_file() {
            return;
        }
        if meta.len() > SEARCH_MAX_FILE_BYTES {
            self.skipped_large += 1;
            return;
        }
        let mut bytes = Vec::new();
        let read = fs::File::open(path)
            .and_then(|f| f.take(SEARCH_MAX_FILE_BYTES).read_to_end(&mut bytes));
        if read.is_err() {
            return;
        }
        self.files_searched += 1;
        if looks_binary(&bytes) {
            self.skipped_binary += 1;
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut matched = false;
        for (i, line) in text.lines().enumerate() {
            if line.to_lowercase().contains(&self.needle) {
                if self.hits.len() >= SEARCH_MAX_HITS {
                    self.truncated = true;
                    break;
                }
                matched = true;
                let line = line.trim();
                let mut cut: String = line.chars().take(HIT_LINE_CHARS).collect();
                if cut.len() < line.len() {
                    cut.push('…');
                }
                self.hits.push(format!("{shown}:{}: {cut}", i + 1));
            }
        }
        if matched {
            self.files_matched += 1;
        }
    }

    fn dir(&mut self, ws: &Confined, dir: &Path, depth: usize) {
        let Ok(entries) = sorted_entries(dir) else {
            return;
        };
        for entry in entries {
            if self.full() {
                self.truncated = true;
                return;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let path = entry.path();
            // The files `read_file` refuses (L5: `.env`, `.ssh/`, private keys …) are
            // not searched either: a search must not print what a read may not.
            if names_secret(&ws.show(&path)) {
                if kind.is_dir() || kind.is_file() {
                    self.skipped_secret += 1;
                }
                continue;
            }
            if kind.is_dir() {
                if name != ".git" && depth < 64 {
                    self.dir(ws, &path, depth + 1);
                }
            } else if kind.is_file() {
                let matches_glob = self
                    .glob
                    .as_deref()
                    .is_none_or(|g| glob_match(g, &name.to_string_lossy()));
                if matches_glob {
                    self.file(&path, &ws.show(&path));
                }
            }
            // Symlinks are not followed: their targets may be outside the workspace.
        }
    }
}

/// `search_files {pattern, path?, glob?}`.
pub fn search_files(args: &Args, ctx: &ToolContext<'_>) -> ToolOutput {
    let pattern = args.text("pattern");
    if pattern.is_empty() {
        return ToolOutput::error(
            "`pattern` is empty; give the text to look for (plain text, not a regex)",
        );
    }
    let ws = match workspace(ctx) {
        Ok(ws) => ws,
        Err(e) => return e,
    };
    let r = match resolve(&ws, args.str("path").unwrap_or(".")) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let meta = match fs::metadata(&r.path) {
        Ok(m) => m,
        Err(e) => return missing(&r.shown, &e),
    };
    let mut search = Search {
        needle: pattern.to_lowercase(),
        glob: args
            .str("glob")
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(String::from),
        ..Search::default()
    };
    if meta.is_dir() {
        search.dir(&ws, &r.path, 0);
    } else {
        search.file(&r.path, &r.shown);
    }

    let mut skipped = Vec::new();
    if search.skipped_secret > 0 {
        skipped.push(format!(
            "{} holding secrets (.env, keys …)",
            search.skipped_secret
        ));
    }
    if search.skipped_binary > 0 {
        skipped.push(format!("{} binary", search.skipped_binary));
    }
    if search.skipped_large > 0 {
        skipped.push(format!(
            "{} over {}",
            search.skipped_large,
            human_size(SEARCH_MAX_FILE_BYTES)
        ));
    }
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!("; skipped {}", skipped.join(", "))
    };
    let files = if search.files_searched == 1 {
        "file"
    } else {
        "files"
    };
    if search.hits.is_empty() {
        return ToolOutput::ok(format!(
            "no matches for {pattern:?} in {} ({} {files} searched{skipped})",
            r.shown, search.files_searched
        ));
    }
    let mut out = search.hits.join("\n");
    out.push_str(&format!(
        "\n[{} matching lines in {} of {} {files} searched{skipped}",
        search.hits.len(),
        search.files_matched,
        search.files_searched
    ));
    if search.truncated {
        out.push_str("; stopped early — narrow the pattern, path or glob to see the rest");
    }
    out.push_str("]\n");
    ToolOutput::ok(out)
}
