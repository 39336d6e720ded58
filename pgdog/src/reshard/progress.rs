//! Live progress of a reshard and the replay's stop control, shared (`Arc`) between the engine
//! (`copy_data`, `replay`) and whoever displays or orchestrates it (`pgdog reshard`).
//!
//! - [`Progress`]: per copied table (and source shard) rows/bytes so far, per replication stream
//!   (one per source shard) the LSNs applied and received. The engine updates it per CopyData
//!   chunk and per committed transaction, never per row; readers get snapshots.
//! - [`StopAt`]: per source shard LSN targets set while the replay runs (the cutover): once every
//!   stream has committed everything up to its target, `replay()` returns.
use parking_lot::Mutex;
use std::time::{Instant, SystemTime};

/// Shared, cheap-to-read progress of a reshard (Arc-shared between the engine and displays).
#[derive(Default)]
pub struct Progress {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    tables: Vec<TableProgress>,
    streams: Vec<StreamProgress>,
}

/// One table copied from one source shard.
#[derive(Debug, Clone, Default)]
pub struct TableProgress {
    /// `schema.table`, or a key range's name (`schema.table ["id" lo..hi)`).
    pub table: String,
    pub source_shard: usize,
    /// Rows read from the source so far.
    pub rows: u64,
    /// COPY bytes read from the source so far.
    pub bytes: u64,
    /// `pg_class.reltuples` at start, 0 if unknown.
    pub estimated_rows: u64,
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    /// Already copied by an earlier run.
    pub skipped: bool,
    /// The server read from (`replica host:port` or `primary host:port`).
    pub server: String,
    /// Reader connections (CTID ranges) at once.
    pub readers: usize,
}

/// One replication stream (one per source shard).
#[derive(Debug, Clone, Default)]
pub struct StreamProgress {
    pub source_shard: usize,
    /// Last end LSN committed on the destination.
    pub applied_lsn: u64,
    /// Latest wal_end/wal_start seen from the server.
    pub received_lsn: u64,
    /// Source commit timestamp of the last applied transaction.
    pub last_commit_time: Option<SystemTime>,
    pub transactions: u64,
    pub rows: u64,
}

impl Progress {
    pub fn new() -> Progress {
        Progress::default()
    }

    /// Every table seen so far, in the order they were registered.
    pub fn tables(&self) -> Vec<TableProgress> {
        self.inner.lock().tables.clone()
    }

    /// Every replication stream, by source shard.
    pub fn streams(&self) -> Vec<StreamProgress> {
        self.inner.lock().streams.clone()
    }

    /// Registers a table (or resets it when registered again); returns its index for updates.
    pub(crate) fn add_table(
        &self,
        table: &str,
        source_shard: usize,
        estimated_rows: u64,
        server: &str,
    ) -> usize {
        let mut inner = self.inner.lock();
        let entry = TableProgress {
            table: table.to_string(),
            source_shard,
            estimated_rows,
            server: server.to_string(),
            ..Default::default()
        };
        if let Some(i) = inner
            .tables
            .iter()
            .position(|t| t.table == table && t.source_shard == source_shard)
        {
            inner.tables[i] = entry;
            return i;
        }
        inner.tables.push(entry);
        inner.tables.len() - 1
    }

    /// Updates table `index` (from [`Self::add_table`]).
    pub(crate) fn update_table(&self, index: usize, f: impl FnOnce(&mut TableProgress)) {
        if let Some(t) = self.inner.lock().tables.get_mut(index) {
            f(t);
        }
    }

    /// Updates the stream of `source_shard`, creating it first.
    pub(crate) fn update_stream(&self, source_shard: usize, f: impl FnOnce(&mut StreamProgress)) {
        let mut inner = self.inner.lock();
        let i = match inner
            .streams
            .iter()
            .position(|s| s.source_shard == source_shard)
        {
            Some(i) => i,
            None => {
                inner.streams.push(StreamProgress {
                    source_shard,
                    ..Default::default()
                });
                inner.streams.sort_by_key(|s| s.source_shard);
                inner
                    .streams
                    .iter()
                    .position(|s| s.source_shard == source_shard)
                    .unwrap_or(0)
            }
        };
        if let Some(s) = inner.streams.get_mut(i) {
            f(s);
        }
    }
}

/// Per source shard LSN targets set while the replay runs: once every stream has committed
/// everything up to its target (or its server reported wal_end >= target with no open
/// transaction), replay() returns Ok.
#[derive(Default)]
pub struct StopAt {
    targets: Mutex<Option<Vec<u64>>>,
}

impl StopAt {
    pub fn new() -> StopAt {
        StopAt::default()
    }

    /// The targets, indexed by source shard (a stream without an entry stops at once).
    pub fn set(&self, targets: Vec<u64>) {
        *self.targets.lock() = Some(targets);
    }

    /// The target of `source_shard`: `None` while no targets are set; `Some(0)` when set
    /// without an entry for this shard.
    pub fn target(&self, source_shard: usize) -> Option<u64> {
        self.targets
            .lock()
            .as_ref()
            .map(|t| t.get(source_shard).copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_streams() {
        let p = Progress::new();
        let a = p.add_table("public.a", 0, 10, "replica 127.0.0.1:5433");
        let b = p.add_table("public.a", 1, 20, "primary 127.0.0.1:5434");
        assert_ne!(a, b);
        p.update_table(b, |t| t.rows += 5);
        assert_eq!(p.add_table("public.a", 0, 11, "replica 127.0.0.1:5435"), a);
        let t = p.tables();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].estimated_rows, t[1].rows), (11, 5));
        assert_eq!(t[0].server, "replica 127.0.0.1:5435");
        p.update_stream(1, |s| s.applied_lsn = 7);
        p.update_stream(0, |s| s.transactions = 2);
        let s = p.streams();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].source_shard, s[0].transactions), (0, 2));
        assert_eq!((s[1].source_shard, s[1].applied_lsn), (1, 7));
    }

    #[test]
    fn stop_at_targets() {
        let s = StopAt::new();
        assert_eq!(s.target(0), None);
        s.set(vec![5, 9]);
        assert_eq!(s.target(1), Some(9));
        assert_eq!(s.target(2), Some(0));
    }
}
