//! A client moving between two pgdogs of a port at a restart (`ops::handover`): the session
//! state that goes with its socket, and the session the new pgdog makes of it. Only a client
//! that is between transactions, holds no server, uses a plain TCP socket with nothing
//! unread or unsent and is in transaction mode moves (the rest finish, or end with 57P01 as in
//! any shutdown). What moves: who the client is, its session parameters (startup and SET),
//! its cancel key, its prepared statements (named and unnamed), `SET pgdog.role`, its last
//! write's WAL position (read_your_writes) and its LISTEN channels.
use super::cancel;
use super::client::{Client, ServeClient};
use super::params::Params;
use super::session::Session;
use crate::net::stream::Stream;
use crate::net::MessageReader;
use crate::registry::Registry;
use crate::stats;
use serde::{Deserialize, Serialize};
use std::os::fd::OwnedFd;

/// What a client's session carries to the next pgdog.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HandedSession {
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub params: Params,
    pub pid: i32,
    pub secret: [u8; 4],
    /// Named prepared statements: client name, query, parameter types.
    pub statements: Vec<(String, String, Vec<i32>)>,
    /// The client's Parse of its unnamed statement, as sent.
    pub unnamed: Option<Vec<u8>>,
    /// `SET pgdog.role`: "primary" or "replica".
    pub role_hint: Option<String>,
    pub write_lsn: Option<u64>,
    pub channels: Vec<String>,
}

/// Takes a client handed over by another pgdog: its session is served from now on here.
pub fn resume(payload: &[u8], fd: OwnedFd) -> Result<(), String> {
    if crate::ops::shutdown::is_shutting_down() {
        return Err("this pgdog is shutting down too".into());
    }
    let state: HandedSession =
        serde_json::from_slice(payload).map_err(|e| format!("session state: {e}"))?;
    let registry = Registry::current();
    if registry.router(&state.database).is_some() {
        return Err(format!("database \"{}\" is sharded here", state.database));
    }
    let shard = registry
        .shards(&state.user, &state.database)
        .and_then(|s| s.first().cloned())
        .ok_or_else(|| {
            format!(
                "no pool for user \"{}\" and database \"{}\"",
                state.user, state.database
            )
        })?;
    let tcp = std::net::TcpStream::from(fd);
    tcp.set_nonblocking(true).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::from_std(tcp).map_err(|e| e.to_string())?;
    let registration = cancel::register_as(state.pid, state.secret)
        .ok_or("its cancel key is held by another client here")?;
    let guard = stats::clients::register(tcp.peer_addr().ok(), tcp.local_addr().ok());
    guard.0.set_login(stats::clients::Login {
        user: state.user.clone(),
        database: state.database.clone(),
        application_name: state.application_name.clone(),
        tls: false,
        pid: state.pid,
    });
    let meter = stats::Meter::new(guard.0.clone(), &state.user, &state.database);
    let general = &registry.settings.config.general;
    let reader = MessageReader::for_client(general.max_message_size);
    let client = Client::new(
        Stream::Plain(tcp),
        reader,
        state.user.clone(),
        state.database.clone(),
        state.params.clone(),
        registration,
        meter,
    );
    let mut session = Box::new(Session::new(client, shard, general.query_parser));
    session.restore(state);
    tokio::spawn(async move {
        // The client's entry in the clients table lives as long as its session.
        let _guard = guard;
        session.run().await;
    });
    Ok(())
}
