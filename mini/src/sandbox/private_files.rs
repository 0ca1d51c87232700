//! What of the system a confined child may not read: the files under `/etc`, `/opt` and
//! `/usr/local` that not every user of the machine may read, walked at most once a minute.

use std::path::{Path, PathBuf};

/// How long the list of [`private_system_files`] is reused before it is walked again.
const SYSTEM_WALK_TTL: std::time::Duration = std::time::Duration::from_secs(60);
/// Most entries looked at in one walk (a normal system has one or two thousand): past
/// it, the folder being walked is kept out whole.
const SYSTEM_WALK_MAX: usize = 20_000;
/// The system roots walked for what not everyone may read: the configuration, and the
/// places local software and its settings go (`/usr` itself is the distribution's, all
/// of it world-readable, and too big to walk per command).
const SYSTEM_WALKED: [&str; 3] = ["/etc", "/opt", "/usr/local"];

/// What under [`SYSTEM_WALKED`] not every user may read (no "others may read" bit:
/// `/etc/shadow`, WireGuard and VPN keys, database passwords, a group's private files …):
/// a child gets the system only as far as any user of the machine may read it — Evolve's
/// own user or group may read more, and a root `evolve`'s children, without
/// capabilities, are still the owner of root's files. Walked at most once a minute
/// (about 6 ms for 1 500 entries); symlinks are not followed; a walk cut short keeps the
/// rest out.
pub(super) fn private_system_files() -> Vec<PathBuf> {
    use std::sync::Mutex;
    use std::time::Instant;
    static CACHE: Mutex<Option<(Instant, Vec<PathBuf>)>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, list)) = cache.as_ref() {
        if at.elapsed() < SYSTEM_WALK_TTL {
            return list.clone();
        }
    }
    let mut out = Vec::new();
    let mut seen = 0;
    for root in SYSTEM_WALKED {
        walk_private(Path::new(root), 0, &mut seen, &mut out);
    }
    *cache = Some((Instant::now(), out.clone()));
    out
}

fn walk_private(dir: &Path, depth: usize, seen: &mut usize, out: &mut Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        *seen += 1;
        if *seen > SYSTEM_WALK_MAX || depth >= 32 {
            log::warn!(
                "{} has more than {SYSTEM_WALK_MAX} entries or levels to look through: it is kept out of what commands may read",
                dir.display()
            );
            out.push(dir.to_path_buf());
            return;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.file_type().is_symlink() {
            continue;
        }
        let path = entry.path();
        if meta.permissions().mode() & 0o004 == 0 {
            out.push(path);
        } else if meta.is_dir() {
            walk_private(&path, depth + 1, seen, out);
        }
    }
}
