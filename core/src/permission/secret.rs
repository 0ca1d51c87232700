//! Strings shaped like credentials.
//!
//! Seed 002 puts "leaking keys" (泄露密钥) at L5. A tool call whose arguments carry
//! something that looks like an API key or a private key is refused wherever the string
//! sits (a URL, a message, file content): the model should never be moving credentials
//! around. The shapes are the published prefixes of the common providers; the match is
//! case-sensitive and must start at a word boundary (`task-…` is not `sk-…`). The key
//! itself never leaves this module: only its [`SecretKind`].

use serde::{Deserialize, Serialize};

/// Which kind of credential a string looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    /// `sk-` + 20 or more of `[A-Za-z0-9_-]` (OpenAI, Anthropic, DeepSeek … keys).
    ApiKey,
    /// `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + 20 or more alphanumerics, or `github_pat_` + 20.
    GitHubToken,
    /// `glpat-` + 20 or more of `[A-Za-z0-9_-]`.
    GitLabToken,
    /// `AKIA`/`ASIA` + exactly 16 of `[0-9A-Z]`.
    AwsAccessKey,
    /// `xoxb-`/`xoxp-`/`xoxa-`/`xoxr-`/`xoxs-` + 10 or more of `[A-Za-z0-9-]`.
    SlackToken,
    /// `AIza` + 35 of `[A-Za-z0-9_-]`.
    GoogleApiKey,
    /// A PEM block `-----BEGIN … PRIVATE KEY-----`.
    PrivateKey,
}

fn is_key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Length of the run of bytes from `start` satisfying `ok`.
fn run_len(bytes: &[u8], start: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(start..)
        .map_or(0, |rest| rest.iter().take_while(|b| ok(**b)).count())
}

/// The first credential-shaped piece of `s`, if any.
pub(crate) fn find_secret(s: &str) -> Option<SecretKind> {
    if has_private_key_block(s) {
        return Some(SecretKind::PrivateKey);
    }
    let bytes = s.as_bytes();
    for i in 0..bytes.len() {
        let boundary = i == 0 || bytes.get(i - 1).is_some_and(|b| !b.is_ascii_alphanumeric());
        if !boundary {
            continue;
        }
        let rest = &bytes[i..];
        let after = |prefix: &[u8]| i + prefix.len();
        if rest.starts_with(b"sk-") && run_len(bytes, after(b"sk-"), is_key_char) >= 20 {
            return Some(SecretKind::ApiKey);
        }
        for p in [b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"] {
            if rest.starts_with(p) && run_len(bytes, after(p), |b| b.is_ascii_alphanumeric()) >= 20
            {
                return Some(SecretKind::GitHubToken);
            }
        }
        if rest.starts_with(b"github_pat_")
            && run_len(bytes, after(b"github_pat_"), is_key_char) >= 20
        {
            return Some(SecretKind::GitHubToken);
        }
        if rest.starts_with(b"glpat-") && run_len(bytes, after(b"glpat-"), is_key_char) >= 20 {
            return Some(SecretKind::GitLabToken);
        }
        for p in [b"AKIA", b"ASIA"] {
            if rest.starts_with(p)
                && run_len(bytes, after(p), |b| {
                    b.is_ascii_uppercase() || b.is_ascii_digit()
                }) == 16
            {
                return Some(SecretKind::AwsAccessKey);
            }
        }
        for p in [b"xoxb-", b"xoxp-", b"xoxa-", b"xoxr-", b"xoxs-"] {
            if rest.starts_with(p)
                && run_len(bytes, after(p), |b| b.is_ascii_alphanumeric() || b == b'-') >= 10
            {
                return Some(SecretKind::SlackToken);
            }
        }
        if rest.starts_with(b"AIza") && run_len(bytes, after(b"AIza"), is_key_char) >= 35 {
            return Some(SecretKind::GoogleApiKey);
        }
    }
    None
}

fn has_private_key_block(s: &str) -> bool {
    const BEGIN: &str = "-----BEGIN ";
    let mut rest = s;
    while let Some(at) = rest.find(BEGIN) {
        let after = rest.get(at + BEGIN.len()..).unwrap_or("");
        if let Some(end) = after.find("-----") {
            if after
                .get(..end)
                .is_some_and(|header| header.ends_with("PRIVATE KEY"))
            {
                return true;
            }
        }
        rest = after;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_shapes_table() {
        let cases: &[(&str, Option<SecretKind>)] = &[
            ("sk-abcdefghijklmnopqrstuvwx", Some(SecretKind::ApiKey)),
            ("key=sk-proj-abcdefghij1234567890", Some(SecretKind::ApiKey)),
            ("sk-abcdefghijklmnopqrs", None), // 19 characters
            ("sk-abcdefghijklmnopqrst", Some(SecretKind::ApiKey)), // 20
            ("task-abcdefghijklmnopqrstuvwx", None),
            (
                "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                Some(SecretKind::GitHubToken),
            ),
            (
                "github_pat_11ABCDEFG0123456789abcdef",
                Some(SecretKind::GitHubToken),
            ),
            ("ghp_short", None),
            ("glpat-abcdefghij0123456789", Some(SecretKind::GitLabToken)),
            ("AKIAIOSFODNN7EXAMPLE", Some(SecretKind::AwsAccessKey)),
            ("id AKIAIOSFODNN7EXAMPLE.", Some(SecretKind::AwsAccessKey)),
            ("AKIAIOSFODNN7EXAMPL", None),   // 15
            ("AKIAIOSFODNN7EXAMPLEX", None), // 17
            ("xoxb-1234567890-abc", Some(SecretKind::SlackToken)),
            ("xoxb-123", None),
            (
                "AIzaSyA1234567890abcdefghijklmnopqrstuv",
                Some(SecretKind::GoogleApiKey),
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
                Some(SecretKind::PrivateKey),
            ),
            (
                "x -----BEGIN OPENSSH PRIVATE KEY----- y",
                Some(SecretKind::PrivateKey),
            ),
            ("-----BEGIN PRIVATE KEY-----", Some(SecretKind::PrivateKey)),
            ("AIzaSyA1234567890abcdefghijklmnopqrstu", None), // 34
            ("-----BEGIN CERTIFICATE-----", None),
            ("-----BEGIN PUBLIC KEY-----", None),
            ("-----BEGIN ", None),
            ("the sk- prefix", None),
            ("", None),
            ("中文 sk-中文", None),
        ];
        for (text, want) in cases {
            assert_eq!(find_secret(text), *want, "{text}");
        }
    }
}
