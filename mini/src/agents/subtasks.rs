//! Sub-agents: the `subtasks` tool (tea-agent's toolkit_parallel_subtasks and
//! toolkit_subagent; the Evolve Agent design: the manager gives independent parts to agents in
//! parallel, waits, and summarises).
//!
//! The model splits a task into at most `[agent] subtasks` independent questions; each
//! is answered by a sub-turn of its own — the question, the memories and skills it
//! selects, the same tools but `subtasks` (one level of nesting), no history of the
//! parent — at most `[agent] subtask_parallel` at a time, and the answers come back as
//! the tool's output for the parent to summarise.
//!
//! What a sub-turn may do is what its parent may: the parent turn's policy and the
//! session's grants, checked call by call as in any turn. A call that needs a person is
//! asked through the parent's front end ([`SubIo`] hands the question to the parent's
//! thread, which alone talks to the front end, one question at a time), or refused in a
//! headless run as the parent's would be; a sub-turn is never parked. Its tokens count
//! in the parent's usage, and each sub-turn is in the parent's turn record
//! ([`SubtaskRun`](super::record::SubtaskRun)).

use std::sync::mpsc::{self, Sender};

use evolve_core::permission::{Level, PendingCall};
use evolve_core::text::{clip_chars, Lang};
use serde_json::{json, Value};

use super::io::{Heard, SubEvent, TurnIo};
use super::record::{SubtaskRun, ToolRun, SUBTASK_REPLY_CHARS};
use crate::llm::ToolSpec;
use crate::mcp::elicit::{ElicitReply, Elicitation};

/// The tool's name.
pub const SUBTASKS: &str = "subtasks";

/// Characters of one subtask's text.
const TASK_CHARS: usize = 2_000;

/// The tool's schema for at most `max` subtasks.
pub fn spec(max: usize) -> ToolSpec {
    ToolSpec {
        name: SUBTASKS.to_string(),
        description: format!(
            "Split a task into independent subtasks that run in parallel, each answered by \
             a helper agent of its own, and get their answers back to combine. Use it for \
             parts that do not depend on each other (research several topics, check \
             several files, compare options). Each helper sees only its subtask's text — \
             not this conversation — so write each one complete and self-contained. At \
             most {max} subtasks; helpers have the same tools and permissions as you, \
             except subtasks itself."
        ),
        parameters: json!({
            "type": "object",
            "properties": {"tasks": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": max,
                "description": "The subtasks, each a complete, self-contained instruction",
            }},
            "required": ["tasks"],
        }),
    }
}

/// The subtasks of a call's arguments, or what the model is told to send instead.
pub fn parse(arguments: &str, max: usize) -> Result<Vec<String>, String> {
    let usage = format!(
        "send {{\"tasks\": [\"first subtask\", \"second subtask\"]}}: 1 to {max} complete, \
         self-contained instructions"
    );
    let v: Value = serde_json::from_str(arguments).map_err(|_| usage.clone())?;
    let Some(items) = v.get("tasks").and_then(Value::as_array) else {
        return Err(usage);
    };
    let tasks: Vec<String> = items
        .iter()
        .filter_map(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| clip_chars(t, TASK_CHARS))
        .collect();
    if tasks.is_empty() || tasks.len() != items.len() {
        return Err(usage);
    }
    if tasks.len() > max {
        return Err(format!(
            "{} subtasks asked for; at most {max} run per call — merge some, or call \
             subtasks again for the rest",
            tasks.len()
        ));
    }
    Ok(tasks)
}

/// What a sub-turn's thread asks of the parent's thread.
pub enum ToParent {
    Event(SubEvent),
    Ask {
        call: PendingCall,
        lang: Lang,
        reply: Sender<Heard>,
    },
    Elicit {
        tool: String,
        question: Elicitation,
        lang: Lang,
        reply: Sender<ElicitReply>,
    },
    Progress {
        name: String,
        progress: crate::mcp::Progress,
    },
}

/// The front end of a sub-turn: everything goes to the parent's thread.
pub struct SubIo {
    pub index: usize,
    pub to_parent: Sender<ToParent>,
}

impl TurnIo for SubIo {
    fn on_tool_start(&mut self, name: &str, arguments: &str, level: Level) {
        let _ = self.to_parent.send(ToParent::Event(SubEvent::ToolStart {
            index: self.index,
            name: name.to_string(),
            arguments: arguments.to_string(),
            level,
        }));
    }

    fn on_tool_progress(&mut self, name: &str, progress: &crate::mcp::Progress) {
        let _ = self.to_parent.send(ToParent::Progress {
            name: name.to_string(),
            progress: progress.clone(),
        });
    }

    fn elicit(&mut self, tool: &str, question: &Elicitation, lang: Lang) -> ElicitReply {
        let (tx, rx) = mpsc::channel();
        let asked = ToParent::Elicit {
            tool: tool.to_string(),
            question: question.clone(),
            lang,
            reply: tx,
        };
        if self.to_parent.send(asked).is_err() {
            return ElicitReply::Decline;
        }
        rx.recv().unwrap_or(ElicitReply::Decline)
    }

    fn on_tool_end(&mut self, run: &ToolRun, output: &str) {
        let _ = self.to_parent.send(ToParent::Event(SubEvent::ToolEnd {
            index: self.index,
            run: run.clone(),
            output: clip_chars(output, 2_000),
        }));
    }

    fn ask(&mut self, call: &PendingCall, lang: Lang) -> Heard {
        let (tx, rx) = mpsc::channel();
        let asked = ToParent::Ask {
            call: call.clone(),
            lang,
            reply: tx,
        };
        if self.to_parent.send(asked).is_err() {
            return Heard::Away;
        }
        rx.recv().unwrap_or(Heard::Away)
    }
}

/// The tool's output for the parent model: each subtask with its answer.
pub fn output(runs: &[SubtaskRun]) -> String {
    let failed = runs.iter().filter(|r| r.failed.is_some()).count();
    let mut text = format!(
        "{} subtask{} ran, each in its own turn without this conversation{}. Combine \
         their answers for the user.\n",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        if failed > 0 {
            format!("; {failed} failed")
        } else {
            String::new()
        }
    );
    for r in runs {
        text.push_str(&format!(
            "\n## Subtask {}: {}\n",
            r.index,
            clip_chars(&r.task, 200)
        ));
        match &r.failed {
            Some(why) => text.push_str(&format!("(no answer: {why})\n")),
            None => {
                text.push_str(clip_chars(r.reply.trim(), SUBTASK_REPLY_CHARS).as_str());
                text.push('\n');
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    #[test]
    fn the_arguments_are_a_list_of_complete_tasks() {
        assert_eq!(
            parse(r#"{"tasks": [" Find A ", "Find B"]}"#, 4),
            Ok(vec!["Find A".to_string(), "Find B".to_string()])
        );
        for bad in [
            "",
            "{}",
            r#"{"tasks": []}"#,
            r#"{"tasks": "one"}"#,
            r#"{"tasks": ["ok", ""]}"#,
            r#"{"tasks": ["ok", 3]}"#,
        ] {
            let e = parse(bad, 4).unwrap_err();
            assert!(e.contains("send {\"tasks\""), "{bad}: {e}");
        }
        let e = parse(r#"{"tasks": ["a", "b", "c"]}"#, 2).unwrap_err();
        assert!(e.contains("3 subtasks asked for; at most 2"), "{e}");
    }

    #[test]
    fn the_output_gives_each_answer_under_its_task_and_says_which_failed() {
        let run = |index: usize, reply: &str, failed: Option<&str>| SubtaskRun {
            index,
            task: format!("task {index}"),
            reply: reply.to_string(),
            tools: Vec::new(),
            steps: 1,
            ms: 5,
            usage: Usage::default(),
            needs_person: false,
            failed: failed.map(str::to_string),
        };
        let text = output(&[run(1, "Paris.", None), run(2, "", Some("the model failed"))]);
        assert!(text.starts_with("2 subtasks ran"), "{text}");
        assert!(text.contains("; 1 failed"), "{text}");
        assert!(text.contains("## Subtask 1: task 1\nParis.\n"), "{text}");
        assert!(
            text.contains("## Subtask 2: task 2\n(no answer: the model failed)"),
            "{text}"
        );
    }
}
