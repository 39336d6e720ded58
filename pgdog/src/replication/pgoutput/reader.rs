//! A bounds-checked big-endian cursor over one message's bytes. Slices share the message's
//! `Bytes` buffer (no copies); every read that runs past the end is a [`Reason`], never a panic.

use bytes::Bytes;

use super::error::Reason;

/// Cursor over one pgoutput message.
pub(crate) struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    pub(crate) fn new(buf: Bytes) -> Reader {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes, borrowed, advancing past them.
    fn take(&mut self, n: usize, field: &'static str) -> Result<&[u8], Reason> {
        if self.remaining() < n {
            return Err(Reason::Truncated(field));
        }
        let start = self.pos;
        self.pos += n;
        Ok(&self.buf[start..start + n])
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], Reason> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, Reason> {
        Ok(self.array::<1>(field)?[0])
    }

    pub(crate) fn i16(&mut self, field: &'static str) -> Result<i16, Reason> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, Reason> {
        Ok(u32::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, Reason> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, Reason> {
        Ok(u64::from_be_bytes(self.array(field)?))
    }

    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, Reason> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    /// The next `n` bytes as a slice of the shared buffer (a reference count, no copy).
    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<Bytes, Reason> {
        if self.remaining() < n {
            return Err(Reason::Truncated(field));
        }
        let start = self.pos;
        self.pos += n;
        Ok(self.buf.slice(start..start + n))
    }

    /// A NUL-terminated string (`String` in the protocol docs); must be UTF-8.
    pub(crate) fn string(&mut self, field: &'static str) -> Result<String, Reason> {
        let rest = &self.buf[self.pos..];
        let len = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(Reason::Truncated(field))?;
        let text = std::str::from_utf8(&rest[..len])
            .map_err(|_| Reason::other(format!("{field} is not valid UTF-8")))?
            .to_owned();
        self.pos += len + 1;
        Ok(text)
    }

    /// Fails unless every byte was consumed: trailing bytes mean we misread the layout.
    pub(crate) fn finish(&self) -> Result<(), Reason> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(Reason::other(format!(
                "{n} unexpected trailing byte(s) after the message"
            ))),
        }
    }
}
