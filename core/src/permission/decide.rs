//! The decision for one call: run, ask (once or twice) or refuse.
//!
//! Inputs are the call's level (class raised by escalation), the session's grants and
//! the policy of the interface (a person at the keyboard, or a headless run). Running,
//! asking and recording are the shell's.

use alloc::collections::BTreeSet;
use alloc::string::String;
use serde::{Deserialize, Serialize};

use super::{Level, PermissionConfig, PermissionError};

/// What to do with one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Run,
    /// Run it, confined to the workspace (L2: the shell canonicalises paths and refuses
    /// what resolves outside, symlinks included).
    RunScoped,
    /// Park it and ask the user once (L3).
    AskOnce,
    /// Park it and ask the user twice, repeating the exact call the second time (L4).
    AskTwice,
    /// Do not run it.
    Refuse(RefusalReason),
}

impl Decision {
    /// Whether the call runs without asking anyone.
    pub fn runs(self) -> bool {
        matches!(self, Decision::Run | Decision::RunScoped)
    }
}

/// Why a call was refused without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// L5: dangerous or unacceptable, refused everywhere (seed: 默认禁止).
    Dangerous,
    /// A headless run cannot ask: the call needed a person. `evolve ask` exits with 4.
    NeedsPerson {
        /// The level of the call.
        level: Level,
        /// The highest level the run was allowed to start by itself.
        max_auto: Level,
    },
}

/// Who is there to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Policy {
    /// A person answers questions (chat, web UI).
    Interactive,
    /// Nobody answers (`evolve ask`, scheduled tasks): calls up to `max_auto` run, the
    /// rest is refused with [`RefusalReason::NeedsPerson`]. `max_auto` above L3 counts
    /// as L3.
    Headless {
        /// The highest level that runs without a person.
        max_auto: Level,
    },
}

/// The highest level a headless run may ever start by itself: `--allow` accepts
/// L1–L3 and `--yes` means "yes to the one-confirmation questions" — an L4 call needs a
/// person reading it twice, which a flag cannot do.
pub const HEADLESS_CEILING: Level = Level::L3;

impl Policy {
    /// The policy of a headless run from its flags: `--allow LEVEL` (or, without it, the
    /// config's `headless_max_auto`, L2 by default), raised to L3 by `--yes`, and never
    /// above [`HEADLESS_CEILING`].
    pub fn headless(allow: Option<Level>, yes: bool, config: &PermissionConfig) -> Policy {
        let mut max_auto = allow.unwrap_or(config.headless_max_auto);
        if yes {
            max_auto = max_auto.max(Level::L3);
        }
        Policy::Headless {
            max_auto: max_auto.min(HEADLESS_CEILING),
        }
    }
}

/// The tools the user said "always allow" for in one session (seed 002: the session's
/// tool whitelist). Serialised as a sorted list of names. Only L0–L3 tools can be
/// granted, and [`decide`] only honours a grant for an L3 call of an interactive
/// session, so a tool whose call escalates to L4 or L5 is asked or refused as usual, and
/// a headless run never does more than its `max_auto` because of a grant.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Grants {
    tools: BTreeSet<String>,
}

impl Grants {
    /// No grants.
    pub fn new() -> Self {
        Self::default()
    }

    /// "Always allow `tool`" for this session. `level` is the tool's class; L4 and L5
    /// are rejected because they need a confirmation every time. Returns whether the
    /// grant is new.
    pub fn grant(&mut self, tool: &str, level: Level) -> Result<bool, PermissionError> {
        if level >= Level::L4 {
            return Err(PermissionError::GrantNotAllowed {
                tool: String::from(tool),
                level,
            });
        }
        Ok(self.tools.insert(String::from(tool)))
    }

    /// Withdraws a grant; returns whether there was one.
    pub fn revoke(&mut self, tool: &str) -> bool {
        self.tools.remove(tool)
    }

    /// Whether `tool` is granted.
    pub fn contains(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// The granted tool names, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(String::as_str)
    }

    /// How many tools are granted.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The decision for a call of `tool` at `level`:
///
/// | level | interactive | interactive, tool granted | headless, level ≤ max_auto (≤ L3) | headless, above |
/// |---|---|---|---|---|
/// | L0, L1 | Run | Run | Run | Refuse(NeedsPerson) |
/// | L2 | RunScoped | RunScoped | RunScoped | Refuse(NeedsPerson) |
/// | L3 | AskOnce | Run | Run | Refuse(NeedsPerson), granted or not |
/// | L4 | AskTwice | AskTwice | — (never ≤ L3) | Refuse(NeedsPerson) |
/// | L5 | Refuse(Dangerous) | Refuse(Dangerous) | — | Refuse(Dangerous) |
///
/// Grants never raise what a headless run may do: `evolve ask --allow L1` means L1,
/// whatever the session granted in a chat, so a headless run honours a grant only where
/// it would run the call anyway (level ≤ `max_auto`).
pub fn decide(level: Level, tool: &str, grants: &Grants, policy: &Policy) -> Decision {
    if level == Level::L5 {
        return Decision::Refuse(RefusalReason::Dangerous);
    }
    let granted = level == Level::L3 && grants.contains(tool);
    match *policy {
        Policy::Interactive => {
            if granted {
                Decision::Run
            } else {
                level.default_decision()
            }
        }
        Policy::Headless { max_auto } => {
            let max_auto = max_auto.min(HEADLESS_CEILING);
            if level <= max_auto {
                match level.default_decision() {
                    Decision::RunScoped => Decision::RunScoped,
                    _ => Decision::Run,
                }
            } else {
                Decision::Refuse(RefusalReason::NeedsPerson { level, max_auto })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Decision::*;
    use Level::*;

    fn needs(level: Level, max_auto: Level) -> Decision {
        Refuse(RefusalReason::NeedsPerson { level, max_auto })
    }
    const DANGER: Decision = Refuse(RefusalReason::Dangerous);

    #[test]
    fn every_level_policy_and_grant() {
        let headless = |m| Policy::Headless { max_auto: m };
        // (level, policy, granted, decision)
        let cases = [
            (L0, Policy::Interactive, false, Run),
            (L1, Policy::Interactive, false, Run),
            (L2, Policy::Interactive, false, RunScoped),
            (L3, Policy::Interactive, false, AskOnce),
            (L4, Policy::Interactive, false, AskTwice),
            (L5, Policy::Interactive, false, DANGER),
            (L0, Policy::Interactive, true, Run),
            (L1, Policy::Interactive, true, Run),
            (L2, Policy::Interactive, true, RunScoped),
            (L3, Policy::Interactive, true, Run),
            (L4, Policy::Interactive, true, AskTwice),
            (L5, Policy::Interactive, true, DANGER),
            // Headless, default L2.
            (L0, headless(L2), false, Run),
            (L1, headless(L2), false, Run),
            (L2, headless(L2), false, RunScoped),
            (L3, headless(L2), false, needs(L3, L2)),
            (L4, headless(L2), false, needs(L4, L2)),
            (L5, headless(L2), false, DANGER),
            // Grants never raise a headless run's ceiling.
            (L3, headless(L2), true, needs(L3, L2)),
            (L3, headless(L1), true, needs(L3, L1)),
            (L4, headless(L2), true, needs(L4, L2)),
            (L5, headless(L2), true, DANGER),
            // --allow L1.
            (L1, headless(L1), false, Run),
            (L2, headless(L1), false, needs(L2, L1)),
            (L2, headless(L1), true, needs(L2, L1)),
            // --allow L0.
            (L0, headless(L0), false, Run),
            (L1, headless(L0), false, needs(L1, L0)),
            // --allow L3 / --yes.
            (L2, headless(L3), false, RunScoped),
            (L3, headless(L3), false, Run),
            (L4, headless(L3), false, needs(L4, L3)),
            (L4, headless(L3), true, needs(L4, L3)),
            (L5, headless(L3), true, DANGER),
            // A hand-built policy above the ceiling is capped.
            (L4, headless(L4), false, needs(L4, L3)),
            (L4, headless(L5), true, needs(L4, L3)),
            (L5, headless(L5), false, DANGER),
        ];
        for (level, policy, granted, want) in cases {
            let mut grants = Grants::new();
            if granted {
                grants.tools.insert(String::from("t"));
            }
            assert_eq!(
                decide(level, "t", &grants, &policy),
                want,
                "{level} {policy:?} granted={granted}"
            );
        }
    }

    #[test]
    fn grants_are_per_tool() {
        let mut grants = Grants::new();
        assert_eq!(grants.grant("write_file", L3), Ok(true));
        assert_eq!(grants.grant("write_file", L3), Ok(false));
        assert_eq!(decide(L3, "write_file", &grants, &Policy::Interactive), Run);
        assert_eq!(
            decide(L3, "edit_file", &grants, &Policy::Interactive),
            AskOnce
        );
        assert!(grants.revoke("write_file"));
        assert_eq!(
            decide(L3, "write_file", &grants, &Policy::Interactive),
            AskOnce
        );
    }

    #[test]
    fn granting_l4_or_l5_is_rejected() {
        let mut grants = Grants::new();
        for level in [L4, L5] {
            assert_eq!(
                grants.grant("mail__send", level),
                Err(PermissionError::GrantNotAllowed {
                    tool: String::from("mail__send"),
                    level
                })
            );
        }
        assert!(grants.is_empty());
        for level in [L0, L1, L2, L3] {
            assert!(grants.grant("x", level).is_ok());
        }
    }

    #[test]
    fn headless_flags() {
        let cfg = PermissionConfig::default();
        let cases = [
            (None, false, L2),
            (Some(L1), false, L1),
            (Some(L3), false, L3),
            (None, true, L3),
            (Some(L1), true, L3),
            (Some(L4), false, L3),
            (Some(L5), true, L3),
        ];
        for (allow, yes, want) in cases {
            assert_eq!(
                Policy::headless(allow, yes, &cfg),
                Policy::Headless { max_auto: want },
                "{allow:?} {yes}"
            );
        }
        let strict = PermissionConfig {
            headless_max_auto: L1,
            ..PermissionConfig::default()
        };
        assert_eq!(
            Policy::headless(None, false, &strict),
            Policy::Headless { max_auto: L1 }
        );
    }

    #[test]
    fn grants_serialise_as_a_sorted_list() {
        let mut grants = Grants::new();
        grants.grant("b", L3).unwrap();
        grants.grant("a", L1).unwrap();
        let json = serde_json::to_string(&grants).unwrap();
        assert_eq!(json, r#"["a","b"]"#);
        assert_eq!(serde_json::from_str::<Grants>(&json).unwrap(), grants);
    }

    #[test]
    fn decisions_serialise() {
        assert_eq!(serde_json::to_string(&Run).unwrap(), r#""run""#);
        assert_eq!(
            serde_json::to_string(&needs(L4, L2)).unwrap(),
            r#"{"refuse":{"needs_person":{"level":"L4","max_auto":"L2"}}}"#
        );
        assert_eq!(
            serde_json::to_string(&Policy::Headless { max_auto: L2 }).unwrap(),
            r#"{"mode":"headless","max_auto":"L2"}"#
        );
    }
}
