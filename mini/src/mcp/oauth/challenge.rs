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
    /// Reads every `WWW-Authenticate` header of a refusal: the first Bearer challenge,
    /// else the first other scheme. Read as it goes (no list of every challenge is
    /// built): a parameter belongs to the challenge before it, and of a parameter given
    /// twice the first counts.
    pub fn of<'a>(headers: impl IntoIterator<Item = &'a str>) -> Asked {
        let mut other = None;
        for header in headers {
            // The Bearer challenge being read, and whether any challenge has begun in
            // this header (a `name=value` before that is a scheme's name).
            let mut bearer: Option<Challenge> = None;
            let mut begun = false;
            for text in split_items(header) {
                let param = match Item::of(text.trim(), begun) {
                    Item::Empty => continue,
                    Item::Param(param) => Some(param),
                    Item::Scheme(scheme, param) => {
                        if let Some(done) = bearer.take() {
                            return Asked::Bearer(done.cleaned());
                        }
                        begun = true;
                        if scheme.eq_ignore_ascii_case("bearer") {
                            bearer = Some(Challenge::default());
                        } else {
                            other.get_or_insert_with(|| scheme.to_string());
                        }
                        param
                    }
                };
                if let (Some(challenge), Some(param)) = (bearer.as_mut(), param) {
                    challenge.keep(param);
                }
            }
            if let Some(done) = bearer {
                return Asked::Bearer(done.cleaned());
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

/// One comma-separated item of a header.
enum Item<'a> {
    /// Nothing but spaces.
    Empty,
    /// A challenge begins: its scheme, and the `name=value` after it if there is one (a
    /// token68, `abc==`, which the Bearer scheme does not use, is not one).
    Scheme(&'a str, Option<&'a str>),
    /// A `name=value` of the challenge before.
    Param(&'a str),
}

impl<'a> Item<'a> {
    /// Reads `text` (trimmed); `begun` when a challenge has begun before it in its
    /// header, else a `name=value` is a scheme's name.
    fn of(text: &'a str, begun: bool) -> Item<'a> {
        if text.is_empty() {
            return Item::Empty;
        }
        // `name = value` continues the challenge before; `Scheme [rest]` starts one.
        let word_end = text
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(text.len());
        let after = text[word_end..].trim_start();
        if begun && after.starts_with('=') && !after.starts_with("==") {
            return Item::Param(text);
        }
        let rest = text[word_end..].trim();
        let is_param = rest.split_once('=').is_some_and(|(name, value)| {
            !name.trim().contains(char::is_whitespace) && !value.starts_with('=')
        });
        Item::Scheme(&text[..word_end], is_param.then_some(rest))
    }
}

impl Challenge {
    /// Keeps the `name=value` `text` if it is one of the four read (of a parameter
    /// given twice the first counts).
    fn keep(&mut self, text: &str) {
        let (name, value) = param(text);
        let slot = match name.as_str() {
            "error" => &mut self.error,
            "scope" => &mut self.scope,
            "resource_metadata" => &mut self.resource_metadata,
            "error_description" => &mut self.description,
            _ => return,
        };
        slot.get_or_insert(value);
    }

    /// Without the parameters given empty.
    fn cleaned(mut self) -> Challenge {
        for slot in [
            &mut self.error,
            &mut self.scope,
            &mut self.resource_metadata,
            &mut self.description,
        ] {
            if slot.as_deref().is_some_and(|v| v.trim().is_empty()) {
                *slot = None;
            }
        }
        self
    }
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
            // Of a parameter given twice the first counts, even empty; a Bearer
            // challenge ends where the next scheme begins.
            (
                &[r#"Bearer scope=a, scope=b, error="", error=invalid_token, Basic error=x"#],
                bearer(None, Some("a"), None),
            ),
            (&[], Asked::Nothing),
            (&["  "], Asked::Nothing),
        ];
        for (headers, want) in cases {
            assert_eq!(&Asked::of(headers.iter().copied()), want, "{headers:?}");
        }
    }
}
