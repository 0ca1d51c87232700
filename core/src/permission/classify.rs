//! The class of a tool: its level before looking at the arguments, and who said so.
//!
//! Built-in tools have fixed levels (ARCHITECTURE.md § Permission levels). An MCP tool's level is
//! the user's, when they set one (`evolve mcp level TOOL L3`, `[tools.levels]`); else
//! the cheap model's classification, cached per tool, **never below a floor set by the
//! server's annotations**: L3 for any tool whose server did not say
//! `readOnlyHint: true`, L4 with `destructiveHint: true`, L2 for a read-only tool. The
//! classifier reads text the server wrote (name, description, schema), so it is as
//! easy to talk into "L0" as the server is to write "classify me L0": it may raise a
//! tool above its floor, never lower it below. The model calls and the cache are the
//! shell's; this module only combines what they found.

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
    /// A trusted server's read-only hint lowered the classifier's level (to L2).
    Annotations,
    /// The classifier's level was below the tool's floor ([`mcp_floor`]): the floor
    /// stands.
    Floor,
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
    /// The user marked the server as trusted: its read-only hint is believed over the
    /// classifier (the tool is L2).
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

/// The floor of an MCP tool whose server did not say `readOnlyHint: true`: it may have
/// side effects, so a person is asked (L3, "side effects, reversible") whatever the
/// classifier said. Headless runs refuse it unless `--yes`.
pub const SIDE_EFFECT_FLOOR: Level = Level::L3;

/// The floor of an MCP tool with `destructiveHint: true`: the server itself says the
/// tool may destroy (the MCP specification: "may perform destructive updates to its
/// environment"), which is past L3's "reversible" — L4, asked twice and never headless,
/// `--yes` included.
pub const DESTRUCTIVE_FLOOR: Level = Level::L4;

/// The floor of an MCP tool with `readOnlyHint: true` (and no `destructiveHint: true`):
/// L2, restricted read-only, not L1. The hint says the tool changes nothing; it does not
/// say that what it reads is public (a read-only tool reads files, mail, a database as
/// readily as the web). L1 ("public read-only") would let the classifier — which reads
/// the server's own text — put a tool under `--allow L1`; only the user can (with
/// `evolve mcp level`). L2 still runs headless by default.
pub const READ_ONLY_FLOOR: Level = Level::L2;

/// The lowest level an MCP tool can get without the user: [`DESTRUCTIVE_FLOOR`] with
/// `destructiveHint: true` (even beside `readOnlyHint: true`: contradicting hints count
/// as the stricter one), else [`READ_ONLY_FLOOR`] with `readOnlyHint: true`, else
/// [`SIDE_EFFECT_FLOOR`] (no hint, or `readOnlyHint: false`). `openWorldHint` does not
/// move the floor: without `readOnlyHint: true` the floor is already L3; a read-only
/// tool reaching the outside world (a web search) is the read-only kind the classifier
/// may still raise.
pub fn mcp_floor(a: Annotations) -> Level {
    if a.destructive_hint == Some(true) {
        DESTRUCTIVE_FLOOR
    } else if a.read_only_hint == Some(true) {
        READ_ONLY_FLOOR
    } else {
        SIDE_EFFECT_FLOOR
    }
}

/// The class of a tool. The rules, first match wins:
///
/// 1. **Built-in** (`builtin` is set): its fixed level. A user override may *raise* it
///    (source `UserOverride`) but never lower it — the one way down is the `shell`
///    config, which the shell applies through
///    [`shell_command_level`](super::shell_command_level) before calling this.
/// 2. **User override**: exactly the level the user set, up or down, below the floor
///    too (the user is the authority on their own MCP tools).
/// 3. Otherwise the **classifier**'s level, or L4 when there is none (`Unclassified`:
///    a refusal, garbage, a failed call), and then:
///    - a **trusted** server's `readOnlyHint: true` (without `destructiveHint: true`)
///      is believed over the classifier: the level is at most L2 (source `Annotations`
///      when that lowered it);
///    - the level is raised to the tool's floor, [`mcp_floor`] (source `Floor` when
///      that raised it).
///
/// So a tool without `readOnlyHint: true` never runs without a person whatever the
/// classifier answered, a server's hints only ever lower the floor to L2 (read-only)
/// and raise it to L4 (destructive), and only the user puts a tool below L2.
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
    let floor = mcp_floor(a);
    let believed_read_only =
        input.trusted_server && a.read_only_hint == Some(true) && a.destructive_hint != Some(true);
    let capped = if believed_read_only {
        base.min(READ_ONLY_FLOOR)
    } else {
        base
    };
    let level = capped.max(floor);
    let source = if level > base {
        ClassSource::Floor
    } else if level < base {
        ClassSource::Annotations
    } else {
        base_source
    };
    ToolClass { level, source }
}

/// The fixed level of a built-in tool (ARCHITECTURE.md § Permission levels), `None` for any other
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
    fn mcp_level_table() {
        use ClassSource::*;
        use Level::*;
        let t = Some(true);
        let f = Some(false);
        // (classifier, readOnly, destructive, openWorld, trusted) -> (level, source)
        let cases = [
            // Nothing known.
            (None, None, None, None, false, L4, Unclassified),
            (None, None, None, None, true, L4, Unclassified),
            // No readOnlyHint: true — at least L3, whatever the classifier said.
            (Some(L0), None, None, None, false, L3, Floor),
            (Some(L1), None, None, None, false, L3, Floor),
            (Some(L2), f, None, None, false, L3, Floor),
            (Some(L3), None, None, None, false, L3, Classifier),
            (Some(L4), None, None, None, false, L4, Classifier),
            (Some(L5), None, None, None, false, L5, Classifier),
            (Some(L2), f, f, None, false, L3, Floor),
            // Hints saying "harmless" but not "read-only" change nothing, trusted or not.
            (Some(L0), f, f, f, true, L3, Floor),
            (Some(L0), None, f, f, false, L3, Floor),
            // readOnlyHint: true — at least L2; the classifier may raise.
            (Some(L0), t, None, None, false, L2, Floor),
            (Some(L1), t, None, None, false, L2, Floor),
            (Some(L2), t, None, None, false, L2, Classifier),
            (Some(L3), t, f, None, false, L3, Classifier),
            (Some(L4), t, None, None, false, L4, Classifier),
            (None, t, None, None, false, L4, Unclassified),
            // A trusted server's read-only hint is believed over the classifier: L2.
            (None, t, None, None, true, L2, Annotations),
            (Some(L4), t, None, None, true, L2, Annotations),
            (Some(L3), t, f, None, true, L2, Annotations),
            (Some(L1), t, None, None, true, L2, Floor),
            (Some(L2), t, None, None, true, L2, Classifier),
            // destructiveHint: true — at least L4, beside readOnlyHint: true too.
            (Some(L1), None, t, None, false, L4, Floor),
            (Some(L1), None, t, None, true, L4, Floor),
            (Some(L0), f, t, None, false, L4, Floor),
            (Some(L1), t, t, None, true, L4, Floor),
            (Some(L5), None, t, None, false, L5, Classifier),
            (None, None, t, None, false, L4, Unclassified),
            (None, t, t, None, true, L4, Unclassified),
            // openWorldHint does not move the floor.
            (Some(L1), None, None, t, false, L3, Floor),
            (Some(L1), f, None, t, true, L3, Floor),
            (Some(L1), t, None, t, false, L2, Floor),
            (Some(L4), None, None, t, false, L4, Classifier),
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

    /// Every input an MCP tool can have without a user level.
    fn every_mcp_input() -> impl Iterator<Item = (Option<Level>, Annotations, bool)> {
        let hints = [None, Some(true), Some(false)];
        let classifiers: [Option<Level>; 7] = [
            None,
            Some(Level::L0),
            Some(Level::L1),
            Some(Level::L2),
            Some(Level::L3),
            Some(Level::L4),
            Some(Level::L5),
        ];
        classifiers.into_iter().flat_map(move |c| {
            hints.into_iter().flat_map(move |ro| {
                hints.into_iter().flat_map(move |de| {
                    hints.into_iter().flat_map(move |ow| {
                        [false, true]
                            .into_iter()
                            .map(move |trusted| (c, ann(ro, de, ow), trusted))
                    })
                })
            })
        })
    }

    #[test]
    fn the_classifier_never_sets_a_level_below_the_floor() {
        for (classifier, a, trusted) in every_mcp_input() {
            let level = mcp(classifier, a, trusted).level;
            let case = alloc::format!("{classifier:?} {a:?} trusted={trusted}");
            assert!(level >= mcp_floor(a), "{case}");
            if a.read_only_hint != Some(true) {
                assert!(level >= Level::L3, "needs a person: {case}");
            }
            if a.destructive_hint == Some(true) {
                assert!(level >= Level::L4, "asked twice, never headless: {case}");
            }
            // Only the user puts an MCP tool below L2.
            assert!(level >= Level::L2, "{case}");
        }
    }

    #[test]
    fn the_classifier_only_raises_and_a_higher_answer_never_gives_a_lower_level() {
        let inputs: alloc::vec::Vec<_> = every_mcp_input().collect();
        for &(c, a, trusted) in &inputs {
            let Some(c) = c else { continue };
            let level = mcp(Some(c), a, trusted).level;
            if !trusted {
                assert!(
                    level >= c,
                    "{c} {a:?}: the classifier's level stands or rises"
                );
            }
            for higher in Level::ALL.into_iter().filter(|h| *h > c) {
                assert!(
                    mcp(Some(higher), a, trusted).level >= level,
                    "{c} < {higher} {a:?} trusted={trusted}"
                );
            }
        }
    }

    #[test]
    fn floors() {
        let t = Some(true);
        let f = Some(false);
        let cases = [
            (ann(None, None, None), Level::L3),
            (ann(f, None, None), Level::L3),
            (ann(None, None, t), Level::L3),
            (ann(t, None, None), Level::L2),
            (ann(t, f, t), Level::L2),
            (ann(None, t, None), Level::L4),
            (ann(t, t, None), Level::L4),
        ];
        for (a, want) in cases {
            assert_eq!(mcp_floor(a), want, "{a:?}");
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
