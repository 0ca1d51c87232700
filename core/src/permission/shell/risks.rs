//! The risky patterns of a command line (see the table in the parent module): what each
//! simple command, the commands nested in it and the line as a whole do.

use alloc::string::String;
use alloc::vec::Vec;

use super::braces::brace_readings;
use super::lex::{
    git_subcommand, has_long_flag, has_short_flag, is_unknown_word, long_opt, program,
    simple_commands,
};
use super::nested::{nested_commands, MAX_NESTED_COMMANDS, MAX_NESTING, MAX_WRAPPER_WORDS};
use super::wrappers::{resolve, split_env_string, ESCALATORS, INTERPRETERS, SHELLS};
use super::CommandRisk;

/// Top-level directories whose loss breaks the system.
const SYSTEM_DIRS: [&str; 16] = [
    "bin", "boot", "dev", "etc", "home", "lib", "lib64", "opt", "proc", "root", "sbin", "srv",
    "sys", "usr", "var", "users",
];

fn is_broad_target(arg: &str) -> bool {
    let arg = arg.to_lowercase();
    let arg = arg.as_str();
    let t = arg.trim_end_matches('/');
    let t = t.strip_suffix("/*").unwrap_or(t);
    if matches!(
        arg,
        "/" | "/*"
            | "~"
            | "~/"
            | "~/*"
            | "*"
            | "."
            | ".."
            | "./"
            | "./*"
            | "../"
            | "$home"
            | "${home}"
    ) || t.is_empty()
        || t == "~"
        || t == "$home"
    {
        return true;
    }
    match t.strip_prefix('/') {
        Some(dir) => SYSTEM_DIRS.contains(&dir.trim_end_matches('/')),
        None => false,
    }
}

fn is_safe_device(target: &str) -> bool {
    matches!(
        target,
        "/dev/null"
            | "/dev/zero"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/stdin"
            | "/dev/tty"
            | "/dev/random"
            | "/dev/urandom"
    ) || target.starts_with("/dev/fd/")
}

fn is_device_write_target(target: &str) -> bool {
    target.starts_with("/dev/") && !is_safe_device(target)
}

fn push(risks: &mut Vec<CommandRisk>, risk: CommandRisk) {
    if !risks.contains(&risk) {
        risks.push(risk);
    }
}

/// Every risky pattern in `cmd`, in order of first appearance, each once. A line with
/// brace groups is read both as written and expanded as bash would (`{rm,-rf,.}`).
pub fn command_risks(cmd: &str) -> Vec<CommandRisk> {
    let mut risks = Vec::new();
    if has_fork_bomb(cmd) {
        push(&mut risks, CommandRisk::ForkBomb);
    }
    let mut seen = Seen {
        downloads: false,
        downloaded: Vec::new(),
        runs_text: false,
        nested_left: MAX_NESTED_COMMANDS,
    };
    let mut simples = simple_commands(cmd);
    let (expanded, too_many) = brace_readings(cmd);
    if too_many {
        push(&mut risks, CommandRisk::UnknownCommand);
    }
    for e in &expanded {
        simples.extend(simple_commands(e));
    }
    for simple in simples {
        let words = split_env_string(&simple.words);
        analyse(
            &words,
            &simple.redirects,
            simple.piped,
            &mut risks,
            &mut seen,
            0,
        );
    }
    if seen.downloads && seen.runs_text {
        push(&mut risks, CommandRisk::DownloadAndRun);
    }
    risks
}

/// How many downloaded file names one line remembers.
const MAX_DOWNLOADED: usize = 64;

/// The file names a `curl`/`wget` call writes: the value of `-o`/`--output` (curl),
/// `-O`/`--output-document` (wget), in bundles too (`-sSLo f`), and the last path
/// segment of every URL (`curl -O URL`, `wget URL`). Compared by program name.
fn downloaded_names(name: &str, args: &[String]) -> Vec<String> {
    let letter = if name == "curl" { 'o' } else { 'O' };
    let long = if name == "curl" {
        "--output"
    } else {
        "--output-document"
    };
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let next = args.get(i + 1);
        if a.contains("://") {
            let path = a.split(['?', '#']).next().unwrap_or(a);
            if let Some(last) = path.rsplit('/').next().filter(|l| !l.is_empty()) {
                out.push(program(last));
            }
        } else if long_opt(a, long, 5) {
            match a.split_once('=') {
                Some((_, v)) => out.push(program(v)),
                None => out.extend(next.map(|n| program(n))),
            }
        } else if let Some(bundle) = a.strip_prefix('-').filter(|b| !b.starts_with('-')) {
            if let Some(at) = bundle.find(letter) {
                let rest = bundle.get(at + 1..).unwrap_or("");
                if rest.is_empty() {
                    out.extend(next.map(|n| program(n)));
                } else {
                    out.push(program(rest));
                }
            }
        }
    }
    out
}

/// What the simple commands of one line did, for the patterns spanning several.
struct Seen {
    /// `curl` or `wget` ran.
    downloads: bool,
    /// The files they wrote (see [`downloaded_names`]).
    downloaded: Vec<String>,
    /// A shell ran text (`sh -c`, `bash <(…)`).
    runs_text: bool,
    /// How many more nested commands may be read (see [`MAX_NESTED_COMMANDS`]).
    nested_left: usize,
}

/// The risks of one simple command (and of the commands nested in its arguments).
fn analyse(
    words: &[String],
    redirects: &[String],
    piped: bool,
    risks: &mut Vec<CommandRisk>,
    seen: &mut Seen,
    depth: usize,
) {
    if words
        .iter()
        .any(|w| long_opt(&w.to_ascii_lowercase(), "--no-preserve-root", 7))
    {
        push(risks, CommandRisk::NoPreserveRoot);
    }
    if redirects.iter().any(|t| is_device_write_target(t)) {
        push(risks, CommandRisk::DeviceWrite);
    }
    let (wrappers, at) = resolve(words);
    if wrappers.iter().any(|w| ESCALATORS.contains(&w.as_str())) {
        push(risks, CommandRisk::Sudo);
    }
    let shell_wrapper = wrappers.iter().any(|w| SHELLS.contains(&w.as_str()));
    let raw_word = at.and_then(|i| words.get(i));
    if raw_word.is_some_and(|w| is_unknown_word(w)) {
        push(risks, CommandRisk::UnknownCommand);
    }
    let cmd_word = raw_word.map(|w| program(w));
    let cmd_word = cmd_word.as_deref();
    let args: &[String] = at.and_then(|i| words.get(i + 1..)).unwrap_or(&[]);
    let interpreter = shell_wrapper || cmd_word.is_some_and(|c| INTERPRETERS.contains(&c));
    if piped && interpreter {
        push(risks, CommandRisk::PipeToShell);
    }
    if shell_wrapper && (cmd_word.is_none() || words.iter().any(|w| w == "-c")) {
        seen.runs_text = true;
    }
    let Some(name) = cmd_word else { return };
    if ESCALATORS.contains(&name) {
        push(risks, CommandRisk::Sudo);
    }
    if SHELLS.contains(&name) && args.is_empty() {
        seen.runs_text = true;
    }
    // A downloaded file run on the same line: `curl … -o i.sh && bash i.sh`,
    // `wget -O x; sh x`, `./i.sh`, `python3 x.py`.
    if !seen.downloaded.is_empty() {
        let runs_file = seen.downloaded.iter().any(|d| d == name)
            || (INTERPRETERS.contains(&name)
                && args
                    .iter()
                    .find(|a| !a.starts_with('-'))
                    .is_some_and(|a| seen.downloaded.contains(&program(a))));
        if runs_file {
            push(risks, CommandRisk::DownloadAndRun);
        }
    }
    // `… | xargs rm`, `parallel rm ::: …`: deletes whatever list comes in.
    if matches!(name, "rm" | "unlink" | "shred")
        && wrappers.iter().any(|w| w == "xargs" || w == "parallel")
    {
        push(risks, CommandRisk::MassDelete);
    }
    if name == "rm" {
        // rm's long options: only `--recursive` starts with `r`, only
        // `--no-preserve-root` with `n`. An argument holding `$` (`$A`, `${X:--rf}`,
        // `"$@"`, `$'-rf'`) may expand to `-rf`: counted as recursive.
        if has_short_flag(args, 'r')
            || has_short_flag(args, 'R')
            || has_long_flag(args, "--recursive", 3)
            || args.iter().any(|a| a.contains('$'))
        {
            push(risks, CommandRisk::RecursiveDelete);
        }
        if has_long_flag(args, "--no-preserve-root", 3) {
            push(risks, CommandRisk::NoPreserveRoot);
        }
        if args.iter().any(|a| is_broad_target(a)) {
            push(risks, CommandRisk::MassDelete);
        }
    }
    if name == "curl" || name == "wget" {
        seen.downloads = true;
        for d in downloaded_names(name, args) {
            if seen.downloaded.len() < MAX_DOWNLOADED {
                seen.downloaded.push(d);
            }
        }
    }
    if let Some(risk) = program_risk(name, args) {
        push(risks, risk);
    }
    if depth < MAX_NESTING {
        for nested in nested_commands(name, args, seen.nested_left) {
            if seen.nested_left == 0 {
                push(risks, CommandRisk::UnknownCommand);
                break;
            }
            seen.nested_left -= 1;
            analyse(&nested, &[], false, risks, seen, depth + 1);
        }
    }
}

/// The risk of one program (other than `rm`'s, handled by the caller) given its
/// arguments.
fn program_risk(name: &str, args: &[String]) -> Option<CommandRisk> {
    let first_is = |word: &str| args.first().is_some_and(|a| a == word);
    let risk = match name {
        "wipefs" | "fdisk" | "sfdisk" | "parted" | "mkswap" => CommandRisk::FormatDisk,
        n if n.starts_with("mkfs") => CommandRisk::FormatDisk,
        "shred" => CommandRisk::Shred,
        "dd" if args
            .iter()
            .any(|a| a.strip_prefix("of=").is_some_and(is_device_write_target)) =>
        {
            CommandRisk::DeviceWrite
        }
        "shutdown" | "reboot" | "halt" | "poweroff" | "telinit" => CommandRisk::PowerOff,
        "init" if args.iter().any(|a| a == "0" || a == "6") => CommandRisk::PowerOff,
        "systemctl"
            if args.iter().any(|a| {
                matches!(
                    a.to_lowercase().as_str(),
                    "poweroff" | "reboot" | "halt" | "kexec"
                )
            }) =>
        {
            CommandRisk::PowerOff
        }
        // `-R`: for chmod, `-r` means "remove read permission".
        "chmod" | "chown" | "chgrp" => {
            // `--rec`: `--re` is shared with `--reference`.
            let recursive = has_short_flag(args, 'R') || has_long_flag(args, "--recursive", 5);
            // An argument holding `$` may expand to `-R /`.
            let expands = args.iter().any(|a| a.contains('$'));
            let hit = expands
                || args.iter().filter(|a| !a.starts_with('-')).any(|t| {
                    let root = t.trim_end_matches('/').is_empty() || t == "/*";
                    root || (recursive && is_broad_target(t))
                });
            if !hit {
                return None;
            }
            CommandRisk::RecursivePermissionChange
        }
        "find"
            if args.iter().any(|a| a == "-delete")
                || args
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
                    .take(MAX_NESTED_COMMANDS)
                    .any(|(i, a)| {
                        // Wrappers first: `-exec command rm`, `-exec nice rm`.
                        let rest = args.get(i + 1..).unwrap_or(&[]);
                        let rest = rest.get(..MAX_WRAPPER_WORDS).unwrap_or(rest);
                        matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                            && resolve(rest)
                                .1
                                .and_then(|at| rest.get(at))
                                .is_some_and(|w| {
                                    matches!(program(w).as_str(), "rm" | "shred" | "unlink")
                                })
                    }) =>
        {
            CommandRisk::FindDelete
        }
        "curl" | "wget" if sends_data(args) => CommandRisk::SendsData,
        "git" => match git_subcommand(args) {
            Some(("push", _)) => CommandRisk::GitPush,
            Some(("reset", rest)) if has_long_flag(rest, "--hard", 3) => {
                CommandRisk::DiscardChanges
            }
            Some(("clean", rest))
                if has_short_flag(rest, 'f') || has_long_flag(rest, "--force", 3) =>
            {
                CommandRisk::DiscardChanges
            }
            Some((sub, rest)) if git_discards(sub, rest) => CommandRisk::DiscardChanges,
            _ => return None,
        },
        "npm" | "pnpm" | "yarn" | "cargo" if first_is("publish") => CommandRisk::Publish,
        "docker" | "podman" if first_is("push") => CommandRisk::Publish,
        "twine" if first_is("upload") => CommandRisk::Publish,
        "ssh" | "scp" | "sftp" | "mail" | "sendmail" | "mailx" => CommandRisk::Remote,
        // `rsync … host:path` / `rsync://`: copies to or from another machine.
        "rsync"
            if args.iter().filter(|a| !a.starts_with('-')).any(|a| {
                a.starts_with("rsync://")
                    || a.split_once(':')
                        .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
            }) =>
        {
            CommandRisk::Remote
        }
        _ => return None,
    };
    Some(risk)
}

/// Git subcommands that throw away uncommitted work or history: `checkout -f`,
/// `checkout -- paths` / `checkout .`, `switch -f`, `restore` (unless only `--staged`),
/// `rm -r`/`-f` (unless `--cached`), `stash drop`/`clear`, `branch -D`/`-d -f`.
fn git_discards(sub: &str, rest: &[String]) -> bool {
    let force = has_short_flag(rest, 'f') || has_long_flag(rest, "--force", 3);
    match sub {
        "checkout" => force || rest.iter().any(|a| a == "--" || a == "."),
        "switch" => force || has_long_flag(rest, "--discard-changes", 3),
        "restore" => {
            let staged = has_short_flag(rest, 'S') || has_long_flag(rest, "--staged", 4);
            let worktree = has_short_flag(rest, 'W') || has_long_flag(rest, "--worktree", 3);
            !staged || worktree
        }
        "rm" => {
            !has_long_flag(rest, "--cached", 3)
                && (force || has_short_flag(rest, 'r') || has_long_flag(rest, "--recursive", 3))
        }
        "stash" => rest.first().is_some_and(|a| a == "drop" || a == "clear"),
        "branch" => {
            has_short_flag(rest, 'D')
                || ((has_short_flag(rest, 'd') || has_long_flag(rest, "--delete", 4)) && force)
        }
        // The plumbing that overwrites the work tree or drops history.
        "checkout-index" => force || has_short_flag(rest, 'a') || has_long_flag(rest, "--all", 3),
        "read-tree" => {
            has_short_flag(rest, 'u')
                || has_long_flag(rest, "--reset", 3)
                || has_long_flag(rest, "--update", 3)
        }
        "update-ref" => has_short_flag(rest, 'd') || has_long_flag(rest, "--delete", 3),
        "reflog" => rest.first().is_some_and(|a| a == "expire" || a == "delete"),
        "gc" => has_long_flag(rest, "--prune", 3),
        "prune" | "prune-packed" => true,
        "worktree" => rest.first().is_some_and(|a| a == "remove" || a == "prune"),
        _ => false,
    }
}

/// Does a `curl`/`wget` call upload or use a method with side effects? Options are
/// case-sensitive (`-F` is a form, `-f` is "fail quietly"). Short options are read in
/// bundles (`-sd @f`, `-sT f`, `-sXPOST`) up to the first that takes a value; long ones
/// by unambiguous prefix (`--data-b`). `-K`/`--config` reads options from a file, which
/// may send anything.
fn sends_data(args: &[String]) -> bool {
    const SENDING_LONG: [(&str, usize); 15] = [
        ("--data", 4),
        ("--data-ascii", 4),
        ("--data-binary", 4),
        ("--data-raw", 4),
        ("--data-urlencode", 4),
        ("--form", 4),
        ("--form-string", 4),
        ("--upload-file", 4),
        ("--json", 4),
        ("--config", 5),
        ("--post-data", 5),
        ("--post-file", 5),
        ("--body-data", 4),
        ("--body-file", 4),
        ("--multipart", 4),
    ];
    /// curl's short options that take a value: the rest of the bundle is that value.
    const VALUE_LETTERS: &str = "AbcCDeEHmoPQrtuUwxYyz";
    let writes = |m: &str| {
        matches!(
            m.to_ascii_uppercase().as_str(),
            "POST" | "PUT" | "PATCH" | "DELETE"
        )
    };
    for (i, a) in args.iter().enumerate() {
        let next = args.get(i + 1).map(String::as_str).unwrap_or("");
        if a.starts_with("--") {
            if SENDING_LONG
                .iter()
                .any(|(full, min)| long_opt(a, full, *min))
            {
                return true;
            }
            if long_opt(a, "--request", 5) || long_opt(a, "--method", 5) {
                let value = a.split_once('=').map_or(next, |(_, v)| v);
                if writes(value) {
                    return true;
                }
            }
            continue;
        }
        let Some(bundle) = a.strip_prefix('-') else {
            continue;
        };
        for (at, letter) in bundle.char_indices() {
            match letter {
                'd' | 'F' | 'T' | 'K' => return true,
                'X' => {
                    let rest = bundle.get(at + 1..).unwrap_or("");
                    if writes(if rest.is_empty() { next } else { rest }) {
                        return true;
                    }
                    break;
                }
                l if VALUE_LETTERS.contains(l) => break,
                _ => {}
            }
        }
    }
    false
}

/// `name(){ name|name& };name` with any name and any spacing. Quotes and backslashes
/// are dropped first (`':'(){ … }`), and the name may be any tail of the text before
/// `(){` (`nice -n 5 :(){ … }` has name `:`). Linear: only the last 64 bytes of the name
/// and the first 256 bytes of the body are looked at.
fn has_fork_bomb(cmd: &str) -> bool {
    const NAME: usize = 64;
    const WINDOW: usize = 256;
    let compact: Vec<u8> = cmd
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && !matches!(c, b'\'' | b'"' | b'\\'))
        .collect();
    let mut from = 0;
    while let Some(at) = compact
        .get(from..)
        .and_then(|r| r.windows(3).position(|w| w == b"(){"))
    {
        let open = from + at;
        let head = compact.get(open.saturating_sub(NAME)..open).unwrap_or(&[]);
        let name_start = head
            .iter()
            .rposition(|c| matches!(c, b';' | b'&' | b'|' | b'(' | b')' | b'{' | b'}'))
            .map_or(0, |i| i + 1);
        let name = head.get(name_start..).unwrap_or(&[]);
        let body = compact.get(open + 3..).unwrap_or(&[]);
        let window = body.get(..WINDOW.min(body.len())).unwrap_or(&[]);
        for (p, _) in window.iter().enumerate().filter(|(_, c)| **c == b'|') {
            let after = body.get(p + 1..).unwrap_or(&[]);
            // The callee runs up to `&`; any other separator first means no call here.
            let end = after
                .iter()
                .take(NAME + 1)
                .position(|c| matches!(c, b';' | b'&' | b'|' | b'(' | b')' | b'{' | b'}'));
            let Some(amp) = end.filter(|i| after.get(*i) == Some(&b'&')) else {
                continue;
            };
            let callee = after.get(..amp).unwrap_or(&[]);
            let before = body.get(..p).unwrap_or(&[]);
            if !callee.is_empty() && name.ends_with(callee) && before.ends_with(callee) {
                return true;
            }
        }
        from = open + 3;
    }
    false
}
