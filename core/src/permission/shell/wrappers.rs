//! Wrappers (`sudo`, `env`, `timeout`, `sh -c` …): the words that run the command after
//! them, the options that take a value, and how the command word behind them is found.

use alloc::string::String;
use alloc::vec::Vec;

use super::lex::program;

/// Words that run the command after them.
pub(super) const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "su",
    "pkexec",
    "env",
    "nohup",
    "exec",
    "command",
    "builtin",
    "time",
    "nice",
    "ionice",
    "timeout",
    "xargs",
    "stdbuf",
    "busybox",
    "eval",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "watch",
    "csh",
    "tcsh",
    "mksh",
    "ash",
    "setsid",
    "unshare",
    "strace",
    "ltrace",
    "flock",
    "taskset",
    "chrt",
    "systemd-run",
    "parallel",
    "script",
    "chroot",
    "nsenter",
    "firejail",
    "proxychains",
    "proxychains4",
    "torsocks",
    "valgrind",
];
/// Shells: run text given to them.
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "mksh", "ash", "eval", "source",
    "script",
];
/// Interpreters that run what is piped into them.
pub(super) const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "mksh", "ash", "python", "python3",
    "perl", "ruby", "node", "php", "source", ".",
];
/// Wrappers that take positional words before the command: `flock FILE cmd`,
/// `taskset MASK cmd`, `chrt PRIORITY cmd` (one word each, unless `-p`).
fn wrapper_positionals(wrapper: &str) -> usize {
    match wrapper {
        "flock" | "taskset" | "chrt" | "chroot" => 1,
        _ => 0,
    }
}
pub(super) const ESCALATORS: [&str; 4] = ["sudo", "doas", "su", "pkexec"];

/// The options of a wrapper that take the next word as their value (`timeout -s KILL`).
/// Options not listed take none; a value attached (`-sKILL`, `--signal=KILL`) is part of
/// the option word anyway. `env -S`/`sh -c` are not listed: their "value" is the command.
fn wrapper_value_options(wrapper: &str) -> &'static [&'static str] {
    match wrapper {
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "stdbuf" => &["-i", "-o", "-e", "--input", "--output", "--error"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &[
            "-c",
            "-n",
            "-p",
            "-P",
            "-u",
            "--class",
            "--classdata",
            "--pid",
            "--pgid",
            "--uid",
        ],
        "xargs" => &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-L",
            "-s",
            "-E",
            "-a",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--max-lines",
            "--max-chars",
            "--eof",
            "--arg-file",
            "--process-slot-var",
        ],
        "sudo" => &[
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
        ],
        "doas" => &["-u", "-C"],
        "su" => &["-s", "--shell", "-g", "--group", "-G", "--supp-group"],
        "pkexec" => &["--user"],
        "exec" => &["-a"],
        "time" => &["-f", "--format", "-o", "--output"],
        "watch" => &["-n", "--interval"],
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" => {
            &["-o", "-O", "+o", "+O", "--rcfile", "--init-file"]
        }
        "strace" | "ltrace" => &["-o", "-e", "-p", "-s", "-u", "-E", "-a", "-P", "-I", "-b"],
        "flock" => &["-w", "--timeout", "-E", "--conflict-exit-code"],
        "systemd-run" => &[
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--description",
            "--slice",
            "--working-directory",
        ],
        "nsenter" => &["-t", "--target", "-S", "--setuid", "-G", "--setgid"],
        "parallel" => &[
            "-j",
            "--jobs",
            "-S",
            "--sshlogin",
            "-a",
            "--arg-file",
            "--delay",
        ],
        "unshare" => &[
            "-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd",
        ],
        _ => &[],
    }
}

/// Skipped after a wrapper: options, assignments and numbers (`timeout 10`, `nice -n 5`).
fn is_wrapper_arg(word: &str) -> bool {
    word.starts_with('-')
        || is_assignment(word)
        || (word.starts_with(|c: char| c.is_ascii_digit())
            && word
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 's' | 'm' | 'h' | 'd')))
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The wrappers of a simple command and the index of its command word.
pub(super) fn resolve(words: &[String]) -> (Vec<String>, Option<usize>) {
    let mut wrappers = Vec::new();
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if is_assignment(w) {
            i += 1;
            continue;
        }
        let name = program(w);
        if WRAPPERS.contains(&name.as_str()) {
            let takes_value = wrapper_value_options(&name);
            let mut positionals = wrapper_positionals(&name);
            wrappers.push(name);
            i += 1;
            while let Some(next) = words.get(i) {
                if positionals > 0 && !next.starts_with('-') {
                    positionals -= 1;
                    i += 1;
                    continue;
                }
                if !is_wrapper_arg(next) {
                    break;
                }
                if next == "-p" || next == "--pid" {
                    positionals = 0;
                }
                i += 1;
                if next == "--" {
                    break;
                }
                if takes_value.contains(&next.as_str()) {
                    i += 1;
                }
            }
            continue;
        }
        return (wrappers, Some(i));
    }
    (wrappers, None)
}

/// `env -Scmd` / `env --split-string=cmd`: the command is attached to the option; split
/// it off so the command word is seen.
pub(super) fn split_env_string(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut after_env = false;
    for w in words {
        if after_env {
            let attached = w
                .strip_prefix("--split-string=")
                .or_else(|| w.strip_prefix("-S").filter(|r| !r.is_empty()));
            if let Some(cmd) = attached {
                out.push(String::from("-S"));
                out.push(String::from(cmd));
                continue;
            }
        }
        if program(w) == "env" {
            after_env = true;
        }
        out.push(w.clone());
    }
    out
}
