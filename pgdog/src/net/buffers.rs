//! Spare I/O buffers of this thread. A client waiting for its next request holds no buffer: it
//! gives its buffers back here and takes one when bytes arrive (PgBouncer keeps a pool of I/O
//! buffers the same way), so thousands of idle clients hold no buffer memory and a busy one
//! allocates nothing per request.
use bytes::BytesMut;
use std::cell::RefCell;

/// Capacity of a new spare buffer.
pub const SIZE: usize = 4096;
/// Most spare buffers kept per thread; more given back are freed.
const KEEP: usize = 64;

thread_local! {
    static SPARE: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for at least `SIZE / 4` bytes.
pub fn take() -> BytesMut {
    SPARE
        .with_borrow_mut(Vec::pop)
        .unwrap_or_else(|| BytesMut::with_capacity(SIZE))
}

/// Gives a buffer back (its bytes are dropped). Kept only if it has useful room and is not a
/// large answer's buffer, and while fewer than `KEEP` are spare.
pub fn give(mut buf: BytesMut) {
    buf.clear();
    if !(SIZE / 4..=4 * SIZE).contains(&buf.capacity()) {
        return;
    }
    SPARE.with_borrow_mut(|spare| {
        if spare.len() < KEEP {
            spare.push(buf);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_is_taken_again_and_small_or_large_ones_are_not_kept() {
        let mut b = take();
        b.extend_from_slice(b"hello");
        let ptr = b.as_ptr();
        give(b);
        let again = take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr, "the spare buffer is reused");
        give(BytesMut::with_capacity(16));
        give(BytesMut::with_capacity(1 << 20));
        assert_eq!(SPARE.with_borrow(Vec::len), 0, "neither kept");
    }
}
