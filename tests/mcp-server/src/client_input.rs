//! What a tool asks of the client ([`Ask`]): `list_roots` asks `roots/list` and answers
//! the URIs, one per line; `ask_user` asks `elicitation/create` (a form with a string
//! `name` and a boolean `ok`) and answers the client's action and content as JSON. A
//! client that did not declare the capability gets an error result saying so, and so
//! does a request that fails.
//!
//! How the question travels depends on the call's protocol revision:
//! - before 2026-07-28 the server sends the request and waits for the response (over
//!   streamable HTTP rmcp sends it on the call's own SSE stream; the client POSTs the
//!   response). If the call is cancelled meanwhile, the client is sent
//!   `notifications/cancelled` for the question.
//! - 2026-07-28 forbids server-to-client requests (rmcp refuses to send them), so the
//!   call answers an `InputRequiredResult` (SEP-2322): `inputRequests` holds the
//!   question under [`Ask::key`], `requestState` is [`Ask::state`]. The client calls
//!   the tool again with the same arguments, `inputResponses: {KEY: its result}` and
//!   `requestState` echoed; a retry whose `requestState` differs is an error result.

#![expect(
    deprecated,
    reason = "rmcp 3.11 marks roots deprecated (SEP-2577); every revision still has them"
)]

use std::collections::BTreeMap;

use rmcp::model::{
    BooleanSchema, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotificationParam, ClientCapabilities, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationSchema, InputRequest, InputRequests,
    InputRequiredResult, ListRootsRequest, ListRootsResult, PrimitiveSchemaDefinition,
    ServerRequest, StringSchema,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::RoleServer;
use serde_json::{json, Value};

/// A question for the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// `list_roots`: the client's roots.
    Roots,
    /// `ask_user`: the form, with this message.
    User { message: String },
}

impl Ask {
    fn tool(&self) -> &'static str {
        match self {
            Ask::Roots => "list_roots",
            Ask::User { .. } => "ask_user",
        }
    }

    fn method(&self) -> &'static str {
        match self {
            Ask::Roots => "roots/list",
            Ask::User { .. } => "elicitation/create",
        }
    }

    /// The question's key in `inputRequests` and `inputResponses` (2026-07-28).
    pub fn key(&self) -> &'static str {
        match self {
            Ask::Roots => "roots",
            Ask::User { .. } => "user",
        }
    }

    /// The `requestState` of the `InputRequiredResult`, which the retry must echo.
    pub fn state(&self) -> &'static str {
        match self {
            Ask::Roots => "list_roots:1",
            Ask::User { .. } => "ask_user:1",
        }
    }

    /// Why the client cannot be asked, if it cannot. A form needs the `form` mode, which
    /// an `elicitation: {}` without modes means too (the 2025-06-18 shape).
    fn missing_capability(&self, caps: Option<&ClientCapabilities>) -> Option<String> {
        let (declared, name) = match self {
            Ask::Roots => (caps.is_some_and(|c| c.roots.is_some()), "roots"),
            Ask::User { .. } => (
                caps.and_then(|c| c.elicitation.as_ref())
                    .is_some_and(|e| e.form.is_some() || e.url.is_none()),
                "elicitation (form)",
            ),
        };
        (!declared).then(|| {
            format!(
                "{}: the client did not declare the {name} capability, so it cannot be asked",
                self.tool()
            )
        })
    }

    fn request(&self) -> ServerRequest {
        match self {
            Ask::Roots => ServerRequest::ListRootsRequest(roots_request()),
            Ask::User { message } => ServerRequest::ElicitRequest(user_request(message)),
        }
    }

    fn input_request(&self) -> InputRequest {
        match self {
            Ask::Roots => InputRequest::ListRoots(roots_request()),
            Ask::User { message } => InputRequest::Elicitation(user_request(message)),
        }
    }

    /// The call's answer from the client's result.
    fn answer(&self, result: Value) -> CallToolResult {
        let tool = self.tool();
        match self {
            Ask::Roots => match serde_json::from_value::<ListRootsResult>(result) {
                Ok(r) if r.roots.is_empty() => text("(no roots)"),
                Ok(r) => {
                    let uris: Vec<&str> = r.roots.iter().map(|root| root.uri.as_str()).collect();
                    text(uris.join("\n"))
                }
                Err(e) => error(format!(
                    "{tool}: the client's answer is not a roots list: {e}"
                )),
            },
            Ask::User { .. } => match serde_json::from_value::<ElicitResult>(result) {
                Ok(r) => {
                    let mut answer = json!({"action": r.action});
                    if let Some(content) = r.content {
                        answer["content"] = content;
                    }
                    text(answer.to_string())
                }
                Err(e) => error(format!(
                    "{tool}: the client's answer is not an elicitation result: {e}"
                )),
            },
        }
    }
}

fn roots_request() -> ListRootsRequest {
    ListRootsRequest {
        method: Default::default(),
        extensions: Default::default(),
    }
}

/// `{name: string, ok: boolean}`, both required.
fn user_request(message: &str) -> ElicitRequest {
    let properties = BTreeMap::from([
        (
            "name".to_string(),
            PrimitiveSchemaDefinition::String(StringSchema::new().description("your name")),
        ),
        (
            "ok".to_string(),
            PrimitiveSchemaDefinition::Boolean(
                BooleanSchema::new().description("whether to go on"),
            ),
        ),
    ]);
    let schema = ElicitationSchema::new(properties).with_required(vec!["name".into(), "ok".into()]);
    ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_string(),
        requested_schema: schema,
    })
}

/// Asks the client, the way the call's revision allows.
pub async fn ask(
    ask: &Ask,
    params: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    if let Some(why) = ask.missing_capability(context.client_capabilities().as_ref()) {
        return error(why).into();
    }
    let stateless = context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize());
    if stateless {
        return ask_by_input_required(ask, params);
    }
    match ask_by_request(ask, context).await {
        Ok(result) => ask.answer(result).into(),
        Err(e) => error(format!("{}: {e}", ask.tool())).into(),
    }
}

/// 2026-07-28: the question now, the answer on the retry.
fn ask_by_input_required(ask: &Ask, params: &CallToolRequestParams) -> CallToolResponse {
    let response = params
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get(ask.key()));
    match response {
        None => InputRequiredResult::new(
            Some(InputRequests::from([(
                ask.key().to_string(),
                ask.input_request(),
            )])),
            Some(ask.state().to_string()),
        )
        .into(),
        Some(_) if params.request_state.as_deref() != Some(ask.state()) => {
            let sent = match &params.request_state {
                Some(state) => format!("it sent {state:?}"),
                None => "it sent none".to_string(),
            };
            error(format!(
                "{}: the retry must echo requestState {:?} from the InputRequiredResult ({sent})",
                ask.tool(),
                ask.state()
            ))
            .into()
        }
        Some(result) => ask.answer(result.clone()).into(),
    }
}

/// Before 2026-07-28: a request to the client, and its response as JSON.
async fn ask_by_request(ask: &Ask, context: &RequestContext<RoleServer>) -> Result<Value, String> {
    let method = ask.method();
    let handle = context
        .peer
        .send_request_with_option(ask.request(), PeerRequestOptions::no_options())
        .await
        .map_err(|e| format!("{method} could not be sent: {e}"))?;
    let id = handle.id.clone();
    tokio::select! {
        response = handle.await_response() => {
            let result = response.map_err(|e| format!("{method} failed: {e}"))?;
            serde_json::to_value(result).map_err(|e| format!("{method}: {e}"))
        }
        () = context.ct.cancelled() => {
            let moot = CancelledNotificationParam::new(
                Some(id),
                Some("the tool call that asked was cancelled".into()),
            );
            if let Err(e) = context.peer.notify_cancelled(moot).await {
                eprintln!("evolve-mcp-test-server: notifications/cancelled not sent: {e}");
            }
            Err(format!("the call was cancelled while waiting for {method}"))
        }
    }
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn error(t: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(t)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_text(r: &CallToolResult) -> (&str, bool) {
        let t = r.content[0].as_text().map_or("", |t| t.text.as_str());
        (t, r.is_error == Some(true))
    }

    #[test]
    fn answers_from_client_results() {
        let user = Ask::User {
            message: "who?".into(),
        };
        let cases = [
            (
                &Ask::Roots,
                json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]}),
                ("file:///a\nfile:///b", false),
            ),
            (&Ask::Roots, json!({"roots": []}), ("(no roots)", false)),
            (
                &user,
                json!({"action": "accept", "content": {"ok": true, "name": "x"}}),
                (
                    r#"{"action":"accept","content":{"name":"x","ok":true}}"#,
                    false,
                ),
            ),
            (
                &user,
                json!({"action": "decline"}),
                (r#"{"action":"decline"}"#, false),
            ),
        ];
        for (ask, result, want) in cases {
            let answer = ask.answer(result.clone());
            assert_eq!(first_text(&answer), want, "{ask:?} {result}");
        }
        let bad = Ask::Roots.answer(json!({}));
        assert!(first_text(&bad).1, "{bad:?}");
        assert!(first_text(&bad)
            .0
            .starts_with("list_roots: the client's answer is not"));
        let bad = user.answer(json!({"action": "shrug"}));
        assert!(first_text(&bad)
            .0
            .starts_with("ask_user: the client's answer is not"));
    }

    #[test]
    fn capabilities_needed() {
        let caps = |v: Value| serde_json::from_value::<ClientCapabilities>(v).expect("caps");
        let user = Ask::User {
            message: "m".into(),
        };
        let cases = [
            (&Ask::Roots, None, false),
            (&Ask::Roots, Some(caps(json!({}))), false),
            (&Ask::Roots, Some(caps(json!({"roots": {}}))), true),
            (&user, Some(caps(json!({"roots": {}}))), false),
            (&user, Some(caps(json!({"elicitation": {}}))), true),
            (
                &user,
                Some(caps(json!({"elicitation": {"form": {}}}))),
                true,
            ),
            (
                &user,
                Some(caps(json!({"elicitation": {"url": {}}}))),
                false,
            ),
        ];
        for (ask, caps, ok) in cases {
            let missing = ask.missing_capability(caps.as_ref());
            assert_eq!(missing.is_none(), ok, "{ask:?} {caps:?}: {missing:?}");
        }
    }

    #[test]
    fn the_form_on_the_wire() {
        let request = serde_json::to_value(
            Ask::User {
                message: "Your name?".into(),
            }
            .input_request(),
        )
        .expect("JSON");
        assert_eq!(
            request,
            json!({
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "your name"},
                            "ok": {"type": "boolean", "description": "whether to go on"}
                        },
                        "required": ["name", "ok"]
                    }
                }
            })
        );
        let roots = serde_json::to_value(Ask::Roots.input_request()).expect("JSON");
        assert_eq!(roots, json!({"method": "roots/list"}));
    }

    #[test]
    fn a_retry_is_answered_only_with_the_state_echoed() {
        let mut params = CallToolRequestParams::new("list_roots");
        let first = ask_by_input_required(&Ask::Roots, &params);
        let CallToolResponse::InputRequired(asked) = first else {
            panic!("not an InputRequiredResult: {first:?}");
        };
        assert_eq!(asked.request_state.as_deref(), Some("list_roots:1"));
        let requests = asked.input_requests.expect("inputRequests");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["roots"]);

        let responses = BTreeMap::from([(
            "roots".to_string(),
            json!({"roots": [{"uri": "file:///w"}]}),
        )]);
        params = params.with_input_responses(responses);
        let CallToolResponse::Complete(no_state) = ask_by_input_required(&Ask::Roots, &params)
        else {
            panic!("no complete result");
        };
        assert_eq!(
            first_text(&no_state),
            (
                r#"list_roots: the retry must echo requestState "list_roots:1" from the InputRequiredResult (it sent none)"#,
                true
            )
        );
        params = params.with_request_state("list_roots:1");
        let CallToolResponse::Complete(done) = ask_by_input_required(&Ask::Roots, &params) else {
            panic!("no complete result");
        };
        assert_eq!(first_text(&done), ("file:///w", false));
    }
}
