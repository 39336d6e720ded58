//! `INSERT INTO <sharded table> ... SELECT ...`: the SELECT is routed like any query (one shard,
//! every shard with a merge, or no table at all) and its rows are read by pgdog; each row goes to
//! the shard its key hashes to, as `INSERT ... VALUES` statements (up to 1,000 rows each) that
//! keep the column list, `ON CONFLICT` and `RETURNING`. The SELECT and the inserts run in one
//! transaction across the shards (two-phase commit when enabled) unless the client has one open;
//! the command tag is `INSERT 0 n`. A key the SELECT leaves out is supplied with
//! `pgdog.unique_id()` when the table's `primary_key` says so.
//!
//! Memory stays bounded whatever the row count: the SELECT's rows are kept in a [`Spool`]
//! (memory up to `merge_work_mem`, then a temporary file), read back one at a time into a spool
//! per target shard, and inserted shard after shard (in shard order, like every write across
//! shards) in batches of [`CHUNK`] rows.
use super::{exec, ClientError, ShardedSession};
use crate::backend::unique_id;
use crate::merge::{MemoryLimits, Spool, SpoolReader};
use crate::net::encoding::Codec;
use crate::net::message;
use crate::net::rows::{self, DataRow};
use crate::net::tag::backend;
use crate::net::Message;
use crate::router::insert::{self, InsertPart};
use crate::router::{Parsed, Route, RouterError};
use pg_query_raw::protobuf::{self as pb, node::Node as N, ParseResult, RawStmt};
use pg_query_raw::router::{Statement as Parsed1, StatementKind};

/// Rows per generated INSERT.
const CHUNK: usize = 1000;

type Rows = Vec<Vec<Option<String>>>;

/// What the insert batches answered so far.
#[derive(Default)]
struct Inserted {
    described: bool,
    rows: u64,
    batches: usize,
}

impl ShardedSession {
    /// Runs `sql` if it is an INSERT ... SELECT into a sharded table (`Ok(true)`). `extended`:
    /// for the extended protocol, whether the portal was described (RowDescription or NoData
    /// expected) and whether it asks for binary results; `None` for a simple query.
    pub(super) async fn insert_select(
        &mut self,
        st: &Parsed1,
        sql: &str,
        extended: Option<(bool, bool)>,
    ) -> Result<bool, ClientError> {
        let describe = extended.map(|(d, _)| d);
        if st.kind != StatementKind::Insert || !st.values.is_empty() {
            return Ok(false);
        }
        let Some(target) = st.relations.first() else {
            return Ok(false);
        };
        let schema = self.router.schema.clone();
        if schema.table(&target.name).is_none() {
            return Ok(false);
        }
        let mut tree = pg_query_raw::parse_protobuf(sql).map_err(RouterError::Syntax)?;
        let Some(insert) = tree.stmts.first_mut().and_then(insert::insert_of) else {
            return Ok(false);
        };
        let Some(select) = insert.select_stmt.take() else {
            return Ok(false); // DEFAULT VALUES: the router answers
        };
        let unsupported = |what: &str| {
            Err(ClientError::from(RouterError::Unsupported(format!(
                "INSERT ... SELECT into sharded table \"{}\" {what}",
                target.name
            ))))
        };
        if st.max_param > 0 {
            return unsupported("with parameters (use a simple query, or INSERT ... VALUES)");
        }
        if extended.is_some_and(|(_, binary)| binary) && !st.returning.is_empty() {
            return unsupported("with RETURNING in binary format (use text results)");
        }
        if insert.with_clause.is_some() {
            return unsupported("with WITH (move the WITH into the SELECT)");
        }
        let select_sql = deparse_one(tree.version, *select)?;
        let columns: Vec<String> = insert
            .cols
            .iter()
            .filter_map(|c| match c.node.as_ref() {
                Some(N::ResTarget(rt)) if rt.indirection.is_empty() => Some(rt.name.clone()),
                _ => None,
            })
            .collect();
        if columns.len() != insert.cols.len() {
            return unsupported("into array elements or fields");
        }
        let implicit = self.begin_implicit();
        let result = async {
            let rows = self.select_rows(&select_sql).await?;
            self.insert_rows(&tree, target, columns, rows, describe)
                .await
        }
        .await;
        self.end_implicit(implicit, result).await.map(|()| true)
    }

    /// The rows of a SELECT routed and merged as the client's own would be (DataRows only).
    async fn select_rows(&mut self, sql: &str) -> Result<SpoolReader, ClientError> {
        let parsed = Parsed::new(sql)?;
        let route = self.route(&parsed, 0, sql, None).await?;
        let spool = self
            .capture_spool(&route, exec::Request::Simple(sql))
            .await?;
        Ok(spool.reader()?)
    }

    /// What `route` sends the client for `req`, kept instead of sent.
    pub(super) async fn capture(
        &mut self,
        route: &Route,
        req: exec::Request<'_>,
    ) -> Result<Vec<Message>, ClientError> {
        Ok(self.capture_spool(route, req).await?.into_memory()?)
    }

    /// [`ShardedSession::capture`] into a spool that spills past `merge_work_mem`.
    pub(super) async fn capture_spool(
        &mut self,
        route: &Route,
        req: exec::Request<'_>,
    ) -> Result<Spool, ClientError> {
        self.captured = Some(Spool::new(MemoryLimits::active()));
        let result = self.run_route(route, req).await;
        let spool = self.captured.take();
        result?;
        spool.ok_or_else(|| ClientError::new("XX000", "captured rows lost"))
    }

    /// Inserts the SELECT's `rows` (values of `columns`) on their shards with the INSERT of
    /// `tree` (its SELECT taken out), a batch of up to [`CHUNK`] rows per shard at a time, and
    /// answers the client.
    async fn insert_rows(
        &mut self,
        tree: &ParseResult,
        target: &pg_query_raw::router::Relation,
        mut columns: Vec<String>,
        mut rows: SpoolReader,
        describe: Option<bool>,
    ) -> Result<(), ClientError> {
        let table = target.name.as_str();
        let schema = self.router.schema.clone();
        let ts = schema
            .table(table)
            .ok_or_else(|| ClientError::new("XX000", "INSERT ... SELECT lost its table"))?;
        // Each shard's rows, spooled: they are inserted shard after shard, in shard order, as
        // every write across shards is (two such statements never wait on each other's shards
        // in opposite orders).
        let mut limits = MemoryLimits::active();
        limits.work_mem = (limits.work_mem / schema.shards.max(1) as u64).max(8 << 10);
        let mut spools: Vec<Spool> = (0..schema.shards)
            .map(|_| Spool::new(limits.clone()))
            .collect();
        let mut done = Inserted::default();
        let mut key: Option<usize> = None;
        let mut node = None;
        while let Some(m) = rows.read()? {
            match m.tag() {
                backend::DATA_ROW => {}
                backend::NOTICE_RESPONSE => {
                    self.send(&m);
                    continue;
                }
                _ => continue,
            }
            let mut row = texts(m, self.client.codec)?;
            let k = match key {
                Some(k) => k,
                None => {
                    if columns.is_empty() {
                        let names = self.table_columns(target.schema.as_deref(), table).await?;
                        columns = names.into_iter().take(row.len()).collect();
                    }
                    let given = columns.iter().any(|c| c == ts.column());
                    let k = self.key_column(ts, table, &mut columns).await?;
                    if !given {
                        node = Some(self.id_node().await?);
                    }
                    key = Some(k);
                    k
                }
            };
            let width = row.len();
            if let Some(node) = node {
                row.push(Some(unique_id::next(node).to_string()));
            }
            if row.len() != columns.len() {
                return Err(width_error(
                    columns.len() - usize::from(node.is_some()),
                    width,
                ));
            }
            let shard = ts
                .shard_of_text(row[k].as_deref())
                .map_err(RouterError::from)?;
            spools
                .get_mut(shard)
                .ok_or_else(|| ClientError::new("XX000", "no such shard"))?
                .push(&rows::data_row(&row));
        }
        drop(rows);
        for (shard, spool) in spools.into_iter().enumerate() {
            let mut spooled = spool.reader()?;
            let mut batch: Rows = Vec::new();
            while let Some(m) = spooled.read()? {
                batch.push(texts(m, self.client.codec)?);
                if batch.len() >= CHUNK {
                    self.insert_batch(tree, &columns, shard, Some(&batch), describe, &mut done)
                        .await?;
                    batch.clear();
                }
            }
            if !batch.is_empty() {
                self.insert_batch(tree, &columns, shard, Some(&batch), describe, &mut done)
                    .await?;
            }
        }
        if done.batches == 0 {
            if columns.is_empty() {
                let names = self.table_columns(target.schema.as_deref(), table).await?;
                columns = names;
            }
            // No rows: one shard runs the INSERT over nothing, for its tag and RowDescription.
            self.insert_batch(tree, &columns, 0, None, describe, &mut done)
                .await?;
        }
        if describe == Some(true) && !done.described {
            self.send(&message::empty(b'n'));
        }
        self.send(&message::command_complete(&format!(
            "INSERT 0 {}",
            done.rows
        )));
        Ok(())
    }

    /// The position of the sharding key in `columns`, added (with generated values) when the
    /// table's `primary_key` lets pgdog make it.
    async fn key_column(
        &mut self,
        ts: &crate::router::schema::TableSharding,
        table: &str,
        columns: &mut Vec<String>,
    ) -> Result<usize, ClientError> {
        match columns.iter().position(|c| c == ts.column()) {
            Some(k) => Ok(k),
            None if ts.config.generates_key() => {
                columns.push(ts.column().to_string());
                Ok(columns.len() - 1)
            }
            None => Err(RouterError::Unsupported(format!(
                "INSERT ... SELECT into sharded table \"{table}\" must give the sharding key \"{}\" (primary_key = \"database\")",
                ts.column()
            ))
            .into()),
        }
    }

    /// Runs one INSERT of `rows` on `shard` (`None`: over no rows) and forwards its RETURNING
    /// rows; counts what it inserted.
    async fn insert_batch(
        &mut self,
        tree: &ParseResult,
        columns: &[String],
        shard: usize,
        rows: Option<&[Vec<Option<String>>]>,
        describe: Option<bool>,
        done: &mut Inserted,
    ) -> Result<(), ClientError> {
        let route = Route::Split(vec![InsertPart {
            shard,
            sql: insert_sql(tree, columns, rows)?,
            params: Vec::new(),
        }]);
        let messages = self.capture(&route, exec::Request::Simple("")).await?;
        done.batches += 1;
        for m in messages {
            match m.tag() {
                backend::ROW_DESCRIPTION => {
                    if describe != Some(false) && !done.described {
                        self.send(&m);
                    }
                    done.described = true;
                }
                backend::COMMAND_COMPLETE => done.rows += message::rows_completed(&m),
                _ => self.send(&m),
            }
        }
        Ok(())
    }
}

/// A DataRow's values as text.
/// A DataRow's values as text (in the client's encoding, as the shards send them).
pub(super) fn texts(m: Message, codec: Codec) -> Result<Vec<Option<String>>, ClientError> {
    let r = DataRow::parse(m).map_err(|e| ClientError::new("08P01", e.to_string()))?;
    (0..r.len())
        .map(|i| r.get(i).map(|v| text_value(codec, v)).transpose())
        .collect()
}

/// One value of a row as text (see [`texts`]).
pub(super) fn text_value(codec: Codec, v: &[u8]) -> Result<String, ClientError> {
    match codec.decode(v) {
        Some(text) => Ok(text.into_owned()),
        None => Err(ClientError::new(
            "0A000",
            "pgdog cannot read a value in the client's encoding (client_encoding) to move it between shards",
        )),
    }
}

fn width_error(targets: usize, width: usize) -> ClientError {
    ClientError::new(
        "42601",
        format!("INSERT has {targets} target columns but the SELECT returns {width} expressions"),
    )
}

pub(super) fn deparse_one(version: i32, stmt: pb::Node) -> Result<String, ClientError> {
    let one = ParseResult {
        version,
        stmts: vec![RawStmt {
            stmt: Some(Box::new(stmt)),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    Ok(pg_query_raw::deparse(&one).map_err(RouterError::Syntax)?)
}

/// The client's INSERT with `columns` and these rows as VALUES (`None`: a SELECT of no rows).
fn insert_sql(
    tree: &ParseResult,
    columns: &[String],
    rows: Option<&[Vec<Option<String>>]>,
) -> Result<String, ClientError> {
    let mut stmt = tree
        .stmts
        .first()
        .and_then(|s| s.stmt.as_deref())
        .cloned()
        .ok_or_else(|| ClientError::new("XX000", "INSERT ... SELECT lost its statement"))?;
    let Some(N::InsertStmt(insert)) = stmt.node.as_mut() else {
        return Err(ClientError::new(
            "XX000",
            "INSERT ... SELECT is not an INSERT",
        ));
    };
    insert.cols = columns
        .iter()
        .map(|c| {
            node(N::ResTarget(Box::new(pb::ResTarget {
                name: c.clone(),
                location: -1,
                ..Default::default()
            })))
        })
        .collect();
    let select = match rows {
        Some(rows) => pb::SelectStmt {
            values_lists: rows
                .iter()
                .map(|r| {
                    node(N::List(pb::List {
                        items: r.iter().map(|v| literal(v.as_deref())).collect(),
                    }))
                })
                .collect(),
            limit_option: pb::LimitOption::Default as i32,
            op: pb::SetOperation::SetopNone as i32,
            ..Default::default()
        },
        None => pb::SelectStmt {
            target_list: columns
                .iter()
                .map(|_| {
                    node(N::ResTarget(Box::new(pb::ResTarget {
                        val: Some(Box::new(literal(None))),
                        location: -1,
                        ..Default::default()
                    })))
                })
                .collect(),
            where_clause: Some(Box::new(node(N::AConst(pb::AConst {
                val: Some(pb::a_const::Val::Boolval(pb::Boolean { boolval: false })),
                ..Default::default()
            })))),
            limit_option: pb::LimitOption::Default as i32,
            op: pb::SetOperation::SetopNone as i32,
            ..Default::default()
        },
    };
    insert.select_stmt = Some(Box::new(node(N::SelectStmt(Box::new(select)))));
    deparse_one(tree.version, stmt)
}

fn node(n: N) -> pb::Node {
    pb::Node { node: Some(n) }
}

/// A value as an untyped string literal (its type comes from the target column), or NULL.
fn literal(v: Option<&str>) -> pb::Node {
    node(N::AConst(match v {
        Some(s) => pb::AConst {
            val: Some(pb::a_const::Val::Sval(pb::String {
                sval: s.to_string(),
            })),
            location: -1,
            ..Default::default()
        },
        None => pb::AConst {
            isnull: true,
            location: -1,
            ..Default::default()
        },
    }))
}
