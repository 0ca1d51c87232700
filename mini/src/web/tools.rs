//! The agent's abilities as the API lists and changes them: skills (list, read,
//! remove), tools (list, run one under the headless policy) and MCP servers (list, set
//! the level of their tools).

use evolve_core::permission::{Decision, Grants, Policy};
use evolve_core::provenance::Provenance;
use serde_json::{json, Value};

use super::http::{Request, Response};
use super::request::{body, field, opt_str, store_error, Reply};
use super::{error, mcp_servers, State};
use crate::agents::mcp_levels::user_level::{set_level, LevelError};
use crate::agents::ToolAgent;
use crate::cancel::Cancel;
use crate::clock::now;

pub(super) fn skills(state: &State) -> Reply {
    let rt = state.rt();
    rt.skills.refresh(&rt.config.skills_dir(), &rt.tokenizer);
    let data: Vec<Value> = rt
        .skills
        .current()
        .all()
        .iter()
        .map(|s| {
            json!({
                "name": s.summary.name,
                "description": s.summary.description,
                "tags": s.summary.tags,
                "source": s.source.name(),
            })
        })
        .collect();
    Response::json(200, &json!({ "data": data }))
}

/// Removes a user or learned skill (bundled skills cannot be removed: 409); the running
/// server stops offering it at once.
pub(super) fn delete_skill(state: &State, name: &str) -> Reply {
    if evolve_core::skill::validate_name(name).is_err() {
        return no_skill(name);
    }
    let rt = state.rt();
    match crate::skills::remove_user_skill(&rt.config.skills_dir(), name) {
        Ok(_) => {
            rt.skills.reload(&rt.config.skills_dir(), &rt.tokenizer);
            let bundled = rt.skills.current().get(name).is_some();
            Response::json(200, &json!({"deleted": true, "bundled_again": bundled}))
        }
        Err(crate::skills::RemoveError::Bundled) => error(
            409,
            format!("{name} is a bundled skill: it ships in the binary and cannot be removed"),
        ),
        Err(crate::skills::RemoveError::Unknown) => no_skill(name),
        Err(crate::skills::RemoveError::Io(dir, e)) => {
            error(500, format!("cannot remove {}: {e}", dir.display()))
        }
    }
}

pub(super) fn skill(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    rt.skills.refresh(&rt.config.skills_dir(), &rt.tokenizer);
    match rt.skills.current().get(name) {
        Some(s) => Response::json(
            200,
            &json!({
                "name": s.summary.name,
                "description": s.summary.description,
                "tags": s.summary.tags,
                "source": s.source.name(),
                "body": s.body,
                // The whole SKILL.md of a user skill, to edit it.
                "text": (s.source != crate::skills::Source::Bundled)
                    .then(|| std::fs::read_to_string(rt.config.skills_dir().join(name).join("SKILL.md")).ok())
                    .flatten(),
            }),
        ),
        None => no_skill(name),
    }
}

pub(super) fn tools(state: &State) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let cancel = Cancel::new();
    let grants = Grants::default();
    let policy = Policy::Interactive;
    let set = ToolAgent.for_turn(rt, &cancel);
    let data: Vec<Value> = ToolAgent
        .specs(&set)
        .into_iter()
        .map(|spec| {
            let check = ToolAgent.check(
                rt,
                &set,
                &spec.name,
                "{}",
                &grants,
                &policy,
                &Provenance::default(),
                &[],
            );
            let mcp =
                crate::mcp_spec::split_name(&spec.name).is_some() && !rt.tools.has(&spec.name);
            json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "level": check.class.level.to_string(),
                "source": if mcp { "mcp" } else { "builtin" },
                "origin": format!("{:?}", check.class.source).to_lowercase(),
                // An MCP tool whose definition replaced another: what changed.
                "changed": ToolAgent.definition_change(&set, &spec.name).map(|c| c.to_json()),
            })
        })
        .collect();
    Response::json(200, &json!({ "data": data }))
}

/// Runs one tool call under the same check as a model's call in a headless turn: what
/// the headless policy allows runs, anything that needs a person is refused (403).
pub(super) fn run_tool(state: &State, req: &Request, name: &str) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let b = field!(body(req));
    let arguments = match b.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return error(400, "arguments must be a JSON object"),
    };
    let cancel = Cancel::new();
    let set = ToolAgent.for_turn(rt, &cancel);
    if !ToolAgent.has(rt, &set, name) {
        return error(
            404,
            format!("no tool named {name:?} (GET /v1/tools lists them)"),
        );
    }
    let policy = Policy::headless(None, false, &rt.config.core.permission);
    // The arguments are the caller's own: no outside text is in this call.
    let check = ToolAgent.check(
        rt,
        &set,
        name,
        &arguments,
        &Grants::default(),
        &policy,
        &Provenance::default(),
        &[],
    );
    let level = check.level;
    match check.decision {
        Decision::Run | Decision::RunScoped => {}
        Decision::Refuse(reason) => {
            return error(
                403,
                format!(
                    "{name} at {level} is refused: {} — a call that needs a person runs \
                     only from a chat (the UI or `evolve chat`)",
                    reason_text(&reason)
                ),
            )
        }
        _ => {
            return error(
                403,
                format!("{name} at {level} needs a person's approval: run it from a chat"),
            )
        }
    }
    let out = ToolAgent.run(
        rt,
        &set,
        "api",
        name,
        &arguments,
        // The caller's own call: no outside text is in it.
        crate::tools::RunAs {
            level,
            offline: false,
            world: false,
        },
        now(),
        &cancel,
        &mut crate::mcp::NoEvents,
    );
    Response::json(
        200,
        &json!({"output": out.content, "is_error": out.is_error, "level": level.to_string()}),
    )
}

pub(super) fn reason_text(r: &evolve_core::permission::RefusalReason) -> String {
    use evolve_core::permission::RefusalReason as R;
    match r {
        R::Dangerous => "L5 calls are never run".into(),
        R::NeedsPerson { .. } | R::SendsData { .. } => "it needs a person".into(),
    }
}

pub(super) fn mcp(state: &State) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let connected = rt.mcp.connected();
    let cancel = Cancel::new();
    let set = ToolAgent.for_turn(rt, &cancel);
    let grants = Grants::default();
    let data: Vec<Value> = rt
        .mcp
        .specs()
        .iter()
        .map(|spec| {
            let tools: Vec<Value> = ToolAgent
                .mcp_entries(&set)
                .iter()
                .filter(|e| e.server == spec.name)
                .map(|e| {
                    let check = ToolAgent.check(
                        rt,
                        &set,
                        &e.full_name,
                        "{}",
                        &grants,
                        &Policy::Interactive,
                        &Provenance::default(),
                        &[],
                    );
                    json!({
                        "name": e.full_name,
                        "description": e.tool.description,
                        "level": check.class.level.to_string(),
                        "origin": format!("{:?}", check.class.source).to_lowercase(),
                        "changed": e.change.as_ref().map(|c| c.to_json()),
                    })
                })
                .collect();
            let transport = match &spec.transport {
                crate::mcp_spec::Transport::Stdio { .. } => "stdio",
                crate::mcp_spec::Transport::Http { .. } => "http",
            };
            let login = crate::mcp::oauth::LoginState::of(spec, &rt.store);
            json!({
                "name": spec.name,
                "source": mcp_servers::source(&spec.source),
                "transport": transport,
                "disabled": spec.disabled,
                "connected": connected.contains(&spec.name),
                "can_login": crate::mcp::oauth::applies(spec),
                "login": login.as_ref().map(|l| l.label(now())),
                "login_needed": login == Some(crate::mcp::oauth::LoginState::Needed),
                "tools": tools,
            })
        })
        .collect();
    Response::json(200, &json!({ "data": data }))
}

pub(super) fn mcp_level(state: &State, req: &Request, name: &str) -> Reply {
    let b = field!(body(req));
    let Some(level) = field!(opt_str(&b, "level")) else {
        return error(400, "send {\"level\": \"L0\" … \"L5\" | \"auto\"}");
    };
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    match set_level(&rt.config, &rt.store, &rt.mcp.specs(), name, &level, now()) {
        Ok(change) => Response::json(
            200,
            &json!({"name": name, "level": level, "message": change.to_string()}),
        ),
        Err(LevelError::Store(e)) => store_error(e),
        Err(e) => error(400, e.to_string()),
    }
}

/// A 404 for a skill that is not there.
fn no_skill(name: &str) -> Reply {
    super::said_error(
        404,
        format!("no skill named {name:?}"),
        crate::said::Said::new(
            crate::said::Code::NoSkill,
            serde_json::json!({ "name": name }),
        ),
    )
}
