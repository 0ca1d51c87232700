//! The file tools: `read_file`, `list_dir`, `search_files`, `write_file`, `edit_file`.
//! Every path goes through [`Confined::resolve`] first and the tools then touch only the
//! resolved path; walking directories never follows symlinks (a symlink is listed, not
//! entered), so a walk cannot leave the workspace either.

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use evolve_core::permission::names_secret;

use super::args::Args;
use super::workspace::{refuse_hard_links, Confined, Resolved};
use super::{ToolContext, ToolOutput};

/// Lines `read_file` returns when no `limit_lines` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Depth `list_dir` descends to when recursive (the listed folder is depth 1).
pub const LIST_MAX_DEPTH: usize = 3;
/// Entries `list_dir` shows at most.
pub const LIST_MAX_ENTRIES: usize = 500;
/// Matching lines `search_files` returns at most.
pub const SEARCH_MAX_HITS: usize = 200;
/// Files larger than this are not searched (logs, data dumps, build outputs).
pub const SEARCH_MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Files `search_files` opens at most, so a search of a huge tree ends.
pub const SEARCH_MAX_FILES: usize = 20_000;
/// A matching line is cut to this many characters.
pub const HIT_LINE_CHARS: usize = 240;
/// How much of a file's start is checked for NUL bytes to call it binary (as grep does).
const BINARY_SNIFF_BYTES: usize = 8000;
/// `read_file` counts the lines of files up to this size to say "of N lines".
const COUNT_LINES_MAX_BYTES: u64 = 32 * 1024 * 1024;

fn workspace(ctx: &ToolContext<'_>) -> Result<Confined, ToolOutput> {
    Confined::new(ctx.workspace, "the workspace").map_err(ToolOutput::error)
}

fn resolve(ws: &Confined, raw: &str) -> Result<Resolved, ToolOutput> {
    ws.resolve(raw).map_err(ToolOutput::error)
}

/// A NUL byte near the start: not text.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0)
}

/// `12 B`, `3.4 KiB`, `1.2 MiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn missing(shown: &str, e: &io::Error) -> ToolOutput {
    if e.kind() == io::ErrorKind::NotFound {
        ToolOutput::error(format!(
            "{shown} does not exist in the workspace; list_dir shows what is there"
        ))
    } else {
        ToolOutput::error(format!("cannot open {shown}: {e}"))
    }
}

/// Reads one line into `buf` (without the `\n`), keeping at most `max` bytes of it and
/// skipping the rest, so one enormous line cannot exhaust memory. `false` at the end.
fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    buf.clear();
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let (take, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, i + 1, true),
            None => (chunk.len(), chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

/// `read_file {path, offset_line?, limit_lines?}`.
pub fn read_file(args: &Args, ctx: &ToolContext<'_>, cap: usize) -> ToolOutput {
    match read_file_inner(args, ctx, cap) {
        Ok(out) | Err(out) => out,
    }
}

fn read_file_inner(
    args: &Args,
    ctx: &ToolContext<'_>,
    cap: usize,
) -> Result<ToolOutput, ToolOutput> {
    let ws = workspace(ctx)?;
    let r = resolve(&ws, args.text("path"))?;
    let meta = fs::metadata(&r.path).map_err(|e| missing(&r.shown, &e))?;
    if meta.is_dir() {
        return Err(ToolOutput::error(format!(
            "{} is a directory; use list_dir to see what it holds",
            r.shown
        )));
    }
    if !meta.is_file() {
        return Err(ToolOutput::error(format!(
            "{} is not a regular file (a device, socket or pipe); read_file reads files only",
            r.shown
        )));
    }
    let offset = args.int("offset_line").unwrap_or(1).max(1) as usize;
    let limit = args
        .int("limit_lines")
        .map_or(DEFAULT_READ_LINES, |n| n.max(1) as usize);
    let file = fs::File::open(&r.path).map_err(|e| missing(&r.shown, &e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|e| ToolOutput::error(format!("cannot read {}: {e}", r.shown)))?;
    if looks_binary(head) {
        return Err(ToolOutput::error(format!(
            "{} is a binary file ({}); read_file shows text files only",
            r.shown,
            human_size(meta.len())
        )));
    }
    if meta.len() == 0 {
        return Ok(ToolOutput::ok(format!("({} is empty)", r.shown)));
    }

    let read_err = |e: io::Error| ToolOutput::error(format!("cannot read {}: {e}", r.shown));
    let mut out = String::new();
    let mut buf = Vec::new();
    let mut line_no = 0usize; // lines read so far
    let mut last_shown = 0usize;
    let mut stopped = None; // why the window ended before the end of the file
    while next_line(&mut reader, &mut buf, cap + 1).map_err(read_err)? {
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if line_no >= offset.saturating_add(limit) {
            stopped = Some(Stop::Limit);
            break;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if out.len() + text.len() + 1 > cap {
            if last_shown == 0 {
                // One line longer than the cap: show its start rather than nothing.
                out.push_str(clip_bytes(text, cap));
                out.push_str("…\n");
                last_shown = line_no;
                stopped = Some(Stop::LongLine);
            } else {
                stopped = Some(Stop::Cap);
            }
            break;
        }
        out.push_str(text);
        out.push('\n');
        last_shown = line_no;
    }
    let total = match stopped {
        None => Some(line_no),
        Some(_) if meta.len() <= COUNT_LINES_MAX_BYTES => {
            let mut n = line_no;
            while next_line(&mut reader, &mut buf, 0).map_err(read_err)? {
                n += 1;
            }
            Some(n)
        }
        Some(_) => None,
    };
    if last_shown == 0 {
        let lines = total.map_or_else(|| "fewer".to_string(), |t| t.to_string());
        return Err(ToolOutput::error(format!(
            "offset_line {offset} is past the end: {} has {lines} lines",
            r.shown
        )));
    }
    let of = total.map_or_else(|| "more".to_string(), |t| t.to_string());
    let next = last_shown + 1;
    match stopped {
        Some(Stop::Cap) => out.push_str(&format!(
            "[output cap of {cap} bytes reached: lines {offset}–{last_shown} of {of}; continue with offset_line={next}]\n"
        )),
        Some(Stop::LongLine) => out.push_str(&format!(
            "[line {last_shown} of {of} is longer than the output cap of {cap} bytes and was cut; continue with offset_line={next}]\n"
        )),
        Some(Stop::Limit) => out.push_str(&format!(
            "[lines {offset}–{last_shown} of {of}; continue with offset_line={next}]\n"
        )),
        None if offset > 1 => {
            out.push_str(&format!("[lines {offset}–{last_shown} of {of}]\n"));
        }
        None => {}
    }
    Ok(ToolOutput::ok(out))
}

/// Why `read_file` showed fewer lines than the file has left.
enum Stop {
    /// `limit_lines` reached.
    Limit,
    /// The output cap reached.
    Cap,
    /// The first line alone is over the cap (shown cut).
    LongLine,
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn clip_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

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
fn sorted_entries(dir: &Path) -> io::Result<Vec<fs::DirEntry>> {
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

#[cfg(all(test, unix))]
#[path = "files_tests.rs"]
mod tests;
