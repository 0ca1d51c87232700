//! The login in use: what the streamable HTTP link of one server asks before each
//! request (the `Authorization` header) and after a refusal (send it again?), and the
//! words of the error when nothing helps.
//!
//! What it decides:
//! - **Which token.** The store's login of the server, read at the first request and
//!   again after a refusal (another evolve may have logged in or renewed meanwhile); a
//!   login made for another URL is not sent.
//! - **Renewing.** A token past its expiry (a little early: [`super::renew_at`]) is renewed with the refresh
//!   token before it is sent; a 401 to a token renews it too. Once per token: a token a
//!   renewal just gave that is refused again is not renewed again. A renewal the
//!   authorization server refuses (`invalid_grant`: revoked, expired) ends the login —
//!   its tokens are dropped from the store; one that cannot reach it keeps them.
//! - **Scopes.** A 401 or 403 `insufficient_scope` naming scopes is noted in the store
//!   (with those granted, for a 403) so the next `evolve mcp login` asks for them.
//! - **The error.** What happened, then "run `evolve mcp login NAME`". Only for refusals
//!   that ask for a Bearer token (or say nothing): a server asking for another scheme
//!   gets the link's own words about its headers.
//!
//! One lock per server: a renewal is done once while other requests wait for its token.

use std::sync::{Arc, Mutex, MutexGuard};

use ureq::http::HeaderValue;

use super::challenge::{Asked, Challenge};
use super::register::AuthMethod;
use super::token::{self, ClientAuth, TokenError};
use super::{fetch, union};
use crate::secret::Secret;
use crate::store::{McpLogin, Store};

/// The login of one HTTP server, as its link uses it.
pub struct Bearer {
    server: String,
    url: String,
    store: Arc<Store>,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Read from the store at first use.
    loaded: bool,
    login: Option<McpLogin>,
    /// The token the last renewal gave: if it is refused too, renewing does not help.
    renewed: Option<Secret>,
    /// Why the last refusal could not be mended.
    problem: Option<Problem>,
}

#[derive(Debug, Clone, PartialEq)]
enum Problem {
    /// No login at all.
    NoLogin,
    /// The login's token is refused and cannot be renewed (no refresh token, or the
    /// renewed one is refused too).
    Refused,
    /// Renewing failed, with why.
    Renewal(String),
    /// A 403 asking for these scopes.
    Scope(String),
}

impl Bearer {
    /// The login of HTTP server `server` at `url`, from `store`.
    pub fn new(server: &str, url: &str, store: Arc<Store>) -> Bearer {
        Bearer {
            server: server.to_string(),
            url: url.to_string(),
            store,
            held: Mutex::new(Held::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The store's login for this server (and URL).
    fn stored(&self) -> Option<McpLogin> {
        match self.store.mcp_login(&self.server) {
            Ok(login) => login.filter(|l| l.url == self.url),
            Err(e) => {
                log::warn!(
                    "MCP server {:?}: its login cannot be read: {e}",
                    self.server
                );
                None
            }
        }
    }

    /// `Authorization: Bearer …` for the next request, renewing an expired token
    /// first; `None` without a login.
    pub fn header(&self) -> Option<HeaderValue> {
        let mut held = self.lock();
        if !held.loaded {
            held.loaded = true;
            held.login = self.stored();
        }
        let login = held.login.as_ref()?;
        let expired = login.expires_at.is_some_and(|at| crate::clock::now() >= at);
        if expired
            && login.refresh_token.is_some()
            && held.renewed.as_ref() != login.access_token.as_ref()
        {
            log::debug!(
                "MCP server {:?}: its access token expired; renewing it",
                self.server
            );
            self.renew(&mut held);
        }
        value(held.login.as_ref()?.access_token.as_ref()?)
    }

    /// After a 401 or 403 with these `WWW-Authenticate` headers to a request that
    /// carried `sent`: whether to send it again (with [`Bearer::header`]).
    pub fn refused(&self, status: u16, challenges: &[String], sent: Option<&HeaderValue>) -> bool {
        let asked = Asked::of(challenges.iter().map(String::as_str));
        if matches!(asked, Asked::Other(_)) {
            self.lock().problem = None;
            return false;
        }
        let challenge = asked.bearer().cloned().unwrap_or_default();
        let sent = sent
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(Secret::new);
        let mut held = self.lock();
        held.loaded = true;
        if status == 403 {
            if challenge.error.as_deref() == Some("insufficient_scope") || challenge.scope.is_some()
            {
                let granted = held.login.as_ref().and_then(|l| l.scope.clone());
                let wanted = union(granted.as_deref(), challenge.scope.as_deref());
                self.note(&mut held, &challenge, wanted);
                held.problem = Some(Problem::Scope(challenge.scope.unwrap_or_default()));
            } else {
                held.problem = None;
            }
            return false;
        }
        self.note(&mut held, &challenge, challenge.scope.clone());
        // Another evolve may have logged in or renewed meanwhile.
        held.login = self.stored();
        let current = held.login.as_ref().and_then(|l| l.access_token.clone());
        match (&current, &sent) {
            (Some(now), Some(sent)) if now != sent => return true,
            (Some(_), None) => return true,
            (None, _) => {
                if !matches!(held.problem, Some(Problem::Renewal(_))) {
                    held.problem = Some(Problem::NoLogin);
                }
                return false;
            }
            _ => {}
        }
        let can_renew = held
            .login
            .as_ref()
            .is_some_and(|l| l.refresh_token.is_some())
            && held.renewed != current;
        if !can_renew {
            held.problem = Some(Problem::Refused);
            return false;
        }
        log::debug!(
            "MCP server {:?} refused its access token; renewing it",
            self.server
        );
        self.renew(&mut held)
    }

    /// Notes what a refusal asked for, so the next login asks for it.
    fn note(&self, held: &mut Held, challenge: &Challenge, wanted: Option<String>) {
        let mut login = held
            .login
            .clone()
            .or_else(|| self.stored())
            .unwrap_or_else(|| McpLogin {
                url: self.url.clone(),
                ..McpLogin::default()
            });
        let metadata = challenge
            .resource_metadata
            .clone()
            .or(login.resource_metadata.clone());
        let wanted = wanted.or(login.wanted_scope.clone());
        if login.wanted_scope == wanted && login.resource_metadata == metadata {
            return;
        }
        login.wanted_scope = wanted;
        login.resource_metadata = metadata;
        if let Err(e) = self.store.put_mcp_login(&self.server, &login) {
            log::warn!(
                "MCP server {:?}: what it asks for cannot be kept: {e}",
                self.server
            );
        }
        held.login = Some(login);
    }

    /// Renews the tokens with the refresh token; true when new ones came.
    fn renew(&self, held: &mut Held) -> bool {
        let Some(login) = held.login.clone() else {
            return false;
        };
        let (Some(refresh), Some(method)) =
            (&login.refresh_token, AuthMethod::parse(&login.auth_method))
        else {
            return false;
        };
        let client = ClientAuth {
            id: &login.client_id,
            secret: login.client_secret.as_ref(),
            method,
        };
        let agent = fetch::agent();
        let mut grant = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.expose()),
        ];
        if !login.resource.is_empty() {
            grant.push(("resource", &login.resource));
        }
        match token::request(&agent, &login.token_endpoint, &client, &grant) {
            Ok(issued) => {
                let mut renewed = login.clone();
                renewed.expires_at = issued
                    .expires_in
                    .map(|s| super::renew_at(crate::clock::now(), s));
                renewed.scope = issued.scope.or(login.scope);
                // A server that rotates refresh tokens sends a new one; one that does
                // not keeps the old one good.
                renewed.refresh_token = issued.refresh.or(login.refresh_token);
                renewed.access_token = Some(issued.access.clone());
                if let Err(e) = self.store.put_mcp_login(&self.server, &renewed) {
                    log::warn!(
                        "MCP server {:?}: the renewed login cannot be kept: {e}",
                        self.server
                    );
                }
                log::info!("MCP server {:?}: its login was renewed", self.server);
                held.renewed = Some(issued.access);
                held.login = Some(renewed);
                held.problem = None;
                true
            }
            Err(TokenError::Refused(why)) => {
                log::info!(
                    "MCP server {:?}: renewing its login was refused: {why}",
                    self.server
                );
                let mut spent = login;
                spent.access_token = None;
                spent.refresh_token = None;
                spent.expires_at = None;
                if let Err(e) = self.store.put_mcp_login(&self.server, &spent) {
                    log::warn!(
                        "MCP server {:?}: the spent login cannot be dropped: {e}",
                        self.server
                    );
                }
                held.login = Some(spent);
                held.problem = Some(Problem::Renewal(format!(
                    "the authorization server refused to renew it: {why}"
                )));
                false
            }
            Err(TokenError::Failed(why)) => {
                log::warn!(
                    "MCP server {:?}: its login could not be renewed: {why}",
                    self.server
                );
                held.problem = Some(Problem::Renewal(why));
                false
            }
        }
    }

    /// What to tell the user about a refusal with `status`; `None` when the login has
    /// nothing to do with it.
    pub fn explain(&self, status: u16) -> Option<String> {
        let problem = self.lock().problem.clone()?;
        let login = format!("run `evolve mcp login {}`", self.server);
        Some(match (status, problem) {
            (403, Problem::Scope(scope)) if !scope.is_empty() => format!(
                "needs more permission than evolve's login has (scope \"{}\"): {login} to grant it",
                fetch::shown(scope.as_bytes(), &[])
            ),
            (403, Problem::Scope(_)) => {
                format!("needs more permission than evolve's login has: {login} to grant it")
            }
            (_, Problem::NoLogin) => {
                format!("asks for an OAuth login, and evolve has not logged in to it: {login}")
            }
            (_, Problem::Refused) => format!(
                "no longer takes evolve's login (the token was revoked or has expired, and it \
                 cannot be renewed): {login}"
            ),
            (_, Problem::Renewal(why)) => {
                format!("no longer takes evolve's login, and renewing it failed ({why}): {login}")
            }
            (_, Problem::Scope(_)) => return None,
        })
    }

    /// The tokens held, to blank out of anything the server sends back.
    pub fn secrets(&self) -> Vec<String> {
        let held = self.lock();
        held.login
            .iter()
            .flat_map(|l| [&l.access_token, &l.refresh_token])
            .flatten()
            .map(|s| s.expose().to_string())
            .collect()
    }
}

/// `Bearer <token>`, marked sensitive; `None` if HTTP cannot carry it.
fn value(token: &Secret) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
    value.set_sensitive(true);
    Some(value)
}
