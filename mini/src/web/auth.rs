//! Who may use `evolve serve`, decided per request.
//!
//! - Bound to loopback: anyone on this machine (as for any local program), but only
//!   through a loopback `Host` (`127.0.0.1`, `localhost`, `[::1]`): a web page whose
//!   name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own host name and is
//!   refused.
//! - Bound to any other address: a token is required — `Authorization: Bearer TOKEN`
//!   for programs, the HttpOnly `evolve_token` cookie (set by the login form) for the
//!   browser. The token is generated on first use, kept in `$EVOLVE_HOME/serve.token`
//!   (mode 0600) and printed once.
//! - Either way, a state-changing request (POST, PUT, PATCH, DELETE) that a browser
//!   sends from another site (`Origin` not this host, or `Sec-Fetch-Site: cross-site`)
//!   is refused: another tab cannot post to the agent.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use super::http::Request;

/// The cookie the login form sets.
pub const COOKIE: &str = "evolve_token";

/// The server's access rule.
pub struct Auth {
    /// `None`: bound to loopback, no token.
    token: Option<String>,
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
    /// No token: the server is bound to loopback.
    pub fn loopback() -> Auth {
        Auth { token: None }
    }

    /// A token is required.
    pub fn with_token(token: String) -> Auth {
        Auth { token: Some(token) }
    }

    /// Whether a token is required.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// The token a login form submitted is the right one.
    pub fn token_matches(&self, given: &str) -> bool {
        self.token
            .as_deref()
            .is_some_and(|t| constant_time_eq(t.as_bytes(), given.as_bytes()))
    }

    /// The request's origin and host are acceptable (checked before the token, for
    /// every route).
    pub fn check_origin(&self, req: &Request) -> Result<(), Refusal> {
        let host = req.header("host").unwrap_or("");
        if self.token.is_none() && !is_loopback_host(host) {
            return Err(Refusal::Host);
        }
        let changes = !matches!(req.method.as_str(), "GET" | "HEAD" | "OPTIONS");
        if changes {
            // A browser says where the request comes from: only this origin (or the
            // user typing the address: `none`) may change anything. Another port of
            // the same host is `same-site`, and refused too.
            match req.header("sec-fetch-site") {
                Some("same-origin" | "none") => return Ok(()),
                Some(_) => return Err(Refusal::CrossSite),
                None => {}
            }
            // Older browsers: the Origin header, when sent, must be this host.
            if let Some(origin) = req.header("origin") {
                let origin_host = origin
                    .split_once("://")
                    .map_or("", |(_, rest)| rest.trim_end_matches('/'));
                if !origin_host.eq_ignore_ascii_case(host) {
                    return Err(Refusal::CrossSite);
                }
            }
        }
        Ok(())
    }

    /// The request carries the token (always true without one).
    pub fn check_token(&self, req: &Request) -> Result<(), Refusal> {
        let Some(token) = self.token.as_deref() else {
            return Ok(());
        };
        let bearer = req
            .header("authorization")
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        let cookie = req.header("cookie").and_then(|c| {
            c.split(';')
                .filter_map(|kv| kv.trim().split_once('='))
                .find(|(k, _)| *k == COOKIE)
                .map(|(_, v)| v)
        });
        let ok = [bearer, cookie]
            .into_iter()
            .flatten()
            .any(|given| constant_time_eq(token.as_bytes(), given.as_bytes()));
        if ok {
            Ok(())
        } else {
            Err(Refusal::Token)
        }
    }
}

/// `host[:port]` names this machine's loopback interface.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Compares without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Where the token is kept.
pub fn token_path(home: &Path) -> PathBuf {
    home.join("serve.token")
}

/// The token from `$EVOLVE_HOME/serve.token`, created (32 random bytes, hex) when
/// missing. The second value is true when it was just created (print it once).
pub fn load_or_create_token(home: &Path) -> std::io::Result<(String, bool)> {
    let path = token_path(home);
    match std::fs::read_to_string(&path) {
        Ok(t) if t.trim().len() >= 16 => return Ok((t.trim().to_string(), false)),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(home)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut file = opts.open(&path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok((token, true))
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
            http10: false,
        }
    }

    #[test]
    fn loopback_hosts_pass_and_rebinding_names_do_not() {
        let auth = Auth::loopback();
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
        let auth = Auth::loopback();
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
        let auth = Auth::with_token("s3cr3t-token-value".into());
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
        assert!(Auth::loopback().check_token(&req("GET", &[h])).is_ok());
    }

    #[test]
    fn the_token_file_is_private_and_stable() {
        let dir = std::env::temp_dir().join(format!("evolve-token-{}", std::process::id()));
        let (first, created) = load_or_create_token(&dir).unwrap();
        assert!(created && first.len() == 64);
        let (again, created) = load_or_create_token(&dir).unwrap();
        assert!(!created);
        assert_eq!(first, again);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(token_path(&dir)).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
