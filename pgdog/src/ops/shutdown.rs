//! Shutdown, with PgBouncer 1.23's meanings:
//! - SIGINT and the admin database's `SHUTDOWN` / `SHUTDOWN WAIT_FOR_SERVERS`: stop accepting
//!   clients, let transactions in flight finish, end every client between transactions with
//!   FATAL 57P01, then close the servers and exit 0.
//! - SIGTERM and `SHUTDOWN WAIT_FOR_CLIENTS`: stop accepting clients and keep serving the ones
//!   connected until they leave, then exit 0.
//! - SIGQUIT: at once.
//!
//! Both waits are bounded by `shutdown_timeout` (then the clients left are closed). A second
//! SIGINT, SIGTERM or SIGQUIT during a shutdown exits at once (status 0, as PgBouncer). With
//! `so_reuseport` and a pgdog taking over, the listening socket and the clients between
//! transactions go to it (`ops::handover`) in every mode but the immediate one.
use crate::registry::Registry;
use crate::stats::clients;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// How the process is to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Mode {
    /// Clients keep being served until they leave (SIGTERM, `WAIT_FOR_CLIENTS`).
    WaitForClients = 1,
    /// Transactions finish, then clients are ended (SIGINT, `SHUTDOWN`, `WAIT_FOR_SERVERS`).
    WaitForServers = 2,
    /// At once (SIGQUIT).
    Immediate = 3,
}

impl Mode {
    fn of(n: u8) -> Option<Mode> {
        [Mode::WaitForClients, Mode::WaitForServers, Mode::Immediate]
            .into_iter()
            .find(|m| *m as u8 == n)
    }
}

/// 0: running, else the `Mode` asked (the most urgent one wins).
static STATE: AtomicU8 = AtomicU8::new(0);
static ASKED: Notify = Notify::const_new();

/// Asks for a shutdown in `mode` (a more urgent one than already asked takes over).
pub fn request(mode: Mode) {
    let before = STATE.fetch_max(mode as u8, Ordering::SeqCst);
    if before == 0 {
        tracing::info!("shutting down ({mode:?})");
    }
    ASKED.notify_waiters();
    ASKED.notify_one();
}

/// Whether a shutdown was asked for.
pub fn is_shutting_down() -> bool {
    STATE.load(Ordering::SeqCst) != 0
}

/// The shutdown asked for, if any.
pub fn mode() -> Option<Mode> {
    Mode::of(STATE.load(Ordering::SeqCst))
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

/// SIGTERM, SIGINT, SIGQUIT (see the module's doc); SIGUSR1 pauses every database and SIGUSR2
/// resumes them (and a SUSPEND), as PgBouncer's.
pub async fn on_signals() {
    use tokio::signal::unix::{signal, SignalKind};
    let kinds = [
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::quit(),
        SignalKind::user_defined1(),
        SignalKind::user_defined2(),
    ];
    let signals: Result<Vec<_>, _> = kinds.into_iter().map(signal).collect();
    let Some([mut term, mut int, mut quit, mut usr1, mut usr2]) =
        signals.ok().and_then(|v| <[_; 5]>::try_from(v).ok())
    else {
        tracing::error!("cannot listen for SIGTERM / SIGINT / SIGQUIT / SIGUSR1 / SIGUSR2");
        return;
    };
    loop {
        let which = tokio::select! {
            _ = term.recv() => Mode::WaitForClients as u8,
            _ = int.recv() => Mode::WaitForServers as u8,
            _ = quit.recv() => Mode::Immediate as u8,
            _ = usr1.recv() => 10,
            _ = usr2.recv() => 11,
        };
        match Mode::of(which) {
            Some(_) if is_shutting_down() => {
                tracing::warn!("second signal during the shutdown: exiting now");
                std::process::exit(0);
            }
            Some(mode) => request(mode),
            None if is_shutting_down() => {
                tracing::info!("SIGUSR1/SIGUSR2 during the shutdown: ignored")
            }
            None if which == 10 => {
                tracing::info!("SIGUSR1: pausing every database");
                let registry = Registry::current();
                let databases = registry.settings.database_names();
                let timeout = Duration::from_millis(registry.settings.config.general.pause_timeout);
                drop(registry);
                // (In its own task: the next signal is not held up by the wait.)
                tokio::spawn(async move {
                    if let Err(e) = crate::backend::pause::pause_all(&databases, timeout).await {
                        tracing::warn!("SIGUSR1: {e}");
                    }
                });
            }
            None => {
                tracing::info!("SIGUSR2: resuming");
                crate::ops::suspend::set(false);
                crate::backend::pause::resume_all(&crate::backend::pause::paused());
            }
        }
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
    let mode = mode().unwrap_or(Mode::WaitForServers);
    let registry = Registry::current();
    let wait = match mode {
        Mode::Immediate => Duration::ZERO,
        _ => Duration::from_millis(registry.settings.config.general.shutdown_timeout),
    };
    if registry.settings.config.general.so_reuseport {
        // Clients between transactions go to the pgdog taking over, if there is one.
        crate::ops::handover::choose_successor().await;
    }
    // WAIT_FOR_CLIENTS serves the clients until they leave, unless a pgdog takes them over.
    if mode != Mode::WaitForClients || crate::ops::handover::successor().is_some() {
        clients::drain_all();
    }
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
