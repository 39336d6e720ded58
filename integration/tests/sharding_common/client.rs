//! Clients and small queries the targeted sharding tests share: a runtime, one value, counts
//! per shard, and where the hash of a key lands (asked of Postgres itself).
use super::*;
use tokio_postgres::Client;

#[allow(unused_imports)] // not every test module drives clients from sync code
pub use topology::runtime;

/// Text values of every row of `sql` (simple protocol), first column only.
pub async fn col(client: &Client, sql: &str) -> Vec<Option<String>> {
    simple_rows(client, sql)
        .await
        .iter()
        .map(|r| r.get(0).map(str::to_string))
        .collect()
}

pub async fn one(client: &Client, sql: &str) -> String {
    col(client, sql)
        .await
        .into_iter()
        .next()
        .flatten()
        .unwrap_or_else(|| panic!("{sql}: no value"))
}

pub async fn count_i64(client: &Client, sql: &str) -> i64 {
    one(client, sql).await.parse().unwrap()
}

/// Rows of table `t` with this id on one server.
pub async fn on(client: &Client, k: i64) -> i64 {
    count_i64(client, &format!("SELECT count(*) FROM t WHERE id = {k}")).await
}

/// `sql` (a count) on every server.
pub async fn total(direct: &[Client], sql: &str) -> Vec<i64> {
    let mut per = Vec::new();
    for c in direct {
        per.push(count_i64(c, sql).await);
    }
    per
}

/// The shard Postgres' hash partitioning gives a bigint key among `n` (what pgdog must use),
/// asked of a server that has the helper table `hash_probe`.
pub async fn hash_shard(probe: &Client, n: usize, key: i64) -> usize {
    for r in 0..n {
        let sql = format!(
            "SELECT satisfies_hash_partition('hash_probe'::regclass, {n}, {r}, {key}::bigint)"
        );
        if one(probe, &sql).await == "t" {
            return r;
        }
    }
    unreachable!("key {key} in no partition")
}

pub async fn hash_probe(port: u16) -> Client {
    let c = connect_port(port).await;
    c.batch_execute("CREATE TABLE IF NOT EXISTS hash_probe (id bigint) PARTITION BY HASH (id)")
        .await
        .unwrap();
    c
}

/// Small keys, the first ones of each of `n` shards.
pub async fn keys_per_shard(probe: &Client, n: usize, per_shard: usize) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new(); n];
    let mut k = 1;
    while out.iter().any(|v| v.len() < per_shard) {
        let s = hash_shard(probe, n, k).await;
        if out[s].len() < per_shard {
            out[s].push(k);
        }
        k += 1;
    }
    out
}
