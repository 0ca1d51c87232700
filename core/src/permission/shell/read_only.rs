//! Commands that only read: the programs and git subcommands a prefix may give a level
//! below L3, and those that delete files or run other commands.

use super::lex::program;
use super::wrappers::{INTERPRETERS, SHELLS, WRAPPERS};

/// Programs that only read (or print) and cannot run other code, write files or send
/// data with the options a prefix lets through: a prefix may give these a level below
/// L3. Everything else — `cargo build`, `sed`, `sort`, `tar`, `make`, `find`, `curl` … —
/// may run code, write or send with some argument we cannot foresee, so the lowest
/// honest level a prefix gives them is L3: ask once.
pub(crate) const READ_ONLY_PROGRAMS: &[&str] = &[
    "ls",
    "pwd",
    "cat",
    "head",
    "tail",
    "wc",
    "du",
    "df",
    "date",
    "whoami",
    "uname",
    "echo",
    "printf",
    "grep",
    "rg",
    "stat",
    "file",
    "which",
    "id",
    "hostname",
    "uptime",
    "free",
    "ps",
    "tree",
    "basename",
    "dirname",
    "realpath",
    "md5sum",
    "sha256sum",
    "sha1sum",
];

/// Git subcommands that only read the repository, when they directly follow `git`.
pub(crate) const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "ls-files",
    "rev-parse",
    "describe",
    "shortlog",
];

/// Git options that write a file, run a program or change the repository or config a
/// read-only subcommand uses (long ones by unambiguous prefix of ≥ 3 letters).
const GIT_RISKY_LONG: [&str; 5] = [
    "--output",
    "--ext-diff",
    "--textconv",
    "--open-files-in-pager",
    "--exec",
];

/// Programs whose job is to delete or destroy files: a prefix gives them L4 at the
/// lowest (deleting is irreversible; the Evolve Agent design's L3 is "side effects, but reversible").
pub(crate) const DELETING_PROGRAMS: [&str; 7] =
    ["rm", "rmdir", "unlink", "shred", "truncate", "srm", "wipe"];

/// Whether `program` is one of [`DELETING_PROGRAMS`].
pub(crate) fn deletes_files(program: &str) -> bool {
    DELETING_PROGRAMS.contains(&program)
}

/// Whether a program runs another command, a shell or a script (a wrapper, a shell or an
/// interpreter): a prefix on it would cover whatever follows, so
/// [`PermissionConfig::validate`] rejects it at any level.
pub(crate) fn runs_other_commands(program: &str) -> bool {
    [WRAPPERS, SHELLS, INTERPRETERS]
        .iter()
        .any(|list| list.contains(&program))
}

/// Whether `word` is `--name`, `--name=value` or any abbreviation of `--name` (one
/// letter after `--` is enough: GNU getopt takes every unambiguous prefix — `date --se`
/// is `--set` — and reading a shorter one as the risky option only costs a question).
fn long_opt_abbrev(word: &str, full: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    name.len() >= 3 && name.starts_with("--") && full.starts_with(name)
}

/// Whether `date`'s words only print: a positional word is `+FORMAT` (or the value of
/// `-d`, `-r`, `-f`, `-I`); any other sets the clock (`date 010100002030`).
fn date_only_prints(rest: &[&str]) -> bool {
    let mut i = 0;
    while i < rest.len() {
        let w = rest[i];
        i += 1;
        if matches!(w, "-d" | "-r" | "-f" | "--date" | "--reference" | "--file") {
            i += 1;
        } else if !w.starts_with('-') && !w.starts_with('+') {
            return false;
        }
    }
    true
}

/// The options of `hostname` that only print (net-tools and GNU inetutils): anything
/// else — a name, `-F FILE`, `--file`, `-b`/`--boot` — sets the host name.
const HOSTNAME_PRINT_LONG: [&str; 11] = [
    "--short",
    "--fqdn",
    "--long",
    "--domain",
    "--ip-address",
    "--ip-addresses",
    "--all-ip-addresses",
    "--all-fqdns",
    "--alias",
    "--nis",
    "--yp",
];

/// Whether every word after `hostname` only asks it to print.
fn hostname_only_prints(rest: &[&str]) -> bool {
    rest.iter().all(|w| match w.strip_prefix("--") {
        Some(_) => {
            *w == "--help"
                || *w == "--version"
                || *w == "--verbose"
                || HOSTNAME_PRINT_LONG.contains(w)
        }
        None => w
            .strip_prefix('-')
            .is_some_and(|b| !b.is_empty() && b.chars().all(|c| "sfdiIAayvhV".contains(c))),
    })
}

/// Whether a command (its words, the program first) only reads: a read-only program
/// without its few writing options, or `git` directly followed by a read-only
/// subcommand and none of [`GIT_RISKY_LONG`], `-O`, `-c`, `-C`.
pub(crate) fn is_read_only_command(words: &[&str]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    let name = program(first);
    let rest = words.get(1..).unwrap_or(&[]);
    let short_has = |letters: &str| {
        rest.iter().any(|w| {
            w.strip_prefix('-')
                .is_some_and(|b| !b.starts_with('-') && b.contains(|c: char| letters.contains(c)))
        })
    };
    if name == "git" {
        let Some(sub) = rest.first() else {
            return false;
        };
        if !GIT_READ_ONLY.contains(sub) {
            return false;
        }
        let risky_long = rest
            .iter()
            .any(|w| GIT_RISKY_LONG.iter().any(|o| long_opt_abbrev(w, o)));
        return !risky_long && !short_has("OcC");
    }
    if !READ_ONLY_PROGRAMS.contains(&name.as_str()) {
        return false;
    }
    // The few writing or running options of the read-only programs: `tree -o FILE`,
    // `date -s`, `file -C` (compiles a magic file), `rg --pre CMD`, `hostname NAME`.
    match name.as_str() {
        "tree" => !short_has("o"),
        "date" => {
            !short_has("s")
                && !rest.iter().any(|w| long_opt_abbrev(w, "--set"))
                && date_only_prints(rest)
        }
        "file" => !short_has("C") && !rest.iter().any(|w| long_opt_abbrev(w, "--compile")),
        "rg" => !rest
            .iter()
            .any(|w| long_opt_abbrev(w, "--pre") || long_opt_abbrev(w, "--pre-glob")),
        "hostname" => hostname_only_prints(rest),
        _ => true,
    }
}
