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
//! The rows changed are counted across the shards before the next change is sent (one round
//! trip per such change, since a later change of the same row depends on where it went): the
//! total must be exactly one, else the destination diverged from the source and the batch is
//! rolled back on every shard, so the position stays and a rerun meets the same change.
//!
//! A shard that skips the change (its copy, or a crashed run's commit there, already has it)
//! is not counted, so the others may rightly find no row: then a missing row is no divergence,
//! and a row whose old shard already applied the move is upserted from the new tuple alone.
use super::dest::Counted;
use super::*;
use crate::net::rows::DataRow;

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
        let wh = t.match_values(old.as_ref().map(|o| o.tuple()).unwrap_or(&new))?;
        let update = t.update(&t.values(&new)?, &wh);
        let delete = t.delete_returning(&wh);
        let wm = t.watermarks.clone();
        let on_target = self.needs(&wm, target, lsn);
        let others: Vec<usize> = (0..n)
            .filter(|&s| s != target && self.needs(&wm, s, lsn))
            .collect();
        let every_shard = on_target && others.len() + 1 == n;

        if on_target {
            self.send_counted(txn, target, &update).await?;
            match total(&self.outcomes(&[target]).await?) {
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
            self.send_counted(txn, s, &delete).await?;
        }
        let found = self.outcomes(&others).await?;
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

    /// A DELETE of a table whose replica identity lacks the sharding key: on every shard.
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
        let shards: Vec<usize> = (0..n).filter(|&s| self.needs(&wm, s, lsn)).collect();
        if shards.is_empty() {
            self.summary.skipped += 1;
            return Ok(());
        }
        for &s in &shards {
            self.send_counted(txn, s, &delete).await?;
        }
        let rows = total(&self.outcomes(&shards).await?);
        if rows > 1 || (rows == 0 && shards.len() == n) {
            return Err(self.diverged(relation, "DELETE", &wh, lsn, rows).await);
        }
        txn.rows += 1;
        Ok(())
    }

    /// Sends a Sync to `shards` and reads every result pending there: the outcomes of their
    /// counted statements. An error rolls the batch back on every shard.
    async fn outcomes(&mut self, shards: &[usize]) -> Result<Vec<Counted>, ReplayError> {
        let mut failure = None;
        for &s in shards {
            if let Err(e) = self.shards[s].send_sync().await {
                failure.get_or_insert(e);
            }
        }
        let mut out = Vec::with_capacity(shards.len());
        for &s in shards {
            let shard = &mut self.shards[s];
            if let Err(e) = shard.read_pending(0, false).await {
                failure.get_or_insert(e);
            }
            out.append(&mut shard.counted);
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

    /// The error of a change that did not find exactly one row across the shards; the batch
    /// is rolled back on every shard first.
    async fn diverged(
        &mut self,
        relation: u32,
        what: &str,
        wh: &[(usize, Option<Bytes>)],
        lsn: u64,
        rows: u64,
    ) -> ReplayError {
        let (name, identity) = match self.table(relation) {
            Ok(t) => (t.name.clone(), t.describe(wh)),
            Err(e) => return e,
        };
        let found = if rows == 0 {
            "found the row on no destination shard".to_string()
        } else {
            format!("found {rows} rows across the destination shards")
        };
        let e = other(format!(
            "table {name}: {what} by replica identity ({identity}) from the source transaction \
             at {} {found}, where exactly one was expected (the destination diverged from the \
             source); nothing of this batch was committed and the position was kept",
            format_lsn(lsn)
        ));
        self.roll_back(&self.batch.touched.clone(), e).await
    }
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
