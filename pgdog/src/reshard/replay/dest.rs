//! Destination shard connections of the replay: statements pipelined as Parse (once per
//! shape) / Bind / Execute with intermediate Syncs, their results read back and checked (an
//! error or a change that found no row names the statement, its values and the source LSN).
//! A statement queued as *counted* is not checked here: its row count (and the rows it
//! returned) is kept for the caller, which checks a change applied on several shards across
//! all of them (see `identity.rs`).
use super::*;
use crate::net::message::rows_in_tag;
use crate::net::rows::DataRow;
use crate::net::tag::backend;

/// A statement sent and not answered yet.
pub(super) struct Sent {
    stmt: Stmt,
    /// The source transaction's commit LSN (0: none), to name the change in an error.
    lsn: u64,
    /// The change whose row count it adds to, in [`Shard::counted`], instead of being checked.
    counted: Option<u64>,
}

impl Sent {
    /// The statement described: `: <SQL> with (<values>) from the source transaction at <LSN>`.
    pub(super) fn describe(&self) -> String {
        let values: Vec<String> = self
            .stmt
            .params
            .iter()
            .map(|p| match p {
                Some(v) => format!("'{}'", String::from_utf8_lossy(v)),
                None => "NULL".into(),
            })
            .collect();
        let at = if self.lsn > 0 {
            format!(" from the source transaction at {}", format_lsn(self.lsn))
        } else {
            String::new()
        };
        format!(": {} with ({}){at}", self.stmt.sql, values.join(", "))
    }
}

/// What a counted statement did: the rows it changed and the rows it returned.
pub(super) struct Counted {
    /// The change it counts for (a change applied on several shards counts on each).
    pub(super) change: u64,
    pub(super) rows: u64,
    pub(super) returned: Vec<DataRow>,
}

/// One destination shard connection.
pub(super) struct Shard {
    pub(super) index: usize,
    pub(super) addr: String,
    pub(super) server: Server,
    /// SQL text → prepared statement name.
    /// Keyed by text and parameter types: a column's new type (a schema change) makes the
    /// same text another statement.
    pub(super) statements: HashMap<Arc<str>, Vec<Prepared>>,
    /// Statements prepared on this connection (their names' numbers).
    pub(super) prepared: usize,
    /// The stored position: transactions committing before it are already applied here.
    pub(super) position: u64,
    pub(super) out: BytesMut,
    /// Statements queued since the last Sync.
    pub(super) queued: usize,
    /// Syncs (and simple Queries) sent whose results are not read yet.
    pub(super) pending_syncs: usize,
    /// What was sent and not answered yet, in order: each statement, `None` where a Sync (or
    /// simple Query) ends a group of results.
    pub(super) in_flight: VecDeque<Option<Sent>>,
    /// The outcomes of the counted statements read so far, in order (the caller takes them).
    pub(super) counted: Vec<Counted>,
    /// The rows returned so far by the statement being answered.
    returned: Vec<DataRow>,
}

impl Shard {
    pub(super) fn context(&self, what: &str) -> String {
        format!("shard {} ({}): {what}", self.index, self.addr)
    }

    pub(super) async fn flush(&mut self) -> Result<(), ReplayError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let data = self.out.split();
        let ctx = self.context("sending");
        self.server.write_raw(&data).await.map_err(lost(ctx))
    }

    /// Queues Parse (first use of the SQL on this connection), Bind and Execute; an UPDATE or
    /// DELETE that finds no row fails the batch.
    pub(super) async fn queue(&mut self, stmt: &Stmt, lsn: u64) -> Result<(), ReplayError> {
        self.queue_as(stmt, lsn, None).await
    }

    /// [`Shard::queue`] for a statement whose row count (and returned rows) go to
    /// [`Shard::counted`] unchecked, as part of `change`.
    pub(super) async fn queue_counted(
        &mut self,
        stmt: &Stmt,
        lsn: u64,
        change: u64,
    ) -> Result<(), ReplayError> {
        self.queue_as(stmt, lsn, Some(change)).await
    }

    async fn queue_as(
        &mut self,
        stmt: &Stmt,
        lsn: u64,
        counted: Option<u64>,
    ) -> Result<(), ReplayError> {
        let known = self
            .statements
            .get(&*stmt.sql)
            .and_then(|v| v.iter().find(|(t, _)| **t == *stmt.types))
            .map(|(_, n)| n.clone());
        let name = match known {
            Some(n) => n,
            None => {
                let name = format!("pgdog_replay_{}", self.prepared);
                self.prepared += 1;
                let m = message::parse(&name, &stmt.sql, &stmt.types);
                self.out.extend_from_slice(m.bytes());
                self.statements
                    .entry(stmt.sql.clone())
                    .or_default()
                    .push((stmt.types.clone(), name.clone()));
                name
            }
        };
        let bind = message::build(b'B', |b| {
            put_cstr(b, "");
            put_cstr(b, &name);
            b.put_i16(0);
            b.put_i16(stmt.params.len() as i16);
            for p in &stmt.params {
                match p {
                    Some(v) => {
                        b.put_i32(v.len() as i32);
                        b.extend_from_slice(v);
                    }
                    None => b.put_i32(-1),
                }
            }
            b.put_i16(0);
        });
        let execute = message::build(b'E', |b| {
            put_cstr(b, "");
            b.put_i32(0);
        });
        self.out.extend_from_slice(bind.bytes());
        self.out.extend_from_slice(execute.bytes());
        self.in_flight.push_back(Some(Sent {
            stmt: stmt.clone(),
            lsn,
            counted,
        }));
        self.queued += 1;
        if self.queued >= SYNC_EVERY {
            self.sync(lsn).await?;
        } else if self.out.len() >= FLUSH_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    /// Queues a Sync and sends everything queued; its results are read later
    /// ([`Shard::read_pending`]).
    pub(super) async fn send_sync(&mut self) -> Result<(), ReplayError> {
        self.out.extend_from_slice(message::sync().bytes());
        self.in_flight.push_back(None);
        self.queued = 0;
        self.pending_syncs += 1;
        self.flush().await
    }

    /// Sends a simple Query (outside the extended-protocol statements: e.g. PREPARE
    /// TRANSACTION with its unique gid); its results are read with the pending Syncs'.
    pub(super) async fn send_query(&mut self, sql: &str) -> Result<(), ReplayError> {
        self.out.extend_from_slice(message::query(sql).bytes());
        self.in_flight.push_back(Some(Sent {
            stmt: plain(sql),
            lsn: 0,
            counted: None,
        }));
        self.in_flight.push_back(None);
        self.pending_syncs += 1;
        self.flush().await
    }

    /// An intermediate Sync inside the open transaction; then the results of the previous
    /// one are read (at most two Syncs' results are pending: the server keeps executing while
    /// this side reads, and neither side's socket buffer fills up).
    pub(super) async fn sync(&mut self, lsn: u64) -> Result<(), ReplayError> {
        self.send_sync().await?;
        while self.pending_syncs > 1 {
            self.pending_syncs -= 1;
            self.sync_read(lsn, false).await?;
        }
        Ok(())
    }

    /// Reads the results of every Sync sent; with `committed`, the last one must leave the
    /// connection outside a transaction.
    pub(super) async fn read_pending(
        &mut self,
        lsn: u64,
        committed: bool,
    ) -> Result<(), ReplayError> {
        while self.pending_syncs > 0 {
            self.pending_syncs -= 1;
            self.sync_read(lsn, committed && self.pending_syncs == 0)
                .await?;
        }
        Ok(())
    }
}

impl Shard {
    /// The statement the next result answers, described (empty when none).
    fn answered(&mut self) -> String {
        match self.in_flight.pop_front() {
            Some(Some(sent)) => sent.describe(),
            _ => String::new(),
        }
    }

    /// Reads the results up to a Sync already sent: the first error, or an UPDATE/DELETE that
    /// matched no row (the destination diverged from the source), fails the replay. The
    /// outcomes of counted statements go to [`Shard::counted`].
    pub(super) async fn sync_read(&mut self, lsn: u64, committed: bool) -> Result<(), ReplayError> {
        let ctx = self.context(&format!(
            "committing the transaction at {}",
            format_lsn(lsn)
        ));
        let mut error = None;
        loop {
            let m = self.server.read().await.map_err(lost(ctx.clone()))?;
            match m.tag() {
                backend::ERROR_RESPONSE if error.is_none() => {
                    let what = self.answered();
                    error = Some(format!("{}{what}", postgres_error(&self.addr, m)));
                }
                backend::DATA_ROW if error.is_none() => {
                    let row = DataRow::parse(m).map_err(|e| other(format!("{ctx}: {e}")))?;
                    self.returned.push(row);
                }
                backend::COMMAND_COMPLETE if error.is_none() => {
                    let tag = m.reader().cstr().unwrap_or("").to_string();
                    let returned = std::mem::take(&mut self.returned);
                    match self.in_flight.pop_front().flatten() {
                        Some(Sent {
                            counted: Some(change),
                            ..
                        }) => self.counted.push(Counted {
                            change,
                            rows: rows_in_tag(&tag),
                            returned,
                        }),
                        Some(sent) if tag == "UPDATE 0" || tag == "DELETE 0" => {
                            error = Some(format!(
                                "{tag}: the row is missing on this shard (the destination \
                                 diverged from the source){}; nothing of this batch was \
                                 committed and the position was kept",
                                sent.describe()
                            ));
                        }
                        _ => {}
                    }
                }
                backend::READY_FOR_QUERY => {
                    // The rest of this group was skipped after an error.
                    while let Some(Some(_)) = self.in_flight.pop_front() {}
                    self.returned.clear();
                    if committed && m.payload().first() != Some(&b'I') && error.is_none() {
                        error = Some("the transaction did not commit".into());
                    }
                    break;
                }
                _ => {}
            }
        }
        match error {
            Some(e) => Err(other(format!("{ctx}: {e}"))),
            None => Ok(()),
        }
    }
}

pub(super) async fn rows(
    server: &mut Server,
    addr: &str,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, ReplayError> {
    server
        .query_rows(sql)
        .await
        .map_err(|e| ReplayError::Copy(server_err(addr, sql)(e)))
}

/// A statement prepared on a destination connection: its parameter types and its name.
pub(super) type Prepared = (Arc<[i32]>, String);

/// Reads the destination shards' progress for one source shard's key: per table, its watermark
/// on each destination shard, and each shard's stored position.
pub(super) async fn open_destination(
    dests: &[ServerTarget],
    key: &str,
) -> Result<(Vec<Shard>, HashMap<String, Vec<Option<u64>>>), ReplayError> {
    let key_lit = literal(key);
    let mut shards = Vec::with_capacity(dests.len());
    let mut watermarks: HashMap<String, Vec<Option<u64>>> = HashMap::new();
    for (index, t) in dests.iter().enumerate() {
        let addr = t.addr();
        let mut server = connect(t).await?;
        server
            .execute(crate::reshard::copy_stream::LONG_SESSION)
            .await
            .map_err(|e| ReplayError::Copy(server_err(&addr, "turning timeouts off")(e)))?;
        crate::reshard::copy_stream::replica_role(&mut server, &addr).await;
        server
            .execute(PROGRESS_DDL)
            .await
            .map_err(|e| ReplayError::Copy(server_err(&addr, "creating the progress tables")(e)))?;
        let sql = format!(
            "SELECT table_name, watermark::text FROM pgdog_reshard_progress WHERE slot = {key_lit}"
        );
        for r in rows(&mut server, &addr, &sql).await? {
            // A key range planned but not copied yet has no watermark: kept, so the replay
            // knows the table's ranges and refuses it until they are all copied.
            if let [Some(table), lsn] = r.as_slice() {
                let lsn = match lsn {
                    Some(l) => Some(
                        parse_lsn(l)
                            .ok_or_else(|| other(format!("bad watermark {l} for {table}")))?,
                    ),
                    None => None,
                };
                watermarks
                    .entry(table.clone())
                    .or_insert_with(|| vec![None; dests.len()])[index] = lsn;
            }
        }
        let sql = format!("SELECT lsn::text FROM pgdog_reshard_position WHERE slot = {key_lit}");
        let position = match rows(&mut server, &addr, &sql).await?.first() {
            Some(r) => match r.first() {
                Some(Some(lsn)) => {
                    parse_lsn(lsn).ok_or_else(|| other(format!("bad position {lsn}")))?
                }
                _ => 0,
            },
            None => 0,
        };
        shards.push(Shard {
            index,
            addr,
            server,
            statements: HashMap::new(),
            prepared: 0,
            position,
            out: BytesMut::new(),
            queued: 0,
            pending_syncs: 0,
            in_flight: VecDeque::new(),
            counted: Vec::new(),
            returned: Vec::new(),
        });
    }
    if watermarks.is_empty() {
        return Err(other(format!(
            "no copy watermarks for {key} on the destination ({}): run `pgdog copy-data --slot` \
             first",
            dests.first().map(|d| d.addr()).unwrap_or_default()
        )));
    }
    Ok((shards, watermarks))
}
