//! The HTTP requests of a login — metadata documents, registration, the token
//! endpoint — on ureq, as the MCP client's own requests: statuses are read, not
//! errors; redirects are not followed (a token request must not travel on); every
//! request ends within [`REQUEST_TIMEOUT`]; answers over [`MAX_ANSWER`] are refused.

use std::io::Read;
use std::time::Duration;

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use ureq::http::{HeaderName, HeaderValue};

/// Connecting, as the MCP client.
const CONNECT_TIMEOUT: Duration = super::super::http::CONNECT_TIMEOUT;
/// A whole metadata, registration or token request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Metadata documents and token answers are small; 1 MiB is plenty.
const MAX_ANSWER: u64 = 1024 * 1024;
/// Characters of an answer shown in an error.
const SHOWN: usize = 200;
/// What `application/x-www-form-urlencoded` and URL queries leave as they are: RFC
/// 3986's unreserved characters.
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why a request of a login got no whole answer.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No answer came: the connection, TLS or the time limit failed (the words say which).
    #[error("{0}")]
    NoAnswer(String),
    /// The answer began but broke off.
    #[error("the answer broke off: {0}")]
    BrokeOff(#[source] std::io::Error),
    /// The answer is over [`MAX_ANSWER`].
    #[error("the answer is larger than {MAX_ANSWER} bytes")]
    TooLarge,
}

/// One answer, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub location: Option<String>,
    /// Every `WWW-Authenticate` header.
    pub challenges: Vec<String>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON, if it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The start of the body on one line, `secrets` blanked.
    pub fn shown(&self, secrets: &[&str]) -> String {
        shown(&self.body, secrets)
    }
}

/// An OAuth `error` and its `error_description` if given (`invalid_grant: …`), each
/// as [`shown`]: the words of a refusal, from a token endpoint, a registration or the
/// redirect.
pub fn said(error: &str, description: Option<&str>, secrets: &[&str]) -> String {
    let mut out = shown(error.as_bytes(), secrets);
    if let Some(description) = description {
        out.push_str(": ");
        out.push_str(&shown(description.as_bytes(), secrets));
    }
    out
}

/// The start of `body` on one line, control characters escaped, `secrets` blanked.
pub fn shown(body: &[u8], secrets: &[&str]) -> String {
    let mut text = String::from_utf8_lossy(body).into_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        text = text.replace(secret, "***");
    }
    evolve_core::text::escape_controls(&evolve_core::text::one_line(&text, SHOWN), false)
}

/// The agent every request of a login uses.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_global(Some(REQUEST_TIMEOUT))
        .tls_config(crate::tls::config())
        .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// `GET url` (JSON wanted).
pub fn get(agent: &ureq::Agent, url: &str) -> Result<Answer, FetchError> {
    send(agent, url, None)
}

/// `POST url` with `body` of `content_type` and `headers`.
pub fn post(
    agent: &ureq::Agent,
    url: &str,
    content_type: &str,
    headers: &[(HeaderName, HeaderValue)],
    body: &[u8],
) -> Result<Answer, FetchError> {
    send(agent, url, Some((content_type, headers, body)))
}

/// A POST's content type, headers and body.
type Posted<'a> = (&'a str, &'a [(HeaderName, HeaderValue)], &'a [u8]);

/// `GET url`, or `POST` it with `post`: one path for both (one log line's code).
fn send(agent: &ureq::Agent, url: &str, post: Option<Posted<'_>>) -> Result<Answer, FetchError> {
    let method = if post.is_some() { "POST" } else { "GET" };
    log::debug!("OAuth {method} {}", crate::secret::display_url(url));
    read(match post {
        None => agent.get(url).header("accept", "application/json").call(),
        Some((content_type, headers, body)) => {
            let mut request = agent
                .post(url)
                .header("content-type", content_type)
                .header("accept", "application/json, text/event-stream");
            for (name, value) in headers {
                request = request.header(name.clone(), value.clone());
            }
            request.send(body)
        }
    })
}

fn read(sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Answer, FetchError> {
    let response = sent.map_err(|e| FetchError::NoAnswer(describe(e)))?;
    let header = |name: &str| {
        let mut values = Vec::new();
        for value in response.headers().get_all(name) {
            if let Ok(text) = value.to_str() {
                values.push(text.to_string());
            }
        }
        values
    };
    let status = response.status().as_u16();
    let location = header("location").into_iter().next();
    let challenges = header("www-authenticate");
    let mut body = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(MAX_ANSWER + 1)
        .read_to_end(&mut body)
        .map_err(FetchError::BrokeOff)?;
    if body.len() as u64 > MAX_ANSWER {
        return Err(FetchError::TooLarge);
    }
    Ok(Answer {
        status,
        body,
        location,
        challenges,
    })
}

/// A ureq failure in the user's words: as the MCP client's own requests word it (one
/// wording, one copy of its code), but for a timeout, a broken connection and TLS.
///
/// Not inlined (measured: the binary is smaller so).
#[inline(never)]
fn describe(e: ureq::Error) -> String {
    use super::super::http::{self, HttpErrorKind as K};
    use ureq::Error as E;
    match e {
        E::Timeout(t) if !matches!(t, ureq::Timeout::Connect | ureq::Timeout::Resolve) => {
            format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
        }
        E::Io(io) if io.kind() != std::io::ErrorKind::ConnectionRefused => io.to_string(),
        E::Tls(m) => format!("TLS failed: {m}"),
        E::Rustls(r) => format!("TLS failed: {r}"),
        other => match http::describe(other) {
            K::Unreachable(text) | K::Broken(text) | K::Protocol(text) => text,
            _ => String::new(),
        },
    }
}

/// `a=1&b=2`, each name and value percent-encoded.
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(&mut out, k);
        out.push('=');
        encode_into(&mut out, v);
    }
    out
}

/// `text` percent-encoded onto `out`: all but RFC 3986's unreserved characters, which
/// `application/x-www-form-urlencoded` and URL queries leave as they are.
pub fn encode_into(out: &mut String, text: &str) {
    out.extend(utf8_percent_encode(text, ENCODED));
}

/// `url` with `pairs` added to its query.
pub fn with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", form(pairs))
}

/// The pairs of a query (`+` is a space), percent-decoded (a `%` without two hex digits
/// after it stays as it is).
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut pairs = Vec::new();
    for p in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        pairs.push((decode(k), decode(v)));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_queries_round_trip() {
        let pairs = [
            ("redirect_uri", "http://127.0.0.1:5/callback"),
            ("scope", "a b:c"),
            ("x", "ü&=+"),
        ];
        let text = form(&pairs);
        assert_eq!(
            text,
            "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&scope=a%20b%3Ac&x=%C3%BC%26%3D%2B"
        );
        let back: Vec<(String, String)> = query_pairs(&text);
        let want: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(back, want);
        assert_eq!(
            query_pairs("a=x+y&b&&c=%zz"),
            [
                ("a".to_string(), "x y".to_string()),
                ("b".to_string(), String::new()),
                ("c".to_string(), "%zz".to_string()),
            ]
        );
        assert_eq!(
            query_pairs("d=%2B%e4%BD%a0%+1&e=%4&f=%"),
            [
                ("d".to_string(), "+你% 1".to_string()),
                ("e".to_string(), "%4".to_string()),
                ("f".to_string(), "%".to_string()),
            ]
        );
        assert_eq!(
            query_pairs("g=%FF"),
            [("g".to_string(), "\u{fffd}".to_string())]
        );
        assert_eq!(
            with_query("https://a/authorize", &[("k", "v")]),
            "https://a/authorize?k=v"
        );
        assert_eq!(
            with_query("https://a/authorize?t=1", &[("k", "v")]),
            "https://a/authorize?t=1&k=v"
        );
    }

    #[test]
    fn shown_answers_are_one_line_without_secrets() {
        assert_eq!(
            shown(
                b"{\"error\":\"bad\",\n\"token\":\"sekret-123\"}",
                &["sekret-123"]
            ),
            "{\"error\":\"bad\", \"token\":\"***\"}"
        );
    }
}
