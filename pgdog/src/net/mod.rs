//! The Postgres wire protocol: message framing over `bytes`, message builders and readers, the
//! startup packet, and TLS streams. No policy lives here: which message goes where is decided
//! by `frontend` and `backend`.
pub mod bind;
pub mod codec;
pub mod error;
pub mod keepalive;
pub mod message;
pub mod quote;
pub mod rows;
pub mod startup;
pub mod stream;
pub mod tag;
pub mod tls_client;

pub use codec::{MessageReader, MAX_STARTUP_PACKET};
pub use error::ProtocolError;
pub use message::Message;
pub use tag::TxStatus;
