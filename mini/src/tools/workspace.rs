//! Path confinement: which real file a tool's `path` argument names, and whether it is
//! inside the allowed directory (the workspace, or a skill's folder for `load_skill`).
//!
//! A path is resolved the way the kernel resolves it, one component at a time from the
//! canonical root (relative paths) or from `/` (absolute ones): `.` is skipped, `..`
//! goes up from the directory reached so far, and every symlink met is replaced by its
//! target, whose own components are then resolved the same way (at most
//! [`MAX_SYMLINKS`], like Linux's `ELOOP`). Components that do not exist yet are taken
//! as written. The result holds no symlink and no `..`, so "inside" is a plain prefix
//! test on components, and a tool then opens the *resolved* path, never the raw one.
//!
//! What this refuses: `..` climbing out, absolute paths elsewhere, a symlink (anywhere
//! in the path, the last component included, dangling or not) whose target is outside,
//! and NUL bytes. For writes the caller also refuses files with several hard links
//! ([`refuse_hard_links`]): a hard link is the one way an outside file can sit inside
//! the workspace without a symlink.
//!
//! Left to others: whether the call may run at all (core's permission check, which also
//! escalates outside paths to L5 before a tool ever sees them). Not covered: another
//! process swapping a directory for a symlink between this check and the open (the agent
//! runs one tool at a time; a hostile local process is outside the threat model).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed while resolving one path before giving up (Linux: 40).
pub const MAX_SYMLINKS: usize = 40;

/// A directory that paths are confined to.
#[derive(Debug, Clone)]
pub struct Confined {
    /// Canonical (absolute, no symlinks).
    root: PathBuf,
    /// What the root is called in messages ("the workspace", "the skill folder …").
    label: String,
}

/// A path that resolved inside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, symlink-free; may not exist yet.
    pub path: PathBuf,
    /// Relative to the root, for messages and search hits (`.` for the root itself).
    pub shown: String,
}

enum Step {
    Root,
    Up,
    Name(OsString),
}

fn steps_of(path: &Path) -> VecDeque<Step> {
    path.components()
        .filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Step::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Step::Up),
            Component::Normal(name) => Some(Step::Name(name.to_os_string())),
        })
        .collect()
}

impl Confined {
    /// Confines paths to `root`, which must exist (it is canonicalised). `label` names
    /// it in error messages.
    pub fn new(root: &Path, label: &str) -> Result<Confined, String> {
        let canonical = std::fs::canonicalize(root).map_err(|e| {
            format!(
                "{label} {} cannot be opened: {e} — create it or set another one",
                root.display()
            )
        })?;
        if !canonical.is_dir() {
            return Err(format!(
                "{label} {} is not a directory",
                canonical.display()
            ));
        }
        Ok(Confined {
            root: canonical,
            label: label.to_string(),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` relative to the root for display (`.` for the root).
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Resolves `raw` (relative to the root, or absolute) and checks it is inside.
    /// The error text is ready for the model: "path … is outside the workspace …".
    pub fn resolve(&self, raw: &str) -> Result<Resolved, String> {
        if raw.contains('\0') {
            return Err(format!(
                "path {raw:?} contains a NUL byte; paths cannot contain one"
            ));
        }
        if raw.trim().is_empty() {
            return Err(format!(
                "the path is empty; give a path inside {} (relative paths start there)",
                self.label
            ));
        }
        let raw_path = Path::new(raw);
        let mut pending = steps_of(raw_path);
        let mut cur = if raw_path.is_absolute() {
            PathBuf::from("/")
        } else {
            self.root.clone()
        };
        let mut links = 0usize;
        let mut via_link = false;
        while let Some(step) = pending.pop_front() {
            match step {
                Step::Root => cur = PathBuf::from("/"),
                Step::Up => {
                    cur.pop();
                }
                Step::Name(name) => {
                    let next = cur.join(&name);
                    match std::fs::symlink_metadata(&next) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            links += 1;
                            if links > MAX_SYMLINKS {
                                return Err(format!(
                                    "path {raw:?} goes through more than {MAX_SYMLINKS} symlinks (a loop?)"
                                ));
                            }
                            let target = std::fs::read_link(&next).map_err(|e| {
                                format!("cannot read the symlink {}: {e}", next.display())
                            })?;
                            // The target's steps come first; a relative target starts
                            // from the link's directory, which `cur` still is.
                            let mut expanded = steps_of(&target);
                            expanded.append(&mut pending);
                            pending = expanded;
                            via_link = true;
                        }
                        Ok(_) => cur = next,
                        Err(e)
                            if e.kind() == io::ErrorKind::NotFound
                                || e.kind() == io::ErrorKind::NotADirectory =>
                        {
                            // Not there (yet): taken as written; opening it will say
                            // what is wrong.
                            cur = next;
                        }
                        Err(e) => {
                            return Err(format!("cannot resolve path {raw:?}: {e}"));
                        }
                    }
                }
            }
        }
        if !cur.starts_with(&self.root) {
            let how = if via_link {
                format!("it leads through a symlink to {}", cur.display())
            } else {
                format!("it resolves to {}", cur.display())
            };
            return Err(format!(
                "path {raw:?} is outside {} {} ({how}); use a path inside it — relative paths start there",
                self.label,
                self.root.display()
            ));
        }
        Ok(Resolved {
            shown: self.show(&cur),
            path: cur,
        })
    }
}

/// Refuses to write to a regular file that has other hard links: they may live outside
/// the workspace, and writing would change them too.
pub fn refuse_hard_links(resolved: &Resolved) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(meta) = std::fs::metadata(&resolved.path) {
            if meta.is_file() && meta.nlink() > 1 {
                return Err(format!(
                    "{} has {} hard links; writing it would also change the other names of the same file, which may be outside the workspace — write a new file instead",
                    resolved.shown,
                    meta.nlink()
                ));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = resolved;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::tools::testing::TempDir;
    use std::os::unix::fs::symlink;

    /// A workspace `ws` beside a directory `outside` holding `secret.txt`.
    fn setup() -> (TempDir, Confined, PathBuf) {
        let tmp = TempDir::new("confine");
        let ws = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        std::fs::write(ws.join("sub/a.txt"), "a").unwrap();
        symlink(&outside, ws.join("out_dir")).unwrap();
        symlink(outside.join("secret.txt"), ws.join("out_file")).unwrap();
        symlink("../outside/none.txt", ws.join("dangling_out")).unwrap();
        symlink("sub/a.txt", ws.join("in_file")).unwrap();
        symlink("sub", ws.join("in_dir")).unwrap();
        symlink("new/file.txt", ws.join("dangling_in")).unwrap();
        symlink("loop2", ws.join("loop1")).unwrap();
        symlink("loop1", ws.join("loop2")).unwrap();
        // A link in a subfolder pointing outside.
        symlink(outside.join("secret.txt"), ws.join("sub/deep")).unwrap();
        let confined = Confined::new(&ws, "the workspace").unwrap();
        let root = confined.root().to_path_buf();
        (tmp, confined, root)
    }

    #[test]
    fn paths_inside_resolve_to_real_locations() {
        let (_tmp, c, root) = setup();
        let cases: &[(&str, &str)] = &[
            ("sub/a.txt", "sub/a.txt"),
            ("./sub/../sub/a.txt", "sub/a.txt"),
            (".", "."),
            ("new/dir/file.md", "new/dir/file.md"),
            ("missing/../sub/a.txt", "sub/a.txt"),
            ("in_file", "sub/a.txt"),
            ("in_dir/a.txt", "sub/a.txt"),
            ("dangling_in", "new/file.txt"),
            // Out through a link and back in with `..` is inside: the real location is.
            ("out_dir/../ws/sub/a.txt", "sub/a.txt"),
        ];
        for (raw, shown) in cases {
            let r = c.resolve(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(r.shown, *shown, "{raw}");
            assert!(r.path.starts_with(&root), "{raw}");
        }
        let abs = root.join("sub/a.txt");
        assert_eq!(c.resolve(abs.to_str().unwrap()).unwrap().shown, "sub/a.txt");
    }

    #[test]
    fn escapes_are_refused() {
        let (_tmp, c, root) = setup();
        let outside_abs = root.parent().unwrap().join("outside/secret.txt");
        let cases: Vec<String> = vec![
            "../outside/secret.txt".into(),
            "sub/../../outside/secret.txt".into(),
            "../../../../../../etc/passwd".into(),
            "/etc/passwd".into(),
            outside_abs.display().to_string(),
            "out_dir/secret.txt".into(),
            "out_dir".into(),
            "out_file".into(),
            "dangling_out".into(),
            "sub/deep".into(),
            "in_dir/../out_dir/x".into(),
            // Lexically `outside/secret.txt` inside the workspace; really the sibling:
            // `..` climbs from the link's target, as the kernel does.
            "out_dir/../outside/secret.txt".into(),
            "..".into(),
            "/".into(),
        ];
        for raw in cases {
            let err = c.resolve(&raw).expect_err(&raw);
            assert!(
                err.starts_with(&format!("path {raw:?} is outside the workspace")),
                "{raw}: {err}"
            );
        }
    }

    #[test]
    fn nul_bytes_empty_paths_and_loops_are_refused() {
        let (_tmp, c, _root) = setup();
        assert!(c
            .resolve("sub/a.txt\0.png")
            .unwrap_err()
            .contains("NUL byte"));
        assert!(c.resolve("  ").unwrap_err().contains("empty"));
        assert!(c.resolve("loop1").unwrap_err().contains("symlinks"));
    }

    #[test]
    fn a_symlinked_workspace_root_is_used_by_its_real_location() {
        let (tmp, _c, root) = setup();
        let alias = tmp.path().join("alias");
        symlink(&root, &alias).unwrap();
        let c = Confined::new(&alias, "the workspace").unwrap();
        assert_eq!(c.root(), root.as_path());
        let via_alias = alias.join("sub/a.txt");
        assert_eq!(
            c.resolve(via_alias.to_str().unwrap()).unwrap().shown,
            "sub/a.txt"
        );
    }

    #[test]
    fn hard_linked_files_are_not_written() {
        let (_tmp, c, root) = setup();
        let outside = root.parent().unwrap().join("outside/secret.txt");
        std::fs::hard_link(&outside, root.join("hard")).unwrap();
        let err = refuse_hard_links(&c.resolve("hard").unwrap()).unwrap_err();
        assert!(err.contains("hard links"), "{err}");
        assert!(refuse_hard_links(&c.resolve("sub/a.txt").unwrap()).is_ok());
        assert!(refuse_hard_links(&c.resolve("not/yet.txt").unwrap()).is_ok());
    }
}
