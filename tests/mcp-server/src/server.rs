//! The test tools and the MCP handler that serves them: which tools exist (with their
//! JSON schemas and annotations), what each call answers, and which protocol version
//! the server answers with. Transport (stdio or HTTP) is the caller's business.
//!
//! Bad arguments give an `isError: true` result naming the tool and the argument — the
//! kind of failure a model can read and fix — while an unknown tool name is a JSON-RPC
//! `invalid params` error, as the MCP specification asks.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};

/// Exit code of the `crash` tool, so a test can tell it from other deaths.
pub const CRASH_CODE: i32 = 3;

/// `slow` refuses longer sleeps: a typo must not hang a test run for hours.
const MAX_SLOW_MS: u64 = 600_000;

/// `big` refuses larger results: 64 MiB is far past any client limit worth testing.
const MAX_BIG_BYTES: u64 = 64 << 20;

/// What the command line decided for every session.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where `write_note` writes (created on first write).
    pub notes: PathBuf,
    /// `--protocol`: the only version this server speaks, whatever the client asks.
    pub protocol: Option<ProtocolVersion>,
}

/// One MCP session's handler. The tool added by `add_tool` belongs to the session that
/// added it, so concurrent HTTP sessions do not see each other's changes.
#[derive(Debug, Clone)]
pub struct TestServer {
    settings: Arc<Settings>,
    extra_added: Arc<AtomicBool>,
}

impl TestServer {
    pub fn new(settings: Arc<Settings>) -> Self {
        Self {
            settings,
            extra_added: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The tools this session lists now.
    fn tools(&self) -> Vec<Tool> {
        let mut tools = catalog();
        if self.extra_added.load(Ordering::SeqCst) {
            tools.push(tool(
                "extra",
                "A tool registered at runtime by add_tool; returns a fixed text.",
                json!({}),
                &[],
                ToolAnnotations::new().read_only(true),
            ));
        }
        tools
    }
}

/// A JSON schema object for `properties`, all of them required.
fn schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    let mut object = JsonObject::new();
    object.insert("type".into(), json!("object"));
    object.insert("properties".into(), properties);
    object.insert("required".into(), json!(required));
    Arc::new(object)
}

fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
    annotations: ToolAnnotations,
) -> Tool {
    let tool = Tool::new(name, description, schema(properties, required));
    // No hint at all is sent as no `annotations` object, as most servers do.
    if annotations == ToolAnnotations::default() {
        tool
    } else {
        tool.annotate(annotations)
    }
}

/// The fixed tools, in the order `tools/list` gives them.
fn catalog() -> Vec<Tool> {
    let string = |d: &str| json!({"type": "string", "description": d});
    let number = |d: &str| json!({"type": "number", "description": d});
    let integer = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    vec![
        tool(
            "echo",
            "Returns the text unchanged.",
            json!({"text": string("the text to return")}),
            &["text"],
            ToolAnnotations::new().read_only(true),
        ),
        tool(
            "add",
            "Returns the sum of a and b.",
            json!({"a": number("first addend"), "b": number("second addend")}),
            &["a", "b"],
            ToolAnnotations::new().read_only(true),
        ),
        tool(
            "write_note",
            "Writes text to a note file named name in the server's notes directory.",
            json!({"name": string("file name, no slashes"), "text": string("the note")}),
            &["name", "text"],
            ToolAnnotations::new().read_only(false).destructive(false),
        ),
        tool(
            "delete_everything",
            "Deletes everything (it does not really: it only says so).",
            json!({}),
            &[],
            ToolAnnotations::new().destructive(true),
        ),
        tool(
            "send_message",
            "Sends a message to someone (pretend: nothing leaves the machine).",
            json!({"to": string("the recipient"), "text": string("the message")}),
            &["to", "text"],
            ToolAnnotations::new().open_world(true),
        ),
        tool(
            "slow",
            "Sleeps ms milliseconds, then answers.",
            json!({"ms": integer("how long to sleep, at most 600000")}),
            &["ms"],
            ToolAnnotations::new().read_only(true),
        ),
        tool(
            "fail",
            "Returns an error result (isError: true) carrying the message.",
            json!({"message": string("the error text")}),
            &["message"],
            ToolAnnotations::new().read_only(true),
        ),
        tool(
            "crash",
            "Exits the server process (code 3) without answering.",
            json!({}),
            &[],
            ToolAnnotations::new(),
        ),
        tool(
            "add_tool",
            "Registers the tool extra and notifies tools/list_changed before answering.",
            json!({}),
            &[],
            ToolAnnotations::new(),
        ),
        tool(
            "wipe_everything",
            "Deletes every file.",
            json!({}),
            &[],
            ToolAnnotations::new(),
        ),
        tool(
            "big",
            "Returns bytes bytes of ASCII text.",
            json!({"bytes": integer("how many bytes, at most 67108864")}),
            &["bytes"],
            ToolAnnotations::new().read_only(true),
        ),
        tool(
            "env",
            "Returns the value of the server's environment variable name.",
            json!({"name": string("the variable")}),
            &["name"],
            ToolAnnotations::new().read_only(true),
        ),
        tool(
            "cwd",
            "Returns the server's working directory.",
            json!({}),
            &[],
            ToolAnnotations::new().read_only(true),
        ),
    ]
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn error(t: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(t)])
}

/// Argument readers: `Err` is the error result to send back.
fn string_arg<'a>(tool: &str, args: &'a JsonObject, name: &str) -> Result<&'a str, CallToolResult> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| error(format!("{tool}: argument `{name}` must be a string")))
}

fn number_arg(
    tool: &str,
    args: &JsonObject,
    name: &str,
) -> Result<serde_json::Number, CallToolResult> {
    match args.get(name) {
        Some(Value::Number(n)) => Ok(n.clone()),
        _ => Err(error(format!("{tool}: argument `{name}` must be a number"))),
    }
}

fn count_arg(tool: &str, args: &JsonObject, name: &str, max: u64) -> Result<u64, CallToolResult> {
    match args.get(name).and_then(Value::as_u64) {
        Some(n) if n <= max => Ok(n),
        Some(n) => Err(error(format!(
            "{tool}: `{name}` {n} is over the limit {max}"
        ))),
        None => Err(error(format!(
            "{tool}: argument `{name}` must be a non-negative integer"
        ))),
    }
}

/// Integers stay integers (`2 + 3` is `5`, not `5.0`); anything else adds as floats.
fn sum(a: &serde_json::Number, b: &serde_json::Number) -> String {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        if let Some(s) = x.checked_add(y) {
            return s.to_string();
        }
    }
    let (x, y) = (
        a.as_f64().unwrap_or(f64::NAN),
        b.as_f64().unwrap_or(f64::NAN),
    );
    (x + y).to_string()
}

/// `bytes` bytes of a repeating, recognisable ASCII pattern.
fn big_text(bytes: u64) -> String {
    const PATTERN: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz\n";
    (0..bytes)
        .map(|i| PATTERN[(i % PATTERN.len() as u64) as usize] as char)
        .collect()
}

/// A note name is one plain file name: never a path that could escape the directory.
fn note_path(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(dir.join(name))
    } else {
        Err(format!(
            "write_note: name {name:?} must be a plain file name (no slashes, not . or ..)"
        ))
    }
}

impl TestServer {
    /// Runs one call; `Err` is a protocol error (unknown tool), `Ok` any tool result.
    async fn call(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let result = match name {
            "echo" => string_arg(name, args, "text").map(text),
            "add" => number_arg(name, args, "a")
                .and_then(|a| Ok((a, number_arg(name, args, "b")?)))
                .map(|(a, b)| text(sum(&a, &b))),
            "write_note" => self.write_note(args).await,
            "delete_everything" => Ok(text("deleted everything (not really: nothing was touched)")),
            "send_message" => string_arg(name, args, "to").and_then(|to| {
                let body = string_arg(name, args, "text")?;
                Ok(text(format!("sent {} bytes to {to} (pretend)", body.len())))
            }),
            "slow" => match count_arg(name, args, "ms", MAX_SLOW_MS) {
                Ok(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(text(format!("done after {ms} ms")))
                }
                Err(e) => Err(e),
            },
            "fail" => string_arg(name, args, "message").map(error),
            "crash" => {
                eprintln!("evolve-mcp-test-server: crash tool called, exiting with {CRASH_CODE}");
                std::process::exit(CRASH_CODE);
            }
            "add_tool" => {
                self.extra_added.store(true, Ordering::SeqCst);
                // Awaited before answering: rmcp writes the notification first, so the
                // client sees list_changed before this call's reply (on stdio; over HTTP
                // it goes to the session's GET stream, if the client opened one).
                if let Err(e) = context.peer.notify_tool_list_changed().await {
                    eprintln!("evolve-mcp-test-server: tools/list_changed not sent: {e}");
                }
                Ok(text("added tool extra"))
            }
            "extra" if self.extra_added.load(Ordering::SeqCst) => Ok(text("extra tool called")),
            "wipe_everything" => self.wipe_notes(),
            "big" => count_arg(name, args, "bytes", MAX_BIG_BYTES).map(|n| text(big_text(n))),
            "env" => string_arg(name, args, "name").map(|var| match std::env::var(var) {
                Ok(v) => text(v),
                Err(_) => error(format!("env: {var} is not set")),
            }),
            "cwd" => Ok(match std::env::current_dir() {
                Ok(d) => text(d.display().to_string()),
                Err(e) => error(format!("cwd: {e}")),
            }),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {other:?}"),
                    None,
                ));
            }
        };
        Ok(result.unwrap_or_else(|e| e))
    }

    async fn write_note(&self, args: &JsonObject) -> Result<CallToolResult, CallToolResult> {
        let name = string_arg("write_note", args, "name")?;
        let body = string_arg("write_note", args, "text")?;
        let dir = &self.settings.notes;
        let path = note_path(dir, name).map_err(error)?;
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, body))
            .map_err(|e| error(format!("write_note: cannot write {}: {e}", path.display())))?;
        Ok(text(format!(
            "wrote {} bytes to {}",
            body.len(),
            path.display()
        )))
    }

    /// `wipe_everything`: really deletes, but only the files of the notes directory (a
    /// test's own), so a test can tell that it ran.
    fn wipe_notes(&self) -> Result<CallToolResult, CallToolResult> {
        let dir = &self.settings.notes;
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(text("deleted 0 files"))
            }
            Err(e) => {
                return Err(error(format!(
                    "wipe_everything: cannot list {}: {e}",
                    dir.display()
                )))
            }
        };
        let mut deleted = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                std::fs::remove_file(&path).map_err(|e| {
                    error(format!(
                        "wipe_everything: cannot delete {}: {e}",
                        path.display()
                    ))
                })?;
                deleted += 1;
            }
        }
        Ok(text(format!("deleted {deleted} files")))
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "evolve-mcp-test-server",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("Test tools for Evolve's MCP client; none has real effects.");
        if let Some(v) = &self.settings.protocol {
            info.protocol_version = v.clone();
        }
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match &self.settings.protocol {
            Some(v) => Cow::Owned(vec![v.clone()]),
            None => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    /// With `--protocol`, answers that version even when the client asked another one:
    /// the point is to test how a client handles an old (or odd) server.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        match self.settings.protocol {
            Some(_) => Ok(self.get_info()),
            None => self.negotiate_initialize(&request),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.call(&request.name, &args, &context)
            .await
            .map(CallToolResponse::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums() {
        let n = |v: Value| match v {
            Value::Number(n) => n,
            other => panic!("not a number: {other}"),
        };
        let cases = [
            (json!(2), json!(3), "5"),
            (json!(-7), json!(7), "0"),
            (json!(1.5), json!(2), "3.5"),
            // Past i64, the sum is a float (as JSON numbers are).
            (json!(i64::MAX), json!(1), "9223372036854776000"),
        ];
        for (a, b, want) in cases {
            assert_eq!(sum(&n(a.clone()), &n(b.clone())), want, "{a} + {b}");
        }
    }

    #[test]
    fn big_text_has_the_asked_length() {
        for bytes in [0, 1, 37, 38, 100_000] {
            assert_eq!(big_text(bytes).len() as u64, bytes);
        }
    }

    #[test]
    fn note_names() {
        let dir = Path::new("/notes");
        let cases = [
            ("a.txt", true),
            ("", false),
            ("..", false),
            (".", false),
            ("../x", false),
            ("a/b", false),
            ("a\\b", false),
        ];
        for (name, ok) in cases {
            assert_eq!(note_path(dir, name).is_ok(), ok, "{name:?}");
        }
    }

    #[test]
    fn annotations_as_the_tests_expect() {
        let tools = catalog();
        let hints = |name: &str| {
            let t = tools.iter().find(|t| t.name == name).expect(name);
            let a = t.annotations.clone().unwrap_or_default();
            (a.read_only_hint, a.destructive_hint, a.open_world_hint)
        };
        let cases = [
            ("echo", (Some(true), None, None)),
            ("add", (Some(true), None, None)),
            ("write_note", (Some(false), Some(false), None)),
            ("delete_everything", (None, Some(true), None)),
            ("send_message", (None, None, Some(true))),
            ("slow", (Some(true), None, None)),
            ("fail", (Some(true), None, None)),
            ("crash", (None, None, None)),
            ("add_tool", (None, None, None)),
            ("wipe_everything", (None, None, None)),
        ];
        for (name, want) in cases {
            assert_eq!(hints(name), want, "{name}");
        }
    }
}
