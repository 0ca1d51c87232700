//! The terminal side of a turn ([`Terminal`]): the answer streamed as it arrives, each
//! tool call and its result shown, the questions for a person asked (L3 once, L4 twice,
//! the second repeating the exact arguments), and the lines after a turn (tokens, time,
//! the background work it started).

use std::io::Write;

use evolve_core::permission::{Decision, Level, PendingCall, RefusalReason};
use evolve_core::text::{one_line, Lang};

use super::Lines;
use crate::agents::SubEvent;
use crate::agents::{Heard, PostTurn, ToolRun, TurnIo};
use crate::cli::interrupt;
use crate::cli::printable;
use crate::llm::Delta;
use crate::mcp::elicit::{ElicitReply, Elicitation};

/// The terminal side of a turn.
pub(super) struct Terminal<'a> {
    pub(super) lines: &'a mut Lines,
    pub(super) streamed: bool,
    /// When the last progress line was printed (at most one a second).
    pub(super) progressed: Option<std::time::Instant>,
}

impl Terminal<'_> {
    fn say(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

impl TurnIo for Terminal<'_> {
    fn on_delta(&mut self, delta: &Delta<'_>) {
        if let Delta::Content(text) = delta {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(printable(text, true).as_bytes());
            let _ = out.flush();
            self.streamed = true;
        }
    }

    fn on_tool_start(&mut self, name: &str, arguments: &str, level: Level) {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        self.say(&format!(
            "  ⚙ {name} {} [{level}]",
            one_line(arguments, 160)
        ));
    }

    fn on_notice(&mut self, text: &str) {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        self.say(&format!("  ⚠ {}", printable(text, false)));
    }

    fn on_tool_progress(&mut self, _name: &str, progress: &crate::mcp::Progress) {
        let finished = progress.finished();
        if !finished
            && self
                .progressed
                .is_some_and(|at| at.elapsed() < std::time::Duration::from_secs(1))
        {
            return;
        }
        self.progressed = Some(std::time::Instant::now());
        self.say(&format!("    … {}", printable(&progress.line(), false)));
    }

    fn on_subtask(&mut self, event: &SubEvent) {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        // Indented under the subtasks call: a line per sub-turn, and its calls below it.
        match event {
            SubEvent::Start { index, task } => {
                self.say(&format!("    ↳ {index}. {}", one_line(task, 140)));
            }
            SubEvent::ToolStart {
                name,
                arguments,
                level,
                ..
            } => self.say(&format!(
                "        ⚙ {name} {} [{level}]",
                one_line(arguments, 120)
            )),
            SubEvent::ToolEnd { run, .. } if !run.ran => {
                let why = run.answer.as_deref().unwrap_or("refused");
                self.say(&format!(
                    "        ✗ {} not run ({why})",
                    printable(&run.name, false)
                ));
            }
            SubEvent::ToolEnd { .. } => {}
            SubEvent::End(run) => match &run.failed {
                Some(why) => self.say(&format!("    ✗ {}. failed: {why}", run.index)),
                None => self.say(&format!(
                    "    ✓ {}. {} ({} ms)",
                    run.index,
                    one_line(&run.reply, 100),
                    run.ms
                )),
            },
        }
    }

    fn on_tool_end(&mut self, run: &ToolRun, _output: &str) {
        if !run.ran {
            let why = match (run.answer.as_deref(), run.decision) {
                (Some(answer), _) => answer.to_string(),
                (None, Some(Decision::Refuse(RefusalReason::Dangerous))) => format!(
                    "{}: dangerous, never run",
                    run.level.map_or("L5".to_string(), |l| l.to_string())
                ),
                _ => "refused".to_string(),
            };
            self.say(&format!(
                "  ✗ {} not run ({why})",
                printable(&run.name, false)
            ));
        } else if run.is_error {
            self.say(&format!("  ✗ {} failed", run.name));
        }
    }

    fn elicit(&mut self, _name: &str, question: &Elicitation, lang: Lang) -> ElicitReply {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        let zh = lang == Lang::Zh;
        self.say(&format!(
            "  ? {} {}: {}",
            if zh { "MCP 服务器" } else { "MCP server" },
            printable(&question.server, false),
            printable(&question.message, true)
        ));
        let prompt = |text: &str| {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{text}");
            let _ = out.flush();
        };
        prompt(if zh {
            "    回答吗？[是/否] "
        } else {
            "    Answer it? [yes/no] "
        });
        let Some(line) = self.lines.next_unless_cancelled() else {
            self.say("");
            return ElicitReply::Cancel;
        };
        if !matches!(
            line.trim().to_lowercase().as_str(),
            "y" | "yes" | "是" | "好" | "ok"
        ) {
            return ElicitReply::Decline;
        }
        let mut content = serde_json::Map::new();
        let mut ask: Vec<&crate::mcp::elicit::Field> = question.fields.iter().collect();
        for _ in 0..3 {
            for field in &ask {
                prompt(&format!(
                    "    {} ({}): ",
                    printable(&field.title, false),
                    field.hint()
                ));
                let Some(line) = self.lines.next_unless_cancelled() else {
                    self.say("");
                    return ElicitReply::Cancel;
                };
                if line.trim().is_empty() {
                    content.remove(&field.name);
                } else {
                    content.insert(field.name.clone(), serde_json::Value::String(line));
                }
            }
            match question.check(&content) {
                Ok(checked) => return ElicitReply::Accept(checked),
                Err(wrong) => {
                    for (name, why) in &wrong {
                        self.say(&format!("    ✗ {} {why}", printable(name, false)));
                    }
                    ask = question
                        .fields
                        .iter()
                        .filter(|f| wrong.iter().any(|(n, _)| *n == f.name))
                        .collect();
                }
            }
        }
        ElicitReply::Cancel
    }

    fn ask(&mut self, call: &PendingCall, lang: Lang) -> Heard {
        if self.streamed {
            self.say("");
            self.streamed = false;
        }
        let always = call.level <= Level::L3;
        let choices = match (lang, always) {
            (Lang::Zh, true) => "[是/否/总是]",
            (Lang::Zh, false) => "[是/否]",
            (Lang::En, true) => "[yes/no/always]",
            (Lang::En, false) => "[yes/no]",
        };
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{} {choices} ", printable(&call.prompt(lang), true));
        let _ = out.flush();
        drop(out);
        match self.lines.next_unless_cancelled() {
            Some(line) => Heard::Reply(line),
            // Ctrl-C: refused, and the turn ends here (kept in the session).
            None if interrupt::cancelled() => {
                self.say("");
                Heard::Stop
            }
            // End of input (Ctrl-D, a closed terminal): the call waits in the session;
            // the next message there answers it.
            None => {
                self.say("");
                self.say(match lang {
                    Lang::Zh => "（这个调用仍在等待回答：在这个会话里的下一条消息回答 是/否，其他消息则视为拒绝）",
                    Lang::En => "(the call waits for an answer: the next message in this session answers it with yes or no; anything else refuses it)",
                });
                Heard::Away
            }
        }
    }
}

/// The line after an answer: what the turn did (the Evolve Agent design shows it with the reply).
pub(super) fn turn_line(r: &crate::agents::TurnRecord) -> String {
    let mut bits = vec![format!("turn {}", r.turn)];
    bits.push(match r.memories.len() {
        1 => "1 memory".to_string(),
        n => format!("{n} memories"),
    });
    if !r.skills.is_empty() {
        bits.push(format!("skills: {}", r.skills.join(", ")));
    }
    if !r.tools.is_empty() {
        let tools: Vec<String> = r
            .tools
            .iter()
            .map(|t| {
                let mark = match (t.ran, t.is_error) {
                    (true, false) => "✓",
                    (true, true) => "!",
                    _ => "✗",
                };
                format!("{} {mark}", printable(&t.name, false))
            })
            .collect();
        bits.push(format!("tools: {}", tools.join(", ")));
    }
    bits.push(answer_time(r.answer_ms, r.person_ms));
    format!("  ↳ {}", bits.join(" · "))
}

/// How long the answer took, and how much of it was the person's own answer to a
/// question about a call (not the agent's or the model's time).
fn answer_time(answer_ms: u64, person_ms: u64) -> String {
    let secs = |ms: u64| ms as f64 / 1000.0;
    if person_ms == 0 {
        format!("{:.1} s", secs(answer_ms))
    } else {
        format!(
            "{:.1} s, {:.1} s of it waiting for you",
            secs(answer_ms),
            secs(person_ms)
        )
    }
}

/// The line for the background work of the last answer, when it found something.
pub(super) fn post_line(p: &PostTurn) -> Option<String> {
    let mut bits = Vec::new();
    if let Some(e) = &p.evaluation {
        bits.push(format!(
            "score {:.2} — {}",
            e.score,
            printable(&one_line(&e.reason, 100), false)
        ));
    }
    if p.memories_saved > 0 {
        bits.push(format!("{} saved to memory", p.memories_saved));
    }
    if let Some(r) = p.reflection.as_ref().or(p.lesson.as_ref()) {
        bits.push(format!("lesson: {}", printable(&one_line(r, 100), false)));
    }
    if let Some(s) = &p.learned_skill {
        bits.push(format!("learned the skill {}", printable(s, false)));
    }
    if let Some(s) = &p.skill_pending {
        let s = printable(s, false);
        bits.push(format!(
            "drafted the skill {s} from outside text: `evolve skills show {s}`, then `evolve skills approve {s}`"
        ));
    }
    (!bits.is_empty()).then(|| format!("  ↳ {}", bits.join(" · ")))
}

/// Dim on a terminal (unless NO_COLOR), as it is otherwise.
pub(super) fn dim(text: &str, tty: bool) -> String {
    if tty && std::env::var_os("NO_COLOR").is_none() {
        format!("\x1b[2m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::answer_time;

    #[test]
    fn the_answer_time_says_how_much_of_it_was_spent_waiting_for_the_person() {
        let table = [
            (1_234, 0, "1.2 s"),
            (61_500, 60_000, "61.5 s, 60.0 s of it waiting for you"),
            (0, 0, "0.0 s"),
        ];
        for (answer, person, line) in table {
            assert_eq!(answer_time(answer, person), line);
        }
    }
}
