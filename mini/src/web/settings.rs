//! `/v1/settings/model`: what the model endpoint is and whether it answers, so the UI can
//! say what is wrong (which URL, why, how to fix it) when the page opens, before anything
//! is sent. The check is `GET /models` on the configured server, with a short connect
//! limit; the key is never returned, only whether one is set.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::Response;
use super::State;
use crate::llm::{Client, LlmError};

type Reply = Response<'static>;

/// How long the check waits to connect and for the list: a page load should not hang
/// on a dead host for the chat call's 10 s.
const CHECK_CONNECT: Duration = Duration::from_secs(3);
const CHECK_ANSWER: Duration = Duration::from_secs(8);

/// `GET /v1/settings/model`: `{base_url, model, cheap_model, context_window,
/// api_key_set, profile, reachable, error, hint, models, checked_ms}`. Always 200: an
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
    });
    match listed {
        Ok(ids) => {
            v["reachable"] = json!(true);
            v["served"] = json!(ids.contains(&cfg.main));
            v["models"] = json!(ids);
            v["error"] = Value::Null;
            v["hint"] = Value::Null;
        }
        // The server answered, but not with a list (many servers have no `/models`):
        // it is there; the chat call will say more.
        Err(e @ (LlmError::Status { .. } | LlmError::Protocol { .. })) => {
            v["reachable"] = json!(true);
            v["served"] = Value::Null;
            v["models"] = json!([]);
            v["error"] = json!(e.to_string());
            v["hint"] = Value::Null;
        }
        Err(e) => {
            v["reachable"] = json!(false);
            v["served"] = Value::Null;
            v["models"] = json!([]);
            v["error"] = json!(e.to_string());
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
         OPENAI_BASE_URL / OPENAI_API_KEY / EVOLVE_MODEL, then restart `evolve serve`."
    )
}
