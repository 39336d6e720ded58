//! Targeted end-to-end checks of pgdog on sharded PostgreSQL 18 (2 or 3 shards): transactions
//! across shards (ROLLBACK, COMMIT, two-phase commit, a failing PREPARE), manual routing
//! (`/* pgdog_shard: N */`, `SET pgdog.shard`, `SET pgdog.sharding_key`, `/* pgdog_sharding_key */`),
//! multi-row INSERT split across shards (RETURNING rows and `INSERT 0 n`), COPY with a bad row
//! (error names the line, nothing left anywhere), DDL on every shard, syntax errors (42601 at
//! Postgres' position), the extended protocol on several shards, and `pgdog route`.
//!
//! Checks marked "pgdog bug" reproduce bugs found while writing them (they stay active; the
//! numbers are those of `sharding_differential.rs`): B1 extended protocol over several shards
//! without Describe portal fails (XX000 DataRow before RowDescription); B2 42P05 "prepared
//! statement __pgdog_N already exists" after a statement failed on one shard; B5 a binary
//! text parameter cast to the key type routes the row to the wrong shard; B8 COPY through the
//! extended protocol is refused.
use crate::sharding_common;

use sharding_common::*;
use std::process::Command;
use topology::{Proxy, Topology};

const T_TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "t"
column = "id"

[[sharded_tables]]
database = "app"
name = "d"
column = "id"
"#;

/// Runs `sql` through `client` (simple protocol): it must fail with SQLSTATE `code` (`what`
/// names the case in the failure message).
async fn fails_with(client: &tokio_postgres::Client, sql: &str, code: &str, what: &str) {
    let r = client.batch_execute(sql).await;
    assert_eq!(
        r.as_ref().err().and_then(sqlstate).as_deref(),
        Some(code),
        "{what}: {:?}",
        r.as_ref().err().map(err_text)
    );
}

/// Two-phase commit on both shards: committed everywhere with the decision recorded, rolled
/// back, and a PREPARE failing on one shard rolled back on the other; nothing left prepared.
async fn two_phase_commits(
    shards: &Topology,
    twopc: &Proxy,
    [s0, s1]: [&tokio_postgres::Client; 2],
    a: &[i64],
    b: &[i64],
) {
    // Two-phase commit: both shards, nothing left prepared, PREPARE/COMMIT PREPARED seen.
    let tp = connect_proxy(twopc).await;
    tp.batch_execute(&format!(
        "BEGIN; INSERT INTO t (id, v) VALUES ({}, '2pc'), ({}, '2pc'); COMMIT",
        a[5], b[5]
    ))
    .await
    .unwrap_or_else(|e| panic!("two-phase COMMIT: {}", err_text(&e)));
    assert_eq!(on(s0, a[5]).await, 1, "2PC: row missing on shard 0");
    assert_eq!(on(s1, b[5]).await, 1, "2PC: row missing on shard 1");
    for (i, c) in [s0, s1].into_iter().enumerate() {
        assert_eq!(
            count_i64(c, "SELECT count(*) FROM pg_prepared_xacts").await,
            0,
            "shard {i}: prepared transactions left behind"
        );
    }
    // The first participant records the decision with its own commit; the other one is
    // prepared, then committed (the server logs show it once flushed).
    let logged = |i: usize, words: &[&str]| {
        let log = shards.shard(i).log();
        words.iter().all(|w| log.contains(w))
    };
    let start = std::time::Instant::now();
    while !(logged(0, &["pgdog_twophase"])
        && logged(1, &["PREPARE TRANSACTION", "COMMIT PREPARED"]))
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "no decision on shard 0 / PREPARE TRANSACTION + COMMIT PREPARED on shard 1 in the server logs"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // 2PC ROLLBACK.
    tp.batch_execute(&format!(
        "BEGIN; INSERT INTO t (id, v) VALUES ({}, '2pc'), ({}, '2pc'); ROLLBACK",
        a[6], b[6]
    ))
    .await
    .unwrap();
    assert_eq!(on(s0, a[6]).await + on(s1, b[6]).await, 0);

    // 2PC where PREPARE fails on shard 1 (deferred unique violation): shard 0's prepared
    // part is rolled back, the client gets the error, nothing is left prepared.
    tp.batch_execute(&format!("INSERT INTO d (id, v) VALUES ({}, 1)", b[0]))
        .await
        .unwrap();
    let commit = format!(
        "BEGIN; INSERT INTO d (id, v) VALUES ({}, 100); INSERT INTO d (id, v) VALUES ({}, 1); COMMIT",
        a[0], b[1]
    );
    let what = "COMMIT with a deferred violation on one shard";
    fails_with(&tp, &commit, "23505", what).await;
    assert_eq!(
        count_i64(s0, &format!("SELECT count(*) FROM d WHERE id = {}", a[0])).await,
        0,
        "2PC: shard 0 committed although shard 1 failed to prepare"
    );
    for (i, c) in [s0, s1].into_iter().enumerate() {
        assert_eq!(
            count_i64(c, "SELECT count(*) FROM pg_prepared_xacts").await,
            0,
            "shard {i}: prepared transactions left behind after a failed PREPARE"
        );
    }
    assert_eq!(count_i64(&tp, "SELECT count(*) FROM d").await, 1);
}

#[test]
fn transactions_across_shards() {
    let shards = Topology::shards(2).expect("shards");
    let plain = start_proxy(&shards, "", T_TABLES);
    let twopc = start_proxy(&shards, "two_phase_commit = true", T_TABLES);
    runtime().block_on(Box::pin(async {
        let s0 = hash_probe(shards.shard(0).port).await;
        let s1 = connect_port(shards.shard(1).port).await;
        // Every statement in the server logs, to see the two-phase commit happen.
        for c in [&s0, &s1] {
            c.batch_execute("ALTER SYSTEM SET log_statement = 'all'")
                .await
                .unwrap();
            c.batch_execute("SELECT pg_reload_conf()").await.unwrap();
        }
        let keys = keys_per_shard(&s0, 2, 8).await;
        let (a, b) = (&keys[0], &keys[1]);
        let dog = connect_proxy(&plain).await;
        dog.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
            .await
            .unwrap();
        dog.batch_execute(
            "CREATE TABLE d (id bigint PRIMARY KEY, v int UNIQUE DEFERRABLE INITIALLY DEFERRED)",
        )
        .await
        .unwrap();

        // ROLLBACK after writing on both shards: nothing anywhere.
        dog.batch_execute(&format!(
            "BEGIN; INSERT INTO t (id, v) VALUES ({}, 'x'); INSERT INTO t (id, v) VALUES ({}, 'y')",
            a[0], b[0]
        ))
        .await
        .unwrap();
        assert_eq!(
            count_i64(&dog, "SELECT count(*) FROM t").await,
            2,
            "inside the transaction pgdog sees both rows"
        );
        dog.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(on(&s0, a[0]).await + on(&s1, b[0]).await, 0, "ROLLBACK left rows");
        assert_eq!(count_i64(&dog, "SELECT count(*) FROM t").await, 0);

        // COMMIT: both visible, each on its shard.
        dog.batch_execute(&format!(
            "BEGIN; INSERT INTO t (id, v) VALUES ({}, 'x'), ({}, 'y'); COMMIT",
            a[1], b[1]
        ))
        .await
        .unwrap();
        assert_eq!(on(&s0, a[1]).await, 1, "COMMIT: row missing on shard 0");
        assert_eq!(on(&s1, b[1]).await, 1, "COMMIT: row missing on shard 1");

        // The same with tokio-postgres' transaction API (extended protocol, parameters).
        let mut dog2 = connect_proxy(&plain).await;
        let tx = dog2.transaction().await.unwrap();
        for k in [a[2], b[2]] {
            let n = tx
                .execute("INSERT INTO t (id, v) VALUES ($1, $2)", &[&k, &"p"])
                .await
                .unwrap_or_else(|e| panic!("INSERT $1 = {k} in a transaction: {}", err_text(&e)));
            assert_eq!(n, 1);
        }
        tx.commit().await.unwrap();
        assert_eq!(on(&s0, a[2]).await + on(&s1, b[2]).await, 2);
        let tx = dog2.transaction().await.unwrap();
        for k in [a[3], b[3]] {
            tx.execute("INSERT INTO t (id, v) VALUES ($1, $2)", &[&k, &"p"])
                .await
                .unwrap();
        }
        tx.rollback().await.unwrap();
        assert_eq!(on(&s0, a[3]).await + on(&s1, b[3]).await, 0);

        // An error inside the transaction: COMMIT rolls back every shard.
        let failing = format!(
            "BEGIN; INSERT INTO t (id, v) VALUES ({}, 'z'); INSERT INTO t (id, v) VALUES ({}, 'dup')",
            b[4], a[1]
        );
        fails_with(&dog, &failing, "23505", "a duplicate key in a transaction").await;
        dog.batch_execute("COMMIT").await.unwrap();
        assert_eq!(on(&s1, b[4]).await, 0, "a failed transaction committed a row");
        assert_eq!(count_i64(&dog, "SELECT 1").await, 1);

        two_phase_commits(&shards, &twopc, [&s0, &s1], a, b).await;
    }));
}

const ROUTING_TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "users"
column = "id"
data_type = "bigint"
"#;

#[test]
fn manual_routing() {
    let shards = Topology::shards(3).expect("shards");
    let proxy = start_proxy(&shards, "", ROUTING_TABLES);
    runtime().block_on(Box::pin(async {
        let mut direct = Vec::new();
        for (i, node) in shards.nodes().iter().enumerate() {
            let c = hash_probe(node.port).await;
            c.batch_execute(&format!(
                "CREATE TABLE probe (v text); INSERT INTO probe VALUES ('shard{i}')"
            ))
            .await
            .unwrap();
            direct.push(c);
        }
        let port = |i: usize| shards.shard(i).port.to_string();
        let dog = connect_proxy(&proxy).await;
        dog.batch_execute("CREATE TABLE users (id bigint PRIMARY KEY, name text)")
            .await
            .unwrap();

        // /* pgdog_shard: N */, simple and extended protocol.
        for i in 0..3 {
            let sql = format!("/* pgdog_shard: {i} */ SELECT v FROM probe");
            assert_eq!(
                col(&dog, &sql).await,
                vec![Some(format!("shard{i}"))],
                "{sql}"
            );
            let rows = dog.query(sql.as_str(), &[]).await.unwrap();
            assert_eq!(rows.len(), 1, "{sql} (extended)");
            assert_eq!(
                rows[0].get::<_, String>(0),
                format!("shard{i}"),
                "{sql} (extended)"
            );
            let sql = format!("/* pgdog_shard: {i} */ SELECT inet_server_port()");
            assert_eq!(one(&dog, &sql).await, port(i), "{sql}");
        }
        // No override: the unsharded table is read on every shard.
        let mut all = col(&dog, "SELECT v FROM probe").await;
        all.sort();
        assert_eq!(
            all,
            (0..3)
                .map(|i| Some(format!("shard{i}")))
                .collect::<Vec<_>>()
        );

        // SET pgdog.shard: every following statement, both protocols, until changed.
        let c = connect_proxy(&proxy).await;
        c.batch_execute("SET pgdog.shard = 1").await.unwrap();
        assert_eq!(one(&c, "SELECT inet_server_port()").await, port(1));
        assert_eq!(
            col(&c, "SELECT v FROM probe").await,
            vec![Some("shard1".into())]
        );
        let rows = c.query("SELECT v FROM probe", &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, String>(0), "shard1");
        c.batch_execute("SET pgdog.shard = 2").await.unwrap();
        assert_eq!(one(&c, "SELECT inet_server_port()").await, port(2));
        assert_eq!(
            col(&c, "SELECT v FROM probe").await,
            vec![Some("shard2".into())]
        );
        // Writes follow it too.
        c.batch_execute("INSERT INTO probe VALUES ('via set')")
            .await
            .unwrap();
        assert_eq!(
            count_i64(&direct[2], "SELECT count(*) FROM probe WHERE v = 'via set'").await,
            1
        );
        // Another connection is not affected.
        let other = col(&dog, "SELECT v FROM probe WHERE v LIKE 'shard%'").await;
        assert_eq!(
            other.len(),
            3,
            "SET pgdog.shard leaked to another connection"
        );

        // SET pgdog.sharding_key and /* pgdog_sharding_key: V */: the key's hash shard.
        for key in [42i64, 7, 1000, -5] {
            let want = hash_shard(&direct[0], 3, key).await;
            let c = connect_proxy(&proxy).await;
            c.batch_execute(&format!("SET pgdog.sharding_key = '{key}'"))
                .await
                .unwrap();
            assert_eq!(
                col(&c, "SELECT v FROM probe WHERE v LIKE 'shard%'").await,
                vec![Some(format!("shard{want}"))],
                "SET pgdog.sharding_key = '{key}'"
            );
            assert_eq!(one(&c, "SELECT inet_server_port()").await, port(want));
            let sql = format!(
                "/* pgdog_sharding_key: {key} */ SELECT v FROM probe WHERE v LIKE 'shard%'"
            );
            assert_eq!(
                col(&dog, &sql).await,
                vec![Some(format!("shard{want}"))],
                "{sql}"
            );
            // A row inserted with that key lands on the same shard.
            dog.batch_execute(&format!("INSERT INTO users (id, name) VALUES ({key}, 'k')"))
                .await
                .unwrap();
            assert_eq!(
                count_i64(
                    &direct[want],
                    &format!("SELECT count(*) FROM users WHERE id = {key}")
                )
                .await,
                1,
                "key {key} not on shard {want}"
            );
            // pgdog route agrees.
            let out = route(
                &proxy,
                &format!("SELECT * FROM users WHERE id = {key}"),
                &[],
            );
            assert_eq!(
                out,
                vec![format!("shard {want}")],
                "pgdog route for key {key}"
            );
        }
        // A shard that does not exist: an error, and the session goes on.
        let e = dog
            .simple_query("/* pgdog_shard: 7 */ SELECT 1")
            .await
            .expect_err("shard 7 of 3");
        assert!(sqlstate(&e).is_some(), "{}", err_text(&e));
        assert_eq!(one(&dog, "SELECT 1").await, "1");
    }));
}

/// Runs `pgdog route` with the proxy's configuration; its output lines.
fn route(proxy: &Proxy, sql: &str, params: &[&str]) -> Vec<String> {
    route_files(
        &proxy.dir.join("pgdog.toml"),
        &proxy.dir.join("users.toml"),
        sql,
        params,
    )
}

fn route_files(
    config: &std::path::Path,
    users: &std::path::Path,
    sql: &str,
    params: &[&str],
) -> Vec<String> {
    let mut cmd = Command::new(topology::proxy::binary());
    cmd.arg("route")
        .arg("--config")
        .arg(config)
        .arg("--users")
        .arg(users)
        .arg("--database")
        .arg("app")
        .arg(sql);
    for p in params {
        cmd.arg("--param").arg(p);
    }
    let out = cmd.output().expect("run pgdog route");
    assert!(
        out.status.success(),
        "pgdog route {sql:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The tables of `route_command`: a list mapping with a default shard, ranges, a hashed
/// table, an omnisharded one.
fn route_tables() -> String {
    let generated = three_ranges("ranges", "id", 100);
    format!("{}{generated}", include_str!("sharding_route_tables.toml"))
}

/// What `pgdog route` prints for statements on `route_tables`: SQL, parameters, the lines
/// expected (one ending in `*`: a prefix).
#[rustfmt::skip]
const ROUTE_CASES: &[(&str, &[&str], &[&str])] = &[
    ("SELECT * FROM accounts WHERE id = 1", &[], &["shard 0"]),
    ("SELECT * FROM accounts WHERE id = 3", &[], &["shard 0"]),
    ("SELECT * FROM accounts WHERE id = 150", &[], &["shard 1"]),
    ("SELECT * FROM accounts WHERE id = 999", &[], &["shard 2"]),
    ("SELECT * FROM accounts WHERE id = $1", &["151"], &["shard 1"]),
    ("SELECT * FROM ranges WHERE id = -5", &[], &["shard 0"]),
    ("SELECT * FROM ranges WHERE id = 0", &[], &["shard 1"]),
    ("SELECT * FROM ranges WHERE id = 99", &[], &["shard 1"]),
    ("SELECT * FROM ranges WHERE id = 100", &[], &["shard 2"]),
    ("SELECT * FROM ranges WHERE id = $1", &["12345"], &["shard 2"]),
    ("SELECT * FROM ranges WHERE id IN (-1, 5)", &[], &["shards 0,1*"]),
    ("SELECT * FROM accounts WHERE id IN (1, 150)", &[], &["shards 0,1*"]),
    ("SELECT * FROM accounts", &[], &["shards 0,1,2*"]),
    ("SELECT count(*) FROM accounts", &[], &["shards 0,1,2 (merged)"]),
    ("SELECT id FROM accounts ORDER BY id LIMIT 5", &[], &["shards 0,1,2 (merged)"]),
    ("INSERT INTO accounts (id) VALUES (1), (150)", &[], &["shards 0,1 (rows split)"]),
    ("INSERT INTO accounts (id) VALUES (2), (3)", &[], &["shard 0"]),
    ("UPDATE accounts SET id = 5 WHERE id = 1", &[], &["error 0A000*"]),
    ("SELECT id, row_number() OVER () FROM accounts", &[], &["error 0A000*"]),
    ("SELECT * FROM countries", &[], &["shard *"]),
    ("CREATE TABLE x (id int)", &[], &["shards 0,1,2"]),
    ("BEGIN; SELECT * FROM accounts WHERE id = 2; COMMIT", &[], &["pgdog (transaction and session control*", "shard 0", "pgdog (transaction and session control*"]),
    ("SET pgdog.shard = 1; SELECT * FROM accounts", &[], &["pgdog (session setting)", "shard 1"]),
    ("/* pgdog_shard: 2 */ SELECT * FROM accounts WHERE id = 1", &[], &["shard 2"]),
    ("SELECT * FRM accounts", &[], &["error 42601*"]),
    ("SELECT * FROM users WHERE id = 1 AND id = 2", &[], &["shard *"]),
];

#[test]
fn route_command() {
    let dir = std::env::temp_dir().join(format!("pgdog-route-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = String::from("[general]\nauth_type = \"trust\"\n");
    for shard in 0..3 {
        config.push_str(&format!(
            "\n[[databases]]\nname = \"app\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nshard = {shard}\n",
            5000 + shard
        ));
    }
    config.push_str(&route_tables());
    let config_path = dir.join("pgdog.toml");
    let users_path = dir.join("users.toml");
    std::fs::write(&config_path, &config).unwrap();
    std::fs::write(&users_path, users_toml()).unwrap();
    let r = |sql: &str, params: &[&str]| route_files(&config_path, &users_path, sql, params);
    let mut failures = Vec::new();
    let mut check = |sql: &str, params: &[&str], want: &[&str]| {
        let got = r(sql, params);
        let ok = got.len() == want.len()
            && got.iter().zip(want).all(|(g, w)| {
                if let Some(prefix) = w.strip_suffix('*') {
                    g.starts_with(prefix)
                } else {
                    g == w
                }
            });
        if !ok {
            failures.push(format!("{sql} {params:?}: got {got:?}, want {want:?}"));
        }
    };
    for (sql, params, want) in ROUTE_CASES {
        check(sql, params, want);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "pgdog route:\n  {}",
        failures.join("\n  ")
    );
}
