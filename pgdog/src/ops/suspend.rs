//! SUSPEND (the admin database's, as PgBouncer's): no new connection is accepted on any
//! listening socket until RESUME; the databases are paused as well (see `admin::control`).
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

static SUSPENDED: AtomicBool = AtomicBool::new(false);
static RESUMED: Notify = Notify::const_new();

/// Stops (`true`) or restarts accepting connections.
pub fn set(suspended: bool) {
    SUSPENDED.store(suspended, Ordering::SeqCst);
    if !suspended {
        RESUMED.notify_waiters();
    }
}

pub fn is_suspended() -> bool {
    SUSPENDED.load(Ordering::SeqCst)
}

/// Resolves at once unless suspended; then at RESUME.
pub async fn accepting() {
    loop {
        let resumed = RESUMED.notified();
        tokio::pin!(resumed);
        resumed.as_mut().enable();
        if !is_suspended() {
            return;
        }
        resumed.await;
    }
}
