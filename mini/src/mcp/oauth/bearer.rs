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
    login: Option<Box<McpLogin>>,
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
    fn stored(&self) -> Option<Box<McpLogin>> {
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
        super::super::http::bearer_value(held.login.as_ref()?.access_token.as_ref()?.expose())
    }

    /// After a 401 or 403 with these `WWW-Authenticate` headers to a request that
    /// carried `sent`: whether to send it again (with [`Bearer::header`]).
    ///
    /// Not inlined into the HTTP link (measured: the binary is smaller so).
    #[inline(never)]
    pub fn refused(&self, status: u16, challenges: &[String], sent: Option<&HeaderValue>) -> bool {
        let asked = Asked::of(challenges.iter().map(String::as_str));
        if matches!(asked, Asked::Other(_)) {
            self.lock().problem = None;
            return false;
        }
        let challenge = match asked {
            Asked::Bearer(challenge) => challenge,
            _ => Challenge::default(),
        };
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
            .unwrap_or_else(|| {
                Box::new(McpLogin {
                    url: self.url.clone(),
                    ..McpLogin::default()
                })
            });
        let metadata = &challenge.resource_metadata;
        let new_metadata = metadata.is_some() && *metadata != login.resource_metadata;
        let new_wanted = wanted.is_some() && wanted != login.wanted_scope;
        if !new_metadata && !new_wanted {
            return;
        }
        if new_metadata {
            login.resource_metadata = metadata.clone();
        }
        if new_wanted {
            login.wanted_scope = wanted;
        }
        self.keep(&login, "what it asks for cannot be kept");
        held.login = Some(login);
    }

    /// Keeps `login` in the store; a failure is logged (`what` cannot be kept).
    fn keep(&self, login: &McpLogin, what: &str) {
        if let Err(e) = self.store.put_mcp_login(&self.server, login) {
            log::warn!("MCP server {:?}: {what}: {e}", self.server);
        }
    }

    /// Renews the tokens with the refresh token; true when new ones came.
    fn renew(&self, held: &mut Held) -> bool {
        let Some(mut login) = held.login.clone() else {
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
        let mut grant = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.expose()),
        ];
        if !login.resource.is_empty() {
            grant.push(("resource", &login.resource));
        }
        let server = &self.server;
        let renewed = match token::request(&fetch::agent(), &login.token_endpoint, &client, &grant)
        {
            Ok(issued) => {
                login.expires_at = issued
                    .expires_in
                    .map(|s| super::renew_at(crate::clock::now(), s));
                login.scope = issued.scope.or(login.scope.take());
                // A server that rotates refresh tokens sends a new one; one that does
                // not keeps the old one good.
                login.refresh_token = issued.refresh.or(login.refresh_token.take());
                login.access_token = Some(issued.access.clone());
                self.keep(&login, "the renewed login cannot be kept");
                log::info!("MCP server {server:?}: its login was renewed");
                held.renewed = Some(issued.access);
                held.problem = None;
                true
            }
            Err(TokenError::Refused(why)) => {
                log::info!("MCP server {server:?}: renewing its login was refused: {why}");
                login.access_token = None;
                login.refresh_token = None;
                login.expires_at = None;
                self.keep(&login, "the spent login cannot be dropped");
                held.problem = Some(Problem::Renewal(format!(
                    "the authorization server refused to renew it: {why}"
                )));
                false
            }
            Err(TokenError::Failed(why)) => {
                log::warn!("MCP server {server:?}: its login could not be renewed: {why}");
                held.problem = Some(Problem::Renewal(why));
                false
            }
        };
        held.login = Some(login);
        renewed
    }

    /// What to tell the user about a refusal with `status`; `None` when the login has
    /// nothing to do with it.
    ///
    /// Not inlined into the HTTP link (measured: the binary is smaller so).
    #[inline(never)]
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
        let mut out = Vec::new();
        if let Some(l) = &held.login {
            for token in [&l.access_token, &l.refresh_token].into_iter().flatten() {
                out.push(token.expose().to_string());
            }
        }
        out
    }
}
