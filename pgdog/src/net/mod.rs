//! The Postgres wire protocol: message framing over `bytes`, message builders and readers, the
//! startup packet, and TLS streams. No policy lives here: which message goes where is decided
//! by `frontend` and `backend`.
pub mod bind;
pub mod buffers;
pub mod codec;
pub mod encoding;
pub mod error;
pub mod keepalive;
pub mod message;
pub mod quote;
pub mod rows;
pub mod startup;
pub mod stream;
pub mod tag;
pub mod tls_client;
pub mod unix;

pub use codec::{MessageReader, MAX_STARTUP_PACKET};
pub use error::ProtocolError;
pub use message::Message;
pub use tag::TxStatus;

/// Empties a write buffer once its bytes are out, keeping its memory for the next ones (no
/// allocation per write), unless a large answer grew it: then it starts small again, so an
/// idle connection does not keep the memory of its largest result.
pub fn reuse(buf: &mut bytes::BytesMut) {
    const KEEP: usize = 64 * 1024;
    if buf.capacity() > KEEP {
        *buf = bytes::BytesMut::with_capacity(1024);
    } else {
        buf.clear();
    }
}
