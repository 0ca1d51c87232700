//! What every loopback fake of a chat platform does the same way: a request read off
//! the connection ([`Request`]), an answer written ([`reply`]), and the server side of
//! a WebSocket ([`accept_websocket`], [`read_frame`], [`write_frame`]).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use base64::Engine as _;

/// A request's head, and the reader its body (or the WebSocket after it) comes from.
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    pub reader: BufReader<TcpStream>,
}

impl Request {
    /// Reads a request's head off `conn`; `None` when the client went away.
    pub fn read(conn: &TcpStream) -> Option<Request> {
        let mut reader = BufReader::new(conn.try_clone().ok()?);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        Some(Request {
            method,
            path,
            headers,
            reader,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The path without its query.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// The body (`Content-Length` bytes); `None` when it is cut short.
    pub fn body(&mut self) -> Option<Vec<u8>> {
        let length = self
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body).ok()?;
        Some(body)
    }
}

/// Writes a whole answer and closes the exchange (`Connection: close`).
pub fn reply(conn: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
}

/// Answers the WebSocket handshake of `req` (RFC 6455: the key and the GUID, SHA-1,
/// base64); `false` when the client went away.
pub fn accept_websocket(conn: &mut TcpStream, req: &Request) -> bool {
    let key = req.header("sec-websocket-key").unwrap_or("");
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
    );
    let accept = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).is_ok()
}

/// One frame from the client (unmasked): its opcode and payload.
pub fn read_frame(r: &mut impl Read) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).ok()?;
    let opcode = head[0] & 0x0f;
    let masked = head[1] & 0x80 != 0;
    let mut len = u64::from(head[1] & 0x7f);
    if len == 126 {
        let mut b = [0u8; 2];
        r.read_exact(&mut b).ok()?;
        len = u64::from(u16::from_be_bytes(b));
    } else if len == 127 {
        let mut b = [0u8; 8];
        r.read_exact(&mut b).ok()?;
        len = u64::from_be_bytes(b);
    }
    let mut mask = [0u8; 4];
    if masked {
        r.read_exact(&mut mask).ok()?;
    }
    let mut data = vec![0u8; usize::try_from(len).ok()?];
    r.read_exact(&mut data).ok()?;
    if masked {
        for (i, b) in data.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
    }
    Some((opcode, data))
}

/// One unmasked frame to the client, whole (FIN set).
pub fn write_frame(w: &mut TcpStream, opcode: u8, data: &[u8]) -> std::io::Result<()> {
    let mut out = vec![0x80 | opcode];
    if data.len() < 126 {
        out.push(data.len() as u8);
    } else if data.len() < 65536 {
        out.push(126);
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    }
    out.extend_from_slice(data);
    w.write_all(&out)
}
