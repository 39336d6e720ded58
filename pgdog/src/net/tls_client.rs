//! TLS towards Postgres servers (`server_tls`, `server_tls_ca`), as libpq's sslmode: `disable`,
//! `prefer` (TLS when the server offers it), `require` (TLS, any certificate), `verify-ca`
//! (the chain must lead to `server_tls_ca`), `verify-full` (and name the host). Used by every
//! server connection: pools, health checks, replication and resharding.
use crate::config::ServerTls;
use parking_lot::Mutex;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

type Cert<'a> = CertificateDer<'a>;
type Dss = DigitallySignedStruct;
type SignatureCheck = Result<HandshakeSignatureValid, Error>;

/// `require` and `verify-ca`: the handshake signatures are checked as rustls does; the
/// certificate not at all (`require`: encryption without authentication) or its chain without
/// the host name (`verify-ca`: `chain` is rustls' verifier for `server_tls_ca`).
#[derive(Debug)]
struct Relaxed {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(&self, m: &[u8], c: &Cert<'_>, d: &Dss) -> SignatureCheck {
        rustls::crypto::verify_tls12_signature(m, c, d, self.algorithms())
    }

    fn verify_tls13_signature(&self, m: &[u8], c: &Cert<'_>, d: &Dss) -> SignatureCheck {
        rustls::crypto::verify_tls13_signature(m, c, d, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms().supported_schemes()
    }
}

impl Relaxed {
    fn algorithms(&self) -> &rustls::crypto::WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

/// Reads a PEM bundle of CA certificates (servers' for `server_tls_ca`, clients' for
/// `tls_client_ca`).
pub(crate) fn roots(ca: &Path) -> Result<rustls::RootCertStore, String> {
    let f = std::fs::File::open(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
    let mut store = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut std::io::BufReader::new(f)) {
        let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
        store
            .add(cert)
            .map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    if store.is_empty() {
        return Err(format!("{}: no certificate", ca.display()));
    }
    Ok(store)
}

fn build(mode: ServerTls, ca: Option<&Path>) -> Result<tokio_rustls::TlsConnector, String> {
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        ServerTls::VerifyCa | ServerTls::VerifyFull => {
            let ca = ca.ok_or("server_tls = verify-ca / verify-full needs server_tls_ca")?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
                    .build()
                    .map_err(|e| e.to_string())?;
            if mode == ServerTls::VerifyCa {
                Arc::new(Relaxed {
                    chain: Some(webpki),
                    provider: provider(),
                })
            } else {
                webpki
            }
        }
        _ => Arc::new(Relaxed {
            chain: None,
            provider: provider(),
        }),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

type Cached = Option<(ServerTls, Option<PathBuf>, tokio_rustls::TlsConnector)>;
static CACHE: LazyLock<Mutex<Cached>> = LazyLock::new(|| Mutex::new(None));

/// The connector for `mode` (built once per mode and CA file).
pub fn connector(mode: ServerTls, ca: Option<&Path>) -> Result<tokio_rustls::TlsConnector, String> {
    let mut cache = CACHE.lock();
    if let Some((m, c, connector)) = cache.as_ref() {
        if *m == mode && c.as_deref() == ca {
            return Ok(connector.clone());
        }
    }
    let built = build(mode, ca)?;
    *cache = Some((mode, ca.map(Path::to_path_buf), built.clone()));
    Ok(built)
}

/// The name the certificate must carry: the host as configured (an IP address or a DNS name).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("server name {host}: {e}"))
}
