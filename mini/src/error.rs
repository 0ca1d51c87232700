//! The shell's error type: every message says what went wrong and what to do.

use std::fmt;
use std::path::PathBuf;

/// Everything that can stop a command.
#[derive(Debug)]
pub enum Error {
    /// The command line was wrong (exit code 2).
    Usage(String),
    /// A file could not be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file was read but its contents are not what the command needs (exit code 2).
    Invalid { path: PathBuf, message: String },
    /// Writing the output failed (e.g. a closed pipe).
    Output(std::io::Error),
}

impl Error {
    /// The process exit code for this error (DESIGN.md: 2 = usage or configuration error,
    /// 1 = anything else).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Invalid { .. } => 2,
            Error::Read { .. } | Error::Output(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m} (see `evolve --help`)"),
            Error::Read { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Error::Invalid { path, message } => write!(f, "{}: {message}", path.display()),
            Error::Output(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Output(e)
    }
}
