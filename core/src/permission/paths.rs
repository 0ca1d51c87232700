//! Whether a path stays inside the workspace, and whether it names a secret.
//!
//! Purely lexical: `.` and `..` are resolved on the text, relative paths are taken from
//! the workspace root, `/` and `\` both separate components and `C:` starts an absolute
//! Windows path. Symlinks are the shell's business (it canonicalises before opening).
//! The home directory (`~`, `~user`, `$HOME`, `${HOME}`, `%USERPROFILE%`) is always
//! outside: the core does not know where it is, and the Evolve Agent design puts "paths outside scope"
//! at L5. `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/stdin` and `/dev/tty` are
//! harmless anywhere. The endless devices — `/dev/zero`, `/dev/urandom`, `/dev/random`
//! — are not outside, but not harmless either: a program that reads one to its end
//! (`tail /dev/zero`, `sort /dev/urandom`) grows until the machine runs out of memory,
//! so they are [`PathProblem::EndlessDevice`] in every spelling (`/dev/./zero`,
//! `//dev//zero`, `/dev/../dev/zero`, `file:///dev/zero`, `/dev/%7aero`).
//!
//! `file://` URLs are percent-decoded before the checks (`file:///w/%2e%2e/etc` climbs
//! out); a `file://host/…` URL names another machine and is outside; `file:/etc/passwd`
//! (one slash) is `/etc/passwd`, `file:notes/a.md` is relative. A path with `%`
//! escapes is checked both as written and decoded (a server may decode it), the worse
//! result counting. `C:foo` (relative to the current directory of drive C) is outside:
//! nobody knows where that is. Besides the workspace, a tool may have extra roots (an
//! MCP server's configured directories): a path inside one of them is not outside.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

/// What is wrong with a path, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathProblem {
    /// Absolute outside the root, or `..` climbing above it.
    Outside,
    /// Starts at the home directory.
    Home,
    /// A device that never ends: read to its end, it fills the memory.
    EndlessDevice,
}

/// Devices that neither leak nor destroy anything.
const HARMLESS_DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
];

/// Devices whose reads never end (`/dev/full` reads as zeros too, but is outside:
/// only writing it is allowed).
pub(crate) const ENDLESS_DEVICES: [&str; 3] = ["/dev/zero", "/dev/urandom", "/dev/random"];

/// Does this look like a path? Used when the caller did not say which arguments are
/// paths: starts with `/`, `\`, `~`, `./`, `../`, `$HOME`, `${HOME}`, is `.`/`..`/`~`,
/// or contains a `/` or `\`. URLs (`scheme://…`) are not paths, except `file://`.
pub(crate) fn looks_like_path(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    // Decoded first: `..%2f..%2fetc%2fpasswd` is a path once a server decodes it.
    if s.contains('%') {
        let decoded = percent_decode(s);
        if decoded != s && looks_like_path_raw(&decoded) {
            return true;
        }
    }
    looks_like_path_raw(s)
}

fn looks_like_path_raw(s: &str) -> bool {
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
        // `C:` alone is no path worth guessing (`curl -H 'X: y'`); `C:\x` is.
        || (has_drive_prefix(s) && s.len() > 2)
}

/// The text after `file://`, or after `file:` for the one-slash and relative forms
/// (`file:/etc/passwd`, `file:../x`).
fn strip_file_url(s: &str) -> Option<&str> {
    let head = s.get(..5)?;
    if !head.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = s.get(5..)?;
    Some(rest.strip_prefix("//").unwrap_or(rest))
}

/// Whether the URL has an authority part (`file://host/…`, `file:///…`).
fn has_authority(s: &str) -> bool {
    s.get(5..).is_some_and(|r| r.starts_with("//"))
}

/// Whether `s` is a `file://` URL.
pub(crate) fn is_file_url(s: &str) -> bool {
    strip_file_url(s.trim()).is_some()
}

/// `%XX` escapes decoded (invalid ones kept as written; invalid UTF-8 becomes U+FFFD).
fn percent_decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = |j: usize| b.get(j).and_then(|h| (*h as char).to_digit(16));
        match (c, hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The path a `file://` URL names, decoded; a host other than `localhost` becomes a
/// `//host/…` path (outside). `None` when `s` is not a `file://` URL.
fn file_url_path(s: &str) -> Option<String> {
    let s = s.trim();
    let rest = strip_file_url(s)?;
    if !has_authority(s) {
        // `file:/etc/passwd` is `/etc/passwd`; `file:notes/a.md` relative.
        return Some(percent_decode(rest).into_owned());
    }
    let rest = match rest.get(..10) {
        Some(head) if head.eq_ignore_ascii_case("localhost/") => rest.get(9..).unwrap_or(""),
        _ => rest,
    };
    let decoded = percent_decode(rest);
    if decoded.starts_with('/') {
        Some(decoded.into_owned())
    } else {
        Some(alloc::format!("//{decoded}"))
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
        || (lower_prefix("${home")
            && !s
                .get(6..)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')))
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

/// `C:foo`: relative to drive C's current directory, which nobody here knows.
fn is_drive_relative(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && !matches!(b[2], b'/' | b'\\')
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

/// Checks one path against the workspace root and the tool's extra roots (see the
/// module docs). An empty root means "unknown": every absolute path is then outside
/// (unless inside an extra root).
pub(crate) fn path_problem(
    path: &str,
    workspace_root: &str,
    extra_roots: &[&str],
) -> Option<PathProblem> {
    if let Some(decoded) = file_url_path(path) {
        return lexical_problem(&decoded, workspace_root, extra_roots);
    }
    let raw = lexical_problem(path, workspace_root, extra_roots);
    let decoded = percent_decode(path);
    if raw.is_some() || decoded == path {
        return raw;
    }
    lexical_problem(&decoded, workspace_root, extra_roots)
}

fn lexical_problem(path: &str, workspace_root: &str, extra_roots: &[&str]) -> Option<PathProblem> {
    let trimmed = path.trim();
    if starts_with_home(trimmed) {
        return Some(PathProblem::Home);
    }
    if is_drive_relative(trimmed) {
        return Some(PathProblem::Outside);
    }
    if is_absolute(trimmed) {
        let comps = absolute_components(trimmed);
        if is_harmless_device(&comps) {
            return None;
        }
        if is_endless_device(&comps) {
            return Some(PathProblem::EndlessDevice);
        }
        let inside = |root: &str| {
            let root = root.trim();
            if root.is_empty() || !is_absolute(root) {
                return false;
            }
            let root_comps = absolute_components(root);
            comps.len() >= root_comps.len()
                && root_comps
                    .iter()
                    .zip(comps.iter())
                    .all(|(r, p)| same_component(r, p))
        };
        return if inside(workspace_root) || extra_roots.iter().any(|r| inside(r)) {
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

/// Whether an absolute path climbs with `..` (`/items/../../etc`): checked even where a
/// leading `/` alone does not make a string a path.
pub(crate) fn climbs(path: &str) -> bool {
    let decoded = percent_decode(path);
    [path, decoded.as_ref()]
        .iter()
        .any(|p| p.split(['/', '\\']).any(|c| c.trim() == ".."))
}

fn is_endless_device(comps: &[&str]) -> bool {
    match comps {
        ["dev", name] => ENDLESS_DEVICES
            .iter()
            .any(|d| d.strip_prefix("/dev/") == Some(*name)),
        _ => false,
    }
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

/// Does this path (or word) name a file that holds secrets? A component with a glob
/// counts when it could expand to one of these names. Case-insensitive, on the
/// components: `.ssh`, `.gnupg`, private keys `id_rsa`/`id_ed25519`/`id_ecdsa`/`id_dsa`
/// (not `*.pub`), `.env` and `.env.*` (not `.env.example`/`.sample`/`.template`/`.dist`),
/// `.netrc`/`_netrc`, `.git-credentials`, `.pgpass`, `.npmrc`, `.pypirc`,
/// `.aws/credentials`, `.docker/config.json`, `.kube/config`, `etc/shadow`,
/// `etc/gshadow`, `etc/sudoers`, `etc/master.passwd`, `gh/hosts.yml` (GitHub CLI),
/// `.envrc`, `.env_*`, `credentials.json`, and names ending in `.pem`, `.key`, `.p12`,
/// `.pfx`, `.tfstate` (`server.key`; not the word `key`).
pub fn names_secret(path: &str) -> bool {
    if let Some(decoded) = file_url_path(path) {
        return names_secret_lexical(&decoded);
    }
    names_secret_lexical(path) || names_secret_lexical(&percent_decode(path))
}

fn names_secret_lexical(path: &str) -> bool {
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
        ("gh", "hosts.yml"),
    ];
    if comps.windows(2).any(|w| {
        pairs
            .iter()
            .any(|(a, b)| component_is(w[0], a) && component_is(w[1], b))
    }) {
        return true;
    }
    comps.iter().any(|c| is_secret_component(c))
}

/// Secret names a glob component is tried against: `.e?v`, `.ss?` and `id_*` name
/// secrets once the shell expands them.
const SECRET_EXAMPLES: [&str; 22] = [
    ".envrc",
    ".env_prod",
    "credentials.json",
    "server.pem",
    "server.key",
    "cert.p12",
    "terraform.tfstate",
    ".ssh",
    ".gnupg",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    ".env",
    ".env.local",
    ".env.production",
];

/// A component with a glob (`*`, `?`, `[…]`) and at least one other character: a bare
/// `*` stays unflagged (`cat *`), the shell skipping dot files for it.
fn is_glob(c: &str) -> bool {
    c.contains(['*', '?', '[']) && c.chars().any(|ch| !matches!(ch, '*' | '?'))
}

fn component_is(c: &str, name: &str) -> bool {
    if is_glob(c) {
        glob_match(c, name)
    } else {
        c == name
    }
}

/// Shell-style matching of `pattern` (`*`, `?`, `[abc]`, `[a-z]`, `[!x]`) against all
/// of `text`. An unclosed `[` is a plain character.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&tc) = t.get(ti) {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match bracket_match(&p, pi, tc) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                None => (tc == '[').then_some(1),
            },
            Some(&c) => (c == tc).then_some(1),
            None => None,
        };
        match (step, star) {
            (Some(len), _) => {
                pi += len;
                ti += 1;
            }
            (None, Some((sp, st))) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            (None, None) => return false,
        }
    }
    p.get(pi..).unwrap_or(&[]).iter().all(|c| *c == '*')
}

/// Whether the bracket class starting at `p[open]` matches `c`, and its length; `None`
/// when it is not closed.
fn bracket_match(p: &[char], open: usize, c: char) -> Option<(bool, usize)> {
    let mut i = open + 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((matched != negate, i + 1 - open));
        }
        first = false;
        match (p.get(i + 1), p.get(i + 2)) {
            (Some('-'), Some(&hi)) if hi != ']' => {
                matched |= lo <= c && c <= hi;
                i += 3;
            }
            _ => {
                matched |= lo == c;
                i += 1;
            }
        }
    }
}

fn is_secret_component(c: &str) -> bool {
    if is_glob(c) {
        return SECRET_EXAMPLES.iter().any(|name| glob_match(c, name));
    }
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
    if c == ".env" || c == ".envrc" || c == "credentials.json" {
        return true;
    }
    if let Some(suffix) = c.strip_prefix(".env.").or_else(|| c.strip_prefix(".env_")) {
        return !matches!(suffix, "example" | "sample" | "template" | "dist");
    }
    // Key and state files by their ending (`server.key`, `x.pem`, `terraform.tfstate`);
    // the word `key` alone is not one.
    [
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".tfstate",
        ".tfstate.backup",
    ]
    .iter()
    .any(|ext| c.len() > ext.len() && c.ends_with(ext))
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
