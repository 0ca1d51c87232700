//! `[channels]`: the chat platforms `evolve serve` answers on, checked.
//!
//! `[channels.telegram]` takes the bot token from the file (`token`, kept 0600 like an
//! API key) or from an environment variable (`token_env`), the Bot API address
//! (`base_url`, default [`TELEGRAM_API`]: a self-hosted Bot API server, or a loopback
//! fake in tests), the owner's Telegram user id (`owner`: paired from the start), and
//! how long one long poll waits (`poll_secs`). A token that cannot be found does not
//! stop the other commands: the channel is then not started, and `serve` and `channels
//! list` say why.
//!
//! What it leaves to others: who may talk (`crate::channels`, pairing in the store) and
//! the Bot API itself (`crate::channels::telegram`).

use serde_json::{json, Value};

use super::context::check_base_url;
use super::context::Context;
use super::file::{RawChannels, RawTelegram};
use super::ConfigError;
use crate::secret::Secret;

/// Telegram's own Bot API server.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

/// 25 s: a long poll well under the 60 s that proxies and NAT boxes commonly cut idle
/// connections at, so a quiet bot still costs one request every 25 s.
const DEFAULT_POLL_SECS: u64 = 25;

/// Every channel of the file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChannelsConfig {
    /// `[channels.telegram]`, when the file has it.
    pub telegram: Option<TelegramConfig>,
    /// A token is written in the file (it must then be 0600).
    pub secrets_in_file: bool,
}

/// `[channels.telegram]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct TelegramConfig {
    /// The bot token; `None` when `token_env` names an unset variable (see `problem`).
    pub token: Option<Secret>,
    /// Why the channel cannot start, said where the user looks (`serve`, `channels
    /// list`, `doctor`).
    pub problem: Option<String>,
    /// The Bot API address, without a trailing `/`.
    pub base_url: String,
    /// The owner's Telegram user id: paired without a code.
    pub owner: Option<i64>,
    /// `enabled = false` keeps the settings but does not start the channel.
    pub enabled: bool,
    /// How long one `getUpdates` waits for news.
    pub poll_secs: u64,
}

impl ChannelsConfig {
    /// What `config show` prints: the token masked, never the value.
    pub fn to_json(&self) -> Value {
        match &self.telegram {
            None => json!({}),
            Some(t) => json!({
                "telegram": {
                    "token": t.token.as_ref().map(Secret::masked),
                    "problem": t.problem,
                    "base_url": crate::secret::display_url(&t.base_url),
                    "owner": t.owner,
                    "enabled": t.enabled,
                    "poll_secs": t.poll_secs,
                }
            }),
        }
    }
}

pub(super) fn resolve_channels(
    raw: RawChannels,
    ctx: &Context<'_>,
) -> Result<ChannelsConfig, ConfigError> {
    let RawChannels { telegram } = raw;
    let mut out = ChannelsConfig::default();
    if let Some(t) = telegram {
        let (config, in_file) = resolve_telegram(t, ctx)?;
        out.telegram = Some(config);
        out.secrets_in_file |= in_file;
    }
    Ok(out)
}

fn resolve_telegram(
    raw: RawTelegram,
    ctx: &Context<'_>,
) -> Result<(TelegramConfig, bool), ConfigError> {
    let RawTelegram {
        token,
        token_env,
        base_url,
        owner,
        enabled,
        poll_secs,
    } = raw;
    let mut problem = None;
    let (token, in_file) = match (token, token_env) {
        (Some(_), Some(_)) => {
            return Err(ctx.invalid_key(
                "channels.telegram.token",
                "channels.telegram.token and channels.telegram.token_env are both set — \
                 keep one"
                    .to_string(),
            ))
        }
        (Some(t), None) => {
            let t = t.trim().to_string();
            if t.is_empty() {
                return Err(ctx.invalid_key(
                    "channels.telegram.token",
                    "channels.telegram.token is empty — paste the token @BotFather gave, \
                     or use token_env"
                        .to_string(),
                ));
            }
            (Some(Secret::new(t)), true)
        }
        (None, Some(var)) => {
            let var = var.trim().to_string();
            let value = (ctx.env)(&var)
                .and_then(|v| v.into_string().ok())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty());
            if value.is_none() {
                problem = Some(format!(
                    "channels.telegram.token_env = \"{var}\" names an environment variable \
                     that is not set — export {var}=… before `evolve serve`"
                ));
            }
            (value.map(Secret::new), false)
        }
        (None, None) => {
            problem = Some(
                "channels.telegram has no token — set token = \"…\" (from @BotFather) or \
                 token_env = \"VAR\""
                    .to_string(),
            );
            (None, false)
        }
    };
    if let Some(t) = &token {
        // The token goes into the path of every request: `/bot<token>/method`.
        if t.expose().contains(['/', '?', '#', ' ']) {
            return Err(ctx.invalid_key(
                "channels.telegram.token",
                "channels.telegram.token is not a bot token (it holds /, ?, # or a space) \
                 — it looks like 123456:ABC-DEF…"
                    .to_string(),
            ));
        }
    }
    let base_url = match base_url {
        Some(url) => check_base_url(&url).map_err(|m| {
            ctx.invalid_key(
                "channels.telegram.base_url",
                format!(
                    "channels.telegram.base_url = \"{}\": {m}",
                    crate::secret::display_url(&url)
                ),
            )
        })?,
        None => TELEGRAM_API.to_string(),
    };
    let poll_secs = poll_secs.unwrap_or(DEFAULT_POLL_SECS);
    if poll_secs > 50 {
        return Err(ctx.invalid_key(
            "channels.telegram.poll_secs",
            format!(
                "channels.telegram.poll_secs = {poll_secs}: at most 50 (a longer wait is cut by \
             proxies and looks like an outage)"
            ),
        ));
    }
    Ok((
        TelegramConfig {
            token,
            problem,
            base_url,
            owner,
            enabled: enabled.unwrap_or(true),
            poll_secs,
        },
        in_file,
    ))
}
