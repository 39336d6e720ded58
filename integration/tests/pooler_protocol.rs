//! The wire protocol through pgdog against real PostgreSQL 18: psql scripts and pipelines,
//! tokio-postgres pipelining, COPY in both directions, notices and notifications, malformed
//! input from a raw socket, and protocol 3.2.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use futures_util::{SinkExt, TryStreamExt};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio_postgres::AsyncMessage;

/// Runs a psql command; (status ok, stdout, stderr).
fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().expect("running psql");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

fn script_file(proxy: &topology::Proxy, name: &str, text: &str) -> std::path::PathBuf {
    let path = proxy.dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn psql_script_with_several_statements() {
    let (topo, proxy) = pgdog("", 2);
    let script = r#"
CREATE TABLE script_t (id int PRIMARY KEY, name text);
INSERT INTO script_t VALUES (1, 'one'); INSERT INTO script_t VALUES (2, 'two');
BEGIN;
INSERT INTO script_t VALUES (3, 'three');
UPDATE script_t SET name = upper(name) WHERE id = 3;
COMMIT;
BEGIN;
INSERT INTO script_t VALUES (99, 'rolled back');
ROLLBACK;
DO $$ BEGIN INSERT INTO script_t VALUES (4, 'four'); END $$;
COPY script_t (id, name) FROM STDIN;
5	five
6	six
\.
SELECT count(*) AS n FROM script_t \gset
SELECT :n * 10;
SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM script_t;
SELECT $1::int + $2::int \bind 40 2 \g
"#;
    let path = script_file(&proxy, "script.sql", script);
    let (ok, out, err) = run(proxy.psql_command(USER, PASSWORD, DB).arg("-f").arg(&path));
    assert!(ok, "psql failed: {err}\n{}", proxy.log());
    assert_eq!(
        out, "60\n1:one,2:two,3:THREE,4:four,5:five,6:six\n42",
        "stderr: {err}"
    );
    // What pgdog reported is what the server has.
    assert_eq!(
        topo.primary()
            .psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM script_t")
            .unwrap(),
        "1,2,3,4,5,6"
    );
}

#[test]
fn psql_pipeline_with_a_failure_in_the_middle() {
    let (topo, proxy) = pgdog("", 2);
    topo.primary()
        .psql("CREATE TABLE pl (id int)")
        .expect("create table");
    // The first segment (up to \syncpipeline) is one implicit transaction: its failure rolls
    // back row 1 and skips row 2. The segment after the sync runs normally, and so does the
    // statement after the pipeline.
    let script = r#"
\startpipeline
INSERT INTO pl VALUES (1) \bind \sendpipeline
SELECT 1/0 \bind \sendpipeline
INSERT INTO pl VALUES (2) \bind \sendpipeline
\syncpipeline
INSERT INTO pl VALUES (3) \bind \sendpipeline
SELECT $1::int * 2 \bind 21 \sendpipeline
SELECT 'after sync' \bind \sendpipeline
\endpipeline
SELECT string_agg(id::text, ',' ORDER BY id) FROM pl;
\startpipeline
SELECT 7 \bind \sendpipeline
\syncpipeline
SELECT 8 \bind \sendpipeline
\endpipeline
"#;
    let path = script_file(&proxy, "pipeline.sql", script);
    let started = Instant::now();
    let (_, out, err) = run(proxy
        .psql_command(USER, PASSWORD, DB)
        .args(["-v", "ON_ERROR_STOP=0"])
        .arg("-f")
        .arg(&path));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "pipeline took {:?}",
        started.elapsed()
    );
    assert!(err.contains("division by zero"), "stderr: {err}");
    assert_eq!(
        err.matches("ERROR").count(),
        1,
        "only the failing statement should report an error; stderr: {err}\n{}",
        proxy.log()
    );
    assert_eq!(out, "42\nafter sync\n3\n7\n8", "stderr: {err}");
    assert_eq!(
        topo.primary()
            .psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM pl")
            .unwrap(),
        "3"
    );
}

/// 100 queries sent at once on one client (one of them fails at execution, one at parse).
async fn pipelined(
    client: &tokio_postgres::Client,
    tag: i32,
) -> Vec<Result<i32, tokio_postgres::Error>> {
    let futs = (0..100).map(|i| async move {
        match i {
            50 => client.query_one("SELECT 1/0", &[]).await.map(|_| -1),
            70 => client.query_one("SELEC broken", &[]).await.map(|_| -1),
            _ => client
                .query_one("SELECT $1::int + $2::int", &[&i, &tag])
                .await
                .map(|r| r.get::<_, i32>(0)),
        }
    });
    futures_util::future::join_all(futs).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_pipelined_queries() {
    let (_topo, proxy, a, b) = pgdog_pair("", 2).await;
    // Two clients pipelining on a pool of 2: every Sync may land on another server, so named
    // statements get prepared lazily wherever they run.
    let (ra, rb) = tokio::join!(pipelined(&a, 1000), pipelined(&b, 2000));
    for (tag, results) in [(1000, ra), (2000, rb)] {
        for (i, r) in results.into_iter().enumerate() {
            match i {
                50 => assert_eq!(
                    sqlstate(r.as_ref().unwrap_err()).as_deref(),
                    Some("22012"),
                    "{r:?}"
                ),
                70 => assert_eq!(
                    sqlstate(r.as_ref().unwrap_err()).as_deref(),
                    Some("42601"),
                    "{r:?}"
                ),
                _ => assert_eq!(
                    r.unwrap_or_else(|e| panic!("query {i}: {e}\n{}", proxy.log())),
                    i as i32 + tag
                ),
            }
        }
    }
    // One prepared statement, pipelined.
    let stmt = a.prepare("SELECT $1::text || '!'").await.unwrap();
    let futs = (0..200).map(|i| {
        let (a, stmt) = (&a, &stmt);
        async move { a.query_one(stmt, &[&i.to_string()]).await }
    });
    let rows = futures_util::future::join_all(futs).await;
    for (i, r) in rows.into_iter().enumerate() {
        assert_eq!(r.unwrap().get::<_, String>(0), format!("{i}!"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_and_out_100k_rows() {
    let (topo, _proxy, client) = pgdog_client(
        "",
        2,
        &["CREATE TABLE copy_t (id int PRIMARY KEY, name text, score float8)"],
    )
    .await;
    let mut data = Vec::new();
    for i in 0..100_000u32 {
        data.extend_from_slice(
            format!("{i}\tname {i} \\\\ é\t{}\n", f64::from(i) / 4.0).as_bytes(),
        );
    }
    let sink = client
        .copy_in("COPY copy_t (id, name, score) FROM STDIN")
        .await
        .unwrap();
    futures_util::pin_mut!(sink);
    for chunk in data.chunks(64 * 1024) {
        sink.send(bytes::Bytes::copy_from_slice(chunk))
            .await
            .unwrap();
    }
    let n = sink.finish().await.unwrap();
    assert_eq!(n, 100_000);

    // Straight from the server: the rows are there.
    assert_eq!(
        topo.primary()
            .psql("SELECT count(*), sum(id), sum(length(name)) FROM copy_t")
            .unwrap(),
        format!(
            "100000|4999950000|{}",
            (0..100_000u32)
                .map(|i| format!("name {i} \\ é").chars().count() as u64)
                .sum::<u64>()
        )
    );

    // Out again through pgdog: byte for byte what went in.
    let stream = client
        .copy_out("COPY (SELECT id, name, score FROM copy_t ORDER BY id) TO STDOUT")
        .await
        .unwrap();
    futures_util::pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.try_next().await.unwrap() {
        out.extend_from_slice(&chunk);
    }
    assert_eq!(out.len(), data.len());
    assert!(
        out == data,
        "COPY TO STDOUT differs from what was copied in"
    );

    // A bad row fails the COPY; the client carries on.
    let sink = client.copy_in("COPY copy_t (id) FROM STDIN").await.unwrap();
    futures_util::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"100001\nnot a number\n"))
        .await
        .unwrap();
    let err = sink.finish().await.unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("22P02"), "{err}");
    assert_eq!(one(&client, "SELECT count(*) FROM copy_t").await, "100000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_and_notifications() {
    let (_topo, proxy) = pgdog("", 2);
    let (a, mut a_messages) = connect_with_messages(&proxy).await;
    let (b, mut b_messages) = connect_with_messages(&proxy).await;

    exec(&a, "DO $$ BEGIN RAISE NOTICE 'hello %', 42; END $$").await;
    match tokio::time::timeout(Duration::from_secs(5), a_messages.recv()).await {
        Ok(Some(AsyncMessage::Notice(n))) => {
            assert_eq!(n.message(), "hello 42");
            assert_eq!(n.severity(), "NOTICE");
        }
        other => panic!("expected a notice, got {other:?}"),
    }

    exec(&a, "LISTEN pooler_chan").await;
    // A notification from another client, outside and inside a transaction.
    exec_each(
        &b,
        &[
            "NOTIFY pooler_chan, 'first'",
            "BEGIN; SELECT pg_notify('pooler_chan', 'second'); COMMIT",
            "BEGIN; SELECT pg_notify('pooler_chan', 'never'); ROLLBACK",
        ],
    )
    .await;
    for expected in ["first", "second"] {
        match tokio::time::timeout(Duration::from_secs(5), a_messages.recv()).await {
            Ok(Some(AsyncMessage::Notification(n))) => {
                assert_eq!(n.channel(), "pooler_chan");
                assert_eq!(n.payload(), expected);
            }
            other => panic!("expected notification {expected}, got {other:?}"),
        }
    }
    // A's own NOTIFY reaches it too; the rolled-back one never arrived before it.
    exec(&a, "NOTIFY pooler_chan, 'own'").await;
    match tokio::time::timeout(Duration::from_secs(5), a_messages.recv()).await {
        Ok(Some(AsyncMessage::Notification(n))) => assert_eq!(n.payload(), "own"),
        other => panic!("expected notification own, got {other:?}"),
    }
    assert!(
        b_messages.try_recv().is_err(),
        "B listens on nothing and must get nothing"
    );
}

/// Sends `garbage` after login and expects a FATAL/ERROR 08P01, then the end of the connection.
async fn expect_protocol_violation(
    port: u16,
    what: &str,
    before: &[u8],
    garbage: &[u8],
    half_close: bool,
) {
    let mut c = Conn::login(port, USER, DB, None).await;
    if !before.is_empty() {
        c.send(before).await;
        let msgs = c.until_ready().await;
        assert!(
            !msgs.iter().any(|m| m.tag == b'E'),
            "{what}: setup failed: {msgs:?}"
        );
    }
    let _ = c.try_send(garbage).await;
    if half_close {
        c.stream.shutdown().await.ok();
    }
    let started = Instant::now();
    let msgs = c.until_closed().await;
    let error = msgs.iter().find(|m| m.tag == b'E');
    let Some(error) = error else {
        panic!(
            "{what}: expected an ErrorResponse 08P01 before the close, got messages {:?} (closed after {:?})",
            raw::tags(&msgs),
            started.elapsed()
        );
    };
    assert_eq!(
        error.sqlstate().as_deref(),
        Some("08P01"),
        "{what}: {:?}",
        error.fields()
    );
}

/// Stops the client of `background_client`, which must have run queries without an error.
async fn stop_unharmed(
    stop: &AtomicBool,
    background: tokio::task::JoinHandle<(usize, Option<String>)>,
) {
    stop.store(true, Ordering::Relaxed);
    let (ok, err) = background.await.unwrap();
    assert!(err.is_none(), "the other client failed: {err:?}");
    assert!(ok > 0);
}

/// A client running queries until `stop`: (successes, first error).
fn background_client(
    proxy: &topology::Proxy,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<(usize, Option<String>)> {
    let conninfo = proxy.conninfo(USER, PASSWORD, DB);
    tokio::spawn(async move {
        let (client, _task) = connect_str(&conninfo).await.expect("background client");
        let mut ok = 0;
        // At least one query, even when the misbehaving client was quicker.
        while ok == 0 || !stop.load(Ordering::Relaxed) {
            match client.query_one("SELECT $1::int", &[&(ok as i32)]).await {
                Ok(row) if row.get::<_, i32>(0) == ok as i32 => ok += 1,
                Ok(_) => return (ok, Some("wrong answer".into())),
                Err(e) => return (ok, Some(e.to_string())),
            }
        }
        (ok, None)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_get_08p01_and_a_disconnect() {
    let (topo, proxy) = pgdog("auth_type = \"trust\"", 4);
    let stop = Arc::new(AtomicBool::new(false));
    let background = background_client(&proxy, stop.clone());
    let port = proxy.port;

    // Unknown message type, in the middle of a transaction.
    let mut unknown = raw::msg(b'y', b"garbage");
    unknown.extend_from_slice(&raw::query("SELECT 1"));
    expect_protocol_violation(port, "unknown type", &raw::query("BEGIN"), &unknown, false).await;
    // Length 3 (less than the length word itself).
    expect_protocol_violation(port, "length 3", &[], &[b'Q', 0, 0, 0, 3], false).await;
    // A Query declaring 2 GB.
    let mut huge = vec![b'Q', 0x7f, 0xff, 0xff, 0xff];
    huge.extend_from_slice(b"SELECT ");
    expect_protocol_violation(port, "2 GB message", &[], &huge, false).await;
    // A Bind whose payload does not match its own structure.
    expect_protocol_violation(port, "malformed Bind", &[], &raw::msg(b'B', b"\0"), false).await;

    // The transaction the first connection left open was rolled back.
    let pg = topo.primary();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let open = pg
            .psql("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'")
            .unwrap();
        if open == "0" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} server connections left idle in transaction\n{}",
            proxy.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    stop_unharmed(&stop, background).await;
    let fresh = connect(&proxy).await;
    assert_eq!(one(&fresh, "SELECT 'still serving'").await, "still serving");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_message_then_close_gets_08p01() {
    let (_topo, proxy) = pgdog("auth_type = \"trust\"", 4);
    let stop = Arc::new(AtomicBool::new(false));
    let background = background_client(&proxy, stop.clone());
    // A Query declaring 100 bytes, 10 sent, then the client stops writing.
    let mut cut = vec![b'Q', 0, 0, 0, 100];
    cut.extend_from_slice(b"SELECT 1, ");
    expect_protocol_violation(proxy.port, "truncated message", &[], &cut, true).await;
    stop_unharmed(&stop, background).await;
    let fresh = connect(&proxy).await;
    assert_eq!(one(&fresh, "SELECT 1").await, "1");
}

#[test]
fn protocol_3_2_from_libpq_18() {
    let (topo, proxy) = pgdog("", 2);
    let conninfo = format!(
        "host=127.0.0.1 port={} user={USER} dbname={DB} sslmode=disable min_protocol_version=3.2 max_protocol_version=3.2",
        proxy.port
    );
    let mut cmd = Command::new(topo.install().tool("psql"));
    cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
        .arg(&conninfo)
        .env("PGPASSWORD", PASSWORD)
        .env("PGCONNECT_TIMEOUT", "10")
        .arg("-f")
        .arg(script_file(
            &proxy,
            "v32.sql",
            "\\conninfo\nSELECT 40 + 2;\nSELECT $1::int * 2 \\bind 21 \\g\n",
        ));
    let (ok, out, err) = run(&mut cmd);
    assert!(ok, "psql with protocol 3.2 failed: {err}\n{}", proxy.log());
    assert!(
        out.lines().any(|l| l == "Protocol Version|3.2"),
        "not protocol 3.2: {out}"
    );
    assert!(out.ends_with("42\n42"), "{out}");
}

/// What `port` answers, as message tags, to a Flush whose length claims a body followed by a
/// Query and the client's half-close (with the time the connection stayed open after it), and
/// to an extended batch ended by a Sync with a body, followed by a simple query.
async fn lying_fixed_lengths(port: u16, user: &str, db: &str) -> (String, Duration, String) {
    let mut c = Conn::login(port, user, db, None).await;
    let mut lie = vec![b'H', 0, 0, 0, 5];
    lie.extend_from_slice(&raw::query("SELECT 1"));
    c.send(&lie).await;
    c.stream.shutdown().await.ok();
    let started = Instant::now();
    let msgs = tokio::time::timeout(Duration::from_secs(5), c.until_closed())
        .await
        .unwrap_or_default();
    let open = started.elapsed();
    let first = msgs.first().map(|m| (m.sqlstate(), m.field(b'M')));
    let flush = format!("{first:?}");

    let mut c = Conn::login(port, user, db, None).await;
    let mut batch = raw::parse("", "SELECT 1");
    batch.extend_from_slice(&raw::bind("", &[]));
    batch.extend_from_slice(&raw::execute());
    batch.extend_from_slice(&[b'S', 0, 0, 0, 5, 0]);
    c.send(&batch).await;
    let mut msgs = c.until_ready().await;
    c.send(&raw::query("SELECT 2")).await;
    msgs.extend(c.until_ready().await);
    let errors: Vec<_> = msgs.iter().filter_map(|m| m.sqlstate()).collect();
    (flush, open, format!("{} {errors:?}", raw::tags(&msgs)))
}

/// Flush and Sync have no body: one whose length claims one gets Postgres' ERROR 08P01
/// "invalid message format", in session and transaction mode alike. After the Flush, the
/// client's next message and its half-close end the session at once (a fuzzer once saw session
/// mode keep such a connection, and its server, for over 10 s); a Sync with a body still ends
/// its batch. pgdog's transcripts are Postgres' own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_and_sync_with_a_body_are_answered_as_postgres_does() {
    for mode in ["session", "transaction"] {
        let general = format!("auth_type = \"trust\"\npooler_mode = \"{mode}\"");
        let (topo, proxy) = pgdog(&general, 2);
        let direct = lying_fixed_lengths(topo.primary().port, "postgres", "postgres").await;
        let through = lying_fixed_lengths(proxy.port, USER, DB).await;
        let want = format!(
            "{:?}",
            Some((
                Some("08P01".to_string()),
                Some("invalid message format".to_string())
            ))
        );
        assert_eq!(direct.0, want, "Postgres, {mode}");
        assert_eq!(through.0, want, "pgdog, {mode} mode\n{}", proxy.log());
        assert!(
            through.1 < Duration::from_secs(2),
            "pgdog, {mode} mode: open {:?} after the client's EOF",
            through.1
        );
        assert_eq!(through.2, direct.2, "pgdog vs Postgres, {mode} mode");
    }
}
