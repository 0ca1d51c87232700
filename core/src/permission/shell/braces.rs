//! Brace expansion as bash does it before running a line (`{rm,-rf,.}` is `rm -rf .`).

use alloc::string::String;
use alloc::vec::Vec;

/// What bash's brace expansion makes of a command line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Braces {
    /// No unquoted `{a,b}` group.
    None,
    /// The line with its groups expanded (`{rm,-rf,.}` → `rm -rf .`).
    Expanded(String),
    /// Too many groups or alternatives to expand within bounds.
    TooMany,
}

/// How many rounds of brace expansion are done (nested or repeated groups).
const MAX_BRACE_ROUNDS: usize = 4;

/// Expands the unquoted brace groups of `cmd` the way bash does before running it:
/// `{rm,-rf,.}` → `rm -rf .`, `rm -{r,f} x` → `rm -r -f x`, `cat {/etc/passwd,}` →
/// `cat /etc/passwd`. Quoted braces (`awk -F, '{print $1, $2}'`), `${…}`, groups without
/// a comma (`{}`, `{ cmd; }`) and sequences (`{1..3}`, left alone) are not groups. The
/// result is at most 8 × the input + 1 KiB, else [`Braces::TooMany`].
///
/// With `split_values`, `=` and `!` also end a word, so the value of
/// `git -c alias.x='!{rm,-rf,.}'` expands as the shell running the alias will.
pub(crate) fn expand_braces(cmd: &str, split_values: bool) -> Braces {
    let limit = cmd.len().saturating_mul(8).saturating_add(1024);
    let mut text = String::from(cmd);
    let mut changed = false;
    for _ in 0..MAX_BRACE_ROUNDS {
        match expand_braces_once(&text, limit, split_values) {
            Braces::Expanded(next) => {
                text = next;
                changed = true;
            }
            Braces::None => break,
            Braces::TooMany => return Braces::TooMany,
        }
    }
    if changed {
        Braces::Expanded(text)
    } else {
        Braces::None
    }
}

/// The brace-expanded readings of a command line: the line as written, and the line
/// with its quotes dropped (for the text a nested `sh -c '{rm,-rf,.}'` expands), each
/// kept when it differs from the input; and whether any was [`Braces::TooMany`].
pub(crate) fn brace_readings(cmd: &str) -> (Vec<String>, bool) {
    let mut out: Vec<String> = Vec::new();
    let mut too_many = false;
    let unquoted: String = cmd.chars().filter(|c| !matches!(c, '\'' | '"')).collect();
    for (text, split_values) in [(cmd, false), (unquoted.as_str(), true)] {
        match expand_braces(text, split_values) {
            Braces::Expanded(e) if !out.contains(&e) => out.push(e),
            Braces::TooMany => too_many = true,
            _ => {}
        }
    }
    (out, too_many)
}

/// One round: the first group of every word.
fn expand_braces_once(cmd: &str, limit: usize, split_values: bool) -> Braces {
    struct Word {
        start: usize,
        open: Option<usize>,
        close: Option<usize>,
        commas: Vec<usize>,
        depth: usize,
        param_depth: usize,
    }
    let mut out = String::new();
    let mut changed = false;
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut word: Option<Word> = None;
    let mut prev = '\0';
    let finish = |w: Word, end: usize, out: &mut String| -> bool {
        let text = cmd.get(w.start..end).unwrap_or("");
        let (Some(open), Some(close)) = (w.open, w.close) else {
            out.push_str(text);
            return false;
        };
        if w.commas.is_empty() {
            out.push_str(text);
            return false;
        }
        let prefix = cmd.get(w.start..open).unwrap_or("");
        let suffix = cmd.get(close + 1..end).unwrap_or("");
        let mut from = open + 1;
        let mut first = true;
        for cut in w.commas.iter().copied().chain(core::iter::once(close)) {
            let alt = cmd.get(from..cut).unwrap_or("");
            from = cut + 1;
            if prefix.is_empty() && alt.is_empty() && suffix.is_empty() {
                continue;
            }
            if !first {
                out.push(' ');
            }
            first = false;
            out.push_str(prefix);
            out.push_str(alt);
            out.push_str(suffix);
        }
        true
    };
    for (i, c) in cmd.char_indices() {
        let quoted = single || double || escaped;
        let boundary = !quoted
            && (c.is_whitespace()
                || matches!(c, ';' | '|' | '&' | '(' | ')' | '<' | '>')
                || (split_values && matches!(c, '=' | '!')));
        if boundary {
            if let Some(w) = word.take() {
                changed |= finish(w, i, &mut out);
            }
            out.push(c);
        } else {
            let w = word.get_or_insert(Word {
                start: i,
                open: None,
                close: None,
                commas: Vec::new(),
                depth: 0,
                param_depth: 0,
            });
            if !quoted && w.close.is_none() {
                match c {
                    '{' if prev == '$' || w.param_depth > 0 => w.param_depth += 1,
                    '}' if w.param_depth > 0 => w.param_depth -= 1,
                    '{' => {
                        if w.depth == 0 && w.open.is_none() {
                            w.open = Some(i);
                        }
                        w.depth += 1;
                    }
                    '}' if w.depth > 0 => {
                        w.depth -= 1;
                        if w.depth == 0 {
                            if w.commas.is_empty() {
                                w.open = None;
                            } else {
                                w.close = Some(i);
                            }
                        }
                    }
                    ',' if w.depth == 1 && w.param_depth == 0 => w.commas.push(i),
                    _ => {}
                }
            }
        }
        if escaped {
            escaped = false;
        } else {
            match c {
                '\\' if !single => escaped = true,
                '\'' if !double => single = !single,
                '"' if !single => double = !double,
                _ => {}
            }
        }
        prev = c;
        if out.len() > limit {
            return Braces::TooMany;
        }
    }
    if let Some(w) = word.take() {
        changed |= finish(w, cmd.len(), &mut out);
    }
    if out.len() > limit {
        Braces::TooMany
    } else if changed {
        Braces::Expanded(out)
    } else {
        Braces::None
    }
}

#[cfg(test)]
#[path = "braces_tests.rs"]
mod tests;
