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
//! `[channels.feishu]` takes the app's `app_id` and `app_secret` (or `app_secret_env`)
//! and `base_url` ([`FEISHU_API`], or `https://open.larksuite.com` for Lark); `[channels.dingtalk]` the
//! robot app's `client_id` and `client_secret` (or `client_secret_env`) and `base_url`
//! ([`DINGTALK_API`]). Their `owner` is the owner's user id on the platform (Feishu's
//! `open_id`, DingTalk's `senderStaffId`), paired from the start.
//!
//! What it leaves to others: who may talk (`crate::channels`, pairing in the store) and
//! the Bot API itself (`crate::channels::telegram`).

use serde_json::{json, Value};

use super::context::check_base_url;
use super::context::Context;
use super::file::{RawChannels, RawDingtalk, RawFeishu, RawTelegram};
use super::ConfigError;
use crate::secret::Secret;

/// Telegram's own Bot API server.
pub const TELEGRAM_API: &str = "https://api.telegram.org";

/// Feishu's open platform (Lark's, outside China, is `https://open.larksuite.com`).
pub const FEISHU_API: &str = "https://open.feishu.cn";
/// DingTalk's open API.
pub const DINGTALK_API: &str = "https://api.dingtalk.com";

/// 25 s: a long poll well under the 60 s that proxies and NAT boxes commonly cut idle
/// connections at, so a quiet bot still costs one request every 25 s.
const DEFAULT_POLL_SECS: u64 = 25;

/// Every channel of the file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChannelsConfig {
    /// `[channels.telegram]`, when the file has it.
    pub telegram: Option<TelegramConfig>,
    /// `[channels.feishu]`.
    pub feishu: Option<FeishuConfig>,
    /// `[channels.dingtalk]`.
    pub dingtalk: Option<DingtalkConfig>,
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

/// `[channels.feishu]` or `[channels.dingtalk]`, checked: an app's id and secret.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// The app's id (Feishu's `app_id`, DingTalk's `client_id`).
    pub id: String,
    /// The app's secret; `None` when it cannot be found (see `problem`).
    pub secret: Option<Secret>,
    /// Why the channel cannot start.
    pub problem: Option<String>,
    /// The API address, without a trailing `/`.
    pub base_url: String,
    /// The owner's user id on the platform: paired without a code.
    pub owner: Option<String>,
    /// `enabled = false` keeps the settings but does not start the channel.
    pub enabled: bool,
}

/// `[channels.feishu]`.
pub type FeishuConfig = AppConfig;
/// `[channels.dingtalk]`.
pub type DingtalkConfig = AppConfig;

impl AppConfig {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "secret": self.secret.as_ref().map(Secret::masked),
            "problem": self.problem,
            "base_url": crate::secret::display_url(&self.base_url),
            "owner": self.owner,
            "enabled": self.enabled,
        })
    }
}

impl ChannelsConfig {
    /// What `config show` prints: the secrets masked, never the values.
    pub fn to_json(&self) -> Value {
        let mut out = json!({});
        if let Some(t) = &self.telegram {
            out["telegram"] = json!({
                "token": t.token.as_ref().map(Secret::masked),
                "problem": t.problem,
                "base_url": crate::secret::display_url(&t.base_url),
                "owner": t.owner,
                "enabled": t.enabled,
                "poll_secs": t.poll_secs,
            });
        }
        if let Some(f) = &self.feishu {
            out["feishu"] = f.to_json();
        }
        if let Some(d) = &self.dingtalk {
            out["dingtalk"] = d.to_json();
        }
        out
    }
}

pub(super) fn resolve_channels(
    raw: RawChannels,
    ctx: &Context<'_>,
) -> Result<ChannelsConfig, ConfigError> {
    let RawChannels {
        telegram,
        feishu,
        dingtalk,
    } = raw;
    let mut out = ChannelsConfig::default();
    if let Some(t) = telegram {
        let (config, in_file) = resolve_telegram(t, ctx)?;
        out.telegram = Some(config);
        out.secrets_in_file |= in_file;
    }
    if let Some(f) = feishu {
        let RawFeishu {
            app_id,
            app_secret,
            app_secret_env,
            base_url,
            owner,
            enabled,
        } = f;
        let raw = RawApp {
            table: "feishu",
            id_key: "app_id",
            secret_key: "app_secret",
            id: app_id,
            secret: app_secret,
            secret_env: app_secret_env,
            base_url,
            default_url: FEISHU_API,
            owner,
            enabled,
        };
        let (config, in_file) = resolve_app(raw, ctx)?;
        out.feishu = Some(config);
        out.secrets_in_file |= in_file;
    }
    if let Some(d) = dingtalk {
        let RawDingtalk {
            client_id,
            client_secret,
            client_secret_env,
            base_url,
            owner,
            enabled,
        } = d;
        let raw = RawApp {
            table: "dingtalk",
            id_key: "client_id",
            secret_key: "client_secret",
            id: client_id,
            secret: client_secret,
            secret_env: client_secret_env,
            base_url,
            default_url: DINGTALK_API,
            owner,
            enabled,
        };
        let (config, in_file) = resolve_app(raw, ctx)?;
        out.dingtalk = Some(config);
        out.secrets_in_file |= in_file;
    }
    Ok(out)
}

/// An app's section as the file has it, with the names of its keys.
struct RawApp {
    table: &'static str,
    id_key: &'static str,
    secret_key: &'static str,
    id: Option<String>,
    secret: Option<String>,
    secret_env: Option<String>,
    base_url: Option<String>,
    default_url: &'static str,
    owner: Option<String>,
    enabled: Option<bool>,
}

/// A secret from the file (`in_file`) or from the variable `env` names; `problem` says
/// why there is none.
fn resolve_secret(
    name: &str,
    value: Option<String>,
    env: Option<String>,
    ctx: &Context<'_>,
    problem: &mut Option<String>,
) -> Result<(Option<Secret>, bool), ConfigError> {
    match (value, env) {
        (Some(_), Some(_)) => {
            Err(ctx.invalid(format!("{name} and {name}_env are both set — keep one")))
        }
        (Some(v), None) => {
            let v = v.trim().to_string();
            if v.is_empty() {
                return Err(ctx.invalid(format!(
                    "{name} is empty — paste the value, or name a variable with {name}_env"
                )));
            }
            Ok((Some(Secret::new(v)), true))
        }
        (None, Some(var)) => {
            let var = var.trim().to_string();
            let value = (ctx.env)(&var)
                .and_then(|v| v.into_string().ok())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty());
            if value.is_none() {
                *problem = Some(format!(
                    "{name}_env = \"{var}\" names an environment variable that is not set \
                     — export {var}=… before `evolve serve`"
                ));
            }
            Ok((value.map(Secret::new), false))
        }
        (None, None) => {
            *problem = Some(format!(
                "{name} is not set — set {name} = \"…\" or {name}_env = \"VAR\""
            ));
            Ok((None, false))
        }
    }
}

fn resolve_app(raw: RawApp, ctx: &Context<'_>) -> Result<(AppConfig, bool), ConfigError> {
    let RawApp {
        table,
        id_key,
        secret_key,
        id,
        secret,
        secret_env,
        base_url,
        default_url,
        owner,
        enabled,
    } = raw;
    let id = id.map(|i| i.trim().to_string()).unwrap_or_default();
    if id.is_empty() {
        return Err(ctx.invalid(format!(
            "channels.{table}.{id_key} is not set — copy it from the app's credentials page"
        )));
    }
    let mut problem = None;
    let (secret, in_file) = resolve_secret(
        &format!("channels.{table}.{secret_key}"),
        secret,
        secret_env,
        ctx,
        &mut problem,
    )?;
    let base_url = match base_url {
        Some(url) => check_base_url(&url).map_err(|m| {
            ctx.invalid(format!(
                "channels.{table}.base_url = \"{}\": {m}",
                crate::secret::display_url(&url)
            ))
        })?,
        None => default_url.to_string(),
    };
    Ok((
        AppConfig {
            id,
            secret,
            problem,
            base_url,
            owner: owner
                .map(|o| o.trim().to_string())
                .filter(|o| !o.is_empty()),
            enabled: enabled.unwrap_or(true),
        },
        in_file,
    ))
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
