//! One connection per shard of each side, the table names verify checks, and the per-shard
//! reads: columns, count and checksum, and the placement of every row's key. Every read runs
//! in the shard's one snapshot ([`super::snapshot`]).
use super::{VerifyError, CONNECT_TIMEOUT, FETCH_BATCH};
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::Settings;
use crate::net::quote::{ident, literal};
use crate::reshard::copy::shard_targets;
use crate::router::schema::TableSharding;

/// A table to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TableName {
    pub(super) schema: String,
    pub(super) name: String,
}

impl TableName {
    pub(super) fn parse(s: &str) -> TableName {
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

    pub(super) fn sql(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(&self.name))
    }

    pub(super) fn display(&self) -> String {
        if self.schema == "public" {
            self.name.clone()
        } else {
            format!("{}.{}", self.schema, self.name)
        }
    }
}

/// One open connection to a shard.
pub(super) struct Shard {
    pub(super) database: String,
    pub(super) shard: usize,
    pub(super) addr: String,
    /// Where it runs: the hold takes its source snapshot from a replication connection to the
    /// same server.
    pub(super) target: ServerTarget,
    pub(super) server: Server,
}

impl Shard {
    pub(super) async fn connect(
        settings: &Settings,
        database: &str,
    ) -> Result<Vec<Shard>, VerifyError> {
        let mut shards = Vec::new();
        for (shard, t) in shard_targets(settings, database)?.into_iter().enumerate() {
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
                target: t,
                server,
            });
        }
        Ok(shards)
    }

    pub(super) fn error(&self, context: &str, source: ServerError) -> VerifyError {
        VerifyError::Server {
            database: self.database.clone(),
            shard: self.shard,
            addr: self.addr.clone(),
            context: context.to_string(),
            source: Box::new(source),
        }
    }

    pub(super) fn answer(&self, context: &str, answer: impl std::fmt::Debug) -> VerifyError {
        VerifyError::Answer {
            database: self.database.clone(),
            shard: self.shard,
            context: context.to_string(),
            answer: format!("{answer:?}"),
        }
    }

    pub(super) async fn rows(
        &mut self,
        sql: &str,
        context: &str,
    ) -> Result<Vec<Vec<Option<String>>>, VerifyError> {
        self.server
            .query_rows(sql)
            .await
            .map_err(|e| self.error(context, e))
    }

    /// The table's columns in order, `None` when it does not exist.
    pub(super) async fn columns(
        &mut self,
        table: &TableName,
    ) -> Result<Option<Vec<String>>, VerifyError> {
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
    pub(super) async fn checksum(
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

    /// Runs statements whose result does not matter (transaction control).
    pub(super) async fn execute(&mut self, sql: &str, context: &str) -> Result<(), VerifyError> {
        self.server
            .execute(sql)
            .await
            .map(|_| ())
            .map_err(|e| self.error(context, e))
    }

    /// Reads every row's key through a cursor (in the open snapshot transaction); the rows
    /// the router places elsewhere.
    pub(super) async fn misplaced(
        &mut self,
        table: &TableName,
        sharding: &TableSharding,
    ) -> Result<Placement, VerifyError> {
        let context = format!("reading the keys of {}", table.display());
        let mut result = Placement::default();
        let declare = format!(
            "DECLARE pgdog_verify NO SCROLL CURSOR FOR SELECT {}::text FROM {}",
            ident(sharding.column()),
            table.sql()
        );
        self.execute(&declare, &context).await?;
        let outcome = async {
            loop {
                let batch = self
                    .rows(&format!("FETCH {FETCH_BATCH} FROM pgdog_verify"), &context)
                    .await?;
                for row in &batch {
                    let key = row.first().cloned().flatten();
                    match sharding.shard_of_text(key.as_deref()) {
                        Ok(s) if s == self.shard => {}
                        found => {
                            let at = format!(
                                "key {} on shard {}",
                                key.as_deref().unwrap_or("NULL"),
                                self.shard
                            );
                            let (count, example, why) = match found {
                                Ok(s) => (
                                    &mut result.misplaced,
                                    &mut result.example,
                                    format!(" belongs on shard {s}"),
                                ),
                                Err(e) => (
                                    &mut result.unplaceable,
                                    &mut result.unplaceable_example,
                                    format!(": {e}"),
                                ),
                            };
                            *count += 1;
                            example.get_or_insert_with(|| format!("{at}{why}"));
                        }
                    }
                }
                if batch.len() < FETCH_BATCH {
                    return Ok::<(), VerifyError>(());
                }
            }
        }
        .await;
        outcome?;
        self.execute("CLOSE pgdog_verify", &context).await?;
        Ok(result)
    }
}

/// Placement findings on one shard.
#[derive(Debug, Default)]
pub(super) struct Placement {
    pub(super) misplaced: u64,
    pub(super) example: Option<String>,
    pub(super) unplaceable: u64,
    pub(super) unplaceable_example: Option<String>,
}
