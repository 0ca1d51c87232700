//! The chat messages of an OpenAI-compatible API, as plain data.
//!
//! The shell converts them to wire JSON (`content: null` with `tool_calls`, image parts,
//! `reasoning_content`); the core only needs the fields that decide cost and structure.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::text::estimate_message_tokens;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model (only at the start of a valid sequence).
    System,
    /// The person (or text the agent injects on the person's side).
    User,
    /// The model: text, tool calls, or both.
    Assistant,
    /// The result of one tool call, answering an assistant's `tool_calls` entry by id.
    Tool,
}

impl Role {
    /// The name OpenAI-compatible APIs use (`system`, `user`, `assistant`, `tool`).
    pub fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One function call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the tool result must quote in `tool_call_id`.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments as the model sent them (a JSON text, possibly damaged).
    pub arguments: String,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text. May be empty only for an assistant message that has tool calls.
    #[serde(default)]
    pub content: String,
    /// Calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: the tool's name (some hosts want it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model's thinking text (`reasoning_content`), if the host returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Image parts (URLs or data URLs); each costs a fixed number of tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

impl Message {
    /// A message with only a role and a text.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            reasoning: None,
            images: Vec::new(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant text message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message requesting tool calls (with optional accompanying text).
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        let mut m = Self::new(Role::Assistant, content);
        m.tool_calls = calls;
        m
    }

    /// The result of the call `id` of the tool `name`.
    pub fn tool_result(
        id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        let mut m = Self::new(Role::Tool, content);
        m.tool_call_id = Some(id.into());
        m.name = Some(name.into());
        m
    }

    /// The same message with another text (the rest cloned, the old text not copied).
    pub fn with_content(&self, content: String) -> Self {
        Message {
            role: self.role,
            content,
            tool_calls: self.tool_calls.clone(),
            tool_call_id: self.tool_call_id.clone(),
            name: self.name.clone(),
            reasoning: self.reasoning.clone(),
            images: self.images.clone(),
        }
    }

    /// Estimated tokens: content, reasoning, tool-call names and arguments, images and
    /// the per-message overhead (see [`crate::text::estimate_message_tokens`]).
    pub fn estimate_tokens(&self) -> usize {
        let calls = self
            .tool_calls
            .iter()
            .flat_map(|c| [c.name.as_str(), c.arguments.as_str()]);
        estimate_message_tokens(
            core::iter::once(self.content.as_str())
                .chain(self.reasoning.as_deref())
                .chain(calls),
            self.images.len(),
        )
    }

    /// True for an assistant message that would go out with no text and no tool call
    /// (hosts reject it; [`super::repair_sequence`] removes it).
    pub fn is_empty_assistant(&self) -> bool {
        self.role == Role::Assistant && self.tool_calls.is_empty() && self.content.trim().is_empty()
    }
}

/// Sum of [`Message::estimate_tokens`] over a list.
pub fn estimate_messages_tokens(messages: &[Message]) -> usize {
    messages.iter().map(Message::estimate_tokens).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn estimate_counts_content_reasoning_calls_and_images() {
        let mut m = Message::assistant_calls(
            "abcd",
            vec![ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: "{\"a\":1}".into(),
            }],
        );
        // 4 overhead + 1 (abcd) + 1 (read) + 2 ({"a":1} = 7 chars)
        assert_eq!(m.estimate_tokens(), 8);
        m.reasoning = Some("abcdabcd".into());
        assert_eq!(m.estimate_tokens(), 10);
        m.images = vec!["data:x".into(), "data:y".into()];
        assert_eq!(m.estimate_tokens(), 180);
        assert_eq!(Message::user("").estimate_tokens(), 4);
    }

    #[test]
    fn serde_uses_lowercase_roles_and_skips_empty_fields() {
        let m = Message::tool_result("c1", "read", "ok");
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"role":"tool","content":"ok","tool_call_id":"c1","name":"read"}"#
        );
        let back: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
        assert_eq!(back, Message::user("hi"));
    }

    #[test]
    fn empty_assistant_means_no_text_and_no_calls() {
        assert!(Message::assistant("  \n").is_empty_assistant());
        assert!(!Message::assistant("ok").is_empty_assistant());
        assert!(!Message::user("").is_empty_assistant());
        let calls = vec![ToolCall {
            id: "1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        }];
        assert!(!Message::assistant_calls("", calls).is_empty_assistant());
    }
}
