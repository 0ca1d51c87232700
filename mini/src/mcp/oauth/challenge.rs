//! `WWW-Authenticate` as a protected MCP server sends it (RFC 9110 §11.6.1, the Bearer
//! scheme of RFC 6750 §3 with RFC 9728's `resource_metadata`): which scheme it asks
//! for, and the Bearer challenge's `error`, `scope` and `resource_metadata`.
//!
//! Pure: a header's text in, the challenge out. Several challenges may share one header
//! (`Basic realm="x", Bearer scope="a"`) or come in several headers; parameter values
//! are tokens or quoted strings with `\` escapes; names are case-insensitive.

/// The Bearer challenge of a refusal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    /// `invalid_token`, `insufficient_scope`, …
    pub error: Option<String>,
    /// The scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// Where the server's protected resource metadata is (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `error_description`.
    pub description: Option<String>,
}

/// What the `WWW-Authenticate` headers of a refusal ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// A Bearer token (OAuth), with what the challenge says.
    Bearer(Challenge),
    /// Another scheme only (`Basic`, an API key scheme): OAuth will not help.
    Other(String),
    /// No challenge at all.
    Nothing,
}

impl Asked {
    /// Reads every `WWW-Authenticate` header of a refusal.
    pub fn of<'a>(headers: impl IntoIterator<Item = &'a str>) -> Asked {
        let mut other = None;
        for header in headers {
            for (scheme, params) in parse(header) {
                if scheme.eq_ignore_ascii_case("bearer") {
                    let get = |name: &str| {
                        params
                            .iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case(name))
                            .map(|(_, v)| v.clone())
                            .filter(|v| !v.trim().is_empty())
                    };
                    return Asked::Bearer(Challenge {
                        error: get("error"),
                        scope: get("scope"),
                        resource_metadata: get("resource_metadata"),
                        description: get("error_description"),
                    });
                }
                other.get_or_insert(scheme);
            }
        }
        other.map_or(Asked::Nothing, Asked::Other)
    }

    /// The Bearer challenge, if that is what was asked.
    pub fn bearer(&self) -> Option<&Challenge> {
        match self {
            Asked::Bearer(c) => Some(c),
            _ => None,
        }
    }
}

/// The challenges of one header: each scheme with its `name=value` parameters (a
/// token68 is kept under the name `""`).
fn parse(header: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for item in split_items(header) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        // `name = value` continues the challenge before; `Scheme [rest]` starts one.
        let word_end = item
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(item.len());
        let after = item[word_end..].trim_start();
        let is_param = after.starts_with('=') && !out.is_empty() && !after.starts_with("==");
        if is_param {
            if let Some((_, params)) = out.last_mut() {
                params.push(param(item));
            }
            continue;
        }
        let scheme = item[..word_end].to_string();
        let rest = item[word_end..].trim();
        let mut params = Vec::new();
        if !rest.is_empty() {
            // `name=value`, or a token68 (`abc==`), which the Bearer scheme does not use.
            let is_param = rest.split_once('=').is_some_and(|(name, value)| {
                !name.trim().contains(char::is_whitespace) && !value.starts_with('=')
            });
            params.push(if is_param {
                param(rest)
            } else {
                (String::new(), rest.to_string())
            });
        }
        out.push((scheme, params));
    }
    out
}

/// `name=value` or `name="quoted \" value"` into its name and unquoted value.
fn param(text: &str) -> (String, String) {
    let (name, value) = text.split_once('=').unwrap_or((text, ""));
    let value = value.trim();
    let value = match value.strip_prefix('"') {
        Some(quoted) => {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => break,
                    c => out.push(c),
                }
            }
            out
        }
        None => value.to_string(),
    };
    (name.trim().to_ascii_lowercase(), value)
}

/// The header split at the commas outside quoted strings.
fn split_items(header: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in header.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&header[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&header[start..]);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(error: Option<&str>, scope: Option<&str>, metadata: Option<&str>) -> Asked {
        Asked::Bearer(Challenge {
            error: error.map(str::to_string),
            scope: scope.map(str::to_string),
            resource_metadata: metadata.map(str::to_string),
            description: None,
        })
    }

    #[test]
    fn challenges_read_as_servers_write_them() {
        const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource";
        let cases: &[(&[&str], Asked)] = &[
            (
                &[
                    r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#,
                ],
                bearer(None, None, Some(PRM)),
            ),
            (
                &[
                    r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#,
                ],
                bearer(
                    Some("insufficient_scope"),
                    Some("files:read files:write"),
                    Some(PRM),
                ),
            ),
            // Scheme and names in any case, token values, spaces around `=`.
            (
                &["bearer Error = invalid_token , SCOPE=mcp:basic"],
                bearer(Some("invalid_token"), Some("mcp:basic"), None),
            ),
            // A comma inside a quoted value, and an escaped quote.
            (
                &[r#"Bearer scope="a,b", error_description="say \"hi\"""#],
                Asked::Bearer(Challenge {
                    scope: Some("a,b".into()),
                    description: Some("say \"hi\"".into()),
                    ..Challenge::default()
                }),
            ),
            // Another scheme first, in the same header or another.
            (
                &[r#"Basic realm="x", Bearer scope="s""#],
                bearer(None, Some("s"), None),
            ),
            (&[r#"Basic realm="x""#, "Bearer"], bearer(None, None, None)),
            (&[r#"Basic realm="x""#], Asked::Other("Basic".into())),
            (&["ApiKey"], Asked::Other("ApiKey".into())),
            // A token68 does not break what follows.
            (
                &["Negotiate abc==, Bearer scope=s"],
                bearer(None, Some("s"), None),
            ),
            (&[], Asked::Nothing),
            (&["  "], Asked::Nothing),
        ];
        for (headers, want) in cases {
            assert_eq!(&Asked::of(headers.iter().copied()), want, "{headers:?}");
        }
    }
}
