//! Accepts client connections and starts a task per client.
use crate::registry::Registry;
use tokio::net::TcpListener;

/// Binds `host:port` and serves clients until the process ends.
pub async fn listen(listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((socket, _)) => {
                let tls = tls_acceptor();
                tokio::spawn(super::login::serve(socket, tls));
            }
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// The TLS acceptor for the current configuration (built once per configuration).
fn tls_acceptor() -> Option<tokio_rustls::TlsAcceptor> {
    use parking_lot::Mutex;
    use std::sync::LazyLock;
    type Key = (std::path::PathBuf, Option<std::path::PathBuf>);
    static CACHE: LazyLock<Mutex<Option<(Key, tokio_rustls::TlsAcceptor)>>> =
        LazyLock::new(|| Mutex::new(None));
    let registry = Registry::current();
    let g = &registry.settings.config.general;
    let (cert, key) = (g.tls_certificate.as_ref()?, g.tls_private_key.as_ref()?);
    let wanted = (cert.clone(), g.tls_client_ca.clone());
    let mut cache = CACHE.lock();
    if let Some((k, acceptor)) = cache.as_ref() {
        if *k == wanted {
            return Some(acceptor.clone());
        }
    }
    match crate::net::stream::tls_acceptor(cert, key, g.tls_client_ca.as_deref()) {
        Ok(acceptor) => {
            *cache = Some((wanted, acceptor.clone()));
            Some(acceptor)
        }
        Err(e) => {
            tracing::error!("TLS disabled: {e}");
            None
        }
    }
}
