//! TLS, and mutual TLS when a client CA is given, through rustls with the ring provider.
//!
//! The provider is named explicitly rather than installed process-wide, so embedding programs
//! keep their own choice, and ring is used because it is already in the tree (aws-lc-rs, rustls'
//! default, needs cmake and a C toolchain at build time). Certificates and keys are PEM.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the server's TLS material lies.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The certificate's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// With it, clients must present a certificate issued by this CA (mTLS).
    pub client_ca: Option<PathBuf>,
}

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: cannot read: {e}", path.display()))
}

impl TlsFiles {
    /// Reads the files and builds the rustls configuration; errors name the option and file.
    pub fn load(&self) -> Result<Arc<ServerConfig>, String> {
        let cert = read("--tls-cert", &self.cert)?;
        let key = zeroize::Zeroizing::new(read("--tls-key", &self.key)?);
        let client_ca = match &self.client_ca {
            Some(path) => Some(read("--client-ca", path)?),
            None => None,
        };
        server_config(&cert, &key, client_ca.as_deref())
    }
}

fn certificates(flag: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag}: not a PEM certificate file: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{flag}: holds no certificate"));
    }
    Ok(certs)
}

/// A rustls server configuration from PEM texts: HTTP/2 (gRPC) or HTTP/1.1 by ALPN, over TLS 1.2 or 1.3, client
/// certificates required and checked against `client_ca` when it is given.
pub fn server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates("--tls-cert", cert_pem)?;
    // The PEM parser's error never quotes the key material.
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("--tls-key: no usable private key: {e}"))?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates("--client-ca", pem)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("--client-ca: unusable certificate: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--client-ca: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
