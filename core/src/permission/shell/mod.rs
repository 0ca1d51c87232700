//! Shell commands: the dangerous patterns, and the level of one `shell` call.
//!
//! The `shell` tool is L5 by default (the Evolve Agent design lists "arbitrary shell" under L5). The
//! config may lower the tool to L4 — never further — and give command prefixes their own
//! level (`git status` → L2). Whatever the config says, a command matching a dangerous
//! pattern stays L5.
//!
//! How a command is read (lexically; only brace groups are expanded, see below): lower-cased, quotes and
//! backslashes dropped (so `bash -c "rm -rf /"` and `\rm` are seen through), cut into
//! simple commands at `;`, `&`, `|`, `(`, `)`, `{`, `}`, backticks and line breaks
//! (`$(…)` therefore too); the word after `<` or `>` is a redirection target. In each
//! simple command, leading `NAME=value` assignments and wrappers (`sudo`, `env`,
//! `nohup`, `exec`, `command`, `time`, `nice`, `timeout`, `xargs`, `parallel`, `setsid`,
//! `unshare`, `strace`, `ltrace`, `systemd-run`, `script`, `sh`/`bash`/`csh`/`tcsh`/
//! `mksh`/`ash`/… `-c`, `busybox`, `eval`, …) with their options are skipped to reach
//! the command word — including the values of the wrapper options that take one
//! (`timeout -s KILL`, `env -u FOO`, `stdbuf -o L`, `nice -n 5`, `sudo -u bob`,
//! `xargs -I X` …) and the one positional word of `flock FILE`, `taskset MASK`,
//! `chrt PRIO` — and `/usr/bin/rm` counts as `rm`. Prose that merely mentions a command ("how do I use rm -rf?") is not a
//! command at that position and is not flagged.
//!
//! A command word this reading cannot pin down — one holding `$` (`$x`, `rm$IFS-rf`,
//! `$'rm'`) or a glob (`/bin/r?`) — is [`CommandRisk::UnknownCommand`], L5: nobody can
//! tell what runs. Long options match by unambiguous prefix as GNU tools accept them
//! (`rm --recur` is `rm --recursive`, `git reset --har` is `--hard`). Commands hidden in
//! arguments are read as commands too: what follows `find … -exec`/`-execdir`/`-ok`/
//! `-okdir`, the value of `git -c key=value` with the words after it
//! (`git -c alias.x='!rm -rf .' x`, `git -c core.pager=… log`), and what `git bisect
//! run`, `git submodule foreach` and `git rebase -x` run.
//!
//! Brace groups are expanded as bash does before it runs a line (`{rm,-rf,.}` is
//! `rm -rf .`, `rm -{r,f} x` is `rm -r -f x`), on the line as written (quoted braces
//! are text: `awk -F, '{print $1, $2}'`) and once more with quotes dropped, for the
//! shell a `sh -c '{rm,-rf,.}'` starts; both readings are checked besides the line.
//!
//! The patterns, and why each is where it is:
//!
//! | pattern | level | why |
//! |---|---|---|
//! | `sudo`, `doas`, `su`, `pkexec` anywhere as a command or wrapper | L5 | bypasses permissions (绕过权限) |
//! | a command word with `$` or a glob | L5 | cannot tell what runs |
//! | `rm` with `-r`/`-R`/`--recursive` in any spelling (`-rf`, `-fr`, `-r -f`, `-Rf`), *whatever the target* — `rm -rf ./build` too | L5 | the Evolve Agent design's classic example (经典命令rm -rf); a recursive delete is a mass delete, and inside the workspace it is still irreversible |
//! | `rm` of `/`, `/*`, `~`, `*`, `.`, `..` or a top-level system directory | L5 | mass delete (删除大量文件) |
//! | `--no-preserve-root` anywhere | L5 | only exists to delete `/` |
//! | `mkfs*`, `wipefs`, `fdisk`, `sfdisk`, `parted`, `mkswap` | L5 | formats a disk |
//! | `shred` | L5 | destroys files beyond recovery |
//! | `dd … of=/dev/…`, a redirection to `/dev/…` (except `/dev/null` and friends) | L5 | overwrites a device |
//! | a fork bomb `name(){ name\|name& };name` | L5 | takes the machine down |
//! | anything piped into `sh`/`bash`/`zsh`/`dash`/`ksh`/`fish`/`python`/`perl`/`ruby`/`node`/`php`/`source` | L5 | runs text nobody reviewed (`curl … \| sh` and `base64 -d \| bash` alike) |
//! | `curl`/`wget` together with a shell run on text (`sh -c "$(curl …)"`, `bash <(wget …)`) | L5 | downloads and runs |
//! | `shutdown`, `reboot`, `halt`, `poweroff`, `init 0`/`init 6`, `systemctl poweroff/reboot/halt` | L5 | takes the machine down |
//! | `chmod`/`chown`/`chgrp` recursively on a broad path, or on `/` at all | L5 | breaks the system |
//! | `find … -delete`, `find … -exec rm` (also behind wrappers: `-exec nice rm`), whatever the path | L5 | mass delete, like `rm -r` |
//! | `rm` with an argument holding `$` (`rm $A x`, `rm "$@"`, `rm ${X:--rf} x`) | L5 | may expand to `-rf` |
//! | `… \| xargs rm`, `parallel rm ::: …` | L5 | deletes whatever list comes in |
//! | `curl … -o f && bash f`, `wget -O x; sh x`, `./f` — a downloaded file run on the same line | L5 | downloads and runs |
//! | `git push` | L4 | visible outside (推送代码) |
//! | `git reset --hard`, `git clean -f…`, `git checkout -f` / `-- paths` / `.`, `git restore` (not only `--staged`), `git rm -r`/`-f` (not `--cached`), `git stash drop`/`clear`, `git branch -D`, `git switch -f` | L4 | discards work irreversibly |
//! | `npm`/`pnpm`/`yarn`/`cargo publish`, `docker push`, `twine upload` | L4 | visible outside |
//! | `curl`/`wget` sending data (`-d`, `--data…`, `-F`, `--form`, `-T`, `--upload-file`, `-K`/`--config`, `-X POST/PUT/PATCH/DELETE`, `--post-data`, also inside bundles like `-sd`, `-sXPOST`) | L4 | submits a form / request (提交表单) |
//! | `ssh`, `scp`, `sftp`, `mail`, `sendmail`, `rsync host:…` | L4 | acts on another machine or sends mail |
//!
//! Near misses that stay unflagged: `ls -la`, `git rm --cached x`, `rm file.txt`,
//! `echo "rm -rf /"`, `chmod -R 755 ./build`, `cat /dev/null`.

mod braces;
mod lex;
mod nested;
mod prefix;
mod read_only;
mod risks;
mod wrappers;

use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::{Level, PermissionConfig};

pub(crate) use braces::brace_readings;
pub(crate) use lex::program;
pub(crate) use prefix::chains_commands;
pub(crate) use read_only::{deletes_files, is_read_only_command, runs_other_commands};
pub use risks::command_risks;

use prefix::{normalise_spaces, prefix_covers};
use read_only::READ_ONLY_PROGRAMS;

/// A risky shape found in a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandRisk {
    /// `sudo`, `doas`, `su`, `pkexec`.
    Sudo,
    /// A command word holding `$` or a glob: what runs is decided at run time.
    UnknownCommand,
    /// `rm -r` in any spelling.
    RecursiveDelete,
    /// `rm` of `/`, `~`, `*`, `.`, a system directory …
    MassDelete,
    /// `--no-preserve-root`.
    NoPreserveRoot,
    /// `mkfs`, `fdisk`, `wipefs` …
    FormatDisk,
    /// `shred`.
    Shred,
    /// `dd of=/dev/…` or `> /dev/sda`.
    DeviceWrite,
    /// `:(){ :|:& };:`.
    ForkBomb,
    /// `… | sh`.
    PipeToShell,
    /// `sh -c "$(curl …)"`.
    DownloadAndRun,
    /// `shutdown`, `reboot` …
    PowerOff,
    /// `chmod -R 777 /`, `chown -R … /`.
    RecursivePermissionChange,
    /// `find … -delete`.
    FindDelete,
    /// `git push`.
    GitPush,
    /// `git reset --hard`, `git clean -f`.
    DiscardChanges,
    /// `npm publish`, `docker push` …
    Publish,
    /// `curl -d …`, `curl -X POST`.
    SendsData,
    /// `ssh`, `scp`, `mail` …
    Remote,
}

impl CommandRisk {
    /// L5 for the dangerous patterns, L4 for the merely high-risk ones.
    pub fn level(self) -> Level {
        match self {
            CommandRisk::GitPush
            | CommandRisk::DiscardChanges
            | CommandRisk::Publish
            | CommandRisk::SendsData
            | CommandRisk::Remote => Level::L4,
            _ => Level::L5,
        }
    }
}

/// The level of one `shell` call for `cmd`:
/// 1. the tool's level: `config.shell_level`, but never below L4;
/// 2. if the command does not chain (no `;`, `&`, `|`, backtick, `$(`, `<`, `>`, line
///    break), the longest configured prefix that matches whole words (`git status`
///    matches `git  status -s` but not `git statusx`; case-sensitive) replaces it —
///    it may lower or raise — provided every word after the prefix is plain (see
///    `is_plain_word`: no quotes, `$`, braces, globs, `!`, backslashes) and none is an
///    option that runs, configures, writes or sends (`git -c`, `find -exec`/`-delete`,
///    `sort -o`, `curl -d`/`-T`/`-F`/`-X`/`-o`/`-K`, `--output`, `--exec…` …). Anything
///    else falls back to 1: the prefix is for the plain command the user had in mind.
///    A matched prefix gives a level below L3 only to a read-only command
///    (`ls`, `cat`, `grep`, `rg`, `wc` …, or `git` directly followed by a read-only subcommand
///    such as `status`, `log`, `diff` without `--output`, `--ext-diff`, `-c`, `-C` …);
///    any other command gets at least L3 — we cannot tell that `cargo build`, `sed`,
///    `sort`, `tar`, `make` … only read, so the lowest honest level is L3: ask once;
/// 3. the risky patterns of [`command_risks`] raise it (L4 or L5), whatever 1 and 2 said.
///    Paths and secret files in the words are the escalation's (it knows the workspace).
pub fn shell_command_level(cmd: &str, config: &PermissionConfig) -> Level {
    let tool_level = config.shell_level.max(Level::L4);
    let mut level = tool_level;
    if !chains_commands(cmd) {
        let norm = normalise_spaces(cmd);
        let mut best: Option<(usize, Level)> = None;
        for (prefix, prefix_level) in &config.command_prefixes {
            let p = normalise_spaces(prefix);
            if p.is_empty() {
                continue;
            }
            let rest = if norm == p {
                Some("")
            } else {
                norm.strip_prefix(p.as_str())
                    .and_then(|rest| rest.strip_prefix(' '))
            };
            let Some(rest) = rest else { continue };
            let first = p.split(' ').next().map(program).unwrap_or_default();
            // A prefix on a wrapper, shell or interpreter would cover whatever it runs:
            // `config check` rejects it, and the rule ignores it should it reach here.
            if runs_other_commands(&first) {
                continue;
            }
            let words: Vec<&str> = rest.split(' ').filter(|w| !w.is_empty()).collect();
            if prefix_covers(&first, &words) && best.is_none_or(|(len, _)| p.len() > len) {
                best = Some((p.len(), *prefix_level));
            }
        }
        if let Some((_, prefix_level)) = best {
            let all: Vec<&str> = norm.split(' ').collect();
            let name = all.first().map(|w| program(w)).unwrap_or_default();
            level = if is_read_only_command(&all) {
                prefix_level
            } else if READ_ONLY_PROGRAMS.contains(&name.as_str()) {
                // A read-only program with one of its few writing or setting options
                // (`date -s`, `hostname NAME`, `tree -o`): not what the prefix was for.
                tool_level
            } else if deletes_files(&name) {
                prefix_level.max(Level::L4)
            } else {
                prefix_level.max(Level::L3)
            };
        }
    }
    command_risks(cmd)
        .into_iter()
        .map(CommandRisk::level)
        .fold(level, Level::max)
}

#[cfg(test)]
mod tests;
