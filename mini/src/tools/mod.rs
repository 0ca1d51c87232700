//! Built-in tools: what each does, its JSON schema for the model, its fixed level
//! (core's `builtin_level`), and running it. File tools are confined to the workspace
//! (paths resolved, symlinks followed and checked); `shell` has a timeout and an output
//! cap. Whether a call may run is decided elsewhere (core's `check_call`, called by the
//! Tool agent); a tool here runs only when told to.
//!
//! One table ([`DEFS`]) holds every tool's name, arguments and description, so the
//! schema the model sees and the checking of what it sends cannot drift apart. Each
//! tool lives in its own file; [`workspace`] is the path confinement they share.

mod args;
mod files;
mod html;
mod http;
mod memory_tool;
mod shell;
mod skill_tool;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod time;
mod todo;
pub(crate) mod workspace;

use std::path::Path;
use std::time::Duration;

use evolve_core::permission::{builtin_level, Level, Reach};
use evolve_core::Timestamp;

use args::{opt, req, Kind, Param};

use crate::cancel::Cancel;
use crate::config::{Config, ToolsConfig};
use crate::llm::ToolSpec;
use crate::sandbox::Plan;
use crate::skills::Catalog;
use crate::store::Store;
use crate::text::ShellTokenizer;

/// What a tool returns to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model sees (before core's truncation).
    pub content: String,
    /// The tool failed (bad arguments, file missing, non-zero exit …): reported to the
    /// model as an error, not a crash.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }
    /// A failed result; the text says what went wrong.
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// How an allowed call runs: what its check and the turn's sources say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    /// The level the permission check gave it (a shell command is confined by it).
    pub level: Level,
    /// Outside text is in the turn and no person said yes to this call: a command it
    /// starts gets no network.
    pub offline: bool,
    /// The turn has world text in it: a memory the model adds now is the world's.
    pub world: bool,
}

/// What a running tool may use.
pub struct ToolContext<'a> {
    /// The workspace (absolute, canonical, created if missing).
    pub workspace: &'a Path,
    /// The store (memory tool, todo list).
    pub store: &'a Store,
    /// The session the call belongs to (todo lists are per session).
    pub session: &'a str,
    /// Now.
    pub now: Timestamp,
    /// The whole configuration (memory config, tool limits).
    pub config: &'a Config,
    /// Tokenizer for memory keywords.
    pub tokenizer: &'a ShellTokenizer,
    /// Skills for `load_skill`.
    pub skills: &'a Catalog,
    /// Set by Ctrl-C: long tools (shell, http_get) stop early.
    pub cancel: &'a Cancel,
    /// The level the permission check gave this call: a shell command is confined to
    /// what that level may touch (read-only below L3).
    pub level: Level,
    /// Outside text is in the turn and no person said yes to this call: a command it
    /// starts gets no network.
    pub offline: bool,
    /// The turn has world text in it (a page, a file, a tool's output): what the model
    /// writes now may repeat it, so a memory it adds is the world's.
    pub world: bool,
}

/// One built-in tool: what the model sees and what the permission check needs.
struct Def {
    name: &'static str,
    params: &'static [Param],
    /// The description for the model; limits come from the configuration.
    describe: fn(&ToolsConfig) -> String,
    /// Argument keys holding workspace paths (core's escalation checks them).
    path_keys: &'static [&'static str],
    /// Runs its argument as a shell command.
    is_shell: bool,
}

const PATH_DOC: &str =
    "Path relative to the workspace (an absolute path must be inside the workspace)";

/// Words a question uses when it needs the tool, beside its name and description (the
/// tool is then offered in full; English and Chinese).
pub fn topics(name: &str) -> &'static str {
    match name {
        "get_time" => "time date day today tomorrow yesterday week month year clock hour now weekday 时间 日期 今天 明天 昨天 星期 几点 现在",
        "http_get" => "url web website page link fetch download http https internet online site 网页 网址 链接 下载 网站",
        "read_file" => "file read open show content contents text notes document 文件 读取 打开 内容 笔记 文档",
        "list_dir" => "folder directory files list workspace ls tree 目录 文件夹 列出 文件",
        "search_files" => "search find grep look files where mentions occurrences 搜索 查找 文件",
        "write_file" => "write save create file new note document 写 保存 创建 文件 笔记",
        "edit_file" => "edit change replace fix update modify file line 编辑 修改 替换 文件",
        "shell" => "run command shell terminal execute script program install build git ls cat python bash 运行 命令 执行 脚本 终端",
        "memory" => "remember forget memory memories recall note preference 记住 忘记 记忆 记得",
        "todo" => "todo task tasks plan checklist steps done 待办 任务 计划 清单",
        "load_skill" => "skill skills how procedure instructions guide 技能 步骤 方法",
        "subtasks" => "subtasks subtask parallel split independent helpers helper agents research 子任务 并行 拆分 同时",
        _ => "",
    }
}

/// Every built-in tool, in the order the model sees them.
const DEFS: &[Def] = &[
    Def {
        name: "get_time",
        params: &[opt(
            "timezone",
            Kind::Str,
            "\"UTC\" (default), an offset such as \"+08:00\", or a zone name such as \"Asia/Shanghai\"",
        )],
        describe: |_| {
            "Current date and time (RFC 3339) with the weekday. Use it whenever the answer depends on today's date or the time, e.g. before working out \"tomorrow\" or \"in 3 days\". Time zones: \"UTC\" (default), an offset like \"+08:00\", or a zone name like \"Asia/Shanghai\".".into()
        },
        path_keys: &[],
        is_shell: false,
    },
    Def {
        name: "http_get",
        params: &[
            req("url", Kind::Str, "Full http:// or https:// URL"),
            opt(
                "max_bytes",
                Kind::Int { min: 1, max: 100_000_000 },
                "Return at most this many bytes of text (cannot raise the configured limit)",
            ),
        ],
        describe: |t| {
            let reach = if t.http_allow_private {
                "Private and local addresses are allowed by the configuration."
            } else {
                "Only public internet addresses: localhost, private, link-local and similar networks are refused."
            };
            format!(
                "Fetch a URL with HTTP GET and return the response as text: HTML pages are reduced to readable text (scripts and styles removed), JSON and plain text come back as they are, binary content is only described. Use it to read public documentation, articles or JSON APIs. http and https only; follows up to 5 redirects. {reach} Gives up after {} s and returns at most {} bytes. It does not run JavaScript, log in, or send anything but GET.",
                t.http_timeout.as_secs(),
                t.output_cap
            )
        },
        path_keys: &[],
        is_shell: false,
    },
    Def {
        name: "read_file",
        params: &[
            req("path", Kind::Str, PATH_DOC),
            opt(
                "offset_line",
                Kind::Int { min: 1, max: u32::MAX as i64 },
                "First line to return, from 1 (default 1)",
            ),
            opt(
                "limit_lines",
                Kind::Int { min: 1, max: 100_000 },
                "How many lines to return (default 2000)",
            ),
        ],
        describe: |t| {
            format!(
                "Read a text file in the workspace. Returns the lines exactly as they are (no line numbers added), at most {} lines or {} bytes per call; a note in brackets at the end says which lines were shown and the offset_line to continue from. Binary files are refused. If you do not know the path, use list_dir or search_files first.",
                files::DEFAULT_READ_LINES,
                t.output_cap
            )
        },
        path_keys: &["path"],
        is_shell: false,
    },
    Def {
        name: "list_dir",
        params: &[
            opt("path", Kind::Str, "Folder relative to the workspace (default \".\", the workspace itself)"),
            opt("recursive", Kind::Bool, "Also list sub-folders, up to 3 levels deep (default false)"),
        ],
        describe: |_| {
            format!(
                "List a folder of the workspace, sorted by name: sub-folders end with \"/\", files show their size, symlinks show \"-> target\". With recursive, descends up to {} levels and shows paths relative to the listed folder; at most {} entries; .git is listed but not entered.",
                files::LIST_MAX_DEPTH,
                files::LIST_MAX_ENTRIES
            )
        },
        path_keys: &["path"],
        is_shell: false,
    },
    Def {
        name: "search_files",
        params: &[
            req("pattern", Kind::Str, "Text to find: plain, case-insensitive substring (not a regex)"),
            opt("path", Kind::Str, "Folder or file to search, relative to the workspace (default: the whole workspace)"),
            opt("glob", Kind::Str, "Only files whose name matches, e.g. \"*.rs\" or \"test_*\""),
        ],
        describe: |_| {
            format!(
                "Find the lines that contain a text in the workspace's files. The pattern is a plain substring, case-insensitive, not a regular expression. Returns \"path:line: text\" for at most {} lines (paths usable with read_file). Skips binary files, files over 2 MiB, .git folders and symlinks.",
                files::SEARCH_MAX_HITS
            )
        },
        path_keys: &["path"],
        is_shell: false,
    },
    Def {
        name: "write_file",
        params: &[
            req("path", Kind::Str, PATH_DOC),
            req("content", Kind::Str, "The whole new content of the file"),
            opt("append", Kind::Bool, "Add content at the end instead of replacing the file (default false)"),
        ],
        describe: |_| {
            "Create or overwrite a file in the workspace with the given content (or append to it). Missing parent folders are created. To change part of an existing file, prefer edit_file.".into()
        },
        path_keys: &["path"],
        is_shell: false,
    },
    Def {
        name: "edit_file",
        params: &[
            req("path", Kind::Str, PATH_DOC),
            req("old", Kind::Str, "The exact text to replace, copied from the file"),
            req("new", Kind::Str, "The text to put in its place (may be empty to delete)"),
            opt("replace_all", Kind::Bool, "Replace every occurrence instead of requiring exactly one (default false)"),
        ],
        describe: |_| {
            "Replace a piece of text in a workspace file. `old` must match the file exactly — spaces, indentation and line breaks included — and appear exactly once (unless replace_all is true); otherwise nothing is changed and the error says why. Read the file first and copy the text; add neighbouring lines to make it unique.".into()
        },
        path_keys: &["path"],
        is_shell: false,
    },
    Def {
        name: "shell",
        params: &[
            req("command", Kind::Str, "The command line, run by sh -c in the workspace folder"),
            opt(
                "timeout_secs",
                Kind::Int { min: 1, max: 86_400 },
                "Stop the command after this many seconds (can only lower the configured limit)",
            ),
        ],
        describe: |t| {
            format!(
                "Run a command with sh -c in the workspace folder and return its output (stdout, then stderr after a \"[stderr]\" line) and exit code; a non-zero exit is reported as an error. Nothing can be typed into it (stdin is empty), so interactive programs fail. Stopped after {} s; when it ends or is stopped, every process it started is killed too, so background jobs do not survive. Output is capped at {} bytes (the middle is cut). The kernel confines it: read-only commands cannot write or use the network, others may write only inside the workspace (and $TMPDIR); nothing outside the workspace but the system's own folders can be read; HOME is an empty folder of the command's own and the environment holds only PATH, locale and time zone. Prefer read_file, search_files and edit_file for files.",
                t.shell_timeout.as_secs(),
                t.output_cap
            )
        },
        path_keys: &[],
        is_shell: true,
    },
    Def {
        name: "memory",
        params: &[
            req("action", Kind::OneOf(memory_tool::ACTIONS), "What to do"),
            opt("query", Kind::Str, "search: the words to look for"),
            opt("id", Kind::Int { min: 1, max: i64::MAX }, "get, update, delete: the memory's number (#id)"),
            opt("content", Kind::Str, "add, update: one short, self-contained statement"),
            opt("category", Kind::OneOf(memory_tool::CATEGORIES), "add, update: the kind of memory; list: only this kind"),
            opt("priority", Kind::Str, "add, update: critical, high, medium or low (default from the category)"),
            opt("importance", Kind::Int { min: 1, max: 5 }, "add, update: 1 (trivial) to 5 (ignoring it causes serious problems); default 3"),
            opt("tags", Kind::StrList, "add, update: labels"),
            opt("limit", Kind::Int { min: 1, max: 200 }, "search, list: at most this many results (default 20)"),
        ],
        describe: |_| {
            "Long-term memory about the user and their work, kept across sessions. Actions: search (query; best matches first), list (newest first, optionally one category), get (id), add (content, optional category instruction|preference|fact|reminder|general, priority, importance 1-5, tags), update (id and the fields to change), delete (id). Add one fact per memory, in a sentence that makes sense on its own; a similar existing memory is merged instead of duplicated. search, list and get only read; add, update and delete change memory and may need the user's approval.".into()
        },
        path_keys: &[],
        is_shell: false,
    },
    Def {
        name: "todo",
        params: &[
            req("action", Kind::OneOf(todo::ACTIONS), "What to do"),
            opt("text", Kind::Str, "add: the step, in a few words"),
            opt("id", Kind::Int { min: 1, max: u32::MAX as i64 }, "done, undo, remove: the item's number"),
        ],
        describe: |_| {
            "A checklist for the current session: plan a multi-step task and tick steps off as you go; the list is shown to you at every turn. Actions: list, add (text), done (id), undo (id), remove (id), clear (remove every item). Every call returns the whole list as \"[x] 1. text\" lines.".into()
        },
        path_keys: &[],
        is_shell: false,
    },
    Def {
        name: "load_skill",
        params: &[
            req("name", Kind::Str, "The skill's name as listed in <available_skills>"),
            opt("file", Kind::Str, "A file that ships with the skill (a script or reference its instructions name), relative to the skill's folder"),
        ],
        describe: |_| {
            "Load the full instructions of a skill listed in <available_skills>; do this before following a skill. With file, read one of the files that come with the skill instead.".into()
        },
        path_keys: &["file"],
        is_shell: false,
    },
];

fn def(name: &str) -> Option<&'static Def> {
    DEFS.iter().find(|d| d.name == name)
}

/// Runs a file tool confined by the kernel to the workspace (see
/// `crate::sandbox::in_workspace`); a failure to confine is the tool's error, and nothing
/// runs.
fn in_workspace(
    ctx: &ToolContext<'_>,
    writes: bool,
    work: impl FnOnce() -> ToolOutput + Send,
) -> ToolOutput {
    let scope = ctx.config.sandbox_scope(ctx.workspace);
    crate::sandbox::in_workspace(&scope, writes, work)
        .unwrap_or_else(|e| ToolOutput::error(format!("not run: {e}")))
}

/// The built-in tools.
pub struct Builtins {
    tools: ToolsConfig,
}

impl Builtins {
    /// The tool set for this configuration (its limits are used by every call and
    /// quoted in the descriptions).
    pub fn new(tools: &ToolsConfig) -> Self {
        Builtins {
            tools: tools.clone(),
        }
    }

    /// Specs of every built-in tool, for the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        DEFS.iter()
            .map(|d| ToolSpec {
                name: d.name.to_string(),
                description: (d.describe)(&self.tools),
                parameters: args::schema(d.params),
            })
            .collect()
    }

    /// The arguments as the tool will read them, written back as strict JSON: the
    /// permission check, the tool, the audit log and the history all see this one text,
    /// so a check can never read different arguments from the ones that run (models send
    /// single quotes, comments and duplicate keys, which tolerant readers may read
    /// differently). `Err` says why the text is not usable; such a call is not run.
    pub fn canonical_arguments(&self, arguments: &str) -> Result<String, String> {
        args::read_json(arguments).map(|v| v.to_string())
    }

    /// What the model is told when it calls a tool that does not exist.
    pub fn unknown(name: &str) -> String {
        let names: Vec<&str> = DEFS.iter().map(|d| d.name).collect();
        format!(
            "there is no tool named {name:?} (no built-in tool and no MCP tool); the tools are: {}",
            names.join(", ")
        )
    }

    /// Whether `name` is a built-in tool.
    pub fn has(&self, name: &str) -> bool {
        def(name).is_some()
    }

    /// The fixed level of a call (the `memory` tool's depends on its `action`), before
    /// argument escalation. `None` for unknown tools. The action is read the way
    /// [`run`](Self::run) reads it; arguments that cannot be read give `memory` its
    /// highest level (L3).
    pub fn level(&self, name: &str, arguments: &str) -> Option<Level> {
        def(name)?;
        let action = if name == "memory" {
            args::read_json(arguments).ok().and_then(|v| {
                v.get("action")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
            })
        } else {
            None
        };
        builtin_level(name, action.as_deref())
    }

    /// Argument keys of `name` that hold paths (for core's escalation), and whether the
    /// tool runs its arguments as a shell command.
    pub fn path_keys(&self, name: &str) -> (&'static [&'static str], bool) {
        def(name).map_or((&[], false), |d| (d.path_keys, d.is_shell))
    }

    /// Runs a call that was allowed. Bad arguments give an error output, never a panic.
    pub fn run(&self, name: &str, arguments: &str, ctx: &ToolContext<'_>) -> ToolOutput {
        let Some(def) = def(name) else {
            return ToolOutput::error(Self::unknown(name));
        };
        let args = match args::parse(name, def.params, arguments) {
            Ok(a) => a,
            Err(e) => return ToolOutput::error(e),
        };
        let cap = self.tools.output_cap.max(1);
        let out = match name {
            "get_time" => time::get_time(args.str("timezone"), ctx.now),
            "http_get" => http::get(
                args.text("url"),
                args.int("max_bytes").map(|n| n.max(1) as usize),
                &http::FetchOptions::from_config(&self.tools),
                ctx.cancel,
            ),
            // The file tools run in a thread the kernel holds to the workspace.
            "read_file" => in_workspace(ctx, false, || files::read_file(&args, ctx, cap)),
            "list_dir" => in_workspace(ctx, false, || files::list_dir(&args, ctx)),
            "search_files" => in_workspace(ctx, false, || files::search_files(&args, ctx)),
            "write_file" => in_workspace(ctx, true, || files::write_file(&args, ctx)),
            "edit_file" => in_workspace(ctx, true, || files::edit_file(&args, ctx)),
            "shell" => {
                let configured = self.tools.shell_timeout;
                let timeout = args.int("timeout_secs").map_or(configured, |s| {
                    Duration::from_secs(s.max(1) as u64).min(configured)
                });
                // Confined to what the call's level may touch; L5 never gets here.
                let Some(reach) = Reach::for_shell(ctx.level) else {
                    return ToolOutput::error("not run: L5 commands are never run");
                };
                let scope = ctx.config.sandbox_scope(ctx.workspace);
                let plan = Plan::for_shell(reach, &scope).map(|p| {
                    if ctx.offline {
                        p.without_network()
                    } else {
                        p
                    }
                });
                match plan {
                    Ok(plan) => shell::run(
                        args.text("command"),
                        ctx.workspace,
                        timeout,
                        self.tools.shell_idle_stop,
                        cap,
                        ctx.cancel,
                        &plan,
                    ),
                    Err(e) => ToolOutput::error(format!("not run: {e}")),
                }
            }
            "memory" => memory_tool::run(&args, ctx),
            "todo" => todo::run(&args, ctx),
            "load_skill" => skill_tool::run(&args, ctx, cap),
            other => ToolOutput::error(format!("the built-in tool {other} has no implementation")),
        };
        log::debug!(
            "tool {name}: {} bytes{}",
            out.content.len(),
            if out.is_error { ", error" } else { "" }
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{tools_config, Harness};
    use super::*;
    use serde_json::json;

    const ALL: [&str; 11] = [
        "get_time",
        "http_get",
        "read_file",
        "list_dir",
        "search_files",
        "write_file",
        "edit_file",
        "shell",
        "memory",
        "todo",
        "load_skill",
    ];

    #[test]
    fn every_tool_of_the_design_is_there_with_a_strict_schema() {
        let b = Builtins::new(&tools_config());
        let specs = b.specs();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ALL);
        for spec in &specs {
            assert!(b.has(&spec.name));
            assert!(
                spec.description.len() > 80,
                "{}: say what, when, limits",
                spec.name
            );
            let p = &spec.parameters;
            assert_eq!(p["type"], "object", "{}", spec.name);
            assert_eq!(p["additionalProperties"], false, "{}", spec.name);
            let props = p["properties"].as_object().expect("properties");
            for req in p["required"].as_array().expect("required") {
                assert!(
                    props.contains_key(req.as_str().unwrap()),
                    "{}: {req}",
                    spec.name
                );
            }
            for (key, prop) in props {
                assert!(prop["description"].is_string(), "{}.{key}", spec.name);
            }
        }
        assert!(!b.has("rm"));
        assert!(!b.has("mcp__x"));
    }

    #[test]
    fn descriptions_quote_the_configured_limits() {
        let mut tools = tools_config();
        tools.shell_timeout = Duration::from_secs(7);
        tools.output_cap = 4242;
        tools.http_allow_private = true;
        let specs = Builtins::new(&tools).specs();
        let desc = |n: &str| {
            specs
                .iter()
                .find(|s| s.name == n)
                .unwrap()
                .description
                .clone()
        };
        assert!(
            desc("shell").contains("Stopped after 7 s"),
            "{}",
            desc("shell")
        );
        assert!(desc("shell").contains("4242 bytes"));
        assert!(desc("http_get").contains("Private and local addresses are allowed"));
    }

    #[test]
    fn levels_are_the_design_table() {
        let b = Builtins::new(&tools_config());
        let cases: &[(&str, &str, Option<Level>)] = &[
            ("get_time", "{}", Some(Level::L1)),
            ("http_get", r#"{"url":"https://x"}"#, Some(Level::L1)),
            ("read_file", r#"{"path":"a"}"#, Some(Level::L2)),
            ("list_dir", "{}", Some(Level::L2)),
            ("search_files", "{}", Some(Level::L2)),
            ("write_file", "{}", Some(Level::L3)),
            ("edit_file", "{}", Some(Level::L3)),
            ("todo", r#"{"action":"list"}"#, Some(Level::L3)),
            ("load_skill", "{}", Some(Level::L0)),
            ("shell", r#"{"command":"ls"}"#, Some(Level::L5)),
            (
                "memory",
                r#"{"action":"search","query":"x"}"#,
                Some(Level::L1),
            ),
            ("memory", r#"{"action":"list"}"#, Some(Level::L1)),
            ("memory", r#"{"action":"get","id":1}"#, Some(Level::L1)),
            (
                "memory",
                r#"{"action":"add","content":"x"}"#,
                Some(Level::L3),
            ),
            ("memory", r#"{"action":"delete","id":1}"#, Some(Level::L3)),
            ("memory", "garbage", Some(Level::L3)),
            ("memory", "{}", Some(Level::L3)),
            // The reading `run` would do: repaired and doubly encoded arguments.
            ("memory", "{'action': 'list'}", Some(Level::L1)),
            ("memory", r#""{\"action\": \"search\"}""#, Some(Level::L1)),
            // A repeated key: the last one counts, in `run` as here.
            (
                "memory",
                r#"{"action":"list","action":"delete"}"#,
                Some(Level::L3),
            ),
            ("nope", "{}", None),
        ];
        for (tool, args, level) in cases {
            assert_eq!(b.level(tool, args), *level, "{tool} {args}");
        }
    }

    #[test]
    fn path_keys_name_the_path_arguments() {
        let b = Builtins::new(&tools_config());
        for t in [
            "read_file",
            "list_dir",
            "search_files",
            "write_file",
            "edit_file",
        ] {
            assert_eq!(b.path_keys(t), (&["path"][..], false), "{t}");
        }
        assert_eq!(b.path_keys("shell"), (&[][..], true));
        assert_eq!(b.path_keys("load_skill"), (&["file"][..], false));
        assert_eq!(b.path_keys("get_time"), (&[][..], false));
        assert_eq!(b.path_keys("unknown"), (&[][..], false));
    }

    #[test]
    fn garbage_arguments_give_errors_not_panics() {
        let h = Harness::new();
        let garbage = [
            "",
            "null",
            "[]",
            "42",
            "\"text\"",
            "{",
            "}{",
            "{\"path\":",
            "\u{0}",
            "{\"path\": null}",
            "{\"path\": {\"nested\": true}}",
            "{\"command\": [1]}",
            "{\"action\": 3}",
        ];
        for tool in ALL {
            if tool == "get_time" || tool == "list_dir" {
                continue; // every argument is optional: `{}` is a valid call
            }
            for g in garbage {
                let out = h.run(tool, g);
                assert!(out.is_error, "{tool} {g:?}: {}", out.content);
                assert!(
                    out.content.contains("Expected a JSON object {"),
                    "{tool} {g:?}: {}",
                    out.content
                );
            }
        }
        let unknown = h.run("format_disk", "{}");
        assert!(
            unknown.is_error && unknown.content.contains("no built-in tool"),
            "{}",
            unknown.content
        );
    }

    #[test]
    fn get_time_uses_the_context_clock() {
        let h = Harness::new();
        let out = h.call("get_time", json!({"timezone": "+08:00"}));
        assert_eq!(
            out.content,
            "2024-05-01T12:34:56+08:00 (Wednesday) — Unix time 1714538096"
        );
        let utc = h.run("get_time", "");
        assert!(
            utc.content.starts_with("2024-05-01T04:34:56Z"),
            "{}",
            utc.content
        );
    }
}
