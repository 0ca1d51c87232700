//! Strings shaped like credentials.
//!
//! The Evolve Agent design puts "leaking keys" (泄露密钥) at L5. A tool call whose arguments carry
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
    /// A PEM block `-----BEGIN … PRIVATE KEY…-----` (PGP's `PRIVATE KEY BLOCK` too).
    PrivateKey,
    /// `npm_` + 36 alphanumerics (npm access token).
    NpmToken,
    /// `hf_` + 30 or more alphanumerics (Hugging Face token).
    HuggingFaceToken,
    /// `sk_live_`/`rk_live_` + 20 or more alphanumerics (Stripe live keys).
    StripeKey,
    /// A JSON Web Token: `eyJ…` `.` `eyJ…` `.` signature, base64url parts.
    Jwt,
    /// `Bearer ` + a token of 20 or more characters (an `Authorization` header value).
    BearerToken,
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

/// The first credential-shaped piece of `s`, if any (also used to keep credentials out
/// of files the agent writes on its own, such as learned skills).
pub fn find_secret(s: &str) -> Option<SecretKind> {
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
        let alnum = |b: u8| b.is_ascii_alphanumeric();
        if rest.starts_with(b"npm_") && run_len(bytes, after(b"npm_"), alnum) >= 36 {
            return Some(SecretKind::NpmToken);
        }
        if rest.starts_with(b"hf_") && run_len(bytes, after(b"hf_"), alnum) >= 30 {
            return Some(SecretKind::HuggingFaceToken);
        }
        for p in [b"sk_live_", b"rk_live_"] {
            if rest.starts_with(p) && run_len(bytes, after(p), alnum) >= 20 {
                return Some(SecretKind::StripeKey);
            }
        }
        // Only at the start of a run of token characters, so each run is read a bounded
        // number of times (linear on `eyJ-eyJ-…`).
        let run_start = i == 0 || bytes.get(i - 1).is_some_and(|b| !is_key_char(*b));
        if run_start && rest.starts_with(b"eyJ") && is_jwt(bytes, i) {
            return Some(SecretKind::Jwt);
        }
        if rest.starts_with(b"Bearer ") {
            let token = |b: u8| is_key_char(b) || matches!(b, b'.' | b'~' | b'+' | b'/' | b'=');
            if run_len(bytes, after(b"Bearer "), token) >= 20 {
                return Some(SecretKind::BearerToken);
            }
        }
    }
    None
}

/// `eyJ<b64url>.eyJ<b64url>.<b64url>` from `start`: a JWT's header and payload are
/// JSON objects, so both start with `eyJ` (`{"` in base64).
fn is_jwt(bytes: &[u8], start: usize) -> bool {
    let header = run_len(bytes, start, is_key_char);
    let dot = start + header;
    if header < 4 || bytes.get(dot) != Some(&b'.') {
        return false;
    }
    let payload_at = dot + 1;
    if !bytes
        .get(payload_at..)
        .is_some_and(|r| r.starts_with(b"eyJ"))
    {
        return false;
    }
    let payload = run_len(bytes, payload_at, is_key_char);
    let dot2 = payload_at + payload;
    payload >= 4 && bytes.get(dot2) == Some(&b'.') && run_len(bytes, dot2 + 1, is_key_char) >= 4
}

fn has_private_key_block(s: &str) -> bool {
    const BEGIN: &str = "-----BEGIN ";
    let mut rest = s;
    while let Some(at) = rest.find(BEGIN) {
        let after = rest.get(at + BEGIN.len()..).unwrap_or("");
        if let Some(end) = after.find("-----") {
            if after
                .get(..end)
                .is_some_and(|header| header.contains("PRIVATE KEY"))
            {
                return true;
            }
        }
        rest = after;
    }
    false
}

/// The shortest piece of a secret that [`redact`] hides on its own: a tool's output that
/// holds 8 or more consecutive bytes of the key (`ps --cols N` cutting it one character
/// short, `cut -c1-40`) is as good as the key to whoever reads it.
pub const REDACT_MIN_FRAGMENT: usize = 8;

/// What takes the place of a redacted secret.
pub const REDACTED: &str = "[redacted]";

/// `text` with every run of at least [`REDACT_MIN_FRAGMENT`] bytes that also appears in
/// `secret` (the whole secret if it is shorter) replaced by [`REDACTED`]; `None` when
/// nothing was found. Matches are widened to character boundaries.
pub fn redact(text: &str, secret: &str) -> Option<alloc::string::String> {
    let (t, k) = (text.as_bytes(), secret.as_bytes());
    if k.is_empty() {
        return None;
    }
    let min = REDACT_MIN_FRAGMENT.min(k.len());
    // Spans of `text` to hide, in order, merged.
    let mut spans: alloc::vec::Vec<(usize, usize)> = alloc::vec::Vec::new();
    let mut i = 0;
    while i + min <= t.len() {
        // The longest run starting at `i` that is somewhere in the secret.
        let mut best = 0;
        for j in 0..k.len() {
            if k[j] != t[i] || k.len() - j <= best {
                continue;
            }
            let n = t[i..]
                .iter()
                .zip(&k[j..])
                .take_while(|(a, b)| a == b)
                .count();
            best = best.max(n);
        }
        if best >= min {
            let (mut start, mut end) = (i, i + best);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            while !text.is_char_boundary(end) {
                end += 1;
            }
            match spans.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => spans.push((start, end)),
            }
            i = end;
        } else {
            i += 1;
        }
    }
    if spans.is_empty() {
        return None;
    }
    let mut out = alloc::string::String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        out.push_str(&text[at..start]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
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
            // Shapes an attack pass on these rules found.
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----",
                Some(SecretKind::PrivateKey),
            ),
            (
                "-----BEGIN ENCRYPTED PRIVATE KEY-----",
                Some(SecretKind::PrivateKey),
            ),
            ("-----BEGIN PGP PUBLIC KEY BLOCK-----", None),
            (
                "npm_abcdefghijklmnopqrstuvwxyz0123456789",
                Some(SecretKind::NpmToken),
            ),
            ("npm_abcdefghijklmnopqrstuvwxyz012345678", None), // 35
            ("npm_install", None),
            (
                "hf_abcdefghijklmnopqrstuvwxyzABCD",
                Some(SecretKind::HuggingFaceToken),
            ),
            ("hf_abcdefghijklmnopqrstuvwxyzABC", None), // 29
            ("sk_live_abcdefghijklmnopqrst", Some(SecretKind::StripeKey)),
            ("rk_live_abcdefghijklmnopqrst", Some(SecretKind::StripeKey)),
            ("sk_live_abcdefghijklmnopqrs", None), // 19
            ("sk_test_x", None),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcDEFghiJKL",
                Some(SecretKind::Jwt),
            ),
            ("eyJhbGciOiJIUzI1NiJ9.notjson.abc", None),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwx",
                Some(SecretKind::BearerToken),
            ),
            ("Bearer token", None),
            ("Bearer abcdefghijklmnopqrs", None), // 19
            ("the sk- prefix", None),
            ("", None),
            ("中文 sk-中文", None),
        ];
        for (text, want) in cases {
            assert_eq!(find_secret(text), *want, "{text}");
        }
    }

    #[test]
    fn secrets_and_their_fragments_are_redacted() {
        let key = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e";
        let cases = [
            ("no secret here", None),
            (
                "key=sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e!",
                Some("key=[redacted]!"),
            ),
            // `ps --cols N` cut one character short.
            (
                "OPENAI_API_KEY=sk-proj-4f9a8b7c6d5e4f3a2b1c0d9",
                Some("OPENAI_API_KEY=[redacted]"),
            ),
            // The tail alone, and a middle piece of 8.
            ("…c6d5e4f3a2b1c0d9e", Some("…[redacted]")),
            ("x 8b7c6d5e y", Some("x [redacted] y")),
            // 7 bytes are below the threshold.
            ("x 8b7c6d5 y", None),
            (
                "a sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e b sk-proj-4f9a8b7c",
                Some("a [redacted] b [redacted]"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text, key).as_deref(), want, "{text}");
        }
        // A short secret is hidden whole only.
        assert_eq!(
            redact("pw=hunter2", "hunter2").as_deref(),
            Some("pw=[redacted]")
        );
        assert_eq!(redact("hunter", "hunter2"), None);
        assert_eq!(redact("anything", ""), None);
        // Non-ASCII text around and inside.
        assert_eq!(redact("é8b7c6d5eé", key).as_deref(), Some("é[redacted]é"));
        // "日本語の" is 12 bytes of the secret too.
        assert_eq!(
            redact("日本語のキー、日本語の", "日本語のキー").as_deref(),
            Some("[redacted]、[redacted]")
        );
        assert_eq!(redact("キー、日本", "日本語のキー"), None);
    }
}
