//! `/v1/channels`: the chat channels for the UI's Channels page — each configured one
//! with its health, who is paired and the codes waiting; its settings written to
//! `config.toml` (kept 0600; secrets never returned, only whether one is set); a check of
//! its credentials; pairing and unpairing.
//!
//! Decides the HTTP side only: the JSON shapes, 400 for a body that names no known
//! platform or lacks what it needs, 404 for a channel that is not configured. What a
//! channel is and does is `crate::channels`'; a changed setting starts the channel again
//! with it within a second (`crate::channels::supervise`), and its status is `starting`
//! until it has connected.

use serde_json::{json, Map, Value};

use super::http::Request;
use super::request::{body, opt_str, store_error, Reply};
use super::{error, said_error, State};
use crate::channels::{self, Code, Paired, Status, PLATFORMS};
use crate::config::edit::{set, Value as Edit};
use crate::said::{Code as SaidCode, Said};

/// The settings keys of each platform's table, secrets included.
fn keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "telegram" => &[
            "token",
            "token_env",
            "base_url",
            "owner",
            "enabled",
            "poll_secs",
        ],
        "feishu" => &[
            "app_id",
            "app_secret",
            "app_secret_env",
            "base_url",
            "owner",
            "enabled",
        ],
        _ => &[
            "client_id",
            "client_secret",
            "client_secret_env",
            "base_url",
            "owner",
            "enabled",
        ],
    }
}

fn known(name: &str) -> Result<&'static str, Reply> {
    PLATFORMS.into_iter().find(|p| *p == name).ok_or_else(|| {
        error(
            404,
            format!("{name}: no such channel — the platforms are telegram, feishu and dingtalk"),
        )
    })
}

/// One channel as the page shows it.
fn channel_json(state: &State, name: &str) -> Result<Option<Value>, Reply> {
    let rt = state.rt();
    let settings = rt.config.channels.to_json();
    let s = &settings[name];
    if s.is_null() {
        return Ok(None);
    }
    let store = &rt.store;
    let status: Option<Status> = store
        .channel_get(&format!("{name}/status"))
        .map_err(store_error)?;
    let paired: Vec<(String, Paired)> = store
        .channel_scan(&format!("{name}/paired/"))
        .map_err(store_error)?;
    let codes: Vec<(String, Code)> = store.channel_scan("codes/").map_err(store_error)?;
    let secret_set = s["token"].is_string() || s["secret"].is_string();
    let (state_word, detail) = match (&status, s["enabled"].as_bool()) {
        (_, Some(false)) => ("stopped", "disabled in config.toml".to_string()),
        (None, _) => match s["problem"].as_str() {
            Some(p) => ("stopped", p.to_string()),
            None => ("starting", "connecting to the platform".to_string()),
        },
        (Some(st), _) if st.ok => ("running", st.detail.clone()),
        (Some(st), _) => ("error", st.detail.clone()),
    };
    Ok(Some(json!({
        "name": name,
        "kind": name,
        "base_url": s["base_url"],
        "secret_set": secret_set,
        "status": state_word,
        "detail": detail,
        "paired": paired.iter().map(|(k, p)| json!({
            "user": k.rsplit('/').next().unwrap_or(""),
            "name": p.name,
        })).collect::<Vec<_>>(),
        "pending": codes.iter().filter(|(_, c)| c.channel == name).map(|(k, c)| json!({
            "code": k.trim_start_matches("codes/"),
            "user": c.id,
            "name": c.name,
        })).collect::<Vec<_>>(),
    })))
}

/// `GET /v1/channels`.
pub fn list(state: &State) -> Reply {
    let mut out = Vec::new();
    for name in PLATFORMS {
        match channel_json(state, name) {
            Ok(Some(c)) => out.push(c),
            Ok(None) => {}
            Err(e) => return e,
        }
    }
    super::http::Response::json(200, &json!({ "channels": out }))
}

/// Writes `change` of `config.toml`, checked as the next start would read it.
fn write(state: &State, change: impl FnOnce(String) -> String) -> Result<(), Reply> {
    let rt = state.rt();
    let (path, profile) = (&rt.config.file, rt.config.profile.clone());
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(error(500, format!("cannot read {}: {e}", path.display()))),
    };
    let new = change(old);
    let loaded = state
        .load_profile(&profile, Some(&new))
        .map_err(|e| error(400, e.to_string()))?;
    crate::config::private::write_private(path, &new).map_err(|e| {
        error(
            500,
            format!("cannot write {}: {e} — nothing was changed", path.display()),
        )
    })?;
    state.install(loaded.config);
    Ok(())
}

/// `PUT /v1/channels/{name}`: `{kind, base_url?, token?, app_id?, app_secret?,
/// client_id?, client_secret?}`; the channel object.
pub fn put(state: &State, req: &Request, name: &str) -> Reply {
    let name = match known(name) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let b: Map<String, Value> = match body(req) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let field = |k: &str| opt_str(&b, k);
    let kind = match field("kind") {
        Ok(k) => k,
        Err(e) => return e,
    };
    if kind.as_deref() != Some(name) {
        return error(
            400,
            format!("`kind` must be \"{name}\" (one channel per platform, named for it)"),
        );
    }
    // (key in the file, field of the body); the secret's `_env` key goes when it is set.
    let pairs: &[(&str, &str)] = match name {
        "telegram" => &[("token", "token"), ("base_url", "base_url")],
        "feishu" => &[
            ("app_id", "app_id"),
            ("app_secret", "app_secret"),
            ("base_url", "base_url"),
        ],
        _ => &[
            ("client_id", "client_id"),
            ("client_secret", "client_secret"),
            ("base_url", "base_url"),
        ],
    };
    // Every field the API knows is text when sent, whichever platform it is for.
    for f in [
        "base_url",
        "token",
        "app_id",
        "app_secret",
        "client_id",
        "client_secret",
    ] {
        if b.get(f).is_some_and(|v| !v.is_string()) {
            return error(400, format!("`{f}` must be a string"));
        }
    }
    // Whether the channel is configured now (a header in a comment or a value does not
    // make a table).
    let configured = !state.rt().config.channels.to_json()[name].is_null();
    let mut values = Vec::new();
    for (key, f) in pairs {
        match field(f) {
            Ok(Some(v)) if !v.trim().is_empty() => values.push((*key, v.trim().to_string())),
            Ok(_) => {}
            Err(e) => return e,
        }
    }
    let table = ["channels", name];
    let result = write(state, |mut text| {
        for (key, v) in &values {
            if key.ends_with("token") || key.ends_with("secret") {
                text = set(&text, &table, &format!("{key}_env"), None);
            }
            text = set(&text, &table, key, Some(&Edit::Str(v)));
        }
        if values.is_empty() && !configured {
            text.push_str(&format!("\n[channels.{name}]\n"));
        }
        text
    });
    if let Err(e) = result {
        return e;
    }
    log::info!(
        "channel {name}: settings saved ({})",
        values
            .iter()
            .map(|(k, _)| *k)
            .collect::<Vec<_>>()
            .join(", ")
    );
    match channel_json(state, name) {
        Ok(Some(c)) => super::http::Response::json(200, &c),
        Ok(None) => error(500, "the channel was written but does not read back"),
        Err(e) => e,
    }
}

/// `DELETE /v1/channels/{name}`: its table leaves `config.toml` (pairings stay).
pub fn delete(state: &State, name: &str) -> Reply {
    let name = match known(name) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if state.rt().config.channels.to_json()[name].is_null() {
        return said_error(
            404,
            format!("no channel {name} is configured"),
            Said::new(SaidCode::ChannelNotConfigured, json!({ "channel": name })),
        );
    }
    let table = ["channels", name];
    let result = write(state, |mut text| {
        for k in keys(name) {
            text = set(&text, &table, k, None);
        }
        text.replace(&format!("[channels.{name}]\n"), "")
    });
    match result {
        Ok(()) => super::http::Response::json(200, &json!({"deleted": name})),
        Err(e) => e,
    }
}

/// `POST /v1/channels/{name}/test`: `{ok, detail}` — whether the platform takes the
/// credentials, and who the bot is.
pub fn test(state: &State, name: &str) -> Reply {
    let name = match known(name) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let rt = state.rt();
    let (ok, detail) = match channels::sender(&rt.config.channels, name) {
        None => {
            let s = &rt.config.channels.to_json()[name];
            let why = if s.is_null() {
                format!("no channel {name} is configured")
            } else {
                s["problem"]
                    .as_str()
                    .unwrap_or("no secret is set")
                    .to_string()
            };
            (false, why)
        }
        Some(mut ch) => {
            let checked = if name == "telegram" {
                ch.connect()
            } else {
                ch.check()
            };
            match checked {
                Ok(who) => (true, format!("ok: {who}")),
                Err(e) => (false, e.to_string()),
            }
        }
    };
    super::http::Response::json(200, &json!({"ok": ok, "detail": detail}))
}

/// `POST /v1/channels/pair` `{code}`: `{ok, channel, user}`.
pub fn pair(state: &State, req: &Request) -> Reply {
    let code = match body(req).and_then(|b| opt_str(&b, "code")) {
        Ok(Some(c)) => c,
        Ok(None) => return error(400, "send {\"code\": \"CODE\"} (the code the bot sent)"),
        Err(e) => return e,
    };
    let rt = state.rt();
    match channels::pair(&rt.store, &code) {
        Ok((c, _)) => {
            if let Some(mut bot) = channels::sender(&rt.config.channels, &c.channel) {
                let text = "You are paired: write to me any time. 配对成功，现在可以对话了。";
                if let Err(e) = bot.send(&c.id, text, &[]) {
                    log::info!("{}: cannot tell the chat it is paired: {e}", c.channel);
                }
            }
            super::http::Response::json(
                200,
                &json!({"ok": true, "channel": c.channel, "user": c.id}),
            )
        }
        Err(channels::PairError::Store(e)) => store_error(e),
        Err(e @ channels::PairError::Unknown(_)) => said_error(
            404,
            e.to_string(),
            Said::new(
                SaidCode::PairingUnknown,
                json!({ "code": code.trim().to_ascii_uppercase() }),
            ),
        ),
        Err(e @ channels::PairError::Expired(_)) => said_error(
            404,
            e.to_string(),
            Said::new(
                SaidCode::PairingExpired,
                json!({ "code": code.trim().to_ascii_uppercase() }),
            ),
        ),
    }
}

/// `DELETE /v1/channels/{name}/paired/{user}`.
pub fn unpair(state: &State, name: &str, user: &str) -> Reply {
    let name = match known(name) {
        Ok(n) => n,
        Err(e) => return e,
    };
    match state
        .rt()
        .store
        .channel_remove(&format!("{name}/paired/{user}"))
    {
        Ok(true) => super::http::Response::json(200, &json!({"unpaired": user})),
        Ok(false) => said_error(
            404,
            format!("{user} is not paired on {name}"),
            Said::new(SaidCode::NotPaired, json!({"user": user, "channel": name})),
        ),
        Err(e) => store_error(e),
    }
}
