//! The progressive trim (tea-agent `_progressive_trim`): what is given up, in which
//! order, when the history is estimated above the trim target.
//!
//! Each step runs only while the estimate is above the target and stops as soon as it
//! is not, oldest material first:
//!
//! 1. drop the L2 `"[history]"` picks, oldest first;
//! 2. replace tool outputs with placeholders, now outside the last user turn only
//!    (`trim_keep_tool_output_turns`, 1, instead of 3; 0 acts as 1);
//! 3. clear reasoning texts, oldest first, outside the current turn;
//! 4. cut texts longer than `max_text_chars` (4096) characters, oldest first, outside
//!    the current turn;
//! 5. drop old L1 turns, keeping the last `keep_user_turns` (5) user turns — a turn
//!    goes whole, with its assistant calls and their tool results.
//!
//! The *current turn* is the last user message and everything after it (the tool
//! rounds answering it). Steps 2–4 never touch it: tea-agent's table gives no scope for
//! them, and cutting the message the user just pasted (or the output the model just
//! asked for) while older turns survive loses exactly what the next reply is about.
//! Its reasoning is kept too: providers that think while calling tools expect the
//! reasoning of the turn's rounds back. Only the last resorts (8, 9, 10) cut into it.
//!
//! tea-agent's last resort is "cut the final message to its first third". We give up
//! older context before that (the user's current message matters more than the turns
//! before it), and we must also guarantee the budget, so if the estimate is still
//! above the target we go on:
//!
//! 6. drop the L3 summary;
//! 7. drop every L1 turn but the current one (the last user message and what follows),
//!    then the context block chosen for the question (skills, TODO, memories, review);
//! 8. tea-agent's last resort: cut the final message to its first third;
//! 9. drop the tool rounds and replies after that user message, oldest first;
//! 10. cut the system prompt to half the target (or to what the user message leaves,
//!     if that is more), then the user message (its images first) to what remains, and
//!     if there is no user message, the system prompt to the whole target.
//!
//! After step 10 only a system prompt and one user message are left, both cut to fit;
//! each costs at least its 4 tokens of overhead, so any target of 8 tokens or more is
//! met (`MIN_TRIM_TARGET`).
//!
//! Every step keeps the sequence valid: nothing is dropped from inside a turn except
//! in step 9, which removes an assistant message together with its tool results.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::cut::{cut_to_chars, cut_to_tokens};
use super::message::{Message, Role};
use super::relevance::L2Pick;
use super::truncate::{is_placeholder, old_turns_end, omitted_placeholder};
use super::HistoryConfig;
use crate::text::MESSAGE_OVERHEAD_TOKENS;

/// One thing the builder did to fit the history, in the order done, with counts so the
/// turn record can say what the model did not see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum TrimStep {
    /// Tool outputs above `max_tool_output_bytes` cut to head + tail (every build).
    TruncatedToolOutputs {
        /// Outputs cut.
        count: usize,
    },
    /// Tool outputs replaced with "[tool result omitted: N chars]": outside the last 3
    /// user turns on every build, outside the last 1 as trim step 2.
    OmittedToolOutputs {
        /// Outputs replaced.
        count: usize,
        /// How many last user turns kept their outputs.
        kept_user_turns: usize,
    },
    /// Step 1: L2 picks dropped, oldest first.
    DroppedHistory {
        /// Picks dropped.
        count: usize,
    },
    /// Step 3: reasoning texts cleared.
    ClearedReasoning {
        /// Messages whose reasoning was cleared.
        count: usize,
    },
    /// Step 4: long texts cut.
    CutLongTexts {
        /// Messages cut.
        count: usize,
        /// The length they were cut to, in characters.
        max_chars: usize,
    },
    /// Steps 5 and 7: whole L1 turns dropped, oldest first.
    DroppedTurns {
        /// User turns dropped.
        turns: usize,
        /// Messages dropped with them.
        messages: usize,
        /// How many last user turns were protected.
        kept_user_turns: usize,
    },
    /// Step 8: the final message cut to its first third.
    CutFinalMessage {
        /// Characters before.
        from_chars: usize,
        /// Characters kept (marker not counted).
        to_chars: usize,
    },
    /// Step 6: the L3 summary (and its acknowledgement) dropped.
    DroppedSummary,
    /// Step 7: the context block chosen for the question (skills, TODO, memories, the
    /// tool-chain review) and its acknowledgement dropped.
    DroppedContext,
    /// Step 9: assistant replies and tool rounds of the current turn dropped.
    DroppedCurrentRounds {
        /// Messages dropped.
        messages: usize,
    },
    /// Step 10: the system prompt cut to fit.
    CutSystemPrompt {
        /// Characters before.
        from_chars: usize,
        /// Characters after (marker included).
        to_chars: usize,
    },
    /// Step 10: the user message cut to fit (images dropped first).
    CutUserMessage {
        /// Characters before.
        from_chars: usize,
        /// Characters after (marker included).
        to_chars: usize,
        /// Images dropped.
        images: usize,
    },
}

/// A message of the draft with its estimate; borrowed from the session until changed.
pub(super) struct Item<'a> {
    pub msg: Cow<'a, Message>,
    pub cost: usize,
}

impl<'a> Item<'a> {
    pub fn owned(msg: Message) -> Self {
        Item {
            cost: msg.estimate_tokens(),
            msg: Cow::Owned(msg),
        }
    }
}

/// How an L2 pick is shown.
pub(super) enum L2Shown {
    /// "[history] user" + assistant.
    Pair(Box<[Message; 2]>),
    /// One line of the digest block.
    Digest(String),
}

/// An L2 pick with its rendering and cost (for a digest line: an upper bound of what
/// it adds to the digest block, its newline included).
pub(super) struct L2Part {
    pub pick: L2Pick,
    pub shown: L2Shown,
    pub cost: usize,
}

/// The history being built, with the running estimate.
pub(super) struct Draft<'a> {
    pub system: Option<Item<'a>>,
    pub summary: Vec<Item<'a>>,
    pub l2: Vec<L2Part>,
    /// Cost of the digest block without its lines (header message + acknowledgement),
    /// counted while at least one digest line is left.
    pub digest_overhead: usize,
    /// The context block and its acknowledgement, shown before the current turn.
    pub context: Vec<Item<'a>>,
    pub l1: Vec<Item<'a>>,
    /// Upper bound of the estimate of the rendered history (exact except for the
    /// digest block, see [`L2Part`]).
    pub total: usize,
}

impl<'a> Draft<'a> {
    /// Recomputes the running total from the parts.
    pub fn recount(&mut self) {
        let digests = self
            .l2
            .iter()
            .any(|p| matches!(p.shown, L2Shown::Digest(_)));
        self.total = self.system.as_ref().map_or(0, |s| s.cost)
            + self.summary.iter().map(|s| s.cost).sum::<usize>()
            + self.l2.iter().map(|p| p.cost).sum::<usize>()
            + if digests { self.digest_overhead } else { 0 }
            + self.context.iter().map(|s| s.cost).sum::<usize>()
            + self.l1.iter().map(|i| i.cost).sum::<usize>();
    }

    /// Replaces L1 message `i`, keeping the total right.
    fn replace_l1(&mut self, i: usize, msg: Message) {
        if let Some(item) = self.l1.get_mut(i) {
            let cost = msg.estimate_tokens();
            self.total = self.total - item.cost + cost;
            item.cost = cost;
            item.msg = Cow::Owned(msg);
        }
    }

    fn drop_oldest_l2(&mut self) {
        if self.l2.is_empty() {
            return;
        }
        let part = self.l2.remove(0);
        self.total -= part.cost;
        let was_digest = matches!(part.shown, L2Shown::Digest(_));
        let digests_left = self
            .l2
            .iter()
            .any(|p| matches!(p.shown, L2Shown::Digest(_)));
        if was_digest && !digests_left {
            self.total -= self.digest_overhead;
        }
    }

    /// Drops whole turns from the front while above `target`, keeping the last `keep`
    /// user turns (at least 1). Returns (turns, messages) dropped.
    fn drop_turns(&mut self, target: usize, keep: usize) -> (usize, usize) {
        let keep = keep.max(1);
        let users: Vec<usize> = self
            .l1
            .iter()
            .enumerate()
            .filter(|(_, it)| it.msg.role == Role::User)
            .map(|(i, _)| i)
            .collect();
        if users.len() <= keep {
            return (0, 0);
        }
        let droppable = users.len() - keep;
        let mut cut_turns = 0;
        let mut dropped_cost = 0;
        let mut at = 0;
        // Cutting at users[k] drops everything before it: k turns (after a leading
        // non-user prefix, if any).
        for (k, &u) in users.iter().enumerate().take(droppable + 1) {
            if self.total - dropped_cost <= target && k > 0 {
                break;
            }
            dropped_cost += self.l1[at..u].iter().map(|i| i.cost).sum::<usize>();
            at = u;
            cut_turns = k;
        }
        if at == 0 {
            return (0, 0);
        }
        self.l1.drain(..at);
        self.total -= dropped_cost;
        (cut_turns, at)
    }
}

/// Runs the steps of the module documentation until the estimate is at most `target`.
pub(super) fn trim(draft: &mut Draft<'_>, target: usize, cfg: &HistoryConfig) -> Vec<TrimStep> {
    let mut steps = Vec::new();
    if draft.total <= target {
        return steps;
    }

    // 1. L2 picks, oldest first.
    let mut count = 0;
    while draft.total > target && !draft.l2.is_empty() {
        draft.drop_oldest_l2();
        count += 1;
    }
    if count > 0 {
        steps.push(TrimStep::DroppedHistory { count });
    }

    let current = current_turn_start(&draft.l1);

    // 2. Tool outputs outside the last (1) user turn become placeholders; at least the
    //    current turn keeps its outputs.
    let kept = cfg.trim_keep_tool_output_turns.max(1);
    let end = old_turns_end(draft.l1.iter().map(|i| i.msg.role), kept);
    let mut count = 0;
    for i in 0..end {
        if draft.total <= target {
            break;
        }
        let m = &draft.l1[i].msg;
        if m.role == Role::Tool && !is_placeholder(&m.content) {
            let mut new = m.with_content(omitted_placeholder(m.content.chars().count()));
            new.images.clear();
            draft.replace_l1(i, new);
            count += 1;
        }
    }
    if count > 0 {
        steps.push(TrimStep::OmittedToolOutputs {
            count,
            kept_user_turns: kept,
        });
    }

    // 3. Reasoning texts, outside the current turn.
    let mut count = 0;
    for i in 0..current {
        if draft.total <= target {
            break;
        }
        if draft.l1[i].msg.reasoning.is_some() {
            let mut new = draft.l1[i]
                .msg
                .with_content(draft.l1[i].msg.content.clone());
            new.reasoning = None;
            draft.replace_l1(i, new);
            count += 1;
        }
    }
    if count > 0 {
        steps.push(TrimStep::ClearedReasoning { count });
    }

    // 4. Long texts to max_text_chars, outside the current turn.
    let max_chars = cfg.max_text_chars;
    let mut count = 0;
    for i in 0..current {
        if draft.total <= target {
            break;
        }
        let m = &draft.l1[i].msg;
        if m.content.len() <= max_chars {
            continue; // bytes ≥ chars: certainly short enough
        }
        if let Some(cut) = cut_to_chars(&m.content, max_chars) {
            let new = m.with_content(cut);
            if new.estimate_tokens() < draft.l1[i].cost {
                draft.replace_l1(i, new);
                count += 1;
            }
        }
    }
    if count > 0 {
        steps.push(TrimStep::CutLongTexts { count, max_chars });
    }

    // 5. Old L1 turns, keeping the last (5) user turns.
    drop_turns_step(draft, target, cfg.keep_user_turns, &mut steps);

    // 6. The L3 summary.
    if draft.total > target && !draft.summary.is_empty() {
        draft.summary.clear();
        draft.recount();
        steps.push(TrimStep::DroppedSummary);
    }

    // 7. Every turn but the current one, then the context chosen for it.
    drop_turns_step(draft, target, 1, &mut steps);
    if draft.total > target && !draft.context.is_empty() {
        draft.context.clear();
        draft.recount();
        steps.push(TrimStep::DroppedContext);
    }

    // 8. The final message to its first third (tea-agent's last resort). Run after the
    //    summary and the older turns are gone: the user's current message matters more
    //    than older context, so it is cut only when nothing else is left to drop.
    if draft.total > target {
        if let Some(last) = draft.l1.len().checked_sub(1) {
            let m = &draft.l1[last].msg;
            let from_chars = m.content.chars().count();
            let to_chars = from_chars / cfg.final_message_keep_divisor.max(1);
            if let Some(cut) = cut_to_chars(&m.content, to_chars) {
                let new = m.with_content(cut);
                if new.estimate_tokens() < draft.l1[last].cost {
                    draft.replace_l1(last, new);
                    steps.push(TrimStep::CutFinalMessage {
                        from_chars,
                        to_chars,
                    });
                }
            }
        }
    }

    // 9. Rounds after the current user message, oldest first.
    if draft.total > target {
        let start = draft
            .l1
            .iter()
            .rposition(|i| i.msg.role == Role::User)
            .map_or(0, |u| u + 1);
        let mut messages = 0;
        while draft.total > target && start < draft.l1.len() {
            // An assistant message and the tool results that follow it go together.
            let mut end = start + 1;
            while draft.l1.get(end).is_some_and(|i| i.msg.role == Role::Tool) {
                end += 1;
            }
            for it in draft.l1.drain(start..end) {
                draft.total -= it.cost;
                messages += 1;
            }
        }
        if messages > 0 {
            steps.push(TrimStep::DroppedCurrentRounds { messages });
        }
    }

    // 10. Cut the system prompt and the user message to fit.
    if draft.total > target {
        fit(draft, target, &mut steps);
    }
    steps
}

/// The index of the current turn's first message in `l1`: the last user message.
/// Without a user message there is no turn to protect (`l1.len()`).
fn current_turn_start(l1: &[Item<'_>]) -> usize {
    l1.iter()
        .rposition(|i| i.msg.role == Role::User)
        .unwrap_or(l1.len())
}

fn drop_turns_step(draft: &mut Draft<'_>, target: usize, keep: usize, steps: &mut Vec<TrimStep>) {
    if draft.total <= target {
        return;
    }
    let (turns, messages) = draft.drop_turns(target, keep);
    if messages > 0 {
        steps.push(TrimStep::DroppedTurns {
            turns,
            messages,
            kept_user_turns: keep.max(1),
        });
    }
}

/// Step 10. Everything else is gone: at most a system prompt and L1 = [user message]
/// (or nothing).
fn fit(draft: &mut Draft<'_>, target: usize, steps: &mut Vec<TrimStep>) {
    let rest = draft.total - draft.system.as_ref().map_or(0, |s| s.cost);
    if let Some(sys) = draft.system.as_mut() {
        let allowed = (target / 2).max(target.saturating_sub(rest));
        if sys.cost > allowed {
            cut_system(sys, allowed, steps);
        }
    }
    draft.recount();
    if draft.total > target {
        let others = draft.total - draft.l1.last().map_or(0, |i| i.cost);
        if let Some(last) = draft.l1.last_mut() {
            let allowed = target.saturating_sub(others);
            let m = &last.msg;
            let from_chars = m.content.chars().count();
            let mut new = m.with_content(String::new());
            let images = new.images.len();
            new.images.clear();
            new.reasoning = None;
            let fixed = new.estimate_tokens(); // overhead + calls (none on a user message)
            let content = cut_to_tokens(&m.content, allowed.saturating_sub(fixed))
                .unwrap_or_else(|| m.content.clone());
            new.content = content;
            steps.push(TrimStep::CutUserMessage {
                from_chars,
                to_chars: new.content.chars().count(),
                images,
            });
            last.cost = new.estimate_tokens();
            last.msg = Cow::Owned(new);
        }
        draft.recount();
    }
    if draft.total > target {
        let rest = draft.total - draft.system.as_ref().map_or(0, |s| s.cost);
        if let Some(sys) = draft.system.as_mut() {
            cut_system(sys, target.saturating_sub(rest), steps);
        }
        draft.recount();
    }
}

fn cut_system(sys: &mut Item<'_>, allowed: usize, steps: &mut Vec<TrimStep>) {
    let from_chars = sys.msg.content.chars().count();
    let text_allowed = allowed.saturating_sub(MESSAGE_OVERHEAD_TOKENS);
    let content =
        cut_to_tokens(&sys.msg.content, text_allowed).unwrap_or_else(|| sys.msg.content.clone());
    let to_chars = content.chars().count();
    let new = sys.msg.with_content(content);
    sys.cost = new.estimate_tokens();
    sys.msg = Cow::Owned(new);
    steps.push(TrimStep::CutSystemPrompt {
        from_chars,
        to_chars,
    });
}
