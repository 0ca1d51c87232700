//! Priority adjustments proposed by a model (tea-agent `llm_adjust_priorities`).
//!
//! Decides which proposed changes are applied: only one level up or down (不允许跳级),
//! at most 3 per run (每次最多调整 3 条), each memory at most once per run, only active
//! memories, never a pinned one (pinning is the user's decision: tea-agent exempts pinned
//! memories from age decay, and an automatic change by a model is no more wanted); a
//! promotion restarts the decay clock (升级时重置 created_at), a demotion does not. A
//! promotion is marked ([`Memory::promoted`]) and becomes CRITICAL only where the cap has
//! room for it ([`super::critical_room`]): the model's taste never pushes out a rule the
//! user stated. A memory learned from world text is never promoted
//! ([`RejectReason::FromWorld`]; it may be demoted): a page cannot argue its way up.
//! [`adjustment_listing`] and [`clip_chars`] prepare the model's input within
//! tea-agent's limits (≤ 100 memories previewed in ≤ 80 characters, topics ≤ 2 000
//! characters); writing the prompt, calling the model and repairing its JSON are the
//! shell's.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use serde::{Deserialize, Serialize};

use super::{flatten_content, Memory, MemoryConfig, MemoryId, Priority};
use crate::text::clip_chars;
use crate::Timestamp;

/// The memories a model may adjust, one line each: `#id priority category: preview`.
/// At most `adjust_listed` (100) active memories, most binding first, then the most
/// recently used or created, previews flattened and cut to `adjust_preview_chars` (80).
/// Pinned memories are not listed: they cannot be adjusted.
pub fn adjustment_listing(memories: &[Memory], now: Timestamp, cfg: &MemoryConfig) -> String {
    let mut active: Vec<&Memory> = memories
        .iter()
        .filter(|m| m.is_active(now) && !m.pinned)
        .collect();
    let recent = |m: &Memory| m.last_accessed_at.unwrap_or(m.created_at).max(m.created_at);
    active.sort_by(|a, b| {
        a.priority
            .cmp(&b.priority)
            .then(recent(b).cmp(&recent(a)))
            .then(b.id.cmp(&a.id))
    });
    let mut out = String::new();
    for m in active.iter().take(cfg.adjust_listed) {
        let preview = clip_chars(&flatten_content(&m.content), cfg.adjust_preview_chars);
        // Writing to a String cannot fail.
        let _ = writeln!(out, "#{} {} {}: {}", m.id, m.priority, m.category, preview);
    }
    out
}

/// The change a model proposes for one memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Set this priority.
    To(Priority),
    /// Add this to the priority number: −1 is one level more important, +1 one less.
    By(i64),
}

/// One proposal. Accepts the flat JSON a model writes: `{"id": 3, "priority": 1}` or
/// `{"id": 3, "delta": -1}` (other keys, such as a reason, are ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawProposal")]
pub struct Proposal {
    /// The memory to change.
    pub id: MemoryId,
    /// The change.
    pub change: Change,
}

#[derive(Deserialize)]
struct RawProposal {
    id: MemoryId,
    #[serde(default)]
    priority: Option<Priority>,
    #[serde(default)]
    delta: Option<i64>,
    #[serde(default)]
    change: Option<Change>,
}

impl TryFrom<RawProposal> for Proposal {
    type Error = &'static str;
    fn try_from(raw: RawProposal) -> Result<Self, Self::Error> {
        let change = match (raw.change, raw.priority, raw.delta) {
            (Some(c), None, None) => c,
            (None, Some(p), None) => Change::To(p),
            (None, None, Some(d)) => Change::By(d),
            (None, None, None) => return Err("a proposal needs `priority` or `delta`"),
            _ => return Err("a proposal takes only one of `priority`, `delta`, `change`"),
        };
        Ok(Proposal { id: raw.id, change })
    }
}

/// Why a proposal was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// No memory has this id.
    UnknownId,
    /// The memory is deleted or expired.
    Inactive,
    /// The memory is pinned: the user fixed it, only the user changes it.
    Pinned,
    /// The proposal would not change the priority.
    NoChange,
    /// More than one level at once.
    Jump,
    /// Past CRITICAL or LOW.
    OutOfRange,
    /// The same memory was already proposed in this run.
    RepeatedId,
    /// `max_adjustments` (3) were already applied.
    LimitReached,
    /// A promotion of a memory learned from world text: it stays information.
    FromWorld,
    /// A promotion to CRITICAL while the CRITICAL cap holds only the user's own rules
    /// (and pinned memories): it would push one of them out, or be retired at once.
    CriticalFull,
}

/// An applied change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// Index into the slice given to [`adjust_priorities`].
    pub index: usize,
    /// The memory's id.
    pub id: MemoryId,
    /// Priority before.
    pub from: Priority,
    /// Priority after.
    pub to: Priority,
    /// Set on promotion: the new `created_at` (the decay clock restarts).
    pub created_at: Option<Timestamp>,
}

/// A refused proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// The proposal.
    pub proposal: Proposal,
    /// Why.
    pub reason: RejectReason,
}

/// What [`adjust_priorities`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdjustOutcome {
    /// Applied changes, in proposal order, for the shell to persist.
    pub applied: Vec<Applied>,
    /// Refused proposals with their reasons, for the log.
    pub rejected: Vec<Rejected>,
}

/// Applies the allowed proposals to `memories` in order and reports every decision.
/// At most `critical_room` of them may be promotions to CRITICAL: the shell passes
/// [`super::critical_room`] less the CRITICAL memories it already added in the same run.
pub fn adjust_priorities(
    memories: &mut [Memory],
    proposals: &[Proposal],
    now: Timestamp,
    critical_room: usize,
    cfg: &MemoryConfig,
) -> AdjustOutcome {
    let mut out = AdjustOutcome::default();
    let mut seen: Vec<MemoryId> = Vec::new();
    let mut room = critical_room;
    for &proposal in proposals {
        let repeated = seen.contains(&proposal.id);
        seen.push(proposal.id);
        let verdict = if repeated {
            Err(RejectReason::RepeatedId)
        } else {
            check(memories, proposal, now, out.applied.len(), cfg).and_then(|(i, to)| match to {
                Priority::Critical if room == 0 => Err(RejectReason::CriticalFull),
                Priority::Critical => {
                    room -= 1;
                    Ok((i, to))
                }
                _ => Ok((i, to)),
            })
        };
        match verdict {
            Err(reason) => out.rejected.push(Rejected { proposal, reason }),
            Ok((index, to)) => {
                let Some(m) = memories.get_mut(index) else {
                    continue;
                };
                let from = m.priority;
                m.priority = to;
                m.promoted = to < from;
                let created_at = (to < from).then_some(now);
                if let Some(t) = created_at {
                    m.created_at = t;
                }
                out.applied.push(Applied {
                    index,
                    id: proposal.id,
                    from,
                    to,
                    created_at,
                });
            }
        }
    }
    out
}

/// The index and new priority of an allowed proposal, or why it is refused.
fn check(
    memories: &[Memory],
    proposal: Proposal,
    now: Timestamp,
    applied: usize,
    cfg: &MemoryConfig,
) -> Result<(usize, Priority), RejectReason> {
    if !memories.iter().any(|m| m.id == proposal.id) {
        return Err(RejectReason::UnknownId);
    }
    let (index, m) = memories
        .iter()
        .enumerate()
        .find(|(_, m)| m.id == proposal.id && m.is_active(now))
        .ok_or(RejectReason::Inactive)?;
    if m.pinned {
        return Err(RejectReason::Pinned);
    }
    let current = i64::from(m.priority.as_u8());
    let delta = match proposal.change {
        Change::To(p) => i64::from(p.as_u8()) - current,
        Change::By(d) => d,
    };
    match delta {
        0 => return Err(RejectReason::NoChange),
        -1 | 1 => {}
        _ => return Err(RejectReason::Jump),
    }
    let to = u8::try_from(current + delta)
        .ok()
        .and_then(Priority::from_u8)
        .ok_or(RejectReason::OutOfRange)?;
    if m.is_world() && to < m.priority {
        return Err(RejectReason::FromWorld);
    }
    if applied >= cfg.max_adjustments {
        return Err(RejectReason::LimitReached);
    }
    Ok((index, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;
    use alloc::vec;

    const NOW: Timestamp = 1_000_000;
    /// Room for any number of promotions to CRITICAL.
    const ROOM: usize = usize::MAX;

    fn store() -> Vec<Memory> {
        (1..=6)
            .map(|id| {
                let mut m = Memory::new("x", Category::Fact, 10, &FallbackTokenizer);
                m.id = id;
                m.priority = Priority::Medium;
                m
            })
            .collect()
    }

    fn p(id: MemoryId, change: Change) -> Proposal {
        Proposal { id, change }
    }

    #[test]
    fn one_level_only_promotion_resets_clock() {
        use Change::*;
        use Priority::*;
        let cfg = MemoryConfig::default();
        let table = [
            (To(High), Ok(High)),
            (To(Low), Ok(Low)),
            (By(-1), Ok(High)),
            (By(1), Ok(Low)),
            (To(Critical), Err(RejectReason::Jump)),
            (By(-2), Err(RejectReason::Jump)),
            (By(i64::MIN), Err(RejectReason::Jump)),
            (To(Medium), Err(RejectReason::NoChange)),
            (By(0), Err(RejectReason::NoChange)),
        ];
        for (change, want) in table {
            let mut ms = store();
            let out = adjust_priorities(&mut ms, &[p(2, change)], NOW, ROOM, &cfg);
            match want {
                Ok(to) => {
                    assert_eq!(out.applied.len(), 1, "{change:?}");
                    assert_eq!(ms[1].priority, to);
                    let promoted = to < Medium;
                    assert_eq!(
                        ms[1].created_at,
                        if promoted { NOW } else { 10 },
                        "{change:?}"
                    );
                    assert_eq!(out.applied[0].created_at.is_some(), promoted);
                }
                Err(reason) => {
                    assert_eq!(out.rejected[0].reason, reason, "{change:?}");
                    assert_eq!(ms[1].priority, Medium);
                }
            }
        }
    }

    #[test]
    fn out_of_range_unknown_inactive_repeated() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        ms[0].priority = Priority::Critical;
        ms[1].priority = Priority::Low;
        ms[2].deleted = true;
        let out = adjust_priorities(
            &mut ms,
            &[
                p(1, Change::By(-1)),
                p(2, Change::By(1)),
                p(3, Change::By(1)),
                p(99, Change::By(1)),
                p(4, Change::By(1)),
                p(4, Change::By(1)),
            ],
            NOW,
            ROOM,
            &cfg,
        );
        let reasons: Vec<_> = out.rejected.iter().map(|r| r.reason).collect();
        assert_eq!(
            reasons,
            vec![
                RejectReason::OutOfRange,
                RejectReason::OutOfRange,
                RejectReason::Inactive,
                RejectReason::UnknownId,
                RejectReason::RepeatedId,
            ]
        );
        assert_eq!(out.applied.len(), 1);
        assert_eq!(ms[3].priority, Priority::Low, "moved once, not twice");
    }

    #[test]
    fn pinned_memories_are_never_adjusted_and_do_not_use_up_the_limit() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        ms[0].pinned = true;
        ms[1].pinned = true;
        let props: Vec<Proposal> = vec![
            p(1, Change::By(-1)),
            p(2, Change::To(Priority::Low)),
            p(3, Change::By(-1)),
            p(4, Change::By(1)),
            p(5, Change::By(-1)),
        ];
        let out = adjust_priorities(&mut ms, &props, NOW, ROOM, &cfg);
        let rejected: Vec<_> = out
            .rejected
            .iter()
            .map(|r| (r.proposal.id, r.reason))
            .collect();
        assert_eq!(
            rejected,
            vec![(1, RejectReason::Pinned), (2, RejectReason::Pinned)]
        );
        assert_eq!((ms[0].priority, ms[0].created_at), (Priority::Medium, 10));
        assert_eq!(ms[1].priority, Priority::Medium);
        assert_eq!(
            out.applied.iter().map(|a| a.id).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
    }

    #[test]
    fn at_most_three_per_run() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        let props: Vec<Proposal> = (1..=5).map(|id| p(id, Change::By(-1))).collect();
        let out = adjust_priorities(&mut ms, &props, NOW, ROOM, &cfg);
        assert_eq!(
            out.applied.iter().map(|a| a.id).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(out.rejected.len(), 2);
        assert!(out
            .rejected
            .iter()
            .all(|r| r.reason == RejectReason::LimitReached));
        assert_eq!(ms[3].priority, Priority::Medium);
    }

    #[test]
    fn listing_is_bounded_and_previews_are_clipped() {
        let cfg = MemoryConfig {
            adjust_listed: 3,
            adjust_preview_chars: 10,
            ..MemoryConfig::default()
        };
        let mut ms = store();
        ms[0].content = "a very long\nmemory text indeed".into();
        ms[0].priority = Priority::High;
        ms[4].deleted = true;
        ms[3].pinned = true; // #4: not listed
        let listing = adjustment_listing(&ms, NOW, &cfg);
        let lines: Vec<&str> = listing.lines().collect();
        assert_eq!(
            lines,
            vec![
                "#1 high fact: a very lo…",
                "#6 medium fact: x",
                "#3 medium fact: x"
            ]
        );
        assert_eq!(clip_chars("茶茶茶", 3), "茶茶茶");
        assert_eq!(clip_chars("茶茶茶茶", 3), "茶茶…");
        assert_eq!(clip_chars("abc", 0), "");
        let default = MemoryConfig::default();
        assert_eq!(
            clip_chars(&"x".repeat(5000), default.adjust_topics_chars)
                .chars()
                .count(),
            2000
        );
    }

    #[test]
    fn proposals_parse_from_flat_model_json() {
        let ps: Vec<Proposal> = serde_json::from_str(
            r#"[{"id":1,"priority":"high","reason":"used daily"},{"id":2,"delta":-1},{"id":3,"priority":0}]"#,
        )
        .unwrap();
        assert_eq!(
            ps,
            vec![
                p(1, Change::To(Priority::High)),
                p(2, Change::By(-1)),
                p(3, Change::To(Priority::Critical))
            ]
        );
        assert!(serde_json::from_str::<Proposal>(r#"{"id":1}"#).is_err());
        assert!(serde_json::from_str::<Proposal>(r#"{"id":1,"priority":1,"delta":1}"#).is_err());
        assert!(serde_json::from_str::<Proposal>(r#"{"id":1,"priority":7}"#).is_err());
    }

    #[test]
    fn promotions_are_marked_and_become_critical_only_where_there_is_room() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        for m in &mut ms[..3] {
            m.priority = Priority::High;
        }
        let props: Vec<Proposal> = vec![
            p(1, Change::To(Priority::Critical)),
            p(2, Change::By(-1)),
            p(4, Change::By(-1)),
            p(3, Change::By(1)),
        ];
        let out = adjust_priorities(&mut ms, &props, NOW, 1, &cfg);
        assert_eq!(
            out.applied.iter().map(|a| a.id).collect::<Vec<_>>(),
            vec![1, 4, 3]
        );
        assert_eq!(
            (out.rejected[0].proposal.id, out.rejected[0].reason),
            (2, RejectReason::CriticalFull)
        );
        assert_eq!((ms[0].priority, ms[0].promoted), (Priority::Critical, true));
        assert_eq!((ms[1].priority, ms[1].promoted), (Priority::High, false));
        assert_eq!((ms[3].priority, ms[3].promoted), (Priority::High, true));
        assert_eq!((ms[2].priority, ms[2].promoted), (Priority::Medium, false));
        // A demotion is not a promotion any more.
        let out = adjust_priorities(&mut ms, &[p(4, Change::By(1))], NOW, 0, &cfg);
        assert_eq!(out.applied.len(), 1);
        assert_eq!((ms[3].priority, ms[3].promoted), (Priority::Medium, false));
    }

    #[test]
    fn a_world_memory_is_never_promoted_but_may_be_demoted() {
        use crate::provenance::Source;
        let cfg = MemoryConfig::default();
        // (its priority, the change, the outcome)
        let table = [
            (Priority::Low, Change::By(-1), Err(RejectReason::FromWorld)),
            (
                Priority::Low,
                Change::To(Priority::Medium),
                Err(RejectReason::FromWorld),
            ),
            (
                Priority::Medium,
                Change::To(Priority::High),
                Err(RejectReason::FromWorld),
            ),
            (Priority::Medium, Change::By(1), Ok(Priority::Low)),
        ];
        for (from, change, want) in table {
            let mut ms = store();
            ms[1] = ms[1].clone().with_source(Source::World);
            ms[1].priority = from;
            let out = adjust_priorities(&mut ms, &[p(2, change)], NOW, ROOM, &cfg);
            match want {
                Ok(to) => assert_eq!((out.applied.len(), ms[1].priority), (1, to), "{change:?}"),
                Err(reason) => {
                    assert_eq!(out.rejected[0].reason, reason, "{change:?}");
                    assert_eq!(ms[1].priority, from);
                }
            }
        }
    }
}
