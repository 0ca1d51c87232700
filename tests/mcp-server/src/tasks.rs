//! `--task-tool`: a tool that runs only as an MCP task (`execution: {taskSupport:
//! "required"}`, revision 2025-11-25), which a client that does not drive tasks must not
//! offer. rmcp 3.11's `Tool` has no `execution` field, so [`Served`] — the handler stdio
//! serves, wrapping [`TestServer`] — adds [`TASK_TOOL`] to the `tools/list` answer as
//! raw JSON. Called without a task, the tool is `-32601` (method not found), as the
//! specification asks of such tools; this server never runs it.
//!
//! Stdio only: rmcp's streamable HTTP service takes a `ServerHandler`, whose
//! `list_tools` answer is typed, not a `Service` like [`Served`]. Without
//! `--task-tool`, [`Served`] passes everything through unchanged.

use std::borrow::Cow;

use rmcp::model::{
    ClientNotification, ClientRequest, CustomResult, ErrorCode, ProtocolVersion, ServerConfig,
    ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext, Service};
use rmcp::{ErrorData, RoleServer};
use serde_json::{json, Value};

use crate::server::TestServer;

/// The task-only tool's name.
pub const TASK_TOOL: &str = "research";

/// The tool as `tools/list` gives it.
fn task_tool() -> Value {
    json!({
        "name": TASK_TOOL,
        "description": "Researches a topic for a long while (only as a task).",
        "inputSchema": {
            "type": "object",
            "properties": {"topic": {"type": "string", "description": "what to research"}},
            "required": ["topic"],
        },
        "annotations": {"readOnlyHint": true},
        "execution": {"taskSupport": "required"},
    })
}

/// The answer to a call of [`TASK_TOOL`] made without a task.
pub fn refusal() -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{TASK_TOOL} runs only as a task (execution.taskSupport: required)"),
        None,
    )
}

/// What the transports serve: the test server, its tool list with [`TASK_TOOL`] added
/// under `--task-tool`.
#[derive(Debug, Clone)]
pub struct Served(TestServer);

impl Served {
    pub fn new(server: TestServer) -> Served {
        Served(server)
    }
}

/// `result` (a `ListToolsResult`) with [`TASK_TOOL`] last.
fn with_task_tool(result: ServerResult) -> ServerResult {
    let Ok(mut value) = serde_json::to_value(&result) else {
        return result;
    };
    match value.get_mut("tools").and_then(Value::as_array_mut) {
        Some(tools) => tools.push(task_tool()),
        None => return result,
    }
    ServerResult::CustomResult(CustomResult::new(value))
}

impl Service<RoleServer> for Served {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let listing = matches!(request, ClientRequest::ListToolsRequest(_));
        let result = Service::handle_request(&self.0, request, context).await?;
        if listing && self.0.task_tool() {
            Ok(with_task_tool(result))
        } else {
            Ok(result)
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        Service::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::supported_protocol_versions(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ListToolsResult, Tool};

    #[test]
    fn the_task_tool_is_added_to_a_listing_as_it_is_on_the_wire() {
        let schema = serde_json::Map::new();
        let listing =
            ServerResult::ListToolsResult(ListToolsResult::with_all_items(vec![Tool::new(
                "echo",
                "e",
                std::sync::Arc::new(schema),
            )]));
        let wire = serde_json::to_value(with_task_tool(listing)).expect("JSON");
        let names: Vec<&str> = wire["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["echo", TASK_TOOL]);
        assert_eq!(wire["tools"][1]["execution"]["taskSupport"], "required");
        assert!(wire["tools"][0].get("execution").is_none());
    }

    #[test]
    fn a_call_without_a_task_is_method_not_found() {
        let e = refusal();
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.contains("only as a task"), "{}", e.message);
    }
}
