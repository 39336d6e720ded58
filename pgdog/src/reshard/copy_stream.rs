//! The data path of one (table, source shard) copy: one or more readers, each running
//! `COPY ... TO STDOUT (FORMAT binary|text)` (the whole table, or one CTID range of it) under
//! the same exported snapshot, split their rows by destination shard with their own
//! [`CopySplitter`] and send them through channels to ONE writer per destination shard, which
//! feeds a single `COPY ... FROM STDIN` in the same format inside its transaction.
//!
//! Binary COPY framing: every reader's output has its own file header and trailer. Readers
//! strip both; each writer sends exactly one header first and one trailer last. Text COPY has
//! no framing (`COPY TO` writes no `\.` end marker): rows pass through as they are. In text
//! format both ends first run [`TEXT_SESSION`], so every value is printed and parsed with the
//! same settings.
use crate::backend::server::{Server, ServerTarget};
use crate::net::message::{self, Message};
use crate::net::tag::backend;
use crate::reshard::copy::{connect, postgres_error, server_err, CopyDataError, Destination};
use crate::reshard::progress::Progress;
use crate::router::copy::{place_key, CopyFormat, CopyOptions, CopySplitter, KeyField};
use bytes::{Bytes, BytesMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The binary COPY file header without extension: signature, flags 0, extension length 0.
pub(crate) const BINARY_HEADER: [u8; 19] = *b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The binary COPY file trailer: a field count of -1.
pub(crate) const BINARY_TRAILER: [u8; 2] = [0xff, 0xff];
/// Session settings both ends of a text COPY run before it: the text form of dates, intervals,
/// floats, bytea and money depends on them (the same ones `pg_dump` fixes), and the bytes are
/// UTF-8 on the wire whatever the databases' encodings.
pub(crate) const TEXT_SESSION: &str =
    "SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; \
    SET extra_float_digits = 3; SET TimeZone = 'UTC'; SET bytea_output = 'hex'; \
    SET client_encoding = 'UTF8'; SET lc_monetary = 'C'";
/// What every copy and replay session runs first: no timeout of the user's or the database's
/// ends a long COPY or its transaction (`transaction_timeout` only where it exists, PG17+).
pub(crate) const LONG_SESSION: &str = "SELECT pg_catalog.set_config(name, '0', false) \
    FROM pg_catalog.pg_settings WHERE name IN ('statement_timeout', \
    'idle_in_transaction_session_timeout', 'transaction_timeout')";
/// Destination sessions of the copy and the replay: triggers and foreign keys do not fire, as
/// in logical replication's apply workers (the rows were checked where they were written).
const REPLICA_ROLE: &str = "SET session_replication_role = replica";
/// Buffered bytes for one shard before they are handed to its writer.
const FLUSH_BYTES: usize = 64 * 1024;
/// Source bytes read by one reader between two progress updates.
const PROGRESS_BYTES: u64 = 1024 * 1024;
/// Buffers queued per writer before readers wait.
pub(crate) const CHANNEL_DEPTH: usize = 16;

/// The pages a reader scans: `[start, end)` in blocks, `None` = unbounded on that side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockRange {
    pub start: Option<u64>,
    pub end: Option<u64>,
}

/// `n` ranges covering a table of `blocks` pages; the first is open at its start and the last
/// open at its end, so pages added after the size was read are still covered.
pub(crate) fn block_ranges(blocks: u64, n: usize) -> Vec<BlockRange> {
    let n = (n.max(1) as u64).min(blocks.max(1));
    (0..n)
        .map(|i| BlockRange {
            start: (i > 0).then(|| blocks * i / n),
            end: (i + 1 < n).then(|| blocks * (i + 1) / n),
        })
        .collect()
}

/// The `FORMAT` option of a COPY in `format` (binary or text).
pub(crate) fn format_option(format: CopyFormat) -> &'static str {
    match format {
        CopyFormat::Binary => "binary",
        CopyFormat::Text => "text",
        CopyFormat::Csv => "csv",
    }
}

/// `COPY` of `columns` of `table` (SQL names), the whole table or one CTID range, in `format`.
pub(crate) fn copy_out_sql(
    table: &str,
    columns: &str,
    range: Option<BlockRange>,
    format: CopyFormat,
) -> String {
    let format = format_option(format);
    let Some(range) = range else {
        return format!("COPY {table} ({columns}) TO STDOUT (FORMAT {format})");
    };
    let mut conditions = Vec::new();
    if let Some(start) = range.start {
        conditions.push(format!("ctid >= '({start},0)'::tid"));
    }
    if let Some(end) = range.end {
        conditions.push(format!("ctid < '({end},0)'::tid"));
    }
    if conditions.is_empty() {
        return format!("COPY {table} ({columns}) TO STDOUT (FORMAT {format})");
    }
    format!(
        "COPY (SELECT {columns} FROM ONLY {table} WHERE {}) TO STDOUT (FORMAT {format})",
        conditions.join(" AND ")
    )
}

/// A connection to the source inside a `REPEATABLE READ` transaction under `snapshot`, set up
/// for a COPY in `format`.
pub(crate) async fn snapshot_reader(
    source: &ServerTarget,
    snapshot: &str,
    format: CopyFormat,
) -> Result<Server, CopyDataError> {
    let mut reader = connect(source).await?;
    prepare_reader(&mut reader, &source.addr(), snapshot, format).await?;
    Ok(reader)
}

/// Runs [`LONG_SESSION`], and [`TEXT_SESSION`] when `format` is text (before the transaction:
/// they stay for the session).
async fn prepare_session(
    server: &mut Server,
    addr: &str,
    format: CopyFormat,
) -> Result<(), CopyDataError> {
    server
        .execute(LONG_SESSION)
        .await
        .map_err(server_err(addr, "turning the session's timeouts off"))?;
    if format == CopyFormat::Binary {
        return Ok(());
    }
    server
        .execute(TEXT_SESSION)
        .await
        .map_err(server_err(addr, "setting up the text COPY session"))
}

/// Turns triggers and foreign keys off on a destination session ([`REPLICA_ROLE`]). Where its
/// user may not, they stay on: `pgdog reshard --check` said so, and the log says it again.
pub(crate) async fn replica_role(server: &mut Server, addr: &str) {
    if let Err(e) = server.execute(REPLICA_ROLE).await {
        tracing::warn!(
            "{addr}: triggers and foreign keys stay on for the copy and the replay ({REPLICA_ROLE}: {e})"
        );
    }
}

/// Sets the session up for `format`, then starts the snapshot transaction on an open
/// connection.
pub(crate) async fn prepare_reader(
    reader: &mut Server,
    addr: &str,
    snapshot: &str,
    format: CopyFormat,
) -> Result<(), CopyDataError> {
    prepare_session(reader, addr, format).await?;
    reader
        .execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(server_err(addr, "BEGIN"))?;
    reader
        .execute(&format!(
            "SET TRANSACTION SNAPSHOT {}",
            crate::reshard::copy::literal(snapshot)
        ))
        .await
        .map_err(server_err(addr, "SET TRANSACTION SNAPSHOT"))?;
    Ok(())
}

/// Rows and bytes read so far by all readers of one copy, for the progress display.
#[derive(Default)]
pub(crate) struct Counters {
    rows: AtomicU64,
    bytes: AtomicU64,
}

impl Counters {
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// Where a reader publishes its progress.
#[derive(Clone)]
pub(crate) struct Tracker {
    pub counters: Arc<Counters>,
    pub progress: Option<(Arc<Progress>, usize)>,
}

impl Tracker {
    fn add(&self, rows: u64, bytes: u64) {
        let rows = self.counters.rows.fetch_add(rows, Ordering::Relaxed) + rows;
        let bytes = self.counters.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if let Some((p, i)) = &self.progress {
            p.update_table(*i, |t| {
                t.rows = t.rows.max(rows);
                t.bytes = t.bytes.max(bytes);
            });
        }
    }
}

/// What one reader read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReadCount {
    /// From the source's `COPY n`.
    pub source_rows: u64,
    /// Rows the splitter placed.
    pub placed_rows: u64,
}

/// One reader: its connection (already under the snapshot), its COPY and where rows go.
pub(crate) struct Reader {
    pub server: Server,
    pub addr: String,
    pub sql: String,
    /// The COPY's data format (that of `sql`).
    pub format: CopyFormat,
    /// The table's name (for errors).
    pub table: String,
    pub dest: Destination,
    /// Destination shards whose rows stay where they are (the source's own server): nothing
    /// is sent there (empty: none).
    pub stays: Arc<[bool]>,
    /// One sender per destination shard; `None` for shards not written by this run.
    pub senders: Vec<Option<mpsc::Sender<Bytes>>>,
    pub tracker: Tracker,
}

/// Test hook (`FAILPOINTS=reshard-copy-pause=N*return(MS)`): a reader waits MS ms before its
/// COPY, in its snapshot transaction on the source, the destination's COPY already open, so a
/// test can restart a server under a copy.
async fn copy_pause() {
    if let Some(ms) = copy_pause_ms() {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

fn copy_pause_ms() -> Option<u64> {
    fail::fail_point!("reshard-copy-pause", |ms| ms.and_then(|m| m.parse().ok()));
    None
}

impl Reader {
    /// Reads its COPY to the end, sending each shard's rows (binary: without header and
    /// trailer) to that shard's writer. The connection is closed at the end (its transaction
    /// only read).
    pub(crate) async fn run(mut self) -> Result<ReadCount, CopyDataError> {
        let shards = self.senders.len();
        let binary = self.format == CopyFormat::Binary;
        let options = CopyOptions::for_format(self.format);
        // Omnisharded rows are parsed too (one "shard"), to frame them and count them.
        let (mut splitter, sharding, outputs) = match &self.dest {
            Destination::ByKey(t, key) => (
                CopySplitter::new(&options, *key, shards).with_context(&self.table, t.column()),
                Some((**t).clone()),
                shards,
            ),
            Destination::Everywhere | Destination::OneShard(_) => {
                (CopySplitter::new(&options, 0, 1), None, 1)
            }
        };
        let mut place = |field: KeyField<'_>| place_key(sharding.as_ref(), field);
        let mut buffers: Vec<BytesMut> = (0..outputs).map(|_| BytesMut::new()).collect();
        let table_err = |reason: String| CopyDataError::Table {
            table: self.table.clone(),
            reason,
        };

        copy_pause().await;
        self.server
            .write(&message::query(&self.sql))
            .await
            .map_err(server_err(&self.addr, &self.sql))?;
        let mut source_rows = 0u64;
        let mut error: Option<CopyDataError> = None;
        // Text has no header to strip.
        let mut header_stripped = !binary;
        let (mut bytes, mut reported_bytes, mut reported_rows) = (0u64, 0u64, 0u64);
        loop {
            let m: Message = self
                .server
                .read()
                .await
                .map_err(server_err(&self.addr, &self.sql))?;
            match m.tag() {
                backend::COPY_DATA if error.is_none() => {
                    let data = m.payload();
                    bytes += data.len() as u64;
                    if let Err(e) = splitter.feed(data, &mut place, &mut buffers) {
                        error = Some(table_err(e.to_string()));
                        continue;
                    }
                    if !header_stripped && !buffers[0].is_empty() {
                        strip_header(&mut buffers).map_err(&table_err)?;
                        header_stripped = true;
                    }
                    self.flush(&mut buffers, FLUSH_BYTES).await?;
                    if bytes - reported_bytes >= PROGRESS_BYTES {
                        let rows = splitter.rows();
                        self.tracker
                            .add(rows - reported_rows, bytes - reported_bytes);
                        (reported_rows, reported_bytes) = (rows, bytes);
                    }
                }
                backend::COPY_DONE if error.is_none() => {
                    if let Err(e) = splitter.finish(&mut place, &mut buffers) {
                        error = Some(table_err(e.to_string()));
                        continue;
                    }
                    if !header_stripped {
                        strip_header(&mut buffers).map_err(&table_err)?;
                        header_stripped = true;
                    }
                    for buf in buffers.iter_mut().filter(|_| binary) {
                        if !buf.ends_with(&BINARY_TRAILER) {
                            return Err(table_err("the COPY data ended without a trailer".into()));
                        }
                        buf.truncate(buf.len() - BINARY_TRAILER.len());
                    }
                }
                backend::COMMAND_COMPLETE => {
                    source_rows = message::rows_completed(&m);
                }
                backend::ERROR_RESPONSE => {
                    error.get_or_insert(server_err(&self.addr, &self.sql)(postgres_error(
                        &self.addr, m,
                    )));
                }
                backend::READY_FOR_QUERY => break,
                _ => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        self.flush(&mut buffers, 0).await?;
        let rows = splitter.rows();
        self.tracker
            .add(rows - reported_rows, bytes - reported_bytes);
        let _ = self.server.execute("COMMIT").await;
        self.server.terminate().await;
        Ok(ReadCount {
            source_rows,
            placed_rows: rows,
        })
    }

    /// Hands every buffer of at least `min` bytes (and non-empty) to its writer(s).
    async fn flush(&self, buffers: &mut [BytesMut], min: usize) -> Result<(), CopyDataError> {
        if let Destination::Everywhere | Destination::OneShard(_) = self.dest {
            let buf = &mut buffers[0];
            if buf.is_empty() || buf.len() < min {
                return Ok(());
            }
            let data = buf.split().freeze();
            for (shard, tx) in self.senders.iter().enumerate() {
                let wanted = match self.dest {
                    Destination::OneShard(s) => s == shard,
                    _ => true,
                } && !self.stays.get(shard).copied().unwrap_or(false);
                if let (Some(tx), true) = (tx, wanted) {
                    self.send(shard, tx, data.clone()).await?;
                }
            }
            return Ok(());
        }
        for (shard, (buf, tx)) in buffers.iter_mut().zip(&self.senders).enumerate() {
            if buf.is_empty() || buf.len() < min {
                continue;
            }
            match tx {
                Some(tx) if !self.stays.get(shard).copied().unwrap_or(false) => {
                    self.send(shard, tx, buf.split().freeze()).await?
                }
                _ => buf.clear(),
            }
        }
        Ok(())
    }

    async fn send(
        &self,
        shard: usize,
        tx: &mpsc::Sender<Bytes>,
        data: Bytes,
    ) -> Result<(), CopyDataError> {
        tx.send(data).await.map_err(|_| CopyDataError::Table {
            table: self.table.clone(),
            reason: format!("the writer of destination shard {shard} stopped"),
        })
    }
}

/// Removes the binary file header the splitter copied to the start of every buffer.
fn strip_header(buffers: &mut [BytesMut]) -> Result<(), String> {
    for buf in buffers.iter_mut() {
        let extension = buf
            .get(15..19)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or("truncated COPY file header")?;
        let total = BINARY_HEADER.len() + usize::try_from(extension).map_err(|e| e.to_string())?;
        if buf.len() < total {
            return Err("truncated COPY file header".into());
        }
        let _ = buf.split_to(total);
    }
    Ok(())
}

/// A destination shard in `COPY ... FROM STDIN` inside its transaction.
pub(crate) struct Sink {
    pub shard: usize,
    pub addr: String,
    pub server: Server,
    /// The COPY's data format (that of its statement).
    pub format: CopyFormat,
}

impl Sink {
    /// Connects, sets the session up for `format`, begins the transaction and starts `sql`
    /// (a `COPY ... FROM STDIN` in `format`).
    pub(crate) async fn open(
        shard: usize,
        t: &ServerTarget,
        sql: &str,
        format: CopyFormat,
    ) -> Result<Sink, CopyDataError> {
        let addr = t.addr();
        let mut server = connect(t).await?;
        prepare_session(&mut server, &addr, format).await?;
        replica_role(&mut server, &addr).await;
        server
            .execute("BEGIN")
            .await
            .map_err(server_err(&addr, "BEGIN"))?;
        server
            .write(&message::query(sql))
            .await
            .map_err(server_err(&addr, sql))?;
        loop {
            let m = server.read().await.map_err(server_err(&addr, sql))?;
            match m.tag() {
                backend::COPY_IN_RESPONSE => break,
                backend::ERROR_RESPONSE => {
                    return Err(server_err(&addr, sql)(postgres_error(&addr, m)))
                }
                _ => {}
            }
        }
        Ok(Sink {
            shard,
            addr,
            server,
            format,
        })
    }

    async fn send(&mut self, data: &[u8]) -> Result<(), CopyDataError> {
        if data.is_empty() {
            return Ok(());
        }
        let m = message::build(b'd', |b| b.extend_from_slice(data));
        self.server
            .write(&m)
            .await
            .map_err(server_err(&self.addr, "sending COPY data"))
    }

    /// Feeds the COPY: (binary) one header, every buffer received until all readers are done,
    /// (binary) one trailer, then CopyDone and the COPY's result. The transaction stays open.
    pub(crate) async fn write_all(
        mut self,
        mut rx: mpsc::Receiver<Bytes>,
    ) -> Result<Sink, CopyDataError> {
        let binary = self.format == CopyFormat::Binary;
        if binary {
            self.send(&BINARY_HEADER).await?;
        }
        while let Some(data) = rx.recv().await {
            self.send(&data).await?;
        }
        if binary {
            self.send(&BINARY_TRAILER).await?;
        }
        self.done().await?;
        Ok(self)
    }

    /// CopyDone, then the COPY's result.
    async fn done(&mut self) -> Result<(), CopyDataError> {
        let ctx = format!("shard {} COPY FROM STDIN", self.shard);
        self.server
            .write(&message::empty(b'c'))
            .await
            .map_err(server_err(&self.addr, &ctx))?;
        self.server
            .read_until_ready()
            .await
            .map_err(server_err(&self.addr, &ctx))
    }

    pub(crate) async fn commit(mut self) -> Result<(), CopyDataError> {
        let ctx = format!("shard {} COMMIT", self.shard);
        self.server
            .execute("COMMIT")
            .await
            .map_err(server_err(&self.addr, &ctx))?;
        self.server.terminate().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_table() {
        assert_eq!(
            block_ranges(100, 1),
            [BlockRange {
                start: None,
                end: None
            }]
        );
        assert_eq!(
            block_ranges(100, 3),
            [
                BlockRange {
                    start: None,
                    end: Some(33)
                },
                BlockRange {
                    start: Some(33),
                    end: Some(66)
                },
                BlockRange {
                    start: Some(66),
                    end: None
                },
            ]
        );
        // Never more ranges than pages.
        assert_eq!(block_ranges(2, 8).len(), 2);
        assert_eq!(block_ranges(0, 8).len(), 1);
    }

    #[test]
    fn range_statements() {
        assert_eq!(
            copy_out_sql("\"t\"", "\"a\"", None, CopyFormat::Binary),
            "COPY \"t\" (\"a\") TO STDOUT (FORMAT binary)"
        );
        assert_eq!(
            copy_out_sql(
                "\"t\"",
                "\"a\", \"b\"",
                Some(BlockRange {
                    start: Some(10),
                    end: Some(20)
                }),
                CopyFormat::Binary
            ),
            "COPY (SELECT \"a\", \"b\" FROM ONLY \"t\" WHERE ctid >= '(10,0)'::tid AND ctid < '(20,0)'::tid) \
             TO STDOUT (FORMAT binary)"
        );
        assert_eq!(
            copy_out_sql(
                "\"t\"",
                "\"a\"",
                Some(BlockRange {
                    start: None,
                    end: Some(5)
                }),
                CopyFormat::Binary
            ),
            "COPY (SELECT \"a\" FROM ONLY \"t\" WHERE ctid < '(5,0)'::tid) TO STDOUT (FORMAT binary)"
        );
        assert_eq!(
            copy_out_sql("\"t\"", "\"a\"", None, CopyFormat::Text),
            "COPY \"t\" (\"a\") TO STDOUT (FORMAT text)"
        );
        assert_eq!(
            copy_out_sql(
                "\"t\"",
                "\"a\"",
                Some(BlockRange {
                    start: Some(7),
                    end: None
                }),
                CopyFormat::Text
            ),
            "COPY (SELECT \"a\" FROM ONLY \"t\" WHERE ctid >= '(7,0)'::tid) TO STDOUT (FORMAT text)"
        );
    }

    #[test]
    fn header_is_stripped_from_every_buffer() {
        let mut buffers = vec![BytesMut::new(), BytesMut::new()];
        for b in buffers.iter_mut() {
            b.extend_from_slice(&BINARY_HEADER);
        }
        buffers[1].extend_from_slice(&[0, 1]);
        strip_header(&mut buffers).unwrap();
        assert!(buffers[0].is_empty());
        assert_eq!(&buffers[1][..], &[0, 1]);
        let mut short = vec![BytesMut::from(&b"PGCOPY"[..])];
        assert!(strip_header(&mut short).is_err());
    }
}
