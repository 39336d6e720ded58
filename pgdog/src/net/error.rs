//! Protocol errors, each with the SQLSTATE a client should see.

#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("connection closed")]
    Closed,
    #[error("connection closed in the middle of a message")]
    Truncated,
    #[error("invalid message length {0}")]
    BadLength(i64),
    #[error("message of {0} bytes exceeds the limit of {1} bytes")]
    TooLarge(usize, usize),
    #[error("invalid frontend message type {0}")]
    UnknownMessage(u8),
    #[error("malformed {0} message")]
    Malformed(&'static str),
    #[error("invalid startup packet: {0}")]
    BadStartup(String),
    #[error("unsupported frontend protocol {0}.{1}: server supports 3.0 to 3.2")]
    UnsupportedProtocol(u16, u16),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("TLS: {0}")]
    Tls(String),
    /// pgdog ends the connection (KILL, shutdown): 57P01.
    #[error("{0}")]
    Terminated(String),
}

impl ProtocolError {
    /// SQLSTATE: 08P01 (protocol violation) for malformed input, 08006 for I/O failures.
    pub fn code(&self) -> &'static str {
        match self {
            ProtocolError::UnsupportedProtocol(..) => "0A000",
            ProtocolError::Terminated(_) => "57P01",
            ProtocolError::Io(_) | ProtocolError::Closed | ProtocolError::Tls(_) => "08006",
            _ => "08P01",
        }
    }
}
