//! The secrets of one authorization request: the PKCE verifier and its S256 challenge
//! (RFC 7636 §4.1–4.2) and the `state` that ties the redirect to this login. Random
//! bytes and SHA-256 come from ring, which TLS already links; base64url without
//! padding from the `base64` crate ureq already links.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SecureRandom;

use crate::secret::Secret;

/// A PKCE pair: the verifier stays with evolve until the token request, the challenge
/// goes in the authorization URL.
pub struct Pkce {
    pub verifier: Secret,
    pub challenge: String,
}

impl Pkce {
    /// 32 random bytes as the verifier (43 characters, RFC 7636 §7.1's recommendation).
    pub fn new() -> Result<Pkce, NoRandom> {
        let verifier = random(32)?;
        let challenge = challenge_of(&verifier);
        Ok(Pkce {
            verifier: Secret::new(verifier),
            challenge,
        })
    }
}

/// `BASE64URL(SHA256(verifier))`.
fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

/// The system gave no random bytes (a login cannot start without them).
#[derive(Debug, thiserror::Error)]
#[error("the system gives no random bytes")]
pub struct NoRandom;

/// `n` random bytes from the system, base64url.
pub fn random(n: usize) -> Result<String, NoRandom> {
    let mut bytes = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| NoRandom)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_one_of_rfc_7636_appendix_b() {
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_long_unreserved_and_fresh() {
        let a = Pkce::new().expect("random");
        let b = Pkce::new().expect("random");
        let v = a.verifier.expose();
        assert_eq!(v.len(), 43);
        assert!(v
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        assert_ne!(v, b.verifier.expose());
        assert_eq!(a.challenge, challenge_of(v));
    }
}
