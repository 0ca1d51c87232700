//! The Reflection agent: looks back over recent turns (every N turns, after a low
//! score, or when asked) and writes a lesson as a memory; learns style notes from
//! replies that scored high; summarises turns leaving the L2 ring into the L3 summary.
//! What it learns from turns that read outside text keeps that source: the lesson is a
//! world memory, and the L3 summary starts with [`L3_WORLD_MARK`].

use evolve_core::history::L2Entry;
use evolve_core::json::{extract, Value};
use evolve_core::memory::{Category, Memory, Priority};
use evolve_core::provenance::Source;
use evolve_core::text::{clip_chars, one_line};
use evolve_core::Timestamp;

use super::memory::{cheap_call, cheap_call_sized, NEVER, ONE_SENTENCE_TOKENS};
use super::prompts;
use super::runtime::Runtime;
use crate::cancel::Cancel;
use crate::llm::Usage;
use crate::store::Evaluation;

/// Tag of memories written by reflection.
pub const REFLECTION_TAG: &str = "reflection";
/// The first line of an L3 summary that covers turns which read outside text (or a
/// summary that already had it): the summary is stored as plain text, and this line
/// keeps its source, so a later turn that loads it starts with world text in it.
pub const L3_WORLD_MARK: &str = "[summary of turns that read outside text]";

/// Whether an L2 entry's turn read outside text: it had tool rounds or touched files.
pub fn entry_is_world(e: &L2Entry) -> bool {
    !e.thinking.is_empty() || !e.files.is_empty()
}
/// Turns shown to a reflection.
const REFLECT_TURNS: usize = 6;

/// Reflection, style learning and L3 summaries.
pub struct ReflectionAgent;

impl super::Agent for ReflectionAgent {
    super::describe!(
        Reflection,
        "Reflection",
        "turns recent results into lessons, style notes and summaries of long sessions"
    );
}

/// Why a reflection runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReflectWhy {
    /// Every `reflect_every` turns.
    Periodic,
    /// The last score was below `reflect_below`.
    LowScore,
    /// The user asked (`/reflect`).
    Asked,
}

impl ReflectionAgent {
    /// Whether turn `turn` with `score` calls for a reflection.
    pub fn due(rt: &Runtime, turn: u64, score: Option<f32>) -> Option<ReflectWhy> {
        let every = u64::from(rt.config.agent.reflect_every);
        if score.is_some_and(|s| s < rt.config.agent.reflect_below) {
            Some(ReflectWhy::LowScore)
        } else if every > 0 && turn > 0 && turn % every == 0 {
            Some(ReflectWhy::Periodic)
        } else {
            None
        }
    }

    /// Reflects over the session's recent turns; a lesson found is saved as a memory
    /// (tag `reflection`) and returned: a HIGH instruction of the store's, or, when
    /// one of those turns read outside text, a fact of the world's (never a rule).
    /// `cancel` stops the model call (`/reflect`).
    #[allow(clippy::too_many_arguments)]
    pub fn reflect(
        &self,
        rt: &Runtime,
        session: &str,
        why: ReflectWhy,
        now: Timestamp,
        usage: &mut Usage,
        problems: &mut Vec<String>,
        cancel: &Cancel,
    ) -> Option<String> {
        let ring = rt.store.l2(session).ok()?;
        let evaluations = rt.store.evaluations(session).unwrap_or_default();
        let entries = ring.entries();
        if entries.is_empty() {
            return None;
        }
        let first_turn = rt
            .store
            .session(session)
            .map(|s| s.turns.saturating_sub(entries.len() as u64) + 1)
            .unwrap_or(1);
        let mut input = format!("Reason for this review: {why:?}\n\n");
        let start = entries.len().saturating_sub(REFLECT_TURNS);
        for (i, e) in entries.iter().enumerate().skip(start) {
            let turn = first_turn + i as u64;
            let score = score_of(&evaluations, turn);
            input.push_str(&format!(
                "Turn {turn} (score {score}):\nUser: {}\nAssistant: {}\n\n",
                one_line(&e.user, 600),
                one_line(&e.assistant, 900),
            ));
        }
        let text = cheap_call_sized(
            rt,
            prompts::REFLECT,
            &input,
            ONE_SENTENCE_TOKENS,
            usage,
            problems,
            cancel,
        )?;
        let lesson = field(&text, "lesson", problems, "reflection")?;
        // Turns that read outside text (their tool rounds or files) make the lesson the
        // world's: information, never an instruction.
        let world = entries[start..].iter().any(entry_is_world);
        let mut m = Memory::new(lesson.clone(), Category::Instruction, now, &rt.tokenizer);
        m.priority = Priority::High;
        m.importance = 4;
        m.tags = vec![REFLECTION_TAG.to_string()];
        m.refresh_derived(&rt.tokenizer);
        let m = m.with_source(if world { Source::World } else { Source::Store });
        if let Err(e) = rt
            .store
            .ingest_memory(m, &rt.config.core.memory, now, &rt.tokenizer)
        {
            super::note(problems, format!("saving the reflection failed: {e}"));
        }
        Some(lesson)
    }

    /// Learns a style note from a reply that scored high; keeps at most
    /// `style_notes_max` notes (the oldest leave first).
    pub fn learn_style(
        &self,
        rt: &Runtime,
        question: &str,
        answer: &str,
        usage: &mut Usage,
        problems: &mut Vec<String>,
    ) -> Option<String> {
        let input = format!(
            "User: {}\n\nReply: {}",
            clip_chars(question, 1_500),
            // A reply's style (length, tone, format) shows in its first part.
            clip_chars(answer, 1_500)
        );
        let text = cheap_call_sized(
            rt,
            prompts::STYLE,
            &input,
            ONE_SENTENCE_TOKENS,
            usage,
            problems,
            &NEVER,
        )?;
        let note = clip_chars(&field(&text, "note", problems, "style")?, 200);
        let max = rt.config.agent.style_notes_max;
        // One write: a note removed or the notes cleared meanwhile stay so.
        let added = rt.store.edit_style_notes(|notes| {
            if notes.iter().any(|n| n.eq_ignore_ascii_case(&note)) {
                return false;
            }
            notes.push(note.clone());
            if notes.len() > max {
                let excess = notes.len() - max;
                notes.drain(..excess);
            }
            true
        });
        match added {
            Ok(true) => Some(note),
            Ok(false) => None,
            Err(e) => {
                super::note(problems, format!("saving the style note failed: {e}"));
                None
            }
        }
    }

    /// Folds the oldest turns of the L2 ring (`overflow`, still at its front) into the
    /// session's L3 summary, then drops them from the ring in the same transaction that
    /// writes the summary. Only the turns on the branch shown are folded in; those of
    /// hidden branches leave the ring unsummarised (core's `history::summarised`). When the summary cannot be made they stay in the ring and a
    /// later turn tries again; when they are no longer at the front, an earlier run did
    /// the work and nothing happens.
    pub fn summarize(
        &self,
        rt: &Runtime,
        session: &str,
        overflow: &[L2Entry],
        usage: &mut Usage,
        problems: &mut Vec<String>,
    ) {
        let at_front = |ring: &evolve_core::history::L2Ring| ring.entries().starts_with(overflow);
        let ring = match rt.store.l2(session) {
            Ok(ring) if at_front(&ring) => ring,
            Ok(_) => return,
            Err(e) => {
                super::note(problems, format!("reading L2 for the summary failed: {e}"));
                return;
            }
        };
        // Only the conversation shown is summarised (core's `summarised`): the entries of
        // hidden branches leave the ring without reaching the summary or the prompt.
        let branches = match rt.store.session(session) {
            Ok(s) => s,
            Err(e) => {
                super::note(
                    problems,
                    format!("reading the session for the summary failed: {e}"),
                );
                return;
            }
        };
        let branches = branches.branches();
        let tags: Vec<u64> = ring.entries().iter().map(|e| e.turn).collect();
        let turns = evolve_core::history::ring_turns(&tags, &branches);
        let take =
            evolve_core::history::summarised(&turns[..overflow.len()], &branches.shown_path());
        let taken: Vec<&L2Entry> = overflow
            .iter()
            .zip(take)
            .filter_map(|(e, take)| take.then_some(e))
            .collect();
        if taken.is_empty() {
            // Nothing of the conversation shown leaves: the ring is trimmed, the summary
            // stays as it is.
            let kept = evolve_core::history::L2Ring::from_entries(
                ring.entries()[overflow.len()..].to_vec(),
            );
            if let Err(e) = rt.store.set_l2(session, &kept, None) {
                super::note(problems, format!("trimming L2 failed: {e}"));
            }
            return;
        }
        let previous = rt.store.l3(session).ok().flatten().unwrap_or_default();
        let mut input = String::new();
        if !previous.is_empty() {
            input.push_str("Previous summary:\n");
            input.push_str(&previous);
            input.push_str("\n\n");
        }
        input.push_str("New exchanges:\n");
        for e in &taken {
            input.push_str(&format!(
                "User: {}\nAssistant: {}\n",
                one_line(&e.user, 400),
                one_line(&e.assistant, 600)
            ));
        }
        let Some(text) = cheap_call(rt, prompts::SUMMARIZE, &input, usage, problems, &NEVER) else {
            return;
        };
        let summary = clip_chars(text.trim(), 4_000);
        if summary.is_empty() {
            return;
        }
        // Turns that read outside text keep the summary world text, whatever the model
        // wrote (it may leave the mark out).
        let world = taken.iter().any(|e| entry_is_world(e)) || previous.starts_with(L3_WORLD_MARK);
        let summary = match summary.strip_prefix(L3_WORLD_MARK) {
            Some(rest) if world => format!("{L3_WORLD_MARK}\n{}", rest.trim_start()),
            Some(rest) => rest.trim_start().to_string(),
            None if world => format!("{L3_WORLD_MARK}\n{summary}"),
            None => summary,
        };
        let ring = match rt.store.l2(session) {
            Ok(r) if at_front(&r) => r,
            Ok(_) => return,
            Err(e) => {
                super::note(problems, format!("reading L2 for the summary failed: {e}"));
                return;
            }
        };
        let kept =
            evolve_core::history::L2Ring::from_entries(ring.entries()[overflow.len()..].to_vec());
        if let Err(e) = rt.store.set_l2(session, &kept, Some(&summary)) {
            super::note(problems, format!("saving the summary failed: {e}"));
        }
    }
}

fn score_of(evaluations: &[Evaluation], turn: u64) -> String {
    evaluations
        .iter()
        .find(|e| e.turn == turn)
        .map_or_else(|| "none".to_string(), |e| format!("{:.2}", e.score))
}

/// A non-empty string field of the JSON reply; problems noted.
fn field(text: &str, key: &str, problems: &mut Vec<String>, task: &str) -> Option<String> {
    let value = match extract(text) {
        Ok(v) => v,
        Err(e) => {
            let problem = format!("{task}: the model's reply is not usable JSON ({e})");
            log::info!("{problem}");
            problems.push(problem);
            return None;
        }
    };
    let s = value.get(key).and_then(Value::as_str)?.trim();
    (!s.is_empty()).then(|| s.to_string())
}
