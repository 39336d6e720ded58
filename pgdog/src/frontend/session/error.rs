//! How a one-server session ends (also the sharded session's): the error `serve` returns.
use crate::net::message::read_error;
use crate::net::{Message, ProtocolError};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Client(#[from] ProtocolError),
    /// A reload made the database sharded: this session type cannot serve it any more.
    #[error("{0}")]
    Reconfigured(String),
    /// Ended by pgdog (a timeout, KILL, shutdown): FATAL with this SQLSTATE and message.
    #[error("{1}")]
    Terminated(&'static str, String),
    /// The server connection holding the client's session state ended: this FATAL (the
    /// server's own, unchanged, or 08006), then the connection closes, as with Postgres.
    #[error("{}", describe_fatal(.0))]
    ServerClosed(Message),
    /// The client sent Terminate: a clean end.
    #[error("the client left")]
    ClientLeft,
    /// The client and its session went to another pgdog (a restart): nothing is sent.
    #[error("handed over to another pgdog")]
    HandedOver,
}

/// The message of a FATAL, for logs.
fn describe_fatal(m: &Message) -> String {
    read_error(m).map_or_else(
        |_| "server connection lost".into(),
        |f| format!("{} ({})", f.message, f.code),
    )
}
