//! Bucket placement (`[[bucket_maps]]`) on 3 real shards: integer, bigint, text and uuid keys
//! inserted through pgdog (multi-row INSERTs, prepared INSERTs, COPY) land on the shard the map
//! gives their bucket, the bucket being Postgres' own hash partition for modulus 1024
//! (`satisfies_hash_partition` on the shard); point reads find every row. The map (three
//! contiguous bucket ranges) differs from plain hash over 3 shards for about 2 keys in 3, so
//! ignoring it misplaces rows. `configcheck` refuses a map that misses a bucket and one that
//! names a shard that does not exist. `pgdog buckets` plans the map for a 4th shard.
//! `pgdog cleanup` counts, then deletes (killed after its first batch, then resumed) the rows
//! written straight to every shard, keeping each on the one shard its bucket names.
use crate::sharding_common;
use sharding_common::*;
use tokio_postgres::types::ToSql;
use topology::Topology;

const BUCKETS: u32 = 1024;
const MAP: [&str; 3] = ["0-340", "341-681", "682-1023"];
/// (table, column type, pgdog data_type).
const TYPES: [(&str, &str, &str); 4] = [
    ("b_int", "integer", "integer"),
    ("b_big", "bigint", "bigint"),
    ("b_text", "text", "varchar"),
    ("b_uuid", "uuid", "uuid"),
];
/// Rows per table: 100 by multi-row INSERT, 100 prepared, 100 by COPY.
const ROWS: usize = 300;

fn tables_toml(map: &[&str]) -> String {
    let mut t = String::new();
    for (name, _, data_type) in TYPES {
        t.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"{DB}\"\nname = \"{name}\"\ncolumn = \"k\"\n\
             data_type = \"{data_type}\"\n\n"
        ));
    }
    let shards: Vec<String> = map.iter().map(|s| format!("\"{s}\"")).collect();
    t.push_str(&format!(
        "[[bucket_maps]]\ndatabase = \"{DB}\"\nbuckets = {BUCKETS}\nshards = [{}]\n",
        shards.join(", ")
    ));
    t
}

/// The `i`th key of a type, as SQL text.
fn key(ty: &str, i: usize) -> String {
    match ty {
        "integer" => format!("{}", (i as i64 * 7919 - 1_000_000) as i32),
        "bigint" => format!("{}", i as i64 * 104_729_000_003 - 5_000_000_000_000),
        "text" => format!("key-{i}-é"),
        _ => format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            i * 2654435761 % (1 << 32),
            i % 65536,
            i % 4096,
            (i * 7) % 4096,
            i * 97
        ),
    }
}

async fn insert_rows(dog: &tokio_postgres::Client, table: &str, ty: &str) {
    let values: Vec<String> = (0..100)
        .map(|i| format!("('{}'::{ty}, 'multi')", key(ty, i)))
        .collect();
    dog.simple_query(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
        .await
        .unwrap_or_else(|e| panic!("{table} multi-row insert: {}", err_text(&e)));
    let stmt = dog
        .prepare(&format!(
            "INSERT INTO {table} VALUES ($1::text::{ty}, 'prepared')"
        ))
        .await
        .expect("prepare");
    for i in 100..200 {
        let k = key(ty, i);
        let params: [&(dyn ToSql + Sync); 1] = [&k];
        dog.execute(&stmt, &params)
            .await
            .unwrap_or_else(|e| panic!("{table} prepared insert: {}", err_text(&e)));
    }
    let data: String = (200..ROWS)
        .map(|i| format!("{}\tcopied\n", key(ty, i)))
        .collect();
    let copied = copy_in(dog, &format!("COPY {table} (k, v) FROM STDIN"), &data)
        .await
        .unwrap_or_else(|e| panic!("{table} copy: {}", err_text(&e)));
    assert_eq!(copied as usize, ROWS - 200);
}

/// Rows of `table` on a shard whose bucket is not one of `buckets` (Postgres decides).
async fn misplaced(shard: &tokio_postgres::Client, table: &str, buckets: &str) -> i64 {
    count_i64(
        shard,
        &format!(
            "SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM unnest('{{{buckets}}}'::int[]) b \
             WHERE satisfies_hash_partition('p_{table}'::regclass, {BUCKETS}, b, t.k))"
        ),
    )
    .await
}

/// A shard's buckets as an int[] literal's elements.
fn bucket_list(range: &str) -> String {
    let (lo, hi) = range.split_once('-').unwrap();
    let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
    (lo..=hi)
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `pgdog configcheck` of `proxy`'s files with `tables` instead of its own: (success, output).
fn configcheck(proxy: &topology::proxy::Proxy, shards: &Topology, tables: &str) -> (bool, String) {
    pgdog_with(proxy, shards, tables, &["configcheck"])
}

/// `pgdog <args>` on `proxy`'s files with `tables` instead of its own: (success, output).
fn pgdog_with(
    proxy: &topology::proxy::Proxy,
    shards: &Topology,
    tables: &str,
    args: &[&str],
) -> (bool, String) {
    pgdog_env(proxy, shards, tables, args, &[])
}

/// [`pgdog_with`] with environment variables (a failpoint).
fn pgdog_env(
    proxy: &topology::proxy::Proxy,
    shards: &Topology,
    tables: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (bool, String) {
    let dir = proxy.dir.join("check");
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = format!("[general]\nhost = \"127.0.0.1\"\nport = {}\n", proxy.port);
    config.push_str(&shard_config(shards, "", tables));
    std::fs::write(dir.join("pgdog.toml"), config).unwrap();
    std::fs::write(dir.join("users.toml"), users_toml()).unwrap();
    let out = std::process::Command::new(topology::proxy::binary())
        .args(args)
        .envs(env.iter().copied())
        .arg("--config")
        .arg(dir.join("pgdog.toml"))
        .arg("--users")
        .arg(dir.join("users.toml"))
        .output()
        .expect("configcheck");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

/// 200 more keys of b_big and b_text written straight to each of the 3 shards: each is then
/// on its own shard once and on 2 others. `pgdog cleanup` counts 800 misplaced rows; with
/// --delete (one block per batch) it is killed after its first batch (failpoint), and the
/// rerun resumes there and deletes the rest: every row on its bucket's shard, each key once.
async fn cleanup(
    proxy: &topology::proxy::Proxy,
    shards: &Topology,
    direct: &[tokio_postgres::Client],
) {
    for shard in direct {
        for (table, ty) in [("b_big", "bigint"), ("b_text", "text")] {
            let values: Vec<String> = (ROWS..ROWS + 200)
                .map(|i| format!("('{}'::{ty}, 'stray')", key(ty, i)))
                .collect();
            shard
                .batch_execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
                .await
                .expect("stray rows");
        }
    }
    let tables = tables_toml(&MAP);
    let count = ["cleanup", "--database", DB];
    let (ok, said) = pgdog_with(proxy, shards, &tables, &count);
    assert!(ok, "{said}");
    assert!(
        said.contains("800 rows placed on another shard, 0 deleted"),
        "{said}"
    );

    let delete = [
        "cleanup",
        "--database",
        DB,
        "--delete",
        "--batch-blocks",
        "1",
        "--pause-ms",
        "0",
    ];
    let (ok, said) = pgdog_env(
        proxy,
        shards,
        &tables,
        &delete,
        &[("FAILPOINTS", "cleanup-batch-committed=1*off->panic")],
    );
    assert!(!ok, "the failpoint stops it after one batch: {said}");
    let (ok, said) = pgdog_with(proxy, shards, &tables, &delete);
    assert!(ok, "{said}");
    assert!(said.contains("(resumed at block 1)"), "{said}");
    for (s, shard) in direct.iter().enumerate() {
        for (table, _, _) in TYPES {
            assert_eq!(
                misplaced(shard, table, &bucket_list(MAP[s])).await,
                0,
                "{table} shard {s}"
            );
        }
        let left = count_i64(shard, "SELECT count(*) FROM pgdog_cleanup").await;
        assert_eq!(left, 0, "progress rows left on shard {s}");
    }
    for (table, ty) in [("b_big", "bigint"), ("b_text", "text")] {
        let mut total = 0;
        for shard in direct {
            total += count_i64(shard, &format!("SELECT count(*) FROM {table}")).await;
        }
        assert_eq!(total as usize, ROWS + 200, "{table} ({ty}): each key once");
    }
    let (ok, said) = pgdog_with(proxy, shards, &tables, &count);
    assert!(
        ok && said.contains("0 rows placed on another shard, 0 deleted"),
        "{said}"
    );
}

#[test]
fn bucket_maps_place_keys_like_postgres() {
    let shards = Topology::shards(3).expect("3 shards");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut direct = Vec::new();
        for node in shards.nodes() {
            let c = connect_port(node.port).await;
            for (table, ty, _) in TYPES {
                c.batch_execute(&format!(
                    "CREATE TABLE {table} (k {ty} PRIMARY KEY, v text); \
                     CREATE TABLE p_{table} (k {ty}) PARTITION BY HASH (k);"
                ))
                .await
                .expect("tables");
            }
            direct.push(c);
        }
        let proxy = start_proxy(&shards, "", &tables_toml(&MAP));
        let dog = connect_proxy(&proxy).await;
        for (table, ty, _) in TYPES {
            insert_rows(&dog, table, ty).await;
            let mut total = 0;
            for (s, shard) in direct.iter().enumerate() {
                let n = count_i64(shard, &format!("SELECT count(*) FROM {table}")).await;
                assert!(n > 0, "{table}: nothing on shard {s}");
                total += n;
                let wrong = misplaced(shard, table, &bucket_list(MAP[s])).await;
                assert_eq!(
                    wrong, 0,
                    "{table}: {wrong} rows on shard {s} outside its buckets"
                );
            }
            assert_eq!(total as usize, ROWS, "{table}");
            // Point reads go to the key's shard.
            for i in (0..ROWS).step_by(37) {
                let sql = format!("SELECT v FROM {table} WHERE k = '{}'::{ty}", key(ty, i));
                let v = col(&dog, &sql).await;
                assert_eq!(v.len(), 1, "{sql}");
            }
        }

        // configcheck: the map above passes; a missing bucket and a shard that does not exist
        // are refused.
        let (ok, said) = configcheck(&proxy, &shards, &tables_toml(&MAP));
        assert!(ok, "{said}");
        let (ok, said) = configcheck(
            &proxy,
            &shards,
            &tables_toml(&["0-340", "341-680", "682-1023"]),
        );
        assert!(!ok && said.contains("bucket 681 is on no shard"), "{said}");
        let (ok, said) = configcheck(
            &proxy,
            &shards,
            &tables_toml(&["0-340", "341-681", "682-1000", "1001-1023"]),
        );
        assert!(!ok && said.contains("shards[3] does not exist"), "{said}");

        // The map for one more shard: a quarter of the buckets move, evenly from the three.
        let args = ["buckets", "--database", DB, "--shards", "4"];
        let (ok, said) = pgdog_with(&proxy, &shards, &tables_toml(&MAP), &args);
        assert!(ok, "{said}");
        assert!(
            said.contains("# 256 of 1024 buckets move (25.0% of the keys), from 3 shards to 4"),
            "{said}"
        );
        for line in [
            "shard 0 -> shard 3: 85 buckets",
            "shard 1 -> shard 3: 85 buckets",
            "shard 2 -> shard 3: 86 buckets",
        ] {
            assert!(said.contains(line), "{said}");
        }

        cleanup(&proxy, &shards, &direct).await;
    });
}
