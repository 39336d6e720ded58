//! Accepts client connections and starts a task per client. With `so_reuseport` the port is
//! shared with the other pgdogs started on it, and at shutdown the listening socket goes to
//! the one taking over (`ops::handover`) with the connections waiting in its queue.
use crate::registry::Registry;
use std::os::fd::OwnedFd;
use tokio::net::TcpListener;

/// Binds `addr` (`host:port`), with SO_REUSEPORT when asked.
pub async fn bind(addr: &str, reuseport: bool) -> std::io::Result<TcpListener> {
    let mut last = None;
    for resolved in tokio::net::lookup_host(addr).await? {
        let socket = if resolved.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.set_reuseport(reuseport)?;
        match socket.bind(resolved) {
            Ok(()) => return socket.listen(libc::SOMAXCONN as u32),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
}

/// Serves clients from `listener` until the shutdown starts; then hands it over to the pgdog
/// taking over, if any (`so_reuseport`), and stops accepting.
pub async fn listen(listener: TcpListener) {
    tokio::select! {
        _ = accept(&listener) => {}
        _ = crate::ops::shutdown::requested() => {}
    }
    // Test hooks of benchmarks/restart.sh, which measures what the handover saves:
    // `listener-linger=return(MS)` keeps the socket MS ms without accepting (connections wait
    // in its queue, as in the short moment before any listener closes), and
    // `keep-listening-socket` closes it instead of handing it over (they are reset).
    let linger = linger_ms();
    if let Some(ms) = linger {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    fail::fail_point!("keep-listening-socket", |_| ());
    if crate::config::active().so_reuseport {
        crate::ops::handover::pass_listener(&listener).await;
    }
}

/// The failpoint `listener-linger=return(MS)`: MS (see `listen`).
fn linger_ms() -> Option<u64> {
    fail::fail_point!("listener-linger", |ms| ms.and_then(|ms| ms.parse().ok()));
    None
}

async fn accept(listener: &TcpListener) {
    loop {
        crate::ops::suspend::accepting().await;
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

/// The tasks serving listening sockets other pgdogs handed over.
static ADOPTED: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>> =
    parking_lot::Mutex::new(Vec::new());

/// Accepts clients on a listening socket another pgdog handed over (one bound to this
/// pgdog's own address).
pub fn adopt(fd: OwnedFd) -> Result<(), String> {
    if crate::ops::shutdown::is_shutting_down() {
        return Err("this pgdog is shutting down too".into());
    }
    let std = std::net::TcpListener::from(fd);
    let port = crate::config::active().port;
    match std.local_addr() {
        Ok(addr) if addr.port() == port => {}
        other => return Err(format!("not a socket of port {port}: {other:?}")),
    }
    std.set_nonblocking(true).map_err(|e| e.to_string())?;
    let listener = TcpListener::from_std(std).map_err(|e| e.to_string())?;
    tracing::info!("accepting on a listening socket handed over by another pgdog");
    ADOPTED.lock().push(tokio::spawn(listen(listener)));
    Ok(())
}

/// Waits until the listening sockets handed over by other pgdogs were passed on (or closed)
/// at shutdown.
pub async fn adopted_done() {
    let handles = std::mem::take(&mut *ADOPTED.lock());
    for h in handles {
        let _ = h.await;
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
