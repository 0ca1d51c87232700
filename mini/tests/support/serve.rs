//! `evolve serve` for end-to-end tests: started on a free port against the world's fake
//! model, and a raw HTTP/1.1 client that can also send what a well-behaved client never
//! would (malformed heads, oversized bodies, foreign Origins). The client signs its
//! requests with the server's token (`serve.token`) as the CLI does; `anonymous` sends
//! one without, as another account of the machine would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::World;

/// A running `evolve serve`.
pub struct Server {
    pub child: Child,
    pub port: u16,
    /// Lines of stderr after the start line.
    pub stderr: mpsc::Receiver<String>,
    /// The start lines (up to the "serving on" line).
    pub banner: Vec<String>,
    /// The token every request but the login page's carries.
    pub token: String,
}

impl Server {
    /// `evolve serve --port 0 ARGS…`, waiting for it to listen.
    pub fn start(w: &World, args: &[&str]) -> Server {
        let mut all = vec!["serve", "--port", "0"];
        all.extend_from_slice(args);
        let mut child = w
            .command(&all)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn evolve serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut banner = Vec::new();
        let port = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("serve did not start; it said: {banner:#?}"));
            banner.push(line.clone());
            if let Some(rest) = line.split(" serving on http://").nth(1) {
                let addr = rest.split_whitespace().next().unwrap_or("");
                let port = addr.rsplit(':').next().unwrap_or("");
                break port.parse::<u16>().expect("the port in the banner");
            }
        };
        let token = std::fs::read_to_string(w.home.join("serve.token"))
            .expect("serve wrote its token")
            .trim()
            .to_string();
        Server {
            child,
            port,
            stderr: rx,
            banner,
            token,
        }
    }

    /// Where and how to reach it from any thread.
    pub fn api(&self) -> Api {
        Api {
            port: self.port,
            token: Box::leak(self.token.clone().into_boxed_str()),
        }
    }

    /// `Authorization: Bearer TOKEN`.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A request with the token; `headers` are added to `Host`, `Content-Length` and
    /// `Authorization` (left out when `headers` give their own `Authorization` or
    /// `Cookie`).
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
        let own = headers.iter().any(|(k, _)| {
            k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("cookie")
        });
        let bearer = self.bearer();
        let mut all: Vec<(&str, &str)> = headers.to_vec();
        if !own {
            all.push(("Authorization", &bearer));
        }
        self.anonymous(method, path, &all, body)
    }

    /// A request without the token (unless `headers` carry one).
    pub fn anonymous(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Resp {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port
        );
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut raw = head.into_bytes();
        raw.extend_from_slice(body.as_bytes());
        self.raw(&raw)
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], "")
    }

    pub fn post(&self, path: &str, body: &str) -> Resp {
        self.request("POST", path, &[("Content-Type", "application/json")], body)
    }

    /// Sends bytes as they are and reads the whole answer (the server closes).
    pub fn raw(&self, bytes: &[u8]) -> Resp {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to serve");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let _ = s.write_all(bytes);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        Resp::parse(&out)
    }

    /// SIGTERM, then the exit code.
    pub fn stop(mut self) -> Option<i32> {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..300 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

/// A running server's port and token, copied into threads.
#[derive(Debug, Clone, Copy)]
pub struct Api {
    pub port: u16,
    pub token: &'static str,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed response (chunked bodies decoded).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn parse(raw: &[u8]) -> Resp {
        let text = String::from_utf8_lossy(raw).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return Resp {
                status: 0,
                headers: Vec::new(),
                body: text,
            };
        };
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_string()
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// The OpenAI-shaped error's message (panics when the body is not one).
    pub fn error_message(&self) -> String {
        let v = self.json();
        v["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("not an error body: {v}"))
            .to_string()
    }

    /// SSE events as (event name or "", data).
    pub fn events(&self) -> Vec<(String, String)> {
        self.body
            .split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|e| {
                let mut name = String::new();
                let mut data = String::new();
                for line in e.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_string();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                (name, data)
            })
            .collect()
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A `/v1/chat/completions` body with `text` as the last user message and `extra`
/// fields (`stream`, `session`, `evolve_events` …).
pub fn chat_body(text: &str, extra: serde_json::Value) -> String {
    let mut v = serde_json::json!({"model": "evolve", "messages": [
        {"role": "system", "content": "ignored: the session has its own"},
        {"role": "user", "content": text}]});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v.to_string()
}

/// The events of a streamed turn, `(event name, data)` as they arrive.
pub fn stream_events(s: &Server, body: &str) -> mpsc::Receiver<(String, serde_json::Value)> {
    let mut sock = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    write!(
        sock,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.bearer(),
        body.len()
    )
    .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut name = String::new();
        for line in BufReader::new(sock).lines().map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("event: ") {
                name = n.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                let v = serde_json::from_str(d).unwrap_or(serde_json::Value::String(d.to_string()));
                if tx.send((std::mem::take(&mut name), v)).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// The next event named `want` (others are skipped); panics after 30 s without one.
#[track_caller]
pub fn next_event(
    rx: &mpsc::Receiver<(String, serde_json::Value)>,
    want: &str,
) -> serde_json::Value {
    loop {
        let Ok((name, v)) = rx.recv_timeout(Duration::from_secs(30)) else {
            panic!("no {want} event");
        };
        if name == want {
            return v;
        }
    }
}

/// A streamed UI turn (with Evolve's events) that stops at a permission question:
/// the event reader, the session and the question.
#[track_caller]
pub fn asking(
    s: &Server,
    text: &str,
    extra: serde_json::Value,
) -> (
    mpsc::Receiver<(String, serde_json::Value)>,
    String,
    serde_json::Value,
) {
    let mut body = serde_json::json!({"stream": true, "evolve_events": true});
    if let (Some(o), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    let rx = stream_events(s, &chat_body(text, body));
    let sid = next_event(&rx, "evolve.session")["session"]
        .as_str()
        .unwrap()
        .to_string();
    let ask = next_event(&rx, "evolve.permission");
    (rx, sid, ask)
}
