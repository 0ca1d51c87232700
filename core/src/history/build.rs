//! The builder: the four levels assembled into the messages of one request, under the
//! budget (tea-agent `build_api_messages`).
//!
//! Order: what stays the same from request to request first, what changes with the
//! question last, so that a request repeats the previous one as its prefix and a
//! model server's prompt cache reuses it: L0 the system message (the prompt, and system
//! messages of the session), the L3 summary block + acknowledgement, L1 the live session
//! up to the new user message, then the L2 picks chosen for this question (one digest
//! block, then the full "[history]" pairs in ring order), the context block chosen for
//! it (skills, pending TODO, memories, tool-chain review; [`super::context_messages`])
//! and its acknowledgement, and the new user message with this turn's tool rounds. Then the
//! always-on defences (tool outputs of old turns → placeholders, outputs above
//! 128 KiB → head + tail), the progressive trim when the estimate passes 80% of the
//! input budget, and a final sequence check.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::budget::Budget;
use super::kept::{is_chosen, DIGEST_HEADER, HISTORY_PREFIX};
use super::message::{Message, Role};
use super::relevance::{digest_line, select_l2_cached, L2Pick, Relevance};
use super::ring::L2Entry;
use super::sequence::{is_valid_sequence, repair_sequence, RepairReport};
use super::summary::{context_messages, summary_messages, TOOL_CHAIN_SECTION};
use super::trim::{trim, Draft, Item, L2Part, L2Shown, TrimStep};
use super::truncate::{is_placeholder, old_turns_end, omitted_placeholder, truncate_tool_output};
use super::HistoryConfig;
use crate::text::{estimate_text_tokens, KeywordSet, Tokenizer, MESSAGE_OVERHEAD_TOKENS};

/// The assistant side of a full L2 pair whose reply was empty.
pub const NO_REPLY: &str = "(no reply recorded)";

/// The assistant's acknowledgement after the digest block.
pub const DIGEST_ACK: &str = "Noted.";

/// The smallest trim target for which [`build`] stays within it whatever the input:
/// the last resort leaves a system message and a user message, each cut down to
/// nothing but its 4 tokens of overhead if need be. With the default 80% threshold
/// that is an input budget of 10 tokens.
pub const MIN_TRIM_TARGET: usize = 2 * MESSAGE_OVERHEAD_TOKENS;

/// The input budget below which the built history keeps little of the conversation
/// (a cut system prompt and a cut user message): the shell should warn about a window
/// this small. The budget bound itself holds down to [`MIN_TRIM_TARGET`].
pub const MIN_INPUT_BUDGET: usize = 256;

/// Everything a build needs. The texts are borrowed from the shell's session state.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildInput<'a> {
    /// L0: the system prompt.
    pub system_prompt: &'a str,
    /// Context: skill summaries recommended for this message, if any.
    pub skills_block: Option<&'a str>,
    /// Context: the pending TODO / plan to resume, if any.
    pub todo_block: Option<&'a str>,
    /// Context: the selected long-term memories, formatted, if any.
    pub memory_block: Option<&'a str>,
    /// L3: the semantic summary of the turns that left the L2 ring.
    pub summary: Option<&'a str>,
    /// Context: the recap of recent tool-call chains (it changes after every turn
    /// with tool calls, so it goes with the question, not in L3).
    pub tool_chain_summary: Option<&'a str>,
    /// L2: the session's ring, oldest first.
    pub l2: &'a [L2Entry],
    /// L2: the keyword sets of `l2` ([`super::entry_keywords`], same tokenizer,
    /// index-aligned), if the shell keeps them; empty (the default): computed here.
    /// Tokenizing the ring is most of the cost of a build.
    pub l2_keywords: &'a [KeywordSet],
    /// The new user message's text, for the L2 relevance filter. Empty: the last user
    /// message of `l1` is used.
    pub query: &'a str,
    /// L1: the live session, ending with the new user message (or, inside a tool
    /// loop, with the latest tool results).
    pub l1: &'a [Message],
    /// How many of the first user turns of `l1` are old: their tool outputs become
    /// placeholders on every build. `None`: all but the last `keep_tool_output_turns`
    /// (3). The shell moves this in steps ([`super::window()`]) so that the history
    /// stays the same from one request to the next.
    pub old_user_turns: Option<usize>,
    /// The model's window and the reservation for the answer.
    pub budget: Budget,
}

/// The messages to send and what was done to fit them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Built {
    /// The request's messages: a valid sequence ([`super::is_valid_sequence`]).
    pub messages: Vec<Message>,
    /// Their estimate ([`super::estimate_messages_tokens`]).
    pub estimated_tokens: usize,
    /// `context_window − reserved_output`.
    pub input_budget: usize,
    /// The estimate above which trimming started and down to which it trimmed.
    pub trim_target: usize,
    /// The defences and trim steps applied, in order.
    pub trimmed: Vec<TrimStep>,
    /// The L2 entries shown (after trimming), in ring order.
    pub l2_used: Vec<L2Pick>,
    /// True when the L3 block is in the messages.
    pub summary_used: bool,
    /// What the sequence repair changed in the session (and, should it ever happen,
    /// in the built messages).
    pub repair: RepairReport,
}

/// Builds the request's messages from the four levels under the budget.
///
/// Guarantees, whatever the input:
/// - the result is a valid sequence;
/// - when the trim target (80% of the input budget) is at least [`MIN_TRIM_TARGET`]
///   (8 tokens, i.e. an input budget of 10 with the default threshold),
///   `estimated_tokens` ≤ the trim target ≤ the input budget. To get there the builder
///   may, as a last resort, cut the system prompt itself (see [`super::trim`] step
///   10): when the system prompt alone is larger than the budget, it is cut to half
///   the target (more if the user message leaves room), the rest going to the user
///   message. Below [`MIN_INPUT_BUDGET`] (256) little of the conversation survives;
/// - below [`MIN_TRIM_TARGET`] it does its best and may exceed the budget.
pub fn build(input: &BuildInput<'_>, cfg: &HistoryConfig, tokenizer: &dyn Tokenizer) -> Built {
    let input_budget = input.budget.input_budget();
    let target = input.budget.trim_target(cfg.trim_threshold);

    // L1, repaired if needed. Its leading system messages join L0 — also those that
    // the repair brought to the front by dropping what came before them.
    let lead = input
        .l1
        .iter()
        .take_while(|m| m.role == Role::System)
        .count();
    let session = input.l1.get(lead..).unwrap_or(&[]);
    let mut repair = RepairReport::default();
    let mut l1_messages: Vec<Cow<'_, Message>> = if is_valid_sequence(session).is_ok() {
        session.iter().map(Cow::Borrowed).collect()
    } else {
        let mut owned = session.to_vec();
        repair = repair_sequence(&mut owned);
        owned.into_iter().map(Cow::Owned).collect()
    };
    let exposed = l1_messages
        .iter()
        .take_while(|m| m.role == Role::System)
        .count();
    let exposed: Vec<Cow<'_, Message>> = l1_messages.drain(..exposed).collect();

    // L0.
    let mut system = String::from(input.system_prompt.trim_end());
    let l1_system = input
        .l1
        .iter()
        .take(lead)
        .chain(exposed.iter().map(|m| &**m));
    for block in l1_system.map(|m| m.content.as_str()) {
        let block = block.trim();
        if !block.is_empty() {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(block);
        }
    }
    let system = (!system.trim().is_empty()).then(|| Item::owned(Message::system(system)));

    // L3.
    let summary: Vec<Item<'_>> = summary_messages(input.summary.unwrap_or(""), "")
        .map(|pair| pair.into_iter().map(Item::owned).collect())
        .unwrap_or_default();

    // What was chosen for this question.
    let context: Vec<Item<'_>> = context_messages(&[
        input.skills_block.unwrap_or(""),
        input.todo_block.unwrap_or(""),
        input.memory_block.unwrap_or(""),
        &tool_chain_block(input.tool_chain_summary.unwrap_or("")),
    ])
    .map(|pair| pair.into_iter().map(Item::owned).collect())
    .unwrap_or_default();

    // L1's always-on tool-output defences.
    let mut trimmed = Vec::new();
    let l1 = prepare_l1(l1_messages, input.old_user_turns, cfg, &mut trimmed);

    // L2.
    let query = if input.query.trim().is_empty() {
        session
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str())
    } else {
        input.query
    };
    let l2: Vec<L2Part> = select_l2_cached(input.l2, input.l2_keywords, query, tokenizer, cfg)
        .into_iter()
        .filter_map(|pick| {
            let entry = input.l2.get(pick.index)?;
            Some(render_pick(pick, entry, cfg))
        })
        .collect();
    let digest_overhead = Message::user(DIGEST_HEADER).estimate_tokens()
        + Message::assistant(DIGEST_ACK).estimate_tokens();

    let mut draft = Draft {
        system,
        summary,
        l2,
        digest_overhead,
        context,
        l1,
        total: 0,
    };
    draft.recount();
    trimmed.extend(trim(&mut draft, target, cfg));

    let summary_used = !draft.summary.is_empty();
    let l2_used: Vec<L2Pick> = draft.l2.iter().map(|p| p.pick).collect();
    let (mut messages, mut estimated_tokens) = render(draft);
    let late = repair_sequence(&mut messages);
    if !late.is_clean() {
        repair.merge(&late);
        estimated_tokens = super::estimate_messages_tokens(&messages);
    }
    Built {
        messages,
        estimated_tokens,
        input_budget,
        trim_target: target,
        trimmed,
        l2_used,
        summary_used,
        repair,
    }
}

/// The tool-chain review under its heading, or nothing.
fn tool_chain_block(review: &str) -> String {
    let review = review.trim();
    if review.is_empty() {
        return String::new();
    }
    let mut text = String::from(TOOL_CHAIN_SECTION);
    text.push('\n');
    text.push_str(review);
    text
}

/// Placeholders for tool outputs of the old user turns (`old_user_turns`, else all but
/// the last `keep_tool_output_turns` (3)), head + tail for the remaining ones above
/// `max_tool_output_bytes`, and the estimate of each message (an untouched message stays
/// borrowed).
fn prepare_l1<'a>(
    messages: Vec<Cow<'a, Message>>,
    old_user_turns: Option<usize>,
    cfg: &HistoryConfig,
    trimmed: &mut Vec<TrimStep>,
) -> Vec<Item<'a>> {
    // A block kept from what an earlier request chose is no turn of its own.
    let role = |m: &Message| {
        if is_chosen(m) {
            Role::Assistant
        } else {
            m.role
        }
    };
    let users = messages.iter().filter(|m| role(m) == Role::User).count();
    // The current turn keeps its outputs whatever the shell counted.
    let keep = match old_user_turns {
        Some(old) => users.saturating_sub(old).max(1),
        None => cfg.keep_tool_output_turns,
    };
    let old_end = old_turns_end(messages.iter().map(|m| role(m)), keep);
    let (mut omitted, mut truncated) = (0, 0);
    let mut items = Vec::with_capacity(messages.len());
    for (i, m) in messages.into_iter().enumerate() {
        let item = if m.role != Role::Tool || is_placeholder(&m.content) {
            Item {
                cost: m.estimate_tokens(),
                msg: m,
            }
        } else if i < old_end {
            omitted += 1;
            let mut new = m.with_content(omitted_placeholder(m.content.chars().count()));
            new.images.clear();
            Item::owned(new)
        } else {
            match truncate_tool_output(&m.content, cfg.max_tool_output_bytes) {
                Cow::Owned(cut) => {
                    truncated += 1;
                    Item::owned(m.with_content(cut))
                }
                Cow::Borrowed(_) => Item {
                    cost: m.estimate_tokens(),
                    msg: m,
                },
            }
        };
        items.push(item);
    }
    if omitted > 0 {
        trimmed.push(TrimStep::OmittedToolOutputs {
            count: omitted,
            kept_user_turns: keep,
        });
    }
    if truncated > 0 {
        trimmed.push(TrimStep::TruncatedToolOutputs { count: truncated });
    }
    items
}

/// The messages of one L2 pick and their cost.
fn render_pick(pick: L2Pick, entry: &L2Entry, cfg: &HistoryConfig) -> L2Part {
    match pick.relevance {
        Relevance::Full => {
            let mut user = String::from(HISTORY_PREFIX);
            user.push_str(entry.user.trim());
            let reply = entry.assistant.trim();
            let reply = if reply.is_empty() { NO_REPLY } else { reply };
            let pair = [Message::user(user), Message::assistant(reply)];
            L2Part {
                pick,
                cost: pair.iter().map(Message::estimate_tokens).sum(),
                shown: L2Shown::Pair(Box::new(pair)),
            }
        }
        Relevance::Digest => {
            let line = digest_line(entry, cfg);
            L2Part {
                pick,
                // + 1 for the newline before it; the sum of the parts' estimates is
                // never below the estimate of the joined text.
                cost: estimate_text_tokens(&line) + 1,
                shown: L2Shown::Digest(line),
            }
        }
    }
}

/// The final messages and their exact estimate.
fn render(draft: Draft<'_>) -> (Vec<Message>, usize) {
    let mut out = Vec::with_capacity(draft.l1.len() + draft.l2.len() * 2 + 5);
    let mut tokens = 0;
    let mut push = |item: Item<'_>, out: &mut Vec<Message>| {
        tokens += item.cost;
        out.push(item.msg.into_owned());
    };
    if let Some(system) = draft.system {
        push(system, &mut out);
    }
    for item in draft.summary {
        push(item, &mut out);
    }
    // The history up to the new user message, then what was chosen for it.
    let mut l1 = draft.l1;
    let current = l1
        .iter()
        .rposition(|i| i.msg.role == Role::User)
        .unwrap_or(l1.len());
    let turn = l1.split_off(current);
    for item in l1 {
        push(item, &mut out);
    }
    let mut digest = String::new();
    for part in &draft.l2 {
        if let L2Shown::Digest(line) = &part.shown {
            if digest.is_empty() {
                digest.push_str(DIGEST_HEADER);
            }
            digest.push('\n');
            digest.push_str(line);
        }
    }
    if !digest.is_empty() {
        push(Item::owned(Message::user(digest)), &mut out);
        push(Item::owned(Message::assistant(DIGEST_ACK)), &mut out);
    }
    for part in draft.l2 {
        if let L2Shown::Pair(pair) = part.shown {
            let [user, reply] = *pair;
            for m in [user, reply] {
                push(Item::owned(m), &mut out);
            }
        }
    }
    for item in draft.context {
        push(item, &mut out);
    }
    for item in turn {
        push(item, &mut out);
    }
    (out, tokens)
}
