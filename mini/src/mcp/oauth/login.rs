//! One login, in two steps so that the CLI and the web UI share it: [`start`] finds
//! the authorization server, settles the client and listens for the redirect, giving
//! the URL to open; [`Started::finish`] waits for the browser, exchanges the code and
//! keeps the tokens.
//!
//! The scopes asked for: those the server's challenge names (its 401 to a request
//! without a token, and what later refusals asked for — a step-up asks for the union
//! with what was granted), else the resource's `scopes_supported`, else none; plus
//! `offline_access` when the authorization server lists it, so a refresh token comes.

use std::time::Instant;

use ureq::http::{HeaderName, HeaderValue};

use super::challenge::Asked;
use super::discover::{self, Found};
use super::pkce::{self, Pkce};
use super::redirect::{self, Loopback};
use super::register::{self, Client};
use super::token::{self, ClientAuth, TokenError};
use super::{fetch, union, LoginError};
use crate::cancel::Cancel;
use crate::mcp_spec::{ServerSpec, Transport};
use crate::store::{McpLogin, Store};

/// A login waiting for the browser.
pub struct Started {
    /// The URL the user opens (it holds no secret: the PKCE challenge and the state
    /// only).
    pub url: String,
    /// Where the browser comes back to.
    pub redirect_uri: String,
    /// How evolve's client came to be (`dynamic client registration`, …).
    pub client_how: &'static str,
    server: String,
    server_url: String,
    agent: ureq::Agent,
    loopback: Loopback,
    state: String,
    pkce: Pkce,
    client: Client,
    found: Found,
    scope: Option<String>,
}

/// What a finished login got.
#[derive(Debug, Clone)]
pub struct Granted {
    /// The scopes granted (as the server said, else as asked).
    pub scope: Option<String>,
    /// Seconds the access token lives, if said.
    pub expires_in: Option<i64>,
    /// A refresh token came: the login renews itself.
    pub renewable: bool,
}

/// An HTTP server's URL and headers.
type Endpoint<'a> = (&'a str, &'a [(String, String)]);

/// The endpoint of an HTTP server that does not send an Authorization of its own.
fn endpoint_of(spec: &ServerSpec) -> Result<Endpoint<'_>, LoginError> {
    let name = &spec.name;
    match &spec.transport {
        Transport::Stdio { .. } => Err(LoginError::Setup(format!(
            "{name} is a program (stdio), not an HTTP server: OAuth is for remote servers; give \
             a program its credentials in its environment (`evolve mcp add {name} --env K=V -- …`)"
        ))),
        _ if !super::applies(spec) => Err(LoginError::Setup(format!(
            "{name} is configured with its own Authorization (a bearer token or header): \
             remove it (add the server again without --bearer-env or that header) to log in \
             with OAuth instead"
        ))),
        Transport::Http { url, headers, .. } => Ok((url, headers)),
    }
}

/// Finds the authorization server of `spec`, settles the client and listens for the
/// redirect.
pub fn start(spec: &ServerSpec, store: &Store) -> Result<Started, LoginError> {
    let (server_url, headers) = endpoint_of(spec)?;
    let agent = fetch::agent();
    let kept = store.mcp_login(&spec.name)?.filter(|k| k.url == server_url);
    let asked = probe(&agent, server_url, headers)?;
    if let Asked::Other(scheme) = &asked {
        return Err(LoginError::Setup(format!(
            "{} asks for {} authentication, not an OAuth (Bearer) token: give it its \
             credentials as a header (`evolve mcp add {} --url … --header K:V --replace`)",
            spec.name,
            fetch::shown(scheme.as_bytes(), &[]),
            spec.name
        )));
    }
    let challenge = asked.bearer();
    let resource_metadata = challenge
        .and_then(|c| c.resource_metadata.clone())
        .or_else(|| kept.as_ref().and_then(|k| k.resource_metadata.clone()));
    let found = discover::discover(&agent, server_url, resource_metadata.as_deref())?;
    let challenged = union(
        kept.as_ref().and_then(|k| k.wanted_scope.as_deref()),
        challenge.and_then(|c| c.scope.as_deref()),
    );
    let mut scope = challenged.or_else(|| {
        found
            .scopes
            .as_ref()
            .and_then(|s| union(Some(&s.join(" ")), None))
    });
    if found
        .server
        .scopes_supported
        .iter()
        .any(|s| s == "offline_access")
    {
        scope = union(scope.as_deref(), Some("offline_access"));
    }
    // The redirect URI of a client registered before, if its port is free again.
    let port = kept
        .as_ref()
        .filter(|k| k.issuer == found.server.issuer)
        .and_then(|k| k.registered_redirect.as_deref())
        .and_then(redirect::port_of);
    let loopback = Loopback::bind(port)?;
    let redirect_uri = loopback.redirect_uri();
    let Transport::Http { oauth, .. } = &spec.transport else {
        unreachable!("endpoint_of took only HTTP servers")
    };
    let client = register::client(
        &agent,
        oauth,
        &found.server,
        kept.as_deref(),
        &redirect_uri,
        scope.as_deref(),
    )?;
    if client.registered_redirect.is_some() {
        // Kept at once: a login that is not finished does not register evolve again.
        let mut login = kept
            .filter(|k| k.issuer == found.server.issuer)
            .unwrap_or_default();
        login.url = server_url.to_string();
        login.issuer = found.server.issuer.clone();
        login.client_id = client.id.clone();
        login.client_secret = client.secret.clone();
        login.auth_method = client.method.as_str().to_string();
        login.registered_redirect = client.registered_redirect.clone();
        store.put_mcp_login(&spec.name, &login)?;
    }
    let setup = |e: pkce::NoRandom| LoginError::Setup(e.to_string());
    let pkce = Pkce::new().map_err(setup)?;
    let state = pkce::random(16).map_err(setup)?;
    let mut params: Vec<(&str, &str)> = vec![
        ("response_type", "code"),
        ("client_id", &client.id),
        ("redirect_uri", &redirect_uri),
        ("code_challenge", &pkce.challenge),
        ("code_challenge_method", "S256"),
        ("state", &state),
    ];
    if let Some(scope) = &scope {
        params.push(("scope", scope));
    }
    params.push(("resource", &found.resource));
    let url = fetch::with_query(&found.server.authorization_endpoint, &params);
    log::info!(
        "MCP server {:?}: logging in at {} (client: {})",
        spec.name,
        crate::secret::display_url(&found.server.issuer),
        client.how
    );
    Ok(Started {
        url,
        redirect_uri,
        client_how: client.how,
        server: spec.name.clone(),
        server_url: server_url.to_string(),
        agent,
        loopback,
        state,
        pkce,
        client,
        found,
        scope,
    })
}

/// Asks the server, without a token, what it wants: the challenge of its 401 (or
/// 403), or nothing when it answers. Not inlined (as `discover::discover`).
#[inline(never)]
fn probe(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(String, String)],
) -> Result<Asked, LoginError> {
    let body = probe_body();
    let mut extra: Vec<(HeaderName, HeaderValue)> = Vec::new();
    for (k, v) in headers {
        if let (Ok(name), Ok(mut value)) = (
            HeaderName::from_bytes(k.trim().as_bytes()),
            HeaderValue::from_str(v.trim()),
        ) {
            value.set_sensitive(true);
            extra.push((name, value));
        }
    }
    let answer =
        fetch::post(agent, url, "application/json", &extra, body.as_bytes()).map_err(|e| {
            LoginError::exchange("the MCP server", url, format!("cannot reach it: {e}"))
        })?;
    let asked = Asked::of(answer.challenges.iter().map(String::as_str));
    match answer.status {
        401 | 403 => Ok(asked),
        s if (200..300).contains(&s) => Ok(Asked::Nothing),
        404 => Err(LoginError::exchange(
            "the MCP server",
            url,
            "HTTP 404: check the URL's path (often /mcp)".into(),
        )),
        // Whatever else it says, its metadata may still be found.
        _ => Ok(asked),
    }
}

/// An `initialize` request, as the connection's handshake sends it.
fn probe_body() -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{}","#,
            r#""capabilities":{{}},"clientInfo":{{"name":"evolve","version":""#,
            env!("CARGO_PKG_VERSION"),
            r#""}}}}}}"#
        ),
        super::super::conn::PROTOCOL_VERSION
    )
}

impl Started {
    /// Waits until `deadline` (or Ctrl-C) for the browser, exchanges the code and keeps
    /// the tokens.
    pub fn finish(
        mut self,
        store: &Store,
        deadline: Instant,
        cancel: &Cancel,
    ) -> Result<Granted, LoginError> {
        self.complete(store, deadline, cancel)
    }

    /// [`Started::finish`] on a borrowed login: each early return then has nothing of
    /// its own to drop (the login is dropped once, by `finish`).
    fn complete(
        &mut self,
        store: &Store,
        deadline: Instant,
        cancel: &Cancel,
    ) -> Result<Granted, LoginError> {
        let server = &self.found.server;
        let returned = self.loopback.wait(
            &self.state,
            &server.issuer,
            server.iss_parameter,
            deadline,
            cancel,
        )?;
        let client = ClientAuth {
            id: &self.client.id,
            secret: self.client.secret.as_ref(),
            method: self.client.method,
        };
        let issued = token::request(
            &self.agent,
            &server.token_endpoint,
            &client,
            &[
                ("grant_type", "authorization_code"),
                ("code", returned.code.expose()),
                ("redirect_uri", &self.redirect_uri),
                ("code_verifier", self.pkce.verifier.expose()),
                ("resource", &self.found.resource),
            ],
        )
        .map_err(|e| match e {
            TokenError::Refused(why) => LoginError::exchange(
                "the token request",
                &server.token_endpoint,
                format!("the authorization server refused the code: {why}"),
            ),
            TokenError::Failed(why) => LoginError::Setup(why),
        })?;
        let kept = store.mcp_login(&self.server)?;
        let take = std::mem::take::<String>;
        let mut login = McpLogin {
            url: take(&mut self.server_url),
            resource: take(&mut self.found.resource),
            issuer: take(&mut self.found.server.issuer),
            token_endpoint: take(&mut self.found.server.token_endpoint),
            client_id: take(&mut self.client.id),
            client_secret: self.client.secret.take(),
            auth_method: self.client.method.as_str().to_string(),
            registered_redirect: self.client.registered_redirect.take(),
            expires_at: issued
                .expires_in
                .map(|s| super::renew_at(crate::clock::now(), s)),
            scope: issued.scope.or(self.scope.take()),
            wanted_scope: None,
            resource_metadata: kept.and_then(|mut k| k.resource_metadata.take()),
            access_token: Some(issued.access),
            refresh_token: issued.refresh,
        };
        store.put_mcp_login(&self.server, &login)?;
        log::info!("MCP server {:?}: logged in", self.server);
        Ok(Granted {
            renewable: login.refresh_token.is_some(),
            scope: login.scope.take(),
            expires_in: issued.expires_in,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_probe_is_an_initialize_request() {
        let body: serde_json::Value = serde_json::from_str(&super::probe_body()).expect("JSON");
        assert_eq!(body["method"], "initialize");
        assert_eq!(
            body["params"]["protocolVersion"],
            super::super::super::conn::PROTOCOL_VERSION
        );
        assert_eq!(body["params"]["clientInfo"]["name"], "evolve");
    }
}
