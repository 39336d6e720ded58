//! UPDATE of a sharding key: rows move to the shard of their new key. The rows are picked by
//! their current key (the router refuses anything else); on each shard holding them, the
//! client's UPDATE runs as written, so Postgres computes every new value (SET expressions,
//! defaults, generated columns, triggers) and locks the rows, with `RETURNING` extended by the
//! whole new row. Rows whose new key belongs elsewhere are then deleted there and inserted on
//! their new shard (generated columns left for Postgres to compute again, identity values kept),
//! all in one transaction across the shards (two-phase commit when enabled). The client gets
//! its own RETURNING columns and `UPDATE n`. Each shard's answer is spooled (memory up to
//! `merge_work_mem`, then a temporary file) and moved 1,000 rows at a time.
use super::insert_select::text_value;
use super::{exec, ClientError, ShardedSession, Statement};
use crate::merge::SpoolReader;
use crate::net::bind::Bind;
use crate::net::message;
use crate::net::quote::ident as quote_ident;
use crate::net::rows::{read_row_description, row_description, DataRow, Field};
use crate::net::tag::backend;
use crate::router::schema::TableSharding;
use crate::router::{Params, Route, RouterError};
use pg_query_raw::protobuf::{self as pb, node::Node as N, ParseResult};
use pg_query_raw::router::Statement as Parsed1;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Rows moved at a time (one DELETE on the old shard, one INSERT per new shard).
const CHUNK: usize = 1000;

/// Marks where the client's RETURNING columns end and the whole row begins.
const SPLIT: &str = "__pgdog_row";

/// The client's request: a simple query, or a prepared statement with its Bind.
pub(super) enum Origin<'a> {
    Simple,
    Extended {
        statement: &'a Statement,
        bind: &'a Bind<'a>,
        params: &'a Params<'a>,
        describe: bool,
    },
}

impl ShardedSession {
    /// Runs `sql` if it is an UPDATE of a sharding key (`Ok(true)`).
    pub(super) async fn key_update(
        &mut self,
        st: &Parsed1,
        sql: &str,
        origin: Origin<'_>,
    ) -> Result<bool, ClientError> {
        let params = match &origin {
            Origin::Extended { params, .. } => Some(*params),
            Origin::Simple => None,
        };
        let Some((ts, shards)) = self.router.key_update(st, params)? else {
            return Ok(false);
        };
        if let Origin::Extended { bind, .. } = &origin {
            if bind.result_formats.contains(&1) && !st.returning.is_empty() {
                return Err(RouterError::Unsupported(
                    "UPDATE of a sharding key with RETURNING in binary format (use text results)"
                        .into(),
                )
                .into());
            }
        }
        let table = st
            .relations
            .first()
            .map(|r| match &r.schema {
                Some(s) => format!("{}.{}", quote_ident(s), quote_ident(&r.name)),
                None => quote_ident(&r.name),
            })
            .ok_or_else(|| ClientError::new("XX000", "UPDATE without a table"))?;
        let source = with_whole_row(sql)?;
        let implicit = self.begin_implicit();
        let result = self
            .move_rows(
                &ts,
                &table,
                &shards,
                &source,
                &origin,
                !st.returning.is_empty(),
            )
            .await;
        self.end_implicit(implicit, result).await.map(|()| true)
    }

    /// Runs the UPDATE on each shard holding rows, moves the rows whose new key belongs
    /// elsewhere (up to [`CHUNK`] at a time: the shard's answer is read back from a spool, so
    /// memory does not grow with the row count) and answers the client.
    async fn move_rows(
        &mut self,
        ts: &TableSharding,
        table: &str,
        shards: &[usize],
        source: &str,
        origin: &Origin<'_>,
        returning: bool,
    ) -> Result<(), ClientError> {
        let mut count = 0;
        let mut described = !match origin {
            Origin::Simple => true,
            Origin::Extended { describe, .. } => *describe,
        };
        let bad = |e: crate::net::ProtocolError| ClientError::new("08P01", e.to_string());
        for &shard in shards {
            let mut answer = self.update_on(shard, source, origin).await?;
            let mut split = 0;
            let mut table_fields: Vec<Field> = Vec::new();
            let mut key = 0;
            let mut generated: Option<Vec<String>> = None;
            let mut moved: BTreeMap<usize, Vec<Vec<Option<String>>>> = BTreeMap::new();
            let mut waiting = 0;
            while let Some(m) = answer.read()? {
                match m.tag() {
                    backend::ROW_DESCRIPTION => {
                        let mut fields = read_row_description(&m).map_err(bad)?;
                        split = fields.iter().position(|f| f.name == SPLIT).unwrap_or(0);
                        table_fields = fields.split_off(split + 1);
                        fields.pop();
                        key = table_fields
                            .iter()
                            .position(|f| f.name == ts.column())
                            .ok_or_else(|| {
                                ClientError::new("XX000", "the new row has no sharding key")
                            })?;
                        if !described {
                            described = true;
                            if returning {
                                self.send(&row_description(&fields));
                            } else if matches!(origin, Origin::Extended { .. }) {
                                self.send(&message::empty(b'n'));
                            }
                        }
                    }
                    backend::DATA_ROW => {
                        let row = DataRow::parse(m).map_err(bad)?;
                        let codec = self.client.codec;
                        let whole: Vec<Option<String>> = (split + 1..row.len())
                            .map(|i| row.get(i).map(|v| text_value(codec, v)).transpose())
                            .collect::<Result<_, _>>()?;
                        let to = ts
                            .shard_of_text(whole.get(key).cloned().flatten().as_deref())
                            .map_err(RouterError::from)?;
                        if returning {
                            self.send(&row.truncated(split));
                            self.flush_large().await?;
                        }
                        if to != shard {
                            moved.entry(to).or_default().push(whole);
                            waiting += 1;
                        }
                        if waiting >= CHUNK {
                            let generated = match &generated {
                                Some(g) => g.clone(),
                                None => generated
                                    .insert(self.generated_columns(shard, table).await?)
                                    .clone(),
                            };
                            let batch = std::mem::take(&mut moved);
                            self.relocate(table, shard, key, &table_fields, &generated, batch)
                                .await?;
                            waiting = 0;
                        }
                    }
                    backend::COMMAND_COMPLETE => {
                        let tag = m.reader().cstr().map_err(bad)?.to_string();
                        count += message::rows_in_tag(&tag);
                    }
                    backend::NOTICE_RESPONSE => self.send(&m),
                    _ => {}
                }
            }
            if !moved.is_empty() {
                let generated = match generated {
                    Some(g) => g,
                    None => self.generated_columns(shard, table).await?,
                };
                self.relocate(table, shard, key, &table_fields, &generated, moved)
                    .await?;
            }
        }
        self.send(&message::command_complete(&format!("UPDATE {count}")));
        Ok(())
    }

    /// Sends what the client's buffer holds once it is large (rows streamed to the client).
    async fn flush_large(&mut self) -> Result<(), ClientError> {
        if self.captured.is_none() && self.client.out.len() > 64 * 1024 {
            self.flush()
                .await
                .map_err(|_| ClientError::new("08006", "client connection lost"))?;
        }
        Ok(())
    }

    /// The client's UPDATE on one shard, RETURNING its own columns and the whole new row: the
    /// shard's answer, spooled.
    async fn update_on(
        &mut self,
        shard: usize,
        source: &str,
        origin: &Origin<'_>,
    ) -> Result<SpoolReader, ClientError> {
        let route = Route::Shard(shard);
        let spool = match origin {
            Origin::Simple => {
                self.capture_spool(&route, exec::Request::Simple(source))
                    .await?
            }
            Origin::Extended {
                statement, bind, ..
            } => {
                let statement = Statement {
                    sql: Arc::from(source),
                    ..(*statement).clone()
                };
                let mut bind = (*bind).clone();
                bind.result_formats = Vec::new(); // text: pgdog reads the rows
                let req = exec::Request::Extended {
                    statement: &statement,
                    bind: &bind,
                    describe: true,
                };
                self.capture_spool(&route, req).await?
            }
        };
        Ok(spool.reader()?)
    }

    /// Deletes the moved rows on `from` and inserts them on their new shards.
    async fn relocate(
        &mut self,
        table: &str,
        from: usize,
        key: usize,
        fields: &[Field],
        generated: &[String],
        moved: BTreeMap<usize, Vec<Vec<Option<String>>>>,
    ) -> Result<(), ClientError> {
        let keys: Vec<String> = moved
            .values()
            .flatten()
            .map(|r| literal(r[key].as_deref()))
            .collect();
        let delete = format!(
            "DELETE FROM {table} WHERE {} IN ({})",
            quote_ident(&fields[key].name),
            keys.join(", ")
        );
        self.capture(&Route::Shard(from), exec::Request::Simple(&delete))
            .await?;
        let keep: Vec<usize> = (0..fields.len())
            .filter(|i| !generated.contains(&fields[*i].name))
            .collect();
        let columns: Vec<String> = keep.iter().map(|i| quote_ident(&fields[*i].name)).collect();
        for (to, rows) in moved {
            let values: Vec<String> = rows
                .iter()
                .map(|r| {
                    let v: Vec<String> = keep.iter().map(|i| literal(r[*i].as_deref())).collect();
                    format!("({})", v.join(", "))
                })
                .collect();
            let insert = format!(
                "INSERT INTO {table} ({}) OVERRIDING SYSTEM VALUE VALUES {}",
                columns.join(", "),
                values.join(", ")
            );
            self.capture(&Route::Shard(to), exec::Request::Simple(&insert))
                .await?;
        }
        Ok(())
    }

    /// Generated columns of `table` (Postgres computes them again on insert).
    async fn generated_columns(
        &mut self,
        shard: usize,
        table: &str,
    ) -> Result<Vec<String>, ClientError> {
        let sql = format!(
            "SELECT string_agg(attname, ',') FROM pg_catalog.pg_attribute WHERE attrelid = {}::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated <> ''",
            crate::net::quote::literal(table)
        );
        let server = self.server(shard).await?;
        let row = server.query_row(&sql).await?;
        Ok(row
            .into_iter()
            .next()
            .flatten()
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default())
    }
}

/// The UPDATE with `RETURNING <client's list>, NULL AS __pgdog_row, *`.
fn with_whole_row(sql: &str) -> Result<String, ClientError> {
    let mut tree: ParseResult = pg_query_raw::parse_protobuf(sql).map_err(RouterError::Syntax)?;
    let Some(N::UpdateStmt(update)) = pg_query_raw::first_statement_mut(&mut tree) else {
        return Err(ClientError::new("XX000", "not an UPDATE"));
    };
    let target = |val: pb::Node, name: &str| pb::Node {
        node: Some(N::ResTarget(Box::new(pb::ResTarget {
            name: name.to_string(),
            val: Some(Box::new(val)),
            location: -1,
            ..Default::default()
        }))),
    };
    let null = pb::Node {
        node: Some(N::AConst(pb::AConst {
            isnull: true,
            location: -1,
            ..Default::default()
        })),
    };
    let star = pb::Node {
        node: Some(N::ColumnRef(pb::ColumnRef {
            fields: vec![pb::Node {
                node: Some(N::AStar(pb::AStar {})),
            }],
            location: -1,
        })),
    };
    let list = match update.returning_clause.as_mut() {
        Some(r) => &mut r.exprs,
        None => {
            update.returning_clause = Some(Default::default());
            &mut update
                .returning_clause
                .as_mut()
                .ok_or_else(|| ClientError::new("XX000", "RETURNING"))?
                .exprs
        }
    };
    list.push(target(null, SPLIT));
    list.push(target(star, ""));
    tree.stmts.truncate(1);
    if let Some(s) = tree.stmts.first_mut() {
        s.stmt_location = 0;
        s.stmt_len = 0;
    }
    Ok(pg_query_raw::deparse(&tree).map_err(RouterError::Syntax)?)
}

/// A text value as an untyped literal (its type comes from the column), or NULL.
fn literal(v: Option<&str>) -> String {
    v.map_or_else(|| "NULL".to_string(), crate::net::quote::literal)
}
