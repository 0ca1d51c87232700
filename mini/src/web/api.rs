//! The routes: which request goes where, and the answers too small for a module of their
//! own (health, models, signing in). The handlers live by subject beside it: `sessions`,
//! `memories`, `tools` (skills, tools, MCP servers), `search`, `profiles`, `settings`,
//! `chat` and the rest named in the table.
//!
//! Every answer is JSON (errors in OpenAI's shape, see [`super::error`]); bad input is a
//! 4xx with a message saying what to send instead, never a 5xx. Store failures are 500s
//! with the store's own message (which never holds a secret).

use std::sync::Arc;

use serde_json::json;

use super::http::{form_value, percent_decode, Request, Response};
use super::request::Reply;
use super::{
    assets, chat, error, grants, mcp_servers, prompt, skill_edit, style, tasks, uploads, State,
};

use super::memories::{
    add_memory, delete_memory, get_memory, maintain_memories, memories, update_memory, with_id,
};
use super::profiles::{config, switch_profile};
use super::search::search;
use super::sessions::{
    answer, answer_elicitation, create_session, delete_session, export, export_print, messages,
    patch_session, pending, rate_turn, session, sessions, show_version, turn,
};
use super::tools::{delete_skill, mcp, mcp_level, run_tool, skill, skills, tools};

/// What a route is called with: the server, the request and the path's `{…}` segments
/// in order (percent-decoded).
type Handler = fn(&Arc<State>, &Request, &[&str]) -> Reply;

/// Every route: method, path (`{name}` matches one segment, spelt as in
/// `/openapi.json`) and handler. Dispatch and the 405's `Allow` header both read it; a
/// path is served by the first pattern it matches, so a fixed segment
/// (`/v1/memory/maintain`) comes before the pattern it would also match
/// (`/v1/memory/{id}`). `HEAD` is served as `GET`.
static ROUTES: &[(&str, &str, Handler)] = &[
    ("GET", "/", |_, r, _| assets::serve(r, "index.html")),
    ("GET", "/login", |_, r, _| assets::serve(r, "login.html")),
    ("POST", "/login", |s, r, _| login(s, r)),
    ("GET", "/static/{file}", |_, r, p| assets::serve(r, p[0])),
    ("GET", "/static/js/{file}", |_, r, p| {
        assets::serve(r, &format!("js/{}", p[0]))
    }),
    ("GET", "/favicon.ico", |_, r, _| {
        assets::serve(r, "favicon.ico")
    }),
    ("GET", "/health", |s, _, _| health(s)),
    ("POST", "/v1/login/code", |s, _, _| login_code(s)),
    ("GET", "/openapi.json", |_, r, _| {
        assets::serve(r, "openapi.json")
    }),
    ("GET", "/docs", |_, r, _| assets::serve(r, "docs.html")),
    ("GET", "/v1/models", |s, _, _| models(s)),
    ("POST", "/v1/chat/completions", |s, r, _| {
        chat::completions(s, r)
    }),
    ("GET", "/v1/sessions", |s, r, _| sessions(s, r)),
    ("POST", "/v1/sessions", |s, r, _| create_session(s, r)),
    ("GET", "/v1/sessions/{id}", |s, _, p| session(s, p[0])),
    ("PATCH", "/v1/sessions/{id}", |s, r, p| {
        patch_session(s, r, p[0])
    }),
    ("DELETE", "/v1/sessions/{id}", |s, _, p| {
        delete_session(s, p[0])
    }),
    ("GET", "/v1/sessions/{id}/messages", |s, _, p| {
        messages(s, p[0])
    }),
    ("GET", "/v1/sessions/{id}/export", |s, r, p| {
        export(s, r, p[0])
    }),
    ("GET", "/v1/sessions/{id}/turns/{n}", |s, _, p| {
        turn(s, p[0], p[1])
    }),
    ("PUT", "/v1/sessions/{id}/turns/{n}/shown", |s, r, p| {
        show_version(s, r, p[0], p[1])
    }),
    ("PUT", "/v1/sessions/{id}/turns/{n}/rating", |s, r, p| {
        rate_turn(s, r, p[0], p[1])
    }),
    ("GET", "/v1/sessions/{id}/pending", |s, _, p| {
        pending(s, p[0])
    }),
    ("POST", "/v1/sessions/{id}/pending/{call}", |s, r, p| {
        answer(s, r, p[0], p[1])
    }),
    ("POST", "/v1/sessions/{id}/elicitations/{eid}", |s, r, p| {
        answer_elicitation(s, r, p[0], p[1])
    }),
    ("GET", "/v1/sessions/{id}/grants", |s, _, p| {
        grants::list(s, p[0])
    }),
    ("DELETE", "/v1/sessions/{id}/grants", |s, r, p| {
        grants::revoke(s, r, p[0])
    }),
    ("GET", "/v1/memory", |s, r, _| memories(s, r)),
    ("POST", "/v1/memory", |s, r, _| add_memory(s, r)),
    ("POST", "/v1/memory/maintain", |s, r, _| {
        maintain_memories(s, r)
    }),
    ("GET", "/v1/memory/style", |s, _, _| style::list(s)),
    ("DELETE", "/v1/memory/style", |s, _, _| style::clear(s)),
    ("DELETE", "/v1/memory/style/{n}", |s, r, p| {
        style::remove(s, r, p[0])
    }),
    ("GET", "/v1/memory/{id}", |s, _, p| {
        with_id(p[0], |id| get_memory(s, id))
    }),
    ("PATCH", "/v1/memory/{id}", |s, r, p| {
        with_id(p[0], |id| update_memory(s, r, id))
    }),
    ("DELETE", "/v1/memory/{id}", |s, _, p| {
        with_id(p[0], |id| delete_memory(s, id))
    }),
    ("GET", "/v1/skills", |s, _, _| skills(s)),
    ("POST", "/v1/skills", |s, r, _| skill_edit::create(s, r)),
    ("GET", "/v1/skills/{name}", |s, _, p| skill(s, p[0])),
    ("PUT", "/v1/skills/{name}", |s, r, p| {
        skill_edit::put(s, r, p[0])
    }),
    ("DELETE", "/v1/skills/{name}", |s, _, p| {
        delete_skill(s, p[0])
    }),
    ("GET", "/v1/tools", |s, _, _| tools(s)),
    ("POST", "/v1/tools/{name}/run", |s, r, p| {
        run_tool(s, r, p[0])
    }),
    ("GET", "/v1/mcp", |s, _, _| mcp(s)),
    ("POST", "/v1/mcp/servers", |s, r, _| mcp_servers::add(s, r)),
    ("DELETE", "/v1/mcp/servers/{name}", |s, _, p| {
        mcp_servers::remove(s, p[0])
    }),
    ("POST", "/v1/mcp/servers/{name}/reconnect", |s, _, p| {
        mcp_servers::reconnect(s, p[0])
    }),
    ("GET", "/v1/mcp/servers/{name}/login", |s, _, p| {
        mcp_servers::login_status(s, p[0])
    }),
    ("POST", "/v1/mcp/servers/{name}/login", |s, _, p| {
        mcp_servers::login(s, p[0])
    }),
    ("DELETE", "/v1/mcp/servers/{name}/login", |s, _, p| {
        mcp_servers::logout(s, p[0])
    }),
    ("PUT", "/v1/mcp/tools/{name}/level", |s, r, p| {
        mcp_level(s, r, p[0])
    }),
    ("GET", "/v1/channels", |s, _, _| super::channels::list(s)),
    ("POST", "/v1/channels/pair", |s, r, _| {
        super::channels::pair(s, r)
    }),
    ("PUT", "/v1/channels/{name}", |s, r, p| {
        super::channels::put(s, r, p[0])
    }),
    ("DELETE", "/v1/channels/{name}", |s, _, p| {
        super::channels::delete(s, p[0])
    }),
    ("POST", "/v1/channels/{name}/test", |s, _, p| {
        super::channels::test(s, p[0])
    }),
    ("DELETE", "/v1/channels/{name}/paired/{user}", |s, _, p| {
        super::channels::unpair(s, p[0], p[1])
    }),
    ("GET", "/v1/tasks", |s, _, _| tasks::list(s)),
    ("POST", "/v1/tasks", |s, r, _| tasks::create(s, r)),
    ("GET", "/v1/tasks/{id}", |s, _, p| tasks::get(s, p[0])),
    ("PATCH", "/v1/tasks/{id}", |s, r, p| {
        tasks::update(s, r, p[0])
    }),
    ("DELETE", "/v1/tasks/{id}", |s, _, p| tasks::delete(s, p[0])),
    ("POST", "/v1/tasks/{id}/run", |s, _, p| tasks::run(s, p[0])),
    ("GET", "/v1/tasks/{id}/runs", |s, r, p| {
        tasks::runs(s, r, p[0])
    }),
    ("POST", "/v1/workspace/files", |s, r, _| {
        uploads::upload(s, r)
    }),
    ("GET", "/v1/search", |s, r, _| search(s, r)),
    ("GET", "/v1/usage", |s, _, _| super::usage::get(s)),
    ("GET", "/v1/prompt", |s, _, _| prompt::list(s)),
    ("POST", "/v1/prompt", |s, r, _| prompt::set(s, r)),
    ("POST", "/v1/prompt/evolve", |s, r, _| prompt::evolve(s, r)),
    ("GET", "/v1/prompt/{version}", |s, _, p| {
        prompt::show(s, p[0])
    }),
    ("POST", "/v1/prompt/{version}/activate", |s, _, p| {
        prompt::activate(s, p[0])
    }),
    ("GET", "/v1/config", |s, _, _| config(s)),
    ("GET", "/v1/settings/model", |s, _, _| {
        super::settings::model(s)
    }),
    ("PUT", "/v1/settings/model", |s, r, _| {
        super::settings::update(s, r)
    }),
    ("POST", "/v1/settings/model/test", |s, r, _| {
        super::settings::test(s, r)
    }),
    ("POST", "/v1/settings/model/import", |s, r, _| {
        super::settings::import(s, r)
    }),
    ("POST", "/v1/config/profile", |s, r, _| switch_profile(s, r)),
    // tea-agent's names, for scripts migrating from it.
    ("POST", "/v1/config/switch", |s, r, _| switch_profile(s, r)),
    ("POST", "/v1/export/pdf", |s, r, _| export_print(s, r)),
    // Internal (not in /openapi.json): how a command run beside serve gets the store.
    ("POST", "/v1/store/lend", |s, r, _| super::lend::lend(s, r)),
];

/// The `{…}` segments of `path` if it has the shape of `pattern`.
fn matches<'p>(pattern: &str, path: &[&'p str]) -> Option<Vec<&'p str>> {
    let fixed: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    if fixed.len() != path.len() {
        return None;
    }
    let mut params = Vec::new();
    for (want, got) in fixed.iter().zip(path) {
        if want.starts_with('{') {
            params.push(*got);
        } else if want != got {
            return None;
        }
    }
    Some(params)
}

/// Dispatches by method and path: the first pattern the path matches decides; a method
/// it does not serve is a 405 naming those it does (RFC 9110 §15.5.6), a path no pattern
/// matches a 404.
pub fn route(state: &Arc<State>, req: &Request) -> Reply {
    let segments: Option<Vec<String>> = req
        .path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let Some(segments) = segments else {
        return error(400, "the path has a malformed %-escape");
    };
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = match req.method.as_str() {
        "HEAD" => "GET",
        m => m,
    };
    let Some((pattern, params)) = ROUTES
        .iter()
        .find_map(|(_, pattern, _)| Some((*pattern, matches(pattern, &segs)?)))
    else {
        return error(404, format!("no route {}", req.path));
    };
    let same_path = || ROUTES.iter().filter(move |(_, p, _)| *p == pattern);
    match same_path().find(|(m, _, _)| *m == method) {
        Some((_, _, handler)) => handler(state, req, &params),
        None => {
            let mut allow: Vec<&str> = Vec::new();
            for (m, _, _) in same_path() {
                allow.push(m);
                if *m == "GET" {
                    allow.push("HEAD");
                }
            }
            error(405, format!("{} is not allowed here", req.method))
                .with("Allow", allow.join(", "))
        }
    }
}

fn health(state: &State) -> Reply {
    Response::json(
        200,
        &json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_secs": state.started.elapsed().as_secs(),
        }),
    )
}

fn models(state: &State) -> Reply {
    let main = &state.rt().config.model.main;
    let model = |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "evolve"});
    Response::json(
        200,
        &json!({"object": "list", "data": [model("evolve"), model(main)]}),
    )
}

/// `POST /v1/login/code`: a one-time code that signs a browser in (what `evolve open`
/// puts on a browser's command line instead of the token).
fn login_code(state: &State) -> Reply {
    match state.auth.codes.issue(std::time::Instant::now()) {
        Ok(code) => Response::json(
            200,
            &json!({"code": code, "expires_in": super::auth::CODE_LIFETIME.as_secs()}),
        ),
        Err(e) => error(500, format!("cannot draw a random code: {e}")),
    }
}

/// `POST /login`: the token from the form (pasted, or taken from the sign-in link's
/// fragment by the page), or a one-time code, becomes the HttpOnly cookie.
fn login(state: &State, req: &Request) -> Reply {
    let text = String::from_utf8_lossy(&req.body);
    let token = form_value(&text, "token").unwrap_or_default();
    let code = form_value(&text, "code").unwrap_or_default();
    let signed_in = if code.is_empty() {
        state.auth.token_matches(token.trim())
    } else {
        state
            .auth
            .codes
            .redeem(code.trim(), std::time::Instant::now())
    };
    if !signed_in {
        return Response::bytes(303, "text/plain", &b"wrong token"[..])
            .with("Location", "/login?failed=1");
    }
    // `Secure` only where the browser talks TLS: over plain HTTP it would drop the
    // cookie.
    let secure = if super::auth::came_over_tls(req) {
        "; Secure"
    } else {
        ""
    };
    Response::bytes(303, "text/plain", &b"signed in"[..])
        .with("Location", "/")
        .with("Cache-Control", "no-store")
        .with(
            "Set-Cookie",
            format!(
                "{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000{secure}",
                super::auth::COOKIE,
                state.auth.token()
            ),
        )
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
