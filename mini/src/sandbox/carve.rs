//! Landlock only adds rights: a rule on `/etc` covers everything under it. To keep a
//! path out of a broader root (Evolve's home inside the workspace, `/etc/shadow` inside
//! `/etc`), the root is replaced by rules on each of its entries except the way to the
//! excluded path, down to it. This module turns grants and exclusions into those rules.
//!
//! An exclusion applies to the grants strictly above it; a grant inside an exclusion
//! (the workspace inside Evolve's home) stands, since it was asked for by name.
//! Symlinks met while carving get no rule of their own (a rule follows the link and
//! would grant its target): what they point to is reachable only if a rule covers it.
//! A directory that cannot be listed while carving is left out: denied, not granted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What carving needs from the file system (a fake one in tests).
pub trait Tree {
    /// The canonical form of `path` (symlinks resolved), `None` if it does not exist.
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
    /// The entries of a directory: name and kind; `None` if it cannot be listed.
    fn entries(&self, dir: &Path) -> Option<Vec<(OsString, Kind)>>;
}

/// The kind of a directory entry, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (a file, a device, a socket).
    Other,
}

/// Most rules one carve may produce: a root with a huge listing on the way to an
/// exclusion is left out rather than granted whole.
const MAX_RULES: usize = 4096;

/// The rules for `grants` (path, rights) with `exclude` kept out, in order. Paths that
/// do not exist are skipped; duplicates are harmless (rights add up).
pub fn rules(
    grants: &[(PathBuf, u64)],
    exclude: &[PathBuf],
    tree: &dyn Tree,
) -> Vec<(PathBuf, u64)> {
    let exclude: Vec<PathBuf> = exclude.iter().filter_map(|e| tree.canonical(e)).collect();
    let mut out = Vec::new();
    for (path, access) in grants {
        let Some(root) = tree.canonical(path) else {
            continue;
        };
        let inside: Vec<&PathBuf> = exclude
            .iter()
            .filter(|e| e.starts_with(&root) && **e != root)
            .collect();
        carve(&root, *access, &inside, tree, &mut out);
    }
    out
}

fn carve(
    dir: &Path,
    access: u64,
    exclude: &[&PathBuf],
    tree: &dyn Tree,
    out: &mut Vec<(PathBuf, u64)>,
) {
    if exclude.is_empty() {
        out.push((dir.to_path_buf(), access));
        return;
    }
    if exclude.iter().any(|e| e.as_path() == dir) || out.len() >= MAX_RULES {
        return;
    }
    let Some(entries) = tree.entries(dir) else {
        return;
    };
    for (name, kind) in entries {
        let path = dir.join(&name);
        if kind == Kind::Symlink || exclude.iter().any(|e| e.as_path() == path) {
            continue;
        }
        let below: Vec<&PathBuf> = exclude
            .iter()
            .copied()
            .filter(|e| e.starts_with(&path))
            .collect();
        if below.is_empty() {
            out.push((path, access));
        } else if kind == Kind::Dir {
            carve(&path, access, &below, tree, out);
        }
        if out.len() >= MAX_RULES {
            return;
        }
    }
}

/// The real file system.
pub struct RealTree;

impl Tree for RealTree {
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }

    fn entries(&self, dir: &Path) -> Option<Vec<(OsString, Kind)>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).ok()? {
            let entry = entry.ok()?;
            let kind = match entry.file_type() {
                Ok(t) if t.is_symlink() => Kind::Symlink,
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(_) => Kind::Other,
                Err(_) => continue,
            };
            out.push((entry.file_name(), kind));
        }
        out.sort();
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Paths ending in `/` are directories, `@` marks a symlink.
    struct Fake(BTreeMap<PathBuf, Kind>);

    fn fake(paths: &[&str]) -> Fake {
        let mut m = BTreeMap::new();
        for p in paths {
            let kind = if p.ends_with('/') {
                Kind::Dir
            } else if p.ends_with('@') {
                Kind::Symlink
            } else {
                Kind::Other
            };
            let p = p.trim_end_matches(['/', '@']);
            m.insert(PathBuf::from(p), kind);
        }
        Fake(m)
    }

    impl Tree for Fake {
        fn canonical(&self, path: &Path) -> Option<PathBuf> {
            self.0.contains_key(path).then(|| path.to_path_buf())
        }
        fn entries(&self, dir: &Path) -> Option<Vec<(OsString, Kind)>> {
            Some(
                self.0
                    .iter()
                    .filter(|(p, _)| p.parent() == Some(dir))
                    .map(|(p, k)| (p.file_name().unwrap().to_os_string(), *k))
                    .collect(),
            )
        }
    }

    fn names(rules: &[(PathBuf, u64)]) -> Vec<String> {
        rules
            .iter()
            .map(|(p, a)| format!("{}={a}", p.display()))
            .collect()
    }

    #[test]
    fn exclusions_are_carved_out_of_broader_grants_only() {
        let tree = fake(&[
            "/etc/",
            "/etc/passwd",
            "/etc/shadow",
            "/etc/ssl/",
            "/etc/ssl/certs/",
            "/etc/ssl/private/",
            "/etc/mtab@",
            "/home/",
            "/home/u/",
            "/home/u/.evolve/",
            "/home/u/.evolve/config.toml",
            "/home/u/.evolve/workspace/",
            "/home/u/proj/",
            "/home/u/proj/src/",
            "/home/u/proj/.evolve/",
            "/home/u/proj/.evolve/config.toml",
        ]);
        let excl = [
            PathBuf::from("/etc/shadow"),
            PathBuf::from("/etc/ssl/private"),
            PathBuf::from("/home/u/.evolve"),
            PathBuf::from("/home/u/proj/.evolve"),
            PathBuf::from("/does/not/exist"),
        ];
        let cases: &[(&str, &[&str])] = &[
            // Carved: every entry but the way to the exclusions; the symlink has no rule.
            ("/etc", &["/etc/passwd=1", "/etc/ssl/certs=1"]),
            // A grant inside an exclusion stands (the workspace inside the home).
            (
                "/home/u/.evolve/workspace",
                &["/home/u/.evolve/workspace=1"],
            ),
            // An exclusion inside the grant is carved (the home inside the workspace).
            ("/home/u/proj", &["/home/u/proj/src=1"]),
            // A grant equal to an exclusion stands too: it was asked for by name.
            ("/home/u/.evolve", &["/home/u/.evolve=1"]),
            // Missing grants are skipped.
            ("/nope", &[]),
        ];
        for (grant, want) in cases {
            let got = rules(&[(PathBuf::from(grant), 1)], &excl, &tree);
            assert_eq!(names(&got), *want, "{grant}");
        }
    }

    #[test]
    fn nested_exclusions_and_several_grants() {
        let tree = fake(&[
            "/w/",
            "/w/a/",
            "/w/a/b/",
            "/w/a/b/secret",
            "/w/a/b/ok",
            "/w/a/c",
            "/w/d",
        ]);
        let got = rules(
            &[
                (PathBuf::from("/w"), 3),
                (PathBuf::from("/w/a/b/secret"), 1),
            ],
            &[PathBuf::from("/w/a/b/secret")],
            &tree,
        );
        assert_eq!(
            names(&got),
            ["/w/a/b/ok=3", "/w/a/c=3", "/w/d=3", "/w/a/b/secret=1"]
        );
    }

    #[test]
    fn the_real_tree_lists_and_resolves() {
        let tmp = crate::testing::TempDir::new("carve");
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("keep")).unwrap();
        std::fs::create_dir_all(root.join("home/secret")).unwrap();
        std::fs::write(root.join("home/note"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("home"), root.join("link")).unwrap();
        let got = rules(&[(root.clone(), 1)], &[root.join("home/secret")], &RealTree);
        let got: Vec<PathBuf> = got.into_iter().map(|(p, _)| p).collect();
        assert_eq!(got, [root.join("home/note"), root.join("keep")]);
    }
}
