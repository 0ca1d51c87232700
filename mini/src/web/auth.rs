//! Who may use `evolve serve`, decided per request.
//!
//! - Every request but the login page and what draws it (`/login`, `/static/login.js`,
//!   `/static/app.css`, `/favicon.ico`) and `/health` carries the token, whatever the
//!   bind: `Authorization: Bearer TOKEN` for programs (the OpenAI-compatible routes
//!   take it as their API key), the HttpOnly `evolve_token` cookie for the browser. The
//!   token is generated on first use and kept in `$EVOLVE_HOME/serve.token` (mode 0600):
//!   another account on this machine sees the port open and gets 401; the CLI of the
//!   same user reads the file. A token in a query string is never read.
//! - The browser signs in once with the link `serve` prints (and `evolve open` prints
//!   or opens): `/login#token=…`. The token rides in the fragment, which a browser never
//!   sends — not in a request line, a proxy's log or a `Referer`; the login page posts
//!   it, takes it out of the address bar and its history entry, and the answer sets the
//!   cookie (HttpOnly, SameSite=Strict). Pasting the token into the form works the same.
//!   What `evolve open` hands a browser on the command line (which other accounts can
//!   read in the process list) is a one-time code instead ([`LoginCodes`]): good for one
//!   sign-in within a minute, and worth nothing once the browser used it.
//! - Bound to loopback, only through a loopback `Host` (`127.0.0.1`, `localhost`,
//!   `[::1]`): a web page whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends
//!   its own host name and is refused before the token is looked at.
//! - Either way, a state-changing request (POST, PUT, PATCH, DELETE) that a browser
//!   sends from another site (`Sec-Fetch-Site: cross-site` or `same-site`; else an
//!   `Origin`, or without one a `Referer`, that is not this host) is refused: another
//!   tab cannot post to the agent.
//! - The login cookie is `Secure` when the request reached a TLS-terminating proxy on
//!   this machine (`X-Forwarded-Proto: https` from a loopback peer): `serve` itself
//!   speaks plain HTTP, where a `Secure` cookie would never be sent back.
//!
//! Host names are compared as parsed authorities ([`Authority`]), never as strings cut
//! at a colon.

use std::io::Write;
use std::net::{IpAddr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::http::Request;

/// The cookie the login form sets.
pub const COOKIE: &str = "evolve_token";

/// The server's access rule.
pub struct Auth {
    /// What every request but the public ones proves it knows.
    token: String,
    /// Which `Host` names are answered.
    hosts: Hosts,
    /// One-time sign-in codes handed out to holders of the token.
    pub codes: LoginCodes,
}

/// How long a sign-in code is good for (`evolve open` hands it to the browser at once).
pub const CODE_LIFETIME: Duration = Duration::from_secs(60);
/// The most codes waiting at once; a new one pushes out the oldest.
const MAX_CODES: usize = 8;

/// One-time sign-in codes: issued to a caller that has the token, each exchanged once,
/// within [`CODE_LIFETIME`], for the login cookie.
#[derive(Default)]
pub struct LoginCodes {
    waiting: Mutex<Vec<(String, Instant)>>,
}

impl LoginCodes {
    /// A new code (16 random bytes, hex), good until `now + CODE_LIFETIME`.
    pub fn issue(&self, now: Instant) -> std::io::Result<String> {
        let code = random_hex(16)?;
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|(_, until)| *until > now);
        if waiting.len() >= MAX_CODES {
            waiting.remove(0);
        }
        waiting.push((code.clone(), now + CODE_LIFETIME));
        Ok(code)
    }

    /// Whether `given` is a code still good at `now`; it is used up either way.
    pub fn redeem(&self, given: &str, now: Instant) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|(_, until)| *until > now);
        let found = waiting
            .iter()
            .position(|(code, _)| constant_time_eq(code.as_bytes(), given.as_bytes()));
        found.map(|i| waiting.remove(i)).is_some()
    }
}

/// Which `Host` a request may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosts {
    /// Bound to loopback: only loopback names (no DNS rebinding).
    Loopback,
    /// Bound to another address: any name it is reached by.
    Any,
}

/// Why a request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No or a wrong token (401).
    Token,
    /// A Host that is not this loopback server (DNS rebinding; 403).
    Host,
    /// A cross-site state-changing request (403).
    CrossSite,
}

impl Auth {
    /// Requests must carry `token` and name a host `hosts` allows.
    pub fn new(token: String, hosts: Hosts) -> Auth {
        Auth {
            token,
            hosts,
            codes: LoginCodes::default(),
        }
    }

    /// The token, for the login cookie.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The link that signs a browser in to the server at `addr`.
    pub fn login_link(&self, addr: std::net::SocketAddr) -> String {
        login_link(addr, &self.token)
    }

    /// The token a login form submitted is the right one.
    pub fn token_matches(&self, given: &str) -> bool {
        constant_time_eq(self.token.as_bytes(), given.as_bytes())
    }

    /// The request's origin and host are acceptable (checked before the token, for
    /// every route).
    pub fn check_origin(&self, req: &Request) -> Result<(), Refusal> {
        let host = Authority::parse(req.header("host").unwrap_or(""));
        if self.hosts == Hosts::Loopback && !host.as_ref().is_some_and(Authority::is_loopback) {
            return Err(Refusal::Host);
        }
        let changes = !matches!(req.method.as_str(), "GET" | "HEAD" | "OPTIONS");
        if !changes {
            return Ok(());
        }
        // A browser says where the request comes from: only this origin may change
        // anything. Another port of the same host is `same-site`, and refused too.
        // `none` (the user typed or bookmarked the address) attests nothing about a
        // request a page could also send: the Origin and Referer rules below decide.
        match req.header("sec-fetch-site") {
            Some("same-origin") => return Ok(()),
            Some("none") | None => {}
            Some(_) => return Err(Refusal::CrossSite),
        }
        // The Origin header, when sent, must be this host; without one (older
        // browsers), the page the request came from. Programs send neither.
        let from = match (req.header("origin"), req.header("referer")) {
            (Some(origin), _) => origin,
            (None, Some(referer)) => referer,
            (None, None) => return Ok(()),
        };
        match (Origin::of_url(from), host) {
            (Some(from), Some(host)) if from.is(&host) => Ok(()),
            _ => Err(Refusal::CrossSite),
        }
    }

    /// The request carries the token, as a Bearer header or as the cookie (a client may
    /// send both: a stale cookie beside the right header is not a refusal). A cookie
    /// header naming `evolve_token` twice is ambiguous and refused.
    pub fn check_token(&self, req: &Request) -> Result<(), Refusal> {
        // Another scheme (`Basic`, from a proxy in front) is not a credential here.
        let bearer = req.header("authorization").and_then(bearer_token);
        let mut cookies = req
            .header("cookie")
            .into_iter()
            .flat_map(|c| c.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .filter(|(k, _)| *k == COOKIE)
            .map(|(_, v)| v);
        let cookie = cookies.next();
        if cookies.next().is_some() {
            return Err(Refusal::Token);
        }
        if [bearer, cookie]
            .into_iter()
            .flatten()
            .any(|given| self.token_matches(given))
        {
            Ok(())
        } else {
            Err(Refusal::Token)
        }
    }
}

/// The link that signs a browser in: the login page with the token in the fragment,
/// which the browser keeps to itself (see the module doc).
pub fn login_link(addr: std::net::SocketAddr, token: &str) -> String {
    format!("http://{addr}/login#token={token}")
}

/// The token of `Authorization: Bearer TOKEN`; the scheme is case-insensitive
/// (RFC 9110 §11.1), the token is not.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once([' ', '\t'])?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The request reached a TLS-terminating proxy on this machine: `X-Forwarded-Proto:
/// https` (its first value), believed only from a loopback peer — anyone else could
/// send it, and `serve` itself never speaks TLS.
pub fn came_over_tls(req: &Request) -> bool {
    req.peer.ip().is_loopback()
        && req.header("x-forwarded-proto").is_some_and(|p| {
            p.split(',')
                .next()
                .is_some_and(|first| first.trim().eq_ignore_ascii_case("https"))
        })
}

/// `host[:port]` as in a `Host` header or a URL (RFC 9110 §7.2, RFC 3986 §3.2.2): a
/// registered name or IPv4 address, or an IPv6 address in brackets, then an optional
/// numeric port. Userinfo (`user@`) is not part of a Host and makes it unparsable, as
/// does anything after the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// Lower case; an IPv6 address without its brackets.
    host: String,
    /// `None` when absent (or empty, as RFC 3986 allows).
    port: Option<u16>,
}

impl Authority {
    /// `None` when `text` is not exactly `host[:port]`.
    pub fn parse(text: &str) -> Option<Authority> {
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (ip, after) = rest.split_once(']')?;
            ip.parse::<Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':')?),
            };
            (ip, port)
        } else {
            let (host, port) = match text.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            };
            // A name's letters, digits, `-`, `.` (and `_`, `~`, which some hosts use);
            // no `@`, `/`, `%` or brackets.
            let name_byte = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
            if host.is_empty() || !host.bytes().all(name_byte) {
                return None;
            }
            (host, port)
        };
        let port = match port {
            None | Some("") => None,
            Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
            Some(_) => return None,
        };
        Some(Authority {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// Names this machine's loopback interface.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// Where a browser says a request came from: the scheme and authority of an `Origin`
/// or a `Referer` URL.
#[derive(Debug, PartialEq, Eq)]
struct Origin {
    https: bool,
    authority: Authority,
}

impl Origin {
    /// `http(s)://authority` followed by nothing, or by a path, query or fragment;
    /// `None` for anything else (`null`, other schemes, userinfo).
    fn of_url(url: &str) -> Option<Origin> {
        let (scheme, rest) = url.split_once("://")?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            _ => return None,
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        Some(Origin {
            https,
            authority: Authority::parse(&rest[..end])?,
        })
    }

    /// The same host and port as the request's `Host` (an absent port is the scheme's
    /// default, on both sides: behind a TLS proxy the Host usually has none).
    fn is(&self, host: &Authority) -> bool {
        let default = if self.https { 443 } else { 80 };
        self.authority.host == host.host
            && self.authority.port.unwrap_or(default) == host.port.unwrap_or(default)
    }
}

/// Compares without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `n` random bytes from the kernel, in hex.
fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where the token is kept.
pub fn token_path(home: &Path) -> PathBuf {
    home.join("serve.token")
}

/// The token from `$EVOLVE_HOME/serve.token`, created (32 random bytes, hex) when
/// missing or too short to be one.
pub fn load_or_create_token(home: &Path) -> std::io::Result<String> {
    let path = token_path(home);
    match std::fs::read_to_string(&path) {
        Ok(t) if t.trim().len() >= 16 => return Ok(t.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let token = random_hex(32)?;
    std::fs::create_dir_all(home)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut file = opts.open(&path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, headers: &[(&str, &str)]) -> Request {
        Request {
            method: method.into(),
            path: "/v1/memory".into(),
            query: String::new(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
            peer: "127.0.0.1:1".parse().unwrap(),
            local: "127.0.0.1:8080".parse().unwrap(),
            http10: false,
        }
    }

    #[test]
    fn loopback_hosts_pass_and_rebinding_names_do_not() {
        let auth = Auth::new("s3cr3t-token-value".into(), Hosts::Loopback);
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert_eq!(
                auth.check_origin(&req("GET", &[("host", host)])),
                Ok(()),
                "{host}"
            );
        }
        for host in [
            "evil.example:8080",
            "",
            "127.0.0.1.evil.example",
            "10.0.0.2:8080",
        ] {
            assert_eq!(
                auth.check_origin(&req("GET", &[("host", host)])),
                Err(Refusal::Host),
                "{host}"
            );
        }
    }

    #[test]
    fn cross_site_writes_are_refused_reads_are_not() {
        let auth = Auth::new("s3cr3t-token-value".into(), Hosts::Loopback);
        let h = ("host", "127.0.0.1:8080");
        let evil = ("origin", "http://evil.example");
        assert_eq!(
            auth.check_origin(&req("POST", &[h, evil])),
            Err(Refusal::CrossSite)
        );
        assert_eq!(
            auth.check_origin(&req("DELETE", &[h, evil])),
            Err(Refusal::CrossSite)
        );
        assert_eq!(auth.check_origin(&req("GET", &[h, evil])), Ok(()));
        let same = ("origin", "http://127.0.0.1:8080");
        assert_eq!(auth.check_origin(&req("POST", &[h, same])), Ok(()));
        assert_eq!(
            auth.check_origin(&req("POST", &[h])),
            Ok(()),
            "curl sends no Origin"
        );
        let site = ("sec-fetch-site", "cross-site");
        assert_eq!(
            auth.check_origin(&req("POST", &[h, site])),
            Err(Refusal::CrossSite)
        );
        let other_port = ("sec-fetch-site", "same-site");
        assert_eq!(
            auth.check_origin(&req("POST", &[h, other_port])),
            Err(Refusal::CrossSite)
        );
        // A form posted by the page itself (its Origin may be `null`).
        let own = ("sec-fetch-site", "same-origin");
        let null = ("origin", "null");
        assert_eq!(auth.check_origin(&req("POST", &[h, own, null])), Ok(()));
        assert_eq!(
            auth.check_origin(&req("POST", &[h, null])),
            Err(Refusal::CrossSite)
        );
    }

    #[test]
    fn token_by_bearer_or_cookie() {
        let auth = Auth::new("s3cr3t-token-value".into(), Hosts::Any);
        let h = ("host", "pi.local:8080");
        assert_eq!(auth.check_origin(&req("GET", &[h])), Ok(()));
        assert_eq!(auth.check_token(&req("GET", &[h])), Err(Refusal::Token));
        let bearer = ("authorization", "Bearer s3cr3t-token-value");
        assert_eq!(auth.check_token(&req("GET", &[h, bearer])), Ok(()));
        let wrong = ("authorization", "Bearer s3cr3t-token-valuf");
        assert_eq!(
            auth.check_token(&req("GET", &[h, wrong])),
            Err(Refusal::Token)
        );
        let cookie = ("cookie", "a=b; evolve_token=s3cr3t-token-value");
        assert_eq!(auth.check_token(&req("GET", &[h, cookie])), Ok(()));
        let loopback = Auth::new("s3cr3t-token-value".into(), Hosts::Loopback);
        let h = ("host", "127.0.0.1:8080");
        assert_eq!(loopback.check_token(&req("GET", &[h])), Err(Refusal::Token));
        assert_eq!(loopback.check_token(&req("GET", &[h, bearer])), Ok(()));
    }

    #[test]
    fn one_right_credential_is_enough_and_a_doubled_cookie_is_not() {
        let auth = Auth::new("s3cr3t-token-value".into(), Hosts::Loopback);
        let h = ("host", "127.0.0.1:8080");
        let right = ("authorization", "Bearer s3cr3t-token-value");
        let cookie = ("cookie", "evolve_token=s3cr3t-token-value");
        for (headers, want) in [
            (vec![h, right, cookie], Ok(())),
            (vec![h, ("authorization", "Basic dTpw"), cookie], Ok(())),
            (vec![h, ("authorization", "Bearer nope"), cookie], Ok(())),
            (vec![h, right, ("cookie", "evolve_token=nope")], Ok(())),
            (
                vec![
                    h,
                    ("authorization", "Bearer nope"),
                    ("cookie", "evolve_token=x"),
                ],
                Err(Refusal::Token),
            ),
            (
                vec![
                    h,
                    ("cookie", "evolve_token=s3cr3t-token-value; evolve_token=x"),
                ],
                Err(Refusal::Token),
            ),
            (
                vec![h, ("cookie", "other=s3cr3t-token-value")],
                Err(Refusal::Token),
            ),
            (vec![h, ("authorization", "Bearer ")], Err(Refusal::Token)),
            (
                vec![h, ("authorization", "Basic dTpw")],
                Err(Refusal::Token),
            ),
        ] {
            assert_eq!(auth.check_token(&req("GET", &headers)), want, "{headers:?}");
        }
    }

    #[test]
    fn a_host_is_parsed_as_an_authority_not_cut_at_a_colon() {
        let a = |host: &str, port: Option<u16>| {
            Some(Authority {
                host: host.into(),
                port,
            })
        };
        for (text, want) in [
            ("localhost", a("localhost", None)),
            ("LocalHost:8080", a("localhost", Some(8080))),
            ("localhost:", a("localhost", None)),
            ("127.0.0.1:80", a("127.0.0.1", Some(80))),
            ("[::1]", a("::1", None)),
            ("[::1]:8080", a("::1", Some(8080))),
            ("pi.local:8080", a("pi.local", Some(8080))),
            ("", None),
            (":80", None),
            ("localhost:80@evil.com", None),
            ("localhost@evil.com", None),
            ("user@localhost", None),
            ("[::1]@evil.com", None),
            ("[::1]:80@evil.com", None),
            ("localhost:80:81", None),
            ("localhost:http", None),
            ("localhost:99999", None),
            ("localhost:80/x", None),
            ("local%68ost", None),
            ("::1", None),
            ("[::1", None),
            ("[::1]x", None),
            ("[evil.com]", None),
            ("local host", None),
        ] {
            assert_eq!(Authority::parse(text), want, "{text:?}");
        }
        for (text, loopback) in [
            ("localhost:1", true),
            ("127.0.0.1", true),
            ("127.8.9.10:1", true),
            ("[::1]:1", true),
            ("localhost.evil.example", false),
            ("10.0.0.2", false),
            ("[::2]", false),
        ] {
            let parsed = Authority::parse(text).unwrap();
            assert_eq!(parsed.is_loopback(), loopback, "{text}");
        }
    }

    #[test]
    fn fetch_site_none_leaves_the_decision_to_origin_and_referer() {
        let auth = Auth::new("s3cr3t-token-value".into(), Hosts::Loopback);
        let h = ("host", "127.0.0.1:8080");
        let none = ("sec-fetch-site", "none");
        for (headers, want) in [
            (vec![h, none], Ok(())),
            (vec![h, none, ("origin", "http://127.0.0.1:8080")], Ok(())),
            (
                vec![h, none, ("origin", "http://evil.example")],
                Err(Refusal::CrossSite),
            ),
            (vec![h, none, ("origin", "null")], Err(Refusal::CrossSite)),
            (
                vec![h, none, ("referer", "http://evil.example/a")],
                Err(Refusal::CrossSite),
            ),
            (vec![h, ("referer", "http://127.0.0.1:8080/ui?x#y")], Ok(())),
            (
                vec![h, ("referer", "http://127.0.0.1:8081/")],
                Err(Refusal::CrossSite),
            ),
            (
                vec![h, ("origin", "http://user@127.0.0.1:8080")],
                Err(Refusal::CrossSite),
            ),
        ] {
            assert_eq!(
                auth.check_origin(&req("POST", &headers)),
                want,
                "{headers:?}"
            );
        }
    }

    #[test]
    fn an_origin_without_a_port_is_the_schemes_default() {
        let auth = Auth::new("s3cr3t-token-value".into(), Hosts::Any);
        for (host, origin, want) in [
            ("evolve.example", "https://evolve.example", Ok(())),
            ("evolve.example:443", "https://evolve.example", Ok(())),
            ("evolve.example", "http://evolve.example:80", Ok(())),
            ("Evolve.Example", "https://evolve.example/", Ok(())),
            (
                "evolve.example",
                "https://evolve.example:8443",
                Err(Refusal::CrossSite),
            ),
            (
                "evolve.example:80",
                "https://evolve.example",
                Err(Refusal::CrossSite),
            ),
            (
                "evolve.example",
                "ftp://evolve.example",
                Err(Refusal::CrossSite),
            ),
        ] {
            let r = req("POST", &[("host", host), ("origin", origin)]);
            assert_eq!(auth.check_origin(&r), want, "{host} {origin}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_is_not() {
        for (value, want) in [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER abc", Some("abc")),
            ("Bearer   abc ", Some("abc")),
            ("Bearer\tabc", Some("abc")),
            ("Bearer ABC", Some("ABC")),
            ("Bearer ", Some("")),
            ("Bearerabc", None),
            ("Basic abc", None),
            ("abc", None),
        ] {
            assert_eq!(bearer_token(value), want, "{value:?}");
        }
    }

    #[test]
    fn forwarded_https_counts_only_from_loopback() {
        let mut r = req("POST", &[("x-forwarded-proto", "HTTPS, http")]);
        assert!(came_over_tls(&r));
        r.peer = "192.168.1.5:1".parse().unwrap();
        assert!(!came_over_tls(&r));
        assert!(!came_over_tls(&req(
            "POST",
            &[("x-forwarded-proto", "http")]
        )));
        assert!(!came_over_tls(&req("POST", &[])));
    }

    #[test]
    fn a_sign_in_code_works_once_and_only_for_a_minute() {
        let codes = LoginCodes::default();
        let t0 = Instant::now();
        let a = codes.issue(t0).unwrap();
        let b = codes.issue(t0).unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(!codes.redeem("", t0));
        assert!(!codes.redeem(&a[..31], t0));
        assert!(codes.redeem(&a, t0 + Duration::from_secs(59)));
        assert!(!codes.redeem(&a, t0 + Duration::from_secs(59)), "used up");
        assert!(!codes.redeem(&b, t0 + CODE_LIFETIME), "expired");
        // Only the last few wait: the oldest are pushed out.
        let all: Vec<String> = (0..MAX_CODES + 2)
            .map(|_| codes.issue(t0).unwrap())
            .collect();
        assert!(!codes.redeem(&all[0], t0));
        assert!(codes.redeem(&all[MAX_CODES + 1], t0));
    }

    #[test]
    fn the_token_file_is_private_and_stable() {
        let dir = std::env::temp_dir().join(format!("evolve-token-{}", std::process::id()));
        let first = load_or_create_token(&dir).unwrap();
        assert_eq!(first.len(), 64);
        let again = load_or_create_token(&dir).unwrap();
        assert_eq!(first, again);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(token_path(&dir)).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
