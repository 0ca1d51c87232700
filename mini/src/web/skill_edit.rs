//! `POST /v1/skills` and `PUT /v1/skills/{name}`: write user skills from the web UI, as
//! `evolve skills new` and editing SKILL.md by hand do. The text is checked by the
//! loader's own parser (a skill the agent would skip is refused with why), and the
//! catalog is read again at once.

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::request::{body, Reply};
use super::{error, State};
use crate::skills::{bundled_text, name_problem, template, write_user_skill};
use evolve_core::skill::{parse_skill_md, MAX_DESCRIPTION_CHARS};
use evolve_core::text::one_line;

/// `{name, description?}` → 201 `{name, text}`: the template (a bundled skill's text
/// when the name overrides one); 409 when a user skill of that name exists.
pub fn create(state: &State, req: &Request) -> Reply {
    let b = match body(req) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let Some(Value::String(name)) = b.get("name") else {
        return error(
            400,
            "send {\"name\": \"pdf-tools\", \"description\": \"…\"}",
        );
    };
    let name = name.trim();
    if let Some(problem) = name_problem(name) {
        return error(400, problem);
    }
    let description = match b.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if d.trim().is_empty() => None,
        Some(Value::String(d)) => Some(one_line(d.trim(), MAX_DESCRIPTION_CHARS)),
        Some(_) => return error(400, "`description` must be a string"),
    };
    let rt = state.rt();
    let root = rt.config.skills_dir();
    if std::fs::symlink_metadata(root.join(name)).is_ok() {
        return error(
            409,
            format!("the user skill {name} exists already: edit it (PUT /v1/skills/{name})"),
        );
    }
    let text = template(name, description.as_deref());
    if let Err(e) = parse_skill_md(&text) {
        return error(
            400,
            format!("cannot make a valid SKILL.md for {name}: {e}; simplify the description"),
        );
    }
    save(state, name, &text, 201)
}

/// `{text}` → the whole SKILL.md of the user skill `name` (created if missing; a bundled
/// skill's name makes a user copy that overrides it). 400 when the loader would skip it.
pub fn put(state: &State, req: &Request, name: &str) -> Reply {
    if let Some(problem) = name_problem(name) {
        return error(400, problem);
    }
    let b = match body(req) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let Some(Value::String(text)) = b.get("text") else {
        return error(400, "send {\"text\": \"the whole SKILL.md\"}");
    };
    let doc = match parse_skill_md(text) {
        Ok(doc) => doc,
        Err(e) => return error(400, format!("text: not a skill the agent can use: {e}")),
    };
    if doc.name != name {
        return error(
            400,
            format!(
                "text: its front matter names the skill {:?}, not {name:?} (the folder's name)",
                doc.name
            ),
        );
    }
    save(state, name, text, 200)
}

fn save(state: &State, name: &str, text: &str, status: u16) -> Reply {
    let rt = state.rt();
    let root = rt.config.skills_dir();
    if let Err(e) = write_user_skill(&root, name, text) {
        return error(
            500,
            format!("cannot write the skill {name} in {}: {e}", root.display()),
        );
    }
    rt.skills.reload(&root, &rt.tokenizer);
    Response::json(
        status,
        &json!({
            "name": name,
            "text": text,
            "overrides_bundled": bundled_text(name).is_some(),
        }),
    )
}
