//! Whether a configured command prefix covers a command: no chaining, only plain words
//! after it, and none of the options that run, configure, write or send.

use alloc::string::String;
use alloc::vec::Vec;

use super::lex::{git_subcommand, has_short_flag};

/// Characters that let one command line run more than one command or redirect files:
/// a command containing any of them never matches a configured prefix.
pub(crate) fn chains_commands(cmd: &str) -> bool {
    cmd.contains([';', '&', '|', '`', '>', '<', '\n', '\r', '\0']) || cmd.contains("$(")
}

/// Collapses whitespace runs to one space and trims.
pub(super) fn normalise_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whether a word after a configured prefix is plain: ASCII letters, digits and
/// `._/:@+=,-%^` only, plus `~` inside a word where the shell leaves it alone (not first,
/// not after `=` or `:`: `HEAD~1`) — no quote, `$`, brace, glob, `!`, backslash or
/// anything else the shell would expand or reinterpret, so the word is exactly what the
/// program gets.
fn is_plain_word(word: &str) -> bool {
    let mut prev: Option<char> = None;
    !word.is_empty()
        && word.chars().all(|c| {
            let ok = c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '.' | '_' | '/' | ':' | '@' | '+' | '=' | ',' | '-' | '%' | '^'
                )
                || (c == '~' && prev.is_some_and(|p| p != '=' && p != ':'));
            prev = Some(c);
            ok
        })
}

/// Options that make a prefixed program run a command, read a config that may, or write
/// or send files — a prefix never covers a command using one. A long option matches
/// itself, its family (`--data-binary`, `--output-document`) and any abbreviation
/// (`--outp`, `--o`, `--i`): GNU getopt accepts every unambiguous prefix, and a
/// stricter reading only costs a confirmation.
///
/// Deleting is irreversible, so it is never L3 (the Evolve Agent design: L3 is "side effects, but
/// reversible"): the options that delete what they read or replace (`tar
/// --remove-files`/`--unlink-first`/`--recursive-unlink`, `rsync --remove-source-files`,
/// `zip --move`) are here too, and so are those that read a script or a list of options
/// nobody sees (`--file`: `sed -f`, `hostname --file`).
const RISKY_LONG_OPTIONS: [&str; 38] = [
    "--exec",
    "--extcmd",
    "--test",
    "--unzip-command",
    "--tool",
    "--remove",
    "--unlink",
    "--recursive-unlink",
    "--move",
    "--file",
    "--info-script",
    "--new-volume-script",
    "--rmt-command",
    "--output",
    "--upload",
    "--data",
    "--form",
    "--config",
    "--request",
    "--post",
    "--json",
    "--compress-program",
    "--use-compress-program",
    "--pager",
    "--receive-pack",
    "--upload-pack",
    "--git-dir",
    "--work-tree",
    "--delete",
    "--in-place",
    "--to-command",
    "--checkpoint-action",
    "--rsh",
    "--method",
    "--body",
    "--execute",
    "--editor",
    "--shell",
];

/// `find`'s actions that run commands, delete or write files.
const RISKY_FIND_ACTIONS: [&str; 9] = [
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Short options, per program, that run, configure, write or send (in any bundle:
/// `curl -sd`, `sort -o/x`).
fn risky_short_letters(program: &str) -> &'static str {
    match program {
        "git" => "c",
        "curl" => "dFTXoOK",
        "wget" => "Ooea",
        "sort" => "o",
        // In place, a script file nobody sees.
        "sed" => "if",
        // A compress program or volume script that runs, unlink before extracting.
        "tar" => "IFU",
        // Move into the archive (deletes the originals), a test command that runs.
        "zip" => "mT",
        // The remote shell that runs.
        "rsync" => "e",
        _ => "",
    }
}

/// Git subcommands whose job is to run a program the user (or the repository) names:
/// a prefix on `git` never covers them.
const GIT_RUNNERS: [&str; 8] = [
    "difftool",
    "mergetool",
    "filter-branch",
    "filter-repo",
    "instaweb",
    "daemon",
    "web--browse",
    "credential",
];

/// Whether the words after `git` run a program: a [`GIT_RUNNERS`] subcommand, or the
/// short `-u` (`--upload-pack`) of the subcommands that talk to another repository.
fn git_runs_programs(rest: &[&str]) -> bool {
    let owned: Vec<String> = rest.iter().map(|w| String::from(*w)).collect();
    let Some((sub, args)) = git_subcommand(&owned) else {
        return false;
    };
    if GIT_RUNNERS.contains(&sub) {
        return true;
    }
    matches!(sub, "clone" | "fetch" | "pull" | "ls-remote" | "archive") && has_short_flag(args, 'u')
}

/// Whether a `sed` script word (plain: no quotes, spaces, `;` or braces, so one
/// command) runs a shell command: the `e` command (`1e`, `e`, `/x/e` — with no command
/// text it runs each input line) or the `e` flag of `s` (`s/.*/cmd/e`). Addresses
/// (`1`, `2,5`, `/re/`, `0~3`) are skipped first.
fn sed_script_runs(script: &str) -> bool {
    let b = script.as_bytes();
    let mut i = 0;
    // Up to two addresses separated by `,`; `~` steps.
    loop {
        match b.get(i) {
            Some(c) if c.is_ascii_digit() || *c == b'~' || *c == b'$' || *c == b',' => i += 1,
            Some(b'/') | Some(b'\\') => {
                let delim = if b[i] == b'\\' {
                    i += 1;
                    match b.get(i) {
                        Some(d) => *d,
                        None => return false,
                    }
                } else {
                    b'/'
                };
                i += 1;
                while i < b.len() && b[i] != delim {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                // Regex flags after an address: `I`, `M`.
                while matches!(b.get(i), Some(b'I') | Some(b'M')) {
                    i += 1;
                }
            }
            _ => break,
        }
    }
    match b.get(i) {
        Some(b'e') => true,
        Some(b's') => {
            let Some(&delim) = b.get(i + 1) else {
                return false;
            };
            // s DELIM pattern DELIM replacement DELIM flags
            let mut j = i + 2;
            let mut seen = 0;
            while j < b.len() && seen < 2 {
                if b[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if b[j] == delim {
                    seen += 1;
                }
                j += 1;
            }
            seen == 2 && b[j.min(b.len())..].contains(&b'e')
        }
        _ => false,
    }
}

/// The script words of a `sed` call: the values of `-e` (also inside a bundle: `-ne1e`
/// is `-n -e 1e`) and of `--expression` in any abbreviation (`--expr=1e`, `--e 1e`),
/// else its first word that is not an option.
fn sed_scripts<'w>(rest: &[&'w str]) -> Vec<&'w str> {
    let mut scripts = Vec::new();
    let mut first_plain = None;
    let mut i = 0;
    while i < rest.len() {
        let w = rest[i];
        i += 1;
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            if !name.is_empty() && "expression".starts_with(name) {
                match value {
                    Some(v) => scripts.push(v),
                    None => {
                        if let Some(v) = rest.get(i) {
                            scripts.push(*v);
                            i += 1;
                        }
                    }
                }
            }
            continue;
        }
        if let Some(bundle) = w.strip_prefix('-').filter(|b| !b.is_empty()) {
            // Options without a value until `e` (the script follows) or `l` (a number).
            if let Some(at) = bundle.find(['e', 'l']) {
                let value = &bundle[at + 1..];
                if bundle.as_bytes()[at] == b'e' {
                    if value.is_empty() {
                        if let Some(v) = rest.get(i) {
                            scripts.push(*v);
                            i += 1;
                        }
                    } else {
                        scripts.push(value);
                    }
                } else if value.is_empty() {
                    i += 1;
                }
            }
            continue;
        }
        if first_plain.is_none() {
            first_plain = Some(w);
        }
    }
    if scripts.is_empty() {
        scripts.extend(first_plain);
    }
    scripts
}

/// Whether the words after a matched prefix keep the prefix's promise: all plain and
/// none a risky option of the prefixed program.
pub(super) fn prefix_covers(program_name: &str, rest: &[&str]) -> bool {
    let letters = risky_short_letters(program_name);
    if program_name == "sed" && sed_scripts(rest).iter().any(|s| sed_script_runs(s)) {
        return false;
    }
    // `tar -f host:file` runs a remote shell (rsh) to reach the archive.
    if program_name == "tar" && rest.iter().any(|w| w.contains(':')) {
        return false;
    }
    if program_name == "git" && git_runs_programs(rest) {
        return false;
    }
    // `tar cUf x.tar dir`: the old style, a first word of letters without a dash.
    if program_name == "tar"
        && rest.first().is_some_and(|w| {
            w.bytes().all(|c| c.is_ascii_alphabetic()) && w.contains(|c: char| letters.contains(c))
        })
    {
        return false;
    }
    rest.iter().all(|w| {
        if !is_plain_word(w) {
            return false;
        }
        if w.starts_with("--") {
            let name = w.split_once('=').map_or(*w, |(n, _)| n);
            return !RISKY_LONG_OPTIONS.iter().any(|o| {
                let family = name
                    .strip_prefix(o)
                    .is_some_and(|tail| tail.is_empty() || tail.starts_with('-'));
                family || (name.len() >= 3 && o.starts_with(name))
            });
        }
        if RISKY_FIND_ACTIONS.contains(w) {
            return false;
        }
        match w.strip_prefix('-') {
            Some(bundle) => !bundle.contains(|c: char| letters.contains(c)),
            None => true,
        }
    })
}

#[cfg(test)]
#[path = "prefix_tests.rs"]
mod tests;
