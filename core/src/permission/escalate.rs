//! Escalation from the arguments: a harmless tool asked to do something harmful.
//!
//! The level of a call is `max(tool class, escalation)` ([`call_level`]), so an
//! escalation can only make a call stricter. What is looked at, per kind of tool
//! (`EscalationContext`):
//!
//! | check | shell (`is_shell`) | tool with `path_keys` (built-in file tools) | other tools (`path_keys` empty: MCP, `http_get`, …) |
//! |---|---|---|---|
//! | command patterns ([`command_risks`](super::command_risks)) | every value string | — | every string, keys too |
//! | paths leaving the workspace (L5) | every path-looking word of every value, and the values inside option words | values of the path keys | values of path-like keys and `file://` URLs; elsewhere only `~`/`$HOME` and `..` climbing |
//! | endless devices (`/dev/zero`, `/dev/urandom`, `/dev/random`, any spelling; L3) | every path-looking word of every value, and the values inside option words | values of the path keys | values of path-like keys; elsewhere a whole value naming one |
//! | secret files (L5) | every word of every value, and the values inside option words | values of the path keys | every word of every string |
//! | credential-shaped text (L5) | every string | every string | every string |
//! | a NUL byte (L5) | every string | every string | every string |
//! | a key repeated in one object (L5) | yes | yes | yes |
//!
//! Path-like keys (case-insensitive): `path`, `paths`, `file`, `files`, `filename`,
//! `dir`, `directory`, `cwd`, `root`, `repo_path`, `source`, `destination`, `src`,
//! `dst`, `target`, and keys ending in `_path`, `_file`, `_dir`, `_directory`. Other
//! values starting with `/` are not paths (`{"endpoint": "/v1/models"}`,
//! `{"pointer": "/items/0/name"}`, `{"message": "/start"}`), unless they climb with
//! `..`. `extra_roots` are directories outside the workspace the tool may use (an MCP
//! server's configured roots): a path inside one of them is not outside.
//!
//! A key repeated in one object (`{"command": "git status", "command": "rm -rf ."}`) is
//! refused: the shell's JSON reader keeps the last value, a careless reader the first,
//! and the two must never disagree on what runs.
//!
//! In a shell command, the values hidden in option words are checked like words:
//! `@file` (curl's "read this file") is `file`, `--out=VALUE` is `VALUE`, and `-oVALUE`
//! gives the text from the first character that is not a letter or a digit
//! (`-o/etc/passwd` → `/etc/passwd`, `-sd@.env` → `.env`). Each simple command is read
//! on its own, and some words are not paths:
//! - the first non-option argument of `grep`/`egrep`/`fgrep`/`rg`/`awk` is a pattern or a
//!   program (`grep -rn "/api/v1" src/`) unless `-e`/`-f` gave it; `sed`'s script is
//!   not a path either, but the files its `w`/`r`/`W`/`R` commands and `s///w` flag
//!   name are (`sed -n w/etc/cron.d/job x` is outside);
//! - a bare `/` (word or one-character option value: `tr / -`, `cut -d/`, `awk -F/`)
//!   for `tr`, `cut`, `awk`, `grep`, `rg`, `sed` — `ls /` and `tar -C/` stay outside;
//! - on Unix (a workspace root starting with `/`) a word starting with one `\` is read
//!   with its backslashes removed, as the shell does (`'\bfoo\b'` is no path, `\/etc`
//!   is `/etc`); `\\server` stays outside; a bare `X:` is not a drive (`-H 'X: y'`).
//!
//! `$PWD` is the workspace root (`$PWD/../x` climbs out), `$OLDPWD` is outside, and `cd`
//! or `pushd` without an argument (home) or with `-` (the previous directory) leaves the
//! workspace for the rest of the line: L5 (`cd ~` already names the home directory).
//! `echo $HOME` stays L5: the home directory is outside even to print.
//!
//! Content is data: `write_file` may write a README that says `sudo rm -rf /`; only
//! tools that could execute text get the command scan. Credentials are refused
//! everywhere (the Evolve Agent design: 泄露密钥). A word is "path-looking" as in
//! `looks_like_path`: starts with `/`, `~`, `./`, `../`, `$HOME`, or contains `/`; URLs
//! are not paths (except `file://`). For the shell, `key=value` words are checked on
//! their value (`of=/dev/sda`, `--out=/etc/x`).

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::paths::{climbs, is_file_url, looks_like_path, names_secret, path_problem, PathProblem};
use super::scan::{scan, StringKind};
use super::secret::{find_secret, SecretKind};
use super::shell::{brace_readings, command_risks};
use super::{CommandRisk, Level};

/// Paths in reasons are cut to this many characters: enough to recognise, short enough
/// for a log line.
pub const REASON_PATH_CHARS: usize = 200;

/// What the escalation rules need to know about the tool being called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EscalationContext<'a> {
    /// The workspace directory, absolute. Empty = unknown: every absolute path is then
    /// outside.
    pub workspace_root: &'a str,
    /// Argument keys whose values are paths (built-in file tools say so). Empty = guess
    /// from the text, and scan every string for commands.
    pub path_keys: &'a [&'a str],
    /// The tool runs its arguments as a shell command.
    pub is_shell: bool,
    /// Absolute directories outside the workspace this tool may use (the shell passes an
    /// MCP server's configured roots). Empty for most tools.
    pub extra_roots: &'a [&'a str],
}

/// Why the arguments raised the level. Holds no secret: a credential is named by its
/// kind only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EscalationReason {
    /// A risky command pattern (L4 or L5, see [`CommandRisk::level`]).
    Command {
        /// Which one.
        risk: CommandRisk,
    },
    /// A path outside the workspace (absolute elsewhere, or `..` above the root).
    OutsideWorkspace {
        /// The path, cut to [`REASON_PATH_CHARS`].
        path: String,
    },
    /// A device that never ends (`/dev/zero`, `/dev/urandom`): a command reading it to
    /// its end fills the memory (L3: a person decides; the kernel's limits hold the
    /// command either way).
    EndlessInput {
        /// The path, cut to [`REASON_PATH_CHARS`].
        path: String,
    },
    /// A path in the home directory (`~`, `$HOME`).
    HomeDirectory {
        /// The path, cut to [`REASON_PATH_CHARS`].
        path: String,
    },
    /// A file that holds secrets (`.ssh`, `.env`, `/etc/shadow` …).
    SecretFile {
        /// The path, cut to [`REASON_PATH_CHARS`].
        path: String,
    },
    /// Text shaped like a credential.
    Credential {
        /// Which kind.
        secret: SecretKind,
    },
    /// A NUL byte, which truncates paths in the system calls underneath.
    NulByte,
    /// A key given twice in one object: readers disagree on which value counts.
    AmbiguousArguments {
        /// The key, cut to [`REASON_PATH_CHARS`].
        key: String,
    },
    /// After world text entered the turn, the call would send data off the machine
    /// that no one gave (see [`check_egress`](super::check_egress)): L3.
    SendsData {
        /// The first value no one gave, cut to [`REASON_PATH_CHARS`].
        leaves: String,
    },
}

/// A reason as a person reads it in a refusal ("a path outside the workspace:
/// /etc/passwd"), not as the type is spelled.
impl core::fmt::Display for EscalationReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EscalationReason::Command { risk } => {
                write!(
                    f,
                    "a risky command ({})",
                    words(&alloc::format!("{risk:?}"))
                )
            }
            EscalationReason::OutsideWorkspace { path } => {
                write!(f, "a path outside the workspace: {path}")
            }
            EscalationReason::EndlessInput { path } => {
                write!(f, "a device that never ends: {path}")
            }
            EscalationReason::HomeDirectory { path } => {
                write!(f, "a path in the home directory: {path}")
            }
            EscalationReason::SecretFile { path } => {
                write!(f, "a file that holds secrets: {path}")
            }
            EscalationReason::Credential { secret } => write!(
                f,
                "text shaped like a credential ({})",
                words(&alloc::format!("{secret:?}"))
            ),
            EscalationReason::NulByte => f.write_str("a NUL byte in the arguments"),
            EscalationReason::AmbiguousArguments { key } => {
                write!(f, "the key {key:?} given twice")
            }
            EscalationReason::SendsData { leaves } => {
                write!(f, "data no one gave would leave the machine: {leaves}")
            }
        }
    }
}

/// `ApiKey` → `api key`: a unit variant's name as words.
fn words(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

impl EscalationReason {
    /// The level this reason raises a call to.
    pub fn level(&self) -> Level {
        match self {
            EscalationReason::Command { risk } => risk.level(),
            EscalationReason::SendsData { .. } => Level::L3,
            EscalationReason::EndlessInput { .. } => Level::L3,
            _ => Level::L5,
        }
    }
}

/// The result of looking at the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    /// The highest level any reason asks for; `L0` when there is no reason.
    pub level: Level,
    /// Every distinct reason found, in order of appearance.
    pub reasons: Vec<EscalationReason>,
}

impl Default for Escalation {
    /// Nothing found: L0, which raises no level.
    fn default() -> Self {
        Escalation {
            level: Level::L0,
            reasons: Vec::new(),
        }
    }
}

impl Escalation {
    fn add(&mut self, reason: EscalationReason) {
        self.level = self.level.max(reason.level());
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }
}

/// The level of a call: the tool's class raised by the escalation, never lowered.
pub fn call_level(class: Level, escalation: &Escalation) -> Level {
    class.max(escalation.level)
}

fn cut(path: &str) -> String {
    path.chars().take(REASON_PATH_CHARS).collect()
}

/// Looks at the raw argument text of one call (see the module docs for what is checked
/// where). Never panics; text that is not JSON is looked at as one string.
pub fn escalate(tool_args_json: &str, ctx: &EscalationContext<'_>) -> Escalation {
    let mut out = Escalation::default();
    let guess = ctx.path_keys.is_empty() && !ctx.is_shell;
    let (strings, duplicate) = scan(tool_args_json);
    if let Some(key) = duplicate {
        out.add(EscalationReason::AmbiguousArguments { key: cut(&key) });
    }
    for s in strings {
        let text = s.text.as_str();
        let is_value = s.kind != StringKind::Key;
        if text.contains('\0') {
            out.add(EscalationReason::NulByte);
        }
        if let Some(secret) = find_secret(text) {
            out.add(EscalationReason::Credential { secret });
        }
        if ctx.is_shell {
            if is_value {
                check_commands(text, &mut out);
                check_shell_words(text, ctx, &mut out);
                // `cat {/etc/passwd,}`: the words bash's brace expansion makes.
                for expanded in brace_readings(text).0 {
                    check_shell_words(&expanded, ctx, &mut out);
                }
            }
        } else if guess {
            // A `$` or glob in the first word of prose ("$5 each") is not a command
            // nobody can pin down, unless the value is meant to run.
            let runs =
                s.kind == StringKind::Whole || s.key.as_deref().is_some_and(is_command_like_key);
            for risk in command_risks(text) {
                if runs || risk != CommandRisk::UnknownCommand {
                    out.add(EscalationReason::Command { risk });
                }
            }
            for word in text.split(is_word_break) {
                check_secret_file(word, &mut out);
            }
            let whole = text.trim();
            let path_key = s.key.as_deref().is_some_and(is_path_like_key);
            if is_value && (path_key || is_file_url(whole)) {
                // Always, not only when the text looks like a path: a server may decode
                // `%2e%2e%2f…` or resolve a bare name against its own directory.
                check_path(whole, ctx, &mut out);
            } else if is_value && looks_like_path(whole) {
                check_loose_path(whole, ctx, &mut out);
            }
        } else if is_value
            && s.kind != StringKind::Joined
            && s.key.as_deref().is_some_and(|k| ctx.path_keys.contains(&k))
        {
            check_secret_file(text, &mut out);
            check_path(text, ctx, &mut out);
        }
    }
    out
}

/// Keys longer than this are neither command-like nor path-like (see the lists below).
const MAX_KEY_LEN: usize = 64;

/// Keys whose values a tool may run as a command: `command`, `cmd`, `commands`,
/// `script`, `shell`, `exec`, `run`, `argv`, `args`, `code`, and keys ending in
/// `_command`, `_cmd`, `_script` (case-insensitive).
fn is_command_like_key(key: &str) -> bool {
    const KEYS: [&str; 10] = [
        "command", "cmd", "commands", "script", "shell", "exec", "run", "argv", "args", "code",
    ];
    // No real key is this long; and lower-casing a hostile 1 MB key per value would be
    // quadratic.
    if key.len() > MAX_KEY_LEN {
        return false;
    }
    let key = key.trim().to_ascii_lowercase();
    KEYS.contains(&key.as_str())
        || ["_command", "_cmd", "_script"]
            .iter()
            .any(|s| key.ends_with(s))
}

/// Keys whose values are paths when a tool does not say (see the module docs).
fn is_path_like_key(key: &str) -> bool {
    const KEYS: [&str; 15] = [
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "dir",
        "directory",
        "cwd",
        "root",
        "repo_path",
        "source",
        "destination",
        "src",
        "dst",
        "target",
    ];
    const SUFFIXES: [&str; 4] = ["_path", "_file", "_dir", "_directory"];
    if key.len() > MAX_KEY_LEN {
        return false;
    }
    let key = key.trim().to_ascii_lowercase();
    KEYS.contains(&key.as_str()) || SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// Outside a path-like key: the home directory and `..` climbing only; a bare absolute
/// path (`/v1/models`) is not taken for a file.
fn check_loose_path(text: &str, ctx: &EscalationContext<'_>, out: &mut Escalation) {
    match path_problem(text, ctx.workspace_root, ctx.extra_roots) {
        Some(PathProblem::Home) => out.add(EscalationReason::HomeDirectory { path: cut(text) }),
        Some(PathProblem::Outside) if climbs(text) || !text.starts_with(['/', '\\']) => {
            out.add(EscalationReason::OutsideWorkspace { path: cut(text) })
        }
        Some(PathProblem::EndlessDevice) => {
            out.add(EscalationReason::EndlessInput { path: cut(text) })
        }
        _ => {}
    }
}

/// Programs whose arguments use a bare `/` as a delimiter or text (`tr / -`,
/// `cut -d/`, `awk -F/`): there `/` is not the root directory.
const SLASH_IS_TEXT: [&str; 10] = [
    "tr", "cut", "awk", "gawk", "mawk", "grep", "egrep", "fgrep", "rg", "sed",
];
/// Programs whose first non-option argument is a pattern or script, not a file.
const PATTERN_FIRST: [&str; 8] = ["grep", "egrep", "fgrep", "rg", "awk", "gawk", "mawk", "sed"];

/// Secret files and paths among the words of a shell command, one simple command at a
/// time (see the module docs for what is not a path: a grep/rg/awk/sed pattern, a bare
/// `/` for `tr`/`cut`/`awk`/`grep`/`sed`, a Unix word starting with one `\`).
fn check_shell_words(text: &str, ctx: &EscalationContext<'_>, out: &mut Escalation) {
    let unix = ctx.workspace_root.trim_start().starts_with('/');
    let segments = text.split([';', '|', '&', '(', ')', '`', '\n', '\r']);
    for segment in segments {
        // A `{ …; }` group's brace and shell keywords are not the program.
        let mut words = shell_words(segment).skip_while(|w| {
            matches!(
                *w,
                "{" | "}" | "!" | "then" | "do" | "else" | "if" | "while" | "until"
            )
        });
        let Some(first) = words.next() else { continue };
        check_shell_value(first, ctx, out, unix);
        let prog = first
            .rsplit('/')
            .next()
            .unwrap_or(first)
            .to_ascii_lowercase();
        let prog = prog.as_str();
        let rest: Vec<&str> = words.collect();
        // `cd`/`pushd` alone goes home, `cd -` to wherever the shell was before.
        if matches!(prog, "cd" | "pushd") {
            match rest.first() {
                None => out.add(EscalationReason::HomeDirectory {
                    path: String::from(prog),
                }),
                Some(&"-") => out.add(EscalationReason::OutsideWorkspace {
                    path: String::from("-"),
                }),
                _ => {}
            }
        }
        let slash_is_text = SLASH_IS_TEXT.contains(&prog);
        let sed = prog == "sed";
        // The pattern comes from an option (`grep -e P`, `sed -e S`, `awk -f F`): no
        // positional pattern then.
        let mut pattern_done = !PATTERN_FIRST.contains(&prog)
            || rest.iter().any(|w| {
                matches!(*w, "-e" | "-f" | "--file" | "--regexp" | "--expression")
                    || w.starts_with("--file=")
                    || w.starts_with("--regexp=")
                    || w.starts_with("--expression=")
            });
        let mut option_value_next = false;
        for w in rest {
            let option = w.len() > 1 && w.starts_with('-');
            if sed {
                if let Some(file) = sed_script_files(w) {
                    check_shell_value(file, ctx, out, unix);
                }
            }
            if !pattern_done && !option && !option_value_next {
                pattern_done = true;
                continue;
            }
            // grep's short options that take the next word (`-A 3`, `-m 1`).
            option_value_next = option
                && !w.starts_with("--")
                && w.ends_with(['A', 'B', 'C', 'm', 'd', 'D'])
                && PATTERN_FIRST.contains(&prog);
            for value in word_values(w) {
                if slash_is_text && value == "/" {
                    continue;
                }
                check_shell_value(value, ctx, out, unix);
            }
        }
    }
}

/// One word (or option value) of a shell command: a secret file name, or a path that
/// leaves the workspace. On Unix a word starting with one `\` is read as the shell reads
/// it, backslashes removed (`\bfoo\b` is `bfoob`, `\/etc` is `/etc`); `\\server` stays.
/// `$PWD` is the workspace root (`$PWD/../x` climbs out), `$OLDPWD` is outside.
fn check_shell_value(value: &str, ctx: &EscalationContext<'_>, out: &mut Escalation, unix: bool) {
    let unescaped: String;
    let value = if unix && value.starts_with('\\') && !value.starts_with("\\\\") {
        let mut text = String::new();
        let mut chars = value.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                text.extend(chars.next());
            } else {
                text.push(c);
            }
        }
        unescaped = text;
        unescaped.as_str()
    } else {
        value
    };
    if value.is_empty() {
        return;
    }
    check_secret_file(value, out);
    // A file named inside a word: git's `REV:path` (`git show HEAD:.env`) and
    // `--option=path` (`--env-file=.env`). URLs are not split.
    if !value.contains("://") {
        for sep in [':', '='] {
            if let Some((_, inner)) = value.split_once(sep) {
                check_secret_file(inner, out);
            }
        }
    }
    for var in ["$OLDPWD", "${OLDPWD}"] {
        if value.starts_with(var) {
            out.add(EscalationReason::OutsideWorkspace { path: cut(value) });
            return;
        }
    }
    for var in ["$PWD", "${PWD}"] {
        if let Some(rest) = value
            .strip_prefix(var)
            .filter(|r| r.is_empty() || r.starts_with('/'))
        {
            if !ctx.workspace_root.is_empty() {
                let path = alloc::format!("{}{rest}", ctx.workspace_root.trim_end_matches('/'));
                match path_problem(&path, ctx.workspace_root, ctx.extra_roots) {
                    Some(PathProblem::EndlessDevice) => {
                        out.add(EscalationReason::EndlessInput { path: cut(value) })
                    }
                    Some(_) => out.add(EscalationReason::OutsideWorkspace { path: cut(value) }),
                    None => {}
                }
                return;
            }
        }
    }
    if looks_like_path(value) {
        check_path(value, ctx, out);
    }
}

/// The files a sed script reads or writes: `w FILE`, `r FILE`, `W FILE`, `R FILE` after
/// an optional line address, and the `w FILE` flag of `s/a/b/w FILE`.
fn sed_script_files(script: &str) -> Option<&str> {
    let body = script.trim_start_matches(|c: char| {
        c.is_ascii_digit() || matches!(c, ',' | '$' | '!' | ' ' | '~' | '+')
    });
    let mut chars = body.char_indices();
    let (_, cmd) = chars.next()?;
    if matches!(cmd, 'w' | 'r' | 'W' | 'R') {
        return body.get(1..).map(str::trim).filter(|f| !f.is_empty());
    }
    if cmd != 's' {
        return None;
    }
    let (_, delim) = chars.next()?;
    if delim.is_alphanumeric() || delim == '\\' {
        return None;
    }
    let mut seen = 0;
    let mut escaped = false;
    for (i, c) in chars {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delim {
            seen += 1;
            if seen == 2 {
                let flags = body.get(i + c.len_utf8()..)?;
                let at = flags.find('w')?;
                return flags.get(at + 1..).map(str::trim).filter(|f| !f.is_empty());
            }
        }
    }
    None
}

fn check_commands(text: &str, out: &mut Escalation) {
    for risk in command_risks(text) {
        out.add(EscalationReason::Command { risk });
    }
}

fn check_secret_file(word: &str, out: &mut Escalation) {
    if !word.is_empty() && names_secret(word) {
        out.add(EscalationReason::SecretFile { path: cut(word) });
    }
}

fn check_path(path: &str, ctx: &EscalationContext<'_>, out: &mut Escalation) {
    match path_problem(path, ctx.workspace_root, ctx.extra_roots) {
        Some(PathProblem::Outside) => {
            out.add(EscalationReason::OutsideWorkspace { path: cut(path) })
        }
        Some(PathProblem::Home) => out.add(EscalationReason::HomeDirectory { path: cut(path) }),
        Some(PathProblem::EndlessDevice) => {
            out.add(EscalationReason::EndlessInput { path: cut(path) })
        }
        None => {}
    }
}

/// The texts one shell word may name a file by (see the module docs): the word, without
/// a leading `@`, and for an option word `-xVALUE` the text from its first character
/// that is not a letter or digit.
fn word_values(word: &str) -> impl Iterator<Item = &str> {
    let bare = word.strip_prefix('@').unwrap_or(word);
    let attached = word
        .strip_prefix('-')
        .filter(|rest| !rest.starts_with('-'))
        .and_then(|rest| {
            rest.find(|c: char| !c.is_ascii_alphanumeric())
                .and_then(|i| rest.get(i..))
        })
        .map(|v| v.strip_prefix('@').unwrap_or(v))
        .filter(|v| !v.is_empty());
    [Some(word), (bare != word).then_some(bare), attached]
        .into_iter()
        .flatten()
}

fn is_word_break(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '<' | '>' | '|' | '&' | '='
        )
}

/// The words of a shell command that could name files: split at blanks, quotes and
/// operators; `key=value` gives `value`.
fn shell_words(cmd: &str) -> impl Iterator<Item = &str> {
    cmd.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '`' | ';' | '(' | ')' | '<' | '>' | '|' | '&'
            )
    })
    .map(|w| match w.split_once('=') {
        Some((_, value)) => value,
        None => w,
    })
    .filter(|w| !w.is_empty())
}

#[cfg(test)]
#[path = "escalate_tests.rs"]
mod tests;
