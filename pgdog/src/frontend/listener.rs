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
    // The files and their modification times: a file replaced at the same path (a renewed
    // certificate, a CA removed from the bundle) is read again at the next connection.
    type Key = Vec<(std::path::PathBuf, Option<std::time::SystemTime>)>;
    static CACHE: LazyLock<Mutex<Option<(Key, tokio_rustls::TlsAcceptor)>>> =
        LazyLock::new(|| Mutex::new(None));
    let registry = Registry::current();
    let g = &registry.settings.config.general;
    let (cert, key) = (g.tls_certificate.as_ref()?, g.tls_private_key.as_ref()?);
    let wanted: Key = [Some(cert), Some(key), g.tls_client_ca.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p.clone(),
                std::fs::metadata(p).and_then(|m| m.modified()).ok(),
            )
        })
        .collect();
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
