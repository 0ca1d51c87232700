//! The shell's error type: every message says what went wrong and what to do.

use std::path::PathBuf;

/// Everything that can stop a command. Callers branch on the variant (the exit code,
/// the HTTP status of the API), never on the message; the wrapped errors are the
/// [`std::error::Error::source`] of theirs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line was wrong (exit code 2).
    #[error("{0} (see `evolve --help`)")]
    Usage(String),
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error(
        "cannot write {}: {source} — check that the directory exists and is writable",
        path.display()
    )]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file was read but its contents are not what the command needs (exit code 2).
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    /// An input or output failed where no file is named: writing the output (a closed
    /// pipe), reading the standard input or the terminal. The I/O error is kept as the
    /// cause; errors about a file use [`Error::Read`] or their own variant instead.
    #[error("input or output failed: {0}")]
    Io(#[from] std::io::Error),
    /// An answer could not be encoded as JSON for the output (`what`: "the sessions").
    #[error("cannot encode the {what}: {source}")]
    Encode {
        what: &'static str,
        source: serde_json::Error,
    },
    /// A call to the operating system the command needs failed (`doing`: "start the
    /// scheduler thread"); nothing the user typed is wrong.
    #[error("cannot {doing}: {source}")]
    System {
        doing: &'static str,
        source: std::io::Error,
    },
    /// The server cannot listen on the address it was given.
    #[error("cannot listen on {addr}: {source} — is another program using the port? try --port")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    /// The configuration cannot be used (exit code 2; so is a model server that refuses
    /// the key, the URL or the model name).
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    /// The store cannot be opened, read or written.
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    /// The model failed; exit code 3 when it could not be reached or kept failing. A
    /// cancelled request is [`Error::Cancelled`] instead (the `From` below).
    #[error("{0}")]
    Model(#[source] crate::llm::LlmError),
    /// The work was cancelled before it finished: a person's Ctrl-C or Stop, a client
    /// that went away, `evolve serve` stopping. Not a failure: a stopped answer is kept
    /// as stopped, and the command exits 130 like any program stopped by Ctrl-C.
    #[error("cancelled before it finished")]
    Cancelled,
    /// A headless run needed a tool call that requires a person (exit code 4). The
    /// answer so far has been printed; the message lists what was refused.
    #[error("{0}")]
    NeedsPerson(String),
    /// The model's answer was empty: nothing to print or deliver.
    #[error(
        "the model returned an empty answer (session {session}) — try again, or check the \
         model with `evolve doctor`"
    )]
    EmptyAnswer { session: String },
    /// A scheduled task's run was skipped: a turn was already running in its session.
    #[error("a turn was running in the task's session {session}; this run was skipped")]
    SessionBusy { session: String },
    /// `evolve serve` stopped while a scheduled task's run was going.
    #[error("cancelled: evolve serve stopped during the run")]
    ServeStopped,
    /// What was asked does not fit the state it would change (answering a turn again
    /// that is not the last one, while a call waits for an answer; a name already taken,
    /// a deleted memory, a bundled skill to remove): the API's 409.
    #[error("{0}")]
    Conflict(String),
    /// A token budget is spent (`[model] daily_tokens`, a task's `budget_tokens`): the
    /// turn did not start. The API's 429.
    #[error("{message}")]
    Budget {
        message: String,
        /// Tokens used, and the limit.
        used: u64,
        limit: u64,
        /// The task whose own budget it is (`None`: the daily one).
        task: Option<u64>,
    },
    /// What the command names does not exist (a skill, a skill waiting for review); the
    /// message says where to see what there is.
    #[error("{0}")]
    NotFound(String),
    /// A folder or file could not be created, moved or removed (`doing`: "create",
    /// "remove"); `hint` says what to check (starting with " — "), or is empty.
    #[error("cannot {doing} {}: {source}{hint}", path.display())]
    Fs {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
        hint: &'static str,
    },
    /// A skill's SKILL.md exists but does not load (`why`: what is wrong with it).
    #[error(
        "{} cannot be used ({why}); fix it, or remove it with `evolve skills rm {name}`",
        path.display()
    )]
    BrokenSkill {
        name: String,
        path: PathBuf,
        why: String,
    },
    /// The store is held by another evolve that does not lend it (a chat, another
    /// serve).
    #[error(
        "the store {} is in use by another evolve (a chat, or another serve); stop it first",
        .0.display()
    )]
    StoreInUse(PathBuf),
    /// Some of what the command checks or runs failed (`doctor`'s checks, the servers
    /// `mcp tools` lists, the channels `channels test` tries, a step of memory
    /// maintenance); what worked was printed, the message says what did not.
    #[error("{0}")]
    PartlyFailed(String),
    /// `evolve prompt evolve` stored nothing: there was nothing to learn from, or the
    /// model's new prompt was refused.
    #[error("{0}")]
    PromptNotEvolved(String),
    /// Logging in to an MCP server (`server`) failed.
    #[error("{}", source.about(server))]
    Login {
        server: String,
        source: crate::mcp::oauth::LoginError,
    },
    /// A rule of the program itself was broken (a turn that ended without an action):
    /// nothing the user did; the message asks for a report.
    #[error("internal error: {0} — please report it")]
    Internal(&'static str),
    /// A running `evolve serve` that the command goes through cannot be reached, read
    /// or is missing where one is needed.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// A failure a running `evolve serve` reported for this command, with the exit code
    /// the same failure has when the command runs by itself.
    #[error("{1}")]
    Remote(u8, String),
}

/// Why a running server's token cannot be had; the words finish a sentence about the
/// server ("…, but its token file … is empty").
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("its token file {} is empty", .0.display())]
    Empty(PathBuf),
    #[error("its token {} cannot be read: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why a command that goes through the running server cannot.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No server runs for this home (a command that needs one says so).
    #[error(
        "no evolve serve is running for {} — start one with `evolve serve` \
         · 没有正在运行的 evolve serve：先运行 `evolve serve`",
        .0.display()
    )]
    NotRunning(PathBuf),
    /// One runs, and holds the store, but its token cannot be read.
    #[error("a running evolve serve (pid {pid}) holds the store, but {source}")]
    Token { pid: u32, source: TokenError },
    /// The request was sent and failed before an answer came.
    #[error("the running evolve serve at {at} failed: {source} — is it still running?")]
    Request {
        at: String,
        source: Box<ureq::Error>,
    },
    /// The answer came but could not be read.
    #[error("cannot read the answer of evolve serve: {0}")]
    Answer(#[source] Box<ureq::Error>),
    /// The store is held by the server, which did not lend it.
    #[error(
        "the store {} is held by evolve serve (pid {pid}, http://{addr}), which did not \
         lend it ({source}): use its web UI or API, `evolve ask` (which goes through it), \
         or stop it first",
        store.display()
    )]
    NotLent {
        store: PathBuf,
        pid: u32,
        addr: std::net::SocketAddr,
        source: LendError,
    },
}

/// Why a running server did not lend its store; the words finish a sentence about the
/// server ("…, which did not lend it (cannot connect to it: …)").
#[derive(Debug, thiserror::Error)]
pub enum LendError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("cannot connect to it: {0}")]
    Connect(#[source] std::io::Error),
    #[error("cannot send it the request: {0}")]
    Send(#[source] std::io::Error),
    #[error("no answer from it: {0}")]
    Receive(#[source] std::io::Error),
    #[error("it closed the connection without an answer")]
    Closed,
    #[error("its answer is not HTTP")]
    NotHttp,
    /// It answered, but not 200 (a server without the route answers 404).
    #[error("it answered {status}: {message}")]
    Refused { status: u16, message: String },
}

impl From<crate::llm::LlmError> for Error {
    /// A model error, except a cancelled request: that one is the person's (or the
    /// server's) cancel, which callers tell apart from a failing model.
    fn from(e: crate::llm::LlmError) -> Error {
        match e {
            crate::llm::LlmError::Cancelled => Error::Cancelled,
            e => Error::Model(e),
        }
    }
}

impl Error {
    /// The process exit code for this error: 2 = usage or configuration error, 3 = the
    /// model could not be reached, 4 = a call needed a person, 130 = cancelled (Ctrl-C),
    /// 1 = anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Invalid { .. } => 2,
            Error::Config(_) => 2,
            Error::Model(e) if e.is_configuration() => 2,
            Error::Model(e) if e.is_unreachable() => 3,
            Error::NeedsPerson(_) => 4,
            Error::Cancelled => 130,
            Error::Remote(code, _) => *code,
            Error::Read { .. }
            | Error::Write { .. }
            | Error::Io(_)
            | Error::Listen { .. }
            | Error::Encode { .. }
            | Error::System { .. }
            | Error::Store(_)
            | Error::Model(_)
            | Error::Conflict(_)
            | Error::Budget { .. }
            | Error::EmptyAnswer { .. }
            | Error::SessionBusy { .. }
            | Error::ServeStopped
            | Error::Serve(_)
            | Error::NotFound(_)
            | Error::Fs { .. }
            | Error::BrokenSkill { .. }
            | Error::StoreInUse(_)
            | Error::PartlyFailed(_)
            | Error::PromptNotEvolved(_)
            | Error::Login { .. }
            | Error::Internal(_) => 1,
        }
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

    #[test]
    fn a_cancelled_model_request_is_a_cancel_not_a_model_failure() {
        use crate::llm::LlmError;
        let cancel = Error::from(LlmError::Cancelled);
        assert!(matches!(cancel, Error::Cancelled), "{cancel:?}");
        assert_eq!(cancel.exit_code(), 130);
        let cases = [
            (
                LlmError::Timeout {
                    url: "http://127.0.0.1:1/v1".into(),
                    phase: "connect",
                },
                3,
            ),
            (
                LlmError::Status {
                    url: "http://127.0.0.1:1/v1".into(),
                    status: 401,
                    message: String::new(),
                    hint: String::new(),
                },
                2,
            ),
            (
                LlmError::Protocol {
                    url: "http://127.0.0.1:1/v1".into(),
                    detail: "not JSON".into(),
                },
                1,
            ),
        ];
        for (e, code) in cases {
            let said = e.to_string();
            let e = Error::from(e);
            assert!(matches!(e, Error::Model(_)), "{e:?}");
            assert_eq!(e.exit_code(), code, "{e}");
            assert_eq!(e.to_string(), said);
            assert!(e.source().is_some());
        }
    }
}
