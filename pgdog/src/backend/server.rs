//! One connection to a Postgres server.
use crate::auth;
use crate::net::message::{self, read_error};
use crate::net::stream::Stream;
use crate::net::tag::backend;
use crate::net::TxStatus;
use crate::net::{Message, MessageReader, ProtocolError};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("could not connect to server {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("timed out connecting to server {0}")]
    ConnectTimeout(String),
    #[error("server {addr}: {error}")]
    Protocol { addr: String, error: ProtocolError },
    /// An error the server sent (kept whole so it can be passed to the client).
    #[error("{}", .0.message)]
    Postgres(message::ErrorFields, Message),
    #[error("server {0} asks for a password but none is configured for this user")]
    NoPassword(String),
    #[error("server {0}: unsupported authentication request {1}")]
    UnsupportedAuth(String, i32),
    #[error("server {0}: {1}")]
    Auth(String, String),
    /// TLS to the server failed or is not offered while `server_tls` requires it.
    #[error("server {0}: TLS: {1}")]
    Tls(String, String),
    /// pgdog's own statement outlived `server_query_timeout`; the connection is closed.
    #[error("server {0}: \"{1}\" did not finish within server_query_timeout ({2} ms)")]
    Timeout(String, String, u64),
}

impl ServerError {
    /// Whether the server itself is unavailable (unreachable, closed the connection, starting
    /// up or shutting down), as opposed to refusing this request: reason to ban it.
    pub fn is_unavailable(&self) -> bool {
        match self {
            ServerError::Connect { .. }
            | ServerError::ConnectTimeout(_)
            | ServerError::Protocol { .. } => true,
            ServerError::Postgres(e, _) => e.code.starts_with("57P") || e.code.starts_with("08"),
            _ => false,
        }
    }

    /// Whether the failure says the server is down (and it is to be banned): it cannot be
    /// reached, or it is crashing or starting/stopping (57P02, 57P03). Not a FATAL that ends one
    /// connection: 57P01 may be one client's `pg_terminate_backend` (a shutdown shows at the
    /// next connect, which bans), 08P01 a protocol violation, 25P03 or 57P05 a timeout.
    pub fn says_server_down(&self) -> bool {
        match self {
            ServerError::Connect { .. }
            | ServerError::ConnectTimeout(_)
            | ServerError::Protocol { .. } => true,
            ServerError::Postgres(e, _) => server_down_code(&e.code),
            _ => false,
        }
    }

    /// SQLSTATE to report to the client.
    pub fn code(&self) -> String {
        match self {
            ServerError::Postgres(e, _) => e.code.clone(),
            ServerError::NoPassword(_) | ServerError::Auth(..) => "28P01".into(),
            ServerError::Timeout(..) => "57014".into(),
            _ => "08006".into(),
        }
    }
}

/// A DataRow's columns as text (`None` for NULL).
fn text_row(m: &Message) -> Result<Vec<Option<String>>, ProtocolError> {
    m.reader().list(|r| {
        let value = r.nullable()?;
        Ok(value.map(|v| String::from_utf8_lossy(v).into_owned()))
    })
}

/// A server connection's cancel key and address (what a CancelRequest for it needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelKey {
    pub addr: String,
    pub pid: i32,
    pub secret: Vec<u8>,
}

/// Where and as whom to connect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerTarget {
    pub host: String,
    pub port: u16,
    pub database: String,
    pub user: String,
    pub password: Option<String>,
    /// Without a password: what the client revealed at login, to log in as that client.
    pub pass_through: Option<PassThrough>,
}

/// A login secret of a user found by `auth_query`, taken from the client's own login so that
/// pgdog stores no password: SCRAM keys recovered from the client's proof, or the MD5 hash the
/// server stores (an MD5 login needs only that).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PassThrough {
    Scram(auth::ScramKeys),
    Md5(String),
}

impl ServerTarget {
    pub fn addr(&self) -> String {
        crate::net::unix::address(&self.host, self.port)
    }
}

static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A live server connection.
pub struct Server {
    pub id: u64,
    stream: Stream,
    reader: MessageReader,
    addr: String,
    /// ParameterStatus values the server reported.
    pub params: HashMap<String, String>,
    /// The server's cancel key.
    pub pid: i32,
    pub secret: Vec<u8>,
    /// The same, shareable with the cancel registry without copying.
    pub cancel_key: std::sync::Arc<CancelKey>,
    /// Fingerprint of `settings` (0 when empty), to skip comparing them on every checkout.
    pub settings_fingerprint: u64,
    /// Global ids of the prepared statements that exist on this connection (foldhash, not
    /// SipHash: looked up at every Bind and Describe, 300 instructions of a `-M extended`
    /// transaction with this set and the session's statements, callgrind).
    pub prepared: HashSet<u64, foldhash::fast::RandomState>,
    /// Session settings pgdog applied with SET (name -> value as SQL text).
    pub settings: HashMap<String, String>,
    /// Last ReadyForQuery status (`I`, `T` or `E`).
    pub status: TxStatus,
    pub created: Instant,
    pub last_used: Instant,
    /// False once an I/O or protocol error makes it unusable.
    pub healthy: bool,
    /// Whose unnamed prepared statement this connection holds, as far as pgdog knows.
    pub unnamed: Unnamed,
    /// Its slots under `max_db_connections` / `max_user_connections` (freed when it closes).
    pub cap_slots: super::caps::Slots,
    /// Idle longer than `server_check_delay`: `server_check_query` runs before its next use
    /// (set by the pool's maintenance pass, so a checkout reads no clock).
    pub check_due: bool,
}

/// The unnamed prepared statement of a server connection: the sessions track it so that a
/// client's Bind of "" never runs another client's statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unnamed {
    /// None (a new connection, or a simple query ran: Postgres drops it then).
    Empty,
    /// The client Parse with this id (see `frontend::session::unnamed`).
    Parsed(u64),
    /// Not known (a Parse of it failed or was skipped).
    Unknown,
}

/// A FATAL's SQLSTATE that says the whole server is going away (crash, startup, shutdown).
pub fn server_down_code(code: &str) -> bool {
    matches!(code, "57P02" | "57P03")
}

/// Order-independent fingerprint of a settings map (0 when empty).
pub fn fingerprint(settings: &HashMap<String, String>) -> u64 {
    use std::hash::BuildHasher;
    let state =
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
    settings
        .iter()
        .fold(0u64, |acc, kv| acc ^ state.hash_one(kv).max(1))
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Server({} #{} pid {})", self.addr, self.id, self.pid)
    }
}

impl Server {
    /// Connects, authenticates and waits for the first ReadyForQuery.
    pub async fn connect(target: &ServerTarget, timeout: Duration) -> Result<Server, ServerError> {
        Self::connect_with_params(target, &[], timeout).await
    }

    /// Like [`Server::connect`], with extra startup parameters after `user`, `database` and
    /// `application_name` (e.g. `("replication", "database")` for a logical replication
    /// connection); a later parameter of the same name wins on the server.
    pub async fn connect_with_params(
        target: &ServerTarget,
        extra: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Server, ServerError> {
        let addr = target.addr();
        // Boxed: the handshake's state (TLS, SCRAM) is large and rarely live; unboxed it would
        // size every future that may connect, down to each client's task (issue 28: about 2 KB
        // of each idle client's memory).
        let connect = Box::pin(Self::connect_inner(target, extra));
        match tokio::time::timeout(timeout, connect).await {
            Ok(r) => r,
            Err(_) => Err(ServerError::ConnectTimeout(addr)),
        }
    }

    async fn connect_inner(
        target: &ServerTarget,
        extra: &[(&str, &str)],
    ) -> Result<Server, ServerError> {
        let addr = target.addr();
        let failed = |source| ServerError::Connect {
            addr: addr.clone(),
            source,
        };
        let general = crate::config::active();
        // A socket folder: no TLS there, as libpq and PgBouncer do.
        let stream = if crate::net::unix::is_socket_dir(&target.host) {
            Stream::Unix(UnixStream::connect(&addr).await.map_err(failed)?)
        } else {
            let stream = TcpStream::connect((target.host.as_str(), target.port))
                .await
                .map_err(failed)?;
            let _ = stream.set_nodelay(true);
            crate::net::keepalive::apply(&stream, &general);
            negotiate_tls(stream, target, &general).await?
        };
        let mut server = Server {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            stream,
            reader: MessageReader::new(usize::MAX >> 1),
            addr: addr.clone(),
            params: HashMap::new(),
            pid: 0,
            secret: Vec::new(),
            cancel_key: std::sync::Arc::new(CancelKey {
                addr: addr.clone(),
                pid: 0,
                secret: Vec::new(),
            }),
            settings_fingerprint: 0,
            prepared: HashSet::default(),
            settings: HashMap::new(),
            status: TxStatus::Idle,
            created: Instant::now(),
            last_used: Instant::now(),
            healthy: true,
            unnamed: Unnamed::Empty,
            cap_slots: Vec::new(),
            check_due: false,
        };
        let mut params: Vec<(&str, &str)> = vec![
            ("user", &target.user),
            ("database", &target.database),
            ("application_name", "pgdog"),
        ];
        params.extend_from_slice(extra);
        let startup = message::startup(&params);
        server.write_raw(&startup).await?;
        server.authenticate(target).await?;
        loop {
            let m = server.read().await?;
            match m.tag() {
                backend::PARAMETER_STATUS => {
                    let mut r = m.reader();
                    let (k, v) = (
                        r.cstr().map_err(|e| server.proto(e))?,
                        r.cstr().map_err(|e| server.proto(e))?,
                    );
                    server.params.insert(k.to_string(), v.to_string());
                }
                backend::BACKEND_KEY_DATA => {
                    let mut r = m.reader();
                    server.pid = r.i32().map_err(|e| server.proto(e))?;
                    server.secret = r.rest().to_vec();
                }
                backend::READY_FOR_QUERY => break,
                backend::ERROR_RESPONSE => return Err(server.postgres_error(m)),
                _ => {}
            }
        }
        server.cancel_key = std::sync::Arc::new(CancelKey {
            addr: addr.clone(),
            pid: server.pid,
            secret: server.secret.clone(),
        });
        Ok(server)
    }

    /// Replaces the session settings record (and its fingerprint).
    pub fn set_settings(&mut self, settings: HashMap<String, String>) {
        self.settings_fingerprint = fingerprint(&settings);
        self.settings = settings;
    }

    async fn authenticate(&mut self, target: &ServerTarget) -> Result<(), ServerError> {
        let mut scram: Option<auth::scram::ScramClient> = None;
        // The server proved it knows the password (SCRAM's final signature checked).
        let mut verified = false;
        let allow_cleartext = crate::config::active().server_allow_cleartext;
        loop {
            let m = self.read().await?;
            if m.tag() == backend::ERROR_RESPONSE {
                return Err(self.postgres_error(m));
            }
            if m.tag() != backend::AUTHENTICATION {
                return Err(self.proto(ProtocolError::Malformed("authentication request")));
            }
            let mut r = m.reader();
            let kind = r.i32().map_err(|e| self.proto(e))?;
            let password = || {
                target
                    .password
                    .clone()
                    .ok_or_else(|| ServerError::NoPassword(self.addr.clone()))
            };
            match kind {
                0 if scram.is_some() && !verified => {
                    return Err(ServerError::Auth(
                        self.addr.clone(),
                        "AuthenticationOk before SCRAM's server signature: the server's identity was not proven".into(),
                    ))
                }
                0 => return Ok(()),
                3 if !allow_cleartext => {
                    return Err(ServerError::Auth(
                        self.addr.clone(),
                        "the server asks for the password in cleartext; pgdog does not send it (set server_allow_cleartext = true to allow, or use scram-sha-256 on the server)".into(),
                    ))
                }
                3 => {
                    let mut pw = password()?.into_bytes();
                    pw.push(0);
                    self.write(&message::password(&pw)).await?;
                }
                5 => {
                    let salt: [u8; 4] = r
                        .bytes(4)
                        .map_err(|e| self.proto(e))?
                        .try_into()
                        .unwrap_or([0; 4]);
                    let hash = match &target.pass_through {
                        Some(PassThrough::Md5(stored)) if target.password.is_none() => {
                            auth::md5::md5_hash_from_stored(stored, salt)
                                .ok_or_else(|| ServerError::NoPassword(self.addr.clone()))?
                        }
                        _ => auth::md5::md5_hash(&target.user, &password()?, salt),
                    };
                    let mut hash = hash.into_bytes();
                    hash.push(0);
                    self.write(&message::password(&hash)).await?;
                }
                10 => {
                    let mechanisms = r.rest();
                    if !mechanisms.split(|b| *b == 0).any(|m| m == b"SCRAM-SHA-256") {
                        return Err(ServerError::UnsupportedAuth(self.addr.clone(), kind));
                    }
                    let mut client = match &target.pass_through {
                        Some(PassThrough::Scram(keys)) if target.password.is_none() => {
                            auth::scram::ScramClient::with_keys(keys.clone())
                        }
                        _ => auth::scram::ScramClient::new(&password()?),
                    };
                    let first = client.client_first();
                    self.write(&message::sasl_initial_response("SCRAM-SHA-256", &first))
                        .await?;
                    scram = Some(client);
                }
                11 => {
                    let mut client = scram
                        .take()
                        .ok_or_else(|| self.proto(ProtocolError::Malformed("SASL")))?;
                    // PBKDF2 off the async worker threads.
                    let data = r.rest().to_vec();
                    let (client, reply) = tokio::task::spawn_blocking(move || {
                        let reply = client.server_first(&data);
                        (client, reply)
                    })
                    .await
                    .map_err(|e| ServerError::Auth(self.addr.clone(), e.to_string()))?;
                    let reply =
                        reply.map_err(|e| ServerError::Auth(self.addr.clone(), e.to_string()))?;
                    scram = Some(client);
                    self.write(&message::password(&reply)).await?;
                }
                12 => {
                    let client = scram
                        .as_ref()
                        .ok_or_else(|| self.proto(ProtocolError::Malformed("SASL")))?;
                    client
                        .server_final(r.rest())
                        .map_err(|e| ServerError::Auth(self.addr.clone(), e.to_string()))?;
                    verified = true;
                }
                other => return Err(ServerError::UnsupportedAuth(self.addr.clone(), other)),
            }
        }
    }

    fn proto(&self, error: ProtocolError) -> ServerError {
        ServerError::Protocol {
            addr: self.addr.clone(),
            error,
        }
    }

    fn postgres_error(&self, m: Message) -> ServerError {
        match read_error(&m) {
            Ok(fields) => ServerError::Postgres(fields, m),
            Err(e) => self.proto(e),
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The next message from the server.
    pub async fn read(&mut self) -> Result<Message, ServerError> {
        match self.reader.next(&mut self.stream).await {
            Ok(m) => Ok(m),
            Err(e) => {
                self.healthy = false;
                Err(self.proto(e))
            }
        }
    }

    /// A message already buffered, without waiting.
    pub fn try_read(&mut self) -> Result<Option<Message>, ServerError> {
        match self.reader.try_next() {
            Ok(m) => Ok(m),
            Err(e) => {
                self.healthy = false;
                Err(self.proto(e))
            }
        }
    }

    /// The tag and length of the complete message `at` bytes into the read buffer, if it has
    /// arrived (see `MessageReader::complete_at`).
    #[inline]
    pub fn complete_at(&self, at: usize) -> Option<(u8, usize)> {
        self.reader.complete_at(at)
    }

    /// The bytes read from the server and not yet consumed.
    pub fn unread(&self) -> &[u8] {
        self.reader.unread()
    }

    /// Drops the first `n` unread bytes (relayed in place).
    pub fn consume(&mut self, n: usize) {
        self.reader.consume(n);
    }

    /// Whether a complete message is waiting in the read buffer.
    pub fn has_buffered(&self) -> bool {
        self.reader.has_message()
    }

    /// Waits until more bytes arrive (cancel-safe: usable in `select!`).
    pub async fn fill(&mut self) -> Result<(), ServerError> {
        std::future::poll_fn(|cx| self.poll_fill(cx)).await
    }

    /// `fill` as a poll.
    pub fn poll_fill(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ServerError>> {
        self.reader.poll_fill(cx, &mut self.stream).map_err(|e| {
            self.healthy = false;
            self.proto(e)
        })
    }

    pub async fn write(&mut self, m: &Message) -> Result<(), ServerError> {
        self.write_raw(m.bytes()).await
    }

    pub async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), ServerError> {
        if let Err(e) = self.stream.write_all(bytes).await {
            self.healthy = false;
            return Err(self.proto(ProtocolError::Io(e)));
        }
        Ok(())
    }

    /// Runs a simple query and drains its results; the server's error if it fails.
    pub async fn execute(&mut self, sql: &str) -> Result<(), ServerError> {
        let ms = crate::config::active().server_query_timeout;
        if ms == 0 {
            return self.execute_now(sql).await;
        }
        let limit = std::time::Duration::from_millis(ms);
        match tokio::time::timeout(limit, self.execute_now(sql)).await {
            Ok(r) => r,
            Err(_) => {
                self.healthy = false;
                let what: String = sql.chars().take(60).collect();
                Err(ServerError::Timeout(self.addr().to_string(), what, ms))
            }
        }
    }

    /// Like [`Server::execute`] with no time limit: work that takes as long as the data it
    /// touches (the resharding engine's `CREATE INDEX` on a copied table).
    pub async fn execute_unbounded(&mut self, sql: &str) -> Result<(), ServerError> {
        self.execute_now(sql).await
    }

    async fn execute_now(&mut self, sql: &str) -> Result<(), ServerError> {
        self.unnamed = Unnamed::Empty;
        self.write(&message::query(sql)).await?;
        self.read_until_ready().await
    }

    /// Reads (and drops) everything up to ReadyForQuery, recording the transaction status and
    /// parameter changes; the server's first error, if it sent one.
    pub async fn read_until_ready(&mut self) -> Result<(), ServerError> {
        self.read_rows_until_ready(|_| Ok(())).await
    }

    /// [`Server::read_until_ready`], handing each DataRow to `row`.
    async fn read_rows_until_ready(
        &mut self,
        mut row: impl FnMut(&Message) -> Result<(), ProtocolError>,
    ) -> Result<(), ServerError> {
        let mut error = None;
        loop {
            let m = self.read().await?;
            match m.tag() {
                backend::DATA_ROW => {
                    if let Err(e) = row(&m) {
                        // The rest of the answer stays unread: the connection is not reused.
                        self.healthy = false;
                        return Err(self.proto(e));
                    }
                }
                backend::ERROR_RESPONSE if error.is_none() => error = Some(self.postgres_error(m)),
                backend::READY_FOR_QUERY => {
                    self.status = TxStatus::of(&m);
                    break;
                }
                backend::PARAMETER_STATUS => self.record_parameter(&m),
                _ => {}
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Runs a simple query; all its rows, columns as text (`None` for NULL).
    pub async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, ServerError> {
        let mut rows = Vec::new();
        self.query_each_row(sql, |row| rows.push(row)).await?;
        Ok(rows)
    }

    /// Runs `sql` with text parameters (`$1`...) through the extended protocol: its rows,
    /// columns as text (`None` for NULL). A parameter is never spliced into the text.
    pub async fn query_rows_with(
        &mut self,
        sql: &str,
        params: &[Option<&str>],
    ) -> Result<Vec<Vec<Option<String>>>, ServerError> {
        self.unnamed = Unnamed::Unknown;
        let mut batch = Vec::new();
        for m in [
            message::parse("", sql, &[]),
            message::bind_text(params),
            message::execute_unnamed(),
            message::sync(),
        ] {
            batch.extend_from_slice(m.bytes());
        }
        self.write_raw(&batch).await?;
        let mut rows = Vec::new();
        self.read_rows_until_ready(|m| {
            rows.push(text_row(m)?);
            Ok(())
        })
        .await?;
        Ok(rows)
    }

    /// Runs a simple query returning one row; its columns as text (`None` for NULL; empty
    /// without a row, the last row if there are several).
    pub async fn query_row(&mut self, sql: &str) -> Result<Vec<Option<String>>, ServerError> {
        let mut last = Vec::new();
        self.query_each_row(sql, |row| last = row).await?;
        Ok(last)
    }

    /// Runs a simple query, handing each row (columns as text, `None` for NULL) to `each`.
    async fn query_each_row(
        &mut self,
        sql: &str,
        mut each: impl FnMut(Vec<Option<String>>),
    ) -> Result<(), ServerError> {
        self.unnamed = Unnamed::Empty;
        self.write(&message::query(sql)).await?;
        self.read_rows_until_ready(|m| {
            each(text_row(m)?);
            Ok(())
        })
        .await
    }

    /// Records a ParameterStatus message.
    pub fn record_parameter(&mut self, m: &Message) {
        let mut r = m.reader();
        if let (Ok(k), Ok(v)) = (r.cstr(), r.cstr()) {
            self.params.insert(k.to_string(), v.to_string());
        }
    }

    /// Whether the connection is known to be unusable, seen without a round trip and the same
    /// for plain TCP and TLS: marked unhealthy, bytes nobody asked for (Postgres sends a FATAL
    /// before it closes a connection: shutdown, `idle_session_timeout`), or its end. The socket
    /// is read only when the runtime saw it become readable: no syscall for a quiet one.
    pub fn is_broken(&mut self) -> bool {
        use std::pin::Pin;
        use std::task::{Context, Poll, Waker};
        use tokio::io::{AsyncRead, ReadBuf};
        if !self.healthy || self.reader.buffered() > 0 {
            return true;
        }
        // The socket's readiness as the runtime last saw it, without a syscall, a lock or a
        // waker (`try_io` calls the closure only when it is set).
        let readable = self
            .stream
            .try_io_readable(|| Err::<(), _>(std::io::Error::other("readable")));
        if matches!(&readable, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
            return false;
        }
        // Something arrived: read it, through TLS when the connection has it (a TLS record that
        // is no message, such as a session ticket, reads as nothing: Pending).
        let mut cx = Context::from_waker(Waker::noop());
        let mut bytes = [0u8; 64];
        let mut buf = ReadBuf::new(&mut bytes);
        !matches!(
            Pin::new(&mut self.stream).poll_read(&mut cx, &mut buf),
            Poll::Pending
        )
    }

    /// Ends the session politely.
    pub async fn terminate(mut self) {
        let _ = self.stream.write_all(message::terminate().bytes()).await;
    }
}

/// SSLRequest and the TLS handshake as `server_tls` asks (libpq's sslmode semantics).
async fn negotiate_tls(
    mut tcp: TcpStream,
    target: &ServerTarget,
    general: &crate::config::General,
) -> Result<Stream, ServerError> {
    use crate::config::ServerTls;
    let mode = general.server_tls;
    if mode == ServerTls::Disable {
        return Ok(Stream::Plain(tcp));
    }
    let addr = target.addr();
    let failed = |why: String| ServerError::Tls(addr.clone(), why);
    let mut request = Vec::with_capacity(8);
    request.extend_from_slice(&8i32.to_be_bytes());
    request.extend_from_slice(&80877103i32.to_be_bytes());
    tcp.write_all(&request)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer)
        .await
        .map_err(|e| failed(e.to_string()))?;
    match answer[0] {
        backend::PARAMETER_STATUS => {}
        backend::NOTICE_RESPONSE if mode == ServerTls::Prefer => return Ok(Stream::Plain(tcp)),
        backend::NOTICE_RESPONSE => {
            return Err(failed(format!(
                "the server does not accept TLS (server_tls = {})",
                serde_name(mode)
            )))
        }
        other => return Err(failed(format!("unexpected answer {other} to SSLRequest"))),
    }
    let connector = crate::net::tls_client::connector(mode, general.server_tls_ca.as_deref())
        .map_err(failed)?;
    let name = crate::net::tls_client::server_name(&target.host).map_err(failed)?;
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| failed(e.to_string()))?;
    Ok(Stream::TlsClient(Box::new(tls)))
}

fn serde_name(mode: crate::config::ServerTls) -> String {
    toml::Value::try_from(mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
