//! Writing answers: a complete response with its length, a streamed one chunked (one
//! chunk per event, flushed at once; raw to the close for HTTP/1.0), and the short
//! answers the poller sends without waiting ([`render`]).

use std::borrow::Cow;
use std::io::{self, Write};
use std::net::TcpStream;

use super::{Body, Response};

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

    /// Waits up to `timeout` for the client to close the connection (what it sends
    /// meanwhile is read and dropped): `true` once it has closed or the connection
    /// broke. For a response that lasts as long as its client stays (a store lend).
    pub fn closed_within(&mut self, timeout: std::time::Duration) -> bool {
        if self.failed {
            return true;
        }
        if !super::sys::wait_readable(self.out, timeout) {
            return false;
        }
        let mut sink = [0u8; 512];
        match super::sys::recv_now(self.out, &mut sink) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ),
        }
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

fn write_head(
    out: &mut impl Write,
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

/// A complete answer after which the connection closes, as bytes (a streamed body is
/// not sent: the answers rendered this way are refusals).
pub fn render(response: Response<'_>) -> Vec<u8> {
    let body: &[u8] = match &response.body {
        Body::Bytes(bytes) => bytes,
        Body::Stream(_) => &[],
    };
    let mut out = Vec::with_capacity(256 + body.len());
    let _ = write_head(
        &mut out,
        response.status,
        &response.headers,
        Some(body.len()),
        false,
    );
    out.extend_from_slice(body);
    out
}

/// Writes a response. A stream is chunked, except to an HTTP/1.0 client, which reads
/// it to the close.
pub fn write_response(
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
