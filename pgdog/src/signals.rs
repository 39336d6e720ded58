//! The signals the long-running command-line tools (`logical-dump`, `replay`, `reshard`) stop
//! on: Ctrl-C or SIGTERM. The proxy's own signal handling (SIGHUP reload) lives in `admin`.

/// Resolves on the first Ctrl-C (SIGINT) or SIGTERM.
pub async fn interrupted() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
