//! Finding the authorization server of an MCP server, as the MCP authorization spec
//! (2025-06-18, 2025-11-25) orders it:
//!
//! 1. The protected resource metadata (RFC 9728): at the `resource_metadata` URL of the
//!    server's `WWW-Authenticate` when it gave one, else at the well-known URI with the
//!    endpoint's path (`/.well-known/oauth-protected-resource/mcp`), then at the root.
//!    Its `resource` must be the server (same origin, a path that contains the
//!    endpoint's); it names the authorization servers (the first is used) and the
//!    scopes to ask for when the challenge names none.
//! 2. The authorization server's metadata: RFC 8414 with path insertion, OpenID Connect
//!    discovery with path insertion, then with the path appended (an issuer without a
//!    path: the first two). Its `issuer` must be the one asked about, and it must
//!    offer PKCE with S256 (`code_challenge_methods_supported`), or evolve refuses.
//! 3. A server without resource metadata is one of revision 2025-03-26: the
//!    authorization server's metadata is at the endpoint's origin (its `issuer` is
//!    taken as it says: nothing named another), and without metadata its endpoints are
//!    `/authorize`, `/token` and `/register` there.
//!
//! A document that answers 4xx is looked for at the next place; a 5xx, an unreachable
//! host or a document that is not what it should be ends discovery with an error naming
//! the URL. Endpoints must be https, unless on a loopback host or on the MCP server's
//! own host (whose traffic, token included, already goes over plain http).

use serde_json::Value;
use ureq::http::Uri;

use super::fetch::{self, Answer};
use super::LoginError;

/// What a login needs to know of the server and its authorization server.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The `resource` to ask tokens for (RFC 8707).
    pub resource: String,
    /// The protected resource's `scopes_supported`.
    pub scopes: Option<Vec<String>>,
    /// Boxed, as it is made: it is large, and passes through several hands (each a
    /// copy of it unboxed).
    pub server: Box<AuthServer>,
}

/// An authorization server, from its metadata (or the 2025-03-26 defaults).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuthServer {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Vec<String>,
    pub auth_methods: Vec<String>,
    /// `client_id_metadata_document_supported`.
    pub client_metadata_documents: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub iss_parameter: bool,
}

/// Runs discovery for the MCP endpoint `server_url`.
///
/// Not inlined into the login's start, its one caller: in that function's large frame
/// every access to its locals took longer instructions (measured: the binary is
/// smaller so).
#[inline(never)]
pub fn discover(
    agent: &ureq::Agent,
    server_url: &str,
    resource_metadata: Option<&str>,
) -> Result<Found, LoginError> {
    const PRM: &str = "protected resource metadata";
    let urls = match resource_metadata {
        Some(url) => vec![url.to_string()],
        None => prm_urls(server_url)?,
    };
    let mut prm = None;
    for url in urls {
        if let Some(doc) = fetch_doc(agent, &url, PRM)? {
            prm = Some((url, doc));
            break;
        }
    }
    let Some((prm_url, doc)) = prm else {
        return match resource_metadata {
            Some(url) => Err(LoginError::exchange(
                PRM,
                url,
                "the URL the server gave in WWW-Authenticate has no document".into(),
            )),
            None => legacy(agent, server_url),
        };
    };
    let (resource, issuer, scopes) = protected_resource(&doc, server_url)
        .and_then(|r| {
            let issuer = r
                .authorization_servers
                .into_iter()
                .next()
                .ok_or("it names no authorization server")?;
            check_endpoint(&issuer, server_url).map_err(|e| e.to_string())?;
            Ok((r.resource, issuer, r.scopes))
        })
        .map_err(|e| LoginError::exchange(PRM, &prm_url, e))?;
    let server = auth_server(agent, &issuer, true, server_url)?.ok_or_else(|| {
        LoginError::exchange(
            "authorization server metadata",
            &issuer,
            "the authorization server publishes no metadata at any of its well-known URLs \
             (RFC 8414, OpenID Connect discovery)"
                .into(),
        )
    })?;
    Ok(Found {
        resource,
        scopes,
        server,
    })
}

/// Revision 2025-03-26: the endpoint's origin is the authorization server.
///
/// Not inlined (as [`discover`]).
#[inline(never)]
fn legacy(agent: &ureq::Agent, server_url: &str) -> Result<Found, LoginError> {
    let (origin, _) = split(server_url).map_err(|e| LoginError::Setup(e.to_string()))?;
    let server = match auth_server(agent, &origin, false, server_url)? {
        Some(server) => server,
        None => Box::new(AuthServer {
            authorization_endpoint: origin.clone() + "/authorize",
            token_endpoint: origin.clone() + "/token",
            registration_endpoint: Some(origin.clone() + "/register"),
            issuer: origin,
            ..AuthServer::default()
        }),
    };
    Ok(Found {
        resource: canonical(server_url),
        scopes: None,
        server,
    })
}

/// The metadata of the authorization server `issuer`, `None` when every well-known
/// URL answers 4xx. `named`: the resource metadata named that issuer, and the document
/// must be its; otherwise (2025-03-26) the origin was only where to look.
fn auth_server(
    agent: &ureq::Agent,
    issuer: &str,
    named: bool,
    server_url: &str,
) -> Result<Option<Box<AuthServer>>, LoginError> {
    for url in metadata_urls(issuer).map_err(|e| LoginError::Setup(e.to_string()))? {
        if let Some(doc) = fetch_doc(agent, &url, "authorization server metadata")? {
            return authorization_server(&doc, named.then_some(issuer), server_url)
                .map(Some)
                .map_err(|e| LoginError::exchange("authorization server metadata", &url, e));
        }
    }
    Ok(None)
}

/// A JSON document; `None` when the URL answers 4xx (look elsewhere).
fn fetch_doc(
    agent: &ureq::Agent,
    url: &str,
    what: &'static str,
) -> Result<Option<Value>, LoginError> {
    let answer: Answer =
        fetch::get(agent, url).map_err(|e| LoginError::exchange(what, url, e.to_string()))?;
    match answer.status {
        200..=299 => match answer.json() {
            Some(doc @ Value::Object(_)) => Ok(Some(doc)),
            _ => Err(LoginError::exchange(
                what,
                url,
                format!("it is not a JSON object: {}", answer.shown(&[])),
            )),
        },
        300..=399 => Err(LoginError::exchange(
            what,
            url,
            format!(
                "it redirects (HTTP {}) to {}; evolve does not follow redirects here",
                answer.status,
                answer
                    .location
                    .as_deref()
                    .map_or("nowhere".into(), crate::secret::display_url)
            ),
        )),
        400..=499 => Ok(None),
        status => Err(LoginError::exchange(
            what,
            url,
            format!("HTTP {status}: {}", answer.shown(&[])),
        )),
    }
}

/// What is wrong with a URL a login would use; each names the URL as shown (secrets
/// blanked).
#[derive(Debug, thiserror::Error)]
pub enum BadUrl {
    #[error("{0} is not a URL")]
    NotUrl(String),
    #[error("{0} is not an http(s) URL")]
    NotHttp(String),
    #[error("{0} has no host")]
    NoHost(String),
    #[error(
        "the authorization server's identifier {0} has a query or fragment, which RFC 8414 \
         forbids"
    )]
    IssuerWithQuery(String),
    #[error("{0} is plain http on another host: an authorization server must use https")]
    PlainHttp(String),
}

/// `scheme://host[:port]` and the path (no trailing `/`, no query) of an http(s) URL.
pub fn split(url: &str) -> Result<(String, String), BadUrl> {
    let uri = Uri::try_from(url).map_err(|_| BadUrl::NotUrl(shown(url)))?;
    let scheme = uri
        .scheme_str()
        .filter(|s| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"))
        .ok_or_else(|| BadUrl::NotHttp(shown(url)))?
        .to_ascii_lowercase();
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| BadUrl::NoHost(shown(url)))?
        .to_ascii_lowercase();
    let port = match (uri.port_u16(), scheme.as_str()) {
        (Some(80), "http") | (Some(443), "https") | (None, _) => String::new(),
        (Some(p), _) => format!(":{p}"),
    };
    let path = uri.path().trim_end_matches('/').to_string();
    Ok((format!("{scheme}://{host}{port}"), path))
}

fn shown(url: &str) -> String {
    crate::secret::display_url(url)
}

/// The endpoint as a resource identifier: origin in lower case, no fragment, no
/// trailing `/` on an empty path.
pub fn canonical(url: &str) -> String {
    let url = url.split('#').next().unwrap_or(url);
    match split(url) {
        Ok((origin, path)) => {
            let query = url.find('?').map_or("", |at| &url[at..]);
            [&origin, &path, query].concat()
        }
        Err(_) => url.to_string(),
    }
}

/// Where the protected resource metadata of `server_url` may be, in order.
pub fn prm_urls(server_url: &str) -> Result<Vec<String>, LoginError> {
    let (origin, path) = split(server_url).map_err(|e| LoginError::Setup(e.to_string()))?;
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{root}{path}"));
    }
    urls.push(root);
    Ok(urls)
}

/// Where the metadata of authorization server `issuer` may be, in order.
pub fn metadata_urls(issuer: &str) -> Result<Vec<String>, BadUrl> {
    if issuer.contains(['?', '#']) {
        return Err(BadUrl::IssuerWithQuery(shown(issuer)));
    }
    let (origin, path) = split(issuer)?;
    const OAUTH: &str = "/.well-known/oauth-authorization-server";
    const OPENID: &str = "/.well-known/openid-configuration";
    let mut urls = vec![
        [&origin, OAUTH, &path].concat(),
        [&origin, OPENID, &path].concat(),
    ];
    if !path.is_empty() {
        urls.push([&origin, &path, OPENID].concat());
    }
    Ok(urls)
}

/// Whether the protected resource `resource` covers the endpoint `server_url`: the same
/// origin, and its path the endpoint's or a parent of it.
///
/// Not inlined (as [`discover`]).
#[inline(never)]
pub fn covers(resource: &str, server_url: &str) -> bool {
    let (Ok((origin_r, path_r)), Ok((origin_s, path_s))) = (split(resource), split(server_url))
    else {
        return false;
    };
    origin_r == origin_s
        && path_s
            .strip_prefix(path_r.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// An endpoint evolve may send a code, a secret or a token to: https, or http on a
/// loopback host or the MCP server's own host.
pub fn check_endpoint(url: &str, server_url: &str) -> Result<(), BadUrl> {
    let (origin, _) = split(url)?;
    if origin.starts_with("https://") {
        return Ok(());
    }
    let host = |origin: &str| {
        let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
        match rest.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(v6).to_string(),
            None => rest.split(':').next().unwrap_or(rest).to_string(),
        }
    };
    let h = host(&origin);
    let loopback = h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let same_host = split(server_url).is_ok_and(|(o, _)| host(&o) == h);
    if loopback || same_host {
        Ok(())
    } else {
        Err(BadUrl::PlainHttp(shown(url)))
    }
}

/// What a protected resource metadata document says.
#[derive(Debug, PartialEq)]
pub struct Resource {
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes: Option<Vec<String>>,
}

/// A protected resource metadata document, or what is wrong with it.
///
/// Not inlined (as [`discover`]).
#[inline(never)]
pub fn protected_resource(doc: &Value, server_url: &str) -> Result<Resource, String> {
    let resource = doc
        .get("resource")
        .and_then(Value::as_str)
        .ok_or("it has no \"resource\"")?;
    if !covers(resource, server_url) {
        return Err(format!(
            "it is for the resource {}, not for {}: evolve does not log in to a server on another's metadata",
            shown(resource),
            shown(server_url)
        ));
    }
    Ok(Resource {
        resource: resource.to_string(),
        authorization_servers: strings(doc, "authorization_servers", "a URL")?.unwrap_or_default(),
        scopes: strings(doc, "scopes_supported", "a string")?,
    })
}

/// An authorization server metadata document, checked against the issuer it was asked
/// for (if one was).
///
/// Not inlined (as [`discover`]).
#[inline(never)]
pub fn authorization_server(
    doc: &Value,
    issuer: Option<&str>,
    server_url: &str,
) -> Result<Box<AuthServer>, String> {
    let text = |key: &str| doc.get(key).and_then(Value::as_str).map(str::to_string);
    let given = text("issuer").ok_or("it has no \"issuer\"")?;
    if let Some(issuer) = issuer.filter(|i| given.trim_end_matches('/') != i.trim_end_matches('/'))
    {
        return Err(format!(
            "it says it is the issuer {}, not {} where it was looked up (RFC 8414 §3.3): refused",
            shown(&given),
            shown(issuer)
        ));
    }
    let endpoint = |key: &str| -> Result<String, String> {
        let url = text(key).ok_or_else(|| format!("it has no \"{key}\""))?;
        check_endpoint(&url, server_url)
            .map(|()| url)
            .map_err(|e| e.to_string())
    };
    let pkce = strings(doc, "code_challenge_methods_supported", "a string")?.unwrap_or_default();
    if !pkce.iter().any(|m| m == "S256") {
        return Err(
            "it does not offer PKCE with S256 (code_challenge_methods_supported), which MCP \
             requires: evolve does not log in without it"
                .into(),
        );
    }
    let registration_endpoint = match doc.get("registration_endpoint") {
        Some(Value::String(_)) => Some(endpoint("registration_endpoint")?),
        _ => None,
    };
    Ok(Box::new(AuthServer {
        issuer: given,
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        registration_endpoint,
        scopes_supported: strings(doc, "scopes_supported", "a string")?.unwrap_or_default(),
        auth_methods: strings(doc, "token_endpoint_auth_methods_supported", "a string")?
            .unwrap_or_default(),
        client_metadata_documents: doc["client_id_metadata_document_supported"] == true,
        iss_parameter: doc["authorization_response_iss_parameter_supported"] == true,
    }))
}

/// A list of strings at `key`, `None` when absent (or null); `what` a string is, for
/// the error about a value that is not one.
fn strings(doc: &Value, key: &str, what: &str) -> Result<Option<Vec<String>>, String> {
    let list = match doc.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(format!("\"{key}\" is not a list")),
    };
    let mut out = Vec::with_capacity(list.len());
    for v in list {
        let text = v
            .as_str()
            .ok_or_else(|| format!("\"{key}\" holds a value that is not {what}"))?;
        out.push(text.to_string());
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn well_known_urls_come_in_the_order_of_the_spec() {
        let prm = |u: &str| prm_urls(u).expect("a URL");
        assert_eq!(
            prm("https://example.com/public/mcp"),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            prm("http://127.0.0.1:3001/"),
            ["http://127.0.0.1:3001/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            prm("HTTPS://Example.COM:443/mcp?x=1"),
            [
                "https://example.com/.well-known/oauth-protected-resource/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ]
        );
        let meta = |u: &str| metadata_urls(u).expect("a URL");
        assert_eq!(
            meta("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            meta("https://auth.example.com/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
        assert!(metadata_urls("https://a.example/?x=1").is_err());
        assert!(prm_urls("ftp://x/mcp").is_err());
    }

    #[test]
    fn a_resource_covers_its_endpoint_and_nothing_else() {
        let cases = [
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com/",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "HTTPS://MCP.example.com:443/mcp/",
                "https://mcp.example.com/mcp",
                true,
            ),
            (
                "https://mcp.example.com/m",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "https://mcp.example.com/mcp/a",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "https://evil.example.com/mcp",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "http://mcp.example.com/mcp",
                "https://mcp.example.com/mcp",
                false,
            ),
            (
                "https://mcp.example.com:8443/mcp",
                "https://mcp.example.com/mcp",
                false,
            ),
            ("not a url", "https://mcp.example.com/mcp", false),
        ];
        for (resource, server, want) in cases {
            assert_eq!(covers(resource, server), want, "{resource} for {server}");
        }
        assert_eq!(canonical("HTTP://Host:80/mcp#frag"), "http://host/mcp");
        assert_eq!(canonical("https://h/"), "https://h");
        assert_eq!(
            canonical("https://h/mcp?tenant=a"),
            "https://h/mcp?tenant=a"
        );
    }

    #[test]
    fn endpoints_are_https_unless_local() {
        let server = "http://10.0.0.5:3000/mcp";
        let cases = [
            ("https://auth.example.com/token", true),
            ("http://127.0.0.1:9/token", true),
            ("http://localhost:9/token", true),
            ("http://[::1]:9/token", true),
            ("http://10.0.0.5:9999/token", true),
            ("http://auth.example.com/token", false),
            ("ftp://auth.example.com/token", false),
        ];
        for (url, ok) in cases {
            assert_eq!(check_endpoint(url, server).is_ok(), ok, "{url}");
        }
    }

    #[test]
    fn metadata_documents_are_checked() {
        let server = "https://mcp.example.com/mcp";
        let got = protected_resource(
            &json!({"resource": "https://mcp.example.com/mcp",
                    "authorization_servers": ["https://auth.example.com"],
                    "scopes_supported": ["files:read"]}),
            server,
        )
        .expect("good");
        assert_eq!(
            got,
            Resource {
                resource: "https://mcp.example.com/mcp".into(),
                authorization_servers: vec!["https://auth.example.com".into()],
                scopes: Some(vec!["files:read".to_string()]),
            }
        );
        let bad_prm = [
            (json!({"authorization_servers": []}), "no \"resource\""),
            (
                json!({"resource": "https://evil.example.com/mcp", "authorization_servers": []}),
                "not for https://mcp.example.com/mcp",
            ),
            (
                json!({"resource": server, "authorization_servers": "https://a"}),
                "not a list",
            ),
            (
                json!({"resource": server, "authorization_servers": [1]}),
                "not a URL",
            ),
            (
                json!({"resource": server, "scopes_supported": "a b"}),
                "\"scopes_supported\" is not a list",
            ),
        ];
        for (doc, want) in bad_prm {
            let err = protected_resource(&doc, server).expect_err("refused");
            assert!(err.contains(want), "{doc}: {err}");
        }

        let good = json!({
            "issuer": "https://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "https://auth.example.com/token",
            "registration_endpoint": "https://auth.example.com/register",
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["files:read", "offline_access"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "client_id_metadata_document_supported": true,
        });
        let meta =
            authorization_server(&good, Some("https://auth.example.com/"), server).expect("good");
        assert_eq!(meta.token_endpoint, "https://auth.example.com/token");
        assert_eq!(
            meta.registration_endpoint.as_deref(),
            Some("https://auth.example.com/register")
        );
        assert!(meta.client_metadata_documents && !meta.iss_parameter);
        assert_eq!(meta.auth_methods, ["none", "client_secret_basic"]);
        let with = |key: &str, value: Value| {
            let mut doc = good.clone();
            doc[key] = value;
            doc
        };
        let without = |key: &str| {
            let mut doc = good.clone();
            doc.as_object_mut().map(|m| m.remove(key));
            doc
        };
        let bad_as = [
            (
                with("issuer", json!("https://evil.example.com")),
                "RFC 8414 §3.3",
            ),
            (without("code_challenge_methods_supported"), "PKCE"),
            (
                with("code_challenge_methods_supported", json!(["plain"])),
                "PKCE",
            ),
            (without("token_endpoint"), "no \"token_endpoint\""),
            (
                with("token_endpoint", json!("http://auth.example.com/token")),
                "must use https",
            ),
            (with("scopes_supported", json!({})), "not a list"),
        ];
        for (doc, want) in bad_as {
            let err = authorization_server(&doc, Some("https://auth.example.com"), server)
                .expect_err("refused");
            assert!(err.contains(want), "{doc}: {err}");
        }
    }
}
