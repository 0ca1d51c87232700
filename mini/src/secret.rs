//! [`Secret`]: an API key or token as every module holds it — never printed, never
//! logged, masked wherever it is shown — and [`display_url`], a URL with the credentials
//! it may carry cut off. At the bottom of the shell: the configuration reads secrets and
//! shows URLs, the model and MCP clients send them, and none of those needs the others.

use std::fmt;

/// Secrets shorter than this are masked entirely: a fifth of them would be one or two
/// characters of a guessable value.
const SECRET_MIN_SHOWN: usize = 12;

/// A secret (API key, token): never printed, never logged, `Debug` shows it masked.
/// There is deliberately no `Display`, so `format!("{}", key)` does not compile.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The value itself, for the one place that sends it (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }
    /// What `config show` prints: the first 3 and last 2 characters at most, never more
    /// than a fifth of the secret, e.g. `sk-…ab`; `***` for secrets shorter than 12
    /// characters.
    pub fn masked(&self) -> String {
        let chars: Vec<char> = self.0.chars().collect();
        if chars.len() < SECRET_MIN_SHOWN {
            return "***".to_string();
        }
        // A fifth of the secret, at most 5 characters: the rest is what keeps it secret.
        let shown = (chars.len() / 5).min(5);
        let tail = (shown / 2).min(2);
        let head = (shown - tail).min(3);
        let mut out: String = chars[..head].iter().collect();
        out.push('…');
        out.extend(&chars[chars.len() - tail..]);
        out
    }

    /// True for an empty secret (treated as "not set").
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.masked())
    }
}

/// The URL as errors, logs and the API show it: without user name, password, query or
/// fragment, where credentials are kept (`?api-key=…`).
pub fn display_url(url: &str) -> String {
    let url = match url.find("://") {
        Some(scheme_end) => {
            let rest = &url[scheme_end + 3..];
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{}{}", &url[..scheme_end + 3], &rest[at + 1..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    };
    match url.find(['?', '#']) {
        Some(cut) => url[..cut].to_string(),
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_errors_drop_credentials() {
        let cases = [
            ("https://user:pw@host/v1/x", "https://host/v1/x"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
            ("http://host/v1/a@b", "http://host/v1/a@b"),
            ("no-scheme", "no-scheme"),
        ];
        for (url, shown) in cases {
            assert_eq!(display_url(url), shown);
        }
    }
}
