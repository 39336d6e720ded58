//! pgdog's hash placement against real PostgreSQL 18: for smallint, integer, bigint, uuid and
//! text keys (extremes, negatives, empty and non-ASCII strings), our column hashes equal
//! Postgres' `hash*extended` functions bit for bit, and `partition_row_hash % modulus` names the
//! partition Postgres routes the row to in `PARTITION BY HASH` tables of several moduli.
//!
//! The integration crate does not depend on the pgdog library, so the test compiles pgdog's
//! `sharding/hash.rs` (which depends on nothing else) directly.
#[allow(dead_code)]
#[path = "../../pgdog/src/sharding/hash.rs"]
mod hash;

use hash::{
    hash_bytes_extended, hash_int2_extended, hash_int4_extended, hash_int8_extended,
    hash_text_extended, hash_uuid_extended, partition_row_hash, HASH_PARTITION_SEED,
};
use std::collections::HashMap;
use topology::Topology;

const MODULI: [u64; 5] = [2, 3, 4, 7, 10];
/// Keys per type.
const KEYS: usize = 12_000;

/// splitmix64: reproducible pseudo-random keys.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One type's test keys.
enum Keys {
    Smallint(Vec<i16>),
    Integer(Vec<i32>),
    Bigint(Vec<i64>),
    Uuid(Vec<[u8; 16]>),
    Text(Vec<String>),
}

impl Keys {
    fn name(&self) -> &'static str {
        match self {
            Keys::Smallint(_) => "smallint",
            Keys::Integer(_) => "integer",
            Keys::Bigint(_) => "bigint",
            Keys::Uuid(_) => "uuid",
            Keys::Text(_) => "text",
        }
    }

    /// Postgres' extended hash function for the type (support function 2 of its hash opclass).
    fn hash_function(&self) -> &'static str {
        match self {
            Keys::Smallint(_) => "hashint2extended",
            Keys::Integer(_) => "hashint4extended",
            Keys::Bigint(_) => "hashint8extended",
            Keys::Uuid(_) => "uuid_hash_extended",
            Keys::Text(_) => "hashtextextended",
        }
    }

    fn len(&self) -> usize {
        match self {
            Keys::Smallint(v) => v.len(),
            Keys::Integer(v) => v.len(),
            Keys::Bigint(v) => v.len(),
            Keys::Uuid(v) => v.len(),
            Keys::Text(v) => v.len(),
        }
    }

    /// The keys as Postgres input text (sent as `text[]`, cast by the server).
    fn texts(&self) -> Vec<String> {
        match self {
            Keys::Smallint(v) => v.iter().map(ToString::to_string).collect(),
            Keys::Integer(v) => v.iter().map(ToString::to_string).collect(),
            Keys::Bigint(v) => v.iter().map(ToString::to_string).collect(),
            Keys::Uuid(v) => v.iter().map(uuid_text).collect(),
            Keys::Text(v) => v.clone(),
        }
    }

    /// Our column hash of key `i` with `seed`.
    fn column_hash(&self, i: usize, seed: u64) -> u64 {
        match self {
            Keys::Smallint(v) => hash_int2_extended(v[i], seed),
            Keys::Integer(v) => hash_int4_extended(v[i], seed),
            Keys::Bigint(v) => hash_int8_extended(v[i], seed),
            Keys::Uuid(v) => hash_uuid_extended(&v[i], seed),
            Keys::Text(v) => hash_text_extended(v[i].as_bytes(), seed),
        }
    }
}

fn uuid_text(u: &[u8; 16]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Edge cases first, then a run around zero, then pseudo-random values, `KEYS` in all.
fn integers(min: i64, max: i64, rng: &mut Rng) -> Vec<i64> {
    let mut keys = vec![
        min,
        min + 1,
        max - 1,
        max,
        0,
        1,
        -1,
        255,
        256,
        -256,
        65535,
        65536,
    ];
    keys.extend([i32::MIN as i64, i32::MAX as i64, 1 << 32, -(1 << 32)]);
    keys.retain(|v| (min..=max).contains(v));
    keys.extend(-1000..=1000);
    let span = (max as i128 - min as i128 + 1) as u128;
    while keys.len() < KEYS {
        let r = (rng.next() as u128 % span) as i128 + min as i128;
        keys.push(r as i64);
    }
    keys
}

fn uuids(rng: &mut Rng) -> Vec<[u8; 16]> {
    let mut keys = vec![[0u8; 16], [0xff; 16], [0x80; 16]];
    while keys.len() < KEYS {
        let (a, b) = (rng.next(), rng.next());
        let mut u = [0u8; 16];
        u[..8].copy_from_slice(&a.to_be_bytes());
        u[8..].copy_from_slice(&b.to_be_bytes());
        keys.push(u);
    }
    keys
}

fn texts(rng: &mut Rng) -> Vec<String> {
    let mut keys: Vec<String> = [
        "",
        " ",
        "a",
        "é",
        "日本語",
        "🐘",
        "emoji 😀 and 🐘 in text",
        "O'Reilly",
        "back\\slash",
        "tab\tand\nnewline",
        "elevenbytes",
        "twelve bytes",
        "thirteen byte",
        "ÿ",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    keys.push("x".repeat(200));
    keys.push("日本語".repeat(50));
    let pool: Vec<char> = "az AZ09_'\"\\é ßüÿ日本語😀🐘\n".chars().collect();
    while keys.len() < KEYS {
        let len = (rng.next() % 40) as usize;
        let s: String = (0..len)
            .map(|_| pool[(rng.next() % pool.len() as u64) as usize])
            .collect();
        keys.push(s);
    }
    keys
}

/// `Postgres(i) -> remainder` for the keys in a hash partitioned table of `modulus` partitions.
async fn postgres_remainders(
    client: &tokio_postgres::Client,
    keys: &Keys,
    texts: &[String],
    modulus: u64,
) -> HashMap<usize, u64> {
    let (ty, table) = (keys.name(), format!("h_{}_{modulus}", keys.name()));
    let mut ddl = format!("CREATE TABLE {table} (i bigint, k {ty}) PARTITION BY HASH (k);");
    for r in 0..modulus {
        ddl.push_str(&format!(
            "CREATE TABLE {table}_{r} PARTITION OF {table} \
             FOR VALUES WITH (MODULUS {modulus}, REMAINDER {r});"
        ));
    }
    client.batch_execute(&ddl).await.expect("create tables");
    let inserted = client
        .execute(
            &format!(
                "INSERT INTO {table} SELECT i, k::{ty} FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i)"
            ),
            &[&texts],
        )
        .await
        .expect("insert keys");
    assert_eq!(inserted as usize, texts.len());
    let rows = client
        .query(
            &format!("SELECT i, tableoid::regclass::text FROM {table}"),
            &[],
        )
        .await
        .expect("read back");
    rows.iter()
        .map(|row| {
            let i: i64 = row.get(0);
            let partition: String = row.get(1);
            let remainder = partition
                .rsplit('_')
                .next()
                .and_then(|r| r.parse().ok())
                .expect("partition name ends in its remainder");
            (i as usize - 1, remainder)
        })
        .collect()
}

/// Postgres' `hash*extended(key, seed)` of every key, in key order.
async fn postgres_hashes(
    client: &tokio_postgres::Client,
    keys: &Keys,
    texts: &[String],
    seed: u64,
) -> Vec<u64> {
    let sql = format!(
        "SELECT {}(k::{}, $2) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i",
        keys.hash_function(),
        keys.name()
    );
    let rows = client
        .query(&sql, &[&texts, &(seed as i64)])
        .await
        .expect("hash query");
    rows.iter().map(|row| row.get::<_, i64>(0) as u64).collect()
}

/// Keys whose partition by `seed` differs from Postgres' choice.
fn misplaced(keys: &Keys, remainders: &HashMap<usize, u64>, modulus: u64, seed: u64) -> usize {
    remainders
        .iter()
        .filter(|(i, r)| partition_row_hash(keys.column_hash(**i, seed)) % modulus != **r)
        .count()
}

async fn check(client: &tokio_postgres::Client, keys: Keys) {
    let name = keys.name();
    let texts = keys.texts();
    assert!(texts.len() >= 10_000, "{name}: only {} keys", texts.len());
    assert_eq!(texts.len(), keys.len());

    for seed in [HASH_PARTITION_SEED, 0] {
        let theirs = postgres_hashes(client, &keys, &texts, seed).await;
        assert_eq!(theirs.len(), texts.len());
        for (i, expected) in theirs.iter().enumerate() {
            assert_eq!(
                keys.column_hash(i, seed),
                *expected,
                "{name} {:?}: {}(_, {seed:#x})",
                texts[i],
                keys.hash_function()
            );
        }
    }

    for modulus in MODULI {
        let remainders = postgres_remainders(client, &keys, &texts, modulus).await;
        assert_eq!(remainders.len(), texts.len(), "{name} modulus {modulus}");
        for (i, remainder) in &remainders {
            let ours = partition_row_hash(keys.column_hash(*i, HASH_PARTITION_SEED)) % modulus;
            assert_eq!(
                ours, *remainder,
                "{name} {:?} modulus {modulus}: we say {ours}, Postgres {remainder}",
                texts[*i]
            );
        }
        // The comparison can fail: a wrong seed, or no seed, misplaces many keys.
        for wrong in [HASH_PARTITION_SEED ^ 1, 0] {
            let bad = misplaced(&keys, &remainders, modulus, wrong);
            assert!(
                bad > texts.len() / (2 * modulus as usize),
                "{name} modulus {modulus}: seed {wrong:#x} misplaces only {bad} keys"
            );
        }
    }
}

#[test]
fn hash_partitioning_matches_postgres() {
    let topo = Topology::single().expect("single topology");
    let url = topo.primary().url("postgres");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let encoding: String = client
            .query_one("SHOW server_encoding", &[])
            .await
            .expect("encoding")
            .get(0);
        assert_eq!(encoding, "UTF8", "text keys hash their UTF-8 bytes");

        let mut rng = Rng(0x5eed);
        let smallint = integers(i16::MIN as i64, i16::MAX as i64, &mut rng);
        let integer = integers(i32::MIN as i64, i32::MAX as i64, &mut rng);
        let bigint = integers(i64::MIN, i64::MAX, &mut rng);
        check(
            &client,
            Keys::Smallint(smallint.iter().map(|v| *v as i16).collect()),
        )
        .await;
        check(
            &client,
            Keys::Integer(integer.iter().map(|v| *v as i32).collect()),
        )
        .await;
        check(&client, Keys::Bigint(bigint)).await;
        check(&client, Keys::Uuid(uuids(&mut rng))).await;
        check(&client, Keys::Text(texts(&mut rng))).await;

        // hash_bytes_extended itself, on lengths around every 12-byte block boundary.
        let lengths: Vec<i32> = (0..=100).collect();
        let ascii: String = (0..100u8)
            .map(|b| char::from(b'a' + b.wrapping_mul(7) % 26))
            .collect();
        let rows = client
            .query(
                "SELECT n, hashtextextended(left($1, n), $2) FROM unnest($3::int[]) n",
                &[&ascii, &(HASH_PARTITION_SEED as i64), &lengths],
            )
            .await
            .expect("lengths query");
        assert_eq!(rows.len(), lengths.len());
        for row in rows {
            let n: i32 = row.get(0);
            let theirs: i64 = row.get(1);
            assert_eq!(
                hash_bytes_extended(&ascii.as_bytes()[..n as usize], HASH_PARTITION_SEED) as i64,
                theirs,
                "length {n}"
            );
        }
    });
    drop(topo);
}
