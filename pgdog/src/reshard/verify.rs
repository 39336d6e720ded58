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
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::Settings;
use crate::net::quote::{ident, literal};
use crate::reshard::schema_sync::{query_rows, target};
use crate::router::schema::{Schema, TableSharding};
use std::path::PathBuf;
use std::time::Duration;

/// Keys fetched per round trip when checking placement.
const FETCH_BATCH: usize = 10_000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("loading the configuration: {0}")]
    Config(String),
    #[error("database `{0}` is not configured in pgdog.toml")]
    UnknownDatabase(String),
    #[error("database `{database}` shard {shard} has no server configured")]
    MissingShard { database: String, shard: usize },
    #[error("sharding configuration of `{database}`: {reason}")]
    Sharding { database: String, reason: String },
    #[error("{database} shard {shard} ({addr}): {context}: {source}")]
    Server {
        database: String,
        shard: usize,
        addr: String,
        context: String,
        #[source]
        source: Box<ServerError>,
    },
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
    pub config: PathBuf,
    pub users: PathBuf,
    pub from_database: String,
    pub to_database: String,
    /// Tables to check (`name` or `schema.name`); empty: every user table of the source.
    pub tables: Vec<String>,
}

/// The result for one table: its source row count and what differs (empty: all matches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableReport {
    pub table: String,
    pub rows: i64,
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
            write!(f, "{}: OK ({} rows)", self.table, self.rows)
        } else {
            write!(f, "{}: DIFFERENT: {}", self.table, self.problems.join("; "))
        }
    }
}

/// A table to check.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TableName {
    schema: String,
    name: String,
}

impl TableName {
    fn parse(s: &str) -> TableName {
        match s.split_once('.') {
            Some((schema, name)) => TableName {
                schema: schema.to_string(),
                name: name.to_string(),
            },
            None => TableName {
                schema: "public".into(),
                name: s.to_string(),
            },
        }
    }

    fn sql(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(&self.name))
    }

    fn display(&self) -> String {
        if self.schema == "public" {
            self.name.clone()
        } else {
            format!("{}.{}", self.schema, self.name)
        }
    }
}

/// One open connection to a shard.
struct Shard {
    database: String,
    shard: usize,
    addr: String,
    server: Server,
}

impl Shard {
    async fn connect(settings: &Settings, database: &str) -> Result<Vec<Shard>, VerifyError> {
        let mut shards = Vec::new();
        for shard in 0..settings.shards(database).max(1) {
            let db = settings.shard_server(database, shard).ok_or_else(|| {
                VerifyError::MissingShard {
                    database: database.to_string(),
                    shard,
                }
            })?;
            let t: ServerTarget = target(settings, db);
            let server = Server::connect(&t, CONNECT_TIMEOUT)
                .await
                .map_err(|source| VerifyError::Server {
                    database: database.to_string(),
                    shard,
                    addr: t.addr(),
                    context: "connecting".into(),
                    source: Box::new(source),
                })?;
            shards.push(Shard {
                database: database.to_string(),
                shard,
                addr: t.addr(),
                server,
            });
        }
        Ok(shards)
    }

    fn error(&self, context: &str, source: ServerError) -> VerifyError {
        VerifyError::Server {
            database: self.database.clone(),
            shard: self.shard,
            addr: self.addr.clone(),
            context: context.to_string(),
            source: Box::new(source),
        }
    }

    fn answer(&self, context: &str, answer: impl std::fmt::Debug) -> VerifyError {
        VerifyError::Answer {
            database: self.database.clone(),
            shard: self.shard,
            context: context.to_string(),
            answer: format!("{answer:?}"),
        }
    }

    async fn rows(
        &mut self,
        sql: &str,
        context: &str,
    ) -> Result<Vec<Vec<Option<String>>>, VerifyError> {
        query_rows(&mut self.server, sql)
            .await
            .map_err(|e| self.error(context, e))
    }

    /// The table's columns in order, `None` when it does not exist.
    async fn columns(&mut self, table: &TableName) -> Result<Option<Vec<String>>, VerifyError> {
        let context = format!("reading the columns of {}", table.display());
        let sql = format!(
            "SELECT to_regclass({0}) IS NOT NULL, (SELECT coalesce(array_agg(attname::text ORDER BY attnum), '{{}}') \
             FROM pg_attribute WHERE attrelid = to_regclass({0}) AND attnum > 0 AND NOT attisdropped)::text",
            literal(&table.sql())
        );
        let rows = self.rows(&sql, &context).await?;
        let (exists, cols) = match rows.as_slice() {
            [row] if row.len() == 2 => (row[0].as_deref(), row[1].as_deref()),
            _ => return Err(self.answer(&context, rows)),
        };
        if exists != Some("t") {
            return Ok(None);
        }
        let cols = cols.unwrap_or("{}");
        // The names come back as a text array; read them with Postgres rather than parsing it.
        let names = self
            .rows(
                &format!("SELECT unnest({}::text[])", literal(cols)),
                &context,
            )
            .await?;
        Ok(Some(
            names
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect(),
        ))
    }

    /// Row count and checksum of the table's rows with these columns.
    async fn checksum(
        &mut self,
        table: &TableName,
        columns: &[String],
    ) -> Result<(i64, i128), VerifyError> {
        let context = format!("checksumming {}", table.display());
        let row = if columns.is_empty() {
            "t::text".to_string()
        } else {
            let cols: Vec<String> = columns.iter().map(|c| format!("t.{}", ident(c))).collect();
            format!("ROW({})::text", cols.join(", "))
        };
        let sql = format!(
            "SELECT count(*), coalesce(sum(('x' || substr(md5({row}), 1, 16))::bit(64)::bigint::numeric), 0)::text \
             FROM {} AS t",
            table.sql()
        );
        let rows = self.rows(&sql, &context).await?;
        match rows.as_slice() {
            [row] if row.len() == 2 => {
                let count = row[0].as_deref().and_then(|v| v.parse::<i64>().ok());
                let sum = row[1].as_deref().and_then(|v| v.parse::<i128>().ok());
                match (count, sum) {
                    (Some(c), Some(s)) => Ok((c, s)),
                    _ => Err(self.answer(&context, row)),
                }
            }
            _ => Err(self.answer(&context, rows)),
        }
    }

    /// Reads every row's key through a cursor; the rows the router places elsewhere.
    async fn misplaced(
        &mut self,
        table: &TableName,
        sharding: &TableSharding,
    ) -> Result<Placement, VerifyError> {
        let context = format!("reading the keys of {}", table.display());
        let mut result = Placement::default();
        self.server
            .execute(&format!(
                "BEGIN READ ONLY; DECLARE pgdog_verify NO SCROLL CURSOR FOR SELECT {}::text FROM {}",
                ident(sharding.column()),
                table.sql()
            ))
            .await
            .map_err(|e| self.error(&context, e))?;
        let outcome = async {
            loop {
                let batch = self
                    .rows(&format!("FETCH {FETCH_BATCH} FROM pgdog_verify"), &context)
                    .await?;
                for row in &batch {
                    let key = row.first().cloned().flatten();
                    match sharding.shard_of_text(key.as_deref()) {
                        Ok(s) if s == self.shard => {}
                        Ok(s) => {
                            result.misplaced += 1;
                            if result.example.is_none() {
                                result.example = Some(format!(
                                    "key {} on shard {} belongs on shard {s}",
                                    key.as_deref().unwrap_or("NULL"),
                                    self.shard
                                ));
                            }
                        }
                        Err(e) => {
                            result.unplaceable += 1;
                            if result.unplaceable_example.is_none() {
                                result.unplaceable_example = Some(format!(
                                    "key {} on shard {}: {e}",
                                    key.as_deref().unwrap_or("NULL"),
                                    self.shard
                                ));
                            }
                        }
                    }
                }
                if batch.len() < FETCH_BATCH {
                    return Ok::<(), VerifyError>(());
                }
            }
        }
        .await;
        let end = self.server.execute("ROLLBACK").await;
        outcome?;
        end.map_err(|e| self.error(&context, e))?;
        Ok(result)
    }
}

/// Placement findings on one shard.
#[derive(Debug, Default)]
struct Placement {
    misplaced: u64,
    example: Option<String>,
    unplaceable: u64,
    unplaceable_example: Option<String>,
}

/// The user tables of the source (its first shard).
async fn source_tables(source: &mut Shard) -> Result<Vec<TableName>, VerifyError> {
    let rows = source
        .rows(
            // pgdog's own bookkeeping (reshard progress) is not user data.
            "SELECT schemaname::text, tablename::text FROM pg_tables \
             WHERE schemaname NOT IN ('pg_catalog', 'information_schema') \
             AND tablename NOT IN ('pgdog_reshard_progress', 'pgdog_reshard_position', \
             'pgdog_twophase', 'pgdog_unique_id_nodes') \
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
) -> Result<TableReport, VerifyError> {
    let mut report = TableReport {
        table: table.display(),
        rows: 0,
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
                if p.misplaced > 0 {
                    report.problems.push(format!(
                        "{} misplaced rows on shard {} (e.g. {})",
                        p.misplaced,
                        s.shard,
                        p.example.unwrap_or_default()
                    ));
                }
                if p.unplaceable > 0 {
                    report.problems.push(format!(
                        "{} rows with a key the router cannot place on shard {} (e.g. {})",
                        p.unplaceable,
                        s.shard,
                        p.unplaceable_example.unwrap_or_default()
                    ));
                }
            }
        }
    }
    Ok(report)
}

/// Compares the tables; one report per table.
pub async fn verify(
    settings: &Settings,
    options: &VerifyOptions,
) -> Result<Vec<TableReport>, VerifyError> {
    for db in [&options.from_database, &options.to_database] {
        if !settings.has_database(db) {
            return Err(VerifyError::UnknownDatabase(db.clone()));
        }
    }
    let schema = |database: &str| {
        Schema::new(settings, database).map_err(|e| VerifyError::Sharding {
            database: database.to_string(),
            reason: e.to_string(),
        })
    };
    let source_schema = schema(&options.from_database)?;
    let dest_schema = schema(&options.to_database)?;
    let mut source = Shard::connect(settings, &options.from_database).await?;
    let mut dest = Shard::connect(settings, &options.to_database).await?;
    let tables = if options.tables.is_empty() {
        source_tables(&mut source[0]).await?
    } else {
        options.tables.iter().map(|t| TableName::parse(t)).collect()
    };
    let mut reports = Vec::with_capacity(tables.len());
    for table in &tables {
        reports
            .push(verify_table(table, &mut source, &mut dest, &source_schema, &dest_schema).await?);
    }
    for s in source.into_iter().chain(dest) {
        s.server.terminate().await;
    }
    Ok(reports)
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
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn report_lines() {
        let ok = TableReport {
            table: "users".into(),
            rows: 3,
            problems: vec![],
        };
        assert_eq!(ok.to_string(), "users: OK (3 rows)");
        let bad = TableReport {
            table: "users".into(),
            rows: 3,
            problems: vec!["a".into(), "b".into()],
        };
        assert_eq!(bad.to_string(), "users: DIFFERENT: a; b");
    }
}
