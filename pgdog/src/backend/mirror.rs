//! Mirroring (`[[mirroring]]`): the transactions of a source database's clients replayed on a
//! destination database, asynchronously, never delaying or failing the source's clients.
//!
//! Each source session has a `Tap`: it copies the client's messages of the transaction in
//! flight and, when the transaction ends (ReadyForQuery `I`), hands them to the client's
//! `lane` without waiting. A lane is a connection pgdog makes to itself, logged in as the same
//! user to the destination database, so the destination's own session routes the replay
//! (a sharded destination included) and it runs in the client's order. Transactions waiting in
//! the lanes of one destination are capped at `queue_length`: past it a transaction is dropped,
//! counted. After a drop, or a transaction that failed on the destination but not on the
//! source, that client's lane stops replaying (counted as dropped): the destination holds a
//! prefix of each client's transactions, never one with a gap.
pub mod lane;
pub mod tap;

use crate::config::{MirrorLevel, Mirroring, Settings};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};

pub use tap::Tap;

/// One `[[mirroring]]` entry with its counters.
#[derive(Debug)]
pub struct Mirror {
    pub config: Mirroring,
    /// Transactions waiting in the lanes.
    depth: AtomicUsize,
    pub mirrored: AtomicU64,
    pub dropped: AtomicU64,
    pub errors: AtomicU64,
    /// Time of the mirrored transactions on the source (first message to ReadyForQuery) and
    /// on the destination (written to answered), microseconds.
    pub source_us: AtomicU64,
    pub destination_us: AtomicU64,
}

impl Mirror {
    fn new(config: Mirroring) -> Mirror {
        Mirror {
            config,
            depth: AtomicUsize::new(0),
            mirrored: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            source_us: AtomicU64::new(0),
            destination_us: AtomicU64::new(0),
        }
    }

    /// Transactions queued now.
    pub fn depth(&self) -> usize {
        self.depth.load(Relaxed)
    }

    /// Takes a place in the queue (false: it is full).
    fn enqueue(&self) -> bool {
        self.depth
            .fetch_update(Relaxed, Relaxed, |d| {
                (d < self.config.queue_length).then_some(d + 1)
            })
            .is_ok()
    }

    fn dequeued(&self) {
        self.depth.fetch_sub(1, Relaxed);
    }

    /// Whether a transaction is replayed: its level, then the exposure.
    fn wants(&self, ddl: bool) -> bool {
        let level = match self.config.level {
            MirrorLevel::All => true,
            MirrorLevel::Dml => !ddl,
            MirrorLevel::Ddl => ddl,
        };
        level && (self.config.exposure >= 1.0 || rand::random::<f64>() < self.config.exposure)
    }
}

static MIRRORS: LazyLock<RwLock<Vec<Arc<Mirror>>>> = LazyLock::new(|| RwLock::new(Vec::new()));

/// Takes the `[[mirroring]]` entries of a (re)loaded configuration; an entry that did not
/// change keeps its counters (and its lanes keep running).
pub fn configure(settings: &Settings) {
    let mut mirrors = MIRRORS.write();
    let old = std::mem::take(&mut *mirrors);
    *mirrors = settings
        .config
        .mirroring
        .iter()
        .map(|c| {
            old.iter()
                .find(|m| m.config == *c)
                .cloned()
                .unwrap_or_else(|| Arc::new(Mirror::new(c.clone())))
        })
        .collect();
}

/// The mirrors of a source database.
pub fn of_source(database: &str) -> Vec<Arc<Mirror>> {
    MIRRORS
        .read()
        .iter()
        .filter(|m| m.config.source_db == database)
        .cloned()
        .collect()
}

/// Every mirror (SHOW MIRRORS, metrics).
pub fn all() -> Vec<Arc<Mirror>> {
    MIRRORS.read().clone()
}

/// Whether any statement of `sql` is DDL (for `level`).
fn has_ddl(sql: &str) -> bool {
    use pg_query_raw::router::StatementKind;
    let Ok(parsed) = crate::router::QueryCache::global().get(sql) else {
        return false;
    };
    parsed.statements.iter().any(|s| match &s.kind {
        StatementKind::Utility(name) => !matches!(*name, "DiscardStmt" | "VariableShowStmt"),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirror(level: MirrorLevel, exposure: f64, queue_length: usize) -> Mirror {
        Mirror::new(Mirroring {
            source_db: "a".into(),
            destination_db: "b".into(),
            exposure,
            queue_length,
            level,
        })
    }

    #[test]
    fn level_and_exposure() {
        assert!(mirror(MirrorLevel::All, 1.0, 1).wants(true));
        assert!(mirror(MirrorLevel::Dml, 1.0, 1).wants(false));
        assert!(!mirror(MirrorLevel::Dml, 1.0, 1).wants(true));
        assert!(mirror(MirrorLevel::Ddl, 1.0, 1).wants(true));
        assert!(!mirror(MirrorLevel::Ddl, 1.0, 1).wants(false));
        assert!(!(0..100).any(|_| mirror(MirrorLevel::All, 0.0, 1).wants(false)));
        let half = mirror(MirrorLevel::All, 0.5, 1);
        let n = (0..10_000).filter(|_| half.wants(false)).count();
        assert!((4_000..6_000).contains(&n), "{n}");
    }

    #[test]
    fn the_queue_is_bounded() {
        let m = mirror(MirrorLevel::All, 1.0, 2);
        assert!(m.enqueue() && m.enqueue());
        assert!(!m.enqueue());
        m.dequeued();
        assert!(m.enqueue());
        assert_eq!(m.depth(), 2);
    }

    #[test]
    fn ddl_is_recognised() {
        assert!(has_ddl("CREATE TABLE t (id int)"));
        assert!(has_ddl("SELECT 1; ALTER TABLE t ADD c int"));
        assert!(!has_ddl("INSERT INTO t VALUES (1)"));
        assert!(!has_ddl("BEGIN"));
        assert!(!has_ddl("SET x = 1"));
    }
}
