//! One keep-alive HTTP/1.1 connection to `evolve serve` on loopback, and response heads.
//! Every request carries the server's token ([`authorization`]), as the CLI's do.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

/// The token of each running server, by port (a bench may run two at once).
static TOKENS: Mutex<Vec<(u16, String)>> = Mutex::new(Vec::new());

/// Records the token of the server on `port` (its `serve.token`).
pub fn register(port: u16, token: String) {
    let mut tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
    tokens.retain(|(p, _)| *p != port);
    tokens.push((port, token));
}

/// `Bearer TOKEN` for the server on `port`.
pub fn authorization(port: u16) -> String {
    let tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
    let token = tokens
        .iter()
        .find(|(p, _)| *p == port)
        .map(|(_, t)| t.as_str())
        .unwrap_or_default();
    format!("Bearer {token}")
}

/// One keep-alive HTTP/1.1 connection; answers must carry a Content-Length.
pub struct Conn {
    pub port: u16,
    pub out: TcpStream,
    pub reader: BufReader<TcpStream>,
    /// The last body read by [`Conn::get`], kept so the load loops do not allocate.
    pub body: Vec<u8>,
    /// The server said `Connection: close`: the next request reconnects.
    closed: bool,
}

impl Conn {
    pub fn open(port: u16) -> io::Result<Conn> {
        let out = TcpStream::connect(("127.0.0.1", port))?;
        out.set_nodelay(true)?;
        out.set_read_timeout(Some(Duration::from_secs(60)))?;
        let reader = BufReader::with_capacity(64 * 1024, out.try_clone()?);
        Ok(Conn {
            port,
            out,
            reader,
            body: Vec::new(),
            closed: false,
        })
    }

    /// `GET path`: the status and the body's length (the body is in `self.body`).
    pub fn get(&mut self, path: &str) -> io::Result<(u16, usize)> {
        if self.closed {
            *self = Conn::open(self.port)?;
        }
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {}\r\n\r\n",
            self.port,
            authorization(self.port)
        );
        self.out.write_all(request.as_bytes())?;
        let head = read_head(&mut self.reader)?;
        if head.header("transfer-encoding").is_some() {
            return Err(io::Error::other("a chunked answer to a GET"));
        }
        let length = head.content_length()?;
        self.body.resize(length, 0);
        self.reader.read_exact(&mut self.body)?;
        self.closed = head.closes();
        Ok((head.status, length))
    }

    /// `method path` with a JSON body: the status and the body.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> io::Result<(u16, String)> {
        if self.closed {
            *self = Conn::open(self.port)?;
        }
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {}\r\n",
            self.port,
            authorization(self.port)
        );
        if method != "GET" {
            request.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        self.out.write_all(request.as_bytes())?;
        let head = read_head(&mut self.reader)?;
        let length = head.content_length()?;
        self.closed = head.closes();
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        Ok((head.status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// A response head; header names in lower case.
pub struct Head {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl Head {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> io::Result<usize> {
        self.header("content-length")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| io::Error::other("no Content-Length"))
    }

    /// The server said `Connection: close`.
    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
    }
}

pub fn read_head(reader: &mut impl BufRead) -> io::Result<Head> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("not a status line: {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the head ended early",
            ));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((n, v)) = l.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    Ok(Head { status, headers })
}
