//! The commented `config.toml` that `evolve config init` writes.
//!
//! Convention, checked by the tests: a line `#key = value` (no space after `#`) is a
//! setting at its default — removing the `#` changes nothing until the value is edited;
//! a line `# …` is prose or an example. Table headers are left uncommented (an empty
//! table is valid), so uncommenting a setting is all it takes.

/// The template. Every `#key = value` line holds the default `Config::defaults` uses.
pub const CONFIG_TEMPLATE: &str = r#"# evolve configuration — `evolve config show` prints the effective settings and
# where each came from; `evolve config check` validates this file and every profile.
#
# Precedence, lowest first: built-in defaults, this file's top level, the active
# profile ([profiles.NAME] below), the environment, command-line flags. A profile
# named for the run (--profile NAME, EVOLVE_PROFILE) beats the environment for what
# its own table sets (evolve warns about each variable it ignores), and its own
# base_url without a key of its own gets no OPENAI_API_KEY.
# Environment: OPENAI_BASE_URL, OPENAI_API_KEY, EVOLVE_MODEL, EVOLVE_CHEAP_MODEL,
# EVOLVE_LOG, EVOLVE_PROFILE, EVOLVE_HOME (the directory holding this file).
#
# Lines `#key = value` show the default: remove the `#` and edit the value.
# Unknown keys are an error, so a typo never goes unnoticed. Paths may start with ~;
# relative paths are relative to this file's directory. Durations are in seconds.

# The profile used when neither --profile nor EVOLVE_PROFILE chooses one:
# profile = "local"
# Where file tools may read and write (default: the `workspace` folder next to
# this file; --workspace overrides):
# workspace = "~/evolve-workspace"
# Log level on stderr: off, error, warn, info, debug, trace.
#log = "warn"

[model]
# Any OpenAI-compatible server, up to (not including) /chat/completions. With
# nothing set, evolve tries a local Ollama at this address.
#base_url = "http://127.0.0.1:11434/v1"
# The API key, sent as `Authorization: Bearer …`; `evolve config show` masks it.
# Prefer naming an environment variable that holds it:
# api_key_env = "DEEPSEEK_API_KEY"
# or write it here (then keep this file private: chmod 600):
# api_key = "sk-…"
# The model that answers. "default" suits single-model servers (llama.cpp,
# llama-cpp-python); Ollama and cloud APIs need a real name, e.g. "qwen2.5:7b".
#main = "default"
# The model for memory extraction, evaluation, reflection and summaries
# (default: the main model), e.g.:
# cheap = "qwen2.5:1.5b"
# An embedding model (/v1/embeddings, asked at base_url) that ranks memories by
# meaning beside their words and finds duplicates in `evolve memory maintain`
# (default: none: words alone), e.g. Ollama's "all-minilm" or "nomic-embed-text":
# embedding_model = "all-minilm"
# A speech-to-text model (/v1/audio/transcriptions): voice notes sent to a
# channel are transcribed with it (default: none, they are declined with a note).
# Its server is the model's unless set, and so is its key; another server gets
# transcription_api_key (or transcription_api_key_env) or no key, e.g. whisper.cpp:
# transcription_model = "ggml-base"
# transcription_base_url = "http://127.0.0.1:8081/v1"
# The model's context window in tokens, and the part of it kept for the answer
# (sent as max_tokens). Set them to your model's: prompts are cut to fit.
#context_window = 8192
#reserved_output = 1024
# The largest answer kept from the model, in bytes (text, reasoning and tool-call
# arguments together; 4096 to 16777216). A longer answer is cut there with a note,
# and the rest is not read. Real answers stay far below the default 1 MiB.
#max_answer_bytes = 1048576
# Stream answers as they are written (chat, web).
#stream = true
# Sampling temperature, 0–2 (default: the server's), e.g.:
# temperature = 0.7
# How the model gets its tools: "native" sends them as the OpenAI `tools` list;
# "prompt" describes them in the system message and reads the calls the model
# writes as JSON (for models without tool calling); "off" offers none; "auto"
# is native, and switches a model to prompt when its server answers that it does
# not support tools (remembered in model-tools.json).
#tools = "auto"
# Retries on connection errors, 429 and 5xx, with backoff.
#max_retries = 2
# Tokens (both models, prompt and completion) a day may use: a turn or a task
# beyond it stops with a message until local midnight (default: no limit), e.g.:
# daily_tokens = 200000
# Prices per million tokens, for the costs `evolve usage` shows (the cheap model's
# are the main's unless set), e.g.:
# price_in_per_mtok = 0.27
# price_out_per_mtok = 1.10
# cheap_price_in_per_mtok = 0.07
# cheap_price_out_per_mtok = 0.28

[model.timeouts]
# Connecting (TCP + TLS).
#connect = 10
# From the request to the first byte (and, streamed, to the first token: models think
# first).
#first_byte = 120
# Longest silence between two pieces of a streamed answer (keep-alive comments do not
# count as pieces).
#per_read = 60
# Cap on a whole answer, streamed or not (raise it for long answers from slow models).
#overall = 600

[agent]
# Model calls in one turn's tool loop.
#max_steps = 8
# Reflect every N turns of a session (0: never), and after any reply whose
# evaluation score is below reflect_below (0–1).
#reflect_every = 10
#reflect_below = 0.5
# A session's first reply scoring at least style_above (0–1) teaches a style note; at most
# style_notes_max notes are kept and used.
#style_above = 0.8
#style_notes_max = 8
# A task that took at least two successful tool calls and scored at least
# crystallize_above (0–1) is written back as a learned skill in skills/.
#crystallize_above = 0.8
# How long `evolve ask` waits for memory saving and evaluation before exiting.
#background_wait = 60
# Save memories, evaluate, reflect, learn skills and lessons after each turn.
#learn = true
# Tools sent in full with each model call, chosen by the question (the tools the
# session used, and those the model asks for with more_tools, come too; the
# rest are named in one line each). 0 sends every tool in full.
#tool_schemas = 6
# `evolve chat`: one dim line after each answer (memories, tools, time, the score).
#turn_line = true
# The cheap model writes a session's title after its first answer (a renamed
# session keeps yours).
#titles = true
# The cheap model keeps a short review of the session's tool calls (what was
# called, what came of it, what failed), given to the model with the summary.
#tool_chain = true
# The `subtasks` tool: the model splits a task into at most this many independent
# parts, each answered by its own turn (no history, the same permissions), and
# summarises their results. 0: no such tool (at most 16).
#subtasks = 4
# Sub-turns that run at once.
#subtask_parallel = 3

[tools]
# The `shell` tool is stopped after this long — or up to 4 times as long while the
# command is busy (CPU, I/O or output; Linux).
#shell_timeout = 30
# A command idle this long in a row is stopped before its timeout (0: never).
#shell_idle_stop = 20
# Bytes of tool output kept (half from the start, half from the end).
#output_cap = 131072
# Whether `http_get` may fetch 127.0.0.1, LAN and other private addresses.
#http_allow_private = false
#http_timeout = 20
# Hosts that may receive anything, even after a file, page or tool result entered the
# turn. Otherwise, from then on, data no one gave (not in your words, not a link the
# text gave verbatim) is only sent after you say yes; a headless run refuses it.
# Names like "api.example.com", or "*.example.org" for its subdomains.
#http_hosts = []

[tools.levels]
# Permission level of a tool, L0–L5 (L3: ask once, L4: ask twice, L5: refused).
# Built-in tools can only be raised; MCP tools are `<server>__<tool>`. E.g.:
# write_file = "L4"
# github__create_issue = "L4"

[text]
# A full jieba dictionary (`word frequency [tag]` lines) instead of the built-in
# trimmed one: better Chinese word splitting for about 30 MB more memory, e.g.:
# dict_path = "~/.evolve/jieba-dict.txt"

[memory]
# At most this many memories enter a prompt; CRITICAL ones first, at most
# max_critical of them.
#max_selected = 30
#max_critical = 10
# A memory whose words overlap the question at least this much (F1) is always taken.
#strong_match_f1 = 0.7
# Relevance is BM25 over the memories' keywords (stemmed English, jieba words for
# Chinese), relative to the best match; "f1" is the older token-overlap rule.
#ranking = "bm25"
# The previous question of the session counts at this weight, so a follow-up
# ("and where does she live?") finds what it is about; 0 leaves it out.
#context_weight = 0.25
# Matches weaker than this share of the best one stay out of the prompt.
#min_relevance = 0.2
# Relevance enters the score squared, so it weighs more than age and priority.
#relevance_exponent = 2.0
# A dialog turn gains this share of the score of the turn it replies to (the
# answer often shares no word with the question; the question it answers does).
#reply_share = 0.3
# A memory whose speaker, or a person it names, the question names scores this
# many times more.
#subject_boost = 1.5
# With [model] embedding_model set, embeddings are fused with the words by a
# weighted sum ("weighted": (1 - vector_weight) x words + vector_weight x cosine,
# each relative to its best) or by reciprocal rank ("rrf", ranks only).
#fusion = "weighted"
#vector_weight = 0.4
# A new memory this similar (keyword Jaccard) to an old one is merged into it.
#merge_jaccard = 0.3
# Priorities decay with age: CRITICAL → HIGH, HIGH → MEDIUM, MEDIUM → LOW (days).
#decay_critical_days = 30
#decay_high_days = 60
#decay_medium_days = 90
# At most this many CRITICAL memories; the oldest are retired first.
#critical_cap = 15

[history]
# Past turns kept per session before the oldest are summarised.
#l2_capacity = 50
#l2_overflow = 30
# Prompts are trimmed when they pass this share of the input budget.
#trim_threshold = 0.8
# Trimming keeps at least the last this many user turns.
#keep_user_turns = 5
# Texts longer than this (characters) are cut when trimming.
#max_text_chars = 4096

[permission]
# The `shell` tool's level: L5 (refused) or L4 (ask twice).
#shell_level = "L5"
# Shell command prefixes with their own level (read-only commands may go below L3), e.g.:
# command_prefixes = [["git status", "L2"], ["ls", "L2"]]
# The highest level `evolve ask` and scheduled tasks run without --allow (at most L3).
#headless_max_auto = "L2"

[limits]
# What each program Evolve starts (every shell command, every stdio MCP server) may
# take; the kernel stops it past a limit, with an error the model sees. 0: no limit.
# Memory in MiB (private writable memory). Default: half the RAM, 256 MiB to 4 GiB
# (`evolve doctor` shows it), e.g.:
# memory_mib = 512
# The largest file one program may write, in MiB.
#file_size_mib = 1024
# Processes and threads a program may start beyond those you already run.
#processes = 256
# CPU seconds per process of a command (MCP servers have none). Raise it with
# tools.shell_timeout for long builds.
#cpu_secs = 600

[scheduler]
# The time zone of `evolve tasks` schedules (cron, --daily, --at without offset): a
# zone database name or a fixed offset such as "+08:00". Default: TZ, else the
# system's zone, else UTC.
# time_zone = "Asia/Shanghai"

[mcp]
# MCP servers: their tools are offered to the model as `<server>__<tool>`, each
# with a permission level (`evolve mcp tools` shows them and where each level came
# from; `evolve mcp level TOOL L0-L5` sets one). Servers can also be added with
# `evolve mcp add` and `evolve mcp import FILE` (those are kept in the store).
# How long one tool call may take, unless a server sets its own timeout_secs.
#timeout_secs = 60
#
# A program that speaks MCP on stdin/stdout, e.g.:
# [mcp.servers.notes]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
# env = { NODE_OPTIONS = "--no-warnings" }
# An endpoint speaking streamable HTTP, its token read from an environment variable
# (or `bearer_token = "…"`, or `headers = { X-Api-Key = "…" }`), e.g.:
# [mcp.servers.remote]
# url = "https://mcp.example.com/mcp"
# bearer_token_env = "REMOTE_MCP_TOKEN"
# timeout_secs = 120
# A server that asks for an OAuth login needs no token here: `evolve mcp login NAME`
# (evolve registers itself), or with a client you registered at its authorization server:
#   oauth_client_id = "…"  and  oauth_client_secret_env = "VAR" (a confidential client)
#   oauth_client_metadata_url = "https://…/evolve.json" (a client ID metadata document)
# Any server may also set:
#   cwd               the program's working directory
#   sandbox           a program only: "workspace" (the kernel lets it read the system,
#                     its own files and the workspace, and write the workspace and its
#                     own folder $EVOLVE_HOME/sandbox/NAME), "read-only" (writes only its
#                     own folder) or "none" (the default: it runs with your rights).
#                     npx/uvx servers get their caches in their own folder and download
#                     there once. Needs Landlock (`evolve doctor`); else not started.
#   trusted           true: its readOnlyHint is believed over the cheap model (a
#                     read-only tool is L2); other hints and servers not trusted can
#                     only raise a tool above its floor (L3 unless readOnlyHint)
#   enabled_tools     offer only these tools, e.g. ["read_file", "list_directory"]
#   disabled_tools    never offer these tools
#   disabled          true: the server is not used
#   roots             directories outside the workspace its tools may name in their
#                     arguments (default: the existing absolute directories among
#                     args, and cwd)

# Chat channels `evolve serve` answers on. `evolve channels add telegram --token-env
# VAR` writes this; a stranger gets a pairing code, `evolve channels pair CODE` lets
# them talk; `owner` (your Telegram user id) is paired from the start; `base_url`
# points at a self-hosted Bot API server. E.g.:
# [channels.telegram]
# token_env = "TELEGRAM_BOT_TOKEN"
# owner = 123456789

# Profiles override any of the settings above, key by key, and are chosen with
# --profile NAME, EVOLVE_PROFILE or `profile = "NAME"` at the top. For example:
#
# [profiles.deepseek.model]
# base_url = "https://api.deepseek.com/v1"
# api_key_env = "DEEPSEEK_API_KEY"
# main = "deepseek-chat"
# context_window = 65536
# reserved_output = 8192
#
# [profiles.local.model]
# base_url = "http://127.0.0.1:8080/v1"
# main = "default"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// The template with every `#key = value` setting line uncommented.
    fn uncommented(template: &str) -> String {
        template
            .lines()
            .map(|l| match l.strip_prefix('#') {
                Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The template's example lines (`# key = value` under a table), uncommented.
    fn examples(template: &str) -> String {
        template
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest)
                    if rest.starts_with('[')
                        || rest.split_once(" = ").is_some_and(|(k, _)| {
                            !k.is_empty()
                                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        }) =>
                {
                    rest
                }
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn template_settings_are_the_defaults() {
        let text = uncommented(CONFIG_TEMPLATE);
        assert!(text.lines().filter(|l| l.contains(" = ")).count() > 30);
        let loaded = crate::config::tests::load_text(&text, &[]).expect("template loads");
        let mut defaults = crate::config::Config::defaults(loaded.config.home.clone());
        // Written out, the default address is configured rather than assumed.
        defaults.model.base_url_is_default = false;
        crate::config::tests::assert_same(&loaded.config, &defaults);
    }

    #[test]
    fn template_examples_are_valid_keys() {
        // Uncommenting the examples (api_key and api_key_env both) must fail only on
        // "both set"; dropping api_key, everything parses, the profiles included.
        let text = examples(CONFIG_TEMPLATE);
        let err = crate::config::tests::load_text(&text, &[]).expect_err("both keys set");
        assert!(err.to_string().contains("api_key_env"), "{err}");
        let text: String = text
            .lines()
            .filter(|l| !l.starts_with("api_key ="))
            .map(|l| format!("{l}\n"))
            .collect();
        let env = [("DEEPSEEK_API_KEY", "sk-deepseek-0123456789abcdef")];
        let loaded = crate::config::tests::load_text(&text, &env).expect("examples load");
        assert_eq!(loaded.config.profile, "local");
        assert_eq!(loaded.profiles, ["deepseek", "local"]);
        assert_eq!(loaded.config.model.base_url, "http://127.0.0.1:8080/v1");
        let mcp = &loaded.config.mcp;
        let names: Vec<&str> = mcp.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["notes", "remote"]);
        assert_eq!(mcp.servers[1].timeout.as_secs(), 120);
        // The example's token variable is not set: a warning, not an error.
        assert!(
            mcp.warnings[0].contains("REMOTE_MCP_TOKEN"),
            "{:?}",
            mcp.warnings
        );
    }
}
