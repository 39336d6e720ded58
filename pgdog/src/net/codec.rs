//! Framing: splits a byte stream into messages without copying them (each [`Message`] is a
//! `Bytes` slice of the read buffer, header included, so forwarding is a plain write).
use super::error::ProtocolError;
use super::message::Message;
use bytes::{Buf, BytesMut};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Postgres' own limit for a startup packet.
pub const MAX_STARTUP_PACKET: usize = 10_000;

/// Largest message accepted from a client before it is authenticated.
pub const MAX_AUTH_MESSAGE: usize = 64 * 1024;

/// Most the buffer grows ahead of the bytes that arrived (a peer's announced length is not
/// trusted with memory).
const GROW_AHEAD: usize = 64 * 1024;

/// Reads messages from one direction of a connection.
#[derive(Debug)]
pub struct MessageReader {
    buf: BytesMut,
    max_size: usize,
    /// Bytes reserved when the buffer runs low.
    chunk: usize,
}

impl MessageReader {
    pub fn new(max_size: usize) -> MessageReader {
        MessageReader {
            buf: BytesMut::with_capacity(16 * 1024),
            max_size,
            chunk: 16 * 1024,
        }
    }

    /// A reader for a client connection: small until the client sends more (thousands of idle
    /// clients each keep one).
    pub fn for_client(max_size: usize) -> MessageReader {
        MessageReader {
            buf: BytesMut::with_capacity(1024),
            max_size,
            chunk: 4 * 1024,
        }
    }

    /// Changes the largest message accepted (smaller before authentication).
    pub fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
    }

    /// Bytes already read but not yet consumed (a complete message may be among them).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether a complete message is buffered (or a bad header, which `try_next` reports).
    pub fn has_message(&self) -> bool {
        if self.buf.len() < 5 {
            return false;
        }
        let len = i32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
        len < 4 || self.buf.len() > len as usize
    }

    /// The tag and total length of the complete message `at` bytes into the buffer, without
    /// taking it; None when it has not fully arrived or its header is bad (`try_next`, which
    /// the caller reaches next, reports that).
    #[inline]
    pub fn complete_at(&self, at: usize) -> Option<(u8, usize)> {
        let h = self.buf.get(at..at + 5)?;
        let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]);
        if len < 4 {
            return None;
        }
        let total = len as usize + 1;
        (total <= self.max_size && self.buf.len() - at >= total).then_some((h[0], total))
    }

    /// The bytes read and not yet consumed.
    pub fn unread(&self) -> &[u8] {
        &self.buf
    }

    /// Drops the first `n` unread bytes (messages relayed from the buffer in place).
    pub fn consume(&mut self, n: usize) {
        self.buf.advance(n);
    }

    /// The next complete message from the buffer, without reading.
    pub fn try_next(&mut self) -> Result<Option<Message>, ProtocolError> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        let len = i32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
        if len < 4 {
            return Err(ProtocolError::BadLength(len as i64));
        }
        let total = len as usize + 1;
        if total > self.max_size {
            return Err(ProtocolError::TooLarge(total, self.max_size));
        }
        if self.buf.len() < total {
            self.buf.reserve((total - self.buf.len()).min(GROW_AHEAD));
            return Ok(None);
        }
        Ok(Some(Message::from_bytes(self.buf.split_to(total).freeze())))
    }

    /// The next message, reading as needed. `Closed` at a clean end of stream.
    pub async fn next<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
    ) -> Result<Message, ProtocolError> {
        loop {
            if let Some(m) = self.try_next()? {
                return Ok(m);
            }
            self.fill(io).await?;
        }
    }

    /// Reads more bytes into the buffer.
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, io: &mut R) -> Result<(), ProtocolError> {
        std::future::poll_fn(|cx| self.poll_fill(cx, io)).await
    }

    /// `fill` as a poll (cancel-safe: bytes read are in the buffer).
    pub fn poll_fill<R: AsyncRead + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut R,
    ) -> Poll<Result<(), ProtocolError>> {
        if self.buf.capacity() == 0 {
            self.buf = super::buffers::take();
        }
        if self.buf.capacity() - self.buf.len() < self.chunk / 4 {
            self.buf.reserve(self.chunk);
        }
        let n = ready!(tokio_util::io::poll_read_buf(
            Pin::new(io),
            cx,
            &mut self.buf
        ))?;
        if n == 0 {
            return Poll::Ready(Err(if self.buf.is_empty() {
                ProtocolError::Closed
            } else {
                ProtocolError::Truncated
            }));
        }
        Poll::Ready(Ok(()))
    }

    /// Reads an untagged startup-phase packet (length + payload); returns the payload.
    pub async fn startup_packet<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
    ) -> Result<bytes::Bytes, ProtocolError> {
        loop {
            if self.buf.len() >= 4 {
                let len = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                if !(8..=MAX_STARTUP_PACKET as i32).contains(&len) {
                    return Err(ProtocolError::BadStartup(format!("length {len}")));
                }
                if self.buf.len() >= len as usize {
                    let mut packet = self.buf.split_to(len as usize);
                    packet.advance(4);
                    return Ok(packet.freeze());
                }
            }
            self.fill(io).await?;
        }
    }

    /// Whether unread bytes are waiting (used to refuse data sent before a TLS handshake).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Gives the buffer back to the thread's spares when every byte read has been consumed
    /// (`fill` takes one again): a connection waiting for its peer holds no buffer.
    pub fn release_if_empty(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 0 {
            super::buffers::give(std::mem::take(&mut self.buf));
        }
    }

    /// Reads exactly `n` raw bytes (SSLRequest answers from servers).
    pub async fn read_byte<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
    ) -> Result<u8, ProtocolError> {
        if self.buf.is_empty() {
            let mut b = [0u8; 1];
            io.read_exact(&mut b).await?;
            return Ok(b[0]);
        }
        Ok(self.buf.split_to(1)[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finds_complete_messages_in_place() {
        // Two whole messages, then 3 bytes of a third.
        let mut data: &[u8] = b"D\0\0\0\x06ab1\0\0\0\x04Z\0\0";
        let mut r = MessageReader::new(1 << 20);
        r.fill(&mut data).await.unwrap();
        assert_eq!(r.complete_at(0), Some((b'D', 7)));
        assert_eq!(r.complete_at(7), Some((b'1', 5)));
        assert_eq!(r.complete_at(12), None);
        assert_eq!(&r.unread()[..7], b"D\0\0\0\x06ab");
        r.consume(12);
        assert_eq!(r.unread(), b"Z\0\0");
        // A bad or oversized header is left for try_next to report.
        let mut bad: &[u8] = b"D\0\0\0\x02";
        let mut r = MessageReader::new(1 << 20);
        r.fill(&mut bad).await.unwrap();
        assert_eq!(r.complete_at(0), None);
        assert!(r.try_next().is_err());
        let mut big: &[u8] = b"D\0\0\0\x20abcdefghijklmnopqrstuvwxyz0123";
        let mut r = MessageReader::new(16);
        r.fill(&mut big).await.unwrap();
        assert_eq!(r.complete_at(0), None);
        assert!(r.try_next().is_err());
    }

    #[tokio::test]
    async fn splits_messages_and_rejects_bad_lengths() {
        let mut data: &[u8] = b"Q\0\0\0\x0dSELECT 1\0X\0\0\0\x04";
        let mut r = MessageReader::new(1 << 20);
        let m = r.next(&mut data).await.unwrap();
        assert_eq!(m.tag(), b'Q');
        assert_eq!(m.payload(), b"SELECT 1\0");
        assert_eq!(r.next(&mut data).await.unwrap().tag(), b'X');
        assert!(matches!(
            r.next(&mut data).await,
            Err(ProtocolError::Closed)
        ));

        let mut bad: &[u8] = b"Q\0\0\0\x02";
        assert!(matches!(
            MessageReader::new(1 << 20).next(&mut bad).await,
            Err(ProtocolError::BadLength(2))
        ));
        let mut big: &[u8] = b"Q\x7f\0\0\0";
        assert!(matches!(
            MessageReader::new(1 << 20).next(&mut big).await,
            Err(ProtocolError::TooLarge(..))
        ));
        let mut cut: &[u8] = b"Q\0\0\0\x0dSELE";
        assert!(matches!(
            MessageReader::new(1 << 20).next(&mut cut).await,
            Err(ProtocolError::Truncated)
        ));
    }
}
