//! How a failed exchange becomes the [`LlmError`] a user reads: an HTTP error status
//! with the server's own message (the API key blanked out), a connection that could not
//! be made, a transport failure; each says what to set, and whether it may be retried.

use super::cap;
use super::retry::Retry;
use super::transport::{self, Failure};
use super::wire;
use super::{Client, LlmError, Unreached};
use crate::secret::display_url;

/// A failed attempt and whether it may be retried.
type Failed = (LlmError, Retry);

impl Client {
    /// An HTTP error status as the user reads it.
    pub(super) fn status_error(&self, url: &str, status: u16, body: &str) -> LlmError {
        let mut message = wire::server_message(body);
        if let Some(key) = &self.config.api_key {
            let key = key.expose();
            if key.len() >= 4 {
                message = message.replace(key, "***");
            }
        }
        let hint = match status {
            401 | 403 if self.config.api_key.is_none() => {
                "no API key is set: set OPENAI_API_KEY".to_string()
            }
            401 | 403 => "check OPENAI_API_KEY".to_string(),
            404 => "check OPENAI_BASE_URL (should end in /v1) and the model name EVOLVE_MODEL"
                .to_string(),
            413 => "the request is too large: lower the context window in config.toml".to_string(),
            429 => {
                "the server is rate limiting: wait a moment, or lower the request rate".to_string()
            }
            400 | 422 => {
                "the server refused the request: check EVOLVE_MODEL and the context window in \
                 config.toml"
                    .to_string()
            }
            s if s >= 500 => {
                "the server failed: check its logs (a local server may be out of memory or \
                 still loading the model)"
                    .to_string()
            }
            _ => String::new(),
        };
        LlmError::Status {
            url: display_url(url),
            status,
            message,
            hint,
        }
    }

    /// A connection failure, with what to set when nothing is configured.
    pub(super) fn connect_error(&self, url: &str, why: Unreached, hint: Option<&str>) -> LlmError {
        let hint = if self.config.base_url_is_default {
            "nothing is configured: set OPENAI_BASE_URL (e.g. https://api.openai.com/v1), \
             OPENAI_API_KEY and EVOLVE_MODEL, or run `evolve config init`"
        } else {
            hint.unwrap_or("is the server running? set OPENAI_BASE_URL")
        };
        LlmError::Connect {
            url: display_url(url),
            why,
            hint: hint.to_string(),
        }
    }

    pub(super) fn failure(&self, f: Failure, url: &str) -> Failed {
        let protocol = |detail: String| {
            let url = display_url(url);
            (LlmError::Protocol { url, detail }, Retry::No)
        };
        match f {
            Failure::TooLarge(n) => protocol(format!(
                "the answer is larger than {} and was refused",
                cap::size(usize::try_from(n).unwrap_or(usize::MAX))
            )),
            Failure::Spawn(e) => protocol(format!("cannot start the request thread: {e}")),
            Failure::Http(e) => self.http_failure(e, url),
        }
    }

    fn http_failure(&self, e: ureq::Error, url: &str) -> Failed {
        use std::io::ErrorKind as K;
        use ureq::Error as E;
        let tls_hint = "check the server's certificate, or use http:// for a local server";
        let connect = |why: Unreached, hint: Option<&str>, how: Retry| {
            (self.connect_error(url, why, hint), how)
        };
        match e {
            E::Timeout(t) => match transport::timeout_phase(t) {
                None => connect(
                    Unreached::NoConnection {
                        secs: self.config.timeouts.connect.as_secs_f32(),
                    },
                    None,
                    Retry::Backoff,
                ),
                Some(phase) => {
                    let url = display_url(url);
                    (LlmError::Timeout { url, phase }, Retry::No)
                }
            },
            E::Io(io) => {
                let why = match io.kind() {
                    K::ConnectionRefused => Unreached::Refused,
                    K::ConnectionReset
                    | K::ConnectionAborted
                    | K::BrokenPipe
                    | K::UnexpectedEof => Unreached::Closed,
                    _ => Unreached::Io(io),
                };
                connect(why, None, Retry::Backoff)
            }
            E::HostNotFound => connect(
                Unreached::HostNotFound,
                Some("check the host name in OPENAI_BASE_URL"),
                Retry::Backoff,
            ),
            E::ConnectionFailed => connect(Unreached::Failed, None, Retry::Backoff),
            E::BadUri(u) => connect(
                Unreached::BadUrl(u),
                Some("set OPENAI_BASE_URL to a URL like http://127.0.0.1:11434/v1"),
                Retry::No,
            ),
            E::Tls(m) => connect(Unreached::Tls(m), Some(tls_hint), Retry::No),
            E::Rustls(r) => connect(Unreached::Rustls(Box::new(r)), Some(tls_hint), Retry::No),
            E::TooManyRedirects | E::RedirectFailed => {
                let url = display_url(url);
                let detail = "the server redirected the request: check OPENAI_BASE_URL \
                              (http or https, the path ending in /v1)"
                    .to_string();
                (LlmError::Protocol { url, detail }, Retry::No)
            }
            other => {
                let url = display_url(url);
                let detail = format!("not a valid HTTP answer: {other}");
                (LlmError::Protocol { url, detail }, Retry::No)
            }
        }
    }
}
