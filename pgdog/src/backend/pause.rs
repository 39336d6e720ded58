//! The pause gate of each database name (so a pause survives a reload): a pool primitive every
//! client session passes; the admin database's PAUSE / RESUME (and the cutover) drive it.
//!
//! Client sessions pass through [`enter`] before they check out a server for a new transaction
//! (or statement) and hold the returned [`Ticket`] until they have given every server back.
//! While a database is paused, `enter` waits; [`pause`] marks the database paused and then waits
//! until no ticket of it is left (transactions in flight have finished), up to a timeout.
//! The hot path is two atomic operations per transaction; nothing is notified unless a pause
//! is in progress.
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio::sync::Notify;

/// Why a pause did not take.
#[derive(Debug, thiserror::Error)]
pub enum PauseError {
    /// Transactions (or pinned sessions) still held servers at the timeout; undone.
    #[error("PAUSE {database}: {in_flight} client(s) still in a transaction or holding a server after {timeout_ms} ms (pause_timeout); the pause was undone")]
    Timeout {
        database: String,
        in_flight: usize,
        timeout_ms: u64,
    },
    /// A RESUME (or another PAUSE's undo) came while it waited.
    #[error("PAUSE {database}: resumed while waiting for {in_flight} client(s)")]
    Resumed { database: String, in_flight: usize },
}

impl PauseError {
    /// Both are "query canceled" to the admin client.
    pub fn code(&self) -> &'static str {
        "57014"
    }
}

/// Pause state of one database name.
#[derive(Default)]
pub struct Gate {
    paused: AtomicBool,
    /// Sessions between `enter` and dropping their ticket.
    in_flight: AtomicUsize,
    /// Sessions waiting in `enter`.
    waiting: AtomicUsize,
    /// Notified by RESUME.
    resumed: Notify,
    /// Notified when the last ticket of a paused database is dropped.
    idle: Notify,
}

static GATES: LazyLock<RwLock<HashMap<String, Arc<Gate>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// The gate of a database (created on first use; sessions keep the `Arc`).
pub fn gate(database: &str) -> Arc<Gate> {
    if let Some(g) = GATES.read().get(database) {
        return g.clone();
    }
    GATES
        .write()
        .entry(database.to_string())
        .or_default()
        .clone()
}

/// Held by a session while it may have servers of the database checked out.
pub struct Ticket {
    gate: Arc<Gate>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let before = self.gate.in_flight.fetch_sub(1, SeqCst);
        if before == 1 && self.gate.paused.load(SeqCst) {
            self.gate.idle.notify_waiters();
        }
    }
}

/// Admits the session now, unless the database is paused (None: it backed out, waking a PAUSE
/// waiting for the count to drop).
pub fn try_enter(gate: &Arc<Gate>) -> Option<Ticket> {
    gate.in_flight.fetch_add(1, SeqCst);
    let ticket = Ticket { gate: gate.clone() };
    (!gate.paused.load(SeqCst)).then_some(ticket)
}

/// Waits while the database is paused, then admits the session.
pub async fn enter(gate: &Arc<Gate>) -> Ticket {
    loop {
        if let Some(ticket) = try_enter(gate) {
            return ticket;
        }
        let resumed = gate.resumed.notified();
        tokio::pin!(resumed);
        resumed.as_mut().enable();
        if !gate.paused.load(SeqCst) {
            continue;
        }
        gate.waiting.fetch_add(1, SeqCst);
        resumed.await;
        gate.waiting.fetch_sub(1, SeqCst);
    }
}

/// Pauses `databases` and waits until none of them has a session in flight. On timeout the
/// databases this call paused are resumed again and the error names the first busy one. A
/// RESUME (or another PAUSE's undo) while it waits makes it fail too.
pub async fn pause_all(databases: &[String], timeout: Duration) -> Result<(), PauseError> {
    let gates: Vec<(String, Arc<Gate>, bool)> = databases
        .iter()
        .map(|db| {
            let g = gate(db);
            let was = g.paused.swap(true, SeqCst);
            (db.clone(), g, !was)
        })
        .collect();
    let deadline = tokio::time::Instant::now() + timeout;
    for (db, g, _) in &gates {
        loop {
            let idle = g.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            let n = g.in_flight.load(SeqCst);
            if n == 0 {
                break;
            }
            if !g.paused.load(SeqCst) {
                for (_, g, mine) in &gates {
                    if *mine {
                        resume_gate(g);
                    }
                }
                return Err(PauseError::Resumed {
                    database: db.clone(),
                    in_flight: n,
                });
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                let in_flight = g.in_flight.load(SeqCst);
                if in_flight == 0 {
                    break;
                }
                for (_, g, mine) in &gates {
                    if *mine {
                        resume_gate(g);
                    }
                }
                return Err(PauseError::Timeout {
                    database: db.clone(),
                    in_flight,
                    timeout_ms: timeout.as_millis() as u64,
                });
            }
        }
    }
    Ok(())
}

fn resume_gate(g: &Gate) {
    g.paused.store(false, SeqCst);
    g.resumed.notify_waiters();
    // A PAUSE still waiting for this database gives up.
    g.idle.notify_waiters();
}

/// Resumes `databases` (waiting sessions continue).
pub fn resume_all(databases: &[String]) {
    let gates = GATES.read();
    for db in databases {
        if let Some(g) = gates.get(db) {
            resume_gate(g);
        }
    }
}

/// Every paused database name, sorted.
pub fn paused() -> Vec<String> {
    let mut out: Vec<String> = GATES
        .read()
        .iter()
        .filter(|(_, g)| g.paused.load(SeqCst))
        .map(|(name, _)| name.clone())
        .collect();
    out.sort();
    out
}

/// Every database with a gate: name, paused, sessions in flight, sessions waiting.
pub fn states() -> Vec<(String, bool, usize, usize)> {
    let mut out: Vec<_> = GATES
        .read()
        .iter()
        .map(|(name, g)| {
            (
                name.clone(),
                g.paused.load(SeqCst),
                g.in_flight.load(SeqCst),
                g.waiting.load(SeqCst),
            )
        })
        .collect();
    out.sort();
    out
}

/// Marks `databases` paused without waiting for their transactions (KILL: the sessions are
/// being ended; new ones wait for RESUME, as PgBouncer's KILL has them).
pub fn hold(databases: &[String]) {
    for db in databases {
        gate(db).paused.store(true, SeqCst);
    }
}

/// Databases DISABLEd in the admin database: new clients are refused at login.
static DISABLED: LazyLock<RwLock<std::collections::BTreeSet<String>>> =
    LazyLock::new(Default::default);

/// DISABLE (`true`) or ENABLE a database.
pub fn set_disabled(database: &str, disabled: bool) {
    let mut set = DISABLED.write();
    if disabled {
        set.insert(database.to_string());
    } else {
        set.remove(database);
    }
}

/// Whether new clients of `database` are refused (DISABLE).
pub fn is_disabled(database: &str) -> bool {
    let set = DISABLED.read();
    !set.is_empty() && set.contains(database)
}

/// Whether `database` is paused.
pub fn is_paused(database: &str) -> bool {
    GATES
        .read()
        .get(database)
        .is_some_and(|g| g.paused.load(SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `condition` holds within `limit` (checked between yields).
    async fn soon(limit: Duration, condition: impl Fn() -> bool) -> bool {
        let wait = async {
            while !condition() {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }

    /// Pauses `db` from another task (it waits for the tickets held).
    fn pause_in_background(
        db: &str,
        limit: Duration,
    ) -> tokio::task::JoinHandle<Result<(), PauseError>> {
        let db = db.to_string();
        tokio::spawn(async move { pause_all(&[db], limit).await })
    }

    #[tokio::test]
    async fn pause_waits_for_tickets_and_blocks_new_ones() {
        let db = "pause-unit-a".to_string();
        let g = gate(&db);
        let t = enter(&g).await;
        let p = pause_in_background(&db, Duration::from_secs(10));
        // Still pending while the ticket is held.
        assert!(soon(Duration::from_millis(100), || is_paused("pause-unit-a")).await);
        assert!(!p.is_finished());
        drop(t);
        p.await.unwrap().unwrap();
        let waiter = tokio::spawn({
            let g = g.clone();
            async move { enter(&g).await }
        });
        let pending = soon(Duration::from_millis(100), || g.waiting.load(SeqCst) > 0).await;
        assert!(pending, "the session waits in the pause");
        assert!(!waiter.is_finished());
        resume_all(&[db]);
        let _ticket = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn resume_while_pause_waits_fails_the_pause() {
        let db = "pause-unit-c".to_string();
        let g = gate(&db);
        let _t = enter(&g).await;
        let p = pause_in_background(&db, Duration::from_secs(30));
        assert!(soon(Duration::from_secs(5), || is_paused("pause-unit-c")).await);
        resume_all(std::slice::from_ref(&db));
        let err = tokio::time::timeout(Duration::from_secs(5), p)
            .await
            .unwrap()
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code(), "57014");
        assert!(!is_paused(&db));
    }

    #[tokio::test]
    async fn pause_times_out_and_is_undone() {
        let db = "pause-unit-b".to_string();
        let g = gate(&db);
        let _t = enter(&g).await;
        let err = pause_all(std::slice::from_ref(&db), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "57014");
        assert!(!is_paused(&db));
        let _t2 = tokio::time::timeout(Duration::from_secs(1), enter(&g))
            .await
            .unwrap();
    }
}
