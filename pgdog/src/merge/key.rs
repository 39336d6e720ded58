//! Group, DISTINCT and set-operation keys: the typed key bytes of each key column, NULL or not,
//! written one after another into one byte string (length-prefixed, so two different keys
//! never write the same bytes). One allocation per new key; a lookup reuses a scratch buffer.
//!
//! foldhash instead of the standard SipHash: in the 5-million-group benchmark
//! (`benchmarks/results/router.md`) SipHash was 14% of pgdog's time.
use std::borrow::Cow;
use std::hash::BuildHasher;

/// Keys to values, hashed with foldhash (seeded per process).
pub type KeyMap<V> = std::collections::HashMap<Box<[u8]>, V, foldhash::fast::RandomState>;
/// A set of keys.
pub type KeySet = std::collections::HashSet<Box<[u8]>, foldhash::fast::RandomState>;

/// Writes the key of these column values (`None`: NULL) into `buf` (cleared first).
pub fn encode<'a>(buf: &mut Vec<u8>, values: impl Iterator<Item = Option<Cow<'a, [u8]>>>) {
    buf.clear();
    for v in values {
        match v {
            None => buf.push(0),
            Some(v) => {
                buf.push(1);
                buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
                buf.extend_from_slice(&v);
            }
        }
    }
}

/// The hash that picks a key's spill partition at `depth` (another hash at each depth, so a
/// part split again spreads over new parts).
pub fn partition_hash(key: &[u8], depth: u32) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed_0000_u64 + u64::from(depth)).hash_one(key)
}

/// Bytes a stored key is counted for (the boxed bytes, the map slot and allocator overhead).
pub fn stored_bytes(key: &[u8]) -> u64 {
    64 + key.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn different_keys_differ() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        let k = |v: &'static [u8]| Some(Cow::Borrowed(v));
        encode(&mut a, [k(b"ab"), k(b"c")].into_iter());
        encode(&mut b, [k(b"a"), k(b"bc")].into_iter());
        assert_ne!(a, b);
        encode(&mut a, [None, k(b"")].into_iter());
        encode(&mut b, [k(b""), None].into_iter());
        assert_ne!(a, b);
        assert_ne!(partition_hash(&a, 0), partition_hash(&a, 1));
    }
}
