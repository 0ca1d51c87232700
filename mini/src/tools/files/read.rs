//! `read_file`: a window of a text file's lines, numbered, within the output cap, and
//! what to ask for next when more is left.

use std::fs;
use std::io::{self, BufRead, BufReader};

use super::bytes::{clip_bytes, human_size, looks_binary, next_line};
use super::open::{missing, resolve, workspace};
use crate::tools::args::Args;
use crate::tools::{ToolContext, ToolOutput};

/// Lines `read_file` returns when no `limit_lines` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// `read_file` counts the lines of files up to this size to say "of N lines".
const COUNT_LINES_MAX_BYTES: u64 = 32 * 1024 * 1024;

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
