//! Tools for models without tool calling (`[model] tools = "prompt"`, and `auto` once a
//! server said so): the request without a `tools` list, the tools described in the
//! system message instead, and earlier tool rounds rewritten as the text such a model
//! reads and writes.
//!
//! Decides: the wording of the description and of the format asked for (the one
//! `evolve_core::tool_plan` reads back), how a call and its result look as plain
//! messages, and which server errors mean "this model has no tool calling"
//! ([`refuses_tools`]). Reading the plan out of the answer is the core's
//! (`tool_plan::parse`); when to use this mode is the client's.

use evolve_core::history::{Message, Role};
use evolve_core::tool_plan;

use super::ToolSpec;

/// What a tool result is introduced with, in the user message that carries it.
const RESULT_PREFIX: &str = "Result of";

/// Server messages that say the model cannot take a `tools` list, lower-cased: Ollama's
/// `registry.ollama.ai/library/X does not support tools`, llama.cpp's `tools param
/// requires --jinja flag`, vLLM's `"auto" tool choice requires --enable-auto-tool-choice`,
/// and the wordings of other OpenAI-compatible servers.
const NO_TOOLS_PHRASES: [&str; 9] = [
    "does not support tools",
    "does not support tool",
    "tools is not supported",
    "tools are not supported",
    "tool calling is not supported",
    "tool use is not supported",
    "does not support function calling",
    "tools param requires",
    "enable-auto-tool-choice",
];

/// Whether an error answer to a request with tools says the model has no tool calling
/// (a 400 or 422 whose message has one of [`NO_TOOLS_PHRASES`], in any case). Narrow on
/// purpose: any other refusal stands as the error it is.
pub(super) fn refuses_tools(status: u16, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    matches!(status, 400 | 422) && NO_TOOLS_PHRASES.iter().any(|p| m.contains(p))
}

/// The messages of a prompt-mode request: the tool description added to the system
/// message (one is put first when there is none), each assistant message with tool calls
/// written as its text and the calls' plan ([`tool_plan::write`]), and the results of a
/// round of calls as one user message, each `Result of NAME:` and its output.
pub(super) fn messages(
    messages: &[Message],
    tools: &[ToolSpec],
    tool_choice: Option<&str>,
) -> Vec<Message> {
    let description = describe(tools, tool_choice);
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    if messages.first().is_none_or(|m| m.role != Role::System) {
        out.push(Message::system(description.clone()));
    }
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::System if i == 0 => {
                out.push(m.with_content(format!("{}\n\n{description}", m.content.trim_end())))
            }
            Role::Assistant if !m.tool_calls.is_empty() => {
                let plan = tool_plan::write(
                    m.tool_calls
                        .iter()
                        .map(|c| (c.name.as_str(), c.arguments.as_str())),
                );
                let text = match m.content.trim() {
                    "" => plan,
                    prose => format!("{prose}\n\n{plan}"),
                };
                let mut said = Message::assistant(text);
                said.reasoning = None;
                out.push(said);
            }
            Role::Tool => {
                let name = m.name.as_deref().unwrap_or("the tool");
                let result = format!("{RESULT_PREFIX} {name}:\n{}", m.content);
                // One user message for the whole round: chat templates that insist on
                // alternating roles reject two user messages in a row.
                match out.last_mut() {
                    Some(last)
                        if last.role == Role::User && last.content.starts_with(RESULT_PREFIX) =>
                    {
                        last.content.push_str("\n\n");
                        last.content.push_str(&result);
                    }
                    _ => out.push(Message::user(result)),
                }
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

/// The system message's part about the tools: the format, then each tool with its
/// description and its parameters' JSON schema (compact).
fn describe(tools: &[ToolSpec], tool_choice: Option<&str>) -> String {
    let mut text = format!(
        "## Tools\n\
         You can use the tools listed below. To call one, reply with only a JSON block in \
         exactly this form:\n{}\n\
         For several calls at once, put a JSON list of such objects in the block. The \
         result comes back in a message starting with \"{RESULT_PREFIX} TOOL_NAME:\"; then \
         answer, or call another tool. Call a tool only when you need one; otherwise answer \
         normally, without such a block.",
        tool_plan::FORMAT
    );
    match tool_choice {
        Some("required") => text.push_str("\nCall one of the tools now."),
        Some(name) if name != "auto" && name != "none" => {
            text.push_str(&format!("\nCall the tool {name} now."))
        }
        _ => {}
    }
    text.push_str("\n\nTools (name: description. Parameters as JSON Schema):");
    for t in tools {
        let description = t
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        text.push_str(&format!(
            "\n- {}: {description} Parameters: {}",
            t.name, t.parameters
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::history::ToolCall;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "Reads a file\nfrom the workspace.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    #[test]
    fn only_a_server_saying_the_model_has_no_tools_counts() {
        for (status, message, refuses) in [
            (
                400,
                "registry.ollama.ai/library/smollm2:135m does not support tools",
                true,
            ),
            (400, "Tools param requires --jinja flag", true),
            (
                400,
                "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                true,
            ),
            (422, "This model does not support function calling", true),
            (400, "Tools are not supported for this model", true),
            (500, "does not support tools", false),
            (404, "model not found", false),
            (400, "invalid tools[0].function.parameters", false),
            (400, "context length exceeded", false),
        ] {
            assert_eq!(refuses_tools(status, message), refuses, "{status} {message}");
        }
    }

    #[test]
    fn tool_rounds_become_text_a_model_without_tools_reads() {
        let history = vec![
            Message::system("You are Evolve."),
            Message::user("What is in notes.txt?"),
            Message::assistant_calls(
                "Let me look.",
                vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path": "notes.txt"}"#.into(),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "get_time".into(),
                        arguments: String::new(),
                    },
                ],
            ),
            Message::tool_result("c1", "read_file", "the code is 4711"),
            Message::tool_result("c2", "get_time", "12:00"),
        ];
        let out = messages(&history, &[spec("read_file")], None);
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::User]
        );
        assert!(out[0].content.starts_with("You are Evolve.\n\n## Tools"));
        assert!(out[0]
            .content
            .contains("- read_file: Reads a file from the workspace. Parameters: {\"properties\""));
        assert!(out[0].content.contains(tool_plan::FORMAT));
        assert_eq!(
            out[2].content,
            "Let me look.\n\n```json\n[{\"name\":\"read_file\",\"arguments\":{\"path\":\"notes.txt\"}},{\"name\":\"get_time\",\"arguments\":{}}]\n```"
        );
        assert!(out[2].tool_calls.is_empty());
        assert_eq!(
            out[3].content,
            "Result of read_file:\nthe code is 4711\n\nResult of get_time:\n12:00"
        );
        assert!(out.iter().all(|m| m.role != Role::Tool));
        // The plan written back reads as the same calls.
        let plan = tool_plan::parse(&out[2].content, &["read_file", "get_time"]);
        assert_eq!(plan.calls.len(), 2);
        assert_eq!(plan.rest, "Let me look.");
    }

    #[test]
    fn a_conversation_without_a_system_message_gets_one_and_a_forced_tool_is_named() {
        let out = messages(
            &[Message::user("hi")],
            &[spec("read_file")],
            Some("read_file"),
        );
        assert_eq!(out[0].role, Role::System);
        assert!(out[0].content.contains("Call the tool read_file now."));
        assert_eq!(out[1].content, "hi");
    }
}
