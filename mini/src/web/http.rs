//! A small HTTP/1.1 server on `std::net`: what `evolve serve` needs and nothing more.
//!
//! Why not tiny_http (DESIGN.md's first choice): it starts one thread per connection with
//! no upper bound and sets no read timeout on the sockets it accepts, so a few thousand
//! idle or trickling connections (slowloris) would hold a thread each for ever, and its
//! chunked encoder buffers 8 KiB, which holds back streamed tokens. This server decides:
//! - at most `max_connections` connections at once, one thread each (the bounded worker
//!   pool); one more gets `503` at once and is closed;
//! - the request head must arrive within `head_timeout`, the body within
//!   `body_timeout`; a keep-alive connection idle for `idle_timeout` is closed;
//! - heads over 16 KiB → `431`, bodies over `max_body` → `413` (the body is not read),
//!   chunked request bodies → `411`, malformed requests → `400`: never a 5xx for bad
//!   input;
//! - streamed responses are chunked, one chunk per event, flushed at once.
//!
//! What it leaves to others: routing, auth and every answer (the handler).

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The server's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once (one thread each).
    pub max_connections: usize,
    /// The largest request body accepted.
    pub max_body: usize,
    /// Time for the whole request head.
    pub head_timeout: Duration,
    /// Time for the whole body.
    pub body_timeout: Duration,
    /// A keep-alive connection waiting this long for its next request is closed.
    pub idle_timeout: Duration,
    /// A write the client does not take within this long ends the connection.
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 256,
            max_body: 4 * 1024 * 1024,
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(15),
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// The largest request head (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// The most headers in one request.
const MAX_HEADERS: usize = 100;

/// One request, read in full.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, … as sent (upper case by the standard).
    pub method: String,
    /// The path, still percent-encoded (the router decodes segments).
    pub path: String,
    /// The query string without `?` (may be empty).
    pub query: String,
    /// Header names in lower case, values trimmed, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The client's address.
    pub peer: SocketAddr,
    /// An HTTP/1.0 request (streams to it are not chunked).
    pub http10: bool,
}

impl Request {
    /// The first header of that (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        form_value(&self.query, name)
    }
}

/// A value from `application/x-www-form-urlencoded` text (a query string or a form).
pub fn form_value(text: &str, name: &str) -> Option<String> {
    text.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(&k.replace('+', " "))? == name)
            .then(|| percent_decode(&v.replace('+', " ")))
            .flatten()
    })
}

/// Decodes `%XX` escapes; `None` when they are malformed or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Writes a streamed body: each [`Stream::send`] is one chunk, flushed at once.
pub struct Stream<'a> {
    out: &'a mut TcpStream,
    failed: bool,
    /// Chunked (HTTP/1.1) or raw to the close (HTTP/1.0).
    chunked: bool,
}

impl Stream<'_> {
    /// Sends one piece; `false` once the client has gone (later sends do nothing).
    pub fn send(&mut self, data: &[u8]) -> bool {
        if self.failed || data.is_empty() {
            return !self.failed;
        }
        let ok = if self.chunked {
            let head = format!("{:x}\r\n", data.len());
            self.out
                .write_all(head.as_bytes())
                .and_then(|()| self.out.write_all(data))
                .and_then(|()| self.out.write_all(b"\r\n"))
                .and_then(|()| self.out.flush())
        } else {
            self.out.write_all(data).and_then(|()| self.out.flush())
        };
        if ok.is_err() {
            self.failed = true;
        }
        !self.failed
    }
}

/// What a streamed response does once its headers are out.
pub type StreamFn<'a> = Box<dyn FnOnce(&mut Stream<'_>) + 'a>;

/// A response body.
pub enum Body<'a> {
    /// All at once.
    Bytes(Cow<'static, [u8]>),
    /// Chunked, written by the closure.
    Stream(StreamFn<'a>),
}

/// A response.
pub struct Response<'a> {
    /// The status code.
    pub status: u16,
    /// Headers besides Content-Length, Transfer-Encoding, Connection.
    pub headers: Vec<(Cow<'static, str>, String)>,
    /// The body.
    pub body: Body<'a>,
}

impl<'a> Response<'a> {
    /// A complete response.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Cow<'static, [u8]>>) -> Self {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.to_string())],
            body: Body::Bytes(body.into()),
        }
    }

    /// A JSON response.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self::bytes(
            status,
            "application/json",
            serde_json::to_vec(value).unwrap_or_default(),
        )
    }

    /// A streamed response (`text/event-stream`).
    pub fn sse(f: StreamFn<'a>) -> Self {
        Response {
            status: 200,
            headers: vec![
                (
                    "Content-Type".into(),
                    "text/event-stream; charset=utf-8".into(),
                ),
                ("Cache-Control".into(), "no-cache".into()),
                ("X-Accel-Buffering".into(), "no".into()),
            ],
            body: Body::Stream(f),
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: impl Into<Cow<'static, str>>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// The reason phrase of the codes this server sends.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        303 => "See Other",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// The handler of every request.
pub type Handler = dyn Fn(&Request) -> Response<'static> + Send + Sync;

/// The admission check, on a request's head (its body still empty): `Some` refuses it
/// with that answer before the body is read.
pub type Admit = dyn Fn(&Request) -> Option<Response<'static>> + Send + Sync;

/// Hands each request to [`Handler`] — or a canned error for a broken one — until
/// `shutdown` is set; the listener is then dropped and the call returns once every
/// connection has finished (connections finish their current response and close).
pub fn serve(
    listener: TcpListener,
    limits: Limits,
    admit: Arc<Admit>,
    handler: Arc<Handler>,
    shutdown: Arc<AtomicBool>,
    error_body: fn(u16, &str) -> Vec<u8>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    let shared = Arc::new(Shared {
        limits,
        admit,
        handler,
        shutdown: Arc::clone(&shutdown),
        error_body,
    });
    for conn in listener.incoming() {
        if shutdown.load(Ordering::SeqCst) {
            break;
        }
        let Ok(mut stream) = conn else { continue };
        if active.load(Ordering::SeqCst) >= shared.limits.max_connections {
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let body = error_body(503, "the server is busy: too many connections; try again");
            let _ = write_head(&mut stream, 503, &json_headers(), Some(body.len()), false)
                .and_then(|()| stream.write_all(&body));
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let guard = Active(Arc::clone(&active));
        let shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("http".into())
            .stack_size(1024 * 1024)
            .spawn(move || {
                let _guard = guard;
                connection(stream, &shared);
            });
        if let Err(e) = spawned {
            log::warn!("cannot start a connection thread: {e}");
        }
    }
    drop(listener);
    // Let the connections finish what they are doing (bounded by the turn's cancel,
    // which the caller sets).
    while active.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Counts a connection while it lives.
struct Active(Arc<AtomicUsize>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn json_headers() -> Vec<(Cow<'static, str>, String)> {
    vec![("Content-Type".into(), "application/json".into())]
}

/// How reading one request ended.
enum Read1 {
    Request(Request, bool),
    /// The connection closed (or idled out) between requests: nothing to answer.
    Closed,
    /// A broken request: answer with this status and message, then close.
    Bad(u16, &'static str),
    /// A request the admission check refused on its head: answer, then close (its
    /// body is never read).
    Refused(Response<'static>),
}

/// What every connection of one server shares.
struct Shared {
    limits: Limits,
    admit: Arc<Admit>,
    handler: Arc<Handler>,
    shutdown: Arc<AtomicBool>,
    error_body: fn(u16, &str) -> Vec<u8>,
}

impl Shared {
    /// Answers a broken or refused request and closes.
    fn refuse(&self, out: &mut TcpStream, status: u16, message: &str) {
        let body = (self.error_body)(status, message);
        let _ = write_head(out, status, &json_headers(), Some(body.len()), false)
            .and_then(|()| out.write_all(&body))
            .and_then(|()| out.flush());
    }
}

fn connection(stream: TcpStream, shared: &Shared) {
    let Ok(peer) = stream.peer_addr() else { return };
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(shared.limits.write_timeout));
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::with_capacity(8 * 1024, stream);
    let mut first = true;
    loop {
        let wait = if first {
            shared.limits.head_timeout
        } else {
            shared.limits.idle_timeout
        };
        first = false;
        if !await_data(&mut reader, wait, &shared.shutdown) {
            return;
        }
        match read_request(&mut reader, &mut out, peer, shared) {
            Read1::Closed => return,
            Read1::Bad(status, message) => {
                shared.refuse(&mut out, status, message);
                return;
            }
            Read1::Refused(response) => {
                let _ = write_response(&mut out, response, false, false, false);
                return;
            }
            Read1::Request(request, keep_alive) => {
                let head_only = request.method == "HEAD";
                let response = (shared.handler)(&request);
                log::debug!(
                    "{} {} {} → {}",
                    request.peer,
                    request.method,
                    request.path,
                    response.status
                );
                // HTTP/1.0 has no chunked encoding: a stream ends by closing.
                let streamed = matches!(response.body, Body::Stream(_));
                let keep = keep_alive
                    && !shared.shutdown.load(Ordering::SeqCst)
                    && !(request.http10 && streamed);
                let written = write_response(&mut out, response, keep, head_only, request.http10);
                if written.is_err() || !keep {
                    return;
                }
            }
        }
    }
}

fn write_head(
    out: &mut TcpStream,
    status: u16,
    headers: &[(Cow<'static, str>, String)],
    length: Option<usize>,
    keep_alive: bool,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        // Values come from our own code; a newline would split the head: drop it.
        let value: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("X-Content-Type-Options: nosniff\r\nReferrer-Policy: same-origin\r\n");
    match length {
        Some(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
        None if keep_alive => head.push_str("Transfer-Encoding: chunked\r\n"),
        None => {}
    }
    head.push_str(if keep_alive {
        "Connection: keep-alive\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    out.write_all(head.as_bytes())
}

/// Writes a response. A stream is chunked, except to an HTTP/1.0 client, which reads
/// it to the close.
fn write_response(
    out: &mut TcpStream,
    response: Response<'_>,
    keep_alive: bool,
    head_only: bool,
    http10: bool,
) -> io::Result<()> {
    match response.body {
        Body::Bytes(bytes) => {
            write_head(
                out,
                response.status,
                &response.headers,
                Some(bytes.len()),
                keep_alive,
            )?;
            if !head_only {
                out.write_all(&bytes)?;
            }
            let flushed = out.flush();
            // A big body (a long answer, an export) leaves big blocks freed behind it.
            if matches!(bytes, Cow::Owned(_)) && bytes.len() >= crate::heap::BIG_ANSWER {
                drop(bytes);
                crate::heap::give_back();
            }
            flushed
        }
        Body::Stream(f) => {
            let chunked = !http10;
            write_head(out, response.status, &response.headers, None, chunked)?;
            out.flush()?;
            let mut stream = Stream {
                out: &mut *out,
                failed: false,
                chunked,
            };
            f(&mut stream);
            if stream.failed {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            if chunked {
                out.write_all(b"0\r\n\r\n")?;
            }
            out.flush()
        }
    }
}

/// Waits for the first byte of the next request: `false` when the client closed, the
/// wait ran out, or the server is shutting down (checked four times a second).
fn await_data(reader: &mut BufReader<TcpStream>, wait: Duration, shutdown: &AtomicBool) -> bool {
    let started = Instant::now();
    let _ = reader.get_ref().set_read_timeout(Some(SLICE));
    loop {
        match reader.fill_buf() {
            Ok(buf) => return !buf.is_empty(),
            Err(e) if is_timeout(&e) => {
                if shutdown.load(Ordering::SeqCst) || started.elapsed() >= wait {
                    return false;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Reads wait at most this long at a time, so deadlines and shutdown are noticed.
const SLICE: Duration = Duration::from_millis(250);

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Why a read of part of a request stopped early.
enum Stop {
    /// The peer closed.
    Eof,
    /// The deadline passed (or the server is stopping).
    Late,
    /// A read failed.
    Broken,
}

/// Fills the reader's buffer, waiting in slices until `deadline` or shutdown.
fn fill<'r>(
    reader: &'r mut BufReader<TcpStream>,
    deadline: Instant,
    shutdown: &AtomicBool,
) -> Result<&'r [u8], Stop> {
    loop {
        if shutdown.load(Ordering::SeqCst) || Instant::now() >= deadline {
            return Err(Stop::Late);
        }
        // Ask first whether data is there, so the borrow of the buffer is returned only
        // on success (the loop cannot hold it across iterations).
        match reader.fill_buf() {
            Ok([]) => return Err(Stop::Eof),
            Ok(_) => break,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Stop::Broken),
        }
    }
    reader.fill_buf().map_err(|_| Stop::Broken)
}

/// Reads one request: the head within the head timeout (counted from its first byte,
/// however slowly it trickles), the admission check on the head alone (a refused
/// request's body is never read or buffered), then the body within the body timeout.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    out: &mut TcpStream,
    peer: SocketAddr,
    shared: &Shared,
) -> Read1 {
    let limits = &shared.limits;
    let shutdown = &*shared.shutdown;
    let _ = reader.get_ref().set_read_timeout(Some(SLICE));
    let deadline = Instant::now() + limits.head_timeout;
    let mut head: Vec<u8> = Vec::new();
    // The head, line by line, to the empty line.
    let mut line_start = 0;
    loop {
        let buf = match fill(reader, deadline, shutdown) {
            Ok(b) => b,
            Err(Stop::Eof) if head.is_empty() => return Read1::Closed,
            Err(Stop::Eof) => {
                return Read1::Bad(400, "the request ended before its head was complete")
            }
            Err(Stop::Late) => return Read1::Bad(408, "the request head did not arrive in time"),
            Err(Stop::Broken) => return Read1::Closed,
        };
        let (take, line_done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        head.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if head.len() > MAX_HEAD {
            return Read1::Bad(431, "the request head is over 16 KiB");
        }
        if !line_done {
            continue;
        }
        let line = &head[line_start..];
        if line == b"\r\n" || line == b"\n" {
            // Blank lines before the request line are allowed (RFC 9112 §2.2).
            if line_start == 0 {
                head.clear();
                continue;
            }
            break;
        }
        line_start = head.len();
    }
    let Ok(text) = std::str::from_utf8(&head) else {
        return Read1::Bad(400, "the request head is not valid UTF-8");
    };
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Read1::Bad(400, "malformed request line");
    };
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        v if v.starts_with("HTTP/") => return Read1::Bad(505, "only HTTP/1.0 and 1.1 are served"),
        _ => return Read1::Bad(400, "malformed request line"),
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Read1::Bad(400, "malformed request method");
    }
    if !target.starts_with('/') {
        return Read1::Bad(400, "the request target must be a path");
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Read1::Bad(400, "malformed header line");
        };
        if name.is_empty() || name.contains(|c: char| c.is_whitespace()) {
            return Read1::Bad(400, "malformed header name");
        }
        if headers.len() == MAX_HEADERS {
            return Read1::Bad(431, "too many headers");
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let all = |n: &str| -> Vec<&str> {
        headers
            .iter()
            .filter(|(h, _)| h == n)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    // RFC 9112 §3.2: an HTTP/1.1 request names its host, once.
    let hosts = all("host");
    if (!http10 && hosts.is_empty()) || hosts.len() > 1 {
        return Read1::Bad(400, "the request must have one Host header");
    }
    let connection = all("connection").join(",").to_ascii_lowercase();
    let keep_alive = if connection.contains("close") {
        false
    } else {
        !http10 || connection.contains("keep-alive")
    };
    if !all("transfer-encoding").is_empty() {
        return Read1::Bad(
            411,
            "chunked request bodies are not accepted: send Content-Length",
        );
    }
    // RFC 9112 §6.3: digits only, and several differing values are an error (they
    // would let a proxy and this server disagree on where the next request starts).
    let lengths = all("content-length");
    let mut length = None;
    for value in &lengths {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Read1::Bad(400, "Content-Length is not a number");
        }
        let Ok(n) = value.parse::<usize>() else {
            return Read1::Bad(413, "the request body is too large");
        };
        if length.is_some_and(|l| l != n) {
            return Read1::Bad(400, "conflicting Content-Length headers");
        }
        length = Some(n);
    }
    let length = length.unwrap_or(0);
    if length > limits.max_body {
        return Read1::Bad(413, "the request body is too large");
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut request = Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body: Vec::new(),
        peer,
        http10,
    };
    if let Some(refusal) = (shared.admit)(&request) {
        return Read1::Refused(refusal);
    }
    let expects_continue = request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"));
    if length > 0 && expects_continue && out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err() {
        return Read1::Closed;
    }
    let mut body = Vec::with_capacity(length.min(64 * 1024));
    let deadline = Instant::now() + limits.body_timeout;
    while body.len() < length {
        let buf = match fill(reader, deadline, shutdown) {
            Ok(b) => b,
            Err(Stop::Eof) => return Read1::Bad(400, "the request body ended early"),
            Err(Stop::Late) => return Read1::Bad(408, "the request body did not arrive in time"),
            Err(Stop::Broken) => return Read1::Closed,
        };
        let take = buf.len().min(length - body.len());
        body.extend_from_slice(&buf[..take]);
        reader.consume(take);
    }
    request.body = body;
    Read1::Request(request, keep_alive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_decoded() {
        assert_eq!(
            form_value("a=1&token=x%2By+z", "token").as_deref(),
            Some("x+y z")
        );
        assert_eq!(form_value("q=%E4%B8%AD", "q").as_deref(), Some("中"));
        assert_eq!(form_value("q=%zz", "q"), None);
        assert_eq!(form_value("a=1", "b"), None);
    }
}
