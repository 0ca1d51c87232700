//! A request head, parsed from bytes (httparse) and checked against what this server
//! accepts. Pure: it sees a buffer, not a socket, so it is the same whether the poller
//! or a worker read the bytes.
//!
//! Refused, with a 4xx and never a 5xx: heads over 16 KiB or with over 100 headers
//! (431), malformed heads (400), HTTP other than 1.0/1.1 (505), no or several `Host` in
//! HTTP/1.1, several `Host`, `Authorization` or `Cookie` in any (400), chunked bodies (411), a `Content-Length` that is not digits or
//! disagrees with another (400), a body over the limit (413, known from the head alone).

/// The largest request head (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;
/// The most headers in one request.
const MAX_HEADERS: usize = 100;

/// A request head that passed every check.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// The path, still percent-encoded.
    pub path: String,
    /// The query string without `?` (may be empty).
    pub query: String,
    /// Header names in lower case, values trimmed, in order.
    pub headers: Vec<(String, String)>,
    pub http10: bool,
    /// The client wants the connection kept open after the answer.
    pub keep_alive: bool,
    /// The body's length (0 without `Content-Length`).
    pub length: usize,
    /// `Expect: 100-continue`.
    pub expects_continue: bool,
}

/// What the bytes so far hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole head yet.
    Partial,
    /// A head, and how many bytes of the buffer it took.
    Complete(Head, usize),
    /// A broken head: answer with this status and message, then close.
    Bad(u16, &'static str),
}

/// Where a head ends in `buf` could be, looking only at bytes from `from` on (minus the
/// three before, which may start the blank line): `true` when a blank line is there.
/// Keeps a head trickled a byte at a time from being parsed again at every byte.
pub fn may_end(buf: &[u8], from: usize) -> bool {
    let start = from.saturating_sub(3);
    buf[start..]
        .windows(2)
        .any(|w| w == b"\n\n" || w == b"\n\r")
}

/// Parses the head at the start of `buf`.
pub fn parse(buf: &[u8], max_body: usize) -> Parsed {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let taken = match req.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Parsed::Bad(431, "the request head is over 16 KiB")
        }
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Ok(httparse::Status::Complete(n)) => n,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad(431, "too many headers"),
        Err(httparse::Error::Version) if names_another_http(buf) => {
            return Parsed::Bad(505, "only HTTP/1.0 and 1.1 are served")
        }
        Err(httparse::Error::HeaderName) => return Parsed::Bad(400, "malformed header name"),
        Err(httparse::Error::HeaderValue | httparse::Error::NewLine) => {
            return Parsed::Bad(400, "malformed header line")
        }
        Err(_) => return Parsed::Bad(400, "malformed request line"),
    };
    if taken > MAX_HEAD {
        return Parsed::Bad(431, "the request head is over 16 KiB");
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Parsed::Bad(400, "malformed request line");
    };
    let http10 = version == 0;
    if !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Parsed::Bad(400, "malformed request method");
    }
    if !target.starts_with('/') {
        return Parsed::Bad(400, "the request target must be a path");
    }
    let mut headers = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let Ok(value) = std::str::from_utf8(h.value) else {
            return Parsed::Bad(400, "the request head is not valid UTF-8");
        };
        headers.push((h.name.to_ascii_lowercase(), value.trim().to_string()));
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
        return Parsed::Bad(400, "the request must have one Host header");
    }
    // Who is asking is one answer: two credentials would let the check and a proxy in
    // front read different ones (a browser sends one `Cookie` header over HTTP/1.1,
    // RFC 6265 §5.4).
    for name in ["authorization", "cookie"] {
        if all(name).len() > 1 {
            return Parsed::Bad(400, "the request must not repeat Authorization or Cookie");
        }
    }
    let connection = all("connection").join(",").to_ascii_lowercase();
    let keep_alive = if connection.contains("close") {
        false
    } else {
        !http10 || connection.contains("keep-alive")
    };
    if !all("transfer-encoding").is_empty() {
        return Parsed::Bad(
            411,
            "chunked request bodies are not accepted: send Content-Length",
        );
    }
    // RFC 9112 §6.3: digits only, and several differing values are an error (they
    // would let a proxy and this server disagree on where the next request starts).
    let mut length = None;
    for value in all("content-length") {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Parsed::Bad(400, "Content-Length is not a number");
        }
        let Ok(n) = value.parse::<usize>() else {
            return Parsed::Bad(413, "the request body is too large");
        };
        if length.is_some_and(|l| l != n) {
            return Parsed::Bad(400, "conflicting Content-Length headers");
        }
        length = Some(n);
    }
    let length = length.unwrap_or(0);
    if length > max_body {
        return Parsed::Bad(413, "the request body is too large");
    }
    let expects_continue = all("expect")
        .iter()
        .any(|e| e.eq_ignore_ascii_case("100-continue"));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Parsed::Complete(
        Head {
            method: method.to_string(),
            path: path.to_string(),
            query: query.to_string(),
            headers,
            http10,
            keep_alive,
            length,
            expects_continue,
        },
        taken,
    )
}

/// The request line names a version of HTTP, just not one served (`HTTP/2.0`): 505
/// rather than 400.
fn names_another_http(buf: &[u8]) -> bool {
    let line = buf
        .split(|b| *b == b'\n')
        .find(|l| !l.is_empty() && *l != b"\r")
        .unwrap_or_default();
    line.split(|b| *b == b' ')
        .nth(2)
        .is_some_and(|v| v.starts_with(b"HTTP/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(raw: &[u8]) -> u16 {
        match parse(raw, 1000) {
            Parsed::Partial => 0,
            Parsed::Complete(..) => 200,
            Parsed::Bad(s, _) => s,
        }
    }

    #[test]
    fn heads_are_accepted_or_refused_with_a_4xx() {
        let big = format!(
            "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD)
        );
        let many: String = (0..101).map(|i| format!("X-{i}: y\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n");
        for (raw, want) in [
            (&b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..], 200),
            (b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 200),
            (b"GET / HTTP/1.1\nHost: a\n\n", 200),
            (b"GET / HTTP/1.0\r\n\r\n", 200),
            (b"GET / HTTP/1.1\r\nHost: a\r\n", 0),
            (b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: aaa", 0),
            (b"NONSENSE\r\n\r\n", 400),
            (b"get / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
            (b"GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400),
            (b"GET / HTTP/1.0\r\nHost: a\r\nHOST: b\r\n\r\n", 400),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\nauthorization: Bearer y\r\n\r\n",
                400,
            ),
            (b"GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1; b=2\r\n\r\n", 200),
            (b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: \xff\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
                411,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +2\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n",
                200,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n",
                413,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                413,
            ),
            (big.as_bytes(), 431),
            (many.as_bytes(), 431),
        ] {
            assert_eq!(status(raw), want, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn a_head_says_what_follows_it() {
        let raw = b"POST /v1/x?a=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\
                    Expect: 100-continue\r\nConnection: close\r\n\r\nabcGET";
        let Parsed::Complete(head, taken) = parse(raw, 1000) else {
            panic!("not parsed")
        };
        assert_eq!(&raw[taken..], b"abcGET");
        assert_eq!((head.path.as_str(), head.query.as_str()), ("/v1/x", "a=1"));
        assert_eq!(head.length, 3);
        assert!(head.expects_continue && !head.keep_alive && !head.http10);
        let Parsed::Complete(head, _) =
            parse(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0)
        else {
            panic!("not parsed")
        };
        assert!(head.http10 && head.keep_alive);
    }

    /// The end of a head is noticed however the bytes are cut into reads, as the
    /// connection scans them (from where it stopped, each read): otherwise a head would
    /// wait for its deadline.
    #[test]
    fn the_end_of_a_head_is_seen_in_reads_of_any_size() {
        for raw in [
            &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            b"GET / HTTP/1.1\nHost: a\n\n",
            b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nab",
        ] {
            for size in 1..=raw.len() {
                let (mut buf, mut scanned, mut seen) = (Vec::new(), 0, false);
                for piece in raw.chunks(size) {
                    buf.extend_from_slice(piece);
                    if may_end(&buf, scanned) && matches!(parse(&buf, 10), Parsed::Complete(..)) {
                        seen = true;
                        break;
                    }
                    scanned = buf.len();
                }
                assert!(
                    seen,
                    "{:?} in reads of {size}",
                    String::from_utf8_lossy(raw)
                );
            }
        }
    }

    #[test]
    fn only_a_blank_line_is_worth_parsing_for() {
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert!(may_end(raw, 0));
        assert!(may_end(raw, raw.len() - 1));
        assert!(!may_end(&raw[..raw.len() - 3], 0));
        assert!(!may_end(b"GET / HTTP/1.1\r\nHost: a\r\nX: aaaa", 30));
        assert!(may_end(b"GET /\n\n", 6));
    }
}
