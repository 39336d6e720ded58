//! The write checks of the sharding tests, on 3 shards: DDL on every shard (its tag not
//! multiplied), multi-row INSERT split across shards (RETURNING rows and `INSERT 0 n`, atomic on
//! a duplicate), COPY with a bad row (the error names the line, nothing left anywhere) and keys
//! spelled as Postgres reads them, syntax errors (42601 at Postgres' position), the extended
//! protocol on several shards, COPY through it. "pgdog bug" checks: see `sharding_behaviour.rs`.
use crate::sharding_common;

use sharding_common::*;
use topology::Topology;

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

/// COPY of `data` (`chunk` bytes per CopyData) into `users` through pgdog and into `users_ref`
/// on Postgres itself (`with`: what follows FROM STDIN); both must fail: (pgdog's error,
/// Postgres' error).
async fn bad_copy(
    c: &mut WriteChecks,
    pg: &mut raw::Conn,
    with: &str,
    data: &[u8],
    chunk: usize,
) -> (String, String) {
    let sql = |table: &str| format!("COPY {table} (id, name) FROM STDIN{with}");
    let dog = c.rawc.copy_in(&sql("users"), data, chunk).await;
    let pg = pg.copy_in(&sql("users_ref"), data, chunk).await;
    (
        dog.expect_err("COPY with a bad key must fail"),
        pg.expect_err("Postgres' COPY with a bad key"),
    )
}

/// Asserts that the shards hold the `users` rows counted `before` a failed `what`.
async fn assert_users_unchanged(c: &WriteChecks, before: &[i64], what: &str) {
    assert_eq!(
        total(&c.direct, "SELECT count(*) FROM users").await,
        before,
        "rows of the failed {what} were left on a shard"
    );
}

/// COPY: bad keys named by line, keys spelled as Postgres reads them, parameters cast to the key type.
async fn copy_keys_and_errors(c: &mut WriteChecks) {
    // COPY text with a bad key on line 3: an error naming line 3, nothing on any shard;
    // Postgres itself, for the record.
    let before = total(&c.direct, "SELECT count(*) FROM users").await;
    c.direct[0]
        .batch_execute("CREATE TABLE users_ref (id bigint, name text)")
        .await
        .unwrap();
    let mut pg_raw = raw::Conn::login(c.shard0, "postgres", "postgres", None).await;
    let (err, pg_err) = bad_copy(c, &mut pg_raw, "", b"101\ta\n102\tb\nxyz\tc\n104\td\n", 5).await;
    assert!(
        err.contains("line 3"),
        "COPY error does not name line 3: {err}"
    );
    assert!(pg_err.contains("line 3"), "{pg_err}");
    assert!(
        err.starts_with("22P02"),
        "COPY bad key SQLSTATE: {err} (Postgres: {pg_err})"
    );
    assert_users_unchanged(c, &before, "COPY").await;
    // CSV with a header: the bad row is line 4, as Postgres counts.
    let (err, pg_err) = bad_copy(
        c,
        &mut pg_raw,
        " WITH (FORMAT csv, HEADER)",
        b"id,name\n201,a\n202,b\nbad,c\n",
        1000,
    )
    .await;
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
    assert_users_unchanged(c, &before, "bulk COPY").await;
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

/// Asserts that each `users` row of `keys` is on the shard Postgres' hash partitioning gives
/// it (asked of `probe`), and only there.
async fn assert_on_hash_shards(c: &WriteChecks, probe: &tokio_postgres::Client, keys: &[i64]) {
    for &key in keys {
        let want = hash_shard(probe, 3, key).await;
        let sql = format!("SELECT count(*) FROM users WHERE id = {key}");
        assert_eq!(
            total(&c.direct, &sql).await,
            (0..3).map(|s| (s == want) as i64).collect::<Vec<_>>(),
            "key {key} must be on shard {want} only"
        );
    }
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
    assert_on_hash_shards(c, &probe, &[105, 106, 107, 108]).await;
    let n = c.dog
        .execute(
            "INSERT INTO users (id, name) VALUES (' 109 ', 'spaced literal'), ('+110', 'signed literal')",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("INSERT with keys ' 109 ' and '+110': {}", err_text(&e)));
    assert_eq!(n, 2);
    assert_on_hash_shards(c, &probe, &[109, 110]).await;

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
    let mut lp = raw::Conn::login(c.port, USER, DB, None).await;
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
    let mut r3 = raw::Conn::login(c.port, USER, DB, None).await;
    let mut out = raw::parse("", "SELECT 1/0");
    out.extend_from_slice(&raw::bind("", &[]));
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
        let rawc = raw::Conn::login(proxy.port, USER, DB, None).await;
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
