//! Graceful shutdown. SIGTERM and the admin database's SHUTDOWN: stop accepting clients, let
//! transactions in flight finish for up to `shutdown_timeout`, end every client between
//! transactions with FATAL 57P01, then the rest, close the servers and exit 0. SIGINT: the same
//! without the wait. A second signal exits at once (status 1). With `so_reuseport`, the
//! listening socket and the clients between transactions go to another pgdog of the port
//! (`ops::handover`) instead.
use crate::registry::Registry;
use crate::stats::clients;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// 0: running, 1: graceful shutdown asked, 2: immediate shutdown asked.
static STATE: AtomicU8 = AtomicU8::new(0);
static ASKED: Notify = Notify::const_new();

/// Asks for a shutdown (`graceful`: wait for transactions in flight).
pub fn request(graceful: bool) {
    let want = if graceful { 1 } else { 2 };
    let before = STATE.fetch_max(want, Ordering::SeqCst);
    if before == 0 {
        tracing::info!(
            "shutting down ({})",
            if graceful { "graceful" } else { "immediate" }
        );
    }
    ASKED.notify_waiters();
    ASKED.notify_one();
}

/// Whether a shutdown was asked for.
pub fn is_shutting_down() -> bool {
    STATE.load(Ordering::SeqCst) != 0
}

/// Resolves when a shutdown is asked for.
pub async fn requested() {
    loop {
        let notified = ASKED.notified();
        if is_shutting_down() {
            return;
        }
        notified.await;
    }
}

/// SIGTERM: graceful; SIGINT: immediate; any second one: exit now.
pub async fn on_signals() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM / SIGINT");
        return;
    };
    loop {
        let graceful = tokio::select! {
            _ = term.recv() => true,
            _ = int.recv() => false,
        };
        if is_shutting_down() {
            tracing::warn!("second signal: exiting now");
            std::process::exit(1);
        }
        request(graceful);
    }
}

/// Waits until no client is connected, for up to `limit`. Whether they all left.
async fn clients_gone(limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        if clients::count() == 0 {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tick.tick().await;
    }
}

/// Runs the shutdown once it was asked for (the listener is already closed): drains the
/// clients, then closes the pools.
pub async fn drain() {
    let graceful = STATE.load(Ordering::SeqCst) == 1;
    let registry = Registry::current();
    let wait = if graceful {
        Duration::from_millis(registry.settings.config.general.shutdown_timeout)
    } else {
        Duration::ZERO
    };
    if registry.settings.config.general.so_reuseport {
        // Clients between transactions go to the pgdog taking over, if there is one.
        crate::ops::handover::choose_successor().await;
    }
    clients::drain_all();
    if !clients_gone(wait).await {
        let n = clients::kill(None);
        tracing::info!("shutdown: closing {n} client(s) still connected");
        clients_gone(Duration::from_secs(5)).await;
    }
    for pool in registry.pools() {
        pool.shutdown();
    }
    crate::ops::handover::remove_own();
    tracing::info!("shutdown complete");
}
