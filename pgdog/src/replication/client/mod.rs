//! The replication-protocol client: one `replication=database` connection that runs
//! IDENTIFY_SYSTEM, CREATE_REPLICATION_SLOT, START_REPLICATION and DROP_REPLICATION_SLOT and
//! streams CopyBoth data, answering keepalives and reporting progress.
//!
//! It owns the connection's state (idle or streaming) and the progress it reports; it does not
//! decode the plugin's bytes (that is `pgoutput`) nor decide what is durably processed: the
//! caller says so with [`ReplicationClient::confirm`]. Startup and authentication are the
//! backend's ([`Server::connect_with_params`]).
pub mod commands;
pub mod error;
pub mod standby;
pub mod stream;
pub mod url;

pub use commands::{
    format_lsn, parse_lsn, CreatedSlot, SlotOptions, SnapshotAction, StartOptions, Streaming,
    SystemInfo,
};
pub use error::{ReplicationError, Result};
pub use stream::{Progress, ReplicationEvent};

use crate::backend::{CancelKey, Server, ServerError, ServerTarget};
use crate::net::message::{self, read_error, Message, Reader};
use crate::net::tag::backend;
use crate::net::TxStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default interval between Standby Status Updates while streaming.
pub const STATUS_INTERVAL: Duration = Duration::from_secs(10);

/// Rows of a command's result, columns as text (`None` for NULL).
pub type Rows = Vec<Vec<Option<String>>>;

/// One replication connection.
pub struct ReplicationClient {
    server: Server,
    /// The START_REPLICATION command while streaming.
    streaming: Option<String>,
    /// A stream ran on this connection already.
    streamed: bool,
    progress: Progress,
    /// How often a status update is sent while streaming.
    pub status_interval: Duration,
    last_status: Instant,
}

impl std::fmt::Debug for ReplicationClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ReplicationClient({:?}, streaming: {})",
            self.server,
            self.streaming.is_some()
        )
    }
}

impl ReplicationClient {
    /// Connects with `replication=database` to `target.database`.
    pub async fn connect(target: &ServerTarget, timeout: Duration) -> Result<ReplicationClient> {
        let server = Server::connect_with_params(target, &[("replication", "database")], timeout)
            .await
            .map_err(|source| ReplicationError::Connect {
                addr: target.addr(),
                source: Box::new(source),
            })?;
        Ok(ReplicationClient {
            server,
            streaming: None,
            streamed: false,
            progress: Progress::default(),
            status_interval: STATUS_INTERVAL,
            last_status: Instant::now(),
        })
    }

    pub fn addr(&self) -> &str {
        self.server.addr()
    }

    /// The backend's cancel key (for a CancelRequest from elsewhere).
    pub fn cancel_key(&self) -> Arc<CancelKey> {
        self.server.cancel_key.clone()
    }

    /// The backend process id (for `pg_cancel_backend`).
    pub fn backend_pid(&self) -> i32 {
        self.server.pid
    }

    /// Whether START_REPLICATION is running.
    pub fn is_streaming(&self) -> bool {
        self.streaming.is_some()
    }

    /// What the next status update reports.
    pub fn progress(&self) -> Progress {
        self.progress
    }

    /// Whether a complete message is already received, reading what the socket holds right
    /// now without waiting for more: the caller may then read the next event without waiting
    /// for the network (e.g. to group several source transactions into one destination commit).
    /// An error reading is reported by the next [`Self::next_event`] too.
    pub fn message_ready(&mut self) -> Result<bool> {
        use futures_util::FutureExt;
        loop {
            if self.server.has_buffered() {
                return Ok(true);
            }
            match self.server.fill().now_or_never() {
                None => return Ok(false),
                Some(Ok(())) => {}
                Some(Err(source)) => return Err(self.stream_error(source)),
            }
        }
    }

    /// IDENTIFY_SYSTEM.
    pub async fn identify_system(&mut self) -> Result<SystemInfo> {
        let command = "IDENTIFY_SYSTEM";
        let rows = self.query(command).await?;
        let col = self.first_row(command, &rows)?;
        let system_id = col(0).ok_or_else(|| self.malformed(command, "systemid"))?;
        let timeline = col(1)
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| self.malformed(command, "timeline"))?;
        let xlogpos = self.lsn_in(command, col(2), "xlogpos")?;
        Ok(SystemInfo {
            system_id,
            timeline,
            xlogpos,
            dbname: col(3),
        })
    }

    /// CREATE_REPLICATION_SLOT. With [`SnapshotAction::Export`] the snapshot stays usable
    /// only while this connection runs no other command.
    pub async fn create_slot(&mut self, slot: &SlotOptions) -> Result<CreatedSlot> {
        let command = slot.command()?;
        let rows = self.query(&command).await?;
        self.created_slot(&command, rows)
    }

    /// Reads CREATE_REPLICATION_SLOT's row.
    fn created_slot(&self, command: &str, rows: Rows) -> Result<CreatedSlot> {
        let col = self.first_row(command, &rows)?;
        let name = col(0).ok_or_else(|| self.malformed(command, "slot_name"))?;
        let consistent_point = self.lsn_in(command, col(1), "consistent_point")?;
        Ok(CreatedSlot {
            name,
            consistent_point,
            snapshot: col(2),
            plugin: col(3),
        })
    }

    /// DROP_REPLICATION_SLOT (`wait`: until an active slot is released).
    pub async fn drop_slot(&mut self, name: &str, wait: bool) -> Result<()> {
        let command = commands::drop_slot(name, wait)?;
        self.query(&command).await.map(|_| ())
    }

    /// Runs a command (replication command or, with `replication=database`, plain SQL) and
    /// returns its rows. Refused while streaming.
    pub async fn query(&mut self, command: &str) -> Result<Rows> {
        if self.streaming.is_some() {
            return Err(ReplicationError::State(
                "a command was sent while replication is streaming: stop() first",
            ));
        }
        let wrap = command_error(command, self.addr());
        self.server
            .write(&message::query(command))
            .await
            .map_err(&wrap)?;
        read_rows(&mut self.server).await.map_err(wrap)
    }

    /// Sends `command` without waiting for its result (see [`standby`]).
    async fn send(&mut self, command: &str) -> Result<()> {
        let wrap = command_error(command, self.addr());
        self.server
            .write(&message::query(command))
            .await
            .map_err(wrap)
    }

    /// START_REPLICATION from `lsn` (0: from the slot's confirmed position). The server
    /// starts at the later of `lsn` and the slot's `confirmed_flush_lsn`.
    ///
    /// Once per connection: a walsender whose stream was stopped ends a second logical
    /// START_REPLICATION at once, so a restart is a new connection from [`Self::progress`].
    pub async fn start(&mut self, slot: &str, lsn: u64, options: &StartOptions) -> Result<()> {
        if self.streaming.is_some() {
            return Err(ReplicationError::State("replication is already streaming"));
        }
        if self.streamed {
            return Err(ReplicationError::State(
                "this connection streamed already and Postgres would end a second \
                 START_REPLICATION at once: restart on a new connection",
            ));
        }
        let command = options.command(slot, lsn)?;
        let addr = self.addr().to_string();
        let wrap = command_error(&command, &addr);
        self.server
            .write(&message::query(&command))
            .await
            .map_err(&wrap)?;
        let mut error = None;
        loop {
            let m = self.server.read().await.map_err(&wrap)?;
            match m.tag() {
                backend::COPY_BOTH_RESPONSE => break,
                backend::ERROR_RESPONSE => error = Some(postgres_error(m)),
                backend::READY_FOR_QUERY => {
                    return Err(wrap(error.unwrap_or(ServerError::Protocol {
                        addr: addr.clone(),
                        error: crate::net::ProtocolError::Malformed("START_REPLICATION reply"),
                    })))
                }
                backend::NOTICE_RESPONSE | backend::PARAMETER_STATUS => {}
                other => {
                    return Err(ReplicationError::Unexpected {
                        command: command.clone(),
                        addr: addr.clone(),
                        tag: other as char,
                    })
                }
            }
        }
        self.progress = Progress {
            written: lsn.max(self.progress.written),
            flushed: lsn.max(self.progress.flushed),
            applied: lsn.max(self.progress.applied),
        };
        self.streaming = Some(command);
        self.streamed = true;
        self.last_status = Instant::now();
        Ok(())
    }

    /// Marks everything up to `lsn` as processed: the next status update reports it as
    /// flushed and applied, so the slot will not send it again after a restart.
    pub fn confirm(&mut self, lsn: u64) {
        let p = &mut self.progress;
        p.flushed = p.flushed.max(lsn);
        p.applied = p.applied.max(lsn);
        p.written = p.written.max(lsn);
    }

    /// Sends a Standby Status Update now.
    pub async fn send_status(&mut self, reply_requested: bool) -> Result<()> {
        if self.streaming.is_none() {
            return Err(ReplicationError::State(
                "status updates need a running replication stream",
            ));
        }
        let m = stream::status_update(self.progress, stream::postgres_now(), reply_requested);
        self.last_status = Instant::now();
        let addr = self.addr().to_string();
        self.server
            .write(&m)
            .await
            .map_err(|source| ReplicationError::Stream {
                addr,
                source: Box::new(source),
            })
    }

    /// The next XLogData or keepalive. Keepalives that ask for a reply are answered before
    /// they are returned, and a status update goes out every `status_interval`. `None` when
    /// the server ended the stream (then the connection is idle again).
    pub async fn next_event(&mut self) -> Result<Option<ReplicationEvent>> {
        if self.streaming.is_none() {
            return Err(ReplicationError::State("no replication stream is running"));
        }
        loop {
            let due = self.last_status + self.status_interval;
            let now = Instant::now();
            if now >= due {
                self.send_status(false).await?;
                continue;
            }
            // A message already buffered needs no wait (and no timer): the common case while
            // draining a busy slot.
            let buffered = match self.server.try_read() {
                Ok(m) => m,
                Err(source) => return Err(self.stream_error(source)),
            };
            let m = match buffered {
                Some(m) => m,
                // MessageReader::next is cancel-safe: a timeout loses no bytes.
                None => match tokio::time::timeout(due - now, self.server.read()).await {
                    Err(_) => continue,
                    Ok(m) => m.map_err(|source| self.stream_error(source))?,
                },
            };
            match m.tag() {
                backend::COPY_DATA => {
                    let event = stream::parse_copy_data(&m).map_err(|what| {
                        self.malformed(self.streaming.as_deref().unwrap_or(""), what)
                    })?;
                    match event {
                        Some(ReplicationEvent::XLogData { wal_end, .. }) => {
                            self.progress.written = self.progress.written.max(wal_end);
                        }
                        Some(ReplicationEvent::Keepalive {
                            reply_requested: true,
                            ..
                        }) => self.send_status(false).await?,
                        _ => {}
                    }
                    if event.is_some() {
                        return Ok(event);
                    }
                }
                backend::COPY_DONE => {
                    // The server ends the stream: finish our side and wait for the end.
                    let _ = self.server.write(&stream::copy_done()).await;
                    self.drain().await?;
                    return Ok(None);
                }
                backend::COMMAND_COMPLETE => {
                    // The stream ended without a CopyDone of its own: the command is over.
                    self.drain().await?;
                    return Ok(None);
                }
                backend::ERROR_RESPONSE => {
                    let source = postgres_error(m);
                    self.streaming = None;
                    // Drain to ReadyForQuery when the connection survived the error.
                    let _ = self.drain().await;
                    return Err(self.stream_error(source));
                }
                backend::NOTICE_RESPONSE => {
                    tracing::info!("{}: notice during replication", self.addr())
                }
                backend::PARAMETER_STATUS => self.server.record_parameter(&m),
                other => {
                    return Err(ReplicationError::Unexpected {
                        command: self.streaming.clone().unwrap_or_default(),
                        addr: self.addr().to_string(),
                        tag: other as char,
                    })
                }
            }
        }
    }

    /// Stops streaming cleanly: a last status update, CopyDone, then everything the server
    /// still sends up to ReadyForQuery (data in flight is dropped unconfirmed). Afterwards the
    /// connection runs commands again, e.g. a new START_REPLICATION from [`Self::progress`].
    pub async fn stop(&mut self) -> Result<()> {
        if self.streaming.is_none() {
            return Ok(());
        }
        self.send_status(false).await?;
        let addr = self.addr().to_string();
        self.server
            .write(&stream::copy_done())
            .await
            .map_err(|source| ReplicationError::Stream {
                addr,
                source: Box::new(source),
            })?;
        self.drain().await
    }

    /// Reads until ReadyForQuery; the server's error if one came.
    async fn drain(&mut self) -> Result<()> {
        let result = self.server.read_until_ready().await;
        self.streaming = None;
        result.map_err(|source| self.stream_error(source))
    }

    /// Sends a CancelRequest for this connection's backend (from a new TCP connection).
    pub async fn cancel(&self) -> Result<()> {
        send_cancel(&self.cancel_key()).await
    }

    /// Ends the connection (a temporary slot goes with it).
    pub async fn close(self) {
        self.server.terminate().await;
    }

    /// The columns of the first row of `command`'s answer (None for NULL or past the end).
    fn first_row<'r>(
        &self,
        command: &str,
        rows: &'r Rows,
    ) -> Result<impl Fn(usize) -> Option<String> + 'r> {
        let row = rows
            .first()
            .ok_or_else(|| self.malformed(command, "result"))?;
        Ok(move |i: usize| row.get(i).cloned().flatten())
    }

    /// The LSN in column `what` of `command`'s answer.
    fn lsn_in(&self, command: &str, value: Option<String>, what: &'static str) -> Result<u64> {
        value
            .and_then(|l| parse_lsn(&l).ok())
            .ok_or_else(|| self.malformed(command, what))
    }

    fn malformed(&self, command: &str, what: &'static str) -> ReplicationError {
        ReplicationError::Malformed {
            command: command.to_string(),
            addr: self.addr().to_string(),
            what,
        }
    }

    fn stream_error(&self, source: ServerError) -> ReplicationError {
        ReplicationError::Stream {
            addr: self.addr().to_string(),
            source: Box::new(source),
        }
    }
}

/// A CancelRequest for `key`'s backend.
pub async fn send_cancel(key: &CancelKey) -> Result<()> {
    let request = message::cancel_request(key.pid, &key.secret);
    crate::net::unix::send_and_close(&key.addr, &request)
        .await
        .map_err(|source| ReplicationError::Cancel {
            addr: key.addr.clone(),
            source,
        })
}

/// An ErrorResponse as a [`ServerError`].
fn postgres_error(m: Message) -> ServerError {
    match read_error(&m) {
        Ok(fields) => ServerError::Postgres(fields, m),
        Err(error) => ServerError::Protocol {
            addr: String::new(),
            error,
        },
    }
}

/// Reads a simple query's results up to ReadyForQuery: the rows of its last result set, or
/// the server's error. Cancel-safe only between calls.
async fn read_rows(server: &mut Server) -> Result<Rows, ServerError> {
    let mut rows = Vec::new();
    let mut error = None;
    loop {
        let m = server.read().await?;
        match m.tag() {
            backend::ROW_DESCRIPTION => rows.clear(),
            backend::DATA_ROW => {
                rows.push(data_row(&m).map_err(|error| ServerError::Protocol {
                    addr: server.addr().to_string(),
                    error,
                })?)
            }
            backend::ERROR_RESPONSE => error = Some(postgres_error(m)),
            backend::PARAMETER_STATUS => server.record_parameter(&m),
            backend::READY_FOR_QUERY => {
                server.status = TxStatus::of(&m);
                break;
            }
            _ => {}
        }
    }
    error.map_or(Ok(rows), Err)
}

/// A DataRow's columns as text.
fn data_row(m: &Message) -> Result<Vec<Option<String>>, crate::net::ProtocolError> {
    let mut r = Reader::new(m.payload(), "DataRow");
    let n = r.i16()?;
    let mut row = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n.max(0) {
        let len = r.i32()?;
        if len < 0 {
            row.push(None);
        } else {
            let bytes = r.bytes(len as usize)?;
            row.push(Some(String::from_utf8_lossy(bytes).into_owned()));
        }
    }
    Ok(row)
}

/// The error of `command` on the server at `addr`.
fn command_error(command: &str, addr: &str) -> impl Fn(ServerError) -> ReplicationError {
    let (command, addr) = (command.to_string(), addr.to_string());
    move |source| ReplicationError::Command {
        command: command.clone(),
        addr: addr.clone(),
        source: Box::new(source),
    }
}
