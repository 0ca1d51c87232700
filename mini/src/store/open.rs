//! How the store file is opened. It is looked at first ([`header`]): a directory, a file
//! of another program, an empty, cut or overwritten one is refused by name. A missing
//! one is created whole beside its place and moved in, so no process ever finds half a
//! store there. An existing one is opened through a dry run ([`dry_run`]) that checks
//! every page and the schema while writing nothing, and only then for real.
//!
//! What it guarantees: a failed open leaves the file's bytes as they were, and says what
//! is wrong with the file and what to do. Repairs after a crash (`kill -9`) still happen,
//! by redb, once the dry run has shown that they succeed on these bytes. What it leaves
//! to redb: the repair itself, locking, and everything after the open.
//!
//! The dry run reads the whole file (about 40 ms for 9 MB, 10 000 memories, in the
//! release build). It is skipped for a file exactly as an evolve left it when it closed
//! it: the store then writes a seal beside it ([`seal`]: device, inode, length, and the
//! modification and change times to the nanosecond). Anything that writes to the file
//! afterwards changes its change time, which no system call sets back, so a file damaged
//! since, or replaced, is checked. A seal is trusted only when it was written later than
//! the file's last change: where the kernel's clock is coarse (before Linux 6.13's
//! fine-grained timestamps) and both fall in one tick, the file is checked, so a change
//! in the same tick is never mistaken for none.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use redb::{Database, DatabaseError, StorageError};

use super::dry_run::{self, Refusal};
use super::error::Fail;
use super::header::{self, Closed};
use super::{migrate, CACHE_BYTES};

/// Opens the store at `path`, creating it when there is none.
pub(super) fn open(path: &Path) -> Result<Database, Fail> {
    // Twice at most: created, then opened (or opened as another evolve created it).
    for _ in 0..2 {
        let Some(closed) = look(path)? else {
            create(path)?;
            continue;
        };
        if closed == Closed::NotCleanly || !sealed(path) {
            #[cfg(test)]
            DRY_RUNS.with(|n| n.set(n.get() + 1));
            let started = std::time::Instant::now();
            dry_run::open(path, closed, CACHE_BYTES, migrate::check).map_err(refused)??;
            log::debug!(
                "{}: every page checked ({closed:?}) in {} ms",
                path.display(),
                started.elapsed().as_millis()
            );
        } else {
            // Sealed, perhaps by a newer evolve: its schema is checked without writing.
            let db = redb::Builder::new()
                .set_cache_size(CACHE_BYTES)
                .open_read_only(path)
                .map_err(from_redb)?;
            migrate::check(&db)?;
        }
        // `open`, not `create`: redb never initialises a file that is there.
        return redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .open(path)
            .map_err(from_redb);
    }
    Err(Fail::Open(
        "it was removed while evolve created it — run again".into(),
    ))
}

/// What is at `path`: nothing (`None`), or a store file and how it was left.
fn look(path: &Path) -> Result<Option<Closed>, Fail> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Ok(target) = std::fs::read_link(path) {
                return Err(Fail::NotAStore(format!(
                    "it is a symbolic link to {}, which does not exist",
                    target.display()
                )));
            }
            return Ok(None);
        }
        Err(e) => return Err(access(e)),
    };
    if meta.is_dir() {
        return Err(Fail::NotAStore("it is a directory, not a file".into()));
    }
    if !meta.is_file() {
        return Err(Fail::NotAStore(
            "it is not a regular file (a device, pipe or socket)".into(),
        ));
    }
    let mut head = Vec::with_capacity(header::LOOK_AT);
    std::fs::File::open(path)
        .and_then(|f| f.take(header::LOOK_AT as u64).read_to_end(&mut head))
        .map_err(access)?;
    header::check(&head, meta.len())
        .map(Some)
        .map_err(|unusable| {
            if unusable.is_foreign() {
                Fail::NotAStore(unusable.what())
            } else {
                Fail::Damaged(unusable.what())
            }
        })
}

/// Creates a new store at `path`: written and closed under a name of its own beside it
/// (mode 0600), then linked into place only if nothing is there yet, so a crash leaves
/// either no store or a whole one, and of two evolves creating it at once, one store
/// wins and neither replaces the other's.
fn create(path: &Path) -> Result<(), Fail> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.new-{}", std::process::id()));
    let cannot = |e: std::io::Error| access(e);
    // A leftover of a process with this pid that died creating it.
    let _ = std::fs::remove_file(&tmp);
    let made = (|| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        opts.open(&tmp).map_err(cannot)?;
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(&tmp)
            .map_err(from_redb)?;
        migrate::migrate(&db)?;
        db.close().map_err(from_redb)
    })();
    let placed = made.and_then(|()| match std::fs::hard_link(&tmp, path) {
        // Another evolve created it first: that one is the store.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        // A file system without hard links: moved instead, unless one appeared.
        Err(_) if !path.exists() => std::fs::rename(&tmp, path).map_err(cannot),
        other => other.map_err(cannot),
    });
    let _ = std::fs::remove_file(&tmp);
    placed?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // The new name survives a power cut too.
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    log::info!("created the store {}", path.display());
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Dry runs made by this thread (tests tell a sealed open from a checked one).
    pub(super) static DRY_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The seal of the store at `path`: beside it, hidden.
fn seal_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.closed"))
}

/// What tells one state of the file from another, and its change time in nanoseconds.
fn stamp(path: &Path) -> Option<(String, i128)> {
    let m = std::fs::metadata(path).ok()?;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    let text = format!(
        "{} {} {} {} {}\n",
        m.dev(),
        m.ino(),
        m.len(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec())
    );
    Some((text, ns(m.ctime(), m.ctime_nsec())))
}

/// Records that the store at `path` is as this process left it: call right after the
/// database was closed cleanly. A seal that cannot be written only costs a check.
pub(super) fn seal(path: &Path) {
    if let Some((text, _)) = stamp(path) {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        // Its times are read before it is written: a kernel with fine-grained timestamps
        // then gives the write a time of its own, later than the store's last change,
        // rather than the coarse clock's tick both may share.
        let _ = opts.open(seal_path(path)).and_then(|mut f| {
            f.metadata()?;
            std::io::Write::write_all(&mut f, text.as_bytes())
        });
    }
}

/// Whether the store is as an evolve left it when it closed it (see the module doc).
fn sealed(path: &Path) -> bool {
    let seal = seal_path(path);
    let (Ok(text), Ok(meta), Some((now, changed))) = (
        std::fs::read_to_string(&seal),
        std::fs::metadata(&seal),
        stamp(path),
    ) else {
        return false;
    };
    let written = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    text == now && written > changed
}

/// A failure to reach the file: permissions (said so), or an I/O error.
fn access(e: std::io::Error) -> Fail {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            Fail::Permission(e)
        }
        _ => Fail::Db(redb::Error::Io(e)),
    }
}

/// What a dry run's refusal means for the user.
fn refused(r: Refusal) -> Fail {
    match r {
        Refusal::Io(e) => access(e),
        Refusal::LastCommitDamaged => Fail::Damaged(
            "the pages of its last saved change do not match their checksums (opening it \
             would silently drop that change)"
                .into(),
        ),
        Refusal::Db(e) => from_redb(e),
    }
}

/// redb's refusal to open a file, said plainly.
fn from_redb(e: DatabaseError) -> Fail {
    match e {
        DatabaseError::Storage(StorageError::Corrupted(detail)) => {
            Fail::Damaged(corrupted(&detail))
        }
        DatabaseError::RepairAborted => Fail::Damaged("redb could not repair it".into()),
        DatabaseError::Storage(StorageError::Io(io)) => match io.kind() {
            std::io::ErrorKind::InvalidData => Fail::NotAStore(format!("redb: {io}")),
            std::io::ErrorKind::UnexpectedEof => {
                Fail::Damaged("it is cut short: it ends inside a page".into())
            }
            _ => access(io),
        },
        other => Fail::Db(other.into()),
    }
}

/// redb's words for a damaged file, in the user's. Its own text stays in parentheses:
/// it is what a bug report needs.
fn corrupted(detail: &str) -> String {
    let what = if detail.contains("Primary is corrupted") {
        "the pages of its last saved state do not match their checksums"
    } else if detail.contains("All roots are corrupted") || detail.contains("Both commit slots") {
        "the pages of its last two saved states do not match their checksums"
    } else {
        "some of its pages do not hold what redb wrote there"
    };
    format!("{what} (redb: {detail})")
}
