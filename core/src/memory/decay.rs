//! Ageing: priority decay, expiry and the CRITICAL FIFO cap.
//!
//! Decides which memories lose a priority level with age (tea-agent `degrade_by_age`:
//! CRITICAL > 30 d → HIGH, HIGH > 60 d → MEDIUM, MEDIUM > 90 d → LOW, pinned exempt),
//! which have expired, which CRITICAL memories fall out of the cap of 15 and what
//! falling out does to them ([`critical_overflow`], [`retire`]), and how many more
//! summaries or promotions the cap has room for ([`critical_room`]). Writing the changes
//! is the shell's; [`apply_decay`] also updates the slice so the following selection
//! sees them. Decay comes before the cap: a CRITICAL memory old enough to be HIGH is
//! demoted, not deleted.
//!
//! **The user's rules come first.** Reflection summaries and the model's promotions are
//! the agent's doing, not the user's ([`stated_by_user`]): they never push a rule the
//! user stated out of the cap. The cap retires them first, and the shell adds one only
//! while [`critical_room`] says it will not be retired at once.
//!
//! **The decay clock does not restart on demotion.** All three thresholds are ages since
//! `created_at` (which only a promotion resets, tea-agent: 升级时重置 created_at). A memory
//! therefore holds at most the level its age allows: any level up to 30 days, at most
//! HIGH up to 60, at most MEDIUM up to 90, LOW after. This is exactly tea-agent's three
//! rules applied until nothing changes, so a call is idempotent: a 31-day-old CRITICAL
//! becomes HIGH (and stays HIGH until day 60), a 61-day-old one becomes MEDIUM at once.
//! Restarting the clock instead would have made a demoted memory look brand new to the
//! recency factor of selection.

use alloc::vec::Vec;
use serde::Serialize;

use super::{is_summary, Memory, MemoryConfig, MemoryId, Priority};
use crate::{Timestamp, DAY};

/// One priority lowered by age.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DecayChange {
    /// Index into the slice given to [`apply_decay`].
    pub index: usize,
    /// The memory's id.
    pub id: MemoryId,
    /// Priority before.
    pub from: Priority,
    /// Priority after.
    pub to: Priority,
}

/// The priority a memory of `priority` created at `created_at` holds at `now` after
/// decay (never a more important one). Thresholds are strict: exactly 30 days old is
/// still CRITICAL, one second more is HIGH.
pub fn decayed_priority(
    priority: Priority,
    created_at: Timestamp,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Priority {
    let age = now.saturating_sub(created_at);
    let older_than = |days: i64| age > days.saturating_mul(DAY);
    let mut p = priority;
    // tea-agent's three rules, in order, until nothing changes.
    if p == Priority::Critical && older_than(cfg.decay_critical_days) {
        p = Priority::High;
    }
    if p == Priority::High && older_than(cfg.decay_high_days) {
        p = Priority::Medium;
    }
    if p == Priority::Medium && older_than(cfg.decay_medium_days) {
        p = Priority::Low;
    }
    p
}

/// Lowers the priority of every non-pinned, non-deleted memory that is too old for it
/// and returns the changes for the shell to persist. `created_at` is left alone (see the
/// module documentation); a promotion that decays is no longer one.
pub fn apply_decay(
    memories: &mut [Memory],
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Vec<DecayChange> {
    let mut changes = Vec::new();
    for (index, m) in memories.iter_mut().enumerate() {
        if m.pinned || m.deleted {
            continue;
        }
        let to = decayed_priority(m.priority, m.created_at, now, cfg);
        if to != m.priority {
            changes.push(DecayChange {
                index,
                id: m.id,
                from: m.priority,
                to,
            });
            m.priority = to;
            m.promoted = false;
        }
    }
    changes
}

/// Ids of the memories that are not deleted yet but whose `expires_at` has passed
/// (inclusive): the shell soft-deletes them; [`super::select`] already skips them.
pub fn expired(memories: &[Memory], now: Timestamp) -> Vec<MemoryId> {
    memories
        .iter()
        .filter(|m| !m.deleted && m.is_expired(now))
        .map(|m| m.id)
        .collect()
}

/// True when the user stated the memory at its priority: neither a reflection summary
/// ([`is_summary`]) nor raised there by the model's review ([`Memory::promoted`]), nor
/// learned from world text ([`Memory::is_world`]).
/// Summaries can be written again from the memories they summarise, and a promotion
/// can be taken back; a rule the user gave cannot be recovered once it is gone.
pub fn stated_by_user(memory: &Memory, cfg: &MemoryConfig) -> bool {
    !memory.promoted && !is_summary(memory, cfg) && !memory.is_world()
}

/// Ids of the CRITICAL memories to retire ([`retire`]) so that at most `critical_cap`
/// (15) active ones remain (tea-agent's CRITICAL FIFO: 超出时软删除最旧的), in order:
///
/// 1. reflection summaries and the model's promotions (not [`stated_by_user`]), oldest
///    first. tea-agent's 反思归纳 stores each summary as CRITICAL, and the review may
///    raise a HIGH memory to CRITICAL: without this a few runs would fill the cap and push
///    out the user's own instructions;
/// 2. the other unpinned CRITICAL memories, oldest first (tea-agent's FIFO);
/// 3. pinned memories last (summaries and promotions first, then oldest first): they
///    go only when more than the cap of them are pinned.
///
/// Ties in age go to the lower id.
pub fn critical_overflow(memories: &[Memory], now: Timestamp, cfg: &MemoryConfig) -> Vec<MemoryId> {
    let mut critical: Vec<(bool, bool, Timestamp, MemoryId)> = memories
        .iter()
        .filter(|m| m.priority == Priority::Critical && m.is_active(now))
        .map(|m| (m.pinned, stated_by_user(m, cfg), m.created_at, m.id))
        .collect();
    let excess = critical.len().saturating_sub(cfg.critical_cap);
    if excess == 0 {
        return Vec::new();
    }
    // (pinned, stated by the user, created_at, id): false sorts first, so this is the
    // order above.
    critical.sort_unstable();
    critical.iter().take(excess).map(|k| k.3).collect()
}

/// How many more summaries or promotions may become CRITICAL now without the cap
/// retiring one of them, or a rule of the user, at once: the cap less the active
/// CRITICAL memories that hold their place (stated by the user, or pinned). Older
/// summaries and promotions make way for new ones. A shell adding several in one run
/// counts down from this itself.
pub fn critical_room(memories: &[Memory], now: Timestamp, cfg: &MemoryConfig) -> usize {
    let held = memories
        .iter()
        .filter(|m| m.priority == Priority::Critical && m.is_active(now))
        .filter(|m| m.pinned || stated_by_user(m, cfg))
        .count();
    cfg.critical_cap.saturating_sub(held)
}

/// What the CRITICAL cap did to a memory it retired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Retired {
    /// Soft-deleted: a summary (its members still hold what it said) or a rule of the
    /// user past the cap (tea-agent's FIFO).
    Deleted,
    /// A promotion taken back: HIGH again. The memory was the user's before the model
    /// raised it, so it is kept.
    Demoted,
}

/// Retires one memory [`critical_overflow`] named: a promotion that is not a summary
/// goes back to HIGH (no longer a promotion), anything else is soft-deleted.
pub fn retire(memory: &mut Memory, cfg: &MemoryConfig) -> Retired {
    if memory.promoted && !is_summary(memory, cfg) {
        memory.priority = Priority::Critical.lower();
        memory.promoted = false;
        Retired::Demoted
    } else {
        memory.deleted = true;
        Retired::Deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;
    use alloc::vec;

    const NOW: Timestamp = 1_000 * DAY;

    fn mem(id: MemoryId, priority: Priority, age: i64) -> Memory {
        let mut m = Memory::new("x", Category::General, NOW - age, &FallbackTokenizer);
        m.id = id;
        m.priority = priority;
        m
    }

    #[test]
    fn decay_boundaries_at_30_60_90_days() {
        use Priority::*;
        let cfg = MemoryConfig::default();
        let table = [
            (Critical, 30 * DAY, Critical),
            (Critical, 30 * DAY + 1, High),
            (Critical, 60 * DAY, High),
            (Critical, 60 * DAY + 1, Medium),
            (Critical, 90 * DAY + 1, Low),
            (High, 60 * DAY, High),
            (High, 60 * DAY + 1, Medium),
            (High, 30 * DAY + 1, High),
            (Medium, 90 * DAY, Medium),
            (Medium, 90 * DAY + 1, Low),
            (Medium, 61 * DAY, Medium),
            (Low, 10_000 * DAY, Low),
            (Critical, -DAY, Critical), // created in the future
        ];
        for (from, age, to) in table {
            assert_eq!(
                decayed_priority(from, NOW - age, NOW, &cfg),
                to,
                "{from} at {age}s"
            );
        }
    }

    #[test]
    fn decay_is_idempotent_and_spares_pinned_and_deleted() {
        let cfg = MemoryConfig::default();
        let mut ms = vec![
            mem(1, Priority::Critical, 31 * DAY),
            mem(2, Priority::Critical, 31 * DAY),
            mem(3, Priority::Critical, 31 * DAY),
        ];
        ms[1].pinned = true;
        ms[2].deleted = true;
        let changes = apply_decay(&mut ms, NOW, &cfg);
        assert_eq!(
            changes,
            vec![DecayChange {
                index: 0,
                id: 1,
                from: Priority::Critical,
                to: Priority::High
            }]
        );
        assert_eq!(ms[0].created_at, NOW - 31 * DAY, "clock not restarted");
        assert!(
            apply_decay(&mut ms, NOW, &cfg).is_empty(),
            "second call changes nothing"
        );
        assert_eq!(ms[0].priority, Priority::High, "not straight to LOW");
        assert_eq!(
            (ms[1].priority, ms[2].priority),
            (Priority::Critical, Priority::Critical)
        );
        // A month later the same memory passes 60 days and steps down once more.
        let later = apply_decay(&mut ms, NOW + 30 * DAY, &cfg);
        assert_eq!(later.len(), 1);
        assert_eq!(ms[0].priority, Priority::Medium);
    }

    #[test]
    fn expired_lists_passed_and_not_yet_deleted() {
        let mut ms = vec![
            mem(1, Priority::High, 0),
            mem(2, Priority::High, 0),
            mem(3, Priority::High, 0),
            mem(4, Priority::High, 0),
        ];
        ms[0].expires_at = Some(NOW);
        ms[1].expires_at = Some(NOW + 1);
        ms[2].expires_at = Some(NOW - 5);
        ms[2].deleted = true;
        assert_eq!(expired(&ms, NOW), vec![1]);
        assert_eq!(expired(&ms, NOW + 1), vec![1, 2]);
    }

    #[test]
    fn critical_fifo_keeps_the_newest_fifteen() {
        let cfg = MemoryConfig::default();
        for (n, evicted) in [(14usize, 0usize), (15, 0), (16, 1), (20, 5)] {
            let ms: Vec<Memory> = (0..n)
                .map(|i| mem(i as MemoryId, Priority::Critical, (i as i64) * 3600))
                .collect();
            let out = critical_overflow(&ms, NOW, &cfg);
            // Highest index = oldest; the oldest go first.
            let want: Vec<MemoryId> = (0..evicted).map(|k| (n - 1 - k) as MemoryId).collect();
            assert_eq!(out, want, "{n} critical");
        }
    }

    #[test]
    fn critical_fifo_ignores_inactive_and_other_priorities_and_spares_pinned() {
        let cfg = MemoryConfig {
            critical_cap: 2,
            ..MemoryConfig::default()
        };
        let mut ms = vec![
            mem(1, Priority::Critical, 50),
            mem(2, Priority::Critical, 40),
            mem(3, Priority::Critical, 30),
            mem(4, Priority::Critical, 20),
            mem(5, Priority::High, 99),
            mem(6, Priority::Critical, 99),
        ];
        ms[0].pinned = true; // oldest but pinned: spared
        ms[5].deleted = true;
        assert_eq!(critical_overflow(&ms, NOW, &cfg), vec![2, 3]);
        // All pinned: the oldest go after all.
        for m in &mut ms {
            m.pinned = true;
        }
        assert_eq!(critical_overflow(&ms, NOW, &cfg), vec![1, 2]);
    }

    /// A reflection summary (CRITICAL, tagged `summary`) `age` seconds old.
    fn summary(id: MemoryId, age: i64) -> Memory {
        let mut m = mem(id, Priority::Critical, age);
        m.tags.push("summary".into());
        m
    }

    #[test]
    fn critical_fifo_evicts_summaries_before_the_users_rules() {
        // Review case: 3 instructions, then 15 newer summaries. The cap of 15 is
        // exceeded by 3: the 3 oldest summaries go, every instruction stays.
        let cfg = MemoryConfig::default();
        let mut ms: Vec<Memory> = (1..=3)
            .map(|id| mem(id, Priority::Critical, 5 * DAY))
            .collect();
        for k in 0..15 {
            // id 100 is the oldest summary, 114 the newest.
            ms.push(summary(100 + k, 4 * DAY - i64::try_from(k).unwrap() * 3600));
        }
        assert_eq!(critical_overflow(&ms, NOW, &cfg), vec![100, 101, 102]);
    }

    #[test]
    fn critical_fifo_order_is_summaries_then_unpinned_then_pinned() {
        let cfg = MemoryConfig {
            critical_cap: 0,
            ..MemoryConfig::default()
        };
        let mut ms = vec![
            mem(1, Priority::Critical, 90), // oldest rule
            mem(2, Priority::Critical, 10), // newest rule
            summary(3, 5),                  // newest summary
            summary(4, 80),                 // oldest summary
            mem(5, Priority::Critical, 99), // pinned rule, oldest of all
            summary(6, 99),                 // pinned summary
        ];
        ms[4].pinned = true;
        ms[5].pinned = true;
        // Everything goes at cap 0: the order is the eviction order.
        assert_eq!(critical_overflow(&ms, NOW, &cfg), vec![4, 3, 1, 2, 6, 5]);
        // Cap 4 of 6: only the two unpinned summaries go, although the rules are older.
        let cap4 = MemoryConfig {
            critical_cap: 4,
            ..cfg
        };
        assert_eq!(critical_overflow(&ms, NOW, &cap4), vec![4, 3]);
    }

    /// A HIGH memory the model raised to CRITICAL `age` seconds ago.
    fn promotion(id: MemoryId, age: i64) -> Memory {
        let mut m = mem(id, Priority::Critical, age);
        m.promoted = true;
        m
    }

    #[test]
    fn a_promotion_gives_way_to_the_users_rules_and_is_demoted_not_deleted() {
        // 15 rules of the user, the oldest 20 days old, then the model promotes a
        // preference: the promotion goes back to HIGH, every rule stays.
        let cfg = MemoryConfig::default();
        let mut ms: Vec<Memory> = (1..=15)
            .map(|id| {
                mem(
                    id,
                    Priority::Critical,
                    20 * DAY - i64::try_from(id).unwrap(),
                )
            })
            .collect();
        ms.push(promotion(16, 0));
        assert_eq!(critical_overflow(&ms, NOW, &cfg), vec![16]);
        assert_eq!(retire(&mut ms[15], &cfg), Retired::Demoted);
        assert_eq!(
            (ms[15].priority, ms[15].promoted, ms[15].deleted),
            (Priority::High, false, false)
        );
        // A summary is deleted, and so is a rule past the cap.
        let mut s = summary(17, 0);
        s.promoted = true;
        assert_eq!(retire(&mut s, &cfg), Retired::Deleted);
        assert!(s.deleted);
        let mut rule = mem(18, Priority::Critical, 0);
        assert_eq!(retire(&mut rule, &cfg), Retired::Deleted);
    }

    #[test]
    fn summaries_and_promotions_go_first_oldest_first() {
        let cfg = MemoryConfig {
            critical_cap: 2,
            ..MemoryConfig::default()
        };
        let ms = vec![
            mem(1, Priority::Critical, 90), // the oldest rule
            promotion(2, 10),
            summary(3, 20),
            mem(4, Priority::Critical, 5),
        ];
        assert_eq!(critical_overflow(&ms, NOW, &cfg), vec![3, 2]);
    }

    #[test]
    fn room_is_the_cap_less_what_holds_its_place() {
        let cfg = MemoryConfig {
            critical_cap: 3,
            ..MemoryConfig::default()
        };
        let rule = |id| mem(id, Priority::Critical, 10);
        let pinned_summary = |id| {
            let mut m = summary(id, 10);
            m.pinned = true;
            m
        };
        let mut deleted = rule(9);
        deleted.deleted = true;
        let table: [(Vec<Memory>, usize); 6] = [
            (vec![], 3),
            (vec![rule(1), rule(2)], 1),
            (vec![rule(1), summary(2, 5), promotion(3, 5)], 2),
            (vec![rule(1), pinned_summary(2)], 1),
            (vec![rule(1), rule(2), rule(3), rule(4)], 0),
            (vec![rule(1), deleted, mem(5, Priority::High, 1)], 2),
        ];
        for (ms, room) in table {
            assert_eq!(critical_room(&ms, NOW, &cfg), room, "{ms:?}");
        }
    }

    #[test]
    fn a_promotion_that_decays_is_no_longer_one() {
        let cfg = MemoryConfig::default();
        let mut ms = vec![promotion(1, 31 * DAY)];
        apply_decay(&mut ms, NOW, &cfg);
        assert_eq!((ms[0].priority, ms[0].promoted), (Priority::High, false));
        assert!(stated_by_user(&ms[0], &cfg));
    }
}
