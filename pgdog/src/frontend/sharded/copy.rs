//! COPY on a sharded database. `COPY ... FROM STDIN` into a sharded table: the statement goes to
//! every shard, each row of the client's data to the shard its key belongs to (text, CSV and
//! binary), all inside one transaction per shard so a bad row rolls back every shard.
//! `COPY ... TO STDOUT`: every shard's rows, one after the other, as one COPY (one header, one
//! binary trailer, counts added up).
use super::{in_client_encoding, ClientError, ShardedSession};
use crate::backend::ServerError;
use crate::net::message;
use crate::net::quote::ident as quote_ident;
use crate::net::tag::{backend, frontend};
use crate::net::Message;
use crate::net::TxStatus;
use crate::router::copy::{
    parse_copy, place_key, CopyError, CopyFormat, CopySplitter, CopyStatement, KeyField,
};
use crate::router::schema::TableSharding;
use crate::router::{QueryCache, Route};
use bytes::BytesMut;

/// Where COPY FROM rows go.
enum Destination {
    /// Every row to every listed shard (omnisharded tables, or one shard chosen by override).
    Everywhere(Vec<usize>),
    /// Each row to the shard of its key (column index in the data).
    ByKey(Box<TableSharding>, usize),
}

impl ShardedSession {
    pub(super) async fn copy(&mut self, sql: &str, from: bool) -> Result<(), ClientError> {
        let stmt = parse_copy(sql).map_err(|e| ClientError::new(e.code(), e.to_string()))?;
        if !stmt.stdio {
            return Err(ClientError::new(
                "0A000",
                "COPY to or from a server file or program is not supported on sharded databases: use STDIN/STDOUT",
            ));
        }
        if from && !self.client.codec.is_utf8() {
            return Err(ClientError::new(
                "0A000",
                "COPY FROM STDIN on a sharded database needs client_encoding UTF8: pgdog routes its rows by their text",
            ));
        }
        if from {
            let dest = self.copy_destination(&stmt).await?;
            let implicit = self.begin_implicit();
            let result = self.copy_in(sql, &stmt, dest).await;
            self.end_implicit(implicit, result).await
        } else {
            let shards = match self.overrides.shard.or(self.schema_copy_shard(&stmt)) {
                Some(s) => vec![s],
                None if stmt.query => self.copy_query_shards(sql).await?,
                None if self.router.schema.is_omnisharded(&stmt.table) => vec![0],
                None => (0..self.shards.len()).collect(),
            };
            self.copy_out(sql, &stmt, &shards).await
        }
    }

    /// `COPY (query) TO STDOUT`: the shards the router sends the query to. Their rows are
    /// streamed one shard after the other, so a query whose rows need merging across shards
    /// (ORDER BY, aggregates, DISTINCT, LIMIT...) is refused rather than answered wrongly.
    async fn copy_query_shards(&mut self, sql: &str) -> Result<Vec<usize>, ClientError> {
        let inner = copy_inner_query(sql)?;
        let parsed = QueryCache::global().get(inner)?;
        match self.route(&parsed, 0, inner, None).await? {
            Route::Shard(s) => Ok(vec![s]),
            Route::Multi { shards, plan, .. }
                if plan
                    .as_ref()
                    .is_none_or(|p| p.shard_sql.is_none() && p.merge.is_passthrough()) =>
            {
                Ok(shards)
            }
            _ => Err(ClientError::new(
                "0A000",
                "COPY (query) TO STDOUT whose rows must be merged across shards (ORDER BY, aggregates, DISTINCT, LIMIT...) is not supported: run the query as a SELECT, or SET pgdog.shard",
            )),
        }
    }

    /// Schema-based sharding: the shard of a COPY's table, by its schema or the search_path's
    /// (`None`: the table has its own entry, or schemas are not sharded).
    fn schema_copy_shard(&self, stmt: &CopyStatement) -> Option<usize> {
        let schema = &self.router.schema;
        if schema.schemas.is_empty() || schema.table(&stmt.table).is_some() {
            return None;
        }
        let named = match &stmt.schema {
            Some(s) => Some(s.clone()),
            None => self
                .overrides
                .search_path
                .iter()
                .find(|s| schema.schemas.named.contains_key(s.as_str()))
                .cloned(),
        };
        match named {
            Some(n) => schema.schemas.shard_of_listed(&n),
            None => schema.schemas.default,
        }
    }

    async fn copy_destination(&mut self, stmt: &CopyStatement) -> Result<Destination, ClientError> {
        if let Some(s) = self.overrides.shard {
            return Ok(Destination::Everywhere(vec![s]));
        }
        let schema = self.router.schema.clone();
        if schema.is_omnisharded(&stmt.table) {
            return Ok(Destination::Everywhere((0..self.shards.len()).collect()));
        }
        if let Some(s) = self.schema_copy_shard(stmt) {
            return Ok(Destination::Everywhere(vec![s]));
        }
        let columns: Vec<&str> = stmt.columns.iter().map(|c| c.as_str()).collect();
        let table = schema
            .table(&stmt.table)
            .or_else(|| columns.iter().find_map(|c| schema.by_column(c)))
            .cloned();
        let Some(table) = table else {
            return Err(ClientError::new(
                "0A000",
                format!(
                    "COPY into table \"{}\", which is neither sharded nor omnisharded: add it to [[sharded_tables]] or [[omnisharded_tables]], or SET pgdog.shard",
                    stmt.table
                ),
            ));
        };
        let columns: Vec<String> = if stmt.columns.is_empty() {
            self.table_columns(stmt.schema.as_deref(), &stmt.table)
                .await?
        } else {
            stmt.columns.clone()
        };
        let Some(index) = columns.iter().position(|c| c == table.column()) else {
            return Err(ClientError::new(
                "0A000",
                format!(
                    "COPY into sharded table \"{}\" must include the sharding key column \"{}\"",
                    stmt.table,
                    table.column()
                ),
            ));
        };
        Ok(Destination::ByKey(Box::new(table), index))
    }

    /// The table's columns in order, read from shard 0.
    pub(super) async fn table_columns(
        &mut self,
        schema: Option<&str>,
        table: &str,
    ) -> Result<Vec<String>, ClientError> {
        let name = match schema {
            Some(s) => format!("{}.{}", quote_ident(s), quote_ident(table)),
            None => quote_ident(table),
        };
        let sql = format!(
            "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_catalog.pg_attribute WHERE attrelid = {}::regclass AND attnum > 0 AND NOT attisdropped",
            crate::net::quote::literal(&name)
        );
        let server = self.server(0).await?;
        let row = server.query_row(&sql).await?;
        Ok(row
            .into_iter()
            .next()
            .flatten()
            .map(|s| s.split(',').map(|c| c.to_string()).collect())
            .unwrap_or_default())
    }

    /// Starts the COPY on every shard in `shards`; each answers CopyInResponse (the first is
    /// returned for the client) or an error (then the shards that started are stopped).
    async fn start_copy_in(&mut self, sql: &str, shards: &[usize]) -> Result<Message, ClientError> {
        let mut copy_in_response: Option<Message> = None;
        for &shard in shards {
            let text = in_client_encoding(self.client.codec, sql)?;
            let server = self.server(shard).await?;
            server.write(&message::query_bytes(&text)).await?;
            loop {
                let m = server.read().await?;
                match m.tag() {
                    backend::COPY_IN_RESPONSE => {
                        copy_in_response.get_or_insert(m);
                        break;
                    }
                    backend::ERROR_RESPONSE => {
                        let e = ClientError::from(ServerError::Postgres(
                            message::read_error(&m)
                                .map_err(|e| ClientError::new("08P01", e.to_string()))?,
                            m,
                        ));
                        // Drain to ReadyForQuery, then stop the COPY on the shards that started.
                        match server.read_until_ready().await {
                            Ok(()) | Err(ServerError::Postgres(..)) => {}
                            Err(lost) => return Err(lost.into()),
                        }
                        self.abort_copy(shards, shard).await;
                        return Err(e);
                    }
                    _ => {}
                }
            }
        }
        copy_in_response.ok_or_else(|| ClientError::new("XX000", "no shard started the COPY"))
    }

    /// Reads the client's CopyData until CopyDone or CopyFail, splitting rows by key (or
    /// copying them to every shard) and sending the buffers as they fill; the failure, if any.
    async fn relay_copy_data(
        &mut self,
        stmt: &CopyStatement,
        dest: &Destination,
        shards: &[usize],
    ) -> Option<ClientError> {
        let n = self.shards.len();
        let mut buffers: Vec<BytesMut> = (0..n).map(|_| BytesMut::new()).collect();
        let (mut splitter, table) = match dest {
            Destination::ByKey(t, index) => (
                Some(
                    CopySplitter::new(&stmt.options, *index, n)
                        .with_context(&stmt.table, t.column()),
                ),
                Some((**t).clone()),
            ),
            Destination::Everywhere(_) => (None, None),
        };
        let mut place = |field: KeyField<'_>| place_key(table.as_ref(), field);
        let key_error = |e: CopyError| ClientError::new(e.code(), e.to_string());
        loop {
            let m = match self.client.reader.next(&mut self.client.stream).await {
                Ok(m) => m,
                Err(e) => {
                    return Some(ClientError::new("08006", format!("client connection: {e}")))
                }
            };
            if let Some(tap) = self.mirror.as_mut() {
                tap.message(&m);
            }
            match m.tag() {
                frontend::COPY_DATA => {
                    let data = &m.payload();
                    match splitter.as_mut() {
                        Some(sp) => {
                            if let Err(e) = sp.feed(data, &mut place, &mut buffers) {
                                return Some(key_error(e));
                            }
                        }
                        None => {
                            for &s in shards {
                                buffers[s].extend_from_slice(data);
                            }
                        }
                    }
                    if buffers.iter().any(|b| b.len() >= 64 * 1024) {
                        if let Err(e) = self.send_copy_data(&mut buffers).await {
                            return Some(e);
                        }
                    }
                }
                frontend::COPY_DONE => {
                    if let Some(sp) = splitter.as_mut() {
                        if let Err(e) = sp.finish(&mut place, &mut buffers) {
                            return Some(key_error(e));
                        }
                    }
                    return self.send_copy_data(&mut buffers).await.err();
                }
                frontend::COPY_FAIL => {
                    let reason = m.reader().cstr().unwrap_or("").to_string();
                    return Some(ClientError::new(
                        "57014",
                        format!("COPY from stdin failed: {reason}"),
                    ));
                }
                // Flush and Sync are ignored during COPY, as Postgres does.
                frontend::FLUSH | frontend::SYNC => {}
                other => {
                    // Postgres ends such a session: its requests and replies are out of step.
                    self.out_of_step = true;
                    return Some(ClientError::new(
                        "08P01",
                        format!("unexpected message type 0x{other:02X} during COPY from stdin"),
                    ));
                }
            }
        }
    }

    /// Ends the COPY on every shard (CopyDone, or CopyFail with `failure`'s message) and reads
    /// each one's answer: the rows copied in all, or the first error.
    async fn end_copy_in(
        &mut self,
        shards: &[usize],
        failure: Option<&ClientError>,
    ) -> Result<u64, ClientError> {
        let end = match failure {
            None => message::empty(b'c'),
            Some(e) => message::build(b'f', |b| message::put_cstr(b, &e.message)),
        };
        let mut outcome = CopyOutcome::default();
        for &shard in shards {
            let Some(server) = self.servers[shard].as_mut() else {
                continue;
            };
            if let Err(e) = server.write(&end).await {
                outcome.error.get_or_insert(self.lose(shard, &e));
                continue;
            }
            loop {
                let m = match server.read().await {
                    Ok(m) => m,
                    Err(e) => {
                        outcome.error.get_or_insert(self.lose(shard, &e));
                        break;
                    }
                };
                if !outcome.note(&m) && m.tag() == backend::READY_FOR_QUERY {
                    server.status = TxStatus::of(&m);
                    break;
                }
            }
        }
        outcome.result()
    }

    async fn copy_in(
        &mut self,
        sql: &str,
        stmt: &CopyStatement,
        dest: Destination,
    ) -> Result<(), ClientError> {
        let shards: Vec<usize> = match &dest {
            Destination::Everywhere(s) => s.clone(),
            Destination::ByKey(..) => (0..self.shards.len()).collect(),
        };
        let response = self.start_copy_in(sql, &shards).await?;
        self.send(&response);
        self.flush()
            .await
            .map_err(|e| ClientError::new("08006", e.to_string()))?;
        let failure = self.relay_copy_data(stmt, &dest, &shards).await;
        let ended = self.end_copy_in(&shards, failure.as_ref()).await;
        if let Some(e) = failure {
            return Err(e);
        }
        let total = ended?;
        self.send(&message::command_complete(&format!("COPY {total}")));
        Ok(())
    }

    async fn send_copy_data(&mut self, buffers: &mut [BytesMut]) -> Result<(), ClientError> {
        for (shard, buf) in buffers.iter_mut().enumerate() {
            if buf.is_empty() {
                continue;
            }
            let data = buf.split();
            let m = message::build(b'd', |b| b.extend_from_slice(&data));
            let r = match self.servers[shard].as_mut() {
                Some(server) => server.write(&m).await,
                None => continue,
            };
            if let Err(e) = r {
                return Err(self.lose(shard, &e));
            }
        }
        Ok(())
    }

    /// Stops a COPY FROM that started on some shards but failed on `failed`.
    async fn abort_copy(&mut self, shards: &[usize], failed: usize) {
        let fail = message::build(b'f', |b| {
            message::put_cstr(b, "COPY failed on another shard")
        });
        for &shard in shards {
            if shard == failed {
                continue;
            }
            let Some(server) = self.servers[shard].as_mut() else {
                continue;
            };
            if server.write(&fail).await.is_err() {
                server.discard();
                continue;
            }
            // CopyFail's error is expected; only a lost connection matters.
            if let Err(e) = server.read_until_ready().await {
                if !matches!(e, ServerError::Postgres(..)) {
                    server.discard();
                }
            }
        }
    }

    async fn copy_out(
        &mut self,
        sql: &str,
        stmt: &CopyStatement,
        shards: &[usize],
    ) -> Result<(), ClientError> {
        for &shard in shards {
            let text = in_client_encoding(self.client.codec, sql)?;
            let server = self.server(shard).await?;
            server.write(&message::query_bytes(&text)).await?;
        }
        let binary = stmt.options.format == CopyFormat::Binary;
        let csv_header = stmt.options.format == CopyFormat::Csv && stmt.options.header;
        let mut outcome = CopyOutcome::default();
        let mut started = false;
        for (i, &shard) in shards.iter().enumerate() {
            let last = i + 1 == shards.len();
            let mut first_data = true;
            while let Some(s) = self.servers[shard].as_mut() {
                let r = s.read().await;
                let m = match r {
                    Ok(m) => m,
                    Err(e) => {
                        outcome.error.get_or_insert(self.lose(shard, &e));
                        break;
                    }
                };
                if outcome.note(&m) {
                    continue;
                }
                match m.tag() {
                    backend::COPY_OUT_RESPONSE if !started => {
                        self.send(&m);
                        started = true;
                    }
                    backend::COPY_OUT_RESPONSE => {}
                    backend::COPY_DATA => {
                        let data = m.payload();
                        let mut payload: &[u8] = data;
                        if first_data && i > 0 {
                            if binary {
                                payload = skip_binary_header(payload);
                            } else if csv_header {
                                payload = &[];
                            }
                        }
                        first_data = false;
                        if binary && !last && payload == [0xff, 0xff] {
                            payload = &[];
                        }
                        if !payload.is_empty() {
                            if payload.len() == data.len() {
                                self.send(&m);
                            } else {
                                let p = payload.to_vec();
                                self.send(&message::build(b'd', |b| b.extend_from_slice(&p)));
                            }
                        }
                    }
                    backend::COPY_DONE => {}
                    backend::READY_FOR_QUERY => {
                        if let Some(s) = self.servers[shard].as_mut() {
                            s.status = TxStatus::of(&m);
                        }
                        break;
                    }
                    backend::NOTICE_RESPONSE => self.send(&m),
                    _ => {}
                }
                if self.client.out.len() > 64 * 1024 {
                    let _ = self.flush().await;
                }
            }
        }
        let total = outcome.result()?;
        self.send(&message::empty(b'c'));
        self.send(&message::command_complete(&format!("COPY {total}")));
        Ok(())
    }
}

/// What the shards answered to a COPY: the rows copied in all and the first error.
#[derive(Default)]
struct CopyOutcome {
    rows: u64,
    error: Option<ClientError>,
}

impl CopyOutcome {
    /// Counts a CommandComplete, keeps the first ErrorResponse; false for any other message.
    fn note(&mut self, m: &Message) -> bool {
        match m.tag() {
            backend::COMMAND_COMPLETE => self.rows += message::rows_completed(m),
            backend::ERROR_RESPONSE => {
                if let Some(e) = ClientError::from_response(m) {
                    self.error.get_or_insert(e);
                }
            }
            _ => return false,
        }
        true
    }

    fn result(self) -> Result<u64, ClientError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.rows),
        }
    }
}

/// The text of the query of `COPY (query) TO ...`: between the parenthesis after COPY and
/// its match, found with Postgres' scanner (so parentheses in strings and comments count not).
fn copy_inner_query(sql: &str) -> Result<&str, ClientError> {
    let scanned = pg_query_raw::scan(sql).map_err(|e| ClientError::new("42601", e.to_string()))?;
    let mut depth = 0usize;
    let mut open = None;
    for t in &scanned.tokens {
        let text = sql.get(t.start as usize..t.end as usize).unwrap_or("");
        match text {
            "(" => {
                depth += 1;
                open.get_or_insert(t.end as usize);
            }
            ")" if depth == 1 => {
                if let Some(inner) = open.and_then(|o| sql.get(o..t.start as usize)) {
                    return Ok(inner);
                }
            }
            ")" => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Err(ClientError::new("42601", "COPY (query): no query found"))
}

/// Binary COPY data without its file header (signature, flags, extension).
fn skip_binary_header(data: &[u8]) -> &[u8] {
    const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";
    if data.len() < 19 || !data.starts_with(SIGNATURE) {
        return data;
    }
    let ext = u32::from_be_bytes([data[15], data[16], data[17], data[18]]) as usize;
    data.get(19 + ext..).unwrap_or(&[])
}
