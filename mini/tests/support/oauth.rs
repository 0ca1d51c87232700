//! A protected MCP server and its OAuth authorization server on one loopback port, for
//! the login tests, plus the browser: a client that opens the authorization URL and
//! follows its redirect to evolve's listener, as a person clicking "Allow" would.
//!
//! The authorization server checks what a real one checks — the client and its
//! registered redirect URI, PKCE S256 (the verifier against the challenge), the
//! `resource`, the `state` passed back — and issues short-lived tokens when told to;
//! refresh tokens rotate; everything can be revoked. The MCP endpoint answers 401 with
//! `WWW-Authenticate: Bearer resource_metadata=…` without a valid token, and 403
//! `insufficient_scope` to a tool call its token's scopes do not cover. Every token
//! issued is remembered, so tests can look for them where they must never be.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

/// What the authorization server's metadata document is.
#[derive(Clone, Debug, PartialEq)]
pub enum Metadata {
    Good,
    /// Answers this status.
    Status(u16),
    /// Not JSON.
    Broken,
    /// Without `code_challenge_methods_supported`.
    NoPkce,
    /// Another issuer.
    WrongIssuer,
}

/// What a test sets.
#[derive(Clone, Debug)]
pub struct Knobs {
    /// Lifetime of access tokens.
    pub expires_in: i64,
    /// Say it (`expires_in`) in token answers.
    pub tell_expiry: bool,
    /// Issue refresh tokens.
    pub refresh: bool,
    pub metadata: Metadata,
    /// The `resource` the protected resource metadata names (default: the endpoint).
    pub prm_resource: Option<String>,
    /// `scopes_supported` of the protected resource metadata.
    pub scopes_supported: Vec<String>,
    /// A tool call needs this scope too (403 insufficient_scope without it).
    pub call_scope: Option<String>,
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs {
            expires_in: 3600,
            tell_expiry: true,
            refresh: true,
            metadata: Metadata::Good,
            prm_resource: None,
            scopes_supported: vec!["tools:read".into()],
            call_scope: None,
        }
    }
}

struct Code {
    client: String,
    redirect: String,
    challenge: String,
    scope: String,
    resource: String,
}

struct Access {
    scope: String,
    until: Instant,
}

#[derive(Default)]
struct State {
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, Code>,
    access: HashMap<String, Access>,
    refresh: HashMap<String, (String, String)>,
    /// What happened, in order: `register`, `authorize scope=…`, `token
    /// authorization_code`, `token refresh_token`, `mcp 401`, `mcp tools/list` …
    log: Vec<String>,
    /// Every token and secret handed out.
    issued: Vec<String>,
    n: u64,
}

impl State {
    fn next(&mut self, what: &str) -> String {
        self.n += 1;
        let v = format!(
            "{what}-{}-{:x}",
            self.n,
            std::process::id() as u64 * 7919 + self.n
        );
        self.issued.push(v.clone());
        v
    }
}

/// The servers, running until dropped with the test.
pub struct OAuthServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
    knobs: Arc<Mutex<Knobs>>,
}

impl OAuthServer {
    pub fn start(knobs: Knobs) -> OAuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let knobs = Arc::new(Mutex::new(knobs));
        let (s, k) = (state.clone(), knobs.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().map_while(Result::ok) {
                let (s, k) = (s.clone(), k.clone());
                std::thread::spawn(move || serve(conn, port, &s, &k));
            }
        });
        OAuthServer { port, state, knobs }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base())
    }

    pub fn set(&self, change: impl FnOnce(&mut Knobs)) {
        change(&mut self.knobs.lock().unwrap());
    }

    /// What happened so far.
    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    /// How many log lines start with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.log().iter().filter(|l| l.starts_with(prefix)).count()
    }

    /// Every token and client secret issued.
    pub fn issued(&self) -> Vec<String> {
        self.state.lock().unwrap().issued.clone()
    }

    /// Revokes every access and refresh token.
    pub fn revoke_all(&self) {
        let mut s = self.state.lock().unwrap();
        s.access.clear();
        s.refresh.clear();
    }
}

/// One request as read.
struct Req {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn form(&self) -> HashMap<String, String> {
        pairs(&String::from_utf8_lossy(&self.body))
    }
}

fn pairs(text: &str) -> HashMap<String, String> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn read_request(conn: &mut TcpStream) -> Option<Req> {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = conn.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut chunk).ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&chunk[..n]);
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Req {
        method,
        path: path.to_string(),
        query: pairs(query),
        headers,
        body,
    })
}

fn respond(conn: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &str) {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    let _ = conn.write_all(out.as_bytes());
}

fn json_headers() -> Vec<(&'static str, String)> {
    vec![("content-type", "application/json".to_string())]
}

fn serve(mut conn: TcpStream, port: u16, state: &Mutex<State>, knobs: &Mutex<Knobs>) {
    let Some(req) = read_request(&mut conn) else {
        return;
    };
    let base = format!("http://127.0.0.1:{port}");
    let k = knobs.lock().unwrap().clone();
    let (status, headers, body) = route(&req, &base, &k, state);
    respond(&mut conn, status, &headers, &body);
}

type Answer = (u16, Vec<(&'static str, String)>, String);

fn route(req: &Req, base: &str, k: &Knobs, state: &Mutex<State>) -> Answer {
    let prm_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => (
            200,
            json_headers(),
            json!({
                "resource": k.prm_resource.clone().unwrap_or_else(|| format!("{base}/mcp")),
                "authorization_servers": [base],
                "scopes_supported": k.scopes_supported,
            })
            .to_string(),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => {
            let mut doc = json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
            });
            match &k.metadata {
                Metadata::Good => {}
                Metadata::Status(s) => return (*s, vec![], "server trouble".into()),
                Metadata::Broken => return (200, json_headers(), "{\"issuer\": ".into()),
                Metadata::NoPkce => {
                    doc.as_object_mut()
                        .unwrap()
                        .remove("code_challenge_methods_supported");
                }
                Metadata::WrongIssuer => doc["issuer"] = json!("https://evil.example.com"),
            }
            (200, json_headers(), doc.to_string())
        }
        ("POST", "/register") => {
            let doc: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            let uris: Vec<String> = doc["redirect_uris"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if uris.is_empty() {
                return (
                    400,
                    json_headers(),
                    json!({"error": "invalid_redirect_uri"}).to_string(),
                );
            }
            let mut s = state.lock().unwrap();
            let id = s.next("client");
            s.clients.insert(id.clone(), uris.clone());
            s.log
                .push(format!("register grant_types={}", doc["grant_types"]));
            (
                201,
                json_headers(),
                json!({"client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none"})
                    .to_string(),
            )
        }
        ("GET", "/authorize") => {
            let q = &req.query;
            let get = |key: &str| q.get(key).cloned().unwrap_or_default();
            let mut s = state.lock().unwrap();
            s.log.push(format!(
                "authorize scope={} resource={}",
                get("scope"),
                get("resource")
            ));
            let client_ok = s
                .clients
                .get(&get("client_id"))
                .is_some_and(|uris| uris.contains(&get("redirect_uri")));
            if !client_ok {
                return (400, vec![], "unknown client or redirect_uri".into());
            }
            if get("code_challenge_method") != "S256" || get("code_challenge").len() != 43 {
                return (400, vec![], "PKCE S256 required".into());
            }
            if get("resource") != format!("{base}/mcp") {
                return (400, vec![], "wrong resource".into());
            }
            let code = s.next("code");
            s.codes.insert(
                code.clone(),
                Code {
                    client: get("client_id"),
                    redirect: get("redirect_uri"),
                    challenge: get("code_challenge"),
                    scope: get("scope"),
                    resource: get("resource"),
                },
            );
            let back = format!(
                "{}?code={code}&state={}&iss={}",
                get("redirect_uri"),
                enc(&get("state")),
                enc(base)
            );
            (302, vec![("location", back)], String::new())
        }
        ("POST", "/token") => token(req, base, k, state),
        ("POST", "/mcp") => mcp(req, k, state, &prm_url),
        ("GET" | "DELETE", "/mcp") => (405, vec![], String::new()),
        _ => (404, vec![], "not found".into()),
    }
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn token(req: &Req, base: &str, k: &Knobs, state: &Mutex<State>) -> Answer {
    let f = req.form();
    let get = |key: &str| f.get(key).cloned().unwrap_or_default();
    let refused = |why: &str| {
        (
            400,
            json_headers(),
            json!({"error": "invalid_grant", "error_description": why}).to_string(),
        )
    };
    let mut s = state.lock().unwrap();
    s.log.push(format!("token {}", get("grant_type")));
    if get("resource") != format!("{base}/mcp") {
        return refused("wrong resource");
    }
    let scope = match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(code) = s.codes.remove(&get("code")) else {
                return refused("unknown code");
            };
            let verifier = get("code_verifier");
            let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(
                &ring::digest::SHA256,
                verifier.as_bytes(),
            ));
            if code.client != get("client_id")
                || code.redirect != get("redirect_uri")
                || code.challenge != challenge
                || code.resource != get("resource")
            {
                return refused("the code does not match the client, redirect URI or verifier");
            }
            code.scope
        }
        "refresh_token" => match s.refresh.remove(&get("refresh_token")) {
            Some((client, scope)) if client == get("client_id") => scope,
            _ => return refused("unknown refresh token"),
        },
        _ => {
            return (
                400,
                json_headers(),
                json!({"error": "unsupported_grant_type"}).to_string(),
            )
        }
    };
    let access = s.next("at");
    s.access.insert(
        access.clone(),
        Access {
            scope: scope.clone(),
            until: Instant::now() + Duration::from_secs(k.expires_in.max(0) as u64),
        },
    );
    let mut doc = json!({"access_token": access, "token_type": "Bearer", "scope": scope});
    if k.tell_expiry {
        doc["expires_in"] = json!(k.expires_in);
    }
    if k.refresh {
        let refresh = s.next("rt");
        s.refresh.insert(refresh.clone(), (get("client_id"), scope));
        doc["refresh_token"] = json!(refresh);
    }
    (200, json_headers(), doc.to_string())
}

fn mcp(req: &Req, k: &Knobs, state: &Mutex<State>, prm_url: &str) -> Answer {
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let method = msg["method"].as_str().unwrap_or_default().to_string();
    let token = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_string();
    let mut s = state.lock().unwrap();
    let granted = s
        .access
        .get(&token)
        .filter(|a| a.until > Instant::now())
        .map(|a| a.scope.clone());
    let Some(granted) = granted else {
        s.log.push(format!("mcp 401 {method}"));
        let mut challenge = format!("Bearer resource_metadata=\"{prm_url}\"");
        if !token.is_empty() {
            challenge.push_str(", error=\"invalid_token\"");
        }
        return (
            401,
            vec![
                ("www-authenticate", challenge),
                ("content-type", "application/json".into()),
            ],
            json!({"error": "invalid_token"}).to_string(),
        );
    };
    s.log.push(format!("mcp {method}"));
    if method == "tools/call" {
        if let Some(needed) = &k.call_scope {
            if !granted.split(' ').any(|g| g == needed) {
                let all = format!("{granted} {needed}").trim().to_string();
                return (
                    403,
                    vec![(
                        "www-authenticate",
                        format!("Bearer error=\"insufficient_scope\", scope=\"{all}\", resource_metadata=\"{prm_url}\""),
                    )],
                    json!({"error": "insufficient_scope"}).to_string(),
                );
            }
        }
    }
    let Some(id) = msg.get("id").cloned() else {
        return (202, vec![], String::new());
    };
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says which scopes the caller's token has.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": format!("scopes: {granted}")}]}),
        _ => {
            return (
                200,
                json_headers(),
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})
                    .to_string(),
            )
        }
    };
    (
        200,
        json_headers(),
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    )
}

/// What the browser ended on.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub body: String,
    /// The URLs visited, in order.
    pub visited: Vec<String>,
}

/// Opens `url` as a browser would and follows redirects (http only, 10 at most).
pub fn browse(url: &str) -> Page {
    let mut visited = Vec::new();
    let mut url = url.to_string();
    for _ in 0..10 {
        visited.push(url.clone());
        let rest = url.strip_prefix("http://").expect("an http URL");
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let mut conn = TcpStream::connect(host).expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            conn,
            "GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        let _ = conn.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let location = head
            .lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
            })
            .map(|(_, v)| v.trim().to_string());
        match (status, location) {
            (301..=303 | 307 | 308, Some(next)) => url = next,
            _ => {
                return Page {
                    status,
                    body: body.to_string(),
                    visited,
                }
            }
        }
    }
    panic!("too many redirects: {visited:?}");
}
