//! The file format of `config.toml`, as written: every key optional, unknown keys
//! rejected (`deny_unknown_fields`), no defaults and no checks beyond types. Turning it
//! into a [`super::Config`] is `resolve.rs`'s job (codex style: a raw type, then a
//! validated one).

use std::collections::BTreeMap;

use evolve_core::history::HistoryConfig;
use evolve_core::memory::MemoryConfig;
use evolve_core::permission::{Level, Limits, PermissionConfig};
use serde::Deserialize;

/// One layer of settings: the whole file (whose top level alone may name the active
/// `profile` and define `profiles`), one profile, or the top level with a profile merged
/// over it. One type for all three keeps a single copy of the parsing code in the binary
/// (two near-identical derived types cost about 18 KB); a profile that sets `profile` or
/// `profiles` itself is refused after parsing ([`RawLayer::nested_profile`]).
///
/// The file is parsed to check it whole (unknown keys, types, with their lines); the
/// values themselves are read from the merged table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLayer {
    /// Top level only: the profile used when none is named.
    pub profile: Option<String>,
    /// Top level only: the profiles.
    pub profiles: Option<BTreeMap<String, RawLayer>>,
    pub workspace: Option<String>,
    pub log: Option<String>,
    pub model: Option<RawModel>,
    pub agent: Option<RawAgent>,
    pub tools: Option<RawTools>,
    pub text: Option<RawText>,
    pub memory: Option<MemoryConfig>,
    pub history: Option<HistoryConfig>,
    pub permission: Option<PermissionConfig>,
    pub limits: Option<Limits>,
    pub mcp: Option<RawMcp>,
    pub scheduler: Option<RawScheduler>,
    pub channels: Option<RawChannels>,
}

impl RawLayer {
    /// The first profile that sets `profile` or `profiles` inside itself (only the top
    /// level may).
    pub fn nested_profile(&self) -> Option<&str> {
        self.profiles.iter().flatten().find_map(|(name, layer)| {
            (layer.profile.is_some() || layer.profiles.is_some()).then_some(name.as_str())
        })
    }
}

/// `[model]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub api_key_env: Option<String>,
    pub main: Option<String>,
    pub cheap: Option<String>,
    pub embedding_model: Option<String>,
    pub transcription_model: Option<String>,
    pub transcription_base_url: Option<String>,
    pub transcription_api_key: Option<String>,
    pub transcription_api_key_env: Option<String>,
    pub context_window: Option<usize>,
    pub reserved_output: Option<usize>,
    pub max_answer_bytes: Option<usize>,
    pub stream: Option<bool>,
    pub temperature: Option<f32>,
    pub tools: Option<String>,
    pub max_retries: Option<u32>,
    pub timeouts: Option<RawTimeouts>,
    pub daily_tokens: Option<u64>,
    pub price_in_per_mtok: Option<f64>,
    pub price_out_per_mtok: Option<f64>,
    pub cheap_price_in_per_mtok: Option<f64>,
    pub cheap_price_out_per_mtok: Option<f64>,
}

/// `[model.timeouts]`, in seconds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTimeouts {
    pub connect: Option<u64>,
    pub first_byte: Option<u64>,
    pub per_read: Option<u64>,
    pub overall: Option<u64>,
}

/// `[agent]`; durations in seconds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    pub max_steps: Option<usize>,
    pub reflect_every: Option<u32>,
    pub reflect_below: Option<f32>,
    pub style_above: Option<f32>,
    pub crystallize_above: Option<f32>,
    pub style_notes_max: Option<usize>,
    pub background_wait: Option<u64>,
    pub learn: Option<bool>,
    pub tool_schemas: Option<usize>,
    pub turn_line: Option<bool>,
    pub titles: Option<bool>,
    pub tool_chain: Option<bool>,
    pub subtasks: Option<usize>,
    pub subtask_parallel: Option<usize>,
}

/// `[tools]`; durations in seconds, sizes in bytes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    pub shell_timeout: Option<u64>,
    pub shell_idle_stop: Option<u64>,
    pub output_cap: Option<usize>,
    pub http_allow_private: Option<bool>,
    pub http_timeout: Option<u64>,
    pub http_hosts: Option<Vec<String>>,
    pub levels: Option<BTreeMap<String, Level>>,
}

/// `[text]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawText {
    pub dict_path: Option<String>,
}

/// `[scheduler]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScheduler {
    pub time_zone: Option<String>,
}

/// `[mcp]`; durations in seconds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    pub timeout_secs: Option<u64>,
    pub servers: Option<BTreeMap<String, RawServer>>,
}

/// `[mcp.servers.NAME]`: a program (`command`, `args`, `env`, `cwd`) or an HTTP
/// endpoint (`url`, `headers`, `bearer_token` / `bearer_token_env`, the `oauth_client_*`
/// of its login), and what applies to both.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub bearer_token: Option<String>,
    pub bearer_token_env: Option<String>,
    pub oauth_client_id: Option<String>,
    pub oauth_client_secret: Option<String>,
    pub oauth_client_secret_env: Option<String>,
    pub oauth_client_metadata_url: Option<String>,
    pub timeout_secs: Option<u64>,
    pub trusted: Option<bool>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    pub disabled: Option<bool>,
    pub roots: Option<Vec<String>>,
    pub sandbox: Option<String>,
}

/// `[channels]`: the chat platforms `serve` answers on.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawChannels {
    pub telegram: Option<RawTelegram>,
    pub feishu: Option<RawFeishu>,
    pub dingtalk: Option<RawDingtalk>,
}

/// `[channels.feishu]` (Feishu or Lark).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeishu {
    pub app_id: Option<String>,
    pub app_secret: Option<String>,
    pub app_secret_env: Option<String>,
    pub base_url: Option<String>,
    pub owner: Option<String>,
    pub enabled: Option<bool>,
}

/// `[channels.dingtalk]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDingtalk {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub client_secret_env: Option<String>,
    pub base_url: Option<String>,
    pub owner: Option<String>,
    pub enabled: Option<bool>,
}

/// `[channels.telegram]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelegram {
    pub token: Option<String>,
    pub token_env: Option<String>,
    pub base_url: Option<String>,
    pub owner: Option<i64>,
    pub enabled: Option<bool>,
    pub poll_secs: Option<u64>,
}
