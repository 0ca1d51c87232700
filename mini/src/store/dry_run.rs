//! Opening the store without writing to it. redb writes to a file as it opens it: it
//! marks the file open, repairs one a crash left (and commits the repair), and records
//! its allocator state when it closes. On a damaged file those writes happen before (or
//! instead of) the error, and redb trusts a file it closed cleanly, reading damaged
//! pages as they come (and panicking on some).
//!
//! So the store is opened here first through [`DryRun`], a redb backend that reads the
//! file and keeps every write in memory, with redb's integrity check on (every page the
//! file's last commit reaches is read and its checksum verified), and the schema checked.
//! Only when that succeeds is the file opened for real; redb then does the same repair
//! on the same bytes. What the dry run decides: whether the file can be opened, and what
//! is wrong with it when not. The lock is the real file's: a file another evolve holds
//! is refused here as it would be there.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

use super::header::Closed;

/// The unit the overlay keeps written bytes in (redb's page size).
const CHUNK: u64 = 4096;

/// A backend over a file that is never written: writes and length changes are kept in
/// memory, reads see them over the file's bytes.
#[derive(Debug)]
pub(super) struct DryRun {
    /// The file, for its bytes and its locks.
    file: FileBackend,
    /// Read through `file`'s descriptor (the backend does not lend it out).
    reader: File,
    overlay: Mutex<Overlay>,
}

#[derive(Debug)]
struct Overlay {
    /// The length redb sees.
    len: u64,
    /// From here on the file's own bytes are not seen (the length was cut below them;
    /// growing again shows zeros, as a file does).
    file_until: u64,
    /// Chunks written, by index.
    chunks: HashMap<u64, Box<[u8]>>,
}

impl DryRun {
    /// Over `file`, opened for reading and writing (redb's write locks need it), which is
    /// never written.
    pub(super) fn new(file: File) -> std::io::Result<DryRun> {
        let len = file.metadata()?.len();
        let reader = file.try_clone()?;
        Ok(DryRun {
            file: FileBackend::new(file).map_err(std::io::Error::other)?,
            reader,
            overlay: Mutex::new(Overlay {
                len,
                file_until: len,
                chunks: HashMap::new(),
            }),
        })
    }

    fn overlay(&self) -> MutexGuard<'_, Overlay> {
        self.overlay.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bytes of `[at, at + out.len())` below the overlay: the file's, or zeros.
    fn base(&self, file_until: u64, at: u64, out: &mut [u8]) -> std::io::Result<()> {
        let end = at + out.len() as u64;
        let from_file = end.min(file_until).saturating_sub(at);
        let split = usize::try_from(from_file).unwrap_or(out.len());
        let (file_part, zeros) = out.split_at_mut(split);
        if !file_part.is_empty() {
            std::os::unix::fs::FileExt::read_exact_at(&self.reader, file_part, at)?;
        }
        zeros.fill(0);
        Ok(())
    }
}

impl StorageBackend for DryRun {
    fn len(&self) -> Result<u64, std::io::Error> {
        Ok(self.overlay().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        let o = self.overlay();
        let end = offset + out.len() as u64;
        if end > o.len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            ));
        }
        let mut pos = offset;
        while pos < end {
            let index = pos / CHUNK;
            let chunk_end = ((index + 1) * CHUNK).min(end);
            let dst = &mut out[(pos - offset) as usize..(chunk_end - offset) as usize];
            match o.chunks.get(&index) {
                Some(chunk) => {
                    let from = (pos - index * CHUNK) as usize;
                    dst.copy_from_slice(&chunk[from..from + dst.len()]);
                    pos = chunk_end;
                }
                None => {
                    // The run of chunks not written, read from the file at once.
                    let mut run_end = chunk_end;
                    while run_end < end && !o.chunks.contains_key(&(run_end / CHUNK)) {
                        run_end = ((run_end / CHUNK + 1) * CHUNK).min(end);
                    }
                    let dst = &mut out[(pos - offset) as usize..(run_end - offset) as usize];
                    self.base(o.file_until, pos, dst)?;
                    pos = run_end;
                }
            }
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        let mut o = self.overlay();
        if len < o.len {
            o.file_until = o.file_until.min(len);
            o.chunks.retain(|&index, _| index * CHUNK < len);
            if let Some(chunk) = o.chunks.get_mut(&(len / CHUNK)) {
                chunk[(len % CHUNK) as usize..].fill(0);
            }
        }
        o.len = len;
        Ok(())
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        let mut o = self.overlay();
        let end = offset + data.len() as u64;
        let mut pos = offset;
        while pos < end {
            let index = pos / CHUNK;
            let chunk_end = ((index + 1) * CHUNK).min(end);
            if !o.chunks.contains_key(&index) {
                let mut chunk = vec![0u8; CHUNK as usize].into_boxed_slice();
                // Only the part below the length holds anything; past it, zeros.
                let start = index * CHUNK;
                let below = o.len.saturating_sub(start).min(CHUNK) as usize;
                self.base(o.file_until, start, &mut chunk[..below])?;
                o.chunks.insert(index, chunk);
            }
            let chunk = o.chunks.get_mut(&index).expect("inserted above");
            let from = (pos - index * CHUNK) as usize;
            let src = &data[(pos - offset) as usize..(chunk_end - offset) as usize];
            chunk[from..from + src.len()].copy_from_slice(src);
            pos = chunk_end;
        }
        o.len = o.len.max(end);
        Ok(())
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.file.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}

/// Why a dry run refused the file, beyond redb's own error.
#[derive(Debug)]
pub(super) enum Refusal {
    /// redb refused it.
    Db(redb::DatabaseError),
    /// A file closed cleanly whose last commit fails its checksums: redb would roll
    /// that commit back, losing what it acknowledged.
    LastCommitDamaged,
    /// The file cannot be opened for reading and writing.
    Io(std::io::Error),
}

/// Opens `path` through [`DryRun`] with the integrity check on and hands the database to
/// `check` (the schema); nothing is written to the file whatever happens.
///
/// After a crash ([`Closed::NotCleanly`]) redb may fall back to the commit before the
/// last one, when the last one's pages did not all reach the disk (a power cut): that
/// commit was never acknowledged, and the real open does the same. On a file closed
/// cleanly the same fallback would drop an acknowledged commit: refused.
pub(super) fn open<R>(
    path: &Path,
    closed: Closed,
    cache_bytes: usize,
    check: impl FnOnce(&redb::Database) -> R,
) -> Result<R, Refusal> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(Refusal::Io)?;
    let backend = DryRun::new(file).map_err(Refusal::Io)?;
    let fell_back = Arc::new(AtomicBool::new(false));
    let mut builder = redb::Builder::new();
    builder
        .set_cache_size(cache_bytes)
        .set_check_integrity_on_open(true);
    if closed == Closed::Cleanly {
        let flag = Arc::clone(&fell_back);
        builder.set_repair_callback(move |session| {
            // redb 4.6 (`Database::do_repair`) reports progress 0.3 right after the last
            // commit failed verification, before falling back to the one before.
            if session.progress() > 0.0 && session.progress() < 0.5 {
                flag.store(true, Ordering::SeqCst);
                session.abort();
            }
        });
    }
    match builder.create_with_backend(backend) {
        Ok(db) => Ok(check(&db)),
        Err(redb::DatabaseError::RepairAborted) if fell_back.load(Ordering::SeqCst) => {
            Err(Refusal::LastCommitDamaged)
        }
        Err(e) => Err(Refusal::Db(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    fn backend(content: &[u8]) -> (DryRun, std::path::PathBuf, TempDir) {
        let dir = TempDir::new("dry-run");
        let path = dir.path().join("file");
        std::fs::write(&path, content).unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (DryRun::new(file).unwrap(), path, dir)
    }

    fn read(b: &DryRun, at: u64, n: usize) -> Vec<u8> {
        let mut out = vec![0xaa; n];
        b.read(at, &mut out).unwrap();
        out
    }

    #[test]
    fn writes_and_length_changes_stay_in_memory() {
        let original: Vec<u8> = (0..3 * CHUNK + 100).map(|i| (i % 251) as u8).collect();
        let (b, path, _dir) = backend(&original);
        assert_eq!(read(&b, 10, 5000), original[10..5010]);

        // A write across a chunk boundary is seen, with the bytes around it.
        b.write(4090, &[1; 12]).unwrap();
        let mut want = original.clone();
        want[4090..4102].fill(1);
        assert_eq!(read(&b, 0, want.len()), want);

        // Growing shows zeros; a write past the end grows too.
        b.set_len(5 * CHUNK).unwrap();
        want.resize(5 * CHUNK as usize, 0);
        assert_eq!(read(&b, 0, want.len()), want);
        b.write(6 * CHUNK, &[7; 3]).unwrap();
        assert_eq!(b.len().unwrap(), 6 * CHUNK + 3);
        want.resize(6 * CHUNK as usize, 0);
        want.extend([7; 3]);
        assert_eq!(read(&b, 0, want.len()), want);

        // Cutting and growing again: what was cut reads as zeros, the file's bytes too.
        b.set_len(4095).unwrap();
        b.set_len(3 * CHUNK).unwrap();
        want.truncate(4095);
        want.resize(3 * CHUNK as usize, 0);
        assert_eq!(read(&b, 0, want.len()), want);
        assert!(b.read(3 * CHUNK - 1, &mut [0; 2]).is_err(), "past the end");

        b.sync_data().unwrap();
        b.close().unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            original,
            "the file is untouched"
        );
    }

    #[test]
    fn redb_runs_on_it_and_the_file_keeps_its_bytes() {
        let dir = TempDir::new("dry-run-redb");
        let path = dir.path().join("db");
        const T: redb::TableDefinition<u64, &str> = redb::TableDefinition::new("t");
        {
            let db = redb::Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(T).unwrap().insert(1, "one").unwrap();
            txn.commit().unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let seen = open(&path, Closed::Cleanly, 1 << 20, |db| {
            let txn = db.begin_write().unwrap();
            txn.open_table(T).unwrap().insert(2, "two").unwrap();
            txn.commit().unwrap();
            use redb::{ReadableDatabase, ReadableTableMetadata};
            db.begin_read()
                .unwrap()
                .open_table(T)
                .unwrap()
                .len()
                .unwrap()
        })
        .unwrap();
        assert_eq!(seen, 2, "the dry run sees its own writes");
        assert_eq!(std::fs::read(&path).unwrap(), before, "none reach the file");
    }
}
