//! A blocking WebSocket client (RFC 6455) for long connections: the chat platforms that
//! push events over one (Feishu/Lark, DingTalk), so a Pi behind NAT needs no public
//! address. One connection per thread; `ws://` over TCP, `wss://` over rustls with the
//! same trusted certificates as every HTTPS call ([`crate::tls`]).
//!
//! What it decides: the handshake and its checks (status 101, `Upgrade`, the
//! `Sec-WebSocket-Accept` hash), masking every frame it sends, reassembling fragments,
//! answering pings and a close by itself, and refusing what a server must not send
//! (masked or reserved-bit frames, control frames over 125 bytes or fragmented, text
//! that is not UTF-8, a message over the size limit). Reconnecting with backoff is the
//! caller's.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use ureq::tls::RootCerts;

/// The largest message (all its fragments) read before the connection is refused: far
/// above any event a chat platform pushes.
pub const MAX_MESSAGE: usize = 16 << 20;
/// The largest handshake response read.
const MAX_HANDSHAKE: usize = 16 << 10;
/// What RFC 6455 appends to the key before hashing it for `Sec-WebSocket-Accept`.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// A message from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message (checked UTF-8).
    Text(String),
    /// A binary message (Feishu's frames are protobuf).
    Binary(Vec<u8>),
    /// The server closed the connection, with its status code and reason if it gave
    /// them; the close was answered.
    Close(Option<(u16, String)>),
}

/// Why a connection failed or ended.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    /// The URL is not `ws://` or `wss://` with a host.
    #[error("{0:?} is not a WebSocket URL (ws://host/path or wss://host/path)")]
    Url(String),
    /// No address of the host took the connection.
    #[error("cannot connect to {host}: {source}")]
    Connect { host: String, source: io::Error },
    /// TLS could not be set up (the name, the certificates).
    #[error("TLS with {host} failed: {detail}")]
    Tls { host: String, detail: String },
    /// The server answered the upgrade with another status (a wrong ticket: 401/403).
    #[error("the server refused the WebSocket connection: HTTP {status} {body}")]
    Refused { status: u16, body: String },
    /// The server's handshake is not a WebSocket one.
    #[error("the server's WebSocket handshake is wrong: {0}")]
    Handshake(String),
    /// The server sent what the protocol forbids; the connection is dropped.
    #[error("the server broke the WebSocket protocol: {0}")]
    Protocol(String),
    /// A message over [`MAX_MESSAGE`].
    #[error("a WebSocket message over {limit} bytes was refused")]
    TooBig { limit: usize },
    /// Reading or writing failed (a timeout is [`io::ErrorKind::WouldBlock`] or
    /// [`io::ErrorKind::TimedOut`]: the connection is still usable).
    #[error("the WebSocket connection failed: {0}")]
    Io(#[from] io::Error),
    /// The connection was closed before (by either side).
    #[error("the WebSocket connection is closed")]
    Closed,
}

impl WsError {
    /// A read that timed out: nothing arrived, the connection is fine.
    pub fn is_timeout(&self) -> bool {
        matches!(self, WsError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

/// A byte stream a WebSocket runs over.
trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// An open WebSocket connection.
pub struct WebSocket {
    stream: Box<dyn Stream>,
    /// The TCP socket under it, for timeouts and shutdown.
    tcp: TcpStream,
    /// Bytes read past what was used (the handshake's tail, a frame's neighbours).
    buf: Vec<u8>,
    /// A close was sent or received: nothing more is sent.
    closed: bool,
    rng: SystemRandom,
    max_message: usize,
}

impl std::fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocket")
            .field("peer", &self.tcp.peer_addr().ok())
            .field("closed", &self.closed)
            .finish()
    }
}

/// Connects to `url` (`ws://` or `wss://`) with `headers` added to the upgrade request,
/// trusting the certificates every HTTPS call trusts. `timeout` bounds connecting and
/// the handshake; reads then block until [`WebSocket::set_read_timeout`] says otherwise.
pub fn connect(
    url: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<WebSocket, WsError> {
    connect_with(url, headers, timeout, crate::tls::config().root_certs())
}

/// [`connect`] trusting `roots`.
fn connect_with(
    url: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    roots: &RootCerts,
) -> Result<WebSocket, WsError> {
    let target = Target::parse(url)?;
    let tcp = dial(&target.host, target.port, timeout)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    tcp.set_nodelay(true)?;
    let raw = tcp.try_clone()?;
    let stream: Box<dyn Stream> = if target.tls {
        Box::new(tls_stream(&target.host, raw, roots)?)
    } else {
        Box::new(raw)
    };
    let mut ws = WebSocket {
        stream,
        tcp,
        buf: Vec::new(),
        closed: false,
        rng: SystemRandom::new(),
        max_message: MAX_MESSAGE,
    };
    ws.handshake(&target, headers)?;
    ws.tcp.set_read_timeout(None)?;
    Ok(ws)
}

/// Where a URL points.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    tls: bool,
    /// Without brackets for IPv6.
    host: String,
    port: u16,
    /// The `Host` header: the host as written, with the port when it is not the default.
    authority: String,
    /// Path and query, at least `/`.
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, WsError> {
        let bad = || WsError::Url(url.to_string());
        let (tls, rest) = if let Some(r) = strip_prefix_ci(url, "wss://") {
            (true, r)
        } else if let Some(r) = strip_prefix_ci(url, "ws://") {
            (false, r)
        } else {
            return Err(bad());
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        let path = path.split('#').next().unwrap_or("/").to_string();
        if authority.is_empty() || authority.contains('@') || path.contains(char::is_whitespace) {
            return Err(bad());
        }
        let default = if tls { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(bad)?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad())?,
                None if after.is_empty() => default,
                None => return Err(bad()),
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().map_err(|_| bad())?),
                None => (authority.to_string(), default),
            }
        };
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Target {
            tls,
            host,
            port,
            authority: authority.to_string(),
            path,
        })
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A TCP connection to the first address of `host` that answers within `timeout`.
fn dial(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, WsError> {
    let failed = |source| WsError::Connect {
        host: host.to_string(),
        source,
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for addr in (host, port).to_socket_addrs().map_err(failed)? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(failed(last))
}

/// rustls over `tcp`, checking the server's certificate against `roots` for `host`.
fn tls_stream(
    host: &str,
    tcp: TcpStream,
    roots: &RootCerts,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, WsError> {
    let fail = |detail: String| WsError::Tls {
        host: host.to_string(),
        detail,
    };
    let mut store = rustls::RootCertStore::empty();
    match roots {
        RootCerts::Specific(certs) => {
            let (_, unusable) = store.add_parsable_certificates(
                certs
                    .iter()
                    .map(|c| rustls::pki_types::CertificateDer::from(c.der().to_vec())),
            );
            if store.is_empty() {
                return Err(fail(format!(
                    "none of the trusted certificates can be used ({unusable} unreadable)"
                )));
            }
        }
        _ => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| fail(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| fail(format!("{host:?} is not a name TLS can check: {e}")))?;
    let conn =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| fail(e.to_string()))?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}

/// `Sec-WebSocket-Accept` for a key.
fn accept_for(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{ACCEPT_GUID}").as_bytes(),
    );
    STANDARD.encode(digest.as_ref())
}

impl WebSocket {
    /// How long a read waits for the next message (`None`: for ever). A read that times
    /// out returns an error whose [`WsError::is_timeout`] is true; the connection stays
    /// usable.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> Result<(), WsError> {
        self.tcp.set_read_timeout(timeout)?;
        Ok(())
    }

    /// Sends the upgrade request and checks the answer.
    fn handshake(&mut self, target: &Target, headers: &[(&str, &str)]) -> Result<(), WsError> {
        let mut nonce = [0u8; 16];
        self.random(&mut nonce)?;
        let key = STANDARD.encode(nonce);
        let mut request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n",
            target.path, target.authority
        );
        for (name, value) in headers {
            let bad = name.is_empty()
                || name.contains([':', ' '])
                || [name, value].iter().any(|s| s.contains(['\r', '\n']));
            if bad {
                return Err(WsError::Handshake(format!(
                    "the header {name:?} cannot be sent (empty name or a line break)"
                )));
            }
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        self.stream.write_all(request.as_bytes())?;
        self.stream.flush()?;

        // The response head, byte blocks until the blank line.
        let end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            if self.buf.len() > MAX_HANDSHAKE {
                return Err(WsError::Handshake(format!(
                    "no end of the response head in {MAX_HANDSHAKE} bytes"
                )));
            }
            if self.fill()? == 0 {
                return Err(WsError::Handshake(
                    "the server closed the connection before answering".into(),
                ));
            }
        };
        let mut names = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut names);
        response
            .parse(&self.buf[..end])
            .map_err(|e| WsError::Handshake(format!("unreadable response head: {e}")))?;
        let status = response.code.unwrap_or(0);
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
        };
        if status != 101 {
            // What the server said, briefly: a platform's JSON error names the cause.
            let mut body = self.buf[end..].to_vec();
            let _ = self.tcp.set_read_timeout(Some(Duration::from_millis(500)));
            let mut chunk = [0u8; 1024];
            while body.len() < 1024 {
                match self.stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => body.extend_from_slice(&chunk[..n]),
                }
            }
            let body = String::from_utf8_lossy(&body);
            let body: String = body.trim().chars().take(300).collect();
            return Err(WsError::Refused { status, body });
        }
        if !header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
            return Err(WsError::Handshake("no `Upgrade: websocket`".into()));
        }
        if !header("connection").is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        }) {
            return Err(WsError::Handshake("no `Connection: Upgrade`".into()));
        }
        if header("sec-websocket-accept").as_deref() != Some(accept_for(&key).as_str()) {
            return Err(WsError::Handshake(
                "`Sec-WebSocket-Accept` does not answer the key sent".into(),
            ));
        }
        if header("sec-websocket-extensions").is_some() {
            return Err(WsError::Handshake(
                "the server chose an extension that was not offered".into(),
            ));
        }
        self.buf.drain(..end);
        Ok(())
    }

    /// The next message. Pings are answered and pongs skipped on the way; a close is
    /// answered and returned (after it, every call says [`WsError::Closed`]).
    pub fn read(&mut self) -> Result<Message, WsError> {
        if self.closed {
            return Err(WsError::Closed);
        }
        let mut message: Option<(u8, Vec<u8>)> = None;
        loop {
            let (fin, opcode, payload) = self.frame()?;
            match opcode {
                OP_PING => self.send(OP_PONG, &payload)?,
                OP_PONG => {}
                OP_CLOSE => {
                    let reason = match payload.len() {
                        0 => None,
                        1 => return Err(self.broken("a close frame of one byte")),
                        _ => {
                            let code = u16::from_be_bytes([payload[0], payload[1]]);
                            let text = std::str::from_utf8(&payload[2..])
                                .map_err(|_| self.broken("a close reason that is not UTF-8"))?;
                            Some((code, text.to_string()))
                        }
                    };
                    // Echo the status code, as the RFC asks; a failure to say goodbye
                    // changes nothing.
                    let echo = reason.as_ref().map(|(c, _)| c.to_be_bytes().to_vec());
                    let _ = self.send(OP_CLOSE, echo.as_deref().unwrap_or_default());
                    self.closed = true;
                    return Ok(Message::Close(reason));
                }
                OP_TEXT | OP_BINARY => {
                    if message.is_some() {
                        return Err(self.broken("a new message inside a fragmented one"));
                    }
                    message = Some((opcode, payload));
                }
                OP_CONTINUATION => match message.as_mut() {
                    Some((_, data)) => {
                        if data.len() + payload.len() > self.max_message {
                            self.abandon();
                            return Err(WsError::TooBig {
                                limit: self.max_message,
                            });
                        }
                        data.extend_from_slice(&payload);
                    }
                    None => return Err(self.broken("a continuation with no message begun")),
                },
                other => return Err(self.broken(&format!("unknown opcode {other:#x}"))),
            }
            if fin && opcode < OP_CLOSE {
                let Some((kind, data)) = message.take() else {
                    continue;
                };
                return if kind == OP_TEXT {
                    String::from_utf8(data)
                        .map(Message::Text)
                        .map_err(|_| self.broken("a text message that is not UTF-8"))
                } else {
                    Ok(Message::Binary(data))
                };
            }
        }
    }

    /// Sends a text message.
    pub fn send_text(&mut self, text: &str) -> Result<(), WsError> {
        self.send(OP_TEXT, text.as_bytes())
    }

    /// Sends a binary message.
    pub fn send_binary(&mut self, data: &[u8]) -> Result<(), WsError> {
        self.send(OP_BINARY, data)
    }

    /// Closes with status 1000 and ends the connection (the server's answer is not
    /// awaited).
    pub fn close(&mut self) {
        if !self.closed {
            let _ = self.send(OP_CLOSE, &1000u16.to_be_bytes());
            self.closed = true;
        }
        let _ = self.tcp.shutdown(std::net::Shutdown::Both);
    }

    /// One masked frame.
    fn send(&mut self, opcode: u8, payload: &[u8]) -> Result<(), WsError> {
        if self.closed {
            return Err(WsError::Closed);
        }
        let mut frame = Vec::with_capacity(payload.len() + 14);
        frame.push(0x80 | opcode);
        match payload.len() {
            n @ 0..=125 => frame.push(0x80 | n as u8),
            n @ 126..=0xFFFF => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mut mask = [0u8; 4];
        self.random(&mut mask)?;
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame)?;
        self.stream.flush()?;
        Ok(())
    }

    /// One frame: FIN, opcode and the payload, checked as a client must.
    fn frame(&mut self) -> Result<(bool, u8, Vec<u8>), WsError> {
        self.need(2)?;
        let (b0, b1) = (self.buf[0], self.buf[1]);
        let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
        if b0 & 0x70 != 0 {
            return Err(self.broken("reserved bits set (no extension was agreed)"));
        }
        if b1 & 0x80 != 0 {
            return Err(self.broken("a masked frame from the server"));
        }
        let (len, head) = match b1 & 0x7F {
            126 => {
                self.need(4)?;
                (u64::from(u16::from_be_bytes([self.buf[2], self.buf[3]])), 4)
            }
            127 => {
                self.need(10)?;
                let mut n = [0u8; 8];
                n.copy_from_slice(&self.buf[2..10]);
                (u64::from_be_bytes(n), 10)
            }
            n => (u64::from(n), 2),
        };
        if opcode >= OP_CLOSE && (!fin || len > 125) {
            return Err(self.broken("a control frame fragmented or over 125 bytes"));
        }
        if len > self.max_message as u64 {
            self.abandon();
            return Err(WsError::TooBig {
                limit: self.max_message,
            });
        }
        let len = len as usize;
        self.need(head + len)?;
        let payload = self.buf[head..head + len].to_vec();
        self.buf.drain(..head + len);
        Ok((fin, opcode, payload))
    }

    /// At least `n` bytes in the buffer.
    fn need(&mut self, n: usize) -> Result<(), WsError> {
        while self.buf.len() < n {
            if self.fill()? == 0 {
                self.closed = true;
                return Err(WsError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server ended the connection without a close frame",
                )));
            }
        }
        Ok(())
    }

    /// One read into the buffer; 0 at the end of the stream.
    fn fill(&mut self) -> Result<usize, WsError> {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    fn random(&self, out: &mut [u8]) -> Result<(), WsError> {
        self.rng
            .fill(out)
            .map_err(|_| WsError::Io(io::Error::other("no random bytes from the system")))
    }

    /// A protocol error: the connection is closed with 1002 and dropped.
    fn broken(&mut self, what: &str) -> WsError {
        if !self.closed {
            let _ = self.send(OP_CLOSE, &1002u16.to_be_bytes());
        }
        self.abandon();
        WsError::Protocol(what.to_string())
    }

    /// Nothing more is read or sent on this connection.
    fn abandon(&mut self) {
        self.closed = true;
        self.buf.clear();
        let _ = self.tcp.shutdown(std::net::Shutdown::Both);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
#[path = "ws_tests.rs"]
mod tests;
