//! UPDATE and DELETE of tables whose replica identity lacks the sharding key (a surrogate `id`
//! primary key on a table sharded by `customer_id`): applied by identity wherever the row is,
//! as PostgreSQL's own logical replication does.
//!
//! pgoutput's old tuple of such a table holds only the identity columns (and an UPDATE sends
//! it only when they changed), so it never says which shard holds the row:
//! - a DELETE runs on every destination shard;
//! - an UPDATE runs in place on the shard its new key maps to first (the common case: the key
//!   did not change). Only when no row is there is the row looked for on the other shards: it
//!   is deleted where it is (`RETURNING` its values, for the unchanged TOAST values the new
//!   tuple leaves out) and upserted whole on its new shard.
//!
//! The rows changed are counted across the shards: the total must be exactly one, else the
//! destination diverged from the source and the batch is rolled back on every shard, so the
//! position stays and a rerun meets the same change. An UPDATE's count is read before the next
//! change is sent (one round trip: a later change of the same row depends on where it went); a
//! DELETE's is read with the batch's other results before it commits ([`Counts`]).
//!
//! A shard that skips the change (its copy, or a crashed run's commit there, already has it)
//! is not counted, so the others may rightly find no row: then a missing row is no divergence,
//! and a row whose old shard already applied the move is upserted from the new tuple alone.
//!
//! From a sharded source, each stream owns the destination shards that take keys of its source
//! shard only (`reshard/ownership.rs`: same hash sharding, a multiple of the shard count; other
//! layouts are refused) and applies its changes by identity there only, with the same
//! exactly-one count across those shards. A row moving from source shard A to B (pgdog's key
//! UPDATE: on A an UPDATE to the new key then a DELETE, on B an INSERT) reaches A's and B's
//! streams in no fixed order:
//! - the DELETE first: A's version is gone from A's shards, then B upserts its version on one
//!   of B's shards;
//! - the INSERT first: B's version is on one of B's shards while A's still is on one of A's
//!   (both at once, on different shards, so no primary key keeps them apart and neither
//!   stream's change can meet the other's version); then A's UPDATE (its new key maps to B's
//!   shards) is applied in place where A's version is ([`Applier::update_leaving`]) and A's
//!   DELETE removes it there.
//!
//! Either way each stream finds exactly its own version, so a missing or doubled row is still
//! a divergence. A row that another stream's key puts on this stream's shards (its source
//! shard holds a row the source's sharding puts elsewhere) stops the replay at its INSERT.
use super::dest::Counted;
use super::*;
use crate::net::rows::DataRow;

/// The changes by identity of the current batch, each numbered, counted across the shards.
#[derive(Default)]
pub(super) struct Counts {
    /// The last change number given.
    last: u64,
    /// DELETEs whose row counts are read with the batch's results and checked before it commits.
    deferred: Vec<Expected>,
    /// Outcomes of those read early, while waiting for an UPDATE's.
    read: Vec<Counted>,
}

impl Counts {
    fn next(&mut self) -> u64 {
        self.last += 1;
        self.last
    }

    /// Forgets the batch's changes (rolled back).
    pub(super) fn clear(&mut self) {
        self.deferred.clear();
        self.read.clear();
    }
}

/// A change that must find exactly one row across the shards.
struct Expected {
    change: u64,
    /// The change named for an error (see [`Applier::expected`]).
    what: String,
    /// Every shard ran it: no row at all is a divergence too (else one of the shards that
    /// skipped the change may have had the row).
    every_shard: bool,
}

impl Applier {
    /// An UPDATE of a table whose replica identity lacks the sharding key.
    pub(super) async fn update_by_identity(
        &mut self,
        txn: &mut Txn,
        relation: u32,
        old: Option<OldTuple>,
        new: TupleData,
    ) -> Result<(), ReplayError> {
        let n = self.shards.len();
        let lsn = txn.final_lsn;
        let t = self.table(relation)?;
        let target = only_shard(t, t.shards_of(&new, n)?)?;
        if !t.owns(target) {
            return self.update_leaving(txn, relation, old, new).await;
        }
        let scope = t.identity_scope(n);
        let wh = t.match_values(old.as_ref().map(|o| o.tuple()).unwrap_or(&new))?;
        let update = t.update(&t.values(&new)?, &wh);
        let delete = t.delete_returning(&wh);
        let wm = t.watermarks.clone();
        let on_target = self.needs(&wm, target, lsn);
        let others: Vec<usize> = scope
            .iter()
            .copied()
            .filter(|&s| s != target && self.needs(&wm, s, lsn))
            .collect();
        let every_shard = on_target && others.len() + 1 == scope.len();
        let change = self.counts.next();

        if on_target {
            self.send_counted(txn, target, &update, change).await?;
            match total(&self.outcomes(&[target], change, lsn).await?) {
                1 => {
                    txn.rows += 1;
                    return Ok(());
                }
                0 => {}
                rows => return Err(self.diverged(relation, "UPDATE", &wh, lsn, rows).await),
            }
        }
        // Not on its new shard: the row moves from wherever it is.
        for &s in &others {
            self.send_counted(txn, s, &delete, change).await?;
        }
        let found = self.outcomes(&others, change, lsn).await?;
        let rows = total(&found);
        if rows > 1 || (rows == 0 && every_shard) {
            return Err(self.diverged(relation, "UPDATE", &wh, lsn, rows).await);
        }
        if !on_target {
            // The new shard has the row as updated already; only copies elsewhere went.
            self.count(txn, !others.is_empty());
            return Ok(());
        }
        let was = found
            .into_iter()
            .find_map(|c| c.returned.into_iter().next());
        let upsert = match self.moved_row(relation, new, was.as_ref()) {
            Ok(stmt) => stmt,
            Err(e) => return Err(self.roll_back(&self.batch.touched.clone(), e).await),
        };
        self.send(txn, target, &upsert).await?;
        txn.rows += 1;
        Ok(())
    }

    /// From a sharded source, an UPDATE giving a row a key of another source shard: pgdog's key
    /// UPDATE runs in place on the row's old source shard, then deletes it there (the INSERT
    /// is on the other source shard, so on the other stream). Applied in place on this
    /// stream's shards, never on the other stream's, so the DELETE that follows finds it
    /// there; exactly one row across them.
    async fn update_leaving(
        &mut self,
        txn: &mut Txn,
        relation: u32,
        old: Option<OldTuple>,
        new: TupleData,
    ) -> Result<(), ReplayError> {
        let lsn = txn.final_lsn;
        let t = self.table(relation)?;
        let scope = t.identity_scope(self.shards.len());
        let wh = t.match_values(old.as_ref().map(|o| o.tuple()).unwrap_or(&new))?;
        let update = t.update(&t.values(&new)?, &wh);
        let wm = t.watermarks.clone();
        let Some((shards, change)) = self.send_to_scope(txn, &scope, &wm, &update).await? else {
            return Ok(());
        };
        let rows = total(&self.outcomes(&shards, change, lsn).await?);
        if rows > 1 || (rows == 0 && shards.len() == scope.len()) {
            return Err(self.diverged(relation, "UPDATE", &wh, lsn, rows).await);
        }
        txn.rows += 1;
        Ok(())
    }

    /// A DELETE of a table whose replica identity lacks the sharding key: on every shard, its
    /// row count checked with the batch's other results ([`Applier::check_deferred`]).
    pub(super) async fn delete_by_identity(
        &mut self,
        txn: &mut Txn,
        relation: u32,
        old: OldTuple,
    ) -> Result<(), ReplayError> {
        let n = self.shards.len();
        let lsn = txn.final_lsn;
        let t = self.table(relation)?;
        let wh = t.match_values(old.tuple())?;
        let delete = t.delete(&wh);
        let wm = t.watermarks.clone();
        let scope = t.identity_scope(n);
        let Some((shards, change)) = self.send_to_scope(txn, &scope, &wm, &delete).await? else {
            return Ok(());
        };
        let what = self.expected(relation, "DELETE", &wh, lsn)?;
        self.counts.deferred.push(Expected {
            change,
            what,
            every_shard: shards.len() == scope.len(),
        });
        txn.rows += 1;
        Ok(())
    }

    /// Sends `stmt` as one counted change to the shards of `scope` that still need the
    /// transaction (tables with copy watermarks `wm`); those shards and the change, or `None`
    /// (counted as skipped) when none does.
    async fn send_to_scope(
        &mut self,
        txn: &mut Txn,
        scope: &[usize],
        wm: &[u64],
        stmt: &Stmt,
    ) -> Result<Option<(Vec<usize>, u64)>, ReplayError> {
        let lsn = txn.final_lsn;
        let shards: Vec<usize> = scope
            .iter()
            .copied()
            .filter(|&s| self.needs(wm, s, lsn))
            .collect();
        if shards.is_empty() {
            self.summary.skipped += 1;
            return Ok(None);
        }
        let change = self.counts.next();
        for &s in &shards {
            self.send_counted(txn, s, stmt, change).await?;
        }
        Ok(Some((shards, change)))
    }

    /// Sends a Sync to `shards` and reads every result pending there: the outcomes of
    /// `change`'s statements (those of deferred DELETEs are kept for the batch's check). An
    /// error rolls the batch back on every shard.
    async fn outcomes(
        &mut self,
        shards: &[usize],
        change: u64,
        lsn: u64,
    ) -> Result<Vec<Counted>, ReplayError> {
        let mut failure = None;
        for &s in shards {
            if let Err(e) = self.shards[s].send_sync().await {
                failure.get_or_insert(e);
            }
        }
        let mut out = Vec::with_capacity(shards.len());
        for &s in shards {
            let shard = &mut self.shards[s];
            if let Err(e) = shard.read_pending(lsn, false).await {
                failure.get_or_insert(e);
            }
            for c in shard.counted.drain(..) {
                if c.change == change {
                    out.push(c);
                } else {
                    self.counts.read.push(c);
                }
            }
        }
        match failure {
            None => Ok(out),
            Some(e) => Err(self.roll_back(&self.batch.touched.clone(), e).await),
        }
    }

    /// The upsert of a row moving to its new shard: the new tuple, its unchanged TOAST values
    /// taken from the row as it `was` on its old shard.
    fn moved_row(
        &self,
        relation: u32,
        mut new: TupleData,
        was: Option<&DataRow>,
    ) -> Result<Stmt, ReplayError> {
        let t = self.table(relation)?;
        for (i, v) in new.columns.iter_mut().enumerate() {
            if *v != ColumnValue::Unchanged {
                continue;
            }
            if let Some(row) = was.filter(|r| r.len() == t.columns.len()) {
                *v = match row.get_bytes(i) {
                    Some(b) => ColumnValue::Text(b),
                    None => ColumnValue::Null,
                };
            }
        }
        let values = t.values(&new)?;
        if values.len() != new.columns.len() {
            return Err(other(format!(
                "table {}: a row moving to another shard has unchanged TOAST values the \
                 source did not send, and its old shard already applied the move (a resumed \
                 run): set ALTER TABLE {} REPLICA IDENTITY FULL on the source, or copy the \
                 table again",
                t.name, t.sql_name
            )));
        }
        Ok(t.upsert(&values))
    }

    /// Checks the batch's deferred DELETEs once every result is read: exactly one row each
    /// across the shards.
    pub(super) fn check_deferred(&mut self) -> Result<(), ReplayError> {
        let mut rows: HashMap<u64, u64> = HashMap::new();
        let read = std::mem::take(&mut self.counts.read);
        let shards = self.shards.iter_mut().flat_map(|s| s.counted.drain(..));
        for c in read.into_iter().chain(shards) {
            *rows.entry(c.change).or_default() += c.rows;
        }
        for e in std::mem::take(&mut self.counts.deferred) {
            let rows = rows.get(&e.change).copied().unwrap_or(0);
            if rows > 1 || (rows == 0 && e.every_shard) {
                return Err(divergence(&e.what, rows));
            }
        }
        Ok(())
    }

    /// A change by identity named for an error: `table public.orders: DELETE by replica
    /// identity ("id" = '7') from the source transaction at 0/1A2B3C4`.
    fn expected(
        &self,
        relation: u32,
        verb: &str,
        wh: &[(usize, Option<Bytes>)],
        lsn: u64,
    ) -> Result<String, ReplayError> {
        let t = self.table(relation)?;
        Ok(format!(
            "table {}: {verb} by replica identity ({}) from the source transaction at {}",
            t.name,
            t.describe(wh),
            format_lsn(lsn)
        ))
    }

    /// The error of a change that did not find exactly one row across the shards; the batch
    /// is rolled back on every shard first.
    async fn diverged(
        &mut self,
        relation: u32,
        verb: &str,
        wh: &[(usize, Option<Bytes>)],
        lsn: u64,
        rows: u64,
    ) -> ReplayError {
        let e = match self.expected(relation, verb, wh, lsn) {
            Ok(what) => divergence(&what, rows),
            Err(e) => e,
        };
        self.roll_back(&self.batch.touched.clone(), e).await
    }
}

/// The error of a change (`what`) that changed `rows` rows across the shards, not one.
fn divergence(what: &str, rows: u64) -> ReplayError {
    let found = if rows == 0 {
        "found the row on no destination shard".to_string()
    } else {
        format!("found {rows} rows across the destination shards")
    };
    other(format!(
        "{what} {found}, where exactly one was expected (the destination diverged from the \
         source); nothing of this batch was committed and the position was kept"
    ))
}

/// The rows changed by counted statements, together.
fn total(outcomes: &[Counted]) -> u64 {
    outcomes.iter().map(|c| c.rows).sum()
}

/// The one shard a row of a table sharded by key goes to.
fn only_shard(t: &Table, shards: Vec<usize>) -> Result<usize, ReplayError> {
    match shards.as_slice() {
        [s] => Ok(*s),
        _ => Err(other(format!(
            "table {}: a row of a sharded table maps to {} shards",
            t.name,
            shards.len()
        ))),
    }
}
