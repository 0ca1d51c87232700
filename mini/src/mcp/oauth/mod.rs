//! OAuth 2.1 for streamable HTTP servers, as the MCP authorization spec (revisions
//! 2025-06-18 and 2025-11-25, with 2025-03-26's fallbacks) has clients do it: the way
//! hosted servers are reached.
//!
//! Two halves:
//! - **Logging in** ([`login`]): `evolve mcp login NAME` and the web UI's Log in. The
//!   server is asked once without a token to hear its challenge ([`challenge`]), its
//!   authorization server is found ([`discover`]), evolve's client there is chosen or
//!   registered ([`register`]), the browser is sent to the authorization endpoint with
//!   PKCE ([`pkce`]) and comes back to a loopback listener ([`redirect`]), and the code
//!   is exchanged for tokens ([`token`]), which the store keeps
//!   ([`McpLogin`](crate::store::McpLogin)).
//! - **Using the login** ([`Bearer`]): the streamable HTTP link asks it for the
//!   `Authorization` header of each request and tells it about a 401 or 403; it renews
//!   an expired token with the refresh token (once per token, then the request is sent
//!   again), notes the scopes a refusal asks for so the next login asks for them, and
//!   words the error when nothing helps: run `evolve mcp login NAME`.
//!
//! What it leaves to others: when to log in (the user, through the CLI or the web UI),
//! the HTTP exchange with the MCP server itself (`http`), and where the login is kept
//! (the store). Tokens, the client secret, the PKCE verifier and the code are
//! [`Secret`](crate::secret::Secret)s: never logged, never in an error, never returned
//! by the API. Nothing here talks to a server evolve was not pointed at, except the
//! authorization server the server's own metadata names, over https (or loopback).

mod bearer;
pub mod challenge;
mod discover;
mod fetch;
pub mod login;
mod pkce;
mod redirect;
mod register;
mod token;

pub use bearer::Bearer;

use crate::mcp_spec::{ServerSpec, Transport};
use crate::store::StoreError;

/// Whether the server can use an OAuth login: an HTTP server that does not send an
/// Authorization of its own (a bearer token or that header).
pub fn applies(spec: &ServerSpec) -> bool {
    match &spec.transport {
        Transport::Http {
            headers, bearer, ..
        } => {
            bearer.is_none()
                && !headers
                    .iter()
                    .any(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        }
        Transport::Stdio { .. } => false,
    }
}

/// Where a server's login stands, for listings (never a token).
#[derive(Debug, Clone, PartialEq)]
pub enum LoginState {
    /// Tokens are kept.
    LoggedIn {
        /// When the access token expires, if said.
        expires_at: Option<evolve_core::Timestamp>,
        /// A refresh token is kept: the login renews itself.
        renewable: bool,
        /// The scopes granted.
        scope: Option<String>,
    },
    /// The server asked for a login (or the login was spent) and none is kept.
    Needed,
}

impl LoginState {
    /// The state of `spec`'s login in `store`; `None` when it has none and never asked.
    pub fn of(spec: &ServerSpec, store: &crate::store::Store) -> Option<LoginState> {
        let Transport::Http { url, .. } = &spec.transport else {
            return None;
        };
        if !applies(spec) {
            return None;
        }
        let mut login = store.mcp_login(&spec.name).ok()??;
        if &login.url != url {
            return None;
        }
        Some(match login.access_token {
            Some(_) => LoginState::LoggedIn {
                expires_at: login.expires_at,
                renewable: login.refresh_token.is_some(),
                // Taken, not moved out: the rest of the login is then dropped whole.
                scope: login.scope.take(),
            },
            None => LoginState::Needed,
        })
    }

    /// In a few words: `logged in, expires in 12 min`, `login needed`.
    pub fn label(&self, now: evolve_core::Timestamp) -> String {
        match self {
            LoginState::Needed => "login needed".into(),
            LoginState::LoggedIn {
                expires_at: Some(at),
                renewable,
                ..
            } if *at <= now => {
                if *renewable {
                    "logged in (renewed at next use)".into()
                } else {
                    "login expired".into()
                }
            }
            LoginState::LoggedIn {
                expires_at: Some(at),
                renewable: false,
                ..
            } => match at - now {
                left if left < 120 => format!("logged in, expires in {left} s"),
                left if left < 7200 => format!("logged in, expires in {} min", left / 60),
                left => format!("logged in, expires in {} h", left / 3600),
            },
            LoginState::LoggedIn { .. } => "logged in".into(),
        }
    }
}

/// Why a login did not happen. The text says what failed, where, and what to do.
///
/// Small (no variant holds more than a `String` or a box): it travels through many `?`s,
/// each a copy of it.
#[derive(Debug)]
pub enum LoginError {
    /// Something to set up or change first.
    Setup(String),
    /// A metadata, registration or token request failed: `WHAT at URL: DETAIL`.
    Exchange(String),
    /// The browser came back with something other than this login's code.
    Redirect(String),
    /// No redirect came back in time.
    NoRedirect,
    /// Ctrl-C, or a newer login of the same server.
    Cancelled,
    /// The store could not keep the login.
    Store(Box<StoreError>),
}

impl LoginError {
    /// The error as the CLI and the web UI tell it about server `name`.
    pub fn about(&self, name: &str) -> String {
        match self {
            LoginError::Setup(m) => format!("cannot log in to {name}: {m}"),
            e => format!("the login to {name} failed: {e}"),
        }
    }

    /// `what` at `url` failed with `detail`.
    fn exchange(what: &'static str, url: &str, detail: String) -> LoginError {
        let url = crate::secret::display_url(url);
        LoginError::Exchange(format!("{what} at {url}: {detail}"))
    }
}

impl From<StoreError> for LoginError {
    fn from(e: StoreError) -> LoginError {
        LoginError::Store(Box::new(e))
    }
}

impl std::fmt::Display for LoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginError::Setup(s) | LoginError::Exchange(s) | LoginError::Redirect(s) => {
                f.write_str(s)
            }
            LoginError::NoRedirect => f.write_str(
                "the browser did not come back with a code in time (was the login finished in \
                 the browser, on this machine?)",
            ),
            LoginError::Cancelled => f.write_str("the login was cancelled"),
            LoginError::Store(e) => write!(f, "the login cannot be kept: {e}"),
        }
    }
}

impl std::error::Error for LoginError {}

/// Runs `work` on a thread of its own named `name`, not waited for: the web UI's wait
/// for the browser, and the CLI's reaping of the browser it started. Boxed, so the two
/// share one thread spawn's code.
pub fn in_background(name: &str, work: Box<dyn FnOnce() + Send>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(work)
        .map(drop)
}

/// When a token given at `now` for `expires_in` seconds is to be renewed: a little
/// before it expires (a quarter of its life, at most 30 s), so no request goes out with
/// a token that dies on the way.
fn renew_at(now: evolve_core::Timestamp, expires_in: i64) -> evolve_core::Timestamp {
    let early = (expires_in / 4).clamp(0, 30);
    now.saturating_add(expires_in.saturating_sub(early))
}

/// The scopes of `a` and then those of `b` not in `a`, space-separated.
fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for scopes in [a, b].into_iter().flatten() {
        for scope in scopes.split_whitespace() {
            if !out.contains(&scope) {
                out.push(scope);
            }
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_renewed_a_little_before_they_expire() {
        assert_eq!(super::renew_at(1000, 3600), 1000 + 3570);
        assert_eq!(super::renew_at(1000, 8), 1006);
        assert_eq!(super::renew_at(1000, 1), 1001);
        assert_eq!(super::renew_at(1000, 0), 1000);
    }

    #[test]
    fn scopes_join_without_repeats() {
        let cases = [
            (None, None, None),
            (Some("a b"), None, Some("a b")),
            (Some("a b"), Some("b c"), Some("a b c")),
            (Some(" "), Some("c"), Some("c")),
        ];
        for (a, b, want) in cases {
            assert_eq!(super::union(a, b).as_deref(), want, "{a:?} {b:?}");
        }
    }
}
