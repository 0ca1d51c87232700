//! The versions of the agent's system prompt: what a version is as a user sees it,
//! the checks every new version passes, and `evolve` — the cheap model rewriting the
//! active prompt from what the agent learned (reflection and experience lessons,
//! low-graded replies with their reasons, the user's standing rules). Shared by
//! `evolve prompt …` and the `/v1/prompt` routes of `evolve serve`.
//!
//! What it decides: the length cap and what counts as a usable prompt (non-empty, at
//! most [`SYSTEM_PROMPT_MAX_CHARS`], not a code block, JSON or a truncated reply), what
//! the evolve request holds and how much of each part, and the source a version is
//! listed with. A new version is active at once; the manager reads the active version
//! at the start of every turn, so the next turn uses it. Nothing is stored when a
//! check fails.

use evolve_core::history::Message;
use evolve_core::memory::{Category, Memory, Priority};
use evolve_core::text::{clip_chars, one_line};
use evolve_core::Timestamp;

use super::prompts::{evolve_prompt, DEFAULT_SYSTEM_PROMPT, SYSTEM_PROMPT_MAX_CHARS};
use super::REFLECTION_TAG;
use crate::cancel::Cancel;
use crate::llm::{ChatModel, ChatRequest, LlmError, ModelRole};
use crate::store::{self, Evaluation, PromptVersion, Store, StoreError};

// ---- what a version is, as the user sees it ----

/// A version as `list` and `show` present it: the stored ones and version 0, the
/// built-in prompt (which is never stored, so it always reads the binary's text).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    pub version: u64,
    pub created_at: Option<Timestamp>,
    pub source: &'static str,
    pub note: String,
    pub text: String,
    pub active: bool,
}

impl Listed {
    pub(crate) fn builtin(active: bool) -> Listed {
        Listed {
            version: 0,
            created_at: None,
            source: "default",
            note: "built into evolve".into(),
            text: DEFAULT_SYSTEM_PROMPT.into(),
            active,
        }
    }

    pub(crate) fn stored(p: &PromptVersion, active: bool) -> Listed {
        Listed {
            version: p.version,
            created_at: Some(p.created_at),
            source: source_of(&p.note),
            note: p.note.clone(),
            text: p.text.clone(),
            active,
        }
    }

    pub(crate) fn json(&self, with_text: bool) -> serde_json::Value {
        let mut v = serde_json::json!({
            "version": self.version,
            "created_at": self.created_at,
            "created": self.created_at.map(store::format_time),
            "source": self.source,
            "note": self.note,
            "first_line": first_line(&self.text),
            "chars": self.text.chars().count(),
            "active": self.active,
        });
        if with_text {
            v["text"] = serde_json::Value::String(self.text.clone());
        }
        v
    }

    /// `* 3  2026-11-30  evolved  You are Evolve, a personal assistant …`
    pub(crate) fn line(&self) -> String {
        format!(
            "{} {:>3}  {:<10}  {:<7}  {}",
            if self.active { "*" } else { " " },
            self.version,
            self.created_at
                .map_or_else(|| "built-in".to_string(), store::format_date),
            self.source,
            one_line(&first_line(&self.text), 70)
        )
    }
}

/// Where a version came from, from the note it was stored with (`set from FILE`,
/// `evolved from …`): the notes this module writes start with the source's name.
pub(crate) fn source_of(note: &str) -> &'static str {
    match note.split_whitespace().next().unwrap_or("") {
        "set" => "set",
        "evolved" => "evolved",
        "rollback" => "rollback",
        _ => "other",
    }
}

/// The first non-blank line, trimmed.
pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// Version 0 (built-in) and every stored version, oldest first, the active one marked.
pub(crate) fn versions(store: &Store) -> Result<Vec<Listed>, StoreError> {
    let active = store.active_prompt()?.map(|p| p.version);
    let mut out = vec![Listed::builtin(active.is_none())];
    for p in store.prompt_versions()? {
        let is_active = active == Some(p.version);
        out.push(Listed::stored(&p, is_active));
    }
    Ok(out)
}

/// The text the next turn starts its system prompt with.
pub(crate) fn active_text(store: &Store) -> Result<String, StoreError> {
    Ok(store
        .active_prompt()?
        .map_or_else(|| DEFAULT_SYSTEM_PROMPT.to_string(), |p| p.text))
}

// ---- the checks every new version passes ----

/// Why a text cannot be a system prompt, for a file or a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadPrompt {
    #[error("it is empty: a system prompt needs text")]
    Empty,
    #[error("it holds NUL bytes: a system prompt is plain text")]
    Nul,
    /// Its length in characters.
    #[error(
        "it is {0} characters long; a system prompt may have at most \
         {SYSTEM_PROMPT_MAX_CHARS} (long prompts crowd out memories and history)"
    )]
    TooLong(usize),
}

/// Why a model's reply is not stored as the new prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RefusedReply {
    #[error("the reply was cut off at the answer budget")]
    CutOff,
    #[error("the reply is not a usable prompt: {0}")]
    NotAPrompt(#[source] BadPrompt),
    #[error("the reply holds a code block, not a plain-text prompt")]
    CodeBlock,
    #[error("the reply is JSON, not a plain-text prompt")]
    Json,
    #[error("the reply repeats the request instead of writing a prompt")]
    RepeatsRequest,
    /// Its length in characters.
    #[error("the reply is only {0} characters: too short to replace the system prompt")]
    TooShort(usize),
}

/// A prompt text fit to be stored: trimmed, non-empty, at most
/// [`SYSTEM_PROMPT_MAX_CHARS`].
pub(crate) fn check_text(text: &str) -> Result<String, BadPrompt> {
    let text = text.trim();
    if text.is_empty() {
        return Err(BadPrompt::Empty);
    }
    if text.contains('\u{0}') {
        return Err(BadPrompt::Nul);
    }
    let chars = text.chars().count();
    if chars > SYSTEM_PROMPT_MAX_CHARS {
        return Err(BadPrompt::TooLong(chars));
    }
    Ok(text.to_string())
}

/// The new prompt in a model's reply: a "Here is …:" line before it and fences around
/// it are removed; a
/// reply that was cut off, is JSON, still holds a fence, quotes the request's marker,
/// or is too short to be a prompt is refused, as is anything [`check_text`] refuses.
pub(crate) fn clean_reply(reply: &str, truncated: bool) -> Result<String, RefusedReply> {
    if truncated {
        return Err(RefusedReply::CutOff);
    }
    let mut text = reply.trim();
    // "Here is the improved system prompt:" before the prompt itself.
    if let Some((first, rest)) = text.split_once('\n') {
        let lower = first.trim().to_lowercase();
        if (lower.starts_with("here is") || lower.starts_with("here's")) && lower.ends_with(':') {
            text = rest.trim();
        }
    }
    if let Some(rest) = text.strip_prefix("```") {
        // ```text\n … \n```: drop the fence line with its language tag.
        let body = rest.split_once('\n').map_or("", |(_, body)| body);
        text = body.trim_end().strip_suffix("```").unwrap_or(body).trim();
    }
    let text = check_text(text).map_err(RefusedReply::NotAPrompt)?;
    if text.contains("```") {
        return Err(RefusedReply::CodeBlock);
    }
    if text.starts_with('{') || (text.starts_with('[') && text.ends_with(']')) {
        return Err(RefusedReply::Json);
    }
    if text.contains("[evolve:") {
        return Err(RefusedReply::RepeatsRequest);
    }
    if text.chars().count() < MIN_EVOLVED_CHARS {
        return Err(RefusedReply::TooShort(text.chars().count()));
    }
    Ok(text)
}

/// Shorter evolved prompts are refused: the built-in prompt is ~600 characters, and a
/// reply of a line or two is a refusal or a fragment, not a rewrite.
const MIN_EVOLVED_CHARS: usize = 80;

// ---- what `evolve` sends ----

/// Lessons in the request, at most (newest first).
const LESSONS_MAX: usize = 10;
/// Low-graded replies in the request, at most (newest first).
const LOW_SCORES_MAX: usize = 8;
/// The user's rules in the request, at most.
const RULES_MAX: usize = 10;
/// Characters of one lesson, reason or rule.
const ITEM_CHARS: usize = 300;

/// Sessions whose evaluations `evolve` reads, the most recently used first: "recent"
/// work, and a bounded read on a store that has kept years of sessions.
const SESSIONS_READ: usize = 30;

/// What the agent learned, gathered from the store for `evolve`.
#[derive(Debug, Default, Clone, PartialEq)]
struct Learned {
    /// Reflection and experience lessons, newest first.
    lessons: Vec<String>,
    /// (score, the grader's reason) of low-graded replies, newest first.
    low_scores: Vec<(f32, String)>,
    /// CRITICAL memories and instructions (not reflections), most important first.
    rules: Vec<String>,
}

impl Learned {
    /// Picks the parts from the memories and evaluations, each capped: lessons are
    /// active memories tagged `reflection` or `lesson`; rules are the other active CRITICAL or
    /// instruction memories; low scores are evaluations below `below`. Memories learned
    /// from world text (a lesson from a task that read a page) are left out: the system
    /// prompt is the agent's standing instruction, and world text never becomes one.
    fn gather(
        memories: &[Memory],
        evaluations: &[Evaluation],
        below: f32,
        now: Timestamp,
    ) -> Learned {
        let mut active: Vec<&Memory> = memories
            .iter()
            .filter(|m| m.is_active(now) && !m.is_world())
            .collect();
        active.sort_by_key(|m| std::cmp::Reverse((m.created_at, m.id)));
        let is_lesson = |m: &Memory| {
            m.tags
                .iter()
                .any(|t| t == REFLECTION_TAG || t == super::lesson::LESSON_TAG)
        };
        let lessons = active
            .iter()
            .filter(|m| is_lesson(m))
            .take(LESSONS_MAX)
            .map(|m| one_line(&m.content, ITEM_CHARS))
            .collect();
        let mut rules: Vec<&&Memory> = active
            .iter()
            .filter(|m| {
                !is_lesson(m)
                    && (m.priority == Priority::Critical || m.category == Category::Instruction)
            })
            .collect();
        rules.sort_by_key(|m| m.priority);
        let rules = rules
            .into_iter()
            .take(RULES_MAX)
            .map(|m| one_line(&m.content, ITEM_CHARS))
            .collect();
        let mut low: Vec<&Evaluation> = evaluations.iter().filter(|e| e.score < below).collect();
        low.sort_by_key(|e| std::cmp::Reverse(e.at));
        let low_scores = low
            .into_iter()
            .take(LOW_SCORES_MAX)
            .map(|e| (e.score, one_line(&e.reason, ITEM_CHARS)))
            .collect();
        Learned {
            lessons,
            low_scores,
            rules,
        }
    }

    fn is_empty(&self) -> bool {
        self.lessons.is_empty() && self.low_scores.is_empty() && self.rules.is_empty()
    }

    /// The note the evolved version is stored with (its first word is its source).
    fn note(&self) -> String {
        format!(
            "evolved from {} lessons, {} low grades, {} rules",
            self.lessons.len(),
            self.low_scores.len(),
            self.rules.len()
        )
    }
}

/// The user message of the evolve request: the current prompt (itself capped by the
/// checks every version passes) and each part of `learned` under its own heading.
fn evolve_request(current: &str, learned: &Learned) -> String {
    let mut out = format!(
        "Current system prompt:\n<<<\n{}\n>>>\n",
        clip_chars(current, SYSTEM_PROMPT_MAX_CHARS)
    );
    let mut section = |title: &str, items: Vec<String>| {
        out.push_str(&format!("\n{title}:\n"));
        if items.is_empty() {
            out.push_str("(none)\n");
        }
        for item in items {
            out.push_str(&format!("- {item}\n"));
        }
    };
    section("Lessons from recent work", learned.lessons.clone());
    section(
        "Replies graded low (score: the grader's reason)",
        learned
            .low_scores
            .iter()
            .map(|(score, reason)| format!("{score:.2}: {reason}"))
            .collect(),
    );
    section("The user's standing rules", learned.rules.clone());
    out
}

/// Where the evolved text first differs from the old one: its line number (from 1)
/// and that line of the new text, or `None` when the texts are the same.
pub(crate) fn first_change(old: &str, new: &str) -> Option<(usize, String)> {
    if old == new {
        return None;
    }
    let mut olds = old.lines();
    for (i, line) in new.lines().enumerate() {
        if olds.next() != Some(line) {
            return Some((i + 1, line.to_string()));
        }
    }
    // The new text is the old one with lines removed from the end.
    Some((new.lines().count() + 1, String::new()))
}

/// The answer budget of the evolve call: the longest allowed prompt, at the ~3
/// characters per token of mixed text, with room to spare.
const EVOLVE_MAX_TOKENS: u32 = (SYSTEM_PROMPT_MAX_CHARS / 3 + 512) as u32;

/// What `evolve` did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Evolved {
    /// The model wrote the same text back: nothing stored.
    Unchanged,
    /// A new version was stored and is active.
    Stored {
        /// Its number.
        version: u64,
        /// The note it was stored with (what it was evolved from).
        note: String,
        /// Characters before and after.
        chars: (usize, usize),
        /// The first changed line: its number (from 1) and its new text.
        first_change: (usize, String),
    },
    /// Asked for a proposal only: the new text, not stored.
    Proposed {
        /// The active text it would replace.
        current: String,
        /// The proposed text.
        text: String,
        /// What it was evolved from.
        note: String,
    },
}

/// Why `evolve` stored nothing.
#[derive(Debug)]
pub(crate) enum EvolveError {
    /// No lessons, low grades or rules in the store yet.
    NothingLearned,
    /// The model's reply was not a usable prompt.
    Refused(RefusedReply),
    /// The model could not be asked.
    Model(LlmError),
    /// The store failed.
    Store(StoreError),
}

impl std::fmt::Display for EvolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvolveError::NothingLearned => f.write_str(
                "nothing to evolve from yet: no lessons, no low-graded replies and no \
                 CRITICAL or instruction memories in the store; nothing was stored",
            ),
            EvolveError::Refused(e) => write!(
                f,
                "the model's new prompt was refused: {e}; nothing was stored \
                 (try again, or write one with `evolve prompt set FILE`)"
            ),
            EvolveError::Model(e) => write!(f, "{e}"),
            EvolveError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl From<StoreError> for EvolveError {
    fn from(e: StoreError) -> Self {
        EvolveError::Store(e)
    }
}

/// Has the cheap model rewrite the active prompt from what the store says the agent
/// learned, and stores the result as the new active version when it passes the checks
/// (`keep`; otherwise it is only proposed, for a person to confirm).
pub(crate) fn evolve(
    store: &Store,
    model: &dyn ChatModel,
    reflect_below: f32,
    now: Timestamp,
    cancel: &Cancel,
    keep: bool,
) -> Result<Evolved, EvolveError> {
    let current = active_text(store)?;
    let mut evaluations = Vec::new();
    for s in store.sessions()?.into_iter().take(SESSIONS_READ) {
        evaluations.extend(store.evaluations(&s.id)?);
    }
    let learned = Learned::gather(&store.all_memories()?, &evaluations, reflect_below, now);
    if learned.is_empty() {
        return Err(EvolveError::NothingLearned);
    }
    let req = ChatRequest {
        known_tools: Vec::new(),
        role: ModelRole::Cheap,
        messages: vec![
            Message::system(evolve_prompt()),
            Message::user(evolve_request(&current, &learned)),
        ],
        tools: Vec::new(),
        stream: false,
        max_tokens: Some(EVOLVE_MAX_TOKENS),
        temperature: Some(0.3),
        json: false,
        tool_choice: None,
    };
    let resp = model
        .chat(&req, &mut |_| {}, cancel)
        .map_err(EvolveError::Model)?;
    let truncated = resp.finish_reason.as_deref() == Some("length");
    let text = clean_reply(&resp.message.content, truncated).map_err(EvolveError::Refused)?;
    let Some(first_change) = first_change(&current, &text) else {
        return Ok(Evolved::Unchanged);
    };
    let note = learned.note();
    if !keep {
        return Ok(Evolved::Proposed {
            current,
            text,
            note,
        });
    }
    let version = store.add_prompt_version(&text, &note, now)?;
    Ok(Evolved::Stored {
        version,
        note,
        chars: (current.chars().count(), text.chars().count()),
        first_change,
    })
}

#[cfg(test)]
#[path = "versions_tests.rs"]
mod tests;
