//! Evolve's files are its user's alone. Every file and directory it creates is private
//! (0600, 0700), whichever command creates it, because the process's umask is 0o077
//! from the first line of `main` ([`restrict_umask`]). The programs it starts (shell
//! commands, MCP servers) inherit that umask, on purpose: what they write into the
//! workspace is private too. A home made before, by hand or by another tool is tightened
//! when a command loads it ([`tighten_home`]): the directory to 0700, the files Evolve
//! owns in it to 0600, said once in the log (once done, there is nothing to say again).
//!
//! What it leaves alone: files that are not Evolve's own (the workspace's, skills the
//! user wrote: the home's 0700 already keeps other users out of them), anything owned by
//! another user, symbolic links, and the user's own home directory when `EVOLVE_HOME`
//! points at it (other programs may need it open).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::CONFIG_FILE;

/// Group and other get nothing.
const PRIVATE_UMASK: libc::mode_t = 0o077;

/// The files Evolve owns in its home: the store, the configuration (it may hold an API
/// key), the server's token and its address record.
const OWN_FILES: [&str; 4] = ["evolve.redb", CONFIG_FILE, "serve.token", "serve.json"];

/// Makes every file and directory this process (and its children) creates private.
/// Called first in `main`, before any thread or file exists.
pub fn restrict_umask() {
    // SAFETY: umask only sets the process's file mode creation mask; it cannot fail.
    unsafe {
        libc::umask(PRIVATE_UMASK);
    }
}

/// A mode made private: what `mode` becomes with group and other bits cleared, `None`
/// when it has none.
fn private_mode(mode: u32) -> Option<u32> {
    (mode & 0o077 != 0).then_some(mode & 0o7700)
}

/// One tightened path: its old and new mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub path: PathBuf,
    pub from: u32,
    pub to: u32,
}

/// Tightens an existing home (see the module doc) and logs what changed, once.
pub fn tighten_home(home: &Path) {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let changed = tighten(home, user_home.as_deref());
    if changed.is_empty() {
        return;
    }
    let list: Vec<String> = changed
        .iter()
        .map(|t| format!("{} {:o} → {:o}", t.path.display(), t.from, t.to))
        .collect();
    log::warn!(
        "other users could read evolve's files; made them private to you: {}",
        list.join(", ")
    );
}

/// What [`tighten_home`] does, with the user's home directory given.
pub fn tighten(home: &Path, user_home: Option<&Path>) -> Vec<Tightened> {
    let mut changed = Vec::new();
    let is_user_home = {
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        user_home.is_some_and(|u| same(home, u)) || same(home, Path::new("/"))
    };
    if !is_user_home {
        // The home itself may be a symbolic link to where the data lives: that
        // directory is the one to close.
        tighten_one(home, std::fs::metadata(home), &mut changed);
    }
    for name in OWN_FILES {
        let path = home.join(name);
        let meta = std::fs::symlink_metadata(&path);
        if meta.as_ref().is_ok_and(|m| m.is_file()) {
            tighten_one(&path, meta, &mut changed);
        }
    }
    changed
}

fn tighten_one(
    path: &Path,
    meta: std::io::Result<std::fs::Metadata>,
    changed: &mut Vec<Tightened>,
) {
    let Ok(meta) = meta else { return };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return;
    }
    let from = meta.permissions().mode() & 0o7777;
    let Some(to) = private_mode(from) else { return };
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(to)) {
        Ok(()) => changed.push(Tightened {
            path: path.to_path_buf(),
            from,
            to,
        }),
        Err(e) => log::debug!("cannot make {} private: {e}", path.display()),
    }
}

/// Replaces the file at `path` with `text`, private (0600) whatever the old file's
/// mode: written to a temporary file in the same directory, flushed to disk, then
/// renamed over it, so a crash leaves the old file or the new one, never half of
/// either. A symbolic link (a dotfiles manager's) stays a link: its target is replaced.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => path.canonicalize()?,
        _ => path.to_path_buf(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        // An old temporary file of this name may have had another mode.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    // The rename itself is on disk once the directory is.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn chmod(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn group_and_other_bits_are_cleared_and_nothing_else() {
        for (from, to) in [
            (0o755, Some(0o700)),
            (0o644, Some(0o600)),
            (0o664, Some(0o600)),
            (0o604, Some(0o600)),
            (0o2775, Some(0o2700)),
            (0o700, None),
            (0o600, None),
            (0o400, None),
        ] {
            assert_eq!(private_mode(from), to, "{from:o}");
        }
    }

    #[test]
    fn an_open_home_and_evolves_files_in_it_are_closed_and_the_rest_left() {
        let dir = TempDir::new("private");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("workspace")).unwrap();
        for name in ["evolve.redb", CONFIG_FILE, "serve.token", "notes.txt"] {
            std::fs::write(home.join(name), "x").unwrap();
            chmod(&home.join(name), 0o644);
        }
        chmod(&home, 0o755);
        chmod(&home.join("workspace"), 0o755);
        std::os::unix::fs::symlink(home.join("notes.txt"), home.join("serve.json")).unwrap();

        let changed = tighten(&home, None);
        let paths: Vec<_> = changed.iter().map(|t| t.path.clone()).collect();
        assert_eq!(
            paths,
            [
                home.clone(),
                home.join("evolve.redb"),
                home.join(CONFIG_FILE),
                home.join("serve.token")
            ]
        );
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&home.join("evolve.redb")), 0o600);
        assert_eq!(mode(&home.join(CONFIG_FILE)), 0o600);
        assert_eq!(mode(&home.join("notes.txt")), 0o644, "not evolve's");
        assert_eq!(mode(&home.join("workspace")), 0o755, "the user's files");
        assert!(tighten(&home, None).is_empty(), "once");
    }

    #[test]
    fn a_rewritten_file_is_private_whole_and_a_link_stays_a_link() {
        let dir = TempDir::new("private-write");
        let file = dir.path().join(CONFIG_FILE);
        write_private(&file, "a = 1\n").unwrap();
        assert_eq!(mode(&file), 0o600);
        chmod(&file, 0o644);
        write_private(&file, "a = 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 2\n");
        assert_eq!(mode(&file), 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_private(&link, "a = 3\n").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a = 3\n");
    }

    #[test]
    fn the_users_own_home_directory_keeps_its_mode() {
        let dir = TempDir::new("private-user-home");
        chmod(dir.path(), 0o755);
        std::fs::write(dir.path().join("evolve.redb"), "x").unwrap();
        chmod(&dir.path().join("evolve.redb"), 0o644);
        let changed = tighten(dir.path(), Some(dir.path()));
        assert_eq!(changed.len(), 1, "{changed:?}");
        assert_eq!(mode(dir.path()), 0o755);
        assert_eq!(mode(&dir.path().join("evolve.redb")), 0o600);
    }
}
