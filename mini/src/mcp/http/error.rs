//! What goes wrong talking to an MCP server over HTTP, in the user's words: the URL
//! without credentials, the status and the start of the server's text with secrets
//! blanked out, and what to check.

use super::{CONNECT_TIMEOUT, SHOWN_BODY};

/// A failed exchange with an MCP server over HTTP.
#[derive(Debug)]
pub struct HttpError {
    /// The server's URL as [`shown_url`] prints it.
    pub url: String,
    /// What went wrong.
    pub kind: HttpErrorKind,
}

/// What went wrong talking to an MCP server over HTTP.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpErrorKind {
    /// No connection (refused, unknown host, TLS, connect timeout).
    Unreachable(String),
    /// The server answered with an error status.
    Status {
        status: u16,
        /// The start of its text, one line, secrets blanked.
        body: String,
        /// Where a redirect pointed (query cut).
        location: Option<String>,
    },
    /// The connection broke while sending or reading.
    Broken(String),
    /// An answer or event passed the byte limit.
    TooLarge { what: &'static str, limit: usize },
    /// The answer is not what an MCP endpoint sends.
    Protocol(String),
    /// No thread could be started for the request.
    NoThread(String),
    /// A refusal the OAuth login could not mend: what happened and what to do.
    Login(String),
}

impl HttpError {
    pub(super) fn new(url: &str, kind: HttpErrorKind) -> HttpError {
        HttpError {
            url: url.to_string(),
            kind,
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = &self.url;
        match &self.kind {
            HttpErrorKind::Unreachable(detail) => write!(
                f,
                "cannot reach the MCP server at {url}: {detail} (is it running, and is the URL right?)"
            ),
            HttpErrorKind::Status {
                status,
                body,
                location,
            } => {
                let reason = ureq::http::StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default();
                write!(f, "the MCP server at {url} answered HTTP {status}{reason}")?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                match (status, location) {
                    // The old HTTP+SSE transport's endpoint (`import` detects it too).
                    (400..=499, _) if url.trim_end_matches('/').ends_with("/sse") => f.write_str(
                        " (a URL ending in /sse is the old HTTP+SSE transport, which evolve does \
                         not speak: use the server's streamable HTTP endpoint, often /mcp, or run \
                         the server over stdio, e.g. through `npx mcp-remote URL`)",
                    ),
                    (300..=399, Some(to)) => write!(f, " (it redirects to {to}: use that URL)"),
                    (300..=399, None) => f.write_str(" (a redirect: check the URL)"),
                    (401 | 403, _) => f.write_str(
                        " (check the bearer token and headers configured for this server)",
                    ),
                    (404, _) => f.write_str(" (check the URL's path, often /mcp)"),
                    _ => Ok(()),
                }
            }
            HttpErrorKind::Broken(detail) => {
                write!(f, "the connection to the MCP server at {url} broke: {detail}")
            }
            HttpErrorKind::TooLarge { what, limit } => write!(
                f,
                "the MCP server at {url} sent {what} larger than {limit} bytes; it was refused"
            ),
            HttpErrorKind::Protocol(detail) => {
                write!(f, "unexpected answer from the MCP server at {url}: {detail}")
            }
            HttpErrorKind::NoThread(detail) => {
                write!(f, "cannot start a thread for a request to {url}: {detail}")
            }
            HttpErrorKind::Login(detail) => write!(f, "the MCP server at {url} {detail}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// A ureq failure in the user's words (the OAuth login's requests word most of them
/// so too: `oauth::fetch`).
pub(crate) fn describe(e: ureq::Error) -> HttpErrorKind {
    use std::io::ErrorKind as K;
    use ureq::Error as E;
    match e {
        E::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => HttpErrorKind::Unreachable(
            format!("no connection within {} s", CONNECT_TIMEOUT.as_secs()),
        ),
        E::Timeout(t) => HttpErrorKind::Broken(format!("timed out ({t})")),
        E::Io(io) => match io.kind() {
            K::ConnectionRefused => HttpErrorKind::Unreachable("connection refused".into()),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                HttpErrorKind::Broken("the server closed the connection".into())
            }
            _ => HttpErrorKind::Broken(io.to_string()),
        },
        E::HostNotFound => HttpErrorKind::Unreachable("host not found".into()),
        E::ConnectionFailed => HttpErrorKind::Unreachable("connection failed".into()),
        E::BadUri(_) => HttpErrorKind::Unreachable("not a usable URL".into()),
        E::Tls(m) => HttpErrorKind::Unreachable(format!(
            "TLS failed: {m} (check the server's certificate, or use http:// for a local server)"
        )),
        E::Rustls(r) => HttpErrorKind::Unreachable(format!(
            "TLS failed: {r} (check the server's certificate, or use http:// for a local server)"
        )),
        other => HttpErrorKind::Protocol(format!("not a valid HTTP answer: {other}")),
    }
}

/// The start of a server's text, on one line, secrets blanked, control characters
/// escaped.
pub(super) fn shown_body(body: &[u8], secrets: &[String]) -> String {
    let mut text = String::from_utf8_lossy(body).into_owned();
    for secret in secrets {
        text = text.replace(secret.as_str(), "***");
    }
    evolve_core::text::escape_controls(&evolve_core::text::one_line(&text, SHOWN_BODY), false)
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
