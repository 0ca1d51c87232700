//! A server's endpoint as its definition gives it, checked before anything is sent: the
//! URL, the headers (none the client sets itself, values HTTP can carry) and the bearer
//! token, with the values blanked out of what the server sends back.

use std::sync::Arc;

use ureq::http::header::AUTHORIZATION;
use ureq::http::{HeaderName, HeaderValue};

use super::super::oauth::Bearer;
use super::OWN_HEADERS;
use crate::secret::Secret;

/// A server's endpoint with the headers of its definition, checked.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(super) url: String,
    /// The configured headers and `Authorization: Bearer …`, values marked sensitive.
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
    /// Values blanked out of the server's error text.
    pub(super) secrets: Vec<String>,
    /// The OAuth login, for a server without an Authorization of its own.
    pub(super) login: Option<Arc<Bearer>>,
}

impl Endpoint {
    /// Requests carry the login's token (see the module doc).
    pub(crate) fn with_login(mut self, login: Arc<Bearer>) -> Endpoint {
        self.login = Some(login);
        self
    }
}

/// What is wrong with a server's endpoint definition; the words name what to fix and
/// never hold a header value or the token.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadEndpoint {
    /// Not an http(s) URL with a host (the URL as shown, secrets blanked).
    #[error(
        "{0} is not an http:// or https:// URL of an MCP endpoint (e.g. http://127.0.0.1:3001/mcp)"
    )]
    Url(String),
    #[error("{0:?} is not a valid HTTP header name")]
    HeaderName(String),
    #[error("header {0:?} is set by the MCP client itself: remove it from the server's headers")]
    OwnHeader(String),
    #[error("both a bearer token and an Authorization header are set: keep one")]
    TwoAuthorizations,
    #[error("the value of header {0:?} has characters an HTTP header cannot carry")]
    HeaderValue(String),
    #[error("the bearer token is empty")]
    EmptyToken,
    #[error("the bearer token has characters an HTTP header cannot carry (a line break?)")]
    TokenCharacters,
}

/// The endpoint for `url`, checked: an http(s) URL with a host, header names and
/// values HTTP can carry, none of the headers the client sets itself, not two
/// `Authorization`s.
pub(crate) fn endpoint(
    url: &str,
    headers: &[(String, String)],
    bearer: Option<&Secret>,
) -> Result<Endpoint, BadEndpoint> {
    check_url(url)?;
    let mut out = Endpoint {
        url: url.to_string(),
        headers: Vec::new(),
        secrets: Vec::new(),
        login: None,
    };
    for (name, value) in headers {
        let key = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| BadEndpoint::HeaderName(name.clone()))?;
        if OWN_HEADERS.contains(&key.as_str()) {
            return Err(BadEndpoint::OwnHeader(name.clone()));
        }
        if key == AUTHORIZATION && bearer.is_some() {
            return Err(BadEndpoint::TwoAuthorizations);
        }
        let text = value.trim();
        let mut value =
            HeaderValue::from_str(text).map_err(|_| BadEndpoint::HeaderValue(name.clone()))?;
        value.set_sensitive(true);
        if text.len() >= 6 && !key.as_str().starts_with("mcp-") {
            out.secrets.push(text.to_string());
        }
        out.headers.push((key, value));
    }
    if let Some(token) = bearer {
        let token = token.expose().trim();
        if token.is_empty() {
            return Err(BadEndpoint::EmptyToken);
        }
        let value = bearer_value(token).ok_or(BadEndpoint::TokenCharacters)?;
        out.headers.push((AUTHORIZATION, value));
        out.secrets.push(token.to_string());
    }
    Ok(out)
}

/// An `http://` or `https://` URL with a host.
fn check_url(url: &str) -> Result<(), BadEndpoint> {
    let usable = ureq::http::Uri::try_from(url).ok().is_some_and(|u| {
        matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some_and(|h| !h.is_empty())
    });
    if usable {
        Ok(())
    } else {
        Err(BadEndpoint::Url(shown_url(url)))
    }
}

/// `Authorization: Bearer <token>`, marked sensitive; `None` if HTTP cannot carry it.
/// (The OAuth login's tokens go the same way.)
pub(crate) fn bearer_value(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// `url` as errors and logs show it: without user name, password, query or fragment,
/// where credentials are kept.
pub fn shown_url(url: &str) -> String {
    crate::secret::display_url(url)
}

#[cfg(test)]
#[path = "endpoint_tests.rs"]
mod tests;
