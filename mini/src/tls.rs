//! Which certificate authorities HTTPS connections (the model, MCP servers, the fetch
//! tool) trust.
//!
//! - By default, Mozilla's root certificates compiled into the binary (`webpki-roots`):
//!   nothing to install, so the binary also talks TLS in a `FROM scratch` image.
//! - `SSL_CERT_FILE=/path/bundle.pem` (the variable OpenSSL, curl and Python read):
//!   exactly the certificates in that PEM file instead — the system bundle
//!   (`/etc/ssl/certs/ca-certificates.crt`, kept current by the distribution) or a
//!   private CA. A file that cannot be read or holds no certificate is a configuration
//!   error at start, not a TLS failure later.

use std::sync::{Arc, OnceLock};

use ureq::tls::{parse_pem, PemItem, RootCerts, TlsConfig};

/// The environment variable naming a PEM bundle of trusted certificates.
pub const VAR: &str = "SSL_CERT_FILE";

static CONFIG: OnceLock<TlsConfig> = OnceLock::new();

/// What is wrong with the file `SSL_CERT_FILE` names; the words finish a sentence about
/// the variable ("names /x.pem, which cannot be read: …"), which the caller reports as a
/// configuration error of [`VAR`].
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("names {}, which cannot be read: {source}", path.display())]
    Unreadable {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("names {}, which is not a PEM file: {source}", path.display())]
    NotPem {
        path: std::path::PathBuf,
        source: ureq::Error,
    },
    #[error(
        "names {}, which holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        .0.display()
    )]
    NoCertificate(std::path::PathBuf),
}

/// Reads `SSL_CERT_FILE` once, at start.
pub fn init() -> Result<(), BundleError> {
    if CONFIG.get().is_some() {
        return Ok(());
    }
    let config = match std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        None => TlsConfig::default(),
        Some(path) => from_file(std::path::Path::new(&path))?,
    };
    let _ = CONFIG.set(config);
    Ok(())
}

/// The TLS configuration every agent uses (cheap to clone).
pub fn config() -> TlsConfig {
    CONFIG.get().cloned().unwrap_or_default()
}

/// A configuration that trusts exactly the certificates in a PEM file.
fn from_file(path: &std::path::Path) -> Result<TlsConfig, BundleError> {
    let pem = std::fs::read(path).map_err(|source| BundleError::Unreadable {
        path: path.into(),
        source,
    })?;
    let mut certs = Vec::new();
    for item in parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(source) => {
                return Err(BundleError::NotPem {
                    path: path.into(),
                    source,
                })
            }
        }
    }
    if certs.is_empty() {
        return Err(BundleError::NoCertificate(path.into()));
    }
    Ok(TlsConfig::builder()
        .root_certs(RootCerts::Specific(Arc::new(certs)))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_bundle_is_a_clear_config_error() {
        let dir = crate::testing::TempDir::new("tls");
        let missing = from_file(&dir.path().join("nope.pem")).unwrap_err();
        assert!(
            matches!(missing, BundleError::Unreadable { .. }),
            "{missing}"
        );
        let missing = missing.to_string();
        assert!(
            missing.contains("nope.pem") && missing.contains("cannot be read"),
            "{missing}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = from_file(&empty).unwrap_err();
        assert!(matches!(err, BundleError::NoCertificate(_)), "{err}");
        let err = err.to_string();
        assert!(err.contains("holds no PEM certificate"), "{err}");
    }
}
