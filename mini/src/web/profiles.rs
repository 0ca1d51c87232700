//! `GET /v1/config` and `POST /v1/config/switch`: the running configuration as the API
//! shows it (secrets left out by [`crate::config::Config::to_json`]), and switching the
//! server to another profile of `config.toml`.

use serde_json::json;

use super::http::{Request, Response};
use super::request::{body, field, opt_str, Reply};
use super::{error, State};

pub(super) fn config(state: &State) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let mut v = rt.config.to_json();
    v["profiles"] = json!(state.profiles);
    v["store"] = json!(rt.store.path().display().to_string());
    v["confinement"] = crate::sandbox::status().to_json();
    Response::json(200, &v)
}

pub(super) fn switch_profile(state: &State, req: &Request) -> Reply {
    let b = field!(body(req));
    // `name` and `config` are what tea-agent's /v1/config/switch took.
    let name = match field!(opt_str(&b, "profile")) {
        Some(n) => Some(n),
        None => match field!(opt_str(&b, "name")) {
            Some(n) => Some(n),
            None => field!(opt_str(&b, "config")),
        },
    };
    let Some(name) = name else {
        return error(400, "send {\"profile\": \"NAME\"}");
    };
    if !state.profiles.contains(&name) && name != "default" {
        return error(
            404,
            format!(
                "no profile {name:?} in config.toml (known: {})",
                state.profiles.join(", ")
            ),
        );
    }
    match state.switch_profile(&name) {
        Ok(_) => config(state),
        Err(e) => error(400, e.to_string()),
    }
}
