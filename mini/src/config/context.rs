//! What checking one layer of `config.toml` needs besides the layer: the [`Context`]
//! that says where an error points (the file, the profile a key came from) and reads
//! the kinds of values every section has (paths under `$EVOLVE_HOME`, seconds,
//! fractions). `resolve.rs` and the sections it hands out (`mcp.rs`) share it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ConfigError, EnvLookup, IgnoredEnv, Origin, Origins};

/// A path starts with `~` but `$HOME` is not set; the words finish a sentence about the
/// setting ("EVOLVE_HOME starts with ~ …").
#[derive(Debug, thiserror::Error)]
#[error("starts with ~ ({text}) but HOME is not set")]
pub(super) struct TildeWithoutHome {
    text: String,
}

/// `~` and `~/…` under `$HOME`; anything else unchanged.
pub(super) fn expand_tilde(text: &str, env: EnvLookup<'_>) -> Result<PathBuf, TildeWithoutHome> {
    let rest = match text.strip_prefix('~') {
        Some("") => "",
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/'),
        _ => return Ok(PathBuf::from(text)),
    };
    match env("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(rest)),
        None => Err(TildeWithoutHome { text: text.into() }),
    }
}

/// What checking a layer needs besides the layer.
pub(super) struct Context<'a> {
    pub(super) path: &'a Path,
    pub(super) home: &'a Path,
    pub(super) env: EnvLookup<'a>,
    pub(super) origins: &'a mut Origins,
    /// The file's text, for the lines of errors found after layering.
    pub(super) text: &'a str,
    /// The active profile's name.
    pub(super) profile: &'a str,
    /// The active profile's own table when the user named it for this run: what it
    /// sets wins over the environment.
    pub(super) named: Option<&'a toml::Table>,
    /// The environment variables the named profile overrode.
    pub(super) ignored_env: &'a mut Vec<IgnoredEnv>,
}

impl Context<'_> {
    /// An error about the file as a whole, or about no one setting.
    pub(super) fn invalid(&self, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            key: None,
            message,
        }
    }

    /// An error about the setting `key` (dotted, `model.base_url`).
    pub(super) fn invalid_key(&self, key: &str, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            key: Some(key.to_string()),
            message,
        }
    }

    /// " (profile x)" when the key came from a profile, so the user edits the right table.
    pub(super) fn source_note(&self, key: &str) -> String {
        match self.origins.get(key) {
            Origin::Profile(name) | Origin::ProfileOverEnv(name, _) => {
                format!(" (from [profiles.{name}])")
            }
            _ => String::new(),
        }
    }

    /// A path setting: `~` expanded, relative paths under `$EVOLVE_HOME`.
    pub(super) fn path_setting(&self, key: &str, text: &str) -> Result<PathBuf, ConfigError> {
        if text.trim().is_empty() {
            return Err(self.invalid_key(
                key,
                format!("{key} is empty — set a path or remove the key"),
            ));
        }
        let path = expand_tilde(text, self.env)
            .map_err(|m| self.invalid_key(key, format!("{key} {m}")))?;
        Ok(if path.is_absolute() {
            path
        } else {
            self.home.join(path)
        })
    }

    /// Seconds, at least one.
    pub(super) fn seconds(
        &self,
        key: &str,
        value: Option<u64>,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        match value {
            None => Ok(default),
            Some(0) => Err(self.invalid_key(
                key,
                format!(
                    "{key} = 0{}: a timeout must be at least 1 second",
                    self.source_note(key)
                ),
            )),
            Some(s) => Ok(Duration::from_secs(s)),
        }
    }

    /// A fraction in 0..=1.
    pub(super) fn fraction(
        &self,
        key: &str,
        value: Option<f32>,
        default: f32,
    ) -> Result<f32, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
            Some(v) => Err(self.invalid_key(
                key,
                format!(
                    "{key} = {v}{} must be between 0 and 1",
                    self.source_note(key)
                ),
            )),
        }
    }
}

/// What is wrong with a base URL; the words finish a sentence about it
/// ("OPENAI_BASE_URL is `x`: must start with …").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadBaseUrl {
    #[error("must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)")]
    NoScheme,
    #[error("has no host (e.g. http://127.0.0.1:11434/v1)")]
    NoHost,
    #[error("contains a space")]
    Space,
    #[error(
        "is the full endpoint; give the base it starts with, ending before \
         /chat/completions (e.g. https://api.openai.com/v1)"
    )]
    FullEndpoint,
}

/// A base URL: `http(s)://host…`, without trailing `/`.
pub fn check_base_url(url: &str) -> Result<String, BadBaseUrl> {
    let url = url.trim().trim_end_matches('/');
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
    else {
        return Err(BadBaseUrl::NoScheme);
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(BadBaseUrl::NoHost);
    }
    if url.chars().any(char::is_whitespace) {
        return Err(BadBaseUrl::Space);
    }
    if lower.ends_with("/chat/completions") {
        return Err(BadBaseUrl::FullEndpoint);
    }
    Ok(url.to_string())
}
