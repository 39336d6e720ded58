//! The startup phase of a client connection: SSLRequest/GSSENCRequest, CancelRequest,
//! protocol version negotiation, finding the user and database, authentication, and the
//! greeting (ParameterStatus, BackendKeyData, ReadyForQuery). A login to the admin database
//! (`[general] admin_database`, enabled by `admin_password`) is authenticated the same way and
//! handed to `crate::admin::session`.
use super::cancel;
use super::client::{Client, ServeClient};
use super::params::Params;
use super::session::Session;
use super::sharded::ShardedSession;
use crate::net::message;
use crate::net::startup::Startup;
use crate::net::stream::Stream;
use crate::net::{MessageReader, ProtocolError};
use crate::registry::Registry;
use crate::stats;
use tokio::io::AsyncWriteExt;

mod auth;
mod auth_query;
mod secrets;
use tokio::net::TcpStream;

/// Newest protocol minor version spoken (3.2, PostgreSQL 18).
const NEWEST_MINOR: u16 = 2;

/// Why a login was refused: SQLSTATE and message, sent as FATAL.
#[derive(Clone)]
struct Refusal(&'static str, String);

impl From<ProtocolError> for Refusal {
    fn from(e: ProtocolError) -> Refusal {
        Refusal(e.code(), e.to_string())
    }
}

/// Serves one client connection from its first byte to its end.
pub async fn serve(socket: TcpStream, tls: Option<tokio_rustls::TlsAcceptor>) {
    let _ = socket.set_nodelay(true);
    let client = stats::clients::register(socket.peer_addr().ok(), socket.local_addr().ok());
    let registry = Registry::current();
    crate::net::keepalive::apply(&socket, &registry.settings.config.general);
    serve_stream(Stream::Plain(socket), tls, client, registry).await
}

/// Serves one client of pgdog's Unix-domain socket `path` (no TLS there: an SSLRequest is
/// answered `N`, as Postgres does).
pub async fn serve_unix(socket: tokio::net::UnixStream, path: std::sync::Arc<str>) {
    let client = stats::clients::register_unix(&path);
    serve_stream(Stream::Unix(socket), None, client, Registry::current()).await
}

async fn serve_stream(
    stream: Stream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    client: stats::clients::ClientGuard,
    registry: std::sync::Arc<Registry>,
) {
    let peer = format!("{}:{}", client.addr, client.port);
    let general = &registry.settings.config.general;
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_millis(general.client_login_timeout);
    let mut reader = MessageReader::for_client(general.max_message_size);
    let startup = startup(stream, &mut reader, tls, &peer);
    // Past the deadline before the StartupMessage: closed without a word, as Postgres does.
    let Ok(Some((mut stream, minor, params))) = tokio::time::timeout_at(deadline, startup).await
    else {
        return;
    };
    // (The Unix-domain socket has no TLS: its clients are local, as PgBouncer has it.)
    if general.tls_mode == crate::config::TlsMode::Required && matches!(stream, Stream::Plain(_)) {
        let refusal = Refusal(
            "28000",
            "pgdog accepts TLS connections only (tls_mode = \"required\"): connect with sslmode=require".into(),
        );
        return refuse(&mut stream, refusal).await;
    }
    if stats::clients::count() > general.max_client_connections {
        let refusal = Refusal(
            "53300",
            format!(
                "too many clients already (max_client_connections = {})",
                general.max_client_connections
            ),
        );
        return refuse(&mut stream, refusal).await;
    }
    // Boxed: the login's state (authentication, the first server connection) is not kept in
    // the task for the session's whole life; the session below is all an idle client holds.
    // `client` (its entry in the clients table) lives until the session ends.
    let login = Box::pin(login(
        stream, reader, minor, params, registry, &client, deadline,
    ));
    match login.await {
        Ok(Some(LoggedIn::Single(mut session))) => session.run().await,
        // Boxed: a sharded session's future is larger; one-server clients do not pay for it.
        Ok(Some(LoggedIn::Sharded(mut session))) => Box::pin(session.run()).await,
        Ok(None) => {}
        Err(refusal) if crate::config::active().log_pooler_errors => tracing::warn!(
            client = %peer,
            sqlstate = refusal.0,
            "pooler error: {}",
            refusal.1
        ),
        Err(refusal) => tracing::debug!("{peer}: login refused: {}", refusal.1),
    }
}

/// A logged-in client's session, ready to serve it (boxed: an idle client's task holds a
/// pointer and the future of the wait for its next message, not a copy of the session).
enum LoggedIn {
    Single(Box<Session>),
    Sharded(Box<ShardedSession>),
}

fn login_timeout() -> Refusal {
    Refusal("57014", "canceling authentication due to timeout".into())
}

/// SSLRequest / GSSENCRequest / CancelRequest until the StartupMessage: the stream (TLS
/// when asked), the protocol minor version and parameters (`None`: the connection is done).
async fn startup(
    mut stream: Stream,
    reader: &mut MessageReader,
    tls: Option<tokio_rustls::TlsAcceptor>,
    peer: &str,
) -> Option<(Stream, u16, Vec<(String, String)>)> {
    loop {
        let packet = match reader.startup_packet(&mut stream).await {
            Ok(p) => p,
            Err(ProtocolError::Closed) => return None,
            Err(e) => {
                refuse(&mut stream, Refusal("08P01", e.to_string())).await;
                return None;
            }
        };
        match Startup::parse(&packet) {
            Ok(Startup::Ssl) => match (&tls, stream) {
                (Some(acceptor), Stream::Plain(mut tcp)) if reader.is_empty() => {
                    if tcp.write_all(b"S").await.is_err() {
                        return None;
                    }
                    // Boxed: the handshake's state is large and used once.
                    match Box::pin(acceptor.accept(tcp)).await {
                        Ok(s) => stream = Stream::Tls(Box::new(s)),
                        Err(e) => {
                            tracing::info!("{peer}: TLS handshake failed: {e}");
                            return None;
                        }
                    }
                }
                (_, mut s) => {
                    if s.write_all(b"N").await.is_err() {
                        return None;
                    }
                    stream = s;
                }
            },
            Ok(Startup::GssEnc) => {
                if stream.write_all(b"N").await.is_err() {
                    return None;
                }
            }
            Ok(Startup::Cancel { pid, secret }) => {
                cancel::cancel(pid, &secret).await;
                return None;
            }
            Ok(Startup::Login { minor, params, .. }) => return Some((stream, minor, params)),
            Err(e) => {
                refuse(&mut stream, Refusal(e.code(), e.to_string())).await;
                return None;
            }
        }
    }
}

async fn refuse(stream: &mut Stream, refusal: Refusal) {
    let _ = stream
        .write_all(message::fatal(refusal.0, &refusal.1).bytes())
        .await;
    let _ = stream.shutdown().await;
}

async fn login(
    mut stream: Stream,
    mut reader: MessageReader,
    minor: u16,
    params: Vec<(String, String)>,
    registry: std::sync::Arc<Registry>,
    client: &stats::clients::ClientGuard,
    deadline: tokio::time::Instant,
) -> Result<Option<LoggedIn>, Refusal> {
    reader.set_max_size(crate::net::codec::MAX_AUTH_MESSAGE);
    let auth = auth::authenticate(&mut stream, &mut reader, minor, &params, &registry);
    let result = match tokio::time::timeout_at(deadline, auth).await {
        Ok(r) => r,
        Err(_) => Err(login_timeout()),
    };
    let identity = match result {
        Ok(v) => v,
        Err(refusal) => {
            let _ = stream
                .write_all(message::fatal(refusal.0, &refusal.1).bytes())
                .await;
            let _ = stream.shutdown().await;
            return Err(refusal);
        }
    };
    start_session(stream, reader, params, identity, registry, client).await
}

/// Serves a connection pgdog made to itself to replay another client's transactions
/// (`backend::mirror`): logged in as `user` to `database` without authentication (the other
/// end is pgdog's own mirror lane, never a network client).
pub(crate) async fn serve_mirror(socket: TcpStream, user: String, database: String) {
    let _ = socket.set_nodelay(true);
    let client = stats::clients::register(socket.peer_addr().ok(), socket.local_addr().ok());
    let registry = Registry::current();
    let reader = MessageReader::for_client(registry.settings.config.general.max_message_size);
    let params = vec![
        ("user".to_string(), user.clone()),
        ("database".to_string(), database.clone()),
        ("application_name".to_string(), "pgdog_mirror".to_string()),
    ];
    let identity = auth::Identity {
        user,
        database,
        admin: false,
        discovered: None,
    };
    let stream = Stream::Plain(socket);
    // A replay is not mirrored again (two databases mirroring each other would loop).
    match start_session(stream, reader, params, identity, registry, &client).await {
        Ok(Some(LoggedIn::Single(mut session))) => {
            session.mirror_off();
            session.run().await
        }
        Ok(Some(LoggedIn::Sharded(mut session))) => {
            session.mirror_off();
            Box::pin(session.run()).await
        }
        Ok(None) => {}
        Err(refusal) => tracing::info!("mirror session refused: {}", refusal.1),
    }
}

/// `serve_mirror` as the mirror lanes take it (`backend::mirror::lane::ServeFn`).
pub(crate) fn serve_mirror_boxed(
    socket: TcpStream,
    user: String,
    database: String,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(serve_mirror(socket, user, database))
}

/// After authentication: the client's pools, the greeting, and its session.
async fn start_session(
    mut stream: Stream,
    mut reader: MessageReader,
    params: Vec<(String, String)>,
    identity: auth::Identity,
    registry: std::sync::Arc<Registry>,
    client: &stats::clients::ClientGuard,
) -> Result<Option<LoggedIn>, Refusal> {
    let auth::Identity {
        user,
        database,
        admin,
        discovered,
    } = identity;
    reader.set_max_size(registry.settings.config.general.max_message_size);
    let application_name = params
        .iter()
        .find(|(k, _)| k == "application_name")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let mut login_info = stats::clients::Login {
        user: user.clone(),
        database: database.clone(),
        application_name,
        tls: matches!(stream, Stream::Tls(_)),
        pid: 0,
    };
    if registry.settings.config.general.log_connections {
        // PgBouncer's line.
        tracing::info!(
            database = %database,
            user = %user,
            client = %format!("{}:{}", client.addr, client.port),
            "login attempt: db={database} user={user} tls={} replication=no",
            if login_info.tls { "yes" } else { "no" }
        );
    }
    if admin {
        drop(registry);
        client.set_login(login_info);
        return greet_admin(stream, reader, client).await.map(|()| None);
    }
    if crate::backend::pause::is_disabled(&database) {
        // PgBouncer's answer to a client of a DISABLEd database.
        let refusal = Refusal("08P01", format!("database \"{database}\" is disabled"));
        refuse(&mut stream, refusal.clone()).await;
        return Err(refusal);
    }
    // Pools made at login (auth_query users, the fallback database, pass-through): each login
    // hands its credential over, so that a changed password moves them to the new one. The
    // generation is read first: pools replaced meanwhile make the session look again.
    let generation = Registry::generation();
    let made_at_login = discovered.is_some();
    let shards = match discovered {
        Some(credential) => Registry::discover(&user, &database, credential).await,
        None => registry.shards(&user, &database),
    };
    let Some(shard) = shards.as_ref().and_then(|s| s.first()).cloned() else {
        let refusal = Refusal(
            "28000",
            format!("no pool for user \"{user}\" and database \"{database}\""),
        );
        let _ = stream
            .write_all(message::fatal(refusal.0, &refusal.1).bytes())
            .await;
        return Err(refusal);
    };
    if shard.mode() == crate::config::PoolerMode::Statement && registry.router(&database).is_some()
    {
        let refusal = Refusal(
            "0A000",
            "statement pooling is not supported on sharded databases (pooler_mode = \"statement\"): use transaction".into(),
        );
        refuse(&mut stream, refusal.clone()).await;
        return Err(refusal);
    }
    let server_params = match shard.any().params().await {
        Ok(p) => p,
        Err(e) => {
            if made_at_login && e.code() == "3D000" {
                // A database name the fallback's server does not have leaves nothing behind.
                Registry::forget(&user, &database);
            }
            let refusal = Refusal(login_code(&e.code()), e.to_string());
            let _ = stream
                .write_all(message::fatal(refusal.0, &refusal.1).bytes())
                .await;
            return Err(refusal);
        }
    };
    let client_params = Params::from_startup(&params);
    if let Err(refusal) = check_startup_settings(&shard, &client_params, &params).await {
        let _ = stream
            .write_all(message::fatal(refusal.0, &refusal.1).bytes())
            .await;
        return Err(refusal);
    }
    let registration = cancel::register();
    login_info.pid = registration.pid;
    client.set_login(login_info);
    let meter = stats::Meter::new(client.0.clone(), &user, &database);
    let mut greeting = Vec::new();
    greeting.extend_from_slice(message::auth_ok().bytes());
    for (name, value) in &server_params {
        let value = client_params
            .startup_value(name)
            .unwrap_or_else(|| value.clone());
        greeting.extend_from_slice(message::parameter_status(name, &value).bytes());
    }
    greeting.extend_from_slice(
        message::backend_key_data(registration.pid, &registration.secret).bytes(),
    );
    greeting.extend_from_slice(message::ready_for_query(crate::net::TxStatus::Idle).bytes());
    if stream.write_all(&greeting).await.is_err() {
        return Ok(None);
    }
    let query_parser = registry.settings.config.general.query_parser;
    let client = Client::new(
        stream,
        reader,
        user,
        database,
        client_params,
        registration,
        meter,
    );
    if let Some(router) = registry.router(&client.database) {
        let shards = shards.unwrap_or_default();

        let two_phase = registry.settings.config.general.two_phase_commit;
        let mut session = ShardedSession::new(client, shards, router, two_phase);
        session.set_generation(generation);
        return Ok(Some(LoggedIn::Sharded(Box::new(session))));
    }
    let mut session = Session::new(client, shard, query_parser);
    session.set_generation(generation);
    Ok(Some(LoggedIn::Single(Box::new(session))))
}

/// Startup parameters are applied at login, so a bad one fails the login as on Postgres (an
/// invalid `options` word 42601, an unknown parameter 42704, a bad value 22023) instead of
/// every query after it. The server keeps the settings (tracked) when they are fine.
async fn check_startup_settings(
    shard: &crate::backend::Shard,
    client: &Params,
    params: &[(String, String)],
) -> Result<(), Refusal> {
    if let Some(v) = client.startup_value("client_encoding") {
        if crate::net::encoding::canonical(&v).is_none() {
            return Err(Refusal(
                "22023",
                format!("invalid value for parameter \"client_encoding\": \"{v}\""),
            ));
        }
    }
    let options = params.iter().find(|(k, _)| k == "options");
    if let Some(word) = options.and_then(|(_, v)| super::params::invalid_option(v)) {
        return Err(Refusal(
            "42601",
            format!("invalid command-line argument for server process: {word}"),
        ));
    }
    // What every driver sends needs no server round trip.
    let plain = params.iter().all(|(k, _)| {
        matches!(
            k.as_str(),
            "user" | "database" | "application_name" | "client_encoding" | "replication"
        ) || k.starts_with("_pq_.")
    });
    if plain {
        return Ok(());
    }
    // No free server now: the settings are checked when the first query applies them.
    let wait = std::time::Duration::from_millis(100);
    let Ok(Ok(mut server)) = tokio::time::timeout(wait, shard.any().get()).await else {
        return Ok(());
    };
    let Some((sql, after)) = client.sync(&server.settings) else {
        return Ok(());
    };
    match server.execute(&sql).await {
        Ok(()) => {
            server.set_settings(after);
            Ok(())
        }
        Err(crate::backend::ServerError::Postgres(fields, _)) => {
            // One Query: the failed settings rolled back together, the server's are unchanged.
            Err(Refusal(static_code(&fields.code), fields.message))
        }
        Err(e) => {
            server.discard();
            Err(Refusal("08006", e.to_string()))
        }
    }
}

/// The SQLSTATE of a login whose first server connection failed: the server's own for a
/// missing database or a refused login, else 08006.
fn login_code(code: &str) -> &'static str {
    ["3D000", "28P01", "28000", "53300", "57P03"]
        .into_iter()
        .find(|c| *c == code)
        .unwrap_or("08006")
}

/// A server's SQLSTATE as the `'static` code a refusal carries (the common ones; else 22023).
fn static_code(code: &str) -> &'static str {
    [
        "42704", "22023", "42501", "55P02", "42601", "22P02", "3F000",
    ]
    .into_iter()
    .find(|c| *c == code)
    .unwrap_or("22023")
}

/// The greeting of an admin client, then its session.
async fn greet_admin(
    mut stream: Stream,
    reader: MessageReader,
    client: &stats::ClientInfo,
) -> Result<(), Refusal> {
    let registration = cancel::register();
    let mut greeting = Vec::new();
    greeting.extend_from_slice(message::auth_ok().bytes());
    let version = format!("18.0 (pgdog {})", env!("CARGO_PKG_VERSION"));
    for (name, value) in [
        ("server_version", version.as_str()),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("application_name", "pgdog admin"),
    ] {
        greeting.extend_from_slice(message::parameter_status(name, value).bytes());
    }
    greeting.extend_from_slice(
        message::backend_key_data(registration.pid, &registration.secret).bytes(),
    );
    greeting.extend_from_slice(message::ready_for_query(crate::net::TxStatus::Idle).bytes());
    if stream.write_all(&greeting).await.is_err() {
        return Ok(());
    }
    client.set_state(stats::ClientState::Idle);
    crate::admin::session::serve(stream, reader, client).await;
    drop(registration);
    Ok(())
}
