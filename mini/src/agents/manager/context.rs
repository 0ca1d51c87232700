//! What a turn's prompt is made of before the tool loop (steps 3–4): the memories and
//! skills its question selects, searched side by side while the session's history
//! loads — L1, the turns sent whole; L2, the ring entries shown before them; L3, the
//! summary and the tool-chain review — the open TODO items and the system prompt with
//! the style notes; and where each of these came from (the person, the store, the
//! world), which the turn's provenance starts from.
//!
//! What it leaves to others: the order of the prompt's parts and the trimming under the
//! window (core's `history::build`), choosing memories (the memory agent) and tools (the
//! tool agent).

use evolve_core::history::{self, entry_keywords, L2Entry, Levels, Message, Role};
use evolve_core::skill::{rank, summary_block, SkillSummary};
use evolve_core::text::{KeywordSet, Lang};
use evolve_core::turn::Turn;
use evolve_core::Timestamp;

use super::Manager;
use crate::agents::memory::{MemoryAgent, Recall};
use crate::agents::prompts::DEFAULT_SYSTEM_PROMPT;
use crate::agents::runtime::Runtime;
use crate::agents::tool::{ToolAgent, TurnTools};
use crate::cancel::Cancel;
use crate::error::Error;

/// Turns whose messages are sent in full (L1), the current one included, at least once
/// the session has as many; older ones come from the L2 ring. L1 moves by
/// [`L1_STEP`] turns at a time (`history::window`).
const L1_TURNS: u64 = 6;
/// Turns by which L1 moves: the history sent stays the same from turn to turn in
/// between (a model server's prompt cache reuses it).
const L1_STEP: u64 = 3;
/// Skill summaries in the prompt, at most.
const SKILLS_IN_PROMPT: usize = 3;

/// The prompt parts that do not change during the tool loop.
pub(super) struct Context {
    pub(super) system: String,
    pub(super) skills_block: String,
    pub(super) skills: Vec<String>,
    pub(super) todo_block: String,
    pub(super) recall: Recall,
    pub(super) l1: Vec<Message>,
    /// How many of the first user turns of `l1` show placeholders for their tool outputs.
    pub(super) old_user_turns: usize,
    pub(super) l2: Vec<L2Entry>,
    pub(super) l2_keywords: Vec<KeywordSet>,
    pub(super) l3: Option<String>,
    /// The tool-chain review, L3's second part (`agents::notes`).
    pub(super) tool_chain: Option<String>,
    /// The keywords of the question and the one before it (which tools to offer).
    pub(super) query: KeywordSet,
    /// Tools called in the turns sent in full (offered in full again).
    pub(super) used_tools: Vec<String>,
    /// Some of what earlier requests chose for their questions, which `l1` holds
    /// again, came from world text.
    pub(super) kept_world: bool,
}

impl Context {
    /// No context: for a turn that calls neither the model nor a tool (a parked turn
    /// closed by a new message).
    pub(super) fn none() -> Context {
        Context {
            system: String::new(),
            skills_block: String::new(),
            skills: Vec::new(),
            todo_block: String::new(),
            recall: Recall {
                block: String::new(),
                used: Vec::new(),
                considered: 0,
                ids: Vec::new(),
            },
            l1: Vec::new(),
            old_user_turns: 0,
            l2: Vec::new(),
            l2_keywords: Vec::new(),
            l3: None,
            tool_chain: None,
            query: KeywordSet::default(),
            used_tools: Vec::new(),
            kept_world: false,
        }
    }
}

/// What the context brings into the turn, by source: the person's earlier messages in
/// the session are their words; the history's tool results (and the turns that had tool
/// rounds) and memories learned from world text are world text; other memories,
/// skills, summaries and the rest of the history are the store's (their links count as
/// given).
pub(super) fn see_context(turn: &mut Turn, ctx: &Context) {
    use evolve_core::history::Role;
    use evolve_core::provenance::Source;
    // What earlier requests chose for their questions (a block and the reply after
    // it): the store's, or world text when any of it was ([`chosen_to_keep`]).
    let kept = if ctx.kept_world {
        Source::World
    } else {
        Source::Store
    };
    let mut after_kept = false;
    for m in &ctx.l1 {
        let chosen = history::is_chosen(m);
        let source = match m.role {
            Role::User if chosen => kept,
            Role::Assistant if after_kept => kept,
            Role::User => evolve_core::provenance::history_user_source(&m.content),
            Role::Tool => Source::World,
            _ if !m.tool_calls.is_empty() => Source::World,
            _ => Source::Store,
        };
        after_kept = chosen;
        turn.saw_context(source, "history", &m.content);
        // What earlier calls already sent (a scheduled task's weather URL, run after run)
        // tells nobody anything new: their links count as given.
        for call in &m.tool_calls {
            turn.saw_context(Source::Store, "history", &call.arguments);
        }
    }
    for e in &ctx.l2 {
        let asker = evolve_core::provenance::history_user_source(&e.user);
        turn.saw_context(asker, "history", &e.user);
        let world = !e.thinking.is_empty() || !e.files.is_empty();
        let source = if world { Source::World } else { Source::Store };
        turn.saw_context(source, "history", &e.assistant);
        turn.saw_context(source, "history", &e.thinking);
    }
    // A memory learned from world text is still world text in a later turn.
    let memories = if ctx.recall.has_world() {
        Source::World
    } else {
        Source::Store
    };
    turn.saw_context(memories, "memory", &ctx.recall.block);
    // The summary of older turns is world text when they read outside text.
    let l3 = ctx.l3.as_deref().unwrap_or("");
    let summary = if l3.starts_with(crate::agents::reflect::L3_WORLD_MARK) {
        Source::World
    } else {
        Source::Store
    };
    turn.saw_context(summary, "history", l3);
    let store = [ctx.skills_block.as_str(), ctx.todo_block.as_str()];
    for text in store {
        turn.saw_context(Source::Store, "memory", text);
    }
}

/// What a request chose for its question (`built`: its messages), to keep with the
/// turn ([`history::chosen_for_question`]), marked as world text when any of the
/// context came from it (a memory learned from a page, an earlier exchange that read a
/// file, a summary of such turns): later turns see it as such.
pub(super) fn chosen_to_keep(ctx: &Context, built: &[Message]) -> history::Chosen {
    let world = ctx.recall.has_world()
        || ctx
            .l2
            .iter()
            .any(|e| !e.thinking.is_empty() || !e.files.is_empty())
        || ctx
            .l3
            .as_deref()
            .is_some_and(|l3| l3.starts_with(crate::agents::reflect::L3_WORLD_MARK));
    history::Chosen {
        messages: history::chosen_for_question(built).to_vec(),
        world,
    }
}

impl Manager {
    /// Steps 3–5 without the model: memories and skills side by side, the history
    /// levels, the system prompt with style notes.
    pub(super) fn context(
        &self,
        sid: &str,
        turn_no: u64,
        query: &str,
        replaces: Option<u64>,
        cancel: &Cancel,
        now: Timestamp,
    ) -> Result<(Context, TurnTools), Error> {
        let rt = &*self.rt;
        let lang = Lang::guess(query);
        let (recall, (skills_block, skills), loaded, tools) = std::thread::scope(|s| {
            let recall = s.spawn(|| {
                let previous = previous_question(rt, sid, replaces);
                MemoryAgent.recall(rt, query, previous.as_deref(), now)
            });
            let skills = s.spawn(|| match_skills(rt, query, lang));
            let loaded = self.load_history(sid, turn_no, replaces);
            // The turn's own snapshot of the tools (never another session's), while
            // the memories are searched.
            let tools = ToolAgent.for_turn(rt, cancel);
            (
                recall.join().unwrap_or_else(|_| Recall {
                    block: String::new(),
                    used: Vec::new(),
                    considered: 0,
                    ids: Vec::new(),
                }),
                skills.join().unwrap_or_default(),
                loaded,
                tools,
            )
        });
        let Loaded {
            l1,
            old_user_turns,
            l2,
            l3,
            tool_chain,
            system,
            todo_block,
            offered,
            kept_world,
        } = loaded?;
        let tools = tools.with_offered(offered);
        let l2_keywords = l2
            .iter()
            .map(|e| entry_keywords(e, &rt.tokenizer))
            .collect();
        let previous = l1
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str());
        let query = KeywordSet::of(&rt.tokenizer, &format!("{query}\n{previous}"));
        let mut used_tools: Vec<String> = Vec::new();
        for call in l1.iter().flat_map(|m| &m.tool_calls) {
            if !used_tools.contains(&call.name) {
                used_tools.push(call.name.clone());
            }
        }
        // What a block kept in the history shows already is not sent again.
        let skills_block = history::not_yet_shown(&skills_block, &l1);
        let mut recall = recall;
        recall.block = history::not_yet_shown(&recall.block, &l1);
        let todo_block = history::not_yet_shown(&todo_block, &l1);
        let tool_chain = tool_chain
            .map(|t| history::not_yet_shown(&t, &l1))
            .filter(|t| !t.trim().is_empty());
        let ctx = Context {
            system,
            skills_block,
            skills,
            todo_block,
            recall,
            l1,
            old_user_turns,
            l2,
            l2_keywords,
            l3,
            tool_chain,
            query,
            used_tools,
            kept_world,
        };
        Ok((ctx, tools))
    }

    fn load_history(
        &self,
        sid: &str,
        turn_no: u64,
        replaces: Option<u64>,
    ) -> Result<Loaded, Error> {
        let rt = &*self.rt;
        // The branch shown before this turn (or, for a new version of an earlier
        // turn, the turns before that one): turns of other branches are left out of
        // L1 and L2 alike. The window counts positions on the branch.
        let session = rt.store.session(sid)?;
        let branches = session.branches();
        let path = branches.history_for(replaces);
        let window = history::window(path.len() as u64 + 1, L1_TURNS, L1_STEP);
        let first = history::l1_turns(window, &path)
            .first()
            .copied()
            .unwrap_or(turn_no);
        let stored = rt
            .store
            .messages(sid, first)?
            .into_iter()
            .map(|m| (m.turn, m.message))
            .collect();
        // What each turn's request chose for its question goes back where it was, so
        // this request repeats the previous one as its prefix. Unreadable, it is left
        // out: only the prompt cache loses.
        let chosen = rt.store.chosen_since(sid, first).unwrap_or_else(|e| {
            log::warn!("what earlier turns chose for their questions cannot be read: {e}");
            Vec::new()
        });
        let kept_world = chosen.iter().any(|(_, c)| c.world);
        let chosen = chosen.into_iter().map(|(t, c)| (t, c.messages)).collect();
        let stored = history::with_chosen(stored, chosen);
        let ring = rt.store.l2(sid)?;
        let tags: Vec<u64> = ring.entries().iter().map(|e| e.turn).collect();
        let ring_turns = history::ring_turns(&tags, &branches);
        let Levels {
            l1,
            old_user_turns,
            l2_shown,
        } = history::levels(window, &path, stored, &ring_turns);
        let l2 = l2_shown
            .into_iter()
            .filter_map(|i| ring.entries().get(i).cloned())
            .collect();
        let (l3, tool_chain) = rt.store.l3_and_tool_chain(sid)?;
        let tool_chain = tool_chain.filter(|_| rt.config.agent.tool_chain);
        let system = system_prompt(rt)?;
        let todos = rt.store.todos(sid)?;
        let open: Vec<_> = todos.iter().filter(|t| !t.done).collect();
        let mut todo_block = String::new();
        if !open.is_empty() {
            todo_block.push_str("Open TODO items of this session:\n");
            for t in open {
                todo_block.push_str(&format!("[ ] {}. {}\n", t.id, t.text));
            }
        }
        Ok(Loaded {
            l1,
            old_user_turns,
            l2,
            l3,
            tool_chain,
            system,
            todo_block,
            offered: session.offered_tools,
            kept_world,
        })
    }
}

/// What a turn's prompt is built from, as stored.
struct Loaded {
    l1: Vec<Message>,
    old_user_turns: usize,
    l2: Vec<L2Entry>,
    l3: Option<String>,
    tool_chain: Option<String>,
    system: String,
    todo_block: String,
    /// The tools the session has been offered, in the order first offered.
    offered: Vec<String>,
    /// Some of what earlier requests chose and `l1` holds again came from world text.
    kept_world: bool,
}

/// The system prompt: the active version (or the built-in one) and the style notes
/// learned from well-rated answers.
pub(super) fn system_prompt(rt: &Runtime) -> Result<String, Error> {
    let mut system = match rt.store.active_prompt()? {
        Some(p) => p.text,
        None => DEFAULT_SYSTEM_PROMPT.to_string(),
    };
    let notes = rt.store.style_notes()?;
    if !notes.is_empty() {
        system.push_str("\n\nWhat this user liked in earlier answers:\n");
        for n in &notes {
            system.push_str("- ");
            system.push_str(n);
            system.push('\n');
        }
    }
    Ok(system)
}

/// The user's question of the turn before the new one on the branch shown (before
/// the turn it `replaces`, for a new version), if any (the context a follow-up question
/// leans on). A store error only loses the context.
fn previous_question(rt: &Runtime, sid: &str, replaces: Option<u64>) -> Option<String> {
    let session = rt.store.session(sid).ok()?;
    let before = *session.branches().history_for(replaces).last()?;
    let messages = rt.store.messages(sid, before).ok()?;
    messages
        .into_iter()
        .filter(|m| m.turn == before && m.message.role == evolve_core::history::Role::User)
        .map(|m| m.message.content)
        .next_back()
}

/// The summaries of the skills relevant to `query`, and their names.
pub(super) fn match_skills(rt: &Runtime, query: &str, lang: Lang) -> (String, Vec<String>) {
    rt.skills.refresh(&rt.config.skills_dir(), &rt.tokenizer);
    let catalog = rt.skills.current();
    let all = catalog.all();
    if all.is_empty() {
        return (String::new(), Vec::new());
    }
    let summaries: Vec<SkillSummary> = catalog.summaries_for(query, &rt.tokenizer);
    let keywords = KeywordSet::of(&rt.tokenizer, query);
    let ranked = rank(&summaries, &keywords, SKILLS_IN_PROMPT);
    let picked: Vec<&SkillSummary> = ranked.iter().map(|&(i, _)| &summaries[i]).collect();
    let names = picked.iter().map(|s| s.name.clone()).collect();
    (summary_block(&picked, lang), names)
}

pub(super) fn non_empty(s: &str) -> Option<&str> {
    (!s.trim().is_empty()).then_some(s)
}
