//! What passes between a turn and its front end (`evolve ask`, `evolve chat`, the web
//! chat, a scheduled task): the input of a turn, the events it reports while it runs,
//! and the questions it puts to a person.

use evolve_core::permission::{Level, PendingCall, Policy};
use evolve_core::text::{clip_chars, Lang};
use serde_json::{json, Value};

use super::record::{SubtaskRun, ToolRun, SUBTASK_REPLY_CHARS};
use crate::cancel::Cancel;
use crate::llm::Delta;
use crate::mcp::elicit::{ElicitReply, Elicitation};

/// One input to the agent.
pub struct TurnInput<'a> {
    /// Continue this session; `None` starts a new one.
    pub session: Option<&'a str>,
    /// The user's message.
    pub text: &'a str,
    /// Interactive (a person can be asked) or headless (`ask`, cron).
    pub policy: Policy,
    /// Stream the answer through [`TurnIo::on_delta`].
    pub stream: bool,
    /// Set (e.g. by Ctrl-C) to stop the answer.
    pub cancel: &'a Cancel,
    /// Make the first model call use this tool (`evolve ask --tool NAME`).
    pub force_tool: Option<&'a str>,
    /// A turn of the branch shown, answered again by this one (regenerate, or its
    /// question edited): this turn is a new version of it, its history the turns
    /// before it; the turns after it stay on their branch (kept for the person).
    pub replaces: Option<u64>,
    /// The message's images (data URLs or URLs, checked by [`crate::llm::image`]), sent
    /// as image parts with the question and kept with it in the session.
    pub images: &'a [String],
    /// Who wrote the message: the person (every front end), or the world — a member of
    /// a channel's group who is not its owner: such a message is untrusted text, not
    /// the person's words (the egress rule reads it so, and it approves nothing).
    pub from: evolve_core::provenance::Source,
}

/// What the interface does during a turn.
pub trait TurnIo {
    /// A streamed piece of the answer.
    fn on_delta(&mut self, _delta: &Delta<'_>) {}
    /// A tool call is about to run (after the permission check).
    fn on_tool_start(&mut self, _name: &str, _arguments: &str, _level: Level) {}
    /// A running MCP tool reported how far it is (`notifications/progress`).
    fn on_tool_progress(&mut self, _name: &str, _progress: &crate::mcp::Progress) {}
    /// The server of the running MCP tool `name` asks the person for input
    /// (`elicitation/create`). Declined where nobody can be asked (headless runs).
    fn elicit(&mut self, _name: &str, _question: &Elicitation, _lang: Lang) -> ElicitReply {
        ElicitReply::Decline
    }
    /// A tool call finished (ran or was refused); `output` is what the model was told.
    fn on_tool_end(&mut self, _run: &ToolRun, _output: &str) {}
    /// What a person says to the question about a call (`call.prompt(lang)` says what
    /// to show; the second question of an L4 call repeats the exact arguments). Called
    /// only under [`Policy::Interactive`].
    fn ask(&mut self, call: &PendingCall, lang: Lang) -> Heard;
    /// What a sub-turn of a `subtasks` call did (started, ran a tool, ended).
    fn on_subtask(&mut self, _event: &SubEvent) {}
    /// Something the person should know before a question about a call (an MCP tool
    /// whose definition changed since they allowed it). Logged where nobody reads.
    fn on_notice(&mut self, text: &str) {
        log::warn!("{text}");
    }
}

/// What came back from a question to a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A reply: yes, no, always — or anything else, and the question is asked again.
    Reply(String),
    /// Nobody answers now (end of input, a closed terminal, the client went away): the
    /// turn stays parked on the session, and its next input settles it.
    Away,
    /// The person stopped at the question (Ctrl-C): the call is refused and the turn
    /// ends there, kept with its question.
    Stop,
}

/// What the parent's front end hears of its sub-turns (nested cards in the UI, indented
/// lines in `evolve chat`).
#[derive(Debug, Clone)]
pub enum SubEvent {
    /// Sub-turn `index` started on `task`.
    Start { index: usize, task: String },
    /// One of its tool calls is about to run.
    ToolStart {
        index: usize,
        name: String,
        arguments: String,
        level: Level,
    },
    /// One of its tool calls finished; `output` is what its model was told.
    ToolEnd {
        index: usize,
        run: ToolRun,
        output: String,
    },
    /// It ended (answered or failed).
    End(SubtaskRun),
}

impl SubEvent {
    /// The event as the web UI's `evolve.subtask` event carries it.
    pub fn to_json(&self) -> Value {
        match self {
            SubEvent::Start { index, task } => {
                json!({"phase": "start", "index": index, "task": task})
            }
            SubEvent::ToolStart {
                index,
                name,
                arguments,
                level,
            } => json!({"phase": "tool_start", "index": index, "name": name,
                "arguments": arguments, "level": level.to_string()}),
            SubEvent::ToolEnd { index, run, output } => {
                let mut v = serde_json::to_value(run).unwrap_or_default();
                v["phase"] = json!("tool_end");
                v["index"] = json!(index);
                v["output"] = json!(clip_chars(output, 2_000));
                v
            }
            SubEvent::End(run) => {
                let mut v = serde_json::to_value(run).unwrap_or_default();
                v["phase"] = json!("end");
                v["reply"] = json!(clip_chars(&run.reply, SUBTASK_REPLY_CHARS));
                v
            }
        }
    }
}
