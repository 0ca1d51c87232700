//! The settings of the model client — which server, which models, how long to wait,
//! how much to accept — with the defaults and the reasons for them. `config` reads them
//! from `[model]` and the environment and checks them; the client only takes them.

use std::path::PathBuf;
use std::time::Duration;

use crate::secret::Secret;

/// The local server tried when nothing is configured (Ollama's OpenAI-compatible API).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";

/// The main model's name when none is configured. Single-model servers (llama.cpp's
/// `llama-server`, llama-cpp-python, vLLM serving one model) answer whatever name is
/// sent, so a bare local server works with no configuration; Ollama and cloud APIs need
/// a real name (`EVOLVE_MODEL`, `[model] main`), and `evolve doctor` lists theirs.
pub const DEFAULT_MODEL: &str = "default";

/// `[model] max_answer_bytes` by default: 1 MiB. The longest answers real models give
/// are a few hundred KB (an output window of 128k tokens is about 512 KiB of English
/// text, 384 KiB of Chinese), so 1 MiB cuts no real answer, while an answer costs a few
/// MiB of memory at most however much a server sends.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The range `[model] max_answer_bytes` accepts: from 4 KiB (a page of text) up to the
/// 16 MiB that was the fixed limit on a model's body before the setting existed.
pub const MAX_ANSWER_BYTES_RANGE: std::ops::RangeInclusive<usize> = 4 * 1024..=16 * 1024 * 1024;

/// Timeouts of one model endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect: Duration,
    /// From the request sent to the first byte of the response (models think first).
    pub first_byte: Duration,
    /// Longest silence between two chunks of a stream (`timeout_per_read`).
    pub per_read: Duration,
    /// Cap on a whole call, streamed or not.
    pub overall: Duration,
}

impl Default for Timeouts {
    /// 10 s to connect (a local or cloud server answers a TCP/TLS handshake in well
    /// under a second; 10 s rides out a slow network), 120 s to the first byte (a local
    /// model on a Pi can think that long before its first token), 60 s of silence
    /// inside a stream, 300 s for a whole non-streaming answer.
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            per_read: Duration::from_secs(60),
            overall: Duration::from_secs(600),
        }
    }
}

/// Which model server and models to use.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Base URL ending before `/chat/completions`, e.g. `https://host/v1`. No trailing `/`.
    pub base_url: String,
    /// True when `base_url` is [`DEFAULT_BASE_URL`] because nothing was configured: the
    /// error for an unreachable server then says what to set.
    pub base_url_is_default: bool,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<Secret>,
    /// The main model (answers, tool planning).
    pub main: String,
    /// The cheap model (extraction, evaluation, reflection, summaries); = `main` when unset.
    pub cheap: String,
    /// The embedding model (`/v1/embeddings`) memory maintenance finds duplicates with;
    /// none: duplicates are found by keywords only.
    pub embedding_model: Option<String>,
    /// The speech-to-text model and server voice notes are transcribed with
    /// (`[model] transcription_model`); none: voice notes are declined with a note.
    pub transcription: Option<Transcription>,
    /// The model's context window in tokens.
    pub context_window: usize,
    /// Tokens reserved for the answer (sent as `max_tokens`).
    pub reserved_output: usize,
    /// The largest answer accepted from the model, in bytes of text: content, reasoning
    /// and tool-call arguments together. Beyond it the answer is cut (with a note) and
    /// the rest is not read. Default [`DEFAULT_MAX_ANSWER_BYTES`].
    pub max_answer_bytes: usize,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retries after the first attempt on connect errors, 429 and 5xx.
    pub max_retries: u32,
    /// Stream answers where the interface streams.
    pub stream: bool,
    /// Sampling temperature for the main model (`None`: the server's default).
    pub temperature: Option<f32>,
    /// How tools are offered to the model (`tools = "auto"`, the default).
    pub tools: ToolCalling,
    /// Where `tools = "auto"` remembers the models that refused native tools, so the next
    /// process asks them in prompt mode at once (`$EVOLVE_HOME/model-tools.json`);
    /// `None`: remembered for the process only.
    pub tools_learned_file: Option<PathBuf>,
}

/// Where voice notes are transcribed: an OpenAI-compatible `/audio/transcriptions`
/// (OpenAI's `whisper-1`, a whisper.cpp server, …).
#[derive(Debug, Clone, PartialEq)]
pub struct Transcription {
    /// The model's name (`[model] transcription_model`).
    pub model: String,
    /// Ending before `/audio/transcriptions` (`transcription_base_url`, else the model
    /// server's `base_url`).
    pub base_url: String,
    /// `transcription_api_key` (or `_env`); the model's key only when the server is the
    /// model's own — a key is never sent to a server it was not given for.
    pub api_key: Option<Secret>,
}

/// How the model is offered tools (`[model] tools`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolCalling {
    /// Native tool calling; a model whose server says it does not support tools is asked
    /// again in prompt mode, and that is remembered for it.
    #[default]
    Auto,
    /// The OpenAI `tools` array only (a server that refuses it fails the turn).
    Native,
    /// The tools described in the system message and the calls read from the answer's
    /// text, for models without tool calling.
    Prompt,
    /// No tools are offered.
    Off,
}

impl ToolCalling {
    /// Every value, as written in `config.toml`.
    pub const NAMES: [&'static str; 4] = ["auto", "native", "prompt", "off"];

    /// The value as written in `config.toml`.
    pub fn name(self) -> &'static str {
        match self {
            ToolCalling::Auto => "auto",
            ToolCalling::Native => "native",
            ToolCalling::Prompt => "prompt",
            ToolCalling::Off => "off",
        }
    }

    /// The value of a `config.toml` text (trimmed, any case).
    pub fn parse(text: &str) -> Option<ToolCalling> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(ToolCalling::Auto),
            "native" => Some(ToolCalling::Native),
            "prompt" => Some(ToolCalling::Prompt),
            "off" => Some(ToolCalling::Off),
            _ => None,
        }
    }
}

impl Default for ModelConfig {
    /// The local server at [`DEFAULT_BASE_URL`] with model [`DEFAULT_MODEL`]; a context
    /// window of 8192 tokens (what small local models are commonly served with; set
    /// yours) with 1024 reserved for the answer; 2 retries; streaming on.
    fn default() -> Self {
        ModelConfig {
            base_url: DEFAULT_BASE_URL.to_string(),
            base_url_is_default: true,
            api_key: None,
            main: DEFAULT_MODEL.to_string(),
            cheap: DEFAULT_MODEL.to_string(),
            embedding_model: None,
            transcription: None,
            context_window: 8192,
            reserved_output: 1024,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            timeouts: Timeouts::default(),
            max_retries: 2,
            stream: true,
            temperature: None,
            tools: ToolCalling::Auto,
            tools_learned_file: None,
        }
    }
}
