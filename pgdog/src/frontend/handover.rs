//! A client moving between two pgdogs of a port at a restart (`ops::handover`): the session
//! state that goes with its socket, and the session the new pgdog makes of it. Only a client
//! that is between transactions, holds no server, uses a plain TCP socket with nothing
//! unread or unsent and is in transaction mode moves (the rest finish, or end with 57P01 as in
//! any shutdown). What moves: who the client is, its session parameters (startup and SET),
//! its cancel key, its prepared statements, `SET pgdog.role`, its last writes' WAL positions
//! (read_your_writes); on one server also its unnamed statement and its LISTEN channels; on
//! a sharded database its `SET pgdog.shard` / `pgdog.sharding_key` and schemas.
use super::cancel;
use super::client::{Client, ServeClient};
use super::params::Params;
use super::session::{Session, SessionError};
use super::sharded::ShardedSession;
use crate::net::stream::Stream;
use crate::net::MessageReader;
use crate::ops::handover::Received;
use crate::registry::Registry;
use crate::stats;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::os::fd::OwnedFd;
use std::pin::Pin;

/// The layout of [`HandedSession`]: a pgdog takes only its own (a rollback to an older
/// version ends the moving clients with 57P01 instead of misreading their state).
pub(crate) const STATE_VERSION: u32 = 1;

/// What a client's session carries to the next pgdog.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HandedSession {
    pub version: u32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub params: Params,
    pub pid: i32,
    pub secret: [u8; 4],
    pub statements: Vec<HandedStatement>,
    /// `SET pgdog.role`: "primary" or "replica".
    pub role_hint: Option<String>,
    /// read_your_writes: per shard (one entry on one server).
    pub write_lsns: Vec<Option<u64>>,
    /// One server: the client's Parse of its unnamed statement, as sent.
    pub unnamed: Option<Vec<u8>>,
    /// One server: its LISTEN channels.
    pub channels: Vec<String>,
    /// One server: its prepared DEALLOCATE / LISTEN statements pgdog answers.
    pub answered: serde_json::Value,
    /// A sharded database's session: `SET pgdog.shard`, `pgdog.sharding_key`, schemas.
    pub sharded: Option<HandedRouting>,
}

impl HandedSession {
    /// What every session hands over: who the client is, its parameters and cancel key, its
    /// statements, `SET pgdog.role` and last writes; the one-server and sharded parts empty
    /// (each session kind fills its own).
    pub(crate) fn of_client(
        client: &Client,
        statements: Vec<HandedStatement>,
        role_hint: Option<crate::router::read_write::RoleHint>,
        write_lsns: Vec<Option<u64>>,
    ) -> HandedSession {
        HandedSession {
            version: STATE_VERSION,
            user: client.user.clone(),
            database: client.database.clone(),
            application_name: client.meter.client().login().application_name,
            params: client.params.clone(),
            pid: client.cancel.pid,
            secret: client.cancel.secret,
            statements,
            role_hint: role_hint.map(role_name),
            write_lsns,
            unnamed: None,
            channels: Vec::new(),
            answered: serde_json::Value::Null,
            sharded: None,
        }
    }
}

/// A prepared statement: the client's name, its text and parameter types; on a sharded
/// database also the types the servers inferred and the generated-id parameters added.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HandedStatement {
    pub name: String,
    pub query: String,
    /// The text as the client sent it, when it is not `query` in UTF-8 (another
    /// client_encoding).
    #[serde(default)]
    pub wire: Option<Vec<u8>>,
    pub param_types: Vec<i32>,
    #[serde(default)]
    pub inferred: Vec<i32>,
    #[serde(default)]
    pub generated: usize,
}

/// A sharded session's manual routing.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HandedRouting {
    pub shard: Option<usize>,
    pub sharding_key: Option<String>,
    pub search_path: Vec<String>,
}

/// `SET pgdog.role`'s value as text.
fn role_name(hint: crate::router::read_write::RoleHint) -> String {
    match hint {
        crate::router::read_write::RoleHint::Primary => "primary".into(),
        crate::router::read_write::RoleHint::Replica => "replica".into(),
    }
}

/// Why a session in `mode`, pinned for `pinned`, cannot move (its state is on its server).
pub(crate) fn stays_on_server(
    mode: crate::config::PoolerMode,
    pinned: Option<&'static str>,
) -> Result<(), &'static str> {
    if mode != crate::config::PoolerMode::Transaction {
        return Err("session pooling");
    }
    pinned.map_or(Ok(()), Err)
}

/// The shutdown asked a session to end between transactions: the client and `state` go to
/// the pgdog taking over when there is one and the session can move (`state` is Ok), else the
/// session ends with 57P01 as in any shutdown. What the session returns.
pub(crate) async fn pass(
    client: &Client,
    state: impl FnOnce() -> Result<HandedSession, &'static str>,
) -> SessionError {
    use super::session::timeouts::stopped;
    use std::os::fd::AsRawFd;
    if client.meter.client().is_killed() || crate::ops::handover::successor().is_none() {
        return stopped(client.meter.client());
    }
    let stays = |why: &str| {
        tracing::info!(
            "client {}@{} not handed over: {why}",
            client.user,
            client.database
        );
        stopped(client.meter.client())
    };
    let fd = match &client.stream {
        Stream::Plain(tcp) => tcp.as_raw_fd(),
        Stream::Unix(unix) => unix.as_raw_fd(),
        _ => return stays("a TLS connection"),
    };
    if !client.reader.is_empty() || !client.out.is_empty() {
        return stays("bytes in flight");
    }
    let state = match state() {
        Ok(state) => state,
        Err(why) => return stays(why),
    };
    let bytes = match serde_json::to_vec(&state) {
        Ok(b) => b,
        Err(e) => return stays(&format!("session state: {e}")),
    };
    use crate::ops::handover::Sent;
    match crate::ops::handover::pass_session(&bytes, fd).await {
        Sent::Taken => SessionError::HandedOver,
        Sent::Refused(why) => stays(&why),
        Sent::Unknown(why) => {
            // The other pgdog may be serving the socket already: not a byte more from here.
            tracing::warn!(
                "client {}@{}: handover unconfirmed ({why}); closing without a word",
                client.user,
                client.database
            );
            SessionError::HandedOver
        }
    }
}

/// What this pgdog does with what another pgdog of its port hands it (the taker the binary
/// gives `ops::handover::start`).
pub fn take(received: Received) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
    Box::pin(async move {
        match received {
            Received::Cancel { pid, secret } => {
                cancel::cancel_here(pid, secret).await;
                Ok(())
            }
            Received::Listener(fd) => super::listener::adopt(fd),
            Received::Session(payload, fd) => resume(&payload, fd),
        }
    })
}

/// Takes a client handed over by another pgdog: its session is served from now on here.
pub fn resume(payload: &[u8], fd: OwnedFd) -> Result<(), String> {
    if crate::ops::shutdown::is_shutting_down() {
        return Err("this pgdog is shutting down too".into());
    }
    let state: HandedSession =
        serde_json::from_slice(payload).map_err(|e| format!("session state: {e}"))?;
    if state.version != STATE_VERSION {
        return Err(format!(
            "session state version {} (this pgdog reads {STATE_VERSION})",
            state.version
        ));
    }
    let registry = Registry::current();
    let general = &registry.settings.config.general;
    if stats::clients::count() >= general.max_client_connections {
        return Err("max_client_connections reached".into());
    }
    let router = registry.router(&state.database);
    if router.is_some() != state.sharded.is_some() {
        return Err(format!(
            "database \"{}\" is {}sharded here",
            state.database,
            if router.is_some() { "" } else { "not " }
        ));
    }
    let shards = registry
        .shards(&state.user, &state.database)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            format!(
                "no pool for user \"{}\" and database \"{}\"",
                state.user, state.database
            )
        })?;
    if !matches!(
        shards[0].mode(),
        crate::config::PoolerMode::Transaction | crate::config::PoolerMode::Statement
    ) {
        return Err("the pool is in session mode here".into());
    }
    let (stream, guard) = adopt_socket(fd)?;
    let registration = cancel::register_as(state.pid, state.secret)
        .ok_or("its cancel key is held by another client here")?;
    guard.0.set_login(stats::clients::Login {
        user: state.user.clone(),
        database: state.database.clone(),
        application_name: state.application_name.clone(),
        tls: false,
        pid: state.pid,
    });
    let meter = stats::Meter::new(guard.0.clone(), &state.user, &state.database);
    let reader = MessageReader::for_client(general.max_message_size);
    let client = Client::new(
        stream,
        reader,
        state.user.clone(),
        state.database.clone(),
        state.params.clone(),
        registration,
        meter,
    );
    // The client's entry in the clients table lives as long as its session.
    if let Some(router) = router {
        let two_phase = general.two_phase_commit;
        let mut session = Box::new(ShardedSession::new(client, shards, router, two_phase));
        session.restore(state);
        tokio::spawn(async move {
            let _guard = guard;
            Box::pin(session.run()).await;
        });
    } else {
        let shard = shards[0].clone();
        let mut session = Box::new(Session::new(client, shard, general.query_parser));
        session.restore(state);
        tokio::spawn(async move {
            let _guard = guard;
            session.run().await;
        });
    }
    Ok(())
}

/// A client's socket passed over by another pgdog (TCP, or a client of the Unix-domain
/// socket), and its entry in the clients table.
fn adopt_socket(fd: OwnedFd) -> Result<(Stream, stats::clients::ClientGuard), String> {
    let unix = socket2::SockRef::from(&fd)
        .domain()
        .map_err(|e| e.to_string())?
        == socket2::Domain::UNIX;
    if unix {
        let std = std::os::unix::net::UnixStream::from(fd);
        std.set_nonblocking(true).map_err(|e| e.to_string())?;
        let path = std
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(|p| p.display().to_string()))
            .unwrap_or_default();
        let unix = tokio::net::UnixStream::from_std(std).map_err(|e| e.to_string())?;
        return Ok((Stream::Unix(unix), stats::clients::register_unix(&path)));
    }
    let tcp = std::net::TcpStream::from(fd);
    tcp.set_nonblocking(true).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::from_std(tcp).map_err(|e| e.to_string())?;
    let guard = stats::clients::register(tcp.peer_addr().ok(), tcp.local_addr().ok());
    Ok((Stream::Plain(tcp), guard))
}
