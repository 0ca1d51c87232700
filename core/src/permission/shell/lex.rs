//! Reading a command line lexically: cut into simple commands, the program name of a
//! command word, and its options (short letters in bundles, long ones by unambiguous
//! prefix).

use alloc::string::String;
use alloc::vec::Vec;

/// One simple command of a command line.
#[derive(Debug, Default)]
pub(super) struct Simple {
    pub(super) words: Vec<String>,
    pub(super) redirects: Vec<String>,
    /// Its input is the output of the previous simple command (`a | b`).
    pub(super) piped: bool,
}

/// Cuts a command line into simple commands (see the module docs).
pub(super) fn simple_commands(cmd: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut cur = Simple::default();
    let mut word = String::new();
    let mut redirect_next = false;
    let mut chars = cmd.chars().peekable();

    fn end_word(word: &mut String, cur: &mut Simple, redirect_next: &mut bool) {
        if word.is_empty() {
            return;
        }
        let w = core::mem::take(word);
        if *redirect_next {
            cur.redirects.push(w);
            *redirect_next = false;
        } else {
            cur.words.push(w);
        }
    }
    fn end_simple(out: &mut Vec<Simple>, cur: &mut Simple, piped_next: bool) {
        let done = core::mem::take(cur);
        if !done.words.is_empty() || !done.redirects.is_empty() {
            out.push(done);
        }
        cur.piped = piped_next;
    }

    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '\\' => {}
            '<' | '>' => {
                end_word(&mut word, &mut cur, &mut redirect_next);
                while chars.peek().is_some_and(|n| matches!(n, '<' | '>' | '&')) {
                    chars.next();
                }
                redirect_next = true;
            }
            '|' => {
                end_word(&mut word, &mut cur, &mut redirect_next);
                let piped = match chars.peek() {
                    Some('|') => {
                        chars.next();
                        false
                    }
                    Some('&') => {
                        chars.next();
                        true
                    }
                    _ => true,
                };
                redirect_next = false;
                end_simple(&mut out, &mut cur, piped);
            }
            ';' | '&' | '(' | ')' | '{' | '}' | '`' | '\n' | '\r' => {
                end_word(&mut word, &mut cur, &mut redirect_next);
                redirect_next = false;
                end_simple(&mut out, &mut cur, false);
            }
            c if c.is_whitespace() => end_word(&mut word, &mut cur, &mut redirect_next),
            c => word.push(c),
        }
    }
    end_word(&mut word, &mut cur, &mut redirect_next);
    end_simple(&mut out, &mut cur, false);
    out
}

/// The program name of a command word, lower-cased (`/usr/bin/RM` → `rm`): names are
/// compared without case because some file systems (macOS) ignore it.
pub(crate) fn program(word: &str) -> String {
    word.rsplit('/').next().unwrap_or(word).to_lowercase()
}

/// Short option letters of `-abc` words (not `--long`), case-sensitive.
pub(super) fn has_short_flag(args: &[String], letter: char) -> bool {
    args.iter().any(|a| {
        a.strip_prefix('-')
            .is_some_and(|f| !f.starts_with('-') && f.contains(letter))
    })
}

/// GNU tools accept a long option by any unambiguous prefix (`--recur` for
/// `--recursive`): whether `arg` (before any `=value`) is `full` or a prefix of it at
/// least `min` characters long. `min` is the shortest prefix that no other option of
/// the program shares.
pub(super) fn long_opt(arg: &str, full: &str, min: usize) -> bool {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    name.starts_with("--") && name.len() >= min && full.starts_with(name)
}

pub(super) fn has_long_flag(args: &[String], full: &str, min: usize) -> bool {
    args.iter().any(|a| long_opt(a, full, min))
}

/// A command word whose program cannot be known before the shell runs it: it holds a
/// `$` (`$x`, `rm$IFS-rf$IFS.`, `$'rm'` once quotes are dropped) or a glob (`/bin/r?`).
/// `[` and `[[` are the test command.
pub(super) fn is_unknown_word(word: &str) -> bool {
    word.contains('$') || (word != "[" && word != "[[" && word.contains(['*', '?', '[']))
}

/// The git subcommand: the first word after options (`-C dir`, `-c k=v` take a value).
pub(super) fn git_subcommand(args: &[String]) -> Option<(&str, &[String])> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree" {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            return Some((a.as_str(), args.get(i + 1..).unwrap_or(&[])));
        }
    }
    None
}
