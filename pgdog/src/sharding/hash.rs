//! Postgres' hash functions, bit for bit: `hash_bytes_extended` (Bob Jenkins' lookup3 as in
//! Postgres' `src/common/hashfn.c`), the per-type extended hashes a hash operator class uses, and
//! the row hash `PARTITION BY HASH` computes. Pure arithmetic: no parsing, no placement policy.
//!
//! Postgres on little-endian machines (x86_64, aarch64) reads the key as little-endian 32-bit
//! words, and its aligned and unaligned code paths then agree; that is what is computed here on
//! every host. (A big-endian server, e.g. s390x, hashes differently and is not supported.)
//!
//! This file depends on nothing else in the crate (the integration test compiles it on its own).

/// The seed Postgres passes to the extended hash functions of partition key columns
/// (`HASH_PARTITION_SEED` in `partition.h`).
pub const HASH_PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;

/// lookup3's starting value, before the key length is added.
const INITIAL: u32 = 0x9e37_79b9u32.wrapping_add(3_923_095);

#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline]
fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// The internal state after the length and (when non-zero) the seed went in.
#[inline]
fn start(len: u32, seed: u64) -> (u32, u32, u32) {
    let init = INITIAL.wrapping_add(len);
    let (mut a, mut b, mut c) = (init, init, init);
    if seed != 0 {
        // The seed acts as a 12-byte chunk of data: its high half, its low half, four zeroes.
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    (a, b, c)
}

/// Up to four bytes as a little-endian word, missing high bytes zero.
#[inline]
fn word(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .rev()
        .fold(0u32, |acc, &byte| (acc << 8) | u32::from(byte))
}

/// Postgres' `hash_bytes_extended` (`hash_any_extended`): a 64-bit hash of `data` with `seed`
/// (0: no seed).
pub fn hash_bytes_extended(data: &[u8], seed: u64) -> u64 {
    // Postgres keeps the length in a uint32 taken from an int: lengths wrap the same way.
    let (mut a, mut b, mut c) = start(data.len() as u32, seed);
    let mut chunks = data.chunks_exact(12);
    for chunk in &mut chunks {
        a = a.wrapping_add(word(&chunk[0..4]));
        b = b.wrapping_add(word(&chunk[4..8]));
        c = c.wrapping_add(word(&chunk[8..12]));
        mix(&mut a, &mut b, &mut c);
    }
    let rest = chunks.remainder();
    // The last 0 to 11 bytes: the first four into a, the next four into b, the rest into c
    // shifted up one byte (c's lowest byte is reserved for the length).
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]) << 8);
    }
    final_mix(&mut a, &mut b, &mut c);
    (u64::from(b) << 32) | u64::from(c)
}

/// Postgres' `hash_uint32_extended`: a 64-bit hash of one 32-bit value with `seed`.
pub fn hash_uint32_extended(value: u32, seed: u64) -> u64 {
    let (mut a, mut b, mut c) = start(4, seed);
    a = a.wrapping_add(value);
    final_mix(&mut a, &mut b, &mut c);
    (u64::from(b) << 32) | u64::from(c)
}

/// Postgres' `hashint2extended` (`smallint`): the value widened to int32.
pub fn hash_int2_extended(value: i16, seed: u64) -> u64 {
    hash_uint32_extended(i32::from(value) as u32, seed)
}

/// Postgres' `hashint4extended` (`integer`).
pub fn hash_int4_extended(value: i32, seed: u64) -> u64 {
    hash_uint32_extended(value as u32, seed)
}

/// Postgres' `hashint8extended` (`bigint`): the high half folded into the low half so that a
/// value in int32 range hashes like the same int4 (cross-type hashing in `integer_ops`).
pub fn hash_int8_extended(value: i64, seed: u64) -> u64 {
    let high = (value >> 32) as u32;
    let low = value as u32;
    let folded = low ^ if value >= 0 { high } else { !high };
    hash_uint32_extended(folded, seed)
}

/// Postgres' `uuid_hash_extended`: the 16 bytes as stored (network order).
pub fn hash_uuid_extended(value: &[u8; 16], seed: u64) -> u64 {
    hash_bytes_extended(value, seed)
}

/// Postgres' `hashtextextended` for a deterministic collation (every default collation): the
/// string's bytes in the database encoding (UTF-8 here).
pub fn hash_text_extended(value: &[u8], seed: u64) -> u64 {
    hash_bytes_extended(value, seed)
}

/// Postgres' `hash_combine64`: folds hash `b` into running hash `a`.
pub fn hash_combine64(a: u64, b: u64) -> u64 {
    a ^ b
        .wrapping_add(0x49a0_f4dd_15e5_a8e3)
        .wrapping_add(a << 54)
        .wrapping_add(a >> 7)
}

/// The row hash Postgres computes for a single-column hash partition key whose column hash
/// (the type's extended hash with [`HASH_PARTITION_SEED`]) is `column_hash`: the partition with
/// remainder `row_hash % modulus` holds the row.
pub fn partition_row_hash(column_hash: u64) -> u64 {
    hash_combine64(0, column_hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: u64 = HASH_PARTITION_SEED;

    /// Reads `data` the way Postgres' aligned little-endian path does (whole words, then the
    /// tail byte by byte through the `switch`), written independently of `hash_bytes_extended`.
    fn reference(data: &[u8], seed: u64) -> u64 {
        let (mut a, mut b, mut c) = start(data.len() as u32, seed);
        let mut k = data;
        while k.len() >= 12 {
            a = a.wrapping_add(u32::from_le_bytes([k[0], k[1], k[2], k[3]]));
            b = b.wrapping_add(u32::from_le_bytes([k[4], k[5], k[6], k[7]]));
            c = c.wrapping_add(u32::from_le_bytes([k[8], k[9], k[10], k[11]]));
            mix(&mut a, &mut b, &mut c);
            k = &k[12..];
        }
        let n = k.len();
        let byte = |i: usize, shift: u32| u32::from(k[i]) << shift;
        // Postgres' `switch (len)` with fall-through, case by case as in hashfn.c: this
        // reference is meant to be read against that file line by line, so its eleven
        // near-identical cases stay written out (a repeated shape the duplicates tool reports).
        if n >= 11 {
            c = c.wrapping_add(byte(10, 24));
        }
        if n >= 10 {
            c = c.wrapping_add(byte(9, 16));
        }
        if n >= 9 {
            c = c.wrapping_add(byte(8, 8));
        }
        if n >= 8 {
            b = b.wrapping_add(byte(7, 24));
        }
        if n >= 7 {
            b = b.wrapping_add(byte(6, 16));
        }
        if n >= 6 {
            b = b.wrapping_add(byte(5, 8));
        }
        if n >= 5 {
            b = b.wrapping_add(byte(4, 0));
        }
        if n >= 4 {
            a = a.wrapping_add(byte(3, 24));
        }
        if n >= 3 {
            a = a.wrapping_add(byte(2, 16));
        }
        if n >= 2 {
            a = a.wrapping_add(byte(1, 8));
        }
        if n >= 1 {
            a = a.wrapping_add(byte(0, 0));
        }
        final_mix(&mut a, &mut b, &mut c);
        (u64::from(b) << 32) | u64::from(c)
    }

    #[test]
    fn every_tail_length_matches_the_reference_reading() {
        let data: Vec<u8> = (0..64u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(5))
            .collect();
        for len in 0..data.len() {
            for seed in [0, 1, SEED, u64::MAX] {
                assert_eq!(
                    hash_bytes_extended(&data[..len], seed),
                    reference(&data[..len], seed),
                    "len {len} seed {seed:#x}"
                );
            }
        }
    }

    #[test]
    fn uint32_hash_equals_hashing_its_four_bytes() {
        for v in [0u32, 1, 42, 0x8000_0000, u32::MAX] {
            for seed in [0, SEED] {
                assert_eq!(
                    hash_uint32_extended(v, seed),
                    hash_bytes_extended(&v.to_le_bytes(), seed)
                );
            }
        }
    }

    #[test]
    fn integer_hashes_agree_across_widths() {
        for v in [
            0i64,
            1,
            -1,
            42,
            -42,
            32767,
            -32768,
            1 << 20,
            i32::MAX as i64,
            i32::MIN as i64,
        ] {
            let h8 = hash_int8_extended(v, SEED);
            assert_eq!(h8, hash_int4_extended(v as i32, SEED), "{v}");
            if let Ok(small) = i16::try_from(v) {
                assert_eq!(h8, hash_int2_extended(small, SEED), "{v}");
            }
        }
        // Outside int32 the fold differs from truncation.
        assert_ne!(
            hash_int8_extended(1 << 32, SEED),
            hash_int4_extended(0, SEED)
        );
    }

    /// Values computed by PostgreSQL 18 (x86_64): `SELECT hashint8extended(v, s)` etc. and the
    /// remainder `tableoid` shows for rows of `PARTITION BY HASH` tables.
    #[test]
    fn known_postgres_values() {
        for (v, expected) in KNOWN_INT8 {
            assert_eq!(hash_int8_extended(*v, SEED) as i64, *expected, "bigint {v}");
        }
        for (v, expected) in KNOWN_INT4 {
            assert_eq!(
                hash_int4_extended(*v, SEED) as i64,
                *expected,
                "integer {v}"
            );
        }
        for (v, expected) in KNOWN_INT2 {
            assert_eq!(
                hash_int2_extended(*v, SEED) as i64,
                *expected,
                "smallint {v}"
            );
        }
        for (v, expected) in KNOWN_TEXT {
            assert_eq!(
                hash_text_extended(v.as_bytes(), SEED) as i64,
                *expected,
                "text {v:?}"
            );
        }
        for (v, expected) in KNOWN_UUID {
            assert_eq!(
                hash_uuid_extended(&uuid(v), SEED) as i64,
                *expected,
                "uuid {v}"
            );
        }
        for (v, expected) in KNOWN_NO_SEED {
            assert_eq!(
                hash_bytes_extended(v.as_bytes(), 0) as i64,
                *expected,
                "{v:?}"
            );
        }
        for (v, modulus, remainder) in KNOWN_PARTITIONS {
            let row = partition_row_hash(hash_int8_extended(*v, SEED));
            assert_eq!(row % modulus, *remainder, "bigint {v} modulus {modulus}");
        }
    }

    /// A uuid's 16 bytes from its canonical text.
    fn uuid(text: &str) -> [u8; 16] {
        let hex: Vec<u8> = text.bytes().filter(|b| *b != b'-').collect();
        let mut out = [0u8; 16];
        for (i, pair) in hex.chunks(2).enumerate() {
            out[i] = u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap();
        }
        out
    }

    const KNOWN_INT8: &[(i64, i64)] = &[
        (0, -4403592609991167795),
        (1, 5968994663651403477),
        (-1, -5017072347659237694),
        (42, 7363975540656877951),
        (-42, 6660635123915733087),
        (2147483648, 4938542303000433043),
        (-2147483649, -6050265599104649060),
        (i64::MAX, 4938542303000433043),
        (i64::MIN, -6050265599104649060),
        (1234567890123, 4234184308168508908),
    ];
    const KNOWN_INT4: &[(i32, i64)] = &[
        (0, -4403592609991167795),
        (1, 5968994663651403477),
        (-1, -5017072347659237694),
        (i32::MAX, -6050265599104649060),
        (i32::MIN, 4938542303000433043),
        (100000, -4261177139570981594),
    ];
    const KNOWN_INT2: &[(i16, i64)] = &[
        (0, -4403592609991167795),
        (7, 1708571371176205364),
        (-7, -7298374200968567817),
        (i16::MAX, -6436696229286267413),
        (i16::MIN, 5885242512097991578),
    ];
    const KNOWN_TEXT: &[(&str, i64)] = &[
        ("", -5700645584453517373),
        ("a", -6705225459120232837),
        ("abc", 3628778498291917250),
        ("hello world!", -1886269529411655687),
        ("twelve bytes", 1551002018851372083),
        ("thirteen byte", -7829037210646445165),
        ("é", 4377877661621198540),
        ("日本語", -8050275759738715173),
        ("🐘 postgres", 9095653878879271637),
        (
            "a fairly long string that spans several twelve byte chunks",
            3819454907625964908,
        ),
    ];
    const KNOWN_UUID: &[(&str, i64)] = &[
        ("00000000-0000-0000-0000-000000000000", -5281082146396728638),
        ("ffffffff-ffff-ffff-ffff-ffffffffffff", -148986464341306210),
        ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", 424513190990560493),
        ("123e4567-e89b-12d3-a456-426614174000", -1252132692482143582),
    ];
    /// `hashtextextended(v, 0)`: no seed.
    const KNOWN_NO_SEED: &[(&str, i64)] = &[
        ("", -6939563903564495251),
        ("a", 3591986179850072241),
        ("abcdefghijklmnop", 878954068520307163),
    ];
    /// (bigint, modulus, remainder Postgres chose).
    const KNOWN_PARTITIONS: &[(i64, u64, u64)] = &[
        (i64::MIN, 3, 1),
        (-1, 3, 2),
        (0, 3, 2),
        (1, 3, 2),
        (42, 3, 0),
        (1000000, 3, 0),
        (i64::MAX, 3, 0),
    ];
}
