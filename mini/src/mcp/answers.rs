//! What a server's answers mean to evolve: one entry of `tools/list` as an [`McpTool`],
//! a `tools/call` result as the text the model reads ([`CallOutcome`]).

use serde_json::Value;

use super::CallOutcome;
use crate::mcp_spec::McpTool;
use evolve_core::permission::Annotations;

/// One listed tool; `None` without a name. A missing or odd schema is an empty object
/// schema, so one odd tool does not hide the others.
pub(super) fn tool(t: &Value) -> Option<McpTool> {
    let name = t.get("name")?.as_str()?.to_string();
    let input_schema = match t.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.to_string(),
        _ => "{\"type\":\"object\"}".to_string(),
    };
    let hint = |key: &str| t["annotations"][key].as_bool();
    Some(McpTool {
        name,
        description: t["description"].as_str().unwrap_or_default().to_string(),
        output_schema: t
            .get("outputSchema")
            .filter(|s| s.is_object())
            .map(Value::to_string),
        input_schema,
        annotations: Annotations {
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            open_world_hint: hint("openWorldHint"),
        },
    })
}

/// The text the model sees from a result: text parts as they are, structured content
/// when there is no part, other parts described in one line each (a resource link by
/// its title). A tool that listed an `outputSchema` must give `structuredContent` that
/// fits it (unless the result is an error): otherwise the result is an error that says
/// where it does not fit, so the model does not build on it.
pub(super) fn outcome(result: &Value, output_schema: Option<&Value>) -> CallOutcome {
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
    let base64_len = |v: &Value| v["data"].as_str().map_or(0, str::len);
    let mut parts: Vec<String> = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        parts.push(match block["type"].as_str().unwrap_or_default() {
            "text" => text(block, "text"),
            "image" => format!(
                "[image {} of {} base64 bytes]",
                text(block, "mimeType"),
                base64_len(block)
            ),
            "audio" => format!(
                "[audio {} of {} base64 bytes]",
                text(block, "mimeType"),
                base64_len(block)
            ),
            "resource" => {
                let r = &block["resource"];
                let uri = text(r, "uri");
                match (r["text"].as_str(), r.get("blob")) {
                    (Some(body), _) => format!("[resource {uri}]\n{body}"),
                    (None, Some(_)) => format!(
                        "[resource {uri}: {} data]",
                        r["mimeType"].as_str().unwrap_or("binary")
                    ),
                    (None, None) => "[resource]".to_string(),
                }
            }
            "resource_link" => {
                let (name, title) = (text(block, "name"), text(block, "title"));
                let shown = match (title.is_empty(), name.is_empty()) {
                    (false, false) if title != name => format!("{title} ({name})"),
                    (false, _) => title,
                    _ => name,
                };
                let mut line = format!("[link {shown} {}]", text(block, "uri"));
                if let Some(about) = block["description"].as_str().filter(|d| !d.is_empty()) {
                    line.push_str(&format!(" {about}"));
                }
                line
            }
            _ => "[content of a kind evolve does not show]".to_string(),
        });
    }
    if parts.is_empty() {
        if let Some(value) = result.get("structuredContent").filter(|v| !v.is_null()) {
            parts.push(value.to_string());
        }
    }
    let is_error = result["isError"].as_bool() == Some(true);
    if let (Some(schema), false) = (output_schema, is_error) {
        let problem = match result.get("structuredContent").filter(|v| !v.is_null()) {
            None => Some("it gave no structuredContent".to_string()),
            Some(value) => super::schema::violation(schema, value),
        };
        if let Some(problem) = problem {
            return CallOutcome {
                content: format!(
                    "the tool's result does not match its output schema ({}); the result was: {}",
                    evolve_core::text::clip_chars(&problem, 300),
                    evolve_core::text::clip_chars(&parts.join("\n"), 2000)
                ),
                is_error: true,
            };
        }
    }
    CallOutcome {
        content: parts.join("\n"),
        is_error,
    }
}
