//! The `http_get` tool: fetch a public web page or API response as text.
//!
//! Decides what may be fetched: `http`/`https` only, and — unless
//! `tools.http_allow_private` is set — only public addresses. The check runs inside
//! ureq's resolver: every address a host name resolves to is checked, and ureq then
//! connects to exactly those addresses, so a DNS answer that changes between a check and
//! the connection (DNS rebinding) cannot slip a private address through. Redirects are
//! followed here, at most [`MAX_REDIRECTS`], each hop going through the same check;
//! proxies from the environment are not used (the proxy, not us, would pick the address).
//!
//! Text comes back as text (HTML reduced to readable text by [`super::html`]), binary
//! bodies as a one-line description; bodies are capped.

use std::fmt;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::files::{clip_bytes, human_size, looks_binary};
use super::html::html_to_text;
use super::ToolOutput;
use crate::cancel::Cancel;
use crate::config::ToolsConfig;

/// Redirects followed before giving up (browsers allow ~20; an API or article rarely
/// needs more than 2, and each hop is another request the user did not see).
pub const MAX_REDIRECTS: usize = 5;

/// An HTML page is read up to this many times the output cap before being reduced to
/// text (markup is most of a page's bytes).
const HTML_READ_FACTOR: usize = 4;

/// Decides whether an address may be connected to: `Err(why)` refuses.
pub type AddressCheck = Arc<dyn Fn(SocketAddr) -> Result<(), String> + Send + Sync>;

/// How a fetch is limited.
#[derive(Clone)]
pub struct FetchOptions {
    /// The whole request, body included.
    pub timeout: Duration,
    /// Bytes of text returned at most.
    pub cap: usize,
    /// The address rule.
    pub check: AddressCheck,
    /// The rule in words, for the refusal message.
    pub rule_hint: &'static str,
}

impl FetchOptions {
    /// The options of the configuration: public addresses only unless
    /// `http_allow_private`.
    pub fn from_config(tools: &ToolsConfig) -> FetchOptions {
        let check: AddressCheck = if tools.http_allow_private {
            Arc::new(|_| Ok(()))
        } else {
            Arc::new(|addr: SocketAddr| match blocked_reason(addr.ip()) {
                Some(why) => Err(why.to_string()),
                None => Ok(()),
            })
        };
        FetchOptions {
            timeout: tools.http_timeout,
            cap: tools.output_cap,
            check,
            rule_hint: "only public addresses may be fetched (set `http_allow_private = true` under [tools] in config.toml to allow private and loopback ones)",
        }
    }
}

/// Why `ip` is not a public address, or `None` when it is.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4_reason(v4);
            }
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
            };
            if v6.is_unspecified() {
                Some("the unspecified address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if s[0] & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else if s[0] & 0xffc0 == 0xfec0 {
                Some("a site-local address")
            } else if s[0] & 0xfe00 == 0xfc00 {
                Some("a unique-local (private) address")
            } else if s[0] & 0xff00 == 0xff00 {
                Some("a multicast address")
            } else if s[..6] == [0; 6] {
                // IPv4-compatible `::a.b.c.d` (deprecated): judged by the IPv4 inside.
                v4_reason(embedded(s[6], s[7]))
            } else if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
                // NAT64 `64:ff9b::a.b.c.d`: the gateway connects to the IPv4 inside.
                v4_reason(embedded(s[6], s[7]))
            } else if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
                // `64:ff9b:1::/48` (RFC 8215): NAT64 prefixes a site runs itself, so
                // the gateway is local and what it reaches is not known from here.
                Some("a local NAT64 address (64:ff9b:1::/48)")
            } else if s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0 {
                // IPv4-translated `::ffff:0:a.b.c.d` (RFC 2765): judged by the IPv4
                // inside, like the mapped form.
                v4_reason(embedded(s[6], s[7]))
            } else if s[0] == 0x2001 && s[1] == 0x0db8 {
                Some("a documentation address (2001:db8::/32)")
            } else if s[0] == 0x0100 && s[1..4] == [0; 3] {
                Some("a discard-only address (100::/64)")
            } else if s[0] == 0x2002 {
                // 6to4 `2002:aabb:ccdd::`: tunnels to the IPv4 inside.
                v4_reason(embedded(s[1], s[2]))
            } else {
                None
            }
        }
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    match (a, b) {
        (0, _) => Some("an unspecified address (0.0.0.0/8)"),
        (10, _) => Some("a private address (10.0.0.0/8)"),
        (100, 64..=127) => Some("a carrier-grade NAT address (100.64.0.0/10)"),
        (127, _) => Some("a loopback address"),
        (169, 254) => Some("a link-local address (169.254.0.0/16, cloud metadata lives here)"),
        (172, 16..=31) => Some("a private address (172.16.0.0/12)"),
        (192, 0) if c == 0 => Some("a reserved address (192.0.0.0/24)"),
        (192, 0) if c == 2 => Some("a documentation address (192.0.2.0/24)"),
        (198, 51) if c == 100 => Some("a documentation address (198.51.100.0/24)"),
        (203, 0) if c == 113 => Some("a documentation address (203.0.113.0/24)"),
        (192, 168) => Some("a private address (192.168.0.0/16)"),
        (198, 18..=19) => Some("a reserved benchmarking address (198.18.0.0/15)"),
        (224..=239, _) => Some("a multicast address"),
        (240..=255, _) => Some("a reserved or broadcast address (240.0.0.0/4)"),
        _ => None,
    }
}

/// The resolver that checks every address before ureq may connect to it.
struct Guard {
    check: AddressCheck,
    refused: Arc<Mutex<Option<String>>>,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Guard")
    }
}

impl Resolver for Guard {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = DefaultResolver::default().resolve(uri, config, timeout)?;
        for addr in addrs.iter() {
            if let Err(why) = (self.check)(*addr) {
                let host = uri.host().unwrap_or("the host");
                let msg = format!("{host} resolves to {} — {why}", addr.ip());
                if let Ok(mut slot) = self.refused.lock() {
                    *slot = Some(msg.clone());
                }
                return Err(ureq::Error::Io(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    msg,
                )));
            }
        }
        Ok(addrs)
    }
}

/// `url` checked: http(s) with a host.
fn check_url(url: &str) -> Result<Uri, String> {
    let trimmed = url.trim();
    let scheme = trimmed.split_once(':').map(|(s, _)| s).filter(|s| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    match scheme.map(str::to_ascii_lowercase).as_deref() {
        Some("http" | "https") => {}
        // `localhost:8080/x` reads as scheme `localhost`: it is a URL without one.
        Some(other)
            if trimmed.contains("://")
                || matches!(other, "file" | "data" | "javascript" | "mailto") =>
        {
            return Err(format!(
                "only http and https URLs can be fetched, not {other}: ({trimmed})"
            ))
        }
        _ => {
            return Err(format!(
                "{trimmed:?} has no scheme; write the full URL, e.g. https://{trimmed}"
            ))
        }
    }
    let uri: Uri = trimmed
        .parse()
        .map_err(|e| format!("{trimmed:?} is not a valid URL ({e})"))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{trimmed:?} has no host name"));
    }
    Ok(uri)
}

/// Where a redirect's `Location` points, from the URL that sent it.
pub fn join_url(base: &Uri, location: &str) -> String {
    let location = location.trim();
    let scheme = base.scheme_str().unwrap_or("https");
    let authority = base.authority().map_or("", |a| a.as_str());
    if location.contains("://") {
        return location.to_string();
    }
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let base_path = base.path();
    let joined_path = if location.starts_with('/') {
        location.to_string()
    } else if location.starts_with('?') {
        format!("{base_path}{location}")
    } else if location.is_empty() || location.starts_with('#') {
        return base.to_string();
    } else {
        let dir = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
        format!("{dir}{location}")
    };
    let (path, query) = match joined_path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (joined_path.as_str(), None),
    };
    // Remove `.` and `..` segments (RFC 3986 §5.2.4).
    let mut segments: Vec<&str> = Vec::new();
    for seg in path.split('/').skip(1) {
        match seg {
            "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    if matches!(path.rsplit('/').next(), Some("." | "..")) {
        segments.push("");
    }
    let mut out = format!("{scheme}://{authority}/{}", segments.join("/"));
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

fn header<'a>(resp: &'a ureq::http::Response<ureq::Body>, name: &str) -> Option<&'a str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

/// What a media type says about the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Html,
    Text,
    Binary,
    Unknown,
}

fn media_of(content_type: &str) -> Media {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime.is_empty() {
        return Media::Unknown;
    }
    if mime == "text/html" || mime == "application/xhtml+xml" {
        return Media::Html;
    }
    let textual = [
        "json",
        "xml",
        "javascript",
        "ecmascript",
        "yaml",
        "toml",
        "csv",
        "x-www-form-urlencoded",
        "sql",
        "markdown",
    ];
    if mime.starts_with("text/") || textual.iter().any(|t| mime.contains(t)) {
        Media::Text
    } else {
        Media::Binary
    }
}

/// Fetches `url`. `max_bytes` may lower the configured cap.
pub fn get(
    url: &str,
    max_bytes: Option<usize>,
    opts: &FetchOptions,
    cancel: &Cancel,
) -> ToolOutput {
    let cap = max_bytes.map_or(opts.cap, |m| m.clamp(1, opts.cap.max(1)));
    let refused = Arc::new(Mutex::new(None));
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(opts.timeout))
        .tls_config(crate::tls::config())
        .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
        .build();
    let agent = ureq::Agent::with_parts(
        config,
        DefaultConnector::default(),
        Guard {
            check: Arc::clone(&opts.check),
            refused: Arc::clone(&refused),
        },
    );

    let original = url.trim().to_string();
    let mut current = original.clone();
    for hop in 0..=MAX_REDIRECTS {
        let uri = match check_url(&current) {
            Ok(u) => u,
            Err(e) if hop == 0 => return ToolOutput::error(e),
            Err(e) => {
                return ToolOutput::error(format!(
                    "{original} redirected to a URL that cannot be fetched: {e}"
                ))
            }
        };
        if cancel.is_cancelled() {
            return ToolOutput::error(format!("cancelled before fetching {current}"));
        }
        let result = agent
            .get(&current)
            .header(
                "Accept",
                "text/html, text/plain, application/json, */*;q=0.5",
            )
            .call();
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                let refusal = refused.lock().ok().and_then(|mut s| s.take());
                return ToolOutput::error(match refusal {
                    Some(why) => format!("refused to fetch {current}: {why}; {}", opts.rule_hint),
                    None => describe_error(&current, &e, opts.timeout),
                });
            }
        };
        let status = resp.status();
        if status.is_redirection() {
            if let Some(location) = header(&resp, "location") {
                if hop == MAX_REDIRECTS {
                    return ToolOutput::error(format!(
                        "{original} redirected more than {MAX_REDIRECTS} times (last to {location}); fetch the final URL directly if you know it"
                    ));
                }
                current = join_url(&uri, location);
                continue;
            }
        }
        return read_response(resp, &original, &current, cap, opts.timeout, cancel);
    }
    ToolOutput::error(format!(
        "{original} redirected more than {MAX_REDIRECTS} times"
    ))
}

fn describe_error(url: &str, e: &ureq::Error, timeout: Duration) -> String {
    match e {
        ureq::Error::Timeout(_) => format!(
            "GET {url} timed out after {} s",
            timeout.as_secs_f64().round()
        ),
        ureq::Error::HostNotFound => format!("GET {url} failed: host not found — check the URL"),
        ureq::Error::ConnectionFailed => {
            format!("GET {url} failed: cannot connect (nothing listening, or a firewall)")
        }
        ureq::Error::Io(io) => format!("GET {url} failed: {io}"),
        other => format!("GET {url} failed: {other}"),
    }
}

fn read_response(
    resp: ureq::http::Response<ureq::Body>,
    original: &str,
    url: &str,
    cap: usize,
    timeout: Duration,
    cancel: &Cancel,
) -> ToolOutput {
    let status = resp.status();
    let content_type = header(&resp, "content-type").unwrap_or("").to_string();
    let declared_len = header(&resp, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
    let media = media_of(&content_type);
    let reason = status.canonical_reason().unwrap_or("");
    let mut head = format!("GET {url} → {} {reason}", status.as_u16());
    if url != original {
        head.push_str(&format!(" (redirected from {original})"));
    }
    let ct_shown = if content_type.is_empty() {
        "no content type".to_string()
    } else {
        content_type.clone()
    };

    if media == Media::Binary {
        let size = declared_len.map_or_else(|| "unknown size".to_string(), human_size);
        let text = format!("{head}\n[binary content: {ct_shown}, {size} — not shown; http_get returns text only]\n");
        return ToolOutput {
            content: text,
            is_error: !status.is_success(),
        };
    }

    let limit = if media == Media::Text {
        cap
    } else {
        cap.saturating_mul(HTML_READ_FACTOR)
    };
    let mut reader = resp.into_body().into_reader();
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut more = false;
    loop {
        if cancel.is_cancelled() {
            return ToolOutput::error(format!("cancelled while reading {url}"));
        }
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = limit.saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk[..n.min(room)]);
                if n > room {
                    more = true;
                    break;
                }
            }
            Err(e) => {
                // The HTTP client's own timeout comes wrapped in an io::Error.
                let timed_out = e.kind() == io::ErrorKind::TimedOut
                    || e.get_ref()
                        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
                        .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
                let why = if timed_out {
                    format!("timed out after {} s", timeout.as_secs_f64().round())
                } else {
                    e.to_string()
                };
                return ToolOutput::error(format!("GET {url}: reading the body failed: {why}"));
            }
        }
    }
    if media == Media::Unknown && looks_binary(&bytes) {
        let text = format!(
            "{head}\n[binary content ({ct_shown}), {}{} — not shown; http_get returns text only]\n",
            human_size(bytes.len() as u64),
            if more { " or more" } else { "" }
        );
        return ToolOutput {
            content: text,
            is_error: !status.is_success(),
        };
    }
    let raw = String::from_utf8_lossy(&bytes);
    let sniffed_html = media == Media::Unknown && {
        let start = raw
            .trim_start()
            .get(..15)
            .unwrap_or("")
            .to_ascii_lowercase();
        start.starts_with("<!doctype html") || start.starts_with("<html")
    };
    let mut text = if media == Media::Html || sniffed_html {
        html_to_text(&raw)
    } else {
        raw.into_owned()
    };
    if text.len() > cap {
        text = clip_bytes(&text, cap).to_string();
        more = true;
    }
    let charset = content_type.to_ascii_lowercase().split(';').find_map(|p| {
        p.trim()
            .strip_prefix("charset=")
            .map(|c| c.trim_matches('"').to_string())
    });
    let mut out = format!("{head}\nContent-Type: {ct_shown}\n");
    if let Some(cs) = charset.filter(|c| c != "utf-8" && c != "utf8" && c != "us-ascii") {
        out.push_str(&format!(
            "[the page is in {cs}; it was read as UTF-8, so some characters may be garbled]\n"
        ));
    }
    out.push('\n');
    out.push_str(&text);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if more {
        out.push_str(&format!("[truncated at {cap} bytes; the page is longer]\n"));
    }
    if status.is_success() || status.is_redirection() || status.is_informational() {
        ToolOutput::ok(out)
    } else {
        ToolOutput::error(out)
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
