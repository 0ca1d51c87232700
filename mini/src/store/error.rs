//! What the store says when it cannot do what was asked: [`StoreError`], whose messages
//! name the file and say what to do, and the internal [`Fail`] that store code returns
//! with `?` before the path is known.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why the store cannot do what was asked.
#[derive(Debug)]
pub enum StoreError {
    /// The file cannot be opened or created (permissions, locked by another process, …).
    Open { path: PathBuf, message: String },
    /// The file was written by a newer Evolve.
    TooNew {
        path: PathBuf,
        found: u64,
        supported: u64,
    },
    /// A read or write failed (disk full, I/O error).
    Io { path: PathBuf, message: String },
    /// A record could not be decoded (names table and key).
    Corrupt { path: PathBuf, message: String },
    /// The file cannot be opened as a store: `what` is wrong with it. Nothing was
    /// written to it.
    Damaged { path: PathBuf, what: String },
    /// The file at the store's place is something else (text, another program's
    /// database, a directory). Nothing was written to it.
    NotAStore { path: PathBuf, what: String },
    /// No such memory / session / version. The text names it and where to look.
    NotFound(String),
    /// The file is lent to another process (`to`, e.g. "`evolve chat` (pid 42)"), which
    /// did not give it back within `waited`.
    Lent {
        path: PathBuf,
        to: String,
        waited: std::time::Duration,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Open { path, message } => {
                write!(f, "cannot open the store {}: {message}", path.display())
            }
            StoreError::TooNew {
                path,
                found,
                supported,
            } => write!(
                f,
                "the store {} was written by a newer evolve (schema version {found}; this \
                 evolve reads up to {supported}) — upgrade evolve to use it",
                path.display()
            ),
            StoreError::Io { path, message } => write!(
                f,
                "cannot read or write the store {}: {message} — check the free disk space \
                 and the file's permissions, then retry",
                path.display()
            ),
            StoreError::Corrupt { path, message } => write!(
                f,
                "the store {} holds a damaged record: {message} — keep a copy of the file; \
                 the rest of the store is still readable",
                path.display()
            ),
            StoreError::Damaged { path, what } => write!(
                f,
                "the store {} is damaged: {what} — {}",
                path.display(),
                move_aside(path)
            ),
            StoreError::NotAStore { path, what } => write!(
                f,
                "the store {} is not an evolve store: {what} — {}",
                path.display(),
                move_aside(path)
            ),
            StoreError::NotFound(what) => f.write_str(what),
            StoreError::Lent { path, to, waited } => write!(
                f,
                "the store {} is lent to {to}, which did not give it back within {} s — \
                 try again when it has finished",
                path.display(),
                waited.as_secs()
            ),
        }
    }
}

impl std::error::Error for StoreError {}

/// What to do with a file that cannot be the store: keep it (it may be the only copy of
/// something) and let evolve start a new one.
fn move_aside(path: &Path) -> String {
    let mut aside = path.file_name().unwrap_or_default().to_os_string();
    aside.push(".damaged");
    format!(
        "move it aside (mv {} {}) and run again to start a new one, or restore a backup",
        shell_word(path),
        shell_word(&path.with_file_name(aside))
    )
}

/// `path` as one word of a shell command (quoted when it needs to be).
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// A failure inside a store operation, turned into a [`StoreError`] (with the file's
/// path) at the public boundary by [`Fail::at`].
#[derive(Debug)]
pub(super) enum Fail {
    /// redb refused (I/O, damaged file, lock).
    Db(redb::Error),
    /// A stored value is not the JSON its table holds.
    Corrupt {
        table: &'static str,
        key: String,
        detail: String,
    },
    /// A value could not be encoded (a bug, or a value JSON cannot hold).
    Encode { table: &'static str, detail: String },
    /// The file's schema is newer than this build's.
    TooNew(u64),
    /// No such record; the text is the user-facing message.
    NotFound(String),
    /// The file cannot be a store: what is wrong with it ([`StoreError::Damaged`]).
    Damaged(String),
    /// The file is something else ([`StoreError::NotAStore`]).
    NotAStore(String),
    /// The file cannot be opened, for a reason said in full ([`StoreError::Open`]).
    Open(String),
    /// The file or its directory cannot be read or written: their permissions.
    Permission(std::io::Error),
}

impl Fail {
    /// The user-facing error for the store at `path`.
    pub(super) fn at(self, path: &Path) -> StoreError {
        let path = path.to_path_buf();
        match self {
            Fail::Db(e) => db_error(path, e),
            Fail::Corrupt { table, key, detail } => StoreError::Corrupt {
                path,
                message: format!("table `{table}`, key {key}: {detail}"),
            },
            Fail::Encode { table, detail } => StoreError::Io {
                path,
                message: format!("cannot encode a record of table `{table}`: {detail}"),
            },
            Fail::TooNew(found) => StoreError::TooNew {
                path,
                found,
                supported: super::SCHEMA_VERSION,
            },
            Fail::NotFound(what) => StoreError::NotFound(what),
            Fail::Damaged(what) => StoreError::Damaged { path, what },
            Fail::NotAStore(what) => StoreError::NotAStore { path, what },
            Fail::Open(message) => StoreError::Open { path, message },
            Fail::Permission(e) => {
                let dir = shell_word(path.parent().unwrap_or(Path::new(".")));
                // EPERM rather than EACCES: an attribute (immutable, append-only) refuses
                // even its owner.
                let attributes = if e.raw_os_error() == Some(libc::EPERM) {
                    format!(", and its attributes (lsattr {})", shell_word(&path))
                } else {
                    String::new()
                };
                StoreError::Open {
                    message: format!(
                        "{e} — evolve needs to read and write it and its directory: check \
                         their owner and mode (ls -la {dir}; they should be yours){attributes}"
                    ),
                    path,
                }
            }
        }
    }
}

/// Maps redb's error to ours: damage → `Corrupt`, a held lock → `Open` (with the hint
/// that another evolve may be running), the rest → `Io` with redb's own words (which
/// carry the OS message, e.g. "No space left on device").
fn db_error(path: PathBuf, e: redb::Error) -> StoreError {
    match e {
        redb::Error::Corrupted(detail) => StoreError::Corrupt {
            path,
            message: format!("the file is damaged ({detail})"),
        },
        redb::Error::TableTypeMismatch { .. }
        | redb::Error::TableDoesNotExist(_)
        | redb::Error::TableIsMultimap(_)
        | redb::Error::TableIsNotMultimap(_) => StoreError::Corrupt {
            path,
            message: format!("the tables are not the ones evolve writes ({e})"),
        },
        redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch => StoreError::Open {
            path,
            message: IN_USE.to_string(),
        },
        redb::Error::UpgradeRequired(v) => StoreError::Open {
            path,
            message: format!(
                "the file uses redb file format {v}, which this evolve cannot read — open \
                 it with the evolve that wrote it and `evolve memory export` its memories"
            ),
        },
        redb::Error::ValueTooLarge(n) => StoreError::Io {
            path,
            message: format!("a record of {n} bytes is larger than the store accepts"),
        },
        other => StoreError::Io {
            path,
            message: other.to_string(),
        },
    }
}

impl super::StoreError {
    /// The file is locked by another process (another evolve); waiting may help.
    pub fn is_locked(&self) -> bool {
        matches!(self, super::StoreError::Open { message, .. } if message == IN_USE)
    }
}

/// The message for a file held by another process.
pub(super) const IN_USE: &str = "it is locked by another process — is another evolve \
     running (`evolve serve`, `evolve chat`)? Stop it or wait for it to finish, then retry";

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for Fail {
            fn from(e: $t) -> Self {
                Fail::Db(e.into())
            }
        }
    )*};
}

from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_say_what_to_do() {
        let p = Path::new("/x/evolve.redb");
        let table: [(StoreError, &[&str]); 8] = [
            (
                Fail::Db(redb::Error::DatabaseAlreadyOpen).at(p),
                &["/x/evolve.redb", "another evolve"],
            ),
            (
                Fail::Db(redb::Error::Io(std::io::Error::other(
                    "No space left on device",
                )))
                .at(p),
                &["/x/evolve.redb", "No space left", "disk space"],
            ),
            (
                Fail::Corrupt {
                    table: "memories",
                    key: "12".into(),
                    detail: "expected value".into(),
                }
                .at(p),
                &["/x/evolve.redb", "`memories`", "key 12"],
            ),
            (
                Fail::TooNew(7).at(p),
                &["/x/evolve.redb", "7", "upgrade evolve"],
            ),
            (
                Fail::NotFound("no memory #3".into()).at(p),
                &["no memory #3"],
            ),
            (
                Fail::Damaged("it is empty (0 bytes)".into()).at(p),
                &[
                    "the store /x/evolve.redb is damaged: it is empty",
                    "mv /x/evolve.redb /x/evolve.redb.damaged",
                    "run again to start a new one, or restore a backup",
                ],
            ),
            (
                Fail::NotAStore("it is a directory".into()).at(p),
                &[
                    "/x/evolve.redb is not an evolve store: it is a directory",
                    "mv ",
                ],
            ),
            (
                Fail::Permission(std::io::Error::from_raw_os_error(libc::EACCES)).at(p),
                &["cannot open the store /x/evolve.redb", "ls -la /x"],
            ),
        ];
        for (e, needles) in table {
            let text = e.to_string();
            for n in needles {
                assert!(text.contains(n), "{text:?} lacks {n:?}");
            }
        }
    }

    #[test]
    fn the_move_aside_command_can_be_pasted_into_a_shell() {
        for (path, word) in [
            (
                "/home/me/.evolve/evolve.redb",
                "/home/me/.evolve/evolve.redb",
            ),
            (
                "/home/me/my data/evolve.redb",
                "'/home/me/my data/evolve.redb'",
            ),
            ("/tmp/it's/evolve.redb", "'/tmp/it'\\''s/evolve.redb'"),
        ] {
            assert_eq!(shell_word(Path::new(path)), word);
        }
    }
}
