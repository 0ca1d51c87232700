//! The audit record of one permission decision.
//!
//! Every decision is written to an audit log. The shell writes these to its
//! store; the core only says what an entry holds. No arguments are recorded — they may
//! carry secrets — only the tool, the level, who classified it and why it was escalated.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::{
    call_level, AnswerOutcome, ClassSource, Decision, Escalation, EscalationReason, Level,
    ToolClass,
};
use crate::Timestamp;

/// One line of the permission audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When the decision was made.
    pub at: Timestamp,
    /// The session the call belongs to.
    pub session: String,
    /// The tool name the model used.
    pub tool: String,
    /// The call's level: the class raised by the escalation.
    pub level: Level,
    /// What was decided.
    pub decision: Decision,
    /// Who classified the tool.
    pub source: ClassSource,
    /// Why the arguments raised the level (empty when they did not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<EscalationReason>,
    /// For asked calls: how the user's answer settled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerOutcome>,
}

impl AuditEntry {
    /// The entry for a decision about a call of `tool` with class `class` and
    /// `escalation` (the level recorded is their maximum).
    pub fn new(
        at: Timestamp,
        session: &str,
        tool: &str,
        class: ToolClass,
        escalation: &Escalation,
        decision: Decision,
    ) -> Self {
        AuditEntry {
            at,
            session: String::from(session),
            tool: String::from(tool),
            level: call_level(class.level, escalation),
            decision,
            source: class.source,
            reasons: escalation.reasons.clone(),
            answer: None,
        }
    }

    /// The same entry, recording how the user's answer settled an asked call.
    pub fn with_answer(mut self, outcome: AnswerOutcome) -> Self {
        self.answer = Some(outcome);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{CommandRisk, RefusalReason};
    use alloc::vec;

    #[test]
    fn entry_records_the_raised_level_and_reasons() {
        let class = ToolClass {
            level: Level::L4,
            source: ClassSource::BuiltIn,
        };
        let escalation = Escalation {
            level: Level::L5,
            reasons: vec![EscalationReason::Command {
                risk: CommandRisk::RecursiveDelete,
            }],
        };
        let entry = AuditEntry::new(
            1_700_000_000,
            "s1",
            "shell",
            class,
            &escalation,
            Decision::Refuse(RefusalReason::Dangerous),
        );
        assert_eq!(entry.level, Level::L5);
        let json = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            json,
            r#"{"at":1700000000,"session":"s1","tool":"shell","level":"L5","decision":{"refuse":"dangerous"},"source":"built_in","reasons":[{"kind":"command","risk":"recursive_delete"}]}"#
        );
        let back: AuditEntry = serde_json::from_str(&json).unwrap();
        assert_eq!(back, entry);
    }

    #[test]
    fn answered_entry() {
        let class = ToolClass {
            level: Level::L3,
            source: ClassSource::Classifier,
        };
        let entry = AuditEntry::new(
            5,
            "s",
            "fs__write",
            class,
            &Escalation::default(),
            Decision::AskOnce,
        )
        .with_answer(AnswerOutcome::Run);
        assert_eq!(entry.level, Level::L3);
        assert_eq!(entry.answer, Some(AnswerOutcome::Run));
        let json = serde_json::to_string(&entry).unwrap();
        assert!(json.contains(r#""answer":"run""#), "{json}");
        assert!(!json.contains("reasons"), "{json}");
    }
}
