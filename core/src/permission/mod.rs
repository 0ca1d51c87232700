//! Permission: levels L0–L5 and the decision for one tool call.
//!
//! ARCHITECTURE.md § Permission levels. For each call the shell asks,
//! in this order:
//!
//! 1. [`classify`] — the tool's class: a built-in's fixed level ([`builtin_level`];
//!    for `shell`, [`shell_command_level`]), else the user's override, else the cached
//!    classifier level never below the floor the MCP annotations set ([`mcp_floor`]:
//!    L3 without `readOnlyHint: true`, L4 with `destructiveHint: true`, L2 read-only).
//! 2. [`escalate`] — the arguments: dangerous commands, paths leaving the workspace,
//!    secrets. The call's level is [`call_level`] = max(class, escalation).
//! 3. [`decide`] — run, run scoped, ask once, ask twice or refuse, from the level, the
//!    session's [`Grants`] and the [`Policy`] (interactive or headless; grants never
//!    raise what a headless run may do).
//! 4. For asked calls, a [`PendingCall`] parked on the session, settled by the user's
//!    next reply ([`parse_answer`], [`PendingCall::answer`]).
//! 5. An [`AuditEntry`] for the log.
//!
//! [`check_call`] does 2 and 3 in one step and keeps what the audit needs.
//!
//! Design limits (lexical rules cannot see them): a recursive read inside the workspace
//! reads the secret files it finds without naming them — `grep -rn KEY .` prints the
//! lines of a `.env` in the workspace at the `grep` prefix's level. Keep secrets out of
//! the workspace (or out of reach of the shell's sandbox); only named secret files
//! (`cat .env`) are refused. Likewise a prefix-covered read-only command cannot tell a
//! pager or config from the repository (`git log` runs `core.pager` from `.git/config`).
//!
//! Left to others: running tools, canonicalising paths and following symlinks (the
//! shell's scoped file tools), the cheap-model classification and its cache, storing
//! grants, pending calls and the audit log, and asking the user.

mod audit;
mod check;
mod classify;
mod confine;
mod decide;
mod egress;
mod escalate;
mod level;
mod limits;
mod paths;
mod pending;
mod revoke;
mod scan;
mod secret;
mod shell;

pub use audit::AuditEntry;
pub use check::{check_call, check_defined_call, CallCheck};
pub use classify::{
    builtin_level, classify, mcp_floor, Annotations, ClassSource, ClassifyInput, ToolClass,
    DESTRUCTIVE_FLOOR, READ_ONLY_FLOOR, SIDE_EFFECT_FLOOR, UNCLASSIFIED_LEVEL,
};
pub use confine::{
    confined_shell_level, prefixes_need_kernel, Kernel, Reach, SYSTEM_READ_FILES, SYSTEM_ROOTS,
    SYSTEM_SECRETS, WRITABLE_DEVICES,
};
pub use decide::{
    decide, CallKey, Decision, Grant, Grants, Policy, RefusalReason, HEADLESS_CEILING,
};
pub use egress::{check_egress, host_allowed, Egress, Sends};
pub use escalate::{
    call_level, escalate, Escalation, EscalationContext, EscalationReason, REASON_PATH_CHARS,
};
pub use level::{Level, ParseLevelError};
pub use limits::{
    default_memory, Child, ChildLimits, Limits, LimitsError, MEMORY_CEILING, MEMORY_FLOOR,
};
pub use paths::names_secret;
pub use pending::{parse_answer, Answer, AnswerOutcome, Confirmations, Lang, PendingCall};
pub use revoke::Revoke;
pub use scan::{arg_strings, duplicate_key, string_arg, ArgString, StringKind};
pub use secret::{find_secret, redact, SecretKind, REDACTED, REDACT_MIN_FRAGMENT};
pub use shell::{command_risks, shell_command_level, CommandRisk};

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Constants of the permission rules (`[permission]` in `config.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionConfig {
    /// The level of the `shell` tool: L5 (the Evolve Agent design lists "arbitrary shell" under L5).
    /// The user may lower it to L4; anything lower still counts as L4.
    pub shell_level: Level,
    /// Command prefixes with their own level, e.g. `[["git status", "L2"]]`: a shell
    /// command starting with the prefix (whole words) gets that level instead of
    /// `shell_level`, unless it chains commands, a word after the prefix is not plain
    /// (quotes, `$`, braces, globs, `!`, backslashes) or is an option that runs, writes
    /// or sends (`git -c`, `find -exec`, `sort -o`, `curl -d` …), or it matches a
    /// dangerous pattern (see [`shell_command_level`]). A level below L3 holds only for
    /// read-only commands (`ls`, `cat`, `grep`, `git status`/`log`/`diff` … — see
    /// [`shell_command_level`]); any other matched command gets at least L3, because we
    /// cannot tell that `cargo build`, `sed`, `sort`, `tar`, `make` … only read, so the
    /// lowest honest level is L3: ask once. Wrappers, shells and interpreters (`xargs`,
    /// `env`, `sudo`, `bash`, `python` …) are rejected by [`PermissionConfig::validate`].
    /// Empty by default: the user opts in.
    pub command_prefixes: Vec<(String, Level)>,
    /// The highest level a headless run (`evolve ask`, scheduled tasks) starts by itself
    /// when no `--allow` is given: L2 (read-only tools).
    /// At most L3.
    pub headless_max_auto: Level,
}

impl Default for PermissionConfig {
    fn default() -> Self {
        PermissionConfig {
            shell_level: Level::L5,
            command_prefixes: Vec::new(),
            headless_max_auto: Level::L2,
        }
    }
}

impl PermissionConfig {
    /// Checks what serde cannot: the shell tool is not below L4, headless runs are not
    /// above L3, every prefix is a plain command (non-empty, no `;`, `|`, `&`,
    /// `` ` ``, `$(`, `<`, `>`, line break), no prefix starts with a wrapper, shell or
    /// interpreter (`xargs`, `env`, `sudo`, `bash`, `python` … — at any level), and a
    /// prefix below L3 is a read-only command (`ls`, `cat`, `grep`, `git`,
    /// `git status` …; `sed`, `make`, `cargo build` get L3 at least anyway). The rules clamp these anyway; this is for
    /// `evolve config check`, so the user learns their setting has no effect.
    pub fn validate(&self) -> Result<(), PermissionError> {
        if self.shell_level < Level::L4 {
            return Err(PermissionError::ShellBelowL4 {
                level: self.shell_level,
            });
        }
        if self.headless_max_auto > HEADLESS_CEILING {
            return Err(PermissionError::HeadlessAboveL3 {
                level: self.headless_max_auto,
            });
        }
        for (prefix, level) in &self.command_prefixes {
            if prefix.trim().is_empty() || shell::chains_commands(prefix) {
                return Err(PermissionError::BadPrefix {
                    prefix: prefix.clone(),
                });
            }
            let words: Vec<&str> = prefix.split_whitespace().collect();
            let first = words.first().map(|w| shell::program(w)).unwrap_or_default();
            if shell::runs_other_commands(first.as_str()) {
                return Err(PermissionError::PrefixRunsCommands {
                    prefix: prefix.clone(),
                });
            }
            if *level < Level::L4 && shell::deletes_files(first.as_str()) {
                return Err(PermissionError::PrefixDeletes {
                    prefix: prefix.clone(),
                    level: *level,
                });
            }
            // `git` alone is fine: its read-only subcommands get the level, the rest L3+.
            let bare_git = words.len() == 1 && first == "git";
            if *level < Level::L3 && !bare_git && !shell::is_read_only_command(&words) {
                return Err(PermissionError::PrefixNotReadOnly {
                    prefix: prefix.clone(),
                    level: *level,
                });
            }
        }
        Ok(())
    }
}

/// What can go wrong with a permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionError {
    /// "Always allow" was asked for an L4 or L5 tool.
    GrantNotAllowed {
        /// The tool.
        tool: String,
        /// Its level.
        level: Level,
    },
    /// An L5 call was to be parked for an answer; L5 is refused, never asked.
    NeverAsked {
        /// The call's level.
        level: Level,
    },
    /// `shell_level` below L4 in the config.
    ShellBelowL4 {
        /// The configured level.
        level: Level,
    },
    /// `headless_max_auto` above L3 in the config.
    HeadlessAboveL3 {
        /// The configured level.
        level: Level,
    },
    /// A command prefix that is empty or chains commands.
    BadPrefix {
        /// The prefix as configured.
        prefix: String,
    },
    /// A prefix below L3 on a program that may run code, write or send (`sed`, `make`).
    PrefixNotReadOnly {
        /// The prefix as configured.
        prefix: String,
        /// Its configured level.
        level: Level,
    },
    /// A prefix on a wrapper, shell or interpreter (`xargs`, `env`, `sudo`, `bash`,
    /// `python` …): it would cover any command after it.
    PrefixRunsCommands {
        /// The prefix as configured.
        prefix: String,
    },
    /// A prefix below L4 on a program that deletes (`rm`, `rmdir`, `shred` …): deleting
    /// is irreversible, and L3 is for reversible side effects.
    PrefixDeletes {
        /// The prefix as configured.
        prefix: String,
        /// Its configured level.
        level: Level,
    },
}

impl fmt::Display for PermissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PermissionError::GrantNotAllowed { tool, level } => write!(
                f,
                "cannot always allow `{tool}`: it is {level}, and {level} calls need a \
                 confirmation every time (only L3 and lower can be granted)"
            ),
            PermissionError::NeverAsked { level } => write!(
                f,
                "a {level} call is refused, never asked; lower the tool's level with \
                 `evolve mcp level` if it is not dangerous"
            ),
            PermissionError::ShellBelowL4 { level } => write!(
                f,
                "permission.shell_level = {level} has no effect: the shell tool is never \
                 below L4; give safe commands their own level in permission.command_prefixes"
            ),
            PermissionError::HeadlessAboveL3 { level } => write!(
                f,
                "permission.headless_max_auto = {level} has no effect: headless runs never \
                 start L4 or L5 calls by themselves; use L3 at most"
            ),
            PermissionError::BadPrefix { prefix } => write!(
                f,
                "permission.command_prefixes entry {prefix:?} can never match: a prefix must \
                 be a plain command without ; | & ` $( < > or line breaks"
            ),
            PermissionError::PrefixNotReadOnly { prefix, level } => write!(
                f,
                "permission.command_prefixes entry {prefix:?} = {level} has no effect below \
                 L3: we cannot tell that this program only reads, so the lowest level it \
                 gets is L3 (ask once); only read-only programs (ls, cat, grep, git status \
                 …) go lower"
            ),
            PermissionError::PrefixDeletes { prefix, level } => write!(
                f,
                "permission.command_prefixes entry {prefix:?} = {level} has no effect below \
                 L4: it deletes files, which cannot be undone, so it is asked twice (L4) at \
                 the lowest"
            ),
            PermissionError::PrefixRunsCommands { prefix } => write!(
                f,
                "permission.command_prefixes entry {prefix:?} runs other commands (a \
                 wrapper, shell or interpreter): a prefix on it would cover anything; \
                 give the commands it runs their own prefixes instead"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for PermissionError {}

#[cfg(test)]
mod tests;

/// Commands built to slip past the shell rules (prefixes that cover too much, expansions,
/// wrappers, paths that leave the workspace), checked through the whole pipeline as the
/// shell runs it: workspace `/home/u/ws`, `shell_level = L4`, one prefix at L2.
#[cfg(test)]
mod pipeline_attacks;

#[cfg(test)]
mod proptests;
