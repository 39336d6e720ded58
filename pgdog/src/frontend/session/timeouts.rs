//! A session's clocks: `query_timeout` (the running query is cancelled on the server, which
//! answers 57014), `idle_in_transaction_timeout` (FATAL 25P03; the server is rolled back and
//! goes back to its pool) and `client_idle_timeout` (FATAL 57P05).
use super::{Session, SessionError};
use crate::net::TxStatus;
use std::time::Duration;
use tokio::time::Instant;

/// Which clock runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    Query,
    IdleInTransaction,
    Idle,
}

/// The next deadline of a session, with its clock.
pub(crate) type Deadline = Option<(Instant, Clock)>;

/// Resolves at the deadline; never without one (no timer is set, and no clock read).
pub(crate) async fn expiry(deadline: Deadline) {
    match deadline {
        Some((at, _)) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The session was asked to end: KILL, shutdown (Postgres' words for a terminated backend),
/// or KILL_CLIENT (PgBouncer's).
pub(crate) fn stopped(client: &crate::stats::clients::ClientInfo) -> SessionError {
    if client.is_forced() {
        return SessionError::Terminated("08P01", "admin forced disconnect".into());
    }
    SessionError::Terminated(
        "57P01",
        "terminating connection due to administrator command".into(),
    )
}

/// FATAL for an idle clock.
pub(crate) fn idle_error(clock: Clock) -> SessionError {
    match clock {
        Clock::IdleInTransaction => SessionError::Terminated(
            "25P03",
            "terminating connection due to idle-in-transaction timeout".into(),
        ),
        _ => SessionError::Terminated(
            "57P05",
            "terminating connection due to idle-session timeout".into(),
        ),
    }
}

/// Picks the clock that applies: a request in flight, a transaction waiting for the client,
/// or a client idle between transactions. Timeouts in milliseconds, 0 for off.
/// `clocks`: the pool's timeouts (the most specific of the user's, the database's and
/// `[general]`'s), read only when some clock is on anywhere.
pub(crate) fn next_deadline(
    clocks: impl FnOnce() -> crate::config::ClientClocks,
    busy_since: Option<std::time::Instant>,
    in_transaction: bool,
    last_message: std::time::Instant,
) -> Deadline {
    if !crate::config::client_clocks() {
        return None;
    }
    let c = clocks();
    let at =
        |from: std::time::Instant, ms: u64| Instant::from_std(from + Duration::from_millis(ms));
    match busy_since {
        Some(start) if c.query > 0 => Some((at(start, c.query), Clock::Query)),
        Some(_) => None,
        None if in_transaction && c.idle_in_transaction > 0 => Some((
            at(last_message, c.idle_in_transaction),
            Clock::IdleInTransaction,
        )),
        None if !in_transaction && c.idle > 0 => Some((at(last_message, c.idle), Clock::Idle)),
        None => None,
    }
}

impl Session {
    /// The next deadline, and whether the client is between transactions.
    pub(super) fn deadline(&self) -> (Deadline, bool) {
        let busy = !self.expected.is_empty();
        let idle =
            !busy && !self.unsynced && self.status == TxStatus::Idle && self.aborted.is_none();
        let busy_since = if busy && !self.cancel_sent {
            Some(
                self.client
                    .meter
                    .request_started()
                    .unwrap_or_else(std::time::Instant::now),
            )
        } else if busy {
            // Cancelled already: wait for the server's answer.
            return (None, idle);
        } else {
            None
        };
        let deadline = next_deadline(
            || self.shard.clocks(),
            busy_since,
            !idle,
            self.client.meter.last_message(),
        );
        (deadline, idle)
    }

    /// A clock ran out.
    pub(super) async fn timed_out(&mut self, deadline: Deadline) -> Result<(), SessionError> {
        match deadline {
            Some((_, Clock::Query)) => {
                self.cancel_sent = true;
                if let Some(server) = self.server.as_ref() {
                    tracing::info!(
                        "client {}@{}: query_timeout, cancelling the query",
                        self.client.user,
                        self.client.database
                    );
                    let key = server.cancel_key.clone();
                    tokio::spawn(async move { crate::frontend::cancel::cancel_server(&key).await });
                }
                Ok(())
            }
            Some((_, clock)) => Err(idle_error(clock)),
            None => Ok(()),
        }
    }
}
