//! Which OAuth client evolve is at an authorization server, in the order the MCP spec
//! (2025-11-25) gives: the client id the user registered beforehand (`oauth_client_id`,
//! with `oauth_client_secret` for a confidential client); else a client ID metadata
//! document, when the authorization server takes them and the user hosts one for evolve
//! (`oauth_client_metadata_url`: a local binary has no https URL of its own to serve it
//! from); else the client evolve registered there before, if it can listen on the same
//! redirect URI again; else dynamic client registration (RFC 7591) as a public native
//! client (`token_endpoint_auth_method: none`, unless the server takes only secrets).
//! An authorization server offering none of these is an error that says how to
//! pre-register.

use serde_json::Value;

use super::discover::AuthServer;
use super::fetch;
use super::LoginError;
use crate::mcp_spec::OAuthClient;
use crate::secret::Secret;
use crate::store::McpLogin;

/// What `client_name` evolve registers under.
const CLIENT_NAME: &str = "Evolve";

/// How the client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// A public client: `client_id` in the form.
    None,
    /// `Authorization: Basic` with the id and secret (RFC 6749 §2.3.1).
    Basic,
    /// `client_id` and `client_secret` in the form.
    Post,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
        }
    }

    pub fn parse(text: &str) -> Option<AuthMethod> {
        match text {
            "none" => Some(AuthMethod::None),
            "client_secret_basic" => Some(AuthMethod::Basic),
            "client_secret_post" => Some(AuthMethod::Post),
            _ => None,
        }
    }

    /// For a client with a secret: what the server lists, basic first (RFC 8414's
    /// default when it lists nothing); without a secret, none.
    fn for_secret(has_secret: bool, supported: &[String]) -> AuthMethod {
        let listed = |m: AuthMethod| supported.iter().any(|s| s == m.as_str());
        if !has_secret {
            AuthMethod::None
        } else if listed(AuthMethod::Basic) || supported.is_empty() {
            AuthMethod::Basic
        } else if listed(AuthMethod::Post) {
            AuthMethod::Post
        } else {
            AuthMethod::Basic
        }
    }
}

/// The client of one login.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub secret: Option<Secret>,
    pub method: AuthMethod,
    /// Set when evolve registered the client itself, for this redirect URI.
    pub registered_redirect: Option<String>,
    /// How it came to be, for the user.
    pub how: &'static str,
}

/// The client for a login at `server` with `redirect_uri`. Not inlined (as
/// `discover::discover`).
#[inline(never)]
pub fn client(
    agent: &ureq::Agent,
    configured: &OAuthClient,
    server: &AuthServer,
    kept: Option<&McpLogin>,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Client, LoginError> {
    if let Some(id) = configured.client_id.as_deref().filter(|i| !i.is_empty()) {
        let secret = configured.client_secret.clone();
        return Ok(Client {
            id: id.to_string(),
            method: AuthMethod::for_secret(secret.is_some(), &server.auth_methods),
            secret,
            registered_redirect: None,
            how: "the configured client id",
        });
    }
    if let Some(url) = configured.metadata_url.as_deref() {
        if server.client_metadata_documents {
            return Ok(Client {
                id: url.to_string(),
                secret: None,
                method: AuthMethod::None,
                registered_redirect: None,
                how: "the client ID metadata document",
            });
        }
    }
    if let Some(kept) = kept.filter(|k| {
        k.issuer == server.issuer
            && !k.client_id.is_empty()
            && k.registered_redirect.as_deref() == Some(redirect_uri)
    }) {
        if let Some(method) = AuthMethod::parse(&kept.auth_method) {
            return Ok(Client {
                id: kept.client_id.clone(),
                secret: kept.client_secret.clone(),
                method,
                registered_redirect: kept.registered_redirect.clone(),
                how: "the client evolve registered before",
            });
        }
    }
    let Some(endpoint) = server.registration_endpoint.as_deref() else {
        return Err(LoginError::Setup(format!(
            "the authorization server {} does not let clients register themselves (it has no \
             registration_endpoint){}: register an OAuth client there with the redirect URI \
             http://127.0.0.1/callback (any port), then add the server again with \
             --oauth-client-id ID (and --oauth-client-secret-env VAR for a confidential client)",
            crate::secret::display_url(&server.issuer),
            if server.client_metadata_documents {
                ", and evolve has no client ID metadata document of its own (set \
                 oauth_client_metadata_url to one you host)"
            } else {
                ""
            }
        )));
    };
    register(agent, endpoint, server, redirect_uri, scope)
}

/// Dynamic client registration (RFC 7591 §3).
fn register(
    agent: &ureq::Agent,
    endpoint: &str,
    server: &AuthServer,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Client, LoginError> {
    let listed = |m: AuthMethod| server.auth_methods.iter().any(|s| s == m.as_str());
    // A native app cannot keep a secret: a public client, unless the server takes only
    // clients with secrets.
    let asked = if server.auth_methods.is_empty() || listed(AuthMethod::None) {
        AuthMethod::None
    } else if listed(AuthMethod::Basic) {
        AuthMethod::Basic
    } else if listed(AuthMethod::Post) {
        AuthMethod::Post
    } else {
        AuthMethod::None
    };
    let body = registration(redirect_uri, asked, scope);
    let what = "client registration";
    let answer = fetch::post(agent, endpoint, "application/json", &[], body.as_bytes())
        .map_err(|e| LoginError::exchange(what, endpoint, e.to_string()))?;
    let doc = answer.json().unwrap_or(Value::Null);
    if !answer.ok() {
        return Err(LoginError::exchange(
            what,
            endpoint,
            match doc.get("error").and_then(Value::as_str) {
                Some(error) => format!(
                    "the authorization server refused it: {}",
                    fetch::said(
                        error,
                        doc.get("error_description").and_then(Value::as_str),
                        &[]
                    )
                ),
                None => format!("HTTP {}: {}", answer.status, answer.shown(&[])),
            },
        ));
    }
    let id = doc
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            LoginError::exchange(what, endpoint, "its answer has no client_id".into())
        })?;
    let secret = doc
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(Secret::new);
    let method = match doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        Some(given) => AuthMethod::parse(given).ok_or_else(|| {
            LoginError::exchange(
                what,
                endpoint,
                format!(
                    "it registered evolve for token endpoint authentication {:?}, which evolve \
                     does not do (none, client_secret_basic, client_secret_post)",
                    fetch::shown(given.as_bytes(), &[])
                ),
            )
        })?,
        None => AuthMethod::for_secret(secret.is_some(), &server.auth_methods),
    };
    if method != AuthMethod::None && secret.is_none() {
        return Err(LoginError::exchange(
            what,
            endpoint,
            format!(
                "it registered evolve for {} but gave no client_secret",
                method.as_str()
            ),
        ));
    }
    Ok(Client {
        id: id.to_string(),
        secret,
        method,
        registered_redirect: Some(redirect_uri.to_string()),
        how: "dynamic client registration",
    })
}

/// The registration request's body (RFC 7591 §2). Written as text, keys in order as
/// serde_json writes an object: building a `Value` with `json!` cost the binary more.
fn registration(redirect_uri: &str, method: AuthMethod, scope: Option<&str>) -> String {
    format!(
        concat!(
            r#"{{"client_name":"{}","grant_types":["authorization_code","refresh_token"],"#,
            r#""redirect_uris":[{}],"response_types":["code"],{}"#,
            r#""token_endpoint_auth_method":"{}"}}"#
        ),
        CLIENT_NAME,
        Value::from(redirect_uri),
        scope.map_or(String::new(), |s| format!(r#""scope":{},"#, Value::from(s))),
        method.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_registration_asks_for_a_native_client() {
        let uri = "http://127.0.0.1:4000/callback";
        let body = |scope| {
            serde_json::from_str::<Value>(&registration(uri, AuthMethod::None, scope))
                .expect("JSON")
        };
        let mut want = json!({
            "client_name": "Evolve",
            "redirect_uris": [uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        assert_eq!(body(None), want);
        want["scope"] = json!("a \"b\"");
        assert_eq!(body(Some("a \"b\"")), want);
        assert_eq!(
            registration(uri, AuthMethod::Post, Some("s")),
            want_text(uri)
        );
    }

    fn want_text(uri: &str) -> String {
        let doc = json!({
            "client_name": "Evolve",
            "redirect_uris": [uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": "s",
            "token_endpoint_auth_method": "client_secret_post",
        });
        doc.to_string()
    }

    #[test]
    fn a_secret_goes_the_way_the_server_takes_it() {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases = [
            (false, list(&["client_secret_basic"]), AuthMethod::None),
            (true, list(&[]), AuthMethod::Basic),
            (
                true,
                list(&["client_secret_post", "client_secret_basic"]),
                AuthMethod::Basic,
            ),
            (true, list(&["client_secret_post"]), AuthMethod::Post),
            (true, list(&["private_key_jwt"]), AuthMethod::Basic),
        ];
        for (secret, supported, want) in cases {
            assert_eq!(
                AuthMethod::for_secret(secret, &supported),
                want,
                "{supported:?}"
            );
        }
    }

    #[test]
    fn the_client_comes_from_configuration_then_documents_then_the_last_registration() {
        let agent = fetch::agent();
        let server = AuthServer {
            issuer: "https://auth.example.com".into(),
            client_metadata_documents: true,
            ..AuthServer::default()
        };
        let redirect = "http://127.0.0.1:4000/callback";
        let configured = OAuthClient {
            client_id: Some("pre-registered".into()),
            client_secret: Some(Secret::new("s3cret-value")),
            metadata_url: Some("https://me.example/evolve.json".into()),
        };
        let c = client(&agent, &configured, &server, None, redirect, None).expect("client");
        assert_eq!(
            (c.id.as_str(), c.method),
            ("pre-registered", AuthMethod::Basic)
        );
        let documents = OAuthClient {
            metadata_url: configured.metadata_url.clone(),
            ..OAuthClient::default()
        };
        let c = client(&agent, &documents, &server, None, redirect, None).expect("client");
        assert_eq!(
            (c.id.as_str(), c.method),
            ("https://me.example/evolve.json", AuthMethod::None)
        );
        let kept = McpLogin {
            issuer: server.issuer.clone(),
            client_id: "registered-before".into(),
            auth_method: "none".into(),
            registered_redirect: Some(redirect.into()),
            ..McpLogin::default()
        };
        let none = OAuthClient::default();
        let c = client(&agent, &none, &server, Some(&kept), redirect, None).expect("client");
        assert_eq!(c.id, "registered-before");
        // Another port, or no registration endpoint: nothing to fall back on.
        let err = client(
            &agent,
            &none,
            &server,
            Some(&kept),
            "http://127.0.0.1:4001/callback",
            None,
        )
        .expect_err("no way to register");
        let text = err.to_string();
        assert!(
            text.contains("--oauth-client-id") && text.contains("oauth_client_metadata_url"),
            "{text}"
        );
    }
}
