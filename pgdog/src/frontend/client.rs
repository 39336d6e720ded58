//! The client end both session types share (one server in [`super::session`], several in
//! [`super::sharded`]): the socket and its message reader, who the client is, the bytes waiting
//! to be written to it, its traffic meter, its database's pause gate with the pass it holds,
//! and how a session ends for the client (a FATAL with the reason). Each session type keeps
//! only its server side and protocol state.
use super::cancel::Registration;
use super::params::Params;
use super::session::SessionError;
use crate::backend::pause::{Gate, Ticket};
use crate::backend::pool::PooledServer;
use crate::backend::shard::{CheckoutError, Shard};
use crate::config::PoolerMode;
use crate::net::encoding::Codec;
use crate::net::stream::Stream;
use crate::net::tag::frontend;
use crate::net::{buffers, message};
use crate::net::{Message, MessageReader, ProtocolError};
use crate::stats::Meter;
use bytes::BytesMut;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::AsyncWriteExt;

/// A session type (one server or sharded): serves its client until it leaves, then leaves its
/// servers clean. How a session ends for the client is the same for both (`run`).
pub(crate) trait ServeClient: Sized {
    fn client_mut(&mut self) -> &mut Client;
    /// Answers the client until it leaves (Err(`ClientLeft`) after Terminate) or fails.
    async fn serve(&mut self) -> Result<(), SessionError>;
    /// The client is gone: servers back to their pools, or closed.
    async fn cleanup(&mut self);

    /// Serves the client, tells it how the session ended, cleans up. Takes the session by
    /// reference: owned, it would be stored twice in the future (argument and local).
    async fn run(&mut self) {
        let result = self.serve().await;
        self.client_mut().log_end(&result);
        self.client_mut().end(&result).await;
        if !matches!(result, Err(SessionError::HandedOver)) {
            // The client sees the end now, not after its server is cleaned up (a reset that
            // waits for the server could hold it for server_query_timeout).
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut self.client_mut().stream).await;
        }
        self.cleanup().await;
    }
}

pub struct Client {
    pub stream: Stream,
    pub reader: MessageReader,
    pub user: String,
    pub database: String,
    pub mode: PoolerMode,
    pub params: Params,
    pub cancel: Registration,
    /// Messages for the client, written in one go by [`Client::flush`].
    pub out: BytesMut,
    /// Traffic counters and the client's entry in the clients table.
    pub meter: Meter,
    /// The database's pause gate, and the pass held while servers are attached.
    pub gate: Arc<Gate>,
    pub ticket: Option<Ticket>,
    /// Registry generation last checked for the database changing its kind (one server or
    /// sharded) while servers stay attached (session mode, pinned sessions).
    pub checked_generation: u64,
    /// How pgdog reads the client's text: its `client_encoding` now (the last the client was
    /// told of, at login or by a ParameterStatus).
    pub codec: Codec,
}

impl Client {
    /// A logged-in client; the session type sets `mode` from its servers.
    pub fn new(
        stream: Stream,
        reader: MessageReader,
        user: String,
        database: String,
        params: Params,
        cancel: Registration,
        meter: Meter,
    ) -> Client {
        Client {
            stream,
            reader,
            user,
            gate: crate::backend::pause::gate(&database),
            database,
            mode: PoolerMode::default(),
            cancel,
            out: buffers::take(),
            meter,
            ticket: None,
            checked_generation: crate::registry::Registry::generation(),
            codec: Codec::of(&params.startup_value("client_encoding").unwrap_or_default()),
            params,
        }
    }

    /// PgBouncer 1.26's session tracking (transaction mode): a parameter the server reports
    /// (GUC_REPORT: on Postgres 18 `search_path` and `default_transaction_read_only` too)
    /// changed by the client's own statement, however it did it (`set_config`, a function's
    /// SET, a SET pgdog did not parse), follows the client to its next servers. The server's
    /// own facts (`in_hot_standby`, `server_version`, ...) are not the client's to carry.
    pub fn track_reported(&mut self, m: &Message) {
        const SERVER_FACTS: &[&str] = &[
            "in_hot_standby",
            "server_version",
            "server_encoding",
            "integer_datetimes",
            "is_superuser",
            "session_authorization",
            "scram_iterations",
        ];
        let mut r = m.reader();
        let (Ok(name), Ok(value)) = (r.cstr(), r.cstr()) else {
            return;
        };
        let name = name.to_ascii_lowercase();
        if !SERVER_FACTS.contains(&name.as_str()) {
            self.params.set_actual(&name, Some(value));
        }
    }

    /// A ParameterStatus on its way to the client: a new `client_encoding` changes how pgdog
    /// reads the client's text from now on.
    pub fn parameter_reported(&mut self, m: &Message) {
        let mut r = m.reader();
        if let (Ok("client_encoding"), Ok(value)) = (r.cstr(), r.cstr()) {
            self.codec = Codec::of(value);
        }
    }

    /// Queues `bytes` for the client. A client waiting for its server's answer may have given
    /// its buffer back while it read (`read`): a spare one is taken then, so an answer costs no
    /// allocation (callgrind, `benchmarks/floor.sh`: 2 per `pgbench -S` transaction before).
    pub fn queue(&mut self, bytes: &[u8]) {
        if self.out.capacity() == 0 {
            self.out = buffers::take();
        }
        self.out.extend_from_slice(bytes);
    }

    /// The next message already buffered from the client (None: read more), counted in the
    /// meter; Terminate ends the session (`ClientLeft`).
    pub fn next_buffered(&mut self) -> Result<Option<Message>, SessionError> {
        match self.reader.try_next()? {
            None => Ok(None),
            Some(m) if m.tag() == frontend::TERMINATE => Err(SessionError::ClientLeft),
            Some(m) => {
                self.meter.received(m.len());
                self.meter.request(m.tag());
                Ok(Some(m))
            }
        }
    }

    /// Reads more from the client (at least one byte; `Closed` at its end). With nothing
    /// buffered on a plain socket and nothing in flight (`idle`), the client's buffers go back
    /// to the thread's spares while it is quiet and are taken again when bytes arrive
    /// (`net::buffers`): idle clients hold no buffer memory. A client waiting for its
    /// server's answer keeps them (3 returns and takes a `pgbench -S` transaction otherwise).
    pub async fn read(&mut self, idle: bool) -> Result<(), ProtocolError> {
        std::future::poll_fn(|cx| self.poll_read(cx, idle)).await
    }

    /// `read` as a poll (cancel-safe: bytes read are in the reader).
    pub fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        idle: bool,
    ) -> Poll<Result<(), ProtocolError>> {
        if let Stream::Plain(tcp) = &self.stream {
            if self.reader.is_empty() && self.out.is_empty() {
                if idle {
                    self.reader.release_if_empty();
                    buffers::give(std::mem::take(&mut self.out));
                }
                // The socket's own read-readiness slot: `readable()` queued a waiter under
                // the registration's lock (about 300 instructions a wake-up, callgrind).
                ready!(tcp.poll_read_ready(cx))?;
            }
        }
        ready!(self.reader.poll_fill(cx, &mut self.stream))?;
        if self.out.capacity() == 0 {
            self.out = buffers::take();
        }
        self.meter.arrived();
        Poll::Ready(Ok(()))
    }

    /// A server connection of `shard` for a read or a write; the wait is metered (a free
    /// idle connection is taken without a timer or a clock read).
    pub async fn checkout(
        &mut self,
        shard: &Shard,
        read: bool,
        min_lsn: Option<u64>,
    ) -> Result<PooledServer, CheckoutError> {
        if let Some(server) = shard.try_checkout(read, min_lsn) {
            self.meter.waited_none();
            return Ok(server);
        }
        let asked = std::time::Instant::now();
        self.meter.waiting(asked);
        let checkout = shard.checkout(read, min_lsn).await;
        self.meter.waited(asked.elapsed());
        checkout
    }

    /// Writes what is waiting for the client.
    pub async fn flush(&mut self) -> Result<(), ProtocolError> {
        if !self.out.is_empty() {
            self.meter.sent(self.out.len());
            let written = self.stream.write_all(&self.out).await;
            crate::net::reuse(&mut self.out);
            written?;
        }
        Ok(())
    }

    /// `log_disconnections` and `log_pooler_errors`: PgBouncer's `closing because: <reason>
    /// (age=<s>s)` line, and `pooler error: <message>` for an end pgdog decided.
    fn log_end(&self, result: &Result<(), SessionError>) {
        let general = crate::config::active();
        let info = self.meter.client();
        let reason = match result {
            Ok(()) | Err(SessionError::ClientLeft) => "client close request".to_string(),
            Err(SessionError::Client(ProtocolError::Closed)) => "client unexpected eof".into(),
            Err(SessionError::HandedOver) => "handed over to another pgdog".into(),
            Err(e) => e.to_string(),
        };
        let code = match result {
            Err(SessionError::Terminated(code, _)) => Some(*code),
            Err(SessionError::Client(e))
                if !matches!(e, ProtocolError::Closed | ProtocolError::Io(_)) =>
            {
                Some(e.code())
            }
            _ => None,
        };
        let client = format!("{}:{}", info.addr, info.port);
        if let (true, Some(code)) = (general.log_pooler_errors, code) {
            tracing::warn!(
                database = %self.database,
                user = %self.user,
                client = %client,
                sqlstate = code,
                "pooler error: {reason}"
            );
        }
        if general.log_disconnections {
            let age = crate::stats::clients::now_us().saturating_sub(info.connect_time) / 1_000_000;
            tracing::info!(
                database = %self.database,
                user = %self.user,
                client = %client,
                "closing because: {reason} (age={age}s)"
            );
        }
    }

    /// Tells the client why its session ended (nothing for a clean end or a closed socket) and
    /// writes what is still waiting for it.
    pub async fn end(&mut self, result: &Result<(), SessionError>) {
        match result {
            // The socket is the other pgdog's now: not a byte more from here.
            Err(SessionError::HandedOver) => return,
            Ok(())
            | Err(SessionError::ClientLeft | SessionError::Client(ProtocolError::Closed)) => {}
            Err(SessionError::Client(e)) => {
                tracing::info!("client {}@{}: {e}", self.user, self.database);
                if !matches!(e, ProtocolError::Io(_)) {
                    let m = message::fatal(e.code(), &e.to_string());
                    let _ = self.stream.write_all(m.bytes()).await;
                }
            }
            Err(SessionError::Reconfigured(why)) => {
                tracing::info!("client {}@{}: {why}", self.user, self.database);
                let _ = self.flush().await;
                let m = message::fatal("57P01", why);
                let _ = self.stream.write_all(m.bytes()).await;
            }
            Err(e @ SessionError::ServerClosed(fatal)) => {
                tracing::info!("client {}@{}: {e}", self.user, self.database);
                let _ = self.flush().await;
                crate::stats::error_response(fatal);
                let _ = self.stream.write_all(fatal.bytes()).await;
            }
            Err(SessionError::Terminated(code, why)) => {
                tracing::info!("client {}@{}: {why}", self.user, self.database);
                let _ = self.flush().await;
                crate::stats::error(code);
                let _ = self
                    .stream
                    .write_all(message::fatal(code, why).bytes())
                    .await;
            }
        }
        let _ = self.flush().await;
    }
}
