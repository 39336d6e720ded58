//! Tests: hand-built messages for every type and version (`messages.rs`), real PostgreSQL 18
//! captures (`fixtures.rs`, `captured.rs`), and a deterministic fuzz loop (`fuzz.rs`).

mod captured;
mod fixtures;
mod fuzz;
mod messages;

use bytes::Bytes;

/// `Msg` methods that append an integer of the type they are named after, big-endian.
macro_rules! big_endian {
    ($($int:ident),*) => {
        $(
            pub fn $int(self, v: $int) -> Msg {
                self.raw(&v.to_be_bytes())
            }
        )*
    };
}

/// Builds one message byte by byte, big-endian like the protocol.
#[derive(Default, Clone)]
pub(super) struct Msg(pub Vec<u8>);

impl Msg {
    pub fn new(kind: u8) -> Msg {
        Msg(vec![kind])
    }
    pub fn u8(mut self, v: u8) -> Msg {
        self.0.push(v);
        self
    }
    big_endian!(i16, u32, i32, u64, i64);
    pub fn str(mut self, s: &str) -> Msg {
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        self
    }
    pub fn raw(mut self, b: &[u8]) -> Msg {
        self.0.extend_from_slice(b);
        self
    }
    /// TupleData from column specs: `None` null, `Some("\u{0}u")` unchanged, else text.
    pub fn tuple(self, cols: &[Col]) -> Msg {
        let mut m = self.i16(cols.len() as i16);
        for col in cols {
            m = match col {
                Col::Null => m.u8(b'n'),
                Col::Unchanged => m.u8(b'u'),
                Col::Text(t) => m.u8(b't').i32(t.len() as i32).raw(t.as_bytes()),
                Col::Binary(b) => m.u8(b'b').i32(b.len() as i32).raw(b),
            };
        }
        m
    }
    pub fn bytes(&self) -> Bytes {
        Bytes::from(self.0.clone())
    }
}

/// A column for [`Msg::tuple`].
pub(super) enum Col {
    Null,
    Unchanged,
    Text(&'static str),
    Binary(&'static [u8]),
}

/// Decodes a hex string (fixtures).
pub(super) fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
