//! Commands hidden in the arguments of another (`find -exec`, `git -c alias.x=…`,
//! `git bisect run` …), read as commands too, within bounds that keep the reading linear.

use alloc::string::String;
use alloc::vec::Vec;

use super::lex::{git_subcommand, long_opt};

/// Words after `find -exec` looked at for wrappers before the command (`nice -n 5 rm`).
pub(super) const MAX_WRAPPER_WORDS: usize = 32;
/// How deep commands nested in arguments (`find -exec`, `git -c`) are followed.
pub(super) const MAX_NESTING: usize = 8;
/// How many nested commands one command line may hold before it counts as
/// [`CommandRisk::UnknownCommand`]: keeps the reading linear on hostile input.
pub(super) const MAX_NESTED_COMMANDS: usize = 64;
/// Words of one nested command looked at: its command word and options come first.
const MAX_NESTED_WORDS: usize = 256;

/// Commands hidden in the arguments of `name`, at most `limit + 1` (one more tells the
/// caller there were too many): after `find … -exec`/`-execdir`/`-ok`/`-okdir` up to
/// `+` or `;`, and the value of each `git -c key=value` (a leading `!` dropped: a shell
/// alias) followed by the words after it — the quotes that ended the value are gone, so
/// the rest of the line may belong to it — and what `git bisect run`, `git submodule
/// foreach` and `git rebase -x` run.
pub(super) fn nested_commands(name: &str, args: &[String], limit: usize) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let take = |words: &[String]| -> Vec<String> {
        words.iter().take(MAX_NESTED_WORDS).cloned().collect()
    };
    match name {
        "find" => {
            for (i, a) in args.iter().enumerate() {
                if out.len() > limit {
                    break;
                }
                if matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let rest = args.get(i + 1..).unwrap_or(&[]);
                    let end = rest
                        .iter()
                        .position(|w| w == "+" || w == ";")
                        .unwrap_or(rest.len());
                    out.push(take(rest.get(..end).unwrap_or(&[])));
                }
            }
        }
        "git" => {
            // Anywhere, not only before the subcommand: a stray `-c` costs nothing to
            // read, and `git status -c …` is refused by git, not run.
            for (i, a) in args.iter().enumerate() {
                if out.len() > limit {
                    break;
                }
                let Some((_, value)) = args
                    .get(i + 1)
                    .filter(|_| a == "-c")
                    .and_then(|setting| setting.split_once('='))
                else {
                    continue;
                };
                let value = value.trim_start_matches('!');
                let mut words = Vec::new();
                if !value.is_empty() {
                    words.push(String::from(value));
                }
                words.extend(take(args.get(i + 2..).unwrap_or(&[])));
                out.push(words);
            }
            // `git bisect run CMD…`, `git submodule foreach CMD…`, `git rebase -x CMD`.
            if let Some((sub, rest)) = git_subcommand(args) {
                let runs = match (sub, rest.first().map(String::as_str)) {
                    ("bisect", Some("run")) | ("submodule", Some("foreach")) => rest.get(1..),
                    ("rebase", _) => rest
                        .iter()
                        .position(|a| a == "-x" || long_opt(a, "--exec", 4))
                        .and_then(|p| rest.get(p + 1..)),
                    _ => None,
                };
                if let Some(words) = runs.filter(|w| !w.is_empty()) {
                    out.push(take(words));
                }
            }
        }
        _ => {}
    }
    out
}
