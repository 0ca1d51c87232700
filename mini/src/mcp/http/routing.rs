//! The routing headers of revision 2026-07-28: each message names its method (and a
//! call its tool) in the headers, so a server's front can route it without reading the
//! body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;
use ureq::http::{HeaderName, HeaderValue};

/// The revision without sessions, whose messages carry their method in the headers.
pub(crate) const STATELESS_VERSION: &str = "2026-07-28";

/// `Mcp-Method` (every message of 2026-07-28) and `Mcp-Name` (the tool of a
/// `tools/call`), read from the message itself; a value that is not plain visible ASCII
/// goes as `=?base64?…?=`.
pub(super) fn routing_headers(body: &[u8]) -> Vec<(HeaderName, HeaderValue)> {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let mut headers = Vec::new();
    let mut add = |name: &'static str, value: &str| {
        let plain = !value.is_empty()
            && value
                .bytes()
                .all(|b| (0x21..0x7f).contains(&b) || b == b' ')
            && !value.starts_with(' ')
            && !value.ends_with(' ');
        let text = if plain {
            value.to_string()
        } else {
            format!("=?base64?{}?=", STANDARD.encode(value))
        };
        if let Ok(v) = HeaderValue::from_str(&text) {
            headers.push((HeaderName::from_static(name), v));
        }
    };
    if let Some(method) = message["method"].as_str() {
        add("mcp-method", method);
        if method == "tools/call" {
            if let Some(tool) = message["params"]["name"].as_str() {
                add("mcp-name", tool);
            }
        }
    }
    headers
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
