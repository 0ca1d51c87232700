//! `/v1/settings/model`: what the model endpoint is and whether it answers, so the UI can
//! say what is wrong (which URL, why, how to fix it) when the page opens, before anything
//! is sent; and setting it from the browser.
//!
//! `GET` checks `GET /models` on the configured server, with a short connect limit.
//! `PUT` changes `[model]` of the active profile in `config.toml` (`config::edit`: the
//! file's comments and other keys stay), after loading the changed text through the
//! loader every command uses — so what it accepts is what `evolve serve` would start
//! with — then writes it privately and runs the next turns on it, as a profile switch
//! does. `POST …/test` runs doctor's checks (`llm::diagnose`) against the current or a
//! posted, unsaved body. The key is never returned nor logged, only whether one is set.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::http::{Request, Response};
use super::request::{body, field};
use super::{error, error_value, State};
use crate::config::edit::{self, Value as TomlValue};
use crate::config::{Loaded, DEFAULT_PROFILE};
use crate::llm::{Client, LlmError};
use crate::said::Said;

type Reply = Response<'static>;

/// How long the check waits to connect and for the list: a page load should not hang
/// on a dead host for the chat call's 10 s.
const CHECK_CONNECT: Duration = Duration::from_secs(3);
const CHECK_ANSWER: Duration = Duration::from_secs(8);

/// `GET /v1/settings/model`: `{base_url, model, cheap_model, context_window,
/// api_key_set, profile, reachable, error, cause (the error without its hint), hint,
/// models, checked_ms}`. Always 200: an
/// unreachable server is an answer (`reachable: false`), not a failure of this call.
pub fn model(state: &State) -> Reply {
    let rt = state.rt();
    let cfg = &rt.config.model;
    let mut check = cfg.clone();
    check.timeouts.connect = check.timeouts.connect.min(CHECK_CONNECT);
    check.timeouts.first_byte = check.timeouts.first_byte.min(CHECK_ANSWER);
    check.timeouts.overall = check.timeouts.overall.min(CHECK_ANSWER);
    check.max_retries = 0;
    let started = Instant::now();
    let listed = Client::new(check).list_models();
    let checked_ms = started.elapsed().as_millis() as u64;
    let mut v = json!({
        "base_url": crate::secret::display_url(&cfg.base_url),
        "base_url_is_default": cfg.base_url_is_default,
        "model": cfg.main,
        "cheap_model": cfg.cheap,
        "context_window": cfg.context_window,
        "api_key_set": cfg.api_key.is_some(),
        "profile": rt.config.profile.clone(),
        "checked_ms": checked_ms,
        "overridden_by_env": overridden_by_env(state, &rt.config),
    });
    match listed {
        Ok(ids) => {
            v["reachable"] = json!(true);
            v["served"] = json!(ids.contains(&cfg.main));
            v["models"] = json!(ids);
            v["error"] = Value::Null;
            v["cause"] = Value::Null;
            v["said"] = Value::Null;
            v["hint"] = Value::Null;
        }
        // The server answered, but not with a list (many servers have no `/models`):
        // it is there; the chat call will say more.
        Err(e @ (LlmError::Status { .. } | LlmError::Protocol { .. })) => {
            v["reachable"] = json!(true);
            v["served"] = Value::Null;
            v["models"] = json!([]);
            v["error"] = json!(e.to_string());
            v["cause"] = json!(e.cause());
            v["said"] = e.said().to_json();
            v["hint"] = Value::Null;
        }
        Err(e) => {
            v["reachable"] = json!(false);
            v["served"] = Value::Null;
            v["models"] = json!([]);
            v["error"] = json!(e.to_string());
            v["cause"] = json!(e.cause());
            v["said"] = e.said().to_json();
            v["hint"] = json!(hint(cfg.base_url_is_default));
        }
    }
    Response::json(200, &v)
}

/// How to point evolve at a model server (English; the UI has its own 中文 text).
fn hint(default_url: bool) -> String {
    let start = if default_url {
        "Nothing answers at the default address (a local Ollama). Start Ollama \
         (`ollama serve`), or point evolve at another server: "
    } else {
        "Check that the server runs and the address is right, or point evolve at \
         another server: "
    };
    format!(
        "{start}set [model] base_url (and api_key, model) in config.toml, or \
         OPENAI_BASE_URL / OPENAI_API_KEY / EVOLVE_MODEL, then restart `evolve serve` — \
         or set it in the web UI's Settings."
    )
}

/// The fields of the body and the environment variable that wins over each (the
/// context window has none).
const FIELDS: [(&str, Option<&str>); 5] = [
    ("base_url", Some("OPENAI_BASE_URL")),
    ("api_key", Some("OPENAI_API_KEY")),
    ("model", Some("EVOLVE_MODEL")),
    ("cheap_model", Some("EVOLVE_CHEAP_MODEL")),
    ("context_window", None),
];

/// The fields whose variable is set and used: a value written to the file changes
/// nothing there until the variable is unset (a profile named for the run that sets
/// the key itself wins over the variable: `ignored_env`).
fn overridden_by_env(state: &State, config: &crate::config::Config) -> Vec<&'static str> {
    FIELDS
        .iter()
        .filter_map(|(name, var)| {
            let var = (*var)?;
            let set = state
                .env
                .iter()
                .any(|(k, v)| k == var && v.to_str().is_some_and(|v| !v.trim().is_empty()));
            let ignored = config.ignored_env.iter().any(|i| i.var == var);
            (set && !ignored).then_some(*name)
        })
        .collect()
}

/// Serialises the read-change-write of `config.toml` between requests.
static WRITING: Mutex<()> = Mutex::new(());

/// A settings body, read and checked field by field; `None`: unchanged.
#[derive(Debug, Default, PartialEq)]
struct Edit {
    base_url: Option<String>,
    /// `Some("")` clears the key.
    api_key: Option<String>,
    model: Option<String>,
    cheap_model: Option<String>,
    context_window: Option<u64>,
}

/// A 400 naming the field it is about (`error.param`, as OpenAI's errors do), so the UI
/// can show it next to that field.
fn invalid(field: Option<&str>, message: impl AsRef<str>) -> Reply {
    let mut v = error_value(400, message.as_ref(), None);
    v["error"]["param"] = json!(field);
    Response::json(400, &v)
}

impl Edit {
    fn parse(b: &Map<String, Value>) -> Result<Edit, Reply> {
        if let Some(k) = b.keys().find(|k| FIELDS.iter().all(|(f, _)| f != k)) {
            return Err(invalid(
                None,
                format!(
                    "unknown field `{k}`: send any of base_url, api_key, model, cheap_model, \
                     context_window"
                ),
            ));
        }
        let raw = |name: &str| -> Result<Option<String>, Reply> {
            match b.get(name) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(invalid(Some(name), format!("{name} must be a string"))),
            }
        };
        let text = |name: &str| Ok(raw(name)?.map(|s| s.trim().to_string()));
        let base_url = match text("base_url")? {
            Some(url) => Some(
                crate::config::check_base_url(&url)
                    .map_err(|m| invalid(Some("base_url"), format!("base_url `{url}` {m}")))?,
            ),
            None => None,
        };
        // Not trimmed: a key with a space or a line break in it is a pasting mistake.
        let api_key = raw("api_key")?;
        if api_key
            .as_deref()
            .is_some_and(|k| !k.chars().all(|c| c.is_ascii_graphic()))
        {
            return Err(invalid(
                Some("api_key"),
                "api_key must be printable ASCII without spaces, as API keys are \
                 (an empty one clears the key)",
            ));
        }
        let name = |field: &str| -> Result<Option<String>, Reply> {
            match text(field)? {
                Some(n) if n.is_empty() => Err(invalid(
                    Some(field),
                    format!("{field} is empty: name a model the server serves"),
                )),
                other => Ok(other),
            }
        };
        let context_window = match b.get("context_window") {
            None => None,
            Some(v) => Some(v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                invalid(
                    Some("context_window"),
                    "context_window must be a whole number of tokens, at least 1",
                )
            })?),
        };
        Ok(Edit {
            base_url,
            api_key,
            model: name("model")?,
            cheap_model: name("cheap_model")?,
            context_window,
        })
    }

    /// The names of the fields it changes (for the log: never a value).
    fn fields(&self) -> Vec<&'static str> {
        let Edit {
            base_url,
            api_key,
            model,
            cheap_model,
            context_window,
        } = self;
        let set = [
            base_url.is_some(),
            api_key.is_some(),
            model.is_some(),
            cheap_model.is_some(),
            context_window.is_some(),
        ];
        FIELDS
            .iter()
            .zip(set)
            .filter_map(|((name, _), set)| set.then_some(*name))
            .collect()
    }

    /// `text` with the edit applied to `[model]` of `profile` (`[profiles.P.model]`).
    /// A key replaces a named variable (`api_key_env`); clearing it in a profile writes
    /// `api_key = ""`, which also stops the top level's key from applying there.
    fn apply(&self, text: &str, profile: &str) -> String {
        let table: Vec<&str> = if profile == DEFAULT_PROFILE {
            vec!["model"]
        } else {
            vec!["profiles", profile, "model"]
        };
        let mut text = text.to_string();
        let mut put = |key: &str, v: Option<TomlValue>| {
            text = edit::set(&text, &table, key, v.as_ref());
        };
        if let Some(url) = &self.base_url {
            put("base_url", Some(TomlValue::Str(url)));
        }
        match self.api_key.as_deref() {
            Some("") if profile == DEFAULT_PROFILE => {
                put("api_key", None);
                put("api_key_env", None);
            }
            Some(key) => {
                put("api_key", Some(TomlValue::Str(key)));
                put("api_key_env", None);
            }
            None => {}
        }
        if let Some(m) = &self.model {
            put("main", Some(TomlValue::Str(m)));
        }
        if let Some(m) = &self.cheap_model {
            put("cheap", Some(TomlValue::Str(m)));
        }
        if let Some(n) = self.context_window {
            put("context_window", Some(TomlValue::Int(n)));
        }
        text
    }
}

/// The loader's error as a 400 on the form field of the setting it is about
/// (`model.reserved_output` is marked on the body's `context_window`, …).
fn rejected(e: &crate::config::ConfigError) -> Reply {
    let field = match e.key() {
        Some("model.base_url") => Some("base_url"),
        Some("model.context_window" | "model.reserved_output") => Some("context_window"),
        Some("model.main") => Some("model"),
        Some("model.cheap") => Some("cheap_model"),
        Some("model.api_key" | "model.api_key_env") => Some("api_key"),
        _ => None,
    };
    invalid(field, format!("not saved: {e}"))
}

/// The file as it would be with `edit`, loaded and checked for the active profile.
fn candidate(state: &State, edit: &Edit) -> Result<(String, String, Loaded), Reply> {
    let rt = state.rt();
    let (path, profile) = (&rt.config.file, rt.config.profile.as_str());
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        // No file yet: the commented one `evolve config init` writes, so the user finds
        // every other setting explained next to the ones set here.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::config::CONFIG_TEMPLATE.to_string()
        }
        Err(e) => {
            return Err(error(
                500,
                format!("cannot read {}: {e} — nothing was changed", path.display()),
            ))
        }
    };
    let new = edit.apply(&old, profile);
    match state.load_profile(profile, Some(&new)) {
        Ok(loaded) if written_as_asked(&new, profile, edit) => Ok((old, new, loaded)),
        Ok(_) => Err(error(
            409,
            format!(
                "{} writes the [model] table of profile `{profile}` in a form this page \
                 cannot change (an inline table or dotted keys) — edit the file by hand",
                path.display()
            ),
        )),
        Err(e) => match state.load_profile(profile, Some(&old)) {
            // The file is broken on its own (edited by hand since the start).
            Err(own) => Err(error(409, format!("fix config.toml first: {own}"))),
            Ok(_) => Err(rejected(&e)),
        },
    }
}

/// Whether `text` holds the edited values where the active profile reads them (the
/// editor does not see a table written inline or with dotted keys).
fn written_as_asked(text: &str, profile: &str, edit: &Edit) -> bool {
    let Ok(doc) = toml::from_str::<toml::Table>(text) else {
        return false;
    };
    let mut table = Some(&doc);
    let path: &[&str] = if profile == DEFAULT_PROFILE {
        &["model"]
    } else {
        &["profiles", profile, "model"]
    };
    for key in path {
        table = table
            .and_then(|t| t.get(*key))
            .and_then(toml::Value::as_table);
    }
    let Some(t) = table else {
        return edit.fields().is_empty();
    };
    let is = |key: &str, want: &Option<String>| {
        want.as_ref()
            .is_none_or(|w| t.get(key).and_then(toml::Value::as_str) == Some(w))
    };
    let key_ok = match edit.api_key.as_deref() {
        Some("") => t
            .get("api_key")
            .and_then(toml::Value::as_str)
            .unwrap_or("")
            .is_empty(),
        _ => is("api_key", &edit.api_key),
    };
    key_ok
        && is("base_url", &edit.base_url)
        && is("main", &edit.model)
        && is("cheap", &edit.cheap_model)
        && edit.context_window.is_none_or(|n| {
            t.get("context_window").and_then(toml::Value::as_integer) == i64::try_from(n).ok()
        })
}

/// `PUT /v1/settings/model`: checks the body, writes `config.toml`, runs the next turns
/// on it and answers with the new [`model`] view (`overridden_by_env` lists what the
/// environment still decides). A refused body is a 400 naming the field (`error.param`)
/// and nothing is written.
pub fn update(state: &State, req: &Request) -> Reply {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return invalid(
            None,
            "send a JSON object with the fields to change: base_url, api_key, model, \
             cheap_model, context_window",
        );
    }
    let b = field!(body(req));
    let edit = field!(Edit::parse(&b));
    save(state, &edit)
}

/// Writes an accepted edit (one writer at a time) and answers with the new view.
fn save(state: &State, edit: &Edit) -> Reply {
    {
        let _one = WRITING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (old, new, loaded) = field!(candidate(state, edit));
        if new != old {
            let path = &loaded.config.file;
            if let Err(e) = crate::config::private::write_private(path, &new) {
                return error(
                    500,
                    format!("cannot write {}: {e} — nothing was changed", path.display()),
                );
            }
            log::info!(
                "model settings of profile {} saved to {}: {}",
                loaded.config.profile,
                path.display(),
                edit.fields().join(", ")
            );
            state.install(loaded.config);
        }
    }
    model(state)
}

/// `POST /v1/settings/model/import[?apply=true]`: a `config.toml` dropped on the settings
/// page (the body). Its `[model]` settings — `base_url`, `main`, `cheap`,
/// `context_window`, `api_key` — are checked as `PUT` checks them and compared with the
/// running ones: `{changes: [{field, from, to}], left_out: [...]}` (a key shows only as
/// set or not). With `apply=true` they are saved as `PUT` saves them. The rest of the file
/// (other tables, other `[model]` keys) is named in `left_out`, not imported.
pub fn import(state: &State, req: &Request) -> Reply {
    let Ok(text) = std::str::from_utf8(&req.body) else {
        return invalid(None, "the file is not UTF-8 text, so not a config.toml");
    };
    let doc: toml::Table = match toml::from_str(text) {
        Ok(d) => d,
        Err(e) => {
            let e = e.to_string();
            return invalid(None, format!("not a TOML file: {}", e.trim()));
        }
    };
    let apply = match req.query_param("apply").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return invalid(None, format!("apply must be true or false, not {other:?}")),
    };
    let mut left_out: Vec<String> = doc
        .keys()
        .filter(|k| *k != "model")
        .map(|k| format!("[{k}]"))
        .collect();
    let Some(model) = doc.get("model").and_then(toml::Value::as_table) else {
        return invalid(
            None,
            "the file has no [model] table: nothing for the model settings (MCP servers \
             are imported from an mcpServers JSON file on the Tools page)",
        );
    };
    let mut b = Map::new();
    for (key, value) in model {
        let field = match key.as_str() {
            "base_url" => "base_url",
            "main" => "model",
            "cheap" => "cheap_model",
            "context_window" => "context_window",
            "api_key" => "api_key",
            _ => {
                left_out.push(format!("model.{key}"));
                continue;
            }
        };
        let v = match value {
            toml::Value::String(s) => json!(s),
            toml::Value::Integer(n) => json!(n),
            _ => {
                return invalid(
                    Some(field),
                    format!("model.{key} must be a string or a number"),
                )
            }
        };
        b.insert(field.to_string(), v);
    }
    let edit = field!(Edit::parse(&b));
    if apply {
        return save(state, &edit);
    }
    let rt = state.rt();
    let cfg = &rt.config.model;
    let mut changes = Vec::new();
    let mut change = |field: &str, from: String, to: Option<String>| {
        if let Some(to) = to.filter(|t| *t != from) {
            changes.push(json!({"field": field, "from": from, "to": to}));
        }
    };
    change(
        "base_url",
        crate::secret::display_url(&cfg.base_url),
        edit.base_url.as_deref().map(crate::secret::display_url),
    );
    change("model", cfg.main.clone(), edit.model.clone());
    change("cheap_model", cfg.cheap.clone(), edit.cheap_model.clone());
    change(
        "context_window",
        cfg.context_window.to_string(),
        edit.context_window.map(|n| n.to_string()),
    );
    if let Some(key) = &edit.api_key {
        let now = cfg.api_key.as_ref().map(|k| k.expose());
        if now != Some(key.as_str()) {
            let set = |yes: bool| if yes { "set" } else { "none" }.to_string();
            changes.push(
                json!({"field": "api_key", "from": set(now.is_some()), "to": set(!key.is_empty())}),
            );
        }
    }
    Response::json(200, &json!({"changes": changes, "left_out": left_out}))
}

/// How long a test waits: to connect as the page-load check, for an answer longer (a
/// local server may load the model first).
const TEST_ANSWER: Duration = Duration::from_secs(30);

/// `POST /v1/settings/model/test`: doctor's checks (`llm::diagnose`) against the current
/// settings, or the current ones changed by the body (not saved). Always 200 when the
/// body is valid: a failing check is an answer.
///
/// The key in use belongs to the URL in use: tested against another URL, only a key
/// sent in the same body goes there, never the stored one (which would hand it to
/// whoever asked for the test with their own server's address).
pub fn test(state: &State, req: &Request) -> Reply {
    let b = field!(body(req));
    let edit = field!(Edit::parse(&b));
    let current = state.rt().config.model.clone();
    let mut cfg = if edit == Edit::default() {
        current.clone()
    } else {
        field!(candidate(state, &edit)).2.config.model
    };
    if !same_server(&cfg.base_url, &current.base_url) {
        cfg.api_key = edit
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(crate::secret::Secret::new);
    }
    cfg.timeouts.connect = cfg.timeouts.connect.min(CHECK_CONNECT);
    cfg.timeouts.first_byte = cfg.timeouts.first_byte.min(TEST_ANSWER);
    cfg.timeouts.overall = cfg.timeouts.overall.min(TEST_ANSWER);
    cfg.max_retries = 0;
    let base_url = crate::secret::display_url(&cfg.base_url);
    let report = crate::llm::diagnose::diagnose(&Client::new(cfg));
    let checks: Vec<Value> = report
        .checks
        .iter()
        .map(|c| {
            json!({"name": c.name, "ok": c.ok, "detail": c.detail, "said": c.said.as_ref().map(Said::to_json), "hint": web_hint(c, &report.models)})
        })
        .collect();
    Response::json(
        200,
        &json!({
            "base_url": base_url,
            "ok": report.unreachable.is_none() && report.checks.iter().all(|c| c.ok),
            "checks": checks,
            "models": report.models,
        }),
    )
}

/// What to do about a failed check, said for this page: the fields are here, so no
/// variable or command to set in a shell (doctor's own hints name those).
fn web_hint(c: &crate::llm::diagnose::Check, listed: &[String]) -> String {
    match c.name {
        _ if c.ok => String::new(),
        "server reachable" | "model list" => {
            "check the address and that the server runs, or pick a preset beside the address".into()
        }
        "main model" | "cheap model" if !listed.is_empty() => {
            "choose one of the models the server lists in the field above, then Save".into()
        }
        _ => c.hint.clone(),
    }
}

/// Two base URLs name the same endpoint: the scheme and host in any case, a port
/// given or left to the scheme's default, a path with or without a trailing `/`.
fn same_server(a: &str, b: &str) -> bool {
    fn parts(url: &str) -> Option<(String, String, u16, &str)> {
        let (scheme, rest) = url.trim().split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let default = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(':') && !p.contains(']') => (
                h,
                if p.is_empty() {
                    default
                } else {
                    p.parse().ok()?
                },
            ),
            _ => (authority, default),
        };
        Some((
            scheme,
            host.to_ascii_lowercase(),
            port,
            path.trim_end_matches('/'),
        ))
    }
    match (parts(a), parts(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
