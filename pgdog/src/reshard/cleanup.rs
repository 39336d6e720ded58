//! `pgdog cleanup`: the rows a shard holds that its database's layout places on another shard
//! (after a move of buckets, the moved rows left on their old shard), counted, and with
//! `delete`, deleted in throttled batches that never block clients and resume after a crash.
//!
//! Each sharded table of the database is read on each shard in ranges of `batch_blocks` heap
//! blocks (`ctid >= '(a,0)' AND ctid < '(b,0)'`: a TID range scan, no sort, no index). pgdog
//! places every key with the one placement function (the router's), and deletes the misplaced
//! rows of the range by ctid AND key: a slot reused by another row in between (which has a
//! key placed here, so another key) is not touched. The DELETE and the next block to read,
//! stored in `pgdog_cleanup` on the shard, commit together, so a rerun (even after `kill -9`)
//! goes on where the last batch committed. Clients never wait on it: it locks only misplaced
//! rows, which the router sends nobody to, and each transaction has a 1 s `lock_timeout`.
//! Between batches it sleeps `pause`.
use crate::backend::server::ServerTarget;
use crate::config::Settings;
use crate::reshard::copy::{
    connect, ident, literal, schema_of, server_err, shard_targets, CopyDataError,
};
use crate::router::schema::TableSharding;
use std::time::Duration;

/// What `pgdog cleanup` was asked to do.
#[derive(Debug, Clone)]
pub struct CleanupOptions {
    pub database: String,
    /// Delete (else only count).
    pub delete: bool,
    /// Heap blocks read per batch.
    pub batch_blocks: u64,
    /// Sleep between batches.
    pub pause: Duration,
}

/// One (shard, table): rows read, misplaced, deleted; where it started (a resumed run > 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    pub shard: usize,
    pub table: String,
    pub started_at_block: u64,
    pub rows: u64,
    pub misplaced: u64,
    pub deleted: u64,
}

impl std::fmt::Display for CleanupReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "shard {} {}: {} rows read, {} placed on another shard, {} deleted",
            self.shard, self.table, self.rows, self.misplaced, self.deleted
        )?;
        if self.started_at_block > 0 {
            write!(f, " (resumed at block {})", self.started_at_block)?;
        }
        Ok(())
    }
}

const PROGRESS_DDL: &str = "CREATE TABLE IF NOT EXISTS pgdog_cleanup \
    (table_name text PRIMARY KEY, next_block bigint NOT NULL)";

/// Counts (and with `delete`, deletes) every shard's misplaced rows, table by table; each
/// finished (shard, table) is passed to `report`.
pub async fn cleanup(
    settings: &Settings,
    options: &CleanupOptions,
    mut report: impl FnMut(&CleanupReport),
) -> Result<Vec<CleanupReport>, CopyDataError> {
    let schema = schema_of(settings, &options.database)?;
    let shards = shard_targets(settings, &options.database)?;
    let mut out = Vec::new();
    for (shard, target) in shards.iter().enumerate() {
        for table in &schema.tables {
            let r = clean_table(target, shard, table, options).await?;
            report(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// One table on one shard.
async fn clean_table(
    target: &ServerTarget,
    shard: usize,
    table: &TableSharding,
    options: &CleanupOptions,
) -> Result<CleanupReport, CopyDataError> {
    let addr = target.addr();
    let name = table.config.name.clone().unwrap_or_default();
    let sql_name = qualified(&name);
    let mut server = connect(target).await?;
    let fail = |what: &str| server_err(&addr, &format!("{name}: {what}"));
    let mut next = 0u64;
    if options.delete {
        server
            .execute(PROGRESS_DDL)
            .await
            .map_err(fail("creating pgdog_cleanup"))?;
        let rows = server
            .query_rows(&format!(
                "SELECT next_block::text FROM pgdog_cleanup WHERE table_name = {}",
                literal(&name)
            ))
            .await
            .map_err(fail("reading pgdog_cleanup"))?;
        next = first_number(&rows).unwrap_or(0);
    }
    let mut r = CleanupReport {
        shard,
        table: name.clone(),
        started_at_block: next,
        rows: 0,
        misplaced: 0,
        deleted: 0,
    };
    let key = ident(table.column());
    let step = options.batch_blocks.max(1);
    loop {
        let blocks = server
            .query_rows(&format!(
                "SELECT (pg_relation_size({}::regclass) / current_setting('block_size')::bigint)::text",
                literal(&sql_name)
            ))
            .await
            .map_err(fail("reading its size"))?;
        if next >= first_number(&blocks).unwrap_or(0) {
            break;
        }
        let end = next + step;
        let rows = server
            .query_rows(&format!(
                "SELECT ctid::text, {key}::text FROM ONLY {sql_name} \
                 WHERE ctid >= '({next},0)'::tid AND ctid < '({end},0)'::tid"
            ))
            .await
            .map_err(fail("reading a block range"))?;
        r.rows += rows.len() as u64;
        let mut misplaced = Vec::new();
        for row in &rows {
            let (Some(Some(ctid)), Some(value)) = (row.first(), row.get(1)) else {
                continue;
            };
            let placed =
                table
                    .shard_of_text(value.as_deref())
                    .map_err(|e| CopyDataError::Table {
                        table: name.clone(),
                        reason: format!("key {value:?} on shard {shard}: {e}"),
                    })?;
            if placed != shard {
                misplaced.push((ctid.clone(), value.clone()));
            }
        }
        r.misplaced += misplaced.len() as u64;
        if options.delete {
            r.deleted += delete_batch(&mut server, &addr, &name, &key, &misplaced, end).await?;
            fail::fail_point!("cleanup-batch-committed");
        }
        next = end;
        if !options.pause.is_zero() {
            tokio::time::sleep(options.pause).await;
        }
    }
    if options.delete {
        server
            .execute(&format!(
                "DELETE FROM pgdog_cleanup WHERE table_name = {}",
                literal(&name)
            ))
            .await
            .map_err(fail("ending its progress row"))?;
    }
    server.terminate().await;
    Ok(r)
}

/// Deletes one batch's misplaced rows (by ctid and key) and stores the next block, in one
/// transaction; the rows deleted. On an error the connection is dropped: it rolls back.
async fn delete_batch(
    server: &mut crate::backend::server::Server,
    addr: &str,
    table: &str,
    key: &str,
    misplaced: &[(String, Option<String>)],
    next_block: u64,
) -> Result<u64, CopyDataError> {
    let fail = |what: &str| server_err(addr, &format!("{table}: {what}"));
    server
        .execute("BEGIN; SET LOCAL lock_timeout = '1s'")
        .await
        .map_err(fail("starting a batch"))?;
    let mut deleted = 0;
    if !misplaced.is_empty() {
        let values: Vec<String> = misplaced
            .iter()
            .map(|(ctid, k)| {
                let k = k.as_deref().map(literal).unwrap_or_else(|| "NULL".into());
                format!("({}::tid, {k})", literal(ctid))
            })
            .collect();
        let rows = server
            .query_rows(&format!(
                "WITH d AS (DELETE FROM ONLY {} t USING (VALUES {}) v(c, k) \
                 WHERE t.ctid = v.c AND t.{key}::text IS NOT DISTINCT FROM v.k RETURNING 1) \
                 SELECT count(*)::text FROM d",
                qualified(table),
                values.join(", ")
            ))
            .await
            .map_err(fail("deleting misplaced rows"))?;
        deleted = first_number(&rows).unwrap_or(0);
    }
    server
        .execute(&format!(
            "INSERT INTO pgdog_cleanup VALUES ({}, {next_block}) \
             ON CONFLICT (table_name) DO UPDATE SET next_block = EXCLUDED.next_block; COMMIT",
            literal(table)
        ))
        .await
        .map_err(fail("committing a batch"))?;
    Ok(deleted)
}

/// `schema.table` or `table`, each part quoted.
fn qualified(name: &str) -> String {
    name.split('.').map(ident).collect::<Vec<_>>().join(".")
}

fn first_number(rows: &[Vec<Option<String>>]) -> Option<u64> {
    rows.first()?.first()?.as_deref()?.parse().ok()
}
