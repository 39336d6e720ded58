//! Authentication primitives: SCRAM-SHA-256 and MD5 password exchanges as PostgreSQL does them.
//!
//! What this module owns:
//! - [`scram`]: the SCRAM-SHA-256 message logic (RFC 5802 / RFC 7677, no channel binding) for
//!   both directions — [`ScramServer`] when pgdog authenticates a client, [`ScramClient`] when
//!   pgdog authenticates itself to a PostgreSQL server — plus the stored verifier format
//!   ([`ScramVerifier`], `SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>`) and
//!   [`hash_password`], which `pgdog hash <password>` prints.
//! - [`md5`]: PostgreSQL's salted MD5 password response ([`md5_hash`], [`md5_verify`]) from a
//!   plaintext password or from a stored `md5...` password.
//! - [`saslprep`]: password normalization exactly as PostgreSQL's `pg_saslprep` does it.
//! - [`AuthError`]: the one error type of all of the above.
//!
//! What it must not do: any I/O. Functions here take and return the payloads of protocol
//! messages (`AuthenticationSASL*`, `SASLInitialResponse`, `SASLResponse`, `PasswordMessage`)
//! as bytes; framing, sockets, timeouts and choosing which method to use belong to the
//! frontend/backend code. Nothing here may panic on bytes that came from a peer: every
//! malformed input is an [`AuthError`]. Secret comparisons are constant-time.

pub mod md5;
pub mod saslprep;
pub mod scram;

pub use self::md5::{md5_hash, md5_hash_from_stored, md5_verify, md5_verify_stored};
pub use self::scram::{
    hash_password, ScramClient, ScramKeys, ScramServer, ScramVerifier, SCRAM_SHA_256,
};

use thiserror::Error;

/// Everything that can go wrong while authenticating, on either side of the proxy.
///
/// Messages are safe to log: they never contain passwords or keys. Variants carrying a
/// `&'static str` name the part of the message that was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    /// The client's proof did not match the stored verifier (or the MD5 response was wrong).
    #[error("password authentication failed")]
    WrongPassword,

    /// A SCRAM message was not valid UTF-8.
    #[error("malformed SCRAM message: not valid UTF-8")]
    NotUtf8,

    /// A SCRAM message did not follow the grammar; the text says which part.
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),

    /// A base64 field of a SCRAM message or verifier did not decode; the text names the field.
    #[error("invalid base64 in {0}")]
    InvalidBase64(&'static str),

    /// The client asked for channel binding (`p=...`, SCRAM-SHA-256-PLUS), which pgdog
    /// does not offer.
    #[error("channel binding is not supported (client requested SCRAM-SHA-256-PLUS)")]
    ChannelBindingNotSupported,

    /// The `c=` attribute of client-final-message does not match the GS2 header of
    /// client-first-message.
    #[error("channel binding data in client-final-message does not match client-first-message")]
    ChannelBindingMismatch,

    /// The client sent an authorization identity (`a=...`), which PostgreSQL does not support.
    #[error("SCRAM authorization identity (a=) is not supported")]
    AuthzidNotSupported,

    /// The peer sent a mandatory extension (`m=...`) that we do not understand.
    #[error("SCRAM mandatory extension (m=) is not supported")]
    MandatoryExtension,

    /// The nonce in a later message does not match the one negotiated earlier.
    #[error("SCRAM nonce mismatch")]
    NonceMismatch,

    /// The server answered server-final-message with `e=<error>`.
    #[error("server rejected SCRAM authentication: {0}")]
    ServerError(String),

    /// The server's signature in server-final-message is wrong: the server does not know the
    /// password (or the exchange was tampered with).
    #[error("SCRAM server signature mismatch")]
    ServerSignatureMismatch,

    /// A stored SCRAM verifier string is not in PostgreSQL's format; the text says why.
    #[error("invalid SCRAM verifier: {0}")]
    InvalidVerifier(&'static str),

    /// Pass-through SCRAM: the server offered another salt or iteration count than the
    /// verifier the client was authenticated with (the role's verifier differs on this server).
    #[error("the server's SCRAM verifier for this user is not the one pgdog authenticated the client with (another salt or iteration count): pass-through login needs the same verifier on every server")]
    OtherVerifier,

    /// A step of the exchange was called in the wrong order, twice, or after a failure.
    #[error("SCRAM exchange step out of order: {0}")]
    OutOfOrder(&'static str),
}
