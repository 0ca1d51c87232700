//! The class of a tool: its level before looking at the arguments, and who said so.
//!
//! Built-in tools have fixed levels (DESIGN "Built-in tools"). MCP tools get theirs from,
//! in order: the user's override (`evolve mcp level TOOL L3`), the cheap model's
//! classification cached per tool, and the MCP annotations. Annotations come from the
//! server, so an untrusted server's hints may only make a tool *stricter*. The model
//! calls and the cache are the shell's; this module only combines what they found.

use serde::{Deserialize, Serialize};

use super::Level;

/// Who decided a tool's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassSource {
    /// A built-in tool's fixed level.
    BuiltIn,
    /// The user set the level.
    UserOverride,
    /// The cheap model's cached classification.
    Classifier,
    /// The MCP annotations moved the level.
    Annotations,
    /// Nothing was known: the tool is treated as high risk (L4).
    Unclassified,
}

/// The MCP tool annotations that bear on risk (`readOnlyHint`, `destructiveHint`,
/// `openWorldHint`); `None` = the server did not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    pub destructive_hint: Option<bool>,
    /// The tool talks to the world outside (web, other people).
    pub open_world_hint: Option<bool>,
}

/// Everything known about a tool before its arguments are looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassifyInput {
    /// The fixed level of a built-in tool (see [`builtin_level`]); `None` for MCP tools.
    pub builtin: Option<Level>,
    /// The level the user set for this tool.
    pub user_override: Option<Level>,
    /// The cheap model's cached classification.
    pub classifier: Option<Level>,
    /// The server's annotations.
    pub annotations: Annotations,
    /// The user marked the server as trusted: its read-only hint may lower the level.
    pub trusted_server: bool,
}

/// A tool's level before escalation, and its source (for the audit log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolClass {
    /// The level.
    pub level: Level,
    /// Who decided it.
    pub source: ClassSource,
}

/// The level of a tool nobody could classify: high risk, asked twice.
pub const UNCLASSIFIED_LEVEL: Level = Level::L4;

/// The class of a tool. The rules, first match wins:
///
/// 1. **Built-in** (`builtin` is set): its fixed level. A user override may *raise* it
///    (source `UserOverride`) but never lower it — the one way down is the `shell`
///    config, which the shell applies through
///    [`shell_command_level`](super::shell_command_level) before calling this.
/// 2. **User override**: exactly the level the user set, up or down (the user is the
///    authority on their own MCP tools).
/// 3. Otherwise start from the **classifier**'s level, or L4 when there is none
///    (`Unclassified`), then apply the annotations:
///    - *lowering* — only for a **trusted** server, and only when
///      `readOnlyHint = true` and `destructiveHint ≠ true`: the level becomes at most L2
///      (restricted read-only). So an unclassified read-only tool of a trusted server is
///      L2; a classifier's L1 stays L1.
///    - *raising* — from any server: `destructiveHint = true` → at least L4;
///      `readOnlyHint = false` → at least L3 (it has side effects);
///      `openWorldHint = true` without `readOnlyHint = true` → at least L3.
///
///    The source is `Annotations` when the hints changed the level, else `Classifier`
///    or `Unclassified`.
///
/// An untrusted server's hints therefore never lower a level: a server that lies
/// "read-only" gains nothing, one that says "destructive" is believed.
pub fn classify(input: &ClassifyInput) -> ToolClass {
    if let Some(fixed) = input.builtin {
        return match input.user_override {
            Some(user) if user > fixed => ToolClass {
                level: user,
                source: ClassSource::UserOverride,
            },
            _ => ToolClass {
                level: fixed,
                source: ClassSource::BuiltIn,
            },
        };
    }
    if let Some(user) = input.user_override {
        return ToolClass {
            level: user,
            source: ClassSource::UserOverride,
        };
    }
    let (base, base_source) = match input.classifier {
        Some(level) => (level, ClassSource::Classifier),
        None => (UNCLASSIFIED_LEVEL, ClassSource::Unclassified),
    };
    let a = input.annotations;
    let mut level = base;
    if input.trusted_server && a.read_only_hint == Some(true) && a.destructive_hint != Some(true) {
        level = level.min(Level::L2);
    }
    if a.destructive_hint == Some(true) {
        level = level.max(Level::L4);
    }
    if a.read_only_hint == Some(false) {
        level = level.max(Level::L3);
    }
    if a.open_world_hint == Some(true) && a.read_only_hint != Some(true) {
        level = level.max(Level::L3);
    }
    let source = if level == base {
        base_source
    } else {
        ClassSource::Annotations
    };
    ToolClass { level, source }
}

/// The fixed level of a built-in tool (DESIGN "Built-in tools"), `None` for any other
/// name. `action` matters only for `memory`: `search`/`list`/`get` are L1, anything else
/// (`add`, `update`, `delete`, unknown, missing) L3. `shell` is L5 here; the shell lowers
/// it per command with [`shell_command_level`](super::shell_command_level).
pub fn builtin_level(tool: &str, action: Option<&str>) -> Option<Level> {
    let level = match tool {
        "load_skill" => Level::L0,
        "get_time" | "http_get" => Level::L1,
        "read_file" | "list_dir" | "search_files" => Level::L2,
        "write_file" | "edit_file" | "todo" => Level::L3,
        "memory" => match action.map(str::trim) {
            Some("search" | "list" | "get") => Level::L1,
            _ => Level::L3,
        },
        "shell" => Level::L5,
        _ => return None,
    };
    Some(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(read_only: Option<bool>, destructive: Option<bool>, open: Option<bool>) -> Annotations {
        Annotations {
            read_only_hint: read_only,
            destructive_hint: destructive,
            open_world_hint: open,
        }
    }

    fn mcp(classifier: Option<Level>, a: Annotations, trusted: bool) -> ToolClass {
        classify(&ClassifyInput {
            classifier,
            annotations: a,
            trusted_server: trusted,
            ..ClassifyInput::default()
        })
    }

    #[test]
    fn builtin_is_fixed_and_override_only_raises() {
        let input = ClassifyInput {
            builtin: Some(Level::L3),
            user_override: Some(Level::L1),
            classifier: Some(Level::L0),
            annotations: ann(Some(true), None, None),
            trusted_server: true,
        };
        assert_eq!(
            classify(&input),
            ToolClass {
                level: Level::L3,
                source: ClassSource::BuiltIn
            }
        );
        let raised = ClassifyInput {
            user_override: Some(Level::L4),
            ..input
        };
        assert_eq!(
            classify(&raised),
            ToolClass {
                level: Level::L4,
                source: ClassSource::UserOverride
            }
        );
    }

    #[test]
    fn user_override_wins_over_classifier_and_annotations() {
        for user in Level::ALL {
            let input = ClassifyInput {
                user_override: Some(user),
                classifier: Some(Level::L4),
                annotations: ann(Some(false), Some(true), Some(true)),
                ..ClassifyInput::default()
            };
            assert_eq!(
                classify(&input),
                ToolClass {
                    level: user,
                    source: ClassSource::UserOverride
                }
            );
        }
    }

    #[test]
    fn annotation_table_trusted_and_untrusted() {
        use ClassSource::*;
        use Level::*;
        let t = Some(true);
        let f = Some(false);
        // (classifier, readOnly, destructive, openWorld, trusted) -> (level, source)
        let cases = [
            // Nothing known.
            (None, None, None, None, false, L4, Unclassified),
            (None, None, None, None, true, L4, Unclassified),
            // Read-only: lowers only for trusted servers.
            (None, t, None, None, false, L4, Unclassified),
            (None, t, None, None, true, L2, Annotations),
            (Some(L4), t, None, None, true, L2, Annotations),
            (Some(L4), t, None, None, false, L4, Classifier),
            (Some(L1), t, None, None, true, L1, Classifier),
            (Some(L3), t, f, None, false, L3, Classifier),
            (Some(L3), t, f, None, true, L2, Annotations),
            (Some(L1), t, None, t, true, L1, Classifier),
            // Destructive raises from anyone, and blocks the read-only lowering.
            (Some(L1), None, t, None, false, L4, Annotations),
            (Some(L1), None, t, None, true, L4, Annotations),
            (Some(L1), t, t, None, true, L4, Annotations),
            (Some(L5), None, t, None, false, L5, Classifier),
            (None, None, t, None, false, L4, Unclassified),
            (Some(L2), f, f, None, false, L3, Annotations),
            // Open world without read-only: at least L3.
            (Some(L1), None, None, t, false, L3, Annotations),
            (Some(L1), f, None, t, true, L3, Annotations),
            (Some(L1), t, None, t, false, L1, Classifier),
            (Some(L4), None, None, t, false, L4, Classifier),
            // Hints saying "harmless" never lower for untrusted servers.
            (Some(L3), t, f, f, false, L3, Classifier),
            (Some(L0), None, f, f, false, L0, Classifier),
        ];
        for (classifier, ro, de, ow, trusted, level, source) in cases {
            let got = mcp(classifier, ann(ro, de, ow), trusted);
            assert_eq!(
                got,
                ToolClass { level, source },
                "{classifier:?} ro={ro:?} de={de:?} ow={ow:?} trusted={trusted}"
            );
        }
    }

    #[test]
    fn untrusted_annotations_never_lower() {
        let hints = [None, Some(true), Some(false)];
        for classifier in Level::ALL.map(Some).into_iter().chain([None]) {
            for ro in hints {
                for de in hints {
                    for ow in hints {
                        let with = mcp(classifier, ann(ro, de, ow), false).level;
                        let without = mcp(classifier, Annotations::default(), false).level;
                        assert!(with >= without, "{classifier:?} {ro:?} {de:?} {ow:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn builtin_table() {
        let cases = [
            ("load_skill", None, Some(Level::L0)),
            ("get_time", None, Some(Level::L1)),
            ("http_get", None, Some(Level::L1)),
            ("read_file", None, Some(Level::L2)),
            ("list_dir", None, Some(Level::L2)),
            ("search_files", None, Some(Level::L2)),
            ("write_file", None, Some(Level::L3)),
            ("edit_file", None, Some(Level::L3)),
            ("todo", None, Some(Level::L3)),
            ("memory", Some("search"), Some(Level::L1)),
            ("memory", Some("list"), Some(Level::L1)),
            ("memory", Some("add"), Some(Level::L3)),
            ("memory", Some("delete"), Some(Level::L3)),
            ("memory", None, Some(Level::L3)),
            ("shell", None, Some(Level::L5)),
            ("fs__read", None, None),
        ];
        for (tool, action, want) in cases {
            assert_eq!(builtin_level(tool, action), want, "{tool} {action:?}");
        }
    }
}
