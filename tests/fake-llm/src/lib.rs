//! A scripted, deterministic OpenAI-compatible server for Evolve's tests.
//!
//! [`FakeLlm::start`] binds `127.0.0.1:0` and serves on background threads until it is
//! dropped. A test scripts what the "model" answers ([`FakeLlm::push`], or
//! [`FakeLlm::route`] for requests that carry a marker such as `[evolve:post]`) and
//! afterwards asserts what the agent *sent* ([`FakeLlm::chat_requests`]).
//!
//! What it decides:
//! - which reply answers a chat request: a model without tool calling
//!   ([`FakeLlm::refuse_tools`]) answers 400 to any request with `tools`; otherwise the
//!   first registered route whose marker occurs in
//!   a message's content takes from its own queue (a request carrying a registered
//!   `[evolve:…]` marker of background work only from those; an empty route queue answers the
//!   fallback, `Text("ok")`, so background work never steals a scripted reply and never
//!   blocks); a request matching no registered route takes from the default queue; an
//!   empty default queue answers the fallback too;
//! - how a reply is put on the wire: a JSON completion, or — when the request says
//!   `"stream": true` — a real incremental SSE stream written with chunked transfer
//!   encoding and flushed after every event (tiny_http's own chunked encoder buffers
//!   8 KiB, so it is bypassed);
//! - the numbers it reports: tool-call ids `call_1`, `call_2`, … counted over the server's
//!   life (unique like a real server's, fixed for a given script); usage estimated as
//!   characters / 4 (+4 per message for the prompt), at least 1 completion token.
//!
//! Every request is handled on its own thread, so a `Delay` or `Hang` never holds up
//! another request (a retry, a background prompt). Sleeps wake up when the server is
//! dropped.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod audio;
pub use audio::FormPart;

/// What the fake model answers to one chat request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A text answer: SSE in chunks of a few characters (usage in the last chunk) when the
    /// request streams, else a JSON completion; usage in both.
    Text(String),
    /// Tool calls `(name, arguments JSON)`, ids `call_N`; `content: null` when not
    /// streamed. Streamed as deltas by index: the header (id, name) first, then the
    /// arguments in pieces — or the header repeated in every chunk, like llama.cpp, after
    /// [`FakeLlm::repeat_tool_headers`]`(true)`.
    ToolCalls(Vec<(String, String)>),
    /// Text and tool calls in one assistant message.
    TextAndTools(String, Vec<(String, String)>),
    /// An HTTP error status with this body (sent as JSON when it parses as JSON, else as
    /// text), e.g. `Status(500, r#"{"error":{"message":"boom"}}"#.into())`.
    Status(u16, String),
    /// An error status with a `Retry-After: secs` header and an OpenAI-shaped body.
    StatusRetryAfter(u16, u64),
    /// Waits, then answers with the inner reply.
    Delay(Duration, Box<Reply>),
    /// 200 with an empty body (what llama.cpp answers to stream + tools).
    EmptyBody,
    /// An SSE response whose body is these lines, each written and flushed as given, with
    /// `\n` appended when the line does not already end with one (so `""` is a blank line
    /// and `"data: x\r\n"` keeps its CRLF).
    RawSse(Vec<String>),
    /// Any response, verbatim.
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    /// 200 and SSE headers, then silence for that long, then the end of the body.
    Hang(Duration),
    /// Silence for that long before any header is sent, then a 504.
    HangBeforeHeaders(Duration),
    /// Streams the text (no finish, no usage, no `[DONE]`), then silence for that long:
    /// a server that stalls in the middle of an answer.
    TextThenHang(String, Duration),
    /// `echo: ` followed by the last user message's text.
    Echo,
}

impl Reply {
    /// `Reply::Text` from anything string-like.
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Text(s.into())
    }

    /// One tool call.
    pub fn tool(name: impl Into<String>, arguments: impl Into<String>) -> Reply {
        Reply::ToolCalls(vec![(name.into(), arguments.into())])
    }

    /// An error status with an OpenAI-shaped body carrying `message`.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::Status(status, json!({"error": {"message": message}}).to_string())
    }

    /// `Delay(d, Box::new(self))`.
    pub fn after(self, d: Duration) -> Reply {
        Reply::Delay(d, Box::new(self))
    }

    /// Reads one reply of a script file (see the binary's `--script`):
    /// `"text"`, `{"text": …}`, `{"tool_calls": [{"name": …, "arguments": … }], "text": …}`,
    /// `{"status": 500, "body": …}`, `{"status": 429, "retry_after": 2}`,
    /// `{"delay_ms": 100, "then": REPLY}`, `{"empty_body": true}`, `{"raw_sse": [LINES]}`,
    /// `{"raw": {"status": …, "content_type": …, "body": …}}`, `{"hang_ms": …}`,
    /// `{"hang_before_headers_ms": …}`, `{"echo": true}`.
    pub fn from_json(v: &Value) -> Result<Reply, String> {
        if let Some(s) = v.as_str() {
            return Ok(Reply::Text(s.to_string()));
        }
        let Some(o) = v.as_object() else {
            return Err(format!("a reply is a string or an object, not {v}"));
        };
        let ms = |key: &str| {
            o.get(key)
                .and_then(Value::as_u64)
                .map(Duration::from_millis)
        };
        let text = o.get("text").and_then(Value::as_str).map(str::to_string);
        if let Some(calls) = o.get("tool_calls") {
            let calls = calls
                .as_array()
                .ok_or("`tool_calls` is a list of {name, arguments}")?
                .iter()
                .map(|c| {
                    let name = c["name"].as_str().ok_or("a tool call needs a `name`")?;
                    let args = match &c["arguments"] {
                        Value::String(s) => s.clone(),
                        Value::Null => "{}".to_string(),
                        other => other.to_string(),
                    };
                    Ok((name.to_string(), args))
                })
                .collect::<Result<Vec<_>, &str>>()?;
            return Ok(match text {
                Some(t) => Reply::TextAndTools(t, calls),
                None => Reply::ToolCalls(calls),
            });
        }
        if let Some(t) = text {
            return Ok(Reply::Text(t));
        }
        if let Some(status) = o.get("status").and_then(Value::as_u64) {
            let status = u16::try_from(status).map_err(|_| "`status` is an HTTP status")?;
            if let Some(secs) = o.get("retry_after").and_then(Value::as_u64) {
                return Ok(Reply::StatusRetryAfter(status, secs));
            }
            let body = match o.get("body") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => {
                    json!({"error": {"message": format!("fake-llm: status {status}")}}).to_string()
                }
            };
            return Ok(Reply::Status(status, body));
        }
        if let Some(d) = ms("delay_ms") {
            let then = o.get("then").ok_or("`delay_ms` needs `then`: the reply")?;
            return Ok(Reply::Delay(d, Box::new(Reply::from_json(then)?)));
        }
        if o.get("empty_body").and_then(Value::as_bool) == Some(true) {
            return Ok(Reply::EmptyBody);
        }
        if let Some(lines) = o.get("raw_sse").and_then(Value::as_array) {
            let lines = lines
                .iter()
                .map(|l| {
                    l.as_str()
                        .map(str::to_string)
                        .ok_or("`raw_sse` lines are strings")
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Reply::RawSse(lines));
        }
        if let Some(raw) = o.get("raw") {
            return Ok(Reply::Raw {
                status: raw["status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok())
                    .unwrap_or(200),
                content_type: raw["content_type"]
                    .as_str()
                    .unwrap_or("application/json")
                    .to_string(),
                body: raw["body"].as_str().unwrap_or("").to_string(),
            });
        }
        if let Some(d) = ms("hang_ms") {
            return Ok(Reply::Hang(d));
        }
        if let Some(d) = ms("hang_before_headers_ms") {
            return Ok(Reply::HangBeforeHeaders(d));
        }
        if o.get("echo").and_then(Value::as_bool) == Some(true) {
            return Ok(Reply::Echo);
        }
        Err(format!("unknown reply {v}"))
    }
}

/// One request the server received, recorded before it is answered (and stamped again
/// once the answer is written).
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path without the query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lower-cased, values as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8).
    pub body: String,
    /// The body parsed as JSON; `Null` when it is not JSON.
    pub json: Value,
    /// The parts of a `multipart/form-data` body (a transcription request); empty for
    /// any other body.
    pub form: Vec<FormPart>,
    /// When the server took the request, before reading its body: with [`Recorded::answered`]
    /// of the request before, the time a client spent between an answer and its next
    /// request (benchmarks measure the agent's own work that way).
    pub received: Instant,
    /// When the last byte of a chat answer was written and flushed (`None` while it is
    /// being answered, when the client went away first, and for other requests).
    pub answered: Option<Instant>,
}

impl Recorded {
    /// The first header with that name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `messages` array of a chat request (empty when there is none).
    pub fn messages(&self) -> &[Value] {
        self.json["messages"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The text of every message, in order (content parts joined).
    pub fn contents(&self) -> Vec<String> {
        self.messages().iter().map(content_text).collect()
    }

    /// The text of the first system message, if any.
    pub fn system(&self) -> Option<String> {
        self.messages()
            .iter()
            .find(|m| m["role"] == "system")
            .map(content_text)
    }

    /// The text of the last user message, if any.
    pub fn last_user(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(content_text)
    }

    /// True when some message's text contains `needle`.
    pub fn mentions(&self, needle: &str) -> bool {
        self.messages()
            .iter()
            .any(|m| content_text(m).contains(needle))
    }

    /// The names of the tools offered (`tools[].function.name`).
    pub fn tool_names(&self) -> Vec<String> {
        self.json["tools"]
            .as_array()
            .map_or_else(Vec::new, |tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
    }

    /// True when the request asked for a stream.
    pub fn is_stream(&self) -> bool {
        self.json["stream"] == true
    }

    /// The requested model name.
    pub fn model(&self) -> Option<&str> {
        self.json["model"].as_str()
    }

    /// True for a request to `…/chat/completions`.
    pub fn is_chat(&self) -> bool {
        self.path.ends_with("/chat/completions")
    }

    /// True for a request to `…/audio/transcriptions`.
    pub fn is_transcription(&self) -> bool {
        self.path.ends_with("/audio/transcriptions")
    }

    /// The form part named `name`.
    pub fn form_part(&self, name: &str) -> Option<&FormPart> {
        self.form.iter().find(|p| p.name == name)
    }
}

/// A message's content as text: a string, or the `text` of its content parts.
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        // Text parts as they are; an image part as `[image image/png, N bytes]` (what
        // its data URL says), so an echo shows what reached the model.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p["type"].as_str() {
                Some("image_url") => {
                    let url = p["image_url"]["url"].as_str().unwrap_or("");
                    Some(
                        match url
                            .strip_prefix("data:")
                            .and_then(|r| r.split_once(";base64,"))
                        {
                            Some((mime, data)) => {
                                format!("[image {mime}, {} bytes]", data.len() / 4 * 3)
                            }
                            None => format!("[image {url}]"),
                        },
                    )
                }
                _ => p["text"].as_str().map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The scripted state, behind one lock.
struct State {
    queue: VecDeque<Reply>,
    routes: Vec<(String, VecDeque<Reply>)>,
    /// What an empty route answers instead of `fallback` ([`FakeLlm::quiet_with`]).
    route_fallbacks: Vec<(String, Reply)>,
    fallback: Reply,
    requests: Vec<Recorded>,
    repeat_tool_headers: bool,
    chunk_chars: usize,
    chunk_delay: Duration,
    models: Vec<String>,
    next_call: u64,
    next_completion: u64,
    /// Set: every chat request that carries `tools` is answered 400 with this message.
    refuse_tools: Option<String>,
    /// Replies for the next transcription requests (else the words heard).
    transcriptions: VecDeque<Reply>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on every recorded request.
    recorded: Condvar,
    shutdown: AtomicBool,
}

impl Shared {
    /// The state; a test that panicked while holding the lock does not poison the others.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps `d`, waking early when the server shuts down. False when it did.
    fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.shutdown.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(20)));
        }
    }
}

/// The fake server. Stops when dropped.
pub struct FakeLlm {
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    accept: Option<JoinHandle<()>>,
    port: u16,
}

impl FakeLlm {
    /// Starts on `127.0.0.1` with a free port. Panics when no port can be bound (a test
    /// cannot run without its server).
    pub fn start() -> FakeLlm {
        match FakeLlm::start_on(0) {
            Ok(f) => f,
            Err(e) => panic!("fake-llm: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts on `127.0.0.1:port` (0 = any free port).
    pub fn start_on(port: u16) -> io::Result<FakeLlm> {
        let server = tiny_http::Server::http(("127.0.0.1", port)).map_err(io::Error::other)?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| io::Error::other("fake-llm: not bound to an IP address"))?;
        let server = Arc::new(server);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                routes: Vec::new(),
                route_fallbacks: Vec::new(),
                fallback: Reply::Text("ok".into()),
                requests: Vec::new(),
                repeat_tool_headers: false,
                chunk_chars: 4,
                chunk_delay: Duration::ZERO,
                models: vec!["fake-main".into(), "fake-cheap".into()],
                next_call: 1,
                next_completion: 1,
                refuse_tools: None,
                transcriptions: VecDeque::new(),
            }),
            recorded: Condvar::new(),
            shutdown: AtomicBool::new(false),
        });
        let accept = {
            let (server, shared) = (Arc::clone(&server), Arc::clone(&shared));
            std::thread::Builder::new()
                .name("fake-llm".into())
                .spawn(move || accept_loop(&server, &shared))?
        };
        Ok(FakeLlm {
            shared,
            server,
            accept: Some(accept),
            port,
        })
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queues a reply for the next chat request that matches no registered route.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().queue.push_back(reply);
    }

    /// Queues a reply for the next chat request whose messages contain `marker`.
    pub fn route(&self, marker: &str, reply: Reply) {
        let mut st = self.shared.lock();
        match st.routes.iter_mut().find(|(m, _)| m == marker) {
            Some((_, q)) => q.push_back(reply),
            None => st
                .routes
                .push((marker.to_string(), VecDeque::from([reply]))),
        }
    }

    /// Registers `marker` with an empty queue: its requests then answer the fallback
    /// instead of taking from the default queue.
    pub fn quiet(&self, marker: &str) {
        let mut st = self.shared.lock();
        if !st.routes.iter().any(|(m, _)| m == marker) {
            st.routes.push((marker.to_string(), VecDeque::new()));
        }
    }

    /// Like [`FakeLlm::quiet`], but an empty queue of `marker` answers `reply` instead
    /// of the fallback.
    pub fn quiet_with(&self, marker: &str, reply: Reply) {
        self.quiet(marker);
        let mut st = self.shared.lock();
        st.route_fallbacks.retain(|(m, _)| m != marker);
        st.route_fallbacks.push((marker.to_string(), reply));
    }

    /// What an empty queue answers (default `Text("ok")`; the binary's `--echo` sets
    /// [`Reply::Echo`]).
    pub fn set_fallback(&self, reply: Reply) {
        self.shared.lock().fallback = reply;
    }

    /// Repeat id, type and name in every streamed tool-call chunk (llama.cpp does).
    pub fn repeat_tool_headers(&self, on: bool) {
        self.shared.lock().repeat_tool_headers = on;
    }

    /// Acts as a model without tool calling: every chat request with a non-empty `tools`
    /// list is answered `400 {"error":{"message": MESSAGE}}`, without taking a scripted
    /// reply (Ollama: `registry.ollama.ai/library/X does not support tools`). `None`
    /// accepts tools again.
    pub fn refuse_tools(&self, message: Option<&str>) {
        self.shared.lock().refuse_tools = message.map(str::to_string);
    }

    /// Characters per streamed text chunk (default 4).
    pub fn set_chunk_chars(&self, n: usize) {
        self.shared.lock().chunk_chars = n.max(1);
    }

    /// A pause before each streamed event (default none), for demos and benchmarks.
    pub fn set_chunk_delay(&self, d: Duration) {
        self.shared.lock().chunk_delay = d;
    }

    /// The ids `GET /v1/models` lists (default `fake-main`, `fake-cheap`).
    pub fn set_models(&self, ids: &[&str]) {
        self.shared.lock().models = ids.iter().map(|s| s.to_string()).collect();
    }

    /// Queues a reply for the next `/audio/transcriptions` request: `Text` is the words
    /// heard, anything else is answered as it is (`Status`, `Delay`, `Raw`, …). Without
    /// one the fake hears the file's own text (see `audio`).
    pub fn push_transcription(&self, reply: Reply) {
        self.shared.lock().transcriptions.push_back(reply);
    }

    /// Only the requests to `…/audio/transcriptions`.
    pub fn transcription_requests(&self) -> Vec<Recorded> {
        let st = self.shared.lock();
        st.requests
            .iter()
            .filter(|r| r.is_transcription())
            .cloned()
            .collect()
    }

    /// Replies still queued (default queue plus every route).
    pub fn pending(&self) -> usize {
        let st = self.shared.lock();
        st.queue.len() + st.routes.iter().map(|(_, q)| q.len()).sum::<usize>()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Only the requests to `…/chat/completions`.
    pub fn chat_requests(&self) -> Vec<Recorded> {
        let st = self.shared.lock();
        st.requests
            .iter()
            .filter(|r| r.is_chat())
            .cloned()
            .collect()
    }

    /// Waits until at least `n` requests arrived; false if `timeout` passed first.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| st.requests.len() >= n)
    }

    /// Waits until at least `n` chat requests arrived; false if `timeout` passed first.
    pub fn wait_chat_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| {
            st.requests.iter().filter(|r| r.is_chat()).count() >= n
        })
    }

    fn wait_until(&self, timeout: Duration, done: impl Fn(&State) -> bool) -> bool {
        let end = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if done(&st) {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            st = match self.shared.recorded.wait_timeout(st, end - now) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// Loads a script (the binary's `--script` file): a list of replies, or
    /// `{"replies": [...], "routes": {"MARKER": [...]}, "fallback": REPLY,
    /// "repeat_tool_headers": bool, "refuse_tools": MESSAGE}`.
    pub fn load_script(&self, script: &Value) -> Result<(), String> {
        let replies = match script {
            Value::Array(list) => Some(list),
            Value::Object(o) => o.get("replies").and_then(Value::as_array),
            _ => return Err("a script is a list of replies or an object".into()),
        };
        for r in replies.into_iter().flatten() {
            self.push(Reply::from_json(r)?);
        }
        if let Some(routes) = script.get("routes").and_then(Value::as_object) {
            for (marker, list) in routes {
                let list = list.as_array().ok_or("a route is a list of replies")?;
                self.quiet(marker);
                for r in list {
                    self.route(marker, Reply::from_json(r)?);
                }
            }
        }
        if let Some(f) = script.get("fallback") {
            self.set_fallback(Reply::from_json(f)?);
        }
        if let Some(on) = script.get("repeat_tool_headers").and_then(Value::as_bool) {
            self.repeat_tool_headers(on);
        }
        if let Some(message) = script.get("refuse_tools").and_then(Value::as_str) {
            self.refuse_tools(Some(message));
        }
        Ok(())
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Relaxed);
        self.server.unblock();
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(server: &tiny_http::Server, shared: &Arc<Shared>) {
    while !shared.shutdown.load(Ordering::Relaxed) {
        match server.recv_timeout(Duration::from_millis(50)) {
            Ok(Some(request)) => {
                let shared = Arc::clone(shared);
                // A thread per request: a Delay or Hang never holds up the others.
                let spawned = std::thread::Builder::new()
                    .name("fake-llm-request".into())
                    .spawn(move || handle(&shared, request));
                if spawned.is_err() {
                    continue;
                }
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
}

fn handle(shared: &Shared, mut request: tiny_http::Request) {
    let received = Instant::now();
    let mut body = Vec::new();
    let _ = request.as_reader().read_to_end(&mut body);
    let form = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Content-Type"))
        .and_then(|h| audio::parse_form(h.value.as_str(), &body))
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    let url = request.url();
    let path = url.split('?').next().unwrap_or(url).to_string();
    let rec = Recorded {
        method: request.method().as_str().to_string(),
        path,
        headers: request
            .headers()
            .iter()
            .map(|h| {
                (
                    h.field.as_str().as_str().to_ascii_lowercase(),
                    h.value.as_str().to_string(),
                )
            })
            .collect(),
        json: serde_json::from_str(&body).unwrap_or(Value::Null),
        form,
        body,
        received,
        answered: None,
    };
    let (reply, ctx, index) = {
        let mut st = shared.lock();
        let index = st.requests.len();
        st.requests.push(rec.clone());
        shared.recorded.notify_all();
        if rec.is_transcription() && rec.method == "POST" {
            let scripted = st.transcriptions.pop_front();
            drop(st);
            return transcription(shared, request, &rec, scripted);
        }
        if !rec.is_chat() {
            drop(st);
            return answer_other(shared, request, &rec);
        }
        let offers_tools = rec.json["tools"].as_array().is_some_and(|t| !t.is_empty());
        let reply = match &st.refuse_tools {
            Some(message) if offers_tools => Reply::error(400, message),
            _ => choose(&mut st, &rec),
        };
        let ctx = Ctx {
            stream: rec.is_stream(),
            model: rec.model().unwrap_or("fake-main").to_string(),
            id: st.next_completion,
            prompt_tokens: prompt_tokens(&rec),
            last_user: rec.last_user().unwrap_or_default(),
            repeat_headers: st.repeat_tool_headers,
            chunk_chars: st.chunk_chars,
            chunk_delay: st.chunk_delay,
        };
        st.next_completion += 1;
        (reply, ctx, index)
    };
    if answer(shared, request, reply, &ctx).is_ok() {
        let now = Instant::now();
        if let Some(rec) = shared.lock().requests.get_mut(index) {
            rec.answered = Some(now);
        }
    }
}

/// The reply for a chat request (see the module docs for the order).
fn choose(st: &mut State, rec: &Recorded) -> Reply {
    let contents = rec.contents();
    let has = |marker: &str| contents.iter().any(|c| c.contains(marker));
    // A request of the agent's own background work (`[evolve:…]`) quotes the
    // conversation, markers and all: it takes only from its own routes, never a reply
    // scripted for the conversation.
    let background = st
        .routes
        .iter()
        .any(|(m, _)| m.starts_with("[evolve:") && has(m));
    let takes = |marker: &str| has(marker) && (!background || marker.starts_with("[evolve:"));
    let fallback = st
        .route_fallbacks
        .iter()
        .find(|(m, _)| takes(m))
        .map_or_else(|| st.fallback.clone(), |(_, r)| r.clone());
    let routed = st
        .routes
        .iter_mut()
        .filter(|(marker, _)| takes(marker))
        .map(|(_, q)| q)
        .collect::<Vec<_>>();
    if routed.is_empty() {
        return st.queue.pop_front().unwrap_or(fallback);
    }
    routed
        .into_iter()
        .find_map(VecDeque::pop_front)
        .unwrap_or(fallback)
}

/// Characters / 4 plus 4 per message: deterministic and close to real counts.
fn prompt_tokens(rec: &Recorded) -> u64 {
    let chars: usize = rec.contents().iter().map(|c| c.chars().count()).sum();
    (chars / 4 + 4 * rec.messages().len()) as u64
}

fn completion_tokens(text: &str, calls: &[(String, String)]) -> u64 {
    let chars = text.chars().count()
        + calls
            .iter()
            .map(|(n, a)| n.chars().count() + a.chars().count())
            .sum::<usize>();
    (chars / 4).max(1) as u64
}

/// What rendering a reply needs to know about its request.
struct Ctx {
    stream: bool,
    model: String,
    id: u64,
    prompt_tokens: u64,
    last_user: String,
    repeat_headers: bool,
    chunk_chars: usize,
    chunk_delay: Duration,
}

fn answer_other(shared: &Shared, request: tiny_http::Request, rec: &Recorded) {
    if rec.method == "GET" && rec.path.ends_with("/models") {
        let models = shared.lock().models.clone();
        let data: Vec<Value> = models
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake-llm"}))
            .collect();
        let body = json!({"object": "list", "data": data}).to_string();
        let _ = request.respond(fixed(200, "application/json", body, &[]));
    } else if rec.method == "POST" && rec.path.ends_with("/embeddings") {
        let (status, body) = embeddings(&rec.json);
        let _ = request.respond(fixed(status, "application/json", body.to_string(), &[]));
    } else {
        let body = json!({"error": {
            "message": format!("fake-llm: no route for {} {}", rec.method, rec.path),
            "type": "not_found"
        }})
        .to_string();
        let _ = request.respond(fixed(404, "application/json", body, &[]));
    }
}

/// `POST /audio/transcriptions` (see `audio`): the words heard, or the scripted reply.
fn transcription(
    shared: &Shared,
    request: tiny_http::Request,
    rec: &Recorded,
    scripted: Option<Reply>,
) {
    let form = (!rec.form.is_empty()).then_some(rec.form.as_slice());
    match audio::answer(form, scripted) {
        Ok((status, ct, body)) => {
            let _ = request.respond(fixed(status, ct, body, &[]));
        }
        Err(Reply::Delay(d, inner)) => {
            if shared.sleep(d) {
                transcription(shared, request, rec, Some(*inner));
            }
        }
        Err(reply) => {
            let ctx = Ctx {
                stream: false,
                model: rec
                    .form_part("model")
                    .map(FormPart::text)
                    .unwrap_or_default(),
                id: 0,
                prompt_tokens: 0,
                last_user: String::new(),
                repeat_headers: false,
                chunk_chars: 4,
                chunk_delay: Duration::ZERO,
            };
            let _ = answer(shared, request, reply, &ctx);
        }
    }
}

/// Dimensions of the fake embeddings.
const EMBED_DIMS: usize = 32;

/// `POST /embeddings`: one deterministic vector per input — its lower-cased words hashed
/// (FNV-1a) into [`EMBED_DIMS`] buckets, normalised — so texts with the same words get
/// the same vector, whatever their order, and unrelated texts are far apart. Like a
/// real server it knows its models: a name without `embed` in it is a 404.
fn embeddings(body: &Value) -> (u16, Value) {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    if !model.contains("embed") {
        return (
            404,
            json!({"error": {"message": format!("fake-llm: the model `{model}` does not exist or is not an embedding model"), "type": "invalid_request_error", "code": "model_not_found"}}),
        );
    }
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => {
            return (
                400,
                json!({"error": {"message": "fake-llm: `input` must be a string or a list of strings", "type": "invalid_request_error"}}),
            )
        }
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": embed(text)}))
        .collect();
    (
        200,
        json!({"object": "list", "data": data, "model": model,
               "usage": {"prompt_tokens": 0, "total_tokens": 0}}),
    )
}

fn embed(text: &str) -> Vec<f32> {
    let mut v = [0f32; EMBED_DIMS];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut h: u32 = 0x811c_9dc5;
        for b in word.to_lowercase().bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        v[h as usize % EMBED_DIMS] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v.to_vec()
}

fn fixed(
    status: u16,
    content_type: &str,
    body: String,
    extra: &[(&str, String)],
) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
    let mut r = tiny_http::Response::from_string(body).with_status_code(status);
    let headers = std::iter::once(("Content-Type", content_type.to_string()))
        .chain(extra.iter().map(|(k, v)| (*k, v.clone())));
    for (k, v) in headers {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            r.add_header(h);
        }
    }
    r
}

fn answer(shared: &Shared, request: tiny_http::Request, reply: Reply, ctx: &Ctx) -> io::Result<()> {
    match reply {
        Reply::Delay(d, inner) => {
            if !shared.sleep(d) {
                return Ok(());
            }
            answer(shared, request, *inner, ctx)
        }
        Reply::Echo => {
            let text = format!("echo: {}", ctx.last_user);
            answer(shared, request, Reply::Text(text), ctx)
        }
        Reply::Text(text) => completion(shared, request, ctx, &text, &[]),
        Reply::ToolCalls(calls) => completion(shared, request, ctx, "", &calls),
        Reply::TextAndTools(text, calls) => completion(shared, request, ctx, &text, &calls),
        Reply::TextThenHang(text, d) => {
            let mut sse = Sse::start(request, 200)?;
            for piece in pieces(&text, ctx.chunk_chars) {
                let delta = json!({"content": piece});
                sse.event(&chunk(ctx, delta, Value::Null))?;
            }
            if shared.sleep(d) {
                sse.end()?;
            }
            Ok(())
        }
        Reply::Status(status, body) => {
            let ct = if serde_json::from_str::<Value>(&body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            request.respond(fixed(status, ct, body, &[]))
        }
        Reply::StatusRetryAfter(status, secs) => {
            let body = json!({"error": {
                "message": format!("fake-llm: rate limited, retry after {secs} s"),
                "type": "rate_limit_error"
            }})
            .to_string();
            let extra = [("Retry-After", secs.to_string())];
            request.respond(fixed(status, "application/json", body, &extra))
        }
        Reply::EmptyBody => {
            let ct = if ctx.stream {
                "text/event-stream"
            } else {
                "application/json"
            };
            request.respond(fixed(200, ct, String::new(), &[]))
        }
        Reply::RawSse(lines) => {
            let mut sse = Sse::start(request, 200)?;
            for line in lines {
                let line = if line.ends_with('\n') {
                    line
                } else {
                    line + "\n"
                };
                sse.raw(line.as_bytes())?;
            }
            sse.end()
        }
        Reply::Raw {
            status,
            content_type,
            body,
        } => request.respond(fixed(status, &content_type, body, &[])),
        Reply::Hang(d) => {
            let sse = Sse::start(request, 200)?;
            if shared.sleep(d) {
                sse.end()?;
            }
            Ok(())
        }
        Reply::HangBeforeHeaders(d) => {
            if !shared.sleep(d) {
                return Ok(());
            }
            let body = json!({"error": {"message": "fake-llm: hung before answering"}});
            request.respond(fixed(504, "application/json", body.to_string(), &[]))
        }
    }
}

/// A text and/or tool-call answer, streamed or as one JSON completion.
fn completion(
    shared: &Shared,
    request: tiny_http::Request,
    ctx: &Ctx,
    text: &str,
    calls: &[(String, String)],
) -> io::Result<()> {
    let ids: Vec<String> = {
        let mut st = shared.lock();
        calls
            .iter()
            .map(|_| {
                let id = format!("call_{}", st.next_call);
                st.next_call += 1;
                id
            })
            .collect()
    };
    let usage = json!({
        "prompt_tokens": ctx.prompt_tokens,
        "completion_tokens": completion_tokens(text, calls),
        "total_tokens": ctx.prompt_tokens + completion_tokens(text, calls),
    });
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    if !ctx.stream {
        let tool_calls: Vec<Value> = calls
            .iter()
            .zip(&ids)
            .map(|((name, args), id)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": text});
        if !tool_calls.is_empty() {
            if text.is_empty() {
                // What OpenAI sends; clients must accept it.
                message["content"] = Value::Null;
            }
            message["tool_calls"] = Value::Array(tool_calls);
        }
        let mut body = json!({
            "id": format!("chatcmpl-fake-{}", ctx.id),
            "object": "chat.completion",
            "created": 0,
            "model": ctx.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        });
        body["usage"] = usage;
        return request.respond(fixed(200, "application/json", body.to_string(), &[]));
    }

    let mut sse = Sse::start(request, 200)?;
    let pause = || ctx.chunk_delay.is_zero() || shared.sleep(ctx.chunk_delay);
    sse.event(&chunk(
        ctx,
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ))?;
    for piece in pieces(text, ctx.chunk_chars) {
        if !pause() {
            return Ok(());
        }
        sse.event(&chunk(ctx, json!({"content": piece}), Value::Null))?;
    }
    for (index, ((name, args), id)) in calls.iter().zip(&ids).enumerate() {
        let header = |arguments: &str| {
            json!({"index": index, "id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments}})
        };
        sse.event(&chunk(
            ctx,
            json!({"tool_calls": [header("")]}),
            Value::Null,
        ))?;
        for piece in pieces(args, ctx.chunk_chars.max(8)) {
            if !pause() {
                return Ok(());
            }
            let call = if ctx.repeat_headers {
                header(piece)
            } else {
                json!({"index": index, "function": {"arguments": piece}})
            };
            sse.event(&chunk(ctx, json!({"tool_calls": [call]}), Value::Null))?;
        }
    }
    sse.event(&chunk(ctx, json!({}), Value::String(finish.into())))?;
    let mut last = chunk(ctx, json!({}), Value::Null);
    last["choices"] = json!([]);
    last["usage"] = usage;
    sse.event(&last)?;
    sse.raw(b"data: [DONE]\n\n")?;
    sse.end()
}

fn chunk(ctx: &Ctx, delta: Value, finish: Value) -> Value {
    json!({
        "id": format!("chatcmpl-fake-{}", ctx.id),
        "object": "chat.completion.chunk",
        "created": 0,
        "model": ctx.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// `text` cut into pieces of `n` characters (none for an empty text).
fn pieces(text: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(n.max(1))
            .map_or(rest.len(), |(i, _)| i);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// An SSE response written by hand: headers, then one flushed HTTP chunk per write.
struct Sse {
    w: Box<dyn Write + Send>,
}

impl Sse {
    fn start(request: tiny_http::Request, status: u16) -> io::Result<Sse> {
        let mut w = request.into_writer();
        write!(
            w,
            "HTTP/1.1 {status} {}\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
            reason(status)
        )?;
        w.flush()?;
        Ok(Sse { w })
    }

    fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        write!(self.w, "{:x}\r\n", bytes.len())?;
        self.w.write_all(bytes)?;
        self.w.write_all(b"\r\n")?;
        self.w.flush()
    }

    fn event(&mut self, data: &Value) -> io::Result<()> {
        self.raw(format!("data: {data}\n\n").as_bytes())
    }

    fn end(mut self) -> io::Result<()> {
        self.w.write_all(b"0\r\n\r\n")?;
        self.w.flush()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests;
