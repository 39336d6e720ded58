//! Errors of the replication client: each says what was being done and against which server.
use crate::backend::ServerError;

/// Everything that can go wrong on a replication connection.
#[derive(Debug, thiserror::Error)]
pub enum ReplicationError {
    /// The connection (TCP, startup or authentication) failed.
    #[error("replication connection to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: Box<ServerError>,
    },
    /// A command failed: the server's error (or an I/O error) while running it.
    #[error("{command} on {addr}: {source}")]
    Command {
        command: String,
        addr: String,
        #[source]
        source: Box<ServerError>,
    },
    /// The server answered with something this client does not expect at this point.
    #[error("{command} on {addr}: unexpected message {tag:?} from the server")]
    Unexpected {
        command: String,
        addr: String,
        tag: char,
    },
    /// A result or a replication message could not be read.
    #[error("{command} on {addr}: malformed {what} from the server")]
    Malformed {
        command: String,
        addr: String,
        what: &'static str,
    },
    /// The server ended the replication stream with an error.
    #[error("replication stream from {addr}: {source}")]
    Stream {
        addr: String,
        #[source]
        source: Box<ServerError>,
    },
    /// Creating a slot did not finish before the deadline; the server was told to cancel it.
    #[error(
        "creating slot {slot} on {addr} did not finish within {seconds:.1}s and was cancelled \
         (on a standby the primary must write a running-xacts record: is it reachable?)"
    )]
    SlotTimeout {
        slot: String,
        addr: String,
        seconds: f64,
    },
    /// Nudging the primary with `pg_log_standby_snapshot()` failed.
    #[error("nudging the primary {addr} with pg_log_standby_snapshot(): {source}")]
    Nudge {
        addr: String,
        #[source]
        source: Box<ServerError>,
    },
    /// A CancelRequest could not be delivered.
    #[error("sending a cancel request to {addr}: {source}")]
    Cancel {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// An operation that needs a running stream was called without one (or the reverse).
    #[error("{0}")]
    State(&'static str),
    /// An invalid option value (slot name, protocol version, ...).
    #[error("invalid option: {0}")]
    Option(String),
    /// A connection URL that cannot be used.
    #[error(
        "invalid URL {url:?}: {reason} (expected postgres://user[:password]@host[:port]/database)"
    )]
    Url { url: String, reason: &'static str },
    /// An LSN that is not `X/Y` in hex.
    #[error("invalid LSN {0:?}: expected two hex numbers like 0/16B3748")]
    Lsn(String),
}

/// Result of the replication client.
pub type Result<T, E = ReplicationError> = std::result::Result<T, E>;
