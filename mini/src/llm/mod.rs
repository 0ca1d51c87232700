//! The model client: OpenAI-compatible `/chat/completions` over ureq (blocking, rustls),
//! streamed (SSE read incrementally) or not, with tools, usage accounting, timeouts and
//! bounded retries. It knows nothing of memories or permissions: it sends messages and
//! returns the assistant's message.
//!
//! Where each decision lives:
//! - [`wire`]: the request JSON (never `content: null`, optional fields the server may
//!   refuse) and the reading of completion, error and model-list bodies;
//! - [`sse`]: server-sent events, line by line, tolerant of what real servers send;
//! - [`stream`]: streamed chunks assembled into one assistant message (tool calls by
//!   index, headers repeated or not, arguments in pieces);
//! - [`retry`]: which failures are retried, how long to wait (backoff, `Retry-After`);
//! - [`transport`]: one HTTP exchange on a worker thread, so the caller can watch the
//!   cancel and the stream's idle time while the socket blocks;
//! - [`cap`]: how much of an answer is kept (`[model] max_answer_bytes`), the note a cut
//!   answer ends with;
//! - [`client`]: the call itself — attempts, retries, relaxing refused parameters, the
//!   stream → non-stream fallback, stopping at the cap — and the errors a user reads;
//! - [`modes`]: how the tools reach the model (`[model] tools`: native, described in
//!   the prompt for models without tool calling, off, or auto), and the calls a model
//!   wrote as text read into `tool_calls`; [`prompted`] writes the prompt-mode request,
//!   [`learned`] remembers the models that have no tool calling;
//! - [`transcribe`]: speech to text (`/audio/transcriptions`, `[model]
//!   transcription_model`): the multipart form, the answer's words, the errors.

mod cap;
pub mod image;
pub(crate) use cap::size as answer_size;
mod client;
pub mod diagnose;
mod failure;
mod learned;
mod modes;
pub(crate) use modes::written_as_text;
mod prompted;
mod retry;
pub mod settings;
pub mod sse;
mod stream;
pub mod transcribe;
mod transport;
mod wire;

#[cfg(test)]
mod tests;

use std::fmt;

use evolve_core::history::Message;
use serde_json::json;

use settings::ModelConfig;

use crate::cancel::Cancel;
use crate::said::{Code, Said};

/// A tool as the model sees it (`{"type":"function","function":{…}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `read_file`, `<server>__<tool>`, …
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// Which configured model to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelRole {
    /// Answers and tool planning.
    Main,
    /// Extraction, evaluation, reflection, summaries.
    Cheap,
}

/// One request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Main or cheap model.
    pub role: ModelRole,
    /// The conversation (system first). Assistant messages with tool calls are sent with
    /// `content: ""`, never `null`.
    pub messages: Vec<Message>,
    /// Tools offered; empty = no `tools` field.
    pub tools: Vec<ToolSpec>,
    /// Stream the answer (`on_delta` is called as tokens arrive).
    pub stream: bool,
    /// `max_tokens`; `None`: the configured reserved output.
    pub max_tokens: Option<u32>,
    /// `temperature`; `None`: the configured one (or the server's default).
    pub temperature: Option<f32>,
    /// Ask for a JSON object (`response_format: {"type":"json_object"}`) — only where the
    /// caller parses JSON; servers that reject it are retried without it.
    pub json: bool,
    /// `tool_choice`: `None` leaves it to the server (auto); `required`, `none`, or a
    /// tool's name to make the model call that tool (`evolve ask --tool NAME`).
    pub tool_choice: Option<String>,
    /// Tools the caller runs beyond those in `tools` (named, not described, to save
    /// room): a tool plan written as text may name them too.
    pub known_tools: Vec<String>,
}

/// Token usage reported by the server (zeros when it reports none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

impl Usage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta<'a> {
    /// Answer text.
    Content(&'a str),
    /// Reasoning text (`reasoning_content` / `reasoning`), when the server sends it.
    Reasoning(&'a str),
    /// The model started a tool call (name known).
    ToolCall { index: usize, name: &'a str },
}

/// Where `[model] max_answer_bytes` cut an answer. The text then ends with a note
/// (`[answer cut at 1 MiB: max_answer_bytes]`), and what the model sent after the cut was
/// not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerCut {
    /// In the reasoning or the text.
    Text,
    /// In the name or arguments of this tool call (its index in `tool_calls`, the last
    /// one): they are incomplete and must not run.
    ToolArguments(usize),
}

/// The assistant's reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// Role assistant; `content` (may be empty), `tool_calls`, `reasoning`.
    pub message: Message,
    /// `stop`, `length`, `tool_calls`, … as the server said.
    pub finish_reason: Option<String>,
    /// Usage of this call (retries included only once: the successful attempt).
    pub usage: Usage,
    /// The model name that answered (the request's model when the server does not say).
    pub model: String,
    /// Where the answer was cut at the cap, if it was.
    pub cut: Option<AnswerCut>,
    /// Images the server would not take, sent as a note in the text instead.
    pub images_left_out: usize,
}

/// Why no connection to the model server was made: the cause of [`LlmError::Connect`],
/// with the I/O or TLS error that said so kept as its source.
#[derive(Debug, thiserror::Error)]
pub enum Unreached {
    /// Nothing answered within the connect timeout.
    #[error("no connection within {secs} s")]
    NoConnection { secs: f32 },
    #[error("connection refused")]
    Refused,
    /// Reset, aborted or closed while the request was being sent.
    #[error("the connection was closed")]
    Closed,
    /// The server closed the connection after the request, before any answer.
    #[error("the connection closed before an answer")]
    ClosedBeforeAnswer,
    /// Any other I/O error on the way to the server.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("host not found")]
    HostNotFound,
    #[error("connection failed")]
    Failed,
    /// The URL cannot be used to connect (the text says why).
    #[error("not a usable URL ({0})")]
    BadUrl(String),
    #[error("TLS failed: {0}")]
    Tls(&'static str),
    #[error("TLS failed: {0}")]
    Rustls(#[source] Box<rustls::Error>),
}

/// Why a call failed. Every message names the URL and says what to do.
#[derive(Debug)]
pub enum LlmError {
    /// Could not connect (refused, DNS, TLS) after the retries.
    Connect {
        url: String,
        why: Unreached,
        hint: String,
    },
    /// A timeout: which phase (connect, first byte, idle stream, overall).
    Timeout { url: String, phase: &'static str },
    /// HTTP error status, with the server's own message; retried ones after the retries.
    Status {
        url: String,
        status: u16,
        message: String,
        hint: String,
    },
    /// The server answered something that is not a chat completion.
    Protocol { url: String, detail: String },
    /// The caller cancelled (Ctrl-C).
    Cancelled,
}

impl LlmError {
    /// True when the model could not be reached or kept failing (`ask` exits 3): connect
    /// errors, timeouts, and 429/5xx that outlasted the retries.
    pub fn is_configuration(&self) -> bool {
        matches!(
            self,
            LlmError::Status {
                status: 401 | 403 | 404,
                ..
            }
        )
    }

    /// True when the model could not be reached or kept failing (`ask` exits 3).
    pub fn is_unreachable(&self) -> bool {
        match self {
            LlmError::Connect { .. } | LlmError::Timeout { .. } => true,
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Protocol { .. } | LlmError::Cancelled => false,
        }
    }
}

impl LlmError {
    /// What failed, as a code with its values (see [`crate::said`]).
    pub fn said(&self) -> Said {
        match self {
            LlmError::Connect { url, why, .. } => Said::new(
                Code::ModelUnreachable,
                json!({"url": url, "why": why.to_string()}),
            ),
            LlmError::Timeout { url, phase } => {
                Said::new(Code::ModelTimeout, json!({"url": url, "phase": phase}))
            }
            LlmError::Status {
                url,
                status,
                message,
                ..
            } => Said::new(
                Code::ModelStatus,
                json!({"url": url, "status": status, "message": message}),
            ),
            LlmError::Protocol { url, detail } => {
                Said::new(Code::ModelProtocol, json!({"url": url, "detail": detail}))
            }
            LlmError::Cancelled => Said::new(Code::ModelCancelled, json!({})),
        }
    }

    /// What failed, without what to do about it: the message for a reader who fixes it
    /// elsewhere than in a shell (the web UI says what to do in its own words).
    pub fn cause(&self) -> String {
        match self {
            LlmError::Connect { url, why, .. } => {
                format!("cannot reach the model at {url}: {why}")
            }
            LlmError::Timeout { url, phase } => format!("the model at {url} timed out ({phase})"),
            LlmError::Status {
                url,
                status,
                message,
                ..
            } if !message.is_empty() => {
                format!("the model server at {url} answered HTTP {status}: {message}")
            }
            LlmError::Status { url, status, .. } => {
                format!("the model server at {url} answered HTTP {status}")
            }
            LlmError::Protocol { .. } | LlmError::Cancelled => self.to_string(),
        }
    }

    /// What to do about it (empty when nothing is said): `cause` — `hint` is the message.
    pub fn hint(&self) -> &str {
        match self {
            LlmError::Connect { hint, .. } | LlmError::Status { hint, .. } => hint,
            LlmError::Timeout { phase, .. } => timeout_hint(phase),
            LlmError::Protocol { .. } | LlmError::Cancelled => "",
        }
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlmError::Connect { url, why, hint } => {
                write!(f, "cannot reach the model at {url}: {why}")?;
                with_hint(f, hint)
            }
            LlmError::Timeout { url, phase } => {
                write!(f, "the model at {url} timed out ({phase})")?;
                with_hint(f, timeout_hint(phase))
            }
            LlmError::Status {
                url,
                status,
                message,
                hint,
            } => {
                write!(f, "the model server at {url} answered HTTP {status}")?;
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                with_hint(f, hint)
            }
            LlmError::Protocol { url, detail } => {
                write!(f, "unexpected answer from the model at {url}: {detail}")
            }
            LlmError::Cancelled => f.write_str("the request to the model was cancelled"),
        }
    }
}

fn with_hint(f: &mut fmt::Formatter<'_>, hint: &str) -> fmt::Result {
    if hint.is_empty() {
        Ok(())
    } else {
        write!(f, " — {hint}")
    }
}

/// What to do about a timeout in each phase (the phases [`transport`] reports).
fn timeout_hint(phase: &str) -> &'static str {
    match phase {
        transport::PHASE_FIRST_BYTE => {
            "the model took too long to start answering: raise the first-byte timeout in \
             config.toml, or use a smaller model or prompt"
        }
        transport::PHASE_IDLE => {
            "the stream went silent: raise the per-read timeout in config.toml if the \
             server is only slow"
        }
        transport::PHASE_OVERALL => {
            "the answer took too long: raise the overall timeout in config.toml, or stream"
        }
        _ => "check that the server is healthy",
    }
}

impl std::error::Error for LlmError {}

/// The seam between the agent and a model server; tests and the web layer may wrap it.
pub trait ChatModel: Send + Sync {
    /// One chat completion. `on_delta` sees streamed pieces (never called when not
    /// streaming). Checks `cancel` between chunks and between retries.
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError>;

    /// The configured name of a role's model.
    fn model_name(&self, role: ModelRole) -> &str;

    /// One embedding per input (`/v1/embeddings`), or `None` when no embedding model is
    /// configured (memory maintenance then compares keywords only).
    fn embed(
        &self,
        _inputs: &[String],
        _cancel: &Cancel,
    ) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
        None
    }
}

/// The OpenAI-compatible client. Cheap to share: one connection pool for every call.
pub struct Client {
    config: ModelConfig,
    agent: ureq::Agent,
    /// The first retry's backoff (500 ms; tests shorten it).
    backoff_start: std::time::Duration,
    /// The models known to have no native tool calling (`[model] tools = "auto"`).
    learned: learned::Learned,
    /// Numbers the ids of calls read from an answer's text (`call_text_N`).
    plan_ids: std::sync::atomic::AtomicU64,
    /// The server refused images once: later requests send the note at once.
    images_refused: std::sync::atomic::AtomicBool,
}

impl Client {
    /// A client for the configured endpoint (no I/O).
    pub fn new(config: ModelConfig) -> Self {
        let agent = transport::agent(&config.timeouts);
        Client {
            learned: learned::Learned::new(config.tools_learned_file.clone()),
            config,
            agent,
            backoff_start: retry::BACKOFF_START,
            plan_ids: std::sync::atomic::AtomicU64::new(0),
            images_refused: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The endpoint configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// `GET /models`: the model ids the server lists.
    pub fn list_models(&self) -> Result<Vec<String>, LlmError> {
        self.list_models_impl()
    }
}

/// Transcribes a voice note with the server `config` names (`[model]
/// transcription_model`, with the model's timeouts and retries); `None` when no
/// transcription model is configured.
pub fn transcribe(
    config: &ModelConfig,
    audio: &transcribe::Audio,
    cancel: &Cancel,
) -> Option<Result<String, transcribe::TranscribeError>> {
    let t = config.transcription.as_ref()?;
    let client = Client::new(ModelConfig {
        base_url: t.base_url.clone(),
        base_url_is_default: false,
        api_key: t.api_key.clone(),
        transcription: None,
        tools_learned_file: None,
        ..config.clone()
    });
    Some(client.transcribe_impl(&t.model, audio, cancel))
}

impl ChatModel for Client {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        self.chat_impl(req, on_delta, cancel)
    }

    fn model_name(&self, role: ModelRole) -> &str {
        match role {
            ModelRole::Main => &self.config.main,
            ModelRole::Cheap => &self.config.cheap,
        }
    }

    fn embed(&self, inputs: &[String], cancel: &Cancel) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
        self.config.embedding_model.as_ref()?;
        Some(self.embed_impl(inputs, cancel))
    }
}
