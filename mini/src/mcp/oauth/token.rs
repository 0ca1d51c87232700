//! The token endpoint (OAuth 2.1 §3.2): the code exchanged for tokens, a refresh token
//! for new ones, each request carrying the `resource` (RFC 8707) and the client's
//! authentication ([`AuthMethod`]). An answer is a Bearer access token, maybe a refresh
//! token, its lifetime and the scopes granted; a refusal is the server's `error` and
//! `error_description`, told apart from the server being unreachable or broken, since
//! only a refusal means the refresh token is spent.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;
use ureq::http::{HeaderName, HeaderValue};

use super::fetch;
use super::register::AuthMethod;
use crate::secret::Secret;

/// What the token endpoint gave.
#[derive(Debug)]
pub struct Issued {
    pub access: Secret,
    pub refresh: Option<Secret>,
    /// Seconds the access token lives, if said.
    pub expires_in: Option<i64>,
    /// The scopes granted, if said.
    pub scope: Option<String>,
}

/// Why no tokens came.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenError {
    /// The authorization server said no (`invalid_grant`: the code or the refresh token
    /// is not good any more).
    Refused(String),
    /// It could not be asked, or its answer is not a token answer.
    Failed(String),
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Refused(why) | TokenError::Failed(why) => f.write_str(why),
        }
    }
}

/// The client as the token endpoint sees it.
pub struct ClientAuth<'a> {
    pub id: &'a str,
    pub secret: Option<&'a Secret>,
    pub method: AuthMethod,
}

/// POSTs `grant` (with the client's authentication) to the token endpoint.
pub fn request(
    agent: &ureq::Agent,
    endpoint: &str,
    client: &ClientAuth<'_>,
    grant: &[(&str, &str)],
) -> Result<Issued, TokenError> {
    let mut pairs: Vec<(&str, &str)> = grant.to_vec();
    let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
    let secret = client.secret.map(Secret::expose).unwrap_or_default();
    // The id goes in the form whatever the method: servers that take Basic
    // authentication often look it up there first (the Python SDK's does).
    pairs.push(("client_id", client.id));
    match client.method {
        AuthMethod::None => {}
        AuthMethod::Post => pairs.push(("client_secret", secret)),
        AuthMethod::Basic => {
            // RFC 6749 §2.3.1: both form-encoded before base64.
            let mut pair = String::new();
            fetch::encode_into(&mut pair, client.id);
            pair.push(':');
            fetch::encode_into(&mut pair, secret);
            let mut basic = String::from("Basic ");
            basic += &STANDARD.encode(pair);
            let mut value = HeaderValue::from_str(&basic)
                .map_err(|_| TokenError::Failed("the client id cannot be sent".into()))?;
            value.set_sensitive(true);
            headers.push((ureq::http::header::AUTHORIZATION, value));
        }
    }
    let mut hidden: Vec<&str> = Vec::new();
    for (k, v) in &pairs {
        if matches!(
            *k,
            "code" | "code_verifier" | "refresh_token" | "client_secret"
        ) {
            hidden.push(v);
        }
    }
    let answer = fetch::post(
        agent,
        endpoint,
        "application/x-www-form-urlencoded",
        &headers,
        fetch::form(&pairs).as_bytes(),
    )
    .map_err(|e| {
        TokenError::Failed(format!(
            "cannot reach the token endpoint {}: {e}",
            crate::secret::display_url(endpoint)
        ))
    })?;
    parse(answer.status, &answer.body, &hidden).map_err(|e| match e {
        TokenError::Failed(why) => TokenError::Failed(format!(
            "the token endpoint {} {why}",
            crate::secret::display_url(endpoint)
        )),
        refused => refused,
    })
}

/// A token endpoint's answer.
///
/// Not inlined into [`request`] (measured: the binary is smaller so).
#[inline(never)]
fn parse(status: u16, body: &[u8], hidden: &[&str]) -> Result<Issued, TokenError> {
    let doc: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let text = |key: &str| doc.get(key).and_then(Value::as_str);
    let shown = |text: &str| fetch::shown(text.as_bytes(), hidden);
    if !(200..300).contains(&status) {
        return Err(match text("error") {
            Some(error) if (400..500).contains(&status) => {
                TokenError::Refused(fetch::said(error, text("error_description"), hidden))
            }
            _ => TokenError::Failed(format!(
                "answered HTTP {status}: {}",
                fetch::shown(body, hidden)
            )),
        });
    }
    let access = text("access_token")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            TokenError::Failed(format!(
                "answered without an access_token: {}",
                fetch::shown(body, hidden)
            ))
        })?;
    if let Some(kind) = text("token_type").filter(|t| !t.eq_ignore_ascii_case("bearer")) {
        return Err(TokenError::Failed(format!(
            "gave a token of type {:?}; evolve sends Bearer tokens only",
            shown(kind)
        )));
    }
    let expires_in = match doc.get("expires_in") {
        Some(Value::Number(n)) => n.as_f64().map(|s| s as i64),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    Ok(Issued {
        access: Secret::new(access),
        refresh: text("refresh_token")
            .filter(|t| !t.is_empty())
            .map(Secret::new),
        expires_in,
        scope: text("scope")
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_answers_are_read_or_refused_with_the_reason() {
        let ok = parse(
            200,
            br#"{"access_token":"at-1","token_type":"bearer","expires_in":3600,"refresh_token":"rt-1","scope":"a b"}"#,
            &[],
        )
        .expect("tokens");
        assert_eq!(ok.access.expose(), "at-1");
        assert_eq!(ok.refresh.as_ref().map(Secret::expose), Some("rt-1"));
        assert_eq!(
            (ok.expires_in, ok.scope.as_deref()),
            (Some(3600), Some("a b"))
        );
        let bare = parse(200, br#"{"access_token":"at","expires_in":"60"}"#, &[]).expect("tokens");
        assert_eq!((bare.expires_in, bare.refresh.is_none()), (Some(60), true));

        let cases: &[(u16, &[u8], TokenError)] = &[
            (
                400,
                br#"{"error":"invalid_grant","error_description":"refresh token rt-9 revoked"}"#,
                TokenError::Refused("invalid_grant: refresh token *** revoked".into()),
            ),
            (
                500,
                b"oops rt-9",
                TokenError::Failed("answered HTTP 500: oops ***".into()),
            ),
            (
                200,
                br#"{"token_type":"Bearer"}"#,
                TokenError::Failed(
                    "answered without an access_token: {\"token_type\":\"Bearer\"}".into(),
                ),
            ),
            (
                200,
                br#"{"access_token":"x","token_type":"DPoP"}"#,
                TokenError::Failed(
                    "gave a token of type \"DPoP\"; evolve sends Bearer tokens only".into(),
                ),
            ),
        ];
        for (status, body, want) in cases {
            let got = parse(*status, body, &["rt-9"]).expect_err("an error");
            assert_eq!(&got, want);
        }
    }
}
