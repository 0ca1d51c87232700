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
    /// An input or output failed where no file is named: writing the output (a closed
    /// pipe), reading the standard input or the terminal. The I/O error is kept as the
    /// cause; errors about a file use [`Error::Read`] or their own variant instead.
    Io(std::io::Error),
    /// The configuration cannot be used (exit code 2; so is a model server that refuses
    /// the key, the URL or the model name).
    Config(crate::config::ConfigError),
    /// The store cannot be opened, read or written.
    Store(crate::store::StoreError),
    /// The model failed; exit code 3 when it could not be reached or kept failing.
    Model(crate::llm::LlmError),
    /// A headless run needed a tool call that requires a person (exit code 4). The
    /// answer so far has been printed; the message lists what was refused.
    NeedsPerson(String),
    /// Anything else that stopped the command, said plainly.
    Other(String),
    /// A failure a running `evolve serve` reported for this command, with the exit code
    /// the same failure has when the command runs by itself.
    Remote(u8, String),
}

impl Error {
    /// The process exit code for this error (ARCHITECTURE.md § Permission levels: 2 = usage or configuration error,
    /// 1 = anything else).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Invalid { .. } => 2,
            Error::Config(_) => 2,
            Error::Model(e) if e.is_configuration() => 2,
            Error::Model(e) if e.is_unreachable() => 3,
            Error::NeedsPerson(_) => 4,
            Error::Remote(code, _) => *code,
            Error::Read { .. }
            | Error::Io(_)
            | Error::Store(_)
            | Error::Model(_)
            | Error::Other(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m} (see `evolve --help`)"),
            Error::Read { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Error::Invalid { path, message } => write!(f, "{}: {message}", path.display()),
            Error::Io(e) => write!(f, "input or output failed: {e}"),
            Error::Config(e) => write!(f, "{e}"),
            Error::Store(e) => write!(f, "{e}"),
            Error::Model(e) => write!(f, "{e}"),
            Error::NeedsPerson(m) => write!(f, "{m}"),
            Error::Other(m) | Error::Remote(_, m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {
    /// The error this one wraps, for whoever wants the chain (the message already
    /// includes its text).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read { source, .. } => Some(source),
            Error::Io(e) => Some(e),
            Error::Config(e) => Some(e),
            Error::Store(e) => Some(e),
            Error::Model(e) => Some(e),
            Error::Usage(_)
            | Error::Invalid { .. }
            | Error::NeedsPerson(_)
            | Error::Other(_)
            | Error::Remote(..) => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<crate::config::ConfigError> for Error {
    fn from(e: crate::config::ConfigError) -> Self {
        Error::Config(e)
    }
}

impl From<crate::store::StoreError> for Error {
    fn from(e: crate::store::StoreError) -> Self {
        Error::Store(e)
    }
}

impl From<crate::llm::LlmError> for Error {
    fn from(e: crate::llm::LlmError) -> Self {
        Error::Model(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn wrapped_errors_are_the_source_and_io_errors_are_not_called_output() {
        let io = || std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = Error::from(io());
        assert_eq!(e.to_string(), "input or output failed: denied");
        assert_eq!(
            e.source().map(ToString::to_string).as_deref(),
            Some("denied")
        );
        let read = Error::Read {
            path: PathBuf::from("/x"),
            source: io(),
        };
        assert!(read.source().is_some());
        let store = Error::from(crate::store::StoreError::NotFound("no memory #3".into()));
        assert_eq!(
            store.source().map(ToString::to_string).as_deref(),
            Some("no memory #3")
        );
        assert!(Error::Usage("bad".into()).source().is_none());
    }
}
