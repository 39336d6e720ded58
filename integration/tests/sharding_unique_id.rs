//! `pgdog.unique_id()` and keys pgdog supplies, on 2 real shards behind two pgdog instances
//! (instance ids "a" and "b"): 4 clients insert 10,000 rows each without the key (two through
//! each pgdog; simple protocol with literal ids, and prepared statements with the ids as extra
//! parameters), 100 rows per INSERT (split across the shards). Every id is distinct, every row
//! sits on the shard its id hashes to (Postgres' own `satisfies_hash_partition`), and the
//! `RETURNING id` each client saw is the stored row's id.
use crate::sharding_common;
use sharding_common::*;
use std::collections::{HashMap, HashSet};
use tokio_postgres::types::ToSql;
use tokio_postgres::SimpleQueryMessage;
use topology::Topology;

const ROWS: usize = 10_000;
const BATCH: usize = 100;

const TABLES: &str = "[[sharded_tables]]\ndatabase = \"app\"\nname = \"users\"\ncolumn = \"id\"\n\n\
[[sharded_tables]]\ndatabase = \"app\"\nname = \"legacy\"\ncolumn = \"id\"\nprimary_key = \"database\"\n";

/// Client `c` inserts its rows ("c<c>-<i>") in batches; returns name -> id from RETURNING.
async fn insert_all(
    client: &tokio_postgres::Client,
    c: usize,
    prepared: bool,
) -> HashMap<String, i64> {
    let mut seen = HashMap::new();
    let stmt = if prepared {
        let params: Vec<String> = (1..=BATCH).map(|i| format!("(${i})")).collect();
        let sql = format!(
            "INSERT INTO users (name) VALUES {} RETURNING id, name",
            params.join(", ")
        );
        Some(client.prepare(&sql).await.expect("prepare"))
    } else {
        None
    };
    for b in 0..ROWS / BATCH {
        let names: Vec<String> = (0..BATCH)
            .map(|i| format!("c{c}-{}", b * BATCH + i))
            .collect();
        match &stmt {
            Some(s) => {
                let params: Vec<&(dyn ToSql + Sync)> =
                    names.iter().map(|n| n as &(dyn ToSql + Sync)).collect();
                let rows = client.query(s, &params).await.expect("prepared insert");
                assert_eq!(rows.len(), BATCH);
                for r in rows {
                    seen.insert(r.get::<_, String>(1), r.get::<_, i64>(0));
                }
            }
            None => {
                let values: Vec<String> = names.iter().map(|n| format!("('{n}')")).collect();
                let sql = format!(
                    "INSERT INTO users (name) VALUES {} RETURNING id, name",
                    values.join(", ")
                );
                let msgs = client.simple_query(&sql).await.expect("simple insert");
                let mut n = 0;
                for m in msgs {
                    if let SimpleQueryMessage::Row(r) = m {
                        let id: i64 = r.get(0).expect("id").parse().expect("bigint id");
                        seen.insert(r.get(1).expect("name").to_string(), id);
                        n += 1;
                    }
                }
                assert_eq!(n, BATCH);
            }
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_pgdog_supplies_are_unique_placed_and_returned() {
    let topo = Topology::shards(2).expect("topology");
    let a = start_proxy(&topo, "instance_id = \"a\"", TABLES);
    let b = start_proxy(&topo, "instance_id = \"b\"", TABLES);
    let setup = connect_proxy(&a).await;
    setup
        .batch_execute(
            "CREATE TABLE users (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE, seq bigserial); \
             CREATE TABLE legacy (id bigserial PRIMARY KEY, name text)",
        )
        .await
        .expect("ddl through pgdog");
    let mut direct = Vec::new();
    for node in topo.nodes() {
        let c = connect_port(node.port).await;
        c.batch_execute("CREATE TABLE users_hash_check (id bigint) PARTITION BY HASH (id)")
            .await
            .expect("helper table");
        direct.push(c);
    }

    // configcheck warns about the per-shard sequence of users.seq, not about the key.
    let out = std::process::Command::new(topology::proxy::binary())
        .arg("configcheck")
        .arg("--config")
        .arg(a.dir.join("pgdog.toml"))
        .arg("--users")
        .arg(a.dir.join("users.toml"))
        .output()
        .expect("configcheck");
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("warning: database app: users.seq takes values from a sequence"),
        "{said}"
    );
    assert!(!said.contains("users.id "), "{said}");

    // pgdog.unique_id() alone, and where it would repeat per row.
    let row = setup
        .query_one("SELECT pgdog.unique_id(), pgdog.unique_id()", &[])
        .await
        .expect("select unique_id");
    let (x, y): (i64, i64) = (row.get(0), row.get(1));
    assert!(x > 0 && y > x, "{x} {y}");
    let e = setup
        .simple_query("SELECT pgdog.unique_id() FROM users")
        .await
        .expect_err("once per row is refused");
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{}", err_text(&e));
    // The shards' own sequence cannot be routed: refused, with the setting named.
    let e = setup
        .simple_query("INSERT INTO legacy (name) VALUES ('x')")
        .await
        .expect_err("database-supplied key");
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"));
    assert!(err_text(&e).contains("primary_key"), "{}", err_text(&e));
    // DEFAULT in the key's place is filled in too.
    let r = setup
        .query_one(
            "INSERT INTO users (id, name) VALUES (DEFAULT, $1) RETURNING id",
            &[&"default-row"],
        )
        .await
        .expect("insert DEFAULT");
    assert!(r.get::<_, i64>(0) > y);

    // INSERT ... SELECT without the key: ids supplied per row.
    let msgs = setup
        .simple_query("INSERT INTO users (name) SELECT 'sel-' || g FROM generate_series(1, 100) g RETURNING id")
        .await
        .expect("insert select");
    let ids: HashSet<String> = msgs
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 100);

    let (ca, cb) = (connect_proxy(&a).await, connect_proxy(&a).await);
    let (cc, cd) = (connect_proxy(&b).await, connect_proxy(&b).await);
    let (ra, rb, rc, rd) = tokio::join!(
        insert_all(&ca, 0, false),
        insert_all(&cb, 1, true),
        insert_all(&cc, 2, false),
        insert_all(&cd, 3, true),
    );
    let mut returned: HashMap<String, i64> = HashMap::new();
    for m in [ra, rb, rc, rd] {
        assert_eq!(m.len(), ROWS);
        returned.extend(m);
    }
    let distinct: HashSet<i64> = returned.values().copied().collect();
    assert_eq!(distinct.len(), 4 * ROWS, "ids repeated");

    // Stored rows: on the shard their id hashes to, with the id RETURNING gave.
    let mut stored = 0;
    for (k, shard) in direct.iter().enumerate() {
        let misplaced = shard
            .query_one(
                &format!("SELECT count(*) FROM users WHERE NOT satisfies_hash_partition('users_hash_check'::regclass, 2, {k}, id)"),
                &[],
            )
            .await
            .expect("placement")
            .get::<_, i64>(0);
        assert_eq!(misplaced, 0, "rows misplaced on shard {k}");
        for r in shard
            .query("SELECT id, name FROM users WHERE name LIKE 'c%'", &[])
            .await
            .expect("rows")
        {
            let (id, name): (i64, String) = (r.get(0), r.get(1));
            assert_eq!(returned.get(&name), Some(&id), "row {name}");
            stored += 1;
        }
    }
    assert_eq!(stored, 4 * ROWS);

    // The two instances hold different nodes of the fleet's table.
    let nodes = direct[0]
        .query(
            "SELECT instance_id, node FROM pgdog_unique_id_nodes ORDER BY instance_id",
            &[],
        )
        .await
        .expect("nodes");
    let nodes: Vec<(String, i32)> = nodes.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert_ne!(nodes[0].1, nodes[1].1, "{nodes:?}");
}
