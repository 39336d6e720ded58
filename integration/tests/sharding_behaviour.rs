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
mod sharding_common;

use sharding_common::*;
use std::process::Command;
use tokio_postgres::{Client, SimpleQueryMessage};
use topology::{Proxy, Topology};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Text values of every row of `sql` (simple protocol), first column only.
async fn col(client: &Client, sql: &str) -> Vec<Option<String>> {
    let msgs = client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", err_text(&e)));
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
            _ => None,
        })
        .collect()
}

async fn one(client: &Client, sql: &str) -> String {
    col(client, sql)
        .await
        .into_iter()
        .next()
        .flatten()
        .unwrap_or_else(|| panic!("{sql}: no value"))
}

async fn count(client: &Client, sql: &str) -> i64 {
    one(client, sql).await.parse().unwrap()
}

/// Rows of table `t` with this id on one server.
async fn on(client: &Client, k: i64) -> i64 {
    count(client, &format!("SELECT count(*) FROM t WHERE id = {k}")).await
}

/// `sql` (a count) on every server.
async fn total(direct: &[Client], sql: &str) -> Vec<i64> {
    let mut per = Vec::new();
    for c in direct {
        per.push(count(c, sql).await);
    }
    per
}

/// The shard Postgres' hash partitioning gives a bigint key among `n` (what pgdog must use),
/// asked of a server that has the helper table `hash_probe`.
async fn hash_shard(probe: &Client, n: usize, key: i64) -> usize {
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

async fn hash_probe(port: u16) -> Client {
    let c = connect_port(port).await;
    c.batch_execute("CREATE TABLE IF NOT EXISTS hash_probe (id bigint) PARTITION BY HASH (id)")
        .await
        .unwrap();
    c
}

/// Small keys, the first ones of each of `n` shards.
async fn keys_per_shard(probe: &Client, n: usize, per_shard: usize) -> Vec<Vec<i64>> {
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
            count(&dog, "SELECT count(*) FROM t").await,
            2,
            "inside the transaction pgdog sees both rows"
        );
        dog.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(on(&s0, a[0]).await + on(&s1, b[0]).await, 0, "ROLLBACK left rows");
        assert_eq!(count(&dog, "SELECT count(*) FROM t").await, 0);

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
        let msgs = dog
            .simple_query(&format!(
                "BEGIN; INSERT INTO t (id, v) VALUES ({}, 'z'); INSERT INTO t (id, v) VALUES ({}, 'dup')",
                b[4], a[1]
            ))
            .await;
        assert_eq!(
            msgs.err().and_then(|e| sqlstate(&e)).as_deref(),
            Some("23505")
        );
        dog.batch_execute("COMMIT").await.unwrap();
        assert_eq!(on(&s1, b[4]).await, 0, "a failed transaction committed a row");
        assert_eq!(count(&dog, "SELECT 1").await, 1);

        // Two-phase commit: both shards, nothing left prepared, PREPARE/COMMIT PREPARED seen.
        let tp = connect_proxy(&twopc).await;
        tp.batch_execute(&format!(
            "BEGIN; INSERT INTO t (id, v) VALUES ({}, '2pc'), ({}, '2pc'); COMMIT",
            a[5], b[5]
        ))
        .await
        .unwrap_or_else(|e| panic!("two-phase COMMIT: {}", err_text(&e)));
        assert_eq!(on(&s0, a[5]).await, 1, "2PC: row missing on shard 0");
        assert_eq!(on(&s1, b[5]).await, 1, "2PC: row missing on shard 1");
        for (i, c) in [&s0, &s1].into_iter().enumerate() {
            assert_eq!(
                count(c, "SELECT count(*) FROM pg_prepared_xacts").await,
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
        assert_eq!(on(&s0, a[6]).await + on(&s1, b[6]).await, 0);

        // 2PC where PREPARE fails on shard 1 (deferred unique violation): shard 0's prepared
        // part is rolled back, the client gets the error, nothing is left prepared.
        tp.batch_execute(&format!("INSERT INTO d (id, v) VALUES ({}, 1)", b[0]))
            .await
            .unwrap();
        let r = tp
            .batch_execute(&format!(
                "BEGIN; INSERT INTO d (id, v) VALUES ({}, 100); INSERT INTO d (id, v) VALUES ({}, 1); COMMIT",
                a[0], b[1]
            ))
            .await;
        assert_eq!(
            r.as_ref().err().and_then(sqlstate).as_deref(),
            Some("23505"),
            "COMMIT with a deferred violation on one shard: {:?}",
            r.as_ref().err().map(err_text)
        );
        assert_eq!(
            count(&s0, &format!("SELECT count(*) FROM d WHERE id = {}", a[0])).await,
            0,
            "2PC: shard 0 committed although shard 1 failed to prepare"
        );
        for (i, c) in [&s0, &s1].into_iter().enumerate() {
            assert_eq!(
                count(c, "SELECT count(*) FROM pg_prepared_xacts").await,
                0,
                "shard {i}: prepared transactions left behind after a failed PREPARE"
            );
        }
        assert_eq!(count(&tp, "SELECT count(*) FROM d").await, 1);
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
            count(&direct[2], "SELECT count(*) FROM probe WHERE v = 'via set'").await,
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
                count(
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

const WRITE_TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "users"
column = "id"
"#;

/// What the write checks share: a connection to each shard, pgdog through tokio-postgres and
/// through the raw protocol, and the pgdog bugs found so far.
struct WriteChecks {
    direct: Vec<tokio_postgres::Client>,
    dog: tokio_postgres::Client,
    rawc: raw::Conn,
    port: u16,
    /// pgdog's connection string, for fresh clients.
    conninfo: String,
    /// Shard 0's port, to compare with Postgres itself.
    shard0: u16,
    failures: Vec<String>,
}

/// DDL on every shard and multi-row INSERTs over several shards.
async fn ddl_and_multi_row_inserts(c: &mut WriteChecks) {
    // DDL reaches every shard; its tag is not multiplied.
    c.rawc
        .send(&raw::query(
            "CREATE TABLE users (id bigint PRIMARY KEY, name text)",
        ))
        .await;
    let msgs = c.rawc.until_ready().await;
    let tags: Vec<String> = msgs
        .iter()
        .filter(|m| m.tag == b'C')
        .map(|m| m.text())
        .collect();
    assert_eq!(tags, vec!["CREATE TABLE".to_string()]);
    c.dog
        .batch_execute("CREATE INDEX users_name ON users (name)")
        .await
        .unwrap();
    c.dog
        .batch_execute("ALTER TABLE users ADD COLUMN note text")
        .await
        .unwrap();
    for (i, c) in c.direct.iter().enumerate() {
        assert_eq!(
            one(c, "SELECT count(*) FROM pg_indexes WHERE tablename = 'users' AND indexname = 'users_name'").await,
            "1",
            "shard {i}: index missing"
        );
        assert_eq!(
            one(c, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'users' AND column_name = 'note'").await,
            "1",
            "shard {i}: ALTER TABLE missing"
        );
    }

    // A multi-row INSERT over several shards: every RETURNING row, tag INSERT 0 12.
    let values: Vec<String> = (1..=12).map(|i| format!("({i}, 'n{i}')")).collect();
    c.rawc
        .send(&raw::query(&format!(
            "INSERT INTO users (id, name) VALUES {} RETURNING id, name",
            values.join(", ")
        )))
        .await;
    let msgs = c.rawc.until_ready().await;
    let rows = msgs.iter().filter(|m| m.tag == b'D').count();
    let tags: Vec<String> = msgs
        .iter()
        .filter(|m| m.tag == b'C')
        .map(|m| m.text())
        .collect();
    let descs = msgs.iter().filter(|m| m.tag == b'T').count();
    assert_eq!((rows, descs), (12, 1), "RETURNING rows / RowDescriptions");
    assert_eq!(tags, vec!["INSERT 0 12".to_string()]);
    let per = total(&c.direct, "SELECT count(*) FROM users").await;
    assert_eq!(per.iter().sum::<i64>(), 12);
    assert!(per.iter().filter(|n| **n > 0).count() >= 2, "{per:?}");

    // The same with parameters (extended protocol).
    let rows = c
        .dog
        .query(
            "INSERT INTO users (id, name) VALUES ($1, $2), ($3, $4), ($5, $6) RETURNING id",
            &[&21i64, &"a", &22i64, &"b", &23i64, &"c"],
        )
        .await
        .unwrap_or_else(|e| panic!("multi-row INSERT with parameters: {}", err_text(&e)));
    let mut ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    ids.sort();
    assert_eq!(ids, vec![21, 22, 23]);
    let n = c
        .dog
        .execute(
            "INSERT INTO users (id, name) VALUES ($1, $2), ($3, $4)",
            &[&24i64, &"d", &25i64, &"e"],
        )
        .await
        .unwrap();
    assert_eq!(n, 2);
}

/// COPY: bad keys named by line, keys spelled as Postgres reads them, parameters cast to the key type.
async fn copy_keys_and_errors(c: &mut WriteChecks) {
    // COPY text with a bad key on line 3: an error naming line 3, nothing on any shard.
    let before = total(&c.direct, "SELECT count(*) FROM users").await;
    let err = c
        .rawc
        .copy_in(
            "COPY users (id, name) FROM STDIN",
            b"101\ta\n102\tb\nxyz\tc\n104\td\n",
            5,
        )
        .await
        .expect_err("COPY with a bad key must fail");
    assert!(
        err.contains("line 3"),
        "COPY error does not name line 3: {err}"
    );
    // Postgres itself, for the record.
    c.direct[0]
        .batch_execute("CREATE TABLE users_ref (id bigint, name text)")
        .await
        .unwrap();
    let mut pg_raw = raw::Conn::login(c.shard0, "postgres", "postgres").await;
    let pg_err = pg_raw
        .copy_in(
            "COPY users_ref (id, name) FROM STDIN",
            b"101\ta\n102\tb\nxyz\tc\n104\td\n",
            5,
        )
        .await
        .unwrap_err();
    assert!(pg_err.contains("line 3"), "{pg_err}");
    assert!(
        err.starts_with("22P02"),
        "COPY bad key SQLSTATE: {err} (Postgres: {pg_err})"
    );
    assert_eq!(
        total(&c.direct, "SELECT count(*) FROM users").await,
        before,
        "rows of the failed COPY were left on a shard"
    );
    // CSV with a header: the bad row is line 4, as Postgres counts.
    let err = c
        .rawc
        .copy_in(
            "COPY users (id, name) FROM STDIN WITH (FORMAT csv, HEADER)",
            b"id,name\n201,a\n202,b\nbad,c\n",
            1000,
        )
        .await
        .expect_err("CSV COPY with a bad key must fail");
    let pg_err = pg_raw
        .copy_in(
            "COPY users_ref (id, name) FROM STDIN WITH (FORMAT csv, HEADER)",
            b"id,name\n201,a\n202,b\nbad,c\n",
            1000,
        )
        .await
        .unwrap_err();
    assert!(pg_err.contains("line 4"), "{pg_err}");
    assert!(
        err.contains("line 4"),
        "CSV COPY error does not name line 4: {err}"
    );
    // Many good rows first (already sent to the shards), the bad one last.
    let mut data = String::new();
    for i in 0..20_000 {
        data.push_str(&format!("{}\tbulk\n", 1_000_000 + i));
    }
    data.push_str("-\tbad\n");
    let err = c
        .rawc
        .copy_in("COPY users (id, name) FROM STDIN", data.as_bytes(), 8192)
        .await
        .expect_err("COPY with a bad last row must fail");
    assert!(err.contains("line 20001"), "{err}");
    assert_eq!(
        total(&c.direct, "SELECT count(*) FROM users").await,
        before,
        "rows of the failed bulk COPY were left on a shard"
    );
    // The connection still works.
    let ok = c
        .rawc
        .copy_in(
            "COPY users (id, name) FROM STDIN",
            b"301\tx\n302\ty\n303\tz\n",
            7,
        )
        .await;
    assert_eq!(ok, Ok("COPY 3".to_string()));
    copy_key_spellings(c).await;
}

/// COPY keys spelled as Postgres reads them, and text parameters cast to the key type.
async fn copy_key_spellings(c: &mut WriteChecks) {
    // COPY keys spelled as Postgres reads them: octal escape, leading space, sign, zeros.
    let probe = hash_probe(c.shard0).await;
    let ok = c
        .rawc
        .copy_in(
            "COPY users (id, name) FROM STDIN",
            b"\\061\\060\\065\tescaped\n 106\tspace\n+107\tplus\n0108\tzeros\n",
            3,
        )
        .await;
    assert_eq!(
        ok,
        Ok("COPY 4".to_string()),
        "COPY with keys 105 (\\061\\060\\065), ' 106', '+107', '0108'"
    );
    for key in [105i64, 106, 107, 108] {
        let want = hash_shard(&probe, 3, key).await;
        let sql = format!("SELECT count(*) FROM users WHERE id = {key}");
        assert_eq!(
            total(&c.direct, &sql).await,
            (0..3).map(|s| (s == want) as i64).collect::<Vec<_>>(),
            "key {key} must be on shard {want} only"
        );
    }
    let n = c.dog
        .execute(
            "INSERT INTO users (id, name) VALUES (' 109 ', 'spaced literal'), ('+110', 'signed literal')",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("INSERT with keys ' 109 ' and '+110': {}", err_text(&e)));
    assert_eq!(n, 2);
    for key in [109i64, 110] {
        let want = hash_shard(&probe, 3, key).await;
        let sql = format!("SELECT count(*) FROM users WHERE id = {key}");
        assert_eq!(
            total(&c.direct, &sql).await,
            (0..3).map(|s| (s == want) as i64).collect::<Vec<_>>(),
            "key {key} must be on shard {want} only"
        );
    }

    // pgdog bug (B5): a text parameter (binary format, as tokio-postgres sends text) cast to
    // the key type is decoded as a binary integer of the key column's type: the row lands
    // on the wrong shard (2- and 4-byte texts), or 22P03 (other lengths).
    for key in [29i64, 36, 43, 50, 1002, 1009] {
        let r = c
            .dog
            .execute(
                "INSERT INTO users (id, name) VALUES ($1::text::bigint, 'text param')",
                &[&key.to_string()],
            )
            .await;
        if let Err(e) = r {
            c.failures.push(format!(
                "pgdog bug: INSERT ... VALUES ($1::text::bigint, ...) with '{key}': {}",
                err_text(&e)
            ));
            continue;
        }
        let want = hash_shard(&probe, 3, key).await;
        let sql = format!("SELECT count(*) FROM users WHERE id = {key}");
        let per = total(&c.direct, &sql).await;
        if per != (0..3).map(|s| (s == want) as i64).collect::<Vec<_>>() {
            c.failures.push(format!(
                "pgdog bug: INSERT ... VALUES ($1::text::bigint, ...) with '{key}' (binary text parameter): rows per shard {per:?}, expected on shard {want} only"
            ));
        }
    }
}

/// Atomic multi-row INSERTs, syntax error positions, the extended protocol over several shards, COPY through it.
async fn errors_and_extended_protocol(c: &mut WriteChecks) {
    // A multi-row INSERT over several shards is atomic: one duplicate, nothing inserted.
    let before = total(&c.direct, "SELECT count(*) FROM users").await;
    let e = c.dog
        .simple_query("INSERT INTO users (id, name) VALUES (601, 'x'), (602, 'x'), (603, 'x'), (604, 'x'), (605, 'x'), (1, 'dup')")
        .await
        .expect_err("duplicate key");
    assert_eq!(sqlstate(&e).as_deref(), Some("23505"));
    assert_eq!(
        total(&c.direct, "SELECT count(*) FROM users").await,
        before,
        "a failed multi-row INSERT left rows on some shards"
    );

    // Syntax errors: 42601 at the position Postgres reports.
    for sql in [
        "SELECT * FRM users",
        "SELECT 1; SELEC 2",
        "/* pgdog_shard: 1 */ SELEC 1",
        "SELECT id FROM users WHERE id = 1 AND AND name = 'x'",
    ] {
        let got = c.dog.simple_query(sql).await.expect_err(sql);
        let want = c.direct[0].simple_query(sql).await.expect_err(sql);
        assert_eq!(
            sqlstate(&got).as_deref(),
            Some("42601"),
            "{sql}: {}",
            err_text(&got)
        );
        let pos = |e: &tokio_postgres::Error| e.as_db_error().and_then(|d| d.position().cloned());
        assert_eq!(
            format!("{:?}", pos(&got)),
            format!("{:?}", pos(&want)),
            "{sql}: error position (pgdog {}, Postgres {})",
            err_text(&got),
            err_text(&want)
        );
        assert_eq!(
            got.as_db_error().map(|d| d.message().to_string()),
            want.as_db_error().map(|d| d.message().to_string()),
            "{sql}: message"
        );
        // Extended protocol too.
        let got = c.dog.prepare(sql).await;
        if !sql.contains(';') {
            let got = got.expect_err(sql);
            assert_eq!(sqlstate(&got).as_deref(), Some("42601"), "{sql} (Parse)");
            assert_eq!(
                format!("{:?}", pos(&got)),
                format!("{:?}", pos(&want)),
                "{sql} (Parse): error position"
            );
        }
    }

    // pgdog bug: the extended protocol on several shards without Describe of the portal
    // (what tokio-postgres, JDBC and others send: Bind/Execute/Sync after a prepare) fails
    // with "XX000 cross-shard merge: DataRow before RowDescription".
    let n: i64 = total(&c.direct, "SELECT count(*) FROM users")
        .await
        .iter()
        .sum();
    match c.dog.query("SELECT id FROM users ORDER BY id", &[]).await {
        Ok(rows) => {
            let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
            assert_eq!(ids.len() as i64, n);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "not in order: {ids:?}");
        }
        Err(e) => c.failures.push(format!(
            "pgdog bug: tokio-postgres query over 3 shards: SELECT id FROM users ORDER BY id -> {}",
            err_text(&e)
        )),
    }
    match c.dog.query_one("SELECT count(*) FROM users", &[]).await {
        Ok(row) => assert_eq!(row.get::<_, i64>(0), n),
        Err(e) => c.failures.push(format!(
            "pgdog bug: tokio-postgres query over 3 shards: SELECT count(*) FROM users -> {}",
            err_text(&e)
        )),
    }

    // pgdog bug: after a statement fails on a shard, pgdog forgets that the shards prepared
    // it and prepares it again: 42P05 "prepared statement __pgdog_N already exists" from
    // then on. Postgres keeps a prepared statement whose execution failed.
    let mut lp = raw::Conn::login(c.port, USER, DB).await;
    for attempt in 1..=3 {
        let r = lp
            .exec_params("SELECT 10 / (id - 2) AS x FROM users", &[])
            .await;
        let code = r.as_ref().err().map(|(c, _)| c.clone());
        if code.as_deref() != Some("22012") {
            c.failures.push(format!(
                "pgdog bug: attempt {attempt} of Parse/Bind/Describe/Execute/Sync of SELECT 10 / (id - 2) AS x FROM users: expected 22012 (division by zero), got {r:?}"
            ));
            break;
        }
    }

    // pgdog bug: COPY through the extended protocol (tokio-postgres copy_in) is refused
    // with 0A000. (After such an error tokio-postgres itself cannot go on with the
    // connection, against Postgres too, so a fresh one follows.)
    let c2 = connect_str(&c.conninfo).await;
    match copy_in(&c2, "COPY users (id, name) FROM STDIN", "401\tq\n402\tr\n").await {
        Ok(n) => assert_eq!(n, 2),
        Err(e) => c.failures.push(format!(
            "pgdog bug: tokio-postgres copy_in (extended protocol COPY): {}",
            err_text(&e)
        )),
    }
    // A CopyFail + Sync after an extended-protocol error (what tokio-postgres sends when
    // its COPY fails) is skipped like Postgres does.
    let mut r3 = raw::Conn::login(c.port, USER, DB).await;
    let mut out = raw::parse("", "SELECT 1/0");
    out.extend_from_slice(&raw::bind(""));
    out.extend_from_slice(&raw::execute());
    out.extend_from_slice(&raw::copy_fail("client gave up"));
    out.extend_from_slice(&raw::sync());
    r3.send(&out).await;
    let msgs = r3.until_ready().await;
    let tags: String = msgs.iter().map(|m| m.tag as char).collect();
    if !tags.ends_with('Z') {
        c.failures.push(format!(
            "pgdog bug: Parse/Bind/Execute(error)/CopyFail/Sync: pgdog answered {tags:?} and closed the connection (Postgres ignores CopyFail outside COPY: answers 1 2 E Z)"
        ));
    }
}

#[test]
fn writes_copy_ddl_errors() {
    let shards = Topology::shards(3).expect("shards");
    let proxy = start_proxy(&shards, "", WRITE_TABLES);
    let mut failures: Vec<String> = Vec::new();
    runtime().block_on(Box::pin(async {
        let mut direct = Vec::new();
        for node in shards.nodes() {
            direct.push(connect_port(node.port).await);
        }
        let dog = connect_proxy(&proxy).await;
        let rawc = raw::Conn::login(proxy.port, USER, DB).await;
        let mut c = WriteChecks {
            direct,
            dog,
            rawc,
            port: proxy.port,
            conninfo: proxy.conninfo(USER, PASSWORD, DB),
            shard0: shards.shard(0).port,
            failures: Vec::new(),
        };
        ddl_and_multi_row_inserts(&mut c).await;
        copy_keys_and_errors(&mut c).await;
        errors_and_extended_protocol(&mut c).await;
        failures = c.failures;
    }));
    assert!(
        failures.is_empty(),
        "{} checks failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

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
    config.push_str(
        r#"
[[sharded_tables]]
database = "app"
name = "accounts"
column = "id"
default_shard = 2

[[sharded_tables.mapping]]
values = [1, 2, 3]
shard = 0

[[sharded_tables.mapping]]
values = [150, 151]
shard = 1

[[sharded_tables]]
database = "app"
name = "ranges"
column = "id"

[[sharded_tables.mapping]]
end = 0
shard = 0

[[sharded_tables.mapping]]
start = 0
end = 100
shard = 1

[[sharded_tables.mapping]]
start = 100
shard = 2

[[sharded_tables]]
database = "app"
name = "users"
column = "id"

[[omnisharded_tables]]
database = "app"
tables = ["countries"]
"#,
    );
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
    check("SELECT * FROM accounts WHERE id = 1", &[], &["shard 0"]);
    check("SELECT * FROM accounts WHERE id = 3", &[], &["shard 0"]);
    check("SELECT * FROM accounts WHERE id = 150", &[], &["shard 1"]);
    check("SELECT * FROM accounts WHERE id = 999", &[], &["shard 2"]);
    check(
        "SELECT * FROM accounts WHERE id = $1",
        &["151"],
        &["shard 1"],
    );
    check("SELECT * FROM ranges WHERE id = -5", &[], &["shard 0"]);
    check("SELECT * FROM ranges WHERE id = 0", &[], &["shard 1"]);
    check("SELECT * FROM ranges WHERE id = 99", &[], &["shard 1"]);
    check("SELECT * FROM ranges WHERE id = 100", &[], &["shard 2"]);
    check(
        "SELECT * FROM ranges WHERE id = $1",
        &["12345"],
        &["shard 2"],
    );
    check(
        "SELECT * FROM ranges WHERE id IN (-1, 5)",
        &[],
        &["shards 0,1*"],
    );
    check(
        "SELECT * FROM accounts WHERE id IN (1, 150)",
        &[],
        &["shards 0,1*"],
    );
    check("SELECT * FROM accounts", &[], &["shards 0,1,2*"]);
    check(
        "SELECT count(*) FROM accounts",
        &[],
        &["shards 0,1,2 (merged)"],
    );
    check(
        "SELECT id FROM accounts ORDER BY id LIMIT 5",
        &[],
        &["shards 0,1,2 (merged)"],
    );
    check(
        "INSERT INTO accounts (id) VALUES (1), (150)",
        &[],
        &["shards 0,1 (rows split)"],
    );
    check(
        "INSERT INTO accounts (id) VALUES (2), (3)",
        &[],
        &["shard 0"],
    );
    check(
        "UPDATE accounts SET id = 5 WHERE id = 1",
        &[],
        &["error 0A000*"],
    );
    check(
        "SELECT id, row_number() OVER () FROM accounts",
        &[],
        &["error 0A000*"],
    );
    check("SELECT * FROM countries", &[], &["shard *"]);
    check("CREATE TABLE x (id int)", &[], &["shards 0,1,2"]);
    check(
        "BEGIN; SELECT * FROM accounts WHERE id = 2; COMMIT",
        &[],
        &[
            "pgdog (transaction and session control*",
            "shard 0",
            "pgdog (transaction and session control*",
        ],
    );
    check(
        "SET pgdog.shard = 1; SELECT * FROM accounts",
        &[],
        &["pgdog (session setting)", "shard 1"],
    );
    check(
        "/* pgdog_shard: 2 */ SELECT * FROM accounts WHERE id = 1",
        &[],
        &["shard 2"],
    );
    check("SELECT * FRM accounts", &[], &["error 42601*"]);
    check(
        "SELECT * FROM users WHERE id = 1 AND id = 2",
        &[],
        &["shard *"],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "pgdog route:\n  {}",
        failures.join("\n  ")
    );
}
