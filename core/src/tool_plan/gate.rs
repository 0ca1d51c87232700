//! What of a streamed answer may be shown while it could still be a tool plan.
//!
//! A plan written as text is not an answer: its JSON must not reach the user as if it
//! were. [`PlanGate`] passes prose through as it arrives and holds back what may be a
//! plan: a code block until it closes (then it is shown unless [`parse`](super::parse)
//! finds a plan in it), and from a `<tool_call>` tag, or an answer that starts with `{`
//! or `[`, everything to the end. The caller, once the answer is complete, parses it and
//! calls [`PlanGate::finish`]: a plan's held text is dropped, anything else shown. So an
//! ordinary answer reaches the user whole and in order, only later where it looked like
//! a plan; prose written before a plan has already been shown, like the text a model
//! sends beside native tool calls.

use alloc::string::String;
use alloc::vec::Vec;

use super::{find_ignore_case, offset_in, parse, TAG_OPEN};
use crate::json::fenced_spans;

/// A code fence.
const FENCE: &str = "```";

/// Holds back what may be a plan in a streamed answer (see the module docs).
#[derive(Debug, Clone)]
pub struct PlanGate {
    /// The tools offered: only their plans are held.
    offered: Vec<String>,
    /// Received and not shown yet.
    held: String,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace, or the start of an opener, so far.
    Start,
    /// Prose: shown as it comes, but for a tail that may begin an opener.
    Passing,
    /// `held` starts with a code fence that has not closed yet.
    Block,
    /// A plan may be under way: everything is held to the end.
    Rest,
}

impl PlanGate {
    /// A gate for an answer to a request that offered these tools.
    pub fn new(offered: Vec<String>) -> PlanGate {
        PlanGate {
            offered,
            held: String::new(),
            state: State::Start,
        }
    }

    /// Takes the next piece of the answer; returns what may be shown now (often all of
    /// it, possibly nothing).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let mut show = String::new();
        loop {
            match self.state {
                State::Start => {
                    let t = self.held.trim_start();
                    if t.is_empty() {
                        return show;
                    }
                    if t.starts_with(['{', '[']) || starts_with_ignore_case(t, TAG_OPEN) {
                        self.state = State::Rest;
                    } else if t.starts_with(FENCE) {
                        self.state = State::Block;
                    } else if opener_prefix(t) == t.len() {
                        return show;
                    } else {
                        self.state = State::Passing;
                    }
                }
                State::Passing => {
                    let fence = self.held.find(FENCE);
                    let tag = find_ignore_case(&self.held, TAG_OPEN, 0);
                    let (at, next) = match (fence, tag) {
                        (Some(f), Some(t)) if t < f => (t, State::Rest),
                        (Some(f), _) => (f, State::Block),
                        (None, Some(t)) => (t, State::Rest),
                        (None, None) => {
                            let keep = opener_suffix(&self.held);
                            let at = self.held.len() - keep;
                            show.extend(self.held.drain(..at));
                            return show;
                        }
                    };
                    show.extend(self.held.drain(..at));
                    self.state = next;
                }
                State::Block => {
                    let Some(end) = closed_block_end(&self.held) else {
                        return show;
                    };
                    let is_plan = self
                        .held
                        .get(..end)
                        .is_some_and(|block| !parse(block, &self.offered).calls.is_empty());
                    if is_plan {
                        self.state = State::Rest;
                        return show;
                    }
                    show.extend(self.held.drain(..end));
                    self.state = State::Passing;
                }
                State::Rest => return show,
            }
        }
    }

    /// The answer is complete: what is left to show. Nothing when it was a plan (the
    /// caller parsed it), else everything held.
    pub fn finish(&mut self, was_plan: bool) -> String {
        let held = core::mem::take(&mut self.held);
        if was_plan {
            String::new()
        } else {
            held
        }
    }
}

/// Where the code block `text` starts with (after whitespace) ends, just after its
/// closing fence; `None` while it is open.
fn closed_block_end(text: &str) -> Option<usize> {
    let (span, content) = fenced_spans(text).next()?;
    let content_end = offset_in(text, content) + content.len();
    (text.get(content_end..span.end) == Some(FENCE)).then_some(span.end)
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.as_bytes()
        .get(..prefix.len())
        .is_some_and(|b| b.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// How long a start of an opener (a fence or the tag) `text` is: its length when the
/// whole text is one, else 0.
fn opener_prefix(text: &str) -> usize {
    let b = text.as_bytes();
    let is_prefix = |opener: &str| {
        b.len() < opener.len() && opener.as_bytes()[..b.len()].eq_ignore_ascii_case(b)
    };
    if !b.is_empty() && (is_prefix(FENCE) || is_prefix(TAG_OPEN)) {
        b.len()
    } else {
        0
    }
}

/// The length of the longest end of `text` that may begin an opener.
fn opener_suffix(text: &str) -> usize {
    let longest = TAG_OPEN.len().max(FENCE.len()) - 1;
    (1..=longest.min(text.len()))
        .rev()
        .find(|&n| {
            text.get(text.len() - n..)
                .is_some_and(|tail| opener_prefix(tail) == n)
        })
        .unwrap_or(0)
}
