//! Is a model server usable by the agent? The checks a person would do by hand, in
//! order: the server answers (`GET /models`), the model list and whether the configured
//! main and cheap models are in it, a one-token completion with each model, and a tool
//! call (asked for in the prompt, not streamed: llama.cpp answers stream + tools with an
//! empty body). When the server cannot be reached the rest is skipped.
//!
//! `evolve doctor` prints them; `POST /v1/settings/model/test` returns them to the web
//! UI's settings panel. How they are shown, and with which settings, is the caller's.

use std::time::Instant;

use evolve_core::history::Message;
use serde_json::json;

use super::{ChatModel, ChatRequest, Client, LlmError, ModelRole, ToolSpec};
use crate::said::{Code, Said};

use crate::cancel::Cancel;

/// One check's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What was checked, e.g. `completion`.
    pub name: &'static str,
    pub ok: bool,
    /// What was found.
    pub detail: String,
    /// The same as a code and its values, for a page that says it in its own words
    /// (`None`: said in English only).
    pub said: Option<Said>,
    /// What to do about a failure (empty when it passed).
    pub hint: String,
}

impl Check {
    pub fn pass(name: &'static str, detail: String) -> Check {
        Check {
            name,
            ok: true,
            detail,
            said: None,
            hint: String::new(),
        }
    }

    pub fn fail(name: &'static str, detail: String, hint: impl Into<String>) -> Check {
        Check {
            name,
            ok: false,
            detail,
            said: None,
            hint: hint.into(),
        }
    }

    /// A failed call: the error names the URL (the detail) and says what to do (the hint).
    pub fn error(name: &'static str, e: &LlmError) -> Check {
        Check::fail(name, e.cause(), e.hint()).with(e.said())
    }

    /// The check with what it found as a code and its values.
    pub fn with(mut self, said: Said) -> Check {
        self.said = Some(said);
        self
    }
}

/// The outcome of every check.
pub struct Report {
    pub checks: Vec<Check>,
    /// The error that made the server unreachable, when it was.
    pub unreachable: Option<LlmError>,
    /// What the server's `/models` listed (empty when it listed nothing).
    pub models: Vec<String>,
}

/// The models checked: (role, its line, its completion's line, the variable that sets it).
const ROLES: [(ModelRole, &str, &str, &str); 2] = [
    (ModelRole::Main, "main model", "completion", "EVOLVE_MODEL"),
    (
        ModelRole::Cheap,
        "cheap model",
        "cheap completion",
        "EVOLVE_CHEAP_MODEL",
    ),
];

/// Runs the checks against the client's server.
pub fn diagnose(client: &Client) -> Report {
    let mut checks = Vec::new();
    let started = Instant::now();
    let listed = match client.list_models() {
        Err(e @ (LlmError::Connect { .. } | LlmError::Timeout { .. })) => {
            checks.push(Check::error("server reachable", &e));
            return Report {
                checks,
                unreachable: Some(e),
                models: Vec::new(),
            };
        }
        other => other,
    };
    let (who, ms) = (
        crate::secret::display_url(&client.config().base_url),
        started.elapsed().as_millis(),
    );
    checks.push(
        Check::pass("server reachable", format!("{who} answered in {ms} ms")).with(Said::new(
            Code::CheckAnswered,
            json!({"who": who, "ms": ms}),
        )),
    );

    let roles = if client.config().cheap == client.config().main {
        &ROLES[..1]
    } else {
        &ROLES[..]
    };
    match &listed {
        Ok(ids) => {
            checks.push(
                Check::pass(
                    "model list",
                    format!("{} model(s): {}", ids.len(), preview(ids)),
                )
                .with(Said::new(
                    Code::CheckModels,
                    json!({"count": ids.len(), "models": preview(ids)}),
                )),
            );
            for (role, line, _, var) in roles {
                let name = client.model_name(*role);
                checks.push(if ids.iter().any(|id| id == name) {
                    Check::pass(line, format!("{name} is served"))
                        .with(Said::new(Code::CheckServed, json!({ "model": name })))
                } else {
                    Check::fail(
                        line,
                        format!("{name} is not in the server's list"),
                        format!("set {var} to one of: {}", preview(ids)),
                    )
                    .with(Said::new(Code::CheckNotListed, json!({ "model": name })))
                });
            }
        }
        Err(e) => checks.push(Check::error("model list", e)),
    }
    for (role, _, line, _) in roles {
        checks.push(completion(client, *role, line));
    }
    checks.push(tool_call(client));
    Report {
        checks,
        unreachable: None,
        models: listed.unwrap_or_default(),
    }
}

/// The first ten ids, comma-separated.
fn preview(ids: &[String]) -> String {
    let mut s = ids.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 10 {
        s.push_str(&format!(", … ({} more)", ids.len() - 10));
    }
    if s.is_empty() {
        s.push_str("(none)");
    }
    s
}

/// A one-token completion.
fn completion(client: &Client, role: ModelRole, name: &'static str) -> Check {
    let req = ChatRequest {
        known_tools: Vec::new(),
        role,
        messages: vec![Message::user("Reply with the single word OK.")],
        tools: Vec::new(),
        stream: false,
        max_tokens: Some(1),
        temperature: Some(0.0),
        json: false,
        tool_choice: None,
    };
    let started = Instant::now();
    match client.chat(&req, &mut |_| {}, &Cancel::new()) {
        Ok(r) => {
            let ms = started.elapsed().as_millis();
            Check::pass(name, format!("{} answered in {ms} ms", r.model)).with(Said::new(
                Code::CheckAnswered,
                json!({"who": r.model, "ms": ms}),
            ))
        }
        Err(e) => Check::error(name, &e),
    }
}

/// Offers `get_time` and asks for it.
fn tool_call(client: &Client) -> Check {
    const NAME: &str = "tool calling";
    let req = ChatRequest {
        known_tools: Vec::new(),
        role: ModelRole::Main,
        messages: vec![
            Message::system("You are being tested. When asked to call a tool, call it."),
            Message::user("Call the get_time tool now. Do not answer with text."),
        ],
        tools: vec![ToolSpec {
            name: "get_time".into(),
            description: "Returns the current date and time.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }],
        stream: false,
        max_tokens: Some(128),
        temperature: Some(0.0),
        json: false,
        tool_choice: None,
    };
    let model = client.model_name(ModelRole::Main).to_string();
    match client.chat(&req, &mut |_| {}, &Cancel::new()) {
        Ok(r) => match r.message.tool_calls.first() {
            Some(c) if c.name == "get_time" && crate::llm::written_as_text(c) => Check::pass(
                NAME,
                format!(
                    "{model} called get_time, written as text (the tools are described in \
                     the prompt for it: [model] tools)"
                ),
            )
            .with(Said::new(Code::CheckToolAsText, json!({ "model": model }))),
            Some(c) if c.name == "get_time" => {
                Check::pass(NAME, format!("{model} called get_time"))
                    .with(Said::new(Code::CheckToolCalled, json!({ "model": model })))
            }
            Some(c) => Check::fail(
                NAME,
                format!("{model} called `{}` instead of get_time", c.name),
                "the model is unreliable with tools; a larger model may do better",
            )
            .with(Said::new(
                Code::CheckWrongTool,
                json!({"model": model, "tool": c.name}),
            )),
            None => Check::fail(
                NAME,
                format!("{model} answered with text instead of a tool call"),
                "the server or model may not support tool calling (llama.cpp needs --jinja \
                 or a function-calling chat format); try a model trained for tools",
            )
            .with(Said::new(Code::CheckNoToolCall, json!({ "model": model }))),
        },
        Err(e) => Check::error(NAME, &e),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use evolve_fake_llm::{FakeLlm, Reply};

    use super::*;
    use crate::config::{ModelConfig, Timeouts};
    use crate::error::Error;

    fn client(base_url: &str, cheap: &str) -> Client {
        Client::new(ModelConfig {
            base_url: base_url.into(),
            base_url_is_default: false,
            api_key: None,
            main: "fake-main".into(),
            cheap: cheap.into(),
            embedding_model: None,
            context_window: 4096,
            reserved_output: 256,
            max_answer_bytes: crate::llm::settings::DEFAULT_MAX_ANSWER_BYTES,
            timeouts: Timeouts {
                connect: Duration::from_secs(2),
                first_byte: Duration::from_secs(10),
                per_read: Duration::from_secs(10),
                overall: Duration::from_secs(10),
            },
            max_retries: 0,
            stream: false,
            temperature: None,
            ..ModelConfig::default()
        })
    }

    fn summary(r: &Report) -> Vec<(&'static str, bool)> {
        r.checks.iter().map(|c| (c.name, c.ok)).collect()
    }

    #[test]
    fn a_healthy_server_passes_every_check() {
        let fake = FakeLlm::start();
        fake.push(Reply::text("OK"));
        fake.push(Reply::text("OK"));
        fake.push(Reply::tool("get_time", "{}"));
        let r = diagnose(&client(&fake.base_url(), "fake-cheap"));
        assert!(r.unreachable.is_none());
        assert_eq!(
            summary(&r),
            [
                ("server reachable", true),
                ("model list", true),
                ("main model", true),
                ("cheap model", true),
                ("completion", true),
                ("cheap completion", true),
                ("tool calling", true),
            ]
        );
        let tools_req = fake.chat_requests().pop().expect("a tool request");
        assert_eq!(tools_req.tool_names(), ["get_time"]);
        assert!(!tools_req.is_stream(), "llama.cpp needs tools unstreamed");
    }

    #[test]
    fn an_unknown_model_and_a_model_without_tools_fail_with_hints() {
        let fake = FakeLlm::start();
        fake.set_models(&["llama3", "qwen2"]);
        fake.push(Reply::text("OK"));
        fake.push(Reply::text("It is noon."));
        let r = diagnose(&client(&fake.base_url(), "fake-main"));
        assert_eq!(
            summary(&r),
            [
                ("server reachable", true),
                ("model list", true),
                ("main model", false),
                ("completion", true),
                ("tool calling", false),
            ]
        );
        let text = format!("{:?}", r.checks);
        assert!(
            text.contains("set EVOLVE_MODEL to one of: llama3, qwen2"),
            "{text}"
        );
        assert!(text.contains("instead of a tool call"), "{text}");
    }

    #[test]
    fn a_model_without_native_tools_passes_in_prompt_mode_and_says_so() {
        let fake = FakeLlm::start();
        fake.refuse_tools(Some("registry.ollama.ai/library/x does not support tools"));
        fake.push(Reply::text("OK"));
        fake.push(Reply::text("OK"));
        fake.push(Reply::text(
            "```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```",
        ));
        let r = diagnose(&client(&fake.base_url(), "fake-cheap"));
        assert!(summary(&r).contains(&("tool calling", true)));
        let text = format!("{:?}", r.checks);
        assert!(text.contains("written as text"), "{text}");
        let last = fake.chat_requests().pop().expect("the prompt-mode request");
        assert!(last.tool_names().is_empty());
        assert!(last.system().is_some_and(|s| s.contains("get_time")));
    }

    #[test]
    fn an_unreachable_server_stops_the_checks() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let base = format!("http://127.0.0.1:{port}/v1");
        let r = diagnose(&client(&base, "fake-main"));
        assert_eq!(summary(&r), [("server reachable", false)]);
        let e = r.unreachable.expect("unreachable");
        assert_eq!(Error::Model(e).exit_code(), 3);
        assert!(r.checks[0].detail.contains(&base), "{:?}", r.checks[0]);
    }

    #[test]
    fn a_server_error_on_completion_is_a_failed_check_not_unreachable() {
        let fake = FakeLlm::start();
        fake.push(Reply::error(500, "out of memory"));
        fake.push(Reply::tool("get_time", "{}"));
        let r = diagnose(&client(&fake.base_url(), "fake-main"));
        assert!(r.unreachable.is_none());
        let failed: Vec<&Check> = r.checks.iter().filter(|c| !c.ok).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].name, "completion");
        assert!(failed[0].detail.contains("out of memory"));
    }
}
