//! Whether a path stays inside the workspace, and whether it names a secret.
//!
//! Purely lexical: `.` and `..` are resolved on the text, relative paths are taken from
//! the workspace root, `/` and `\` both separate components and `C:` starts an absolute
//! Windows path. Symlinks are the shell's business (it canonicalises before opening).
//! The home directory (`~`, `~user`, `$HOME`, `${HOME}`, `%USERPROFILE%`) is always
//! outside: the core does not know where it is, and the seed puts "paths outside scope"
//! at L5. `/dev/null`, `/dev/zero`, `/dev/stdout`, `/dev/stderr`, `/dev/stdin`,
//! `/dev/tty` and `/dev/urandom` (`/dev/random`) are harmless anywhere.

use alloc::vec::Vec;

/// What is wrong with a path, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathProblem {
    /// Absolute outside the root, or `..` climbing above it.
    Outside,
    /// Starts at the home directory.
    Home,
}

/// Devices that neither leak nor destroy anything.
const HARMLESS_DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

/// Does this look like a path? Used when the caller did not say which arguments are
/// paths: starts with `/`, `\`, `~`, `./`, `../`, `$HOME`, `${HOME}`, is `.`/`..`/`~`,
/// or contains a `/` or `\`. URLs (`scheme://…`) are not paths, except `file://`.
pub(crate) fn looks_like_path(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    if let Some(rest) = strip_file_url(s) {
        return !rest.is_empty();
    }
    if s.contains("://") {
        return false;
    }
    starts_with_home(s)
        || s.starts_with(['/', '\\', '~'])
        || s == "."
        || s == ".."
        || s.contains(['/', '\\'])
        || has_drive_prefix(s)
}

fn strip_file_url(s: &str) -> Option<&str> {
    let head = s.get(..7)?;
    if head.eq_ignore_ascii_case("file://") {
        s.get(7..)
    } else {
        None
    }
}

fn starts_with_home(s: &str) -> bool {
    let lower_prefix = |p: &str| {
        s.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
    };
    s.starts_with('~')
        || (lower_prefix("$home")
            && !s
                .get(5..)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')))
        || lower_prefix("${home}")
        || lower_prefix("%userprofile%")
        || lower_prefix("%homepath%")
}

fn has_drive_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && (b.len() == 2 || matches!(b[2], b'/' | b'\\'))
}

fn is_absolute(s: &str) -> bool {
    s.starts_with(['/', '\\']) || has_drive_prefix(s)
}

/// Components after lexical normalisation of an absolute path (the drive letter, if
/// any, lower-cased as the first component). `..` at the top stays at the top.
fn absolute_components(s: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let (drive, rest) = if has_drive_prefix(s) {
        (s.get(..2), s.get(2..).unwrap_or(""))
    } else {
        (None, s)
    };
    if let Some(d) = drive {
        out.push(d);
    }
    let floor = out.len();
    for part in rest.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                if out.len() > floor {
                    out.pop();
                }
            }
            p => out.push(p),
        }
    }
    out
}

fn same_component(a: &str, b: &str) -> bool {
    // Drive letters compare without case; everything else exactly.
    if a.len() == 2 && a.ends_with(':') {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// Checks one path against the workspace root. An empty root means "unknown": every
/// absolute path is then outside.
pub(crate) fn path_problem(path: &str, workspace_root: &str) -> Option<PathProblem> {
    let path = strip_file_url(path).unwrap_or(path);
    let trimmed = path.trim();
    if starts_with_home(trimmed) {
        return Some(PathProblem::Home);
    }
    if is_absolute(trimmed) {
        let comps = absolute_components(trimmed);
        if is_harmless_device(&comps) {
            return None;
        }
        let root = workspace_root.trim();
        if root.is_empty() || !is_absolute(root) {
            return Some(PathProblem::Outside);
        }
        let root_comps = absolute_components(root);
        let inside = comps.len() >= root_comps.len()
            && root_comps
                .iter()
                .zip(comps.iter())
                .all(|(r, p)| same_component(r, p));
        return if inside {
            None
        } else {
            Some(PathProblem::Outside)
        };
    }
    let mut depth: usize = 0;
    for part in trimmed.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                if depth == 0 {
                    return Some(PathProblem::Outside);
                }
                depth -= 1;
            }
            _ => depth += 1,
        }
    }
    None
}

fn is_harmless_device(comps: &[&str]) -> bool {
    match comps {
        ["dev", name] => HARMLESS_DEVICES
            .iter()
            .any(|d| d.strip_prefix("/dev/") == Some(*name)),
        ["dev", "fd", _] => true,
        _ => false,
    }
}

/// Does this path (or word) name a file that holds secrets? Case-insensitive, on the
/// components: `.ssh`, `.gnupg`, private keys `id_rsa`/`id_ed25519`/`id_ecdsa`/`id_dsa`
/// (not `*.pub`), `.env` and `.env.*` (not `.env.example`/`.sample`/`.template`/`.dist`),
/// `.netrc`/`_netrc`, `.git-credentials`, `.pgpass`, `.npmrc`, `.pypirc`,
/// `.aws/credentials`, `.docker/config.json`, `.kube/config`, `etc/shadow`,
/// `etc/gshadow`, `etc/sudoers`, `etc/master.passwd`.
pub(crate) fn names_secret(path: &str) -> bool {
    let path = strip_file_url(path).unwrap_or(path);
    let lower = path.trim().to_lowercase();
    let comps: Vec<&str> = lower
        .split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let pairs = [
        (".aws", "credentials"),
        (".docker", "config.json"),
        (".kube", "config"),
        ("etc", "shadow"),
        ("etc", "gshadow"),
        ("etc", "sudoers"),
        ("etc", "master.passwd"),
    ];
    if comps
        .windows(2)
        .any(|w| pairs.iter().any(|(a, b)| w[0] == *a && w[1] == *b))
    {
        return true;
    }
    comps.iter().any(|c| is_secret_component(c))
}

fn is_secret_component(c: &str) -> bool {
    const FILES: [&str; 8] = [
        ".ssh",
        ".gnupg",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".pgpass",
        ".npmrc",
        ".pypirc",
    ];
    if FILES.contains(&c) {
        return true;
    }
    let key_files = ["id_rsa", "id_ed25519", "id_ecdsa", "id_dsa"];
    if key_files.iter().any(|k| c.starts_with(k)) && !c.ends_with(".pub") {
        return true;
    }
    if c == ".env" {
        return true;
    }
    if let Some(suffix) = c.strip_prefix(".env.") {
        return !matches!(suffix, "example" | "sample" | "template" | "dist");
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/home/u/.evolve/workspace";

    #[test]
    fn workspace_paths_table() {
        let cases: &[(&str, Option<PathProblem>)] = &[
            ("notes/a.md", None),
            ("./notes/a.md", None),
            ("a/../b", None),
            ("sub/../x", None),
            (".", None),
            ("../etc/passwd", Some(PathProblem::Outside)),
            ("..", Some(PathProblem::Outside)),
            ("sub/../../x", Some(PathProblem::Outside)),
            ("a/b/../../../x", Some(PathProblem::Outside)),
            ("a\\..\\..\\x", Some(PathProblem::Outside)),
            ("/etc/passwd", Some(PathProblem::Outside)),
            ("/", Some(PathProblem::Outside)),
            ("/home/u/.evolve/workspace", None),
            ("/home/u/.evolve/workspace/notes/a.md", None),
            (
                "/home/u/.evolve/workspace/../secrets",
                Some(PathProblem::Outside),
            ),
            (
                "/home/u/.evolve/workspace-evil/x",
                Some(PathProblem::Outside),
            ),
            ("/home/u/.evolve/work", Some(PathProblem::Outside)),
            ("//home/u/.evolve/workspace/./x", None),
            ("C:\\Windows\\system32", Some(PathProblem::Outside)),
            ("~/x", Some(PathProblem::Home)),
            ("~", Some(PathProblem::Home)),
            ("~root/.bashrc", Some(PathProblem::Home)),
            ("$HOME/x", Some(PathProblem::Home)),
            ("${HOME}/x", Some(PathProblem::Home)),
            ("$HOMEWORK/x", None),
            ("file:///etc/passwd", Some(PathProblem::Outside)),
            ("/dev/null", None),
            ("/dev/sda", Some(PathProblem::Outside)),
            ("/dev/fd/1", None),
        ];
        for (path, want) in cases {
            assert_eq!(path_problem(path, ROOT), *want, "{path}");
        }
    }

    #[test]
    fn unknown_root_puts_every_absolute_path_outside() {
        assert_eq!(path_problem("/x", ""), Some(PathProblem::Outside));
        assert_eq!(path_problem("x", ""), None);
    }

    #[test]
    fn what_looks_like_a_path() {
        for yes in [
            "/x",
            "~/x",
            "./a",
            "../a",
            "a/b",
            "a\\b",
            "..",
            "file:///x",
            "$HOME",
        ] {
            assert!(looks_like_path(yes), "{yes}");
        }
        for no in ["", "hello", "https://example.com/a/b", "a.md", "2024"] {
            assert!(!looks_like_path(no), "{no}");
        }
    }

    #[test]
    fn secret_files_table() {
        for yes in [
            "~/.ssh/id_rsa",
            ".ssh/",
            "keys/id_ed25519",
            "ID_RSA",
            ".env",
            "app/.env.production",
            "/etc/shadow",
            "/home/u/.aws/credentials",
            ".netrc",
            ".git-credentials",
            "x/.gnupg/pubring.kbx",
            "/etc/sudoers",
        ] {
            assert!(names_secret(yes), "{yes}");
        }
        for no in [
            "notes/a.md",
            ".env.example",
            "environment.md",
            ".envrc.md",
            "id_rsa.pub",
            "/etc/passwd",
            "src/ssh.rs",
            "docs/aws/credentials-guide.md",
        ] {
            assert!(!names_secret(no), "{no}");
        }
    }
}
