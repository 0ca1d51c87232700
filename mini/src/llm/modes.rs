//! How a request's tools reach the model (`[model] tools`), so that the caller always
//! gets the calls in `message.tool_calls`, whatever the model can do.
//!
//! - `native`: the OpenAI `tools` list, as the caller gave it;
//! - `prompt`: no `tools` list; the tools described in the system message and earlier
//!   rounds written as text ([`super::prompted`]);
//! - `off`: no tools at all, and nothing read as a plan;
//! - `auto`: native, unless this model is known to have no tool calling
//!   ([`super::learned`]); a server that answers a request with tools that the model
//!   does not support them gets the same request once more in prompt mode, and the model
//!   is remembered.
//!
//! In native and prompt mode an answer without native calls is read for a plan written
//! as text (`evolve_core::tool_plan`; small models write one even when offered native
//! tools), and its calls become `tool_calls`, the prose around them the content. While
//! such an answer streams, [`PlanGate`] keeps what may be a plan from `on_delta`: the
//! user sees prose as it comes and never a plan's JSON.

use std::sync::atomic::Ordering;

use evolve_core::history::ToolCall;
use evolve_core::tool_plan::{self, PlanGate};

use super::client::Outgoing;
use super::settings::ToolCalling;
use super::{prompted, AnswerCut, ChatModel, ChatRequest, ChatResponse, Client, Delta, LlmError};

use crate::cancel::Cancel;

/// The ids of calls read from an answer's text start with this (`call_text_1`, …).
const TEXT_CALL_ID: &str = "call_text_";

/// Whether a call was read from the answer's text rather than sent as a native call.
pub(crate) fn written_as_text(call: &ToolCall) -> bool {
    call.id.starts_with(TEXT_CALL_ID)
}

/// How one request is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// As the caller gave it (no tools offered, or `tool_choice: none`).
    AsIs,
    Native,
    Prompt,
    Off,
}

impl Client {
    pub(super) fn chat_impl(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        let model = self.model_name(req.role);
        let base_url = crate::secret::display_url(&self.config.base_url);
        let mode = match self.config.tools {
            _ if req.tools.is_empty() || req.tool_choice.as_deref() == Some("none") => Mode::AsIs,
            ToolCalling::Off => Mode::Off,
            ToolCalling::Native => Mode::Native,
            ToolCalling::Prompt => Mode::Prompt,
            ToolCalling::Auto if self.learned.lacks_tools(&base_url, model) => Mode::Prompt,
            ToolCalling::Auto => Mode::Native,
        };
        let as_given = Outgoing {
            messages: &req.messages,
            tools: &req.tools,
            tool_choice: req.tool_choice.as_deref(),
        };
        match mode {
            Mode::AsIs => self.send(req, as_given, on_delta, cancel),
            Mode::Off => {
                let bare = Outgoing {
                    tools: &[],
                    tool_choice: None,
                    ..as_given
                };
                self.send(req, bare, on_delta, cancel)
            }
            Mode::Native => match self.planned(req, as_given, on_delta, cancel) {
                Err(LlmError::Status {
                    status,
                    ref message,
                    ..
                }) if self.config.tools == ToolCalling::Auto
                    && prompted::refuses_tools(status, message) =>
                {
                    log::warn!(
                        "{base_url}: {model} does not support native tool calling ({message}); describing the tools in the prompt instead, for this model from now on (remembered in {}; set [model] tools = \"native\" to send them anyway)",
                        self.config
                            .tools_learned_file
                            .as_deref()
                            .map_or("this process".into(), |f| f.display().to_string())
                    );
                    self.learned.remember(&base_url, model);
                    self.prompt_mode(req, on_delta, cancel)
                }
                other => other,
            },
            Mode::Prompt => self.prompt_mode(req, on_delta, cancel),
        }
    }

    /// The request in prompt mode.
    fn prompt_mode(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        let messages = prompted::messages(&req.messages, &req.tools, req.tool_choice.as_deref());
        let out = Outgoing {
            messages: &messages,
            tools: &[],
            tool_choice: None,
        };
        self.planned(req, out, on_delta, cancel)
    }

    /// Sends `out` and reads a plan written as text in the answer into its tool calls;
    /// what may be a plan is kept from `on_delta` until the answer shows it is none.
    fn planned(
        &self,
        req: &ChatRequest,
        out: Outgoing<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        let mut names: Vec<String> = req.tools.iter().map(|t| t.name.clone()).collect();
        names.extend(req.known_tools.iter().cloned());
        let mut gate = PlanGate::new(names.clone());
        let mut gated = |d: Delta<'_>| match d {
            Delta::Content(text) => {
                let shown = gate.push(text);
                if !shown.is_empty() {
                    on_delta(Delta::Content(&shown));
                }
            }
            other => on_delta(other),
        };
        let mut resp = self.send(req, out, &mut gated, cancel)?;
        let native = !resp.message.tool_calls.is_empty()
            || matches!(resp.cut, Some(AnswerCut::ToolArguments(_)));
        let plan = if native {
            None
        } else {
            Some(tool_plan::parse(&resp.message.content, &names)).filter(|p| !p.calls.is_empty())
        };
        let rest = gate.finish(plan.is_some());
        if !rest.is_empty() {
            on_delta(Delta::Content(&rest));
        }
        if let Some(plan) = plan {
            log::debug!(
                "the model wrote {} tool call(s) as text: {}",
                plan.calls.len(),
                plan.calls
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            resp.message.tool_calls = plan
                .calls
                .into_iter()
                .map(|c| ToolCall {
                    id: format!(
                        "{TEXT_CALL_ID}{}",
                        self.plan_ids.fetch_add(1, Ordering::Relaxed) + 1
                    ),
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect();
            resp.message.content = plan.rest;
            resp.finish_reason = Some("tool_calls".into());
        }
        Ok(resp)
    }
}
