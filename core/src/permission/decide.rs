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

    /// Whether the call was refused because it would have sent data no one gave off the
    /// machine with nobody there to ask (the egress rule).
    pub fn sends_data(self) -> bool {
        matches!(self, Decision::Refuse(RefusalReason::SendsData { .. }))
    }

    /// Whether the call was refused because nobody was there to ask (`evolve ask`
    /// exits with 4).
    pub fn needs_person(self) -> bool {
        matches!(
            self,
            Decision::Refuse(RefusalReason::NeedsPerson { .. } | RefusalReason::SendsData { .. })
        )
    }
}

/// Why a call was refused without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// L5: dangerous or unacceptable, refused everywhere (the Evolve Agent design: 默认禁止).
    Dangerous,
    /// A headless run cannot ask: the call needed a person. `evolve ask` exits with 4.
    NeedsPerson {
        /// The level of the call.
        level: Level,
        /// The highest level the run was allowed to start by itself.
        max_auto: Level,
    },
    /// A headless run cannot ask, and the call would send data off the machine that no
    /// one gave after world text entered the turn (the host is not on the user's list).
    /// `evolve ask` exits with 4.
    SendsData {
        /// The level of the call.
        level: Level,
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

/// What a call is, for the session's "always allow" list: the tool, for `shell` the
/// exact command line (a grant for `tar -cf backup.tar notes` says nothing about
/// `tar --remove-files -cf gone.tar notes`), and for a tool whose definition comes from
/// elsewhere (an MCP server's description, schema and annotations) that definition
/// (a grant for "shows a note" says nothing about the same name redefined as "deletes
/// every note").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallKey<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// For a tool that runs its argument as a command (`shell`): that command.
    pub command: Option<&'a str>,
    /// For a tool defined by a server: an opaque identity of the definition the call
    /// was checked against (the shell's fingerprint; compared, never read, here).
    pub definition: Option<&'a str>,
}

impl<'a> From<&'a str> for CallKey<'a> {
    fn from(tool: &'a str) -> Self {
        CallKey {
            tool,
            command: None,
            definition: None,
        }
    }
}

/// One "always allow": a tool (or one shell command line) and the level of the call it
/// was given for; it covers later calls of the same tool (same command) at that level
/// or lower, never one whose own level is higher.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Grant {
    /// The tool's name.
    pub tool: String,
    /// For `shell`: the exact command line the grant covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The level of the call it was given for (L3 at most).
    pub level: Level,
    /// For a tool defined by a server: the definition the grant was given for; a call
    /// checked against another definition of the same name is not covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

impl Grant {
    /// How the grant reads in `/permissions` and the UI: `write_file`, or
    /// `shell: tar -cf backup.tar notes`.
    pub fn label(&self) -> String {
        match &self.command {
            Some(c) => alloc::format!("{}: {c}", self.tool),
            None => self.tool.clone(),
        }
    }

    pub(crate) fn key(&self) -> CallKey<'_> {
        CallKey {
            tool: &self.tool,
            command: self.command.as_deref(),
            definition: self.definition.as_deref(),
        }
    }
}

/// A grant as stored: an object, or (written before grants were per command) a tool
/// name alone, read as that tool at L3. A bare `"shell"` from then covers no command:
/// shell grants name their command.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredGrant {
    Name(String),
    Full {
        tool: String,
        #[serde(default)]
        command: Option<String>,
        level: Level,
        #[serde(default)]
        definition: Option<String>,
    },
}

/// The tools (and shell command lines) the user said "always allow" for in one session
/// (the Evolve Agent design's session tool whitelist). Serialised as a sorted list. Only L0–L3
/// calls can be granted, and [`decide`] only honours a grant for an L3 call of an
/// interactive session, so a call that escalates to L4 or L5 is asked or refused as
/// usual, and a headless run never does more than its `max_auto` because of a grant.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct Grants {
    grants: BTreeSet<Grant>,
}

impl<'de> Deserialize<'de> for Grants {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let stored = alloc::vec::Vec::<StoredGrant>::deserialize(d)?;
        let mut grants = Grants::new();
        for g in stored {
            let (tool, command, level, definition) = match g {
                StoredGrant::Name(tool) => (tool, None, Level::L3, None),
                StoredGrant::Full {
                    tool,
                    command,
                    level,
                    definition,
                } => (tool, command, level, definition),
            };
            // Whatever a store row says, nothing above L3 is ever granted.
            if level < Level::L4 {
                grants.insert(Grant {
                    tool,
                    command,
                    level,
                    definition,
                });
            }
        }
        Ok(grants)
    }
}

impl Grants {
    /// No grants.
    pub fn new() -> Self {
        Self::default()
    }

    /// "Always allow `tool`" (every call of it) for this session. `level` is the level
    /// of the call it is given for; L4 and L5 are rejected because they need a
    /// confirmation every time. Returns whether the grant is new.
    pub fn grant(&mut self, tool: &str, level: Level) -> Result<bool, PermissionError> {
        self.grant_call(CallKey::from(tool), level)
    }

    /// "Always allow this call": for `shell` the key names the exact command line.
    pub fn grant_call(&mut self, key: CallKey<'_>, level: Level) -> Result<bool, PermissionError> {
        if level >= Level::L4 {
            return Err(PermissionError::GrantNotAllowed {
                tool: match key.command {
                    Some(c) => alloc::format!("{}: {c}", key.tool),
                    None => String::from(key.tool),
                },
                level,
            });
        }
        let old = self.find(key).cloned();
        if let Some(old) = &old {
            if old.level >= level {
                return Ok(false);
            }
            self.grants.remove(old);
        }
        self.insert(Grant {
            tool: String::from(key.tool),
            command: key.command.map(String::from),
            level,
            definition: key.definition.map(String::from),
        });
        Ok(old.is_none())
    }

    fn insert(&mut self, grant: Grant) {
        if let Some(old) = self.find(grant.key()).cloned() {
            if old.level >= grant.level {
                return;
            }
            self.grants.remove(&old);
        }
        self.grants.insert(grant);
    }

    fn find(&self, key: CallKey<'_>) -> Option<&Grant> {
        self.grants.iter().find(|g| g.key() == key)
    }

    /// Whether a call with this key at `level` is covered: granted for the same tool
    /// (for `shell` the same command, for a server's tool the same definition) at that
    /// level or higher.
    pub fn covers(&self, key: CallKey<'_>, level: Level) -> bool {
        self.find(key).is_some_and(|g| level <= g.level)
    }

    /// Withdraws the grant of `tool` (every call of it); returns whether there was one.
    pub fn revoke(&mut self, tool: &str) -> bool {
        self.revoke_call(CallKey::from(tool))
    }

    /// Withdraws one grant; returns whether there was one.
    pub fn revoke_call(&mut self, key: CallKey<'_>) -> bool {
        match self.find(key).cloned() {
            Some(g) => self.grants.remove(&g),
            None => false,
        }
    }

    /// Whether `tool` (every call of it) is granted.
    pub fn contains(&self, tool: &str) -> bool {
        self.find(CallKey::from(tool)).is_some()
    }

    /// The grants, sorted by tool then command.
    pub fn iter(&self) -> impl Iterator<Item = &Grant> {
        self.grants.iter()
    }

    /// How many grants there are.
    pub fn len(&self) -> usize {
        self.grants.len()
    }

    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }
}

/// The decision for a call (a tool, for `shell` with its command) at `level`:
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
pub fn decide<'a>(
    level: Level,
    call: impl Into<CallKey<'a>>,
    grants: &Grants,
    policy: &Policy,
) -> Decision {
    if level == Level::L5 {
        return Decision::Refuse(RefusalReason::Dangerous);
    }
    let granted = level == Level::L3 && grants.covers(call.into(), level);
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
                grants.grant("t", L3).unwrap();
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
        let shell = CallKey {
            tool: "shell",
            command: Some("tar -cf x.tar notes"),
            definition: None,
        };
        grants.grant_call(shell, L3).unwrap();
        let json = serde_json::to_string(&grants).unwrap();
        assert_eq!(
            json,
            r#"[{"tool":"a","level":"L1"},{"tool":"b","level":"L3"},{"tool":"shell","command":"tar -cf x.tar notes","level":"L3"}]"#
        );
        assert_eq!(serde_json::from_str::<Grants>(&json).unwrap(), grants);
    }

    #[test]
    fn grants_stored_as_names_still_read_and_a_bare_shell_covers_no_command() {
        let grants: Grants = serde_json::from_str(r#"["write_file","shell"]"#).unwrap();
        assert!(grants.covers(CallKey::from("write_file"), L3));
        let cmd = CallKey {
            tool: "shell",
            command: Some("tar --remove-files -cf gone.tar notes"),
            definition: None,
        };
        assert!(!grants.covers(cmd, L3));
        assert_eq!(decide(L3, cmd, &grants, &Policy::Interactive), AskOnce);
        // A stored row above L3 is never honoured.
        let forged: Grants =
            serde_json::from_str(r#"[{"tool":"mail__send","level":"L4"}]"#).unwrap();
        assert!(forged.is_empty());
    }

    #[test]
    fn shell_grants_cover_the_exact_command_only() {
        let mut grants = Grants::new();
        let granted = CallKey {
            tool: "shell",
            command: Some("tar -cf backup.tar canary"),
            definition: None,
        };
        grants.grant_call(granted, L3).unwrap();
        let pol = Policy::Interactive;
        assert_eq!(decide(L3, granted, &grants, &pol), Run);
        let other = CallKey {
            tool: "shell",
            command: Some("tar --remove-files -cf gone.tar canary"),
            definition: None,
        };
        assert_eq!(decide(L3, other, &grants, &pol), AskOnce);
        assert_eq!(decide(L4, other, &grants, &pol), AskTwice);
        // The same command at a higher level than it was granted at is not covered.
        assert_eq!(decide(L4, granted, &grants, &pol), AskTwice);
        assert_eq!(decide(L3, "shell", &grants, &pol), AskOnce);
        assert_eq!(
            grants
                .iter()
                .map(Grant::label)
                .collect::<alloc::vec::Vec<_>>(),
            ["shell: tar -cf backup.tar canary"]
        );
        assert!(grants.revoke_call(granted));
        assert_eq!(decide(L3, granted, &grants, &pol), AskOnce);
    }

    #[test]
    fn a_grant_for_one_definition_covers_no_other_of_the_same_name() {
        let key = |definition| CallKey {
            tool: "notes__show",
            command: None,
            definition,
        };
        let shown = key(Some("aaaa.1"));
        let mut grants = Grants::new();
        grants.grant_call(shown, L3).unwrap();
        let pol = Policy::Interactive;
        // (definition the call is checked against, decision)
        let cases = [
            (Some("aaaa.1"), Run),
            // Redefined (another fingerprint), or the same text seen again after a
            // change (another identity): asked.
            (Some("bbbb.2"), AskOnce),
            (Some("aaaa.3"), AskOnce),
            // A grant bound to a definition never covers a call checked without one,
            // nor does a grant without one cover a defined call.
            (None, AskOnce),
        ];
        for (definition, want) in cases {
            assert_eq!(
                decide(L3, key(definition), &grants, &pol),
                want,
                "{definition:?}"
            );
        }
        let mut unbound = Grants::new();
        unbound.grant("notes__show", L3).unwrap();
        assert_eq!(decide(L3, shown, &unbound, &pol), AskOnce);
        // Kept and read back with its definition; the label is the tool's.
        let json = serde_json::to_string(&grants).unwrap();
        assert_eq!(
            json,
            r#"[{"tool":"notes__show","level":"L3","definition":"aaaa.1"}]"#
        );
        let back: Grants = serde_json::from_str(&json).unwrap();
        assert_eq!(decide(L3, shown, &back, &pol), Run);
        assert_eq!(back.iter().next().unwrap().label(), "notes__show");
        // Superseded: the grants for other definitions than the one now listed.
        let mut both = back.clone();
        both.grant_call(key(Some("bbbb.2")), L3).unwrap();
        both.grant("write_file", L3).unwrap();
        let gone = both.withdraw(crate::permission::Revoke::Superseded(key(Some("bbbb.2"))));
        let gone: alloc::vec::Vec<Option<String>> =
            gone.into_iter().map(|g| g.definition).collect();
        assert_eq!(gone, [Some(String::from("aaaa.1"))]);
        assert_eq!(
            both.len(),
            2,
            "the current definition's and write_file's stay"
        );
        // Revoking the tool by name withdraws its grant whatever the definition.
        let mut back = back;
        let gone = back.withdraw(crate::permission::Revoke::Call(CallKey::from(
            "notes__show",
        )));
        assert_eq!(gone.len(), 1);
        assert!(back.is_empty());
    }

    #[test]
    fn a_grant_never_covers_a_call_above_its_own_level() {
        let mut grants = Grants::new();
        grants.grant("t", L2).unwrap();
        assert!(grants.covers(CallKey::from("t"), L2));
        assert!(!grants.covers(CallKey::from("t"), L3));
        assert_eq!(decide(L3, "t", &grants, &Policy::Interactive), AskOnce);
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
