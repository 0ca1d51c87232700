//! Steps 2 and 3 of the permission check in one call, so the shell cannot forget the
//! escalation and has everything the audit log needs.

use alloc::string::String;

use super::{
    call_level, decide, escalate, string_arg, AuditEntry, CallKey, Decision, Escalation,
    EscalationContext, Grants, Level, Policy, Sends, ToolClass,
};
use crate::Timestamp;

/// Everything decided about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallCheck {
    /// The tool's class (before the arguments).
    pub class: ToolClass,
    /// What the arguments added.
    pub escalation: Escalation,
    /// max(class, escalation).
    pub level: Level,
    /// What to do.
    pub decision: Decision,
    /// For a tool that runs its argument as a command (`shell`): that command, which an
    /// "always allow" of this call covers (and nothing else). For a call the egress rule
    /// asks about: the host, which "always" then grants.
    pub command: Option<String>,
    /// What the call would send off the machine that no one gave (the egress rule,
    /// [`check_egress`](super::check_egress)); shown when a person is asked.
    pub sends: Option<Sends>,
    /// For a tool defined by a server: the definition the call was checked against,
    /// which an "always allow" of this call is bound to.
    pub definition: Option<String>,
}

impl CallCheck {
    /// What an "always allow" of this call of `tool` would cover.
    pub fn grant_key<'a>(&'a self, tool: &'a str) -> CallKey<'a> {
        CallKey {
            tool,
            command: self.command.as_deref(),
            definition: self.definition.as_deref(),
        }
    }

    /// The audit entry for this decision.
    pub fn audit(&self, at: Timestamp, session: &str, tool: &str) -> AuditEntry {
        AuditEntry::new(
            at,
            session,
            tool,
            self.class,
            &self.escalation,
            self.decision,
        )
    }
}

/// Escalates `arguments`, raises `class` by it and decides.
pub fn check_call(
    tool: &str,
    class: ToolClass,
    arguments: &str,
    ctx: &EscalationContext<'_>,
    grants: &Grants,
    policy: &Policy,
) -> CallCheck {
    check(tool, None, class, arguments, ctx, grants, policy)
}

/// [`check_call`] for a tool a server defines (an MCP tool): `definition` is the
/// shell's opaque identity of the definition the call is checked against (its
/// fingerprint). A grant given for one definition covers no other, so a tool redefined
/// after "always" is asked about again; a call it is granted for records the
/// definition in [`CallCheck::definition`].
pub fn check_defined_call(
    tool: &str,
    definition: &str,
    class: ToolClass,
    arguments: &str,
    ctx: &EscalationContext<'_>,
    grants: &Grants,
    policy: &Policy,
) -> CallCheck {
    check(
        tool,
        Some(definition),
        class,
        arguments,
        ctx,
        grants,
        policy,
    )
}

fn check(
    tool: &str,
    definition: Option<&str>,
    class: ToolClass,
    arguments: &str,
    ctx: &EscalationContext<'_>,
    grants: &Grants,
    policy: &Policy,
) -> CallCheck {
    let escalation = escalate(arguments, ctx);
    let level = call_level(class.level, &escalation);
    // A shell call is granted by its command line; an unreadable one by an empty
    // command, which no grant names.
    let command = ctx
        .is_shell
        .then(|| string_arg(arguments, "command").unwrap_or_default());
    let key = CallKey {
        tool,
        command: command.as_deref(),
        definition,
    };
    let decision = decide(level, key, grants, policy);
    CallCheck {
        class,
        escalation,
        level,
        decision,
        command,
        sends: None,
        definition: definition.map(String::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{builtin_level, classify, ClassifyInput, RefusalReason};

    fn write_file_class() -> ToolClass {
        classify(&ClassifyInput {
            builtin: builtin_level("write_file", None),
            ..ClassifyInput::default()
        })
    }

    const CTX: EscalationContext<'static> = EscalationContext {
        workspace_root: "/w",
        path_keys: &["path"],
        is_shell: false,
        extra_roots: &[],
    };

    #[test]
    fn a_granted_write_inside_runs_and_one_outside_is_refused() {
        let mut grants = Grants::new();
        grants.grant("write_file", Level::L3).unwrap();
        let inside = check_call(
            "write_file",
            write_file_class(),
            r#"{"path": "notes/a.md", "content": "hi"}"#,
            &CTX,
            &grants,
            &Policy::Interactive,
        );
        assert_eq!(inside.level, Level::L3);
        assert_eq!(inside.decision, Decision::Run);
        let outside = check_call(
            "write_file",
            write_file_class(),
            r#"{"path": "../../etc/cron.d/x", "content": "hi"}"#,
            &CTX,
            &grants,
            &Policy::Interactive,
        );
        assert_eq!(outside.level, Level::L5);
        assert_eq!(outside.decision, Decision::Refuse(RefusalReason::Dangerous));
        let entry = outside.audit(9, "s", "write_file");
        assert_eq!(entry.level, Level::L5);
        assert_eq!(entry.reasons.len(), 1);
    }
}
