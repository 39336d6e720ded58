//! `pgdog verify`: compares every table of a source database (all its shards) with the union of
//! a destination database's shards, and checks that every destination row is on the shard the
//! router would choose for it.
//!
//! Per table:
//! - row count and an order-independent checksum: the sum, as numeric, of a 64-bit hash (the
//!   first 16 hex digits of `md5`) of each row's text form, built from the columns by name in
//!   the source's column order, so it adds up across shards. Both sides must print each value
//!   the same way (same column types); different column lists are reported as such;
//! - tables sharded in the destination: each row's sharding key, read per shard through a
//!   cursor, placed with [`TableSharding::shard_of_text`] (the router's own placement) and
//!   compared with the shard it was read from;
//! - tables omnisharded in the destination: every shard must hold exactly the source's rows.
//!
//! A sharded source is read as the union of its shards, except for tables omnisharded in the
//! source or the destination: copy and replay take those from source shard 0, so they are
//! compared with shard 0 and every other source shard must hold the same rows.
//!
//! Under writes: every shard is read in one snapshot, and when a replay runs between the two
//! databases it is held so both sides show one source LSN ([`snapshot`]); every report names
//! the LSN it was compared at.
use crate::backend::server::ServerError;
use crate::config::Settings;
use crate::reshard::copy::{check_databases, schema_of, SetupError};
use crate::reshard::Databases;
use crate::router::schema::{Schema, TableSharding};
use shard::{Shard, TableName};
use std::time::Duration;

mod shard;
pub mod snapshot;
pub use snapshot::ComparedAt;

/// Keys fetched per round trip when checking placement.
const FETCH_BATCH: usize = 10_000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{database} shard {shard} ({addr}): {context}: {source}")]
    Server {
        database: String,
        shard: usize,
        addr: String,
        context: String,
        #[source]
        source: Box<ServerError>,
    },
    #[error("{0}")]
    Hold(String),
    #[error("{database} shard {shard}: {context}: unexpected answer {answer:?}")]
    Answer {
        database: String,
        shard: usize,
        context: String,
        answer: String,
    },
}

/// What `pgdog verify` was asked to do.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// The source and destination databases.
    pub databases: Databases,
    /// Tables to check (`name` or `schema.name`); empty: every user table of the source.
    pub tables: Vec<String>,
    /// The replay to hold (`--slot`); default: the one running between the two, if any.
    pub slot: Option<String>,
}

/// The result for one table: its source row count and checksum, the destination rows the
/// router places on another shard, the LSN compared at, and what differs (empty: all matches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableReport {
    pub table: String,
    pub rows: i64,
    pub checksum: i128,
    pub misplaced: u64,
    /// The source LSN (one per upstream shard) both sides were read at.
    pub at: String,
    pub problems: Vec<String>,
}

impl TableReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl std::fmt::Display for TableReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ok() {
            write!(
                f,
                "{}: OK ({} rows, checksum {}, {} misplaced) at {}",
                self.table, self.rows, self.checksum, self.misplaced, self.at
            )
        } else {
            write!(
                f,
                "{}: DIFFERENT: {} (at {})",
                self.table,
                self.problems.join("; "),
                self.at
            )
        }
    }
}

/// The user tables of the source (its first shard).
async fn source_tables(source: &mut Shard) -> Result<Vec<TableName>, VerifyError> {
    let rows = source
        .rows(
            // pgdog's own bookkeeping (reshard progress) is not user data.
            "SELECT schemaname::text, tablename::text FROM pg_tables \
             WHERE schemaname NOT IN ('pg_catalog', 'information_schema') \
             AND tablename NOT IN ('pgdog_reshard_progress', 'pgdog_reshard_position', \
             'pgdog_reshard_hold', 'pgdog_twophase', 'pgdog_unique_id_nodes') \
             ORDER BY 1, 2",
            "listing tables",
        )
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [Some(schema), Some(name)] => Some(TableName {
                schema: schema.clone(),
                name: name.clone(),
            }),
            _ => None,
        })
        .collect())
}

/// The destination's sharding of a table: its own entry, else a name-less entry for one of
/// its columns.
fn sharding_of<'a>(
    schema: &'a Schema,
    table: &TableName,
    columns: &[String],
) -> Option<&'a TableSharding> {
    schema
        .table(&format!("{}.{}", table.schema, table.name))
        .or_else(|| schema.table(&table.name))
        .or_else(|| columns.iter().find_map(|c| schema.by_column(c)))
}

fn omnisharded(schema: &Schema, table: &TableName) -> bool {
    schema.is_omnisharded(&table.name)
        || schema.is_omnisharded(&format!("{}.{}", table.schema, table.name))
}

/// Compares one table.
async fn verify_table(
    table: &TableName,
    source: &mut [Shard],
    dest: &mut [Shard],
    source_schema: &Schema,
    dest_schema: &Schema,
    at: &ComparedAt,
) -> Result<TableReport, VerifyError> {
    let mut report = TableReport {
        table: table.display(),
        rows: 0,
        checksum: 0,
        misplaced: 0,
        at: at.lsns(),
        problems: Vec::new(),
    };
    // Columns: the source's first shard decides; every other shard must have the same list.
    let Some(columns) = source[0].columns(table).await? else {
        report.problems.push("missing on source shard 0".into());
        return Ok(report);
    };
    for shards in [&mut *source, &mut *dest] {
        for s in shards.iter_mut() {
            let where_ = format!("{} shard {}", s.database, s.shard);
            match s.columns(table).await? {
                None => report.problems.push(format!("missing on {where_}")),
                Some(c) if c != columns => report.problems.push(format!(
                    "columns differ on {where_}: ({}) instead of ({})",
                    c.join(", "),
                    columns.join(", ")
                )),
                Some(_) => {}
            }
        }
    }
    if !report.problems.is_empty() {
        return Ok(report);
    }

    // Source: the union of its shards; one shard when the table is omnisharded in the source
    // or in the destination (then copy and replay take source shard 0's rows, and every
    // source shard must hold the same ones).
    let source_omni =
        source.len() > 1 && (omnisharded(source_schema, table) || omnisharded(dest_schema, table));
    let mut src = (0i64, 0i128);
    for s in source.iter_mut() {
        let (c, h) = s.checksum(table, &columns).await?;
        if !source_omni {
            src = (src.0 + c, src.1 + h);
        } else if s.shard == 0 {
            src = (c, h);
        } else if (c, h) != src {
            report.problems.push(format!(
                "omnisharded: source shard {} differs from source shard 0 ({c} rows, {} there)",
                s.shard, src.0
            ));
        }
    }
    report.rows = src.0;
    report.checksum = src.1;

    let mut per_shard = Vec::with_capacity(dest.len());
    for s in dest.iter_mut() {
        per_shard.push(s.checksum(table, &columns).await?);
    }
    if dest.len() > 1 && omnisharded(dest_schema, table) {
        for (shard, (c, h)) in per_shard.iter().enumerate() {
            if *c != src.0 {
                report.problems.push(format!(
                    "omnisharded: {} rows on shard {shard}, {} in the source",
                    c, src.0
                ));
            } else if *h != src.1 {
                report.problems.push(format!(
                    "omnisharded: checksum on shard {shard} differs from the source (same count, different rows)"
                ));
            }
        }
        return Ok(report);
    }
    let dst = per_shard
        .iter()
        .fold((0i64, 0i128), |acc, (c, h)| (acc.0 + c, acc.1 + h));
    if dst.0 != src.0 {
        let counts: Vec<String> = per_shard
            .iter()
            .enumerate()
            .map(|(i, (c, _))| format!("shard {i}: {c}"))
            .collect();
        report.problems.push(format!(
            "row count: source {}, destination {} ({})",
            src.0,
            dst.0,
            counts.join(", ")
        ));
    } else if dst.1 != src.1 {
        report.problems.push(format!(
            "checksum: source {}, destination {} (same row count, different rows)",
            src.1, dst.1
        ));
    }

    if dest.len() > 1 {
        let entry = sharding_of(dest_schema, table, &columns);
        let schema_shard = dest_schema.schemas.shard_of_listed(&table.schema);
        if let (None, Some(home)) = (entry, schema_shard) {
            // Schema-based sharding: every row on the shard of its schema.
            for (shard, (c, _)) in per_shard.iter().enumerate() {
                if shard != home && *c > 0 {
                    report.problems.push(format!(
                        "{c} rows on shard {shard}; schema {} lives on shard {home}",
                        table.schema
                    ));
                }
            }
        }
        if let Some(sharding) = entry {
            for s in dest.iter_mut() {
                let p = s.misplaced(table, sharding).await?;
                report.misplaced += p.misplaced + p.unplaceable;
                let found = [
                    (p.misplaced, "misplaced rows", p.example),
                    (
                        p.unplaceable,
                        "rows with a key the router cannot place",
                        p.unplaceable_example,
                    ),
                ];
                for (count, what, example) in found.into_iter().filter(|f| f.0 > 0) {
                    report.problems.push(format!(
                        "{count} {what} on shard {} (e.g. {})",
                        s.shard,
                        example.unwrap_or_default()
                    ));
                }
            }
        }
    }
    Ok(report)
}

/// Compares the tables; one report per table, and where both sides were read.
pub async fn verify(
    settings: &Settings,
    options: &VerifyOptions,
) -> Result<(ComparedAt, Vec<TableReport>), VerifyError> {
    check_databases(settings, &[&options.databases.from, &options.databases.to])?;
    let source_schema = schema_of(settings, &options.databases.from)?;
    let dest_schema = schema_of(settings, &options.databases.to)?;
    let mut source = Shard::connect(settings, &options.databases.from).await?;
    let mut dest = Shard::connect(settings, &options.databases.to).await?;
    let at = snapshot::take(settings, options, &mut source, &mut dest).await?;
    let tables = if options.tables.is_empty() {
        source_tables(&mut source[0]).await?
    } else {
        options.tables.iter().map(|t| TableName::parse(t)).collect()
    };
    let mut reports = Vec::with_capacity(tables.len());
    for table in &tables {
        let report = verify_table(
            table,
            &mut source,
            &mut dest,
            &source_schema,
            &dest_schema,
            &at,
        )
        .await?;
        reports.push(report);
    }
    for s in source.into_iter().chain(dest) {
        s.server.terminate().await;
    }
    Ok((at, reports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names() {
        assert_eq!(
            TableName::parse("users"),
            TableName {
                schema: "public".into(),
                name: "users".into()
            }
        );
        let t = TableName::parse("app.Items");
        assert_eq!(t.sql(), "\"app\".\"Items\"");
        assert_eq!(t.display(), "app.Items");
    }

    #[test]
    fn report_lines() {
        let ok = TableReport {
            table: "users".into(),
            rows: 3,
            checksum: -42,
            misplaced: 0,
            at: "0/3000060".into(),
            problems: vec![],
        };
        assert_eq!(
            ok.to_string(),
            "users: OK (3 rows, checksum -42, 0 misplaced) at 0/3000060"
        );
        let bad = TableReport {
            problems: vec!["a".into(), "b".into()],
            ..ok
        };
        assert_eq!(bad.to_string(), "users: DIFFERENT: a; b (at 0/3000060)");
    }
}
