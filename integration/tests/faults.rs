//! The fault suite on real PostgreSQL 18: thousands of clients on a small pool, a shard killed
//! and restarted under load, clients killed mid-transaction / mid-COPY / mid-pipeline, a frozen
//! server (SIGSTOP), deep pipelining, and a 1 MB statement. Each test checks that nothing is
//! lost, duplicated or left behind. With `FAULTS_REPORT=<file>` each test appends its figures
//! (`key<TAB>value` lines) there for `benchmarks/faults.sh`.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Raises this process' open files limit (thousands of client sockets).
fn raise_fd_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_clients_on_a_pool_of_twenty() {
    raise_fd_limit();
    let (topo, proxy, setup) = pgdog_client(
        "auth_type = \"trust\"\ncheckout_timeout = 20000",
        20,
        &["CREATE TABLE many (id int PRIMARY KEY)"],
    )
    .await;
    let clients = 2000;
    let ok = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..clients {
        let conninfo = proxy.conninfo(USER, "", DB);
        let (ok, refused) = (ok.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            let client = match connect_str(&conninfo).await {
                Ok((c, _)) => c,
                Err(e) => panic!("client {i} could not log in: {e}"),
            };
            let sql =
                format!("BEGIN; INSERT INTO many VALUES ({i}); SELECT pg_sleep(0.002); COMMIT");
            match client.batch_execute(&sql).await {
                Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                Err(e) => {
                    // A clear error: the pool wait ran out.
                    assert_eq!(sqlstate(&e).as_deref(), Some("53300"), "client {i}: {e}");
                    refused.fetch_add(1, Ordering::Relaxed)
                }
            };
        }));
    }
    for t in tasks {
        t.await.expect("a client task panicked");
    }
    let took = start.elapsed();
    let (ok, refused) = (ok.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    assert_eq!(ok + refused, clients);
    let rows: u64 = one(&setup, "SELECT count(*) FROM many")
        .await
        .parse()
        .unwrap();
    assert_eq!(rows, ok, "committed rows = acknowledged transactions");
    // No leaked server connections: at most the pool's 20, none busy.
    let direct = topo.primary().psql(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdog' AND state <> 'idle'",
    );
    assert_eq!(direct.unwrap().trim(), "0");
    let total: u64 = topo
        .primary()
        .psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdog'")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(total <= 21, "{total} server connections");
    report("clients_concurrent", clients);
    report("clients_committed", ok);
    report("clients_refused_53300", refused);
    report("clients_seconds", format!("{:.1}", took.as_secs_f64()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_clients_leave_clean_servers() {
    let (_topo, proxy) = pgdog_after(
        "auth_type = \"plain\"\ncheckout_timeout = 3000",
        1,
        "CREATE TABLE victim (id int PRIMARY KEY, v text); INSERT INTO victim VALUES (1, 'a')",
    )
    .await;
    let cases: [(&str, Vec<Vec<u8>>); 3] = [
        (
            "mid-transaction holding a row lock",
            vec![raw::query(
                "BEGIN; SELECT * FROM victim WHERE id = 1 FOR UPDATE",
            )],
        ),
        (
            "mid-COPY",
            vec![
                raw::query("COPY victim FROM STDIN"),
                raw::msg(b'd', b"2\tb\n3\tc\n"),
            ],
        ),
        ("mid-pipeline", {
            let mut v = vec![raw::parse(
                "",
                "UPDATE victim SET v = v || 'x' WHERE id = 1",
            )];
            for _ in 0..100 {
                v.push(raw::bind("", &[]));
                v.push(raw::execute());
            }
            v
        }),
    ];
    for (what, messages) in cases {
        let mut c = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
        for m in &messages {
            c.send(m).await;
        }
        if what != "mid-pipeline" {
            // Wait until the server is working on it.
            let _ = c.recv().await;
        }
        drop(c); // the client dies (socket closed without Terminate)
        let next = connect(&proxy).await;
        // The pool's one server is back, with no lock, no transaction, no COPY in progress.
        exec(&next, "SET lock_timeout = 1000").await;
        next.batch_execute("UPDATE victim SET v = 'a' WHERE id = 1")
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            one(&next, "SELECT count(*) FROM victim").await,
            "1",
            "{what}"
        );
        assert_eq!(
            one(&next, "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND pid <> pg_backend_pid()").await,
            "0",
            "{what}"
        );
    }
    report("killed_clients_recovered", 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_times_out_and_the_pool_recovers() {
    let (_topo, proxy, a, b) = pgdog_pair("query_timeout = 500\ncheckout_timeout = 1000", 2).await;
    exec(&a, "BEGIN").await;
    let pid: i32 = one(&a, "SELECT pg_backend_pid()").await.parse().unwrap();
    // SAFETY: kill(2) on a backend of this test's own server.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let stuck = tokio::spawn(async move {
        let r = a.simple_query("SELECT 1").await;
        (a, r)
    });
    // The other connection serves meanwhile.
    let start = Instant::now();
    assert_eq!(one(&b, "SELECT 2").await, "2");
    let other = start.elapsed();
    // Only then does the frozen one get its answer (the cancel lands after SIGCONT).
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!stuck.is_finished(), "a frozen server cannot answer");
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let (a, r) = tokio::time::timeout(Duration::from_secs(10), stuck)
        .await
        .expect("the stuck query ends after SIGCONT")
        .unwrap();
    if let Err(e) = &r {
        assert_eq!(sqlstate(e).as_deref(), Some("57014"), "{e}");
    }
    let _ = a.batch_execute("ROLLBACK").await;
    drop(a);
    // The pool is whole again: two clients at once.
    let c = connect(&proxy).await;
    let d = connect(&proxy).await;
    exec(&c, "BEGIN").await;
    assert_eq!(one(&d, "SELECT 3").await, "3");
    exec(&c, "COMMIT").await;
    report("frozen_server_other_client_ms", other.as_millis());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_pipelined_executes_without_reading() {
    let (_topo, proxy) = pgdog("auth_type = \"plain\"", 2);
    let c = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    let n = 10_000;
    let mut batch = raw::parse("", "SELECT repeat('x', 200), $1::int");
    for i in 0..n {
        batch.extend_from_slice(&raw::bind("", &[&i.to_string()]));
        batch.extend_from_slice(&raw::execute());
    }
    batch.extend_from_slice(&raw::sync());
    let start = Instant::now();
    // Write everything before reading anything (in a task: the write itself may wait).
    let (mut read_half, mut write_half) = c.stream.into_split();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        write_half.write_all(&batch).await.unwrap();
        write_half
    });
    let mut buf = Vec::new();
    let mut rows = 0;
    let mut ready = false;
    use tokio::io::AsyncReadExt;
    while !ready {
        let mut chunk = [0u8; 65536];
        let got = tokio::time::timeout(Duration::from_secs(30), read_half.read(&mut chunk))
            .await
            .expect("pgdog stopped answering: deadlock")
            .unwrap();
        assert!(got > 0, "connection closed");
        buf.extend_from_slice(&chunk[..got]);
        let mut pos = 0;
        while buf.len() - pos >= 5 {
            let len = i32::from_be_bytes([buf[pos + 1], buf[pos + 2], buf[pos + 3], buf[pos + 4]])
                as usize;
            if buf.len() - pos < 1 + len {
                break;
            }
            match buf[pos] {
                b'D' => rows += 1,
                b'E' => panic!("error in the pipeline"),
                b'Z' => ready = true,
                _ => {}
            }
            pos += 1 + len;
        }
        buf.drain(..pos);
    }
    writer.await.unwrap();
    assert_eq!(rows, n);
    report("pipelined_executes", n);
    report(
        "pipelined_seconds",
        format!("{:.2}", start.elapsed().as_secs_f64()),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_statement() {
    let (_topo, proxy) = pgdog("", 2);
    let app = connect(&proxy).await;
    let filler = "x".repeat(1 << 20);
    let sql = format!("SELECT length('{filler}')");
    assert_eq!(one(&app, &sql).await, (1 << 20).to_string());
    report("large_statement_bytes", sql.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_killed_under_load_loses_nothing() {
    let topo = topology::Topology::shards(2).expect("shards");
    // The test servers run with synchronous_commit = off (speed): a killed server would lose
    // commits it already acknowledged. Here durability is the point.
    for node in topo.nodes() {
        node.psql("ALTER SYSTEM SET synchronous_commit = on")
            .unwrap();
        node.psql("SELECT pg_reload_conf()").unwrap();
    }
    let mut config =
        String::from("auth_type = \"trust\"\ncheckout_timeout = 1000\nconnect_timeout = 1000\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&format!(
            "\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = {i}\npool_size = 4\n",
            node.port
        ));
    }
    config.push_str("\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"load\"\ncolumn = \"id\"\n");
    let proxy = start_with(&config, &users(""));
    let app = connect(&proxy).await;
    exec(&app, "CREATE TABLE load (id bigint PRIMARY KEY)").await;
    let mut acked = BTreeSet::new();
    let mut failed = BTreeSet::new();
    let mut client = connect(&proxy).await;
    let mut next = 0i64;
    // Phase 0: load; phase 1: shard 1 down (only its keys may fail); phase 2: back up.
    let (mut ok_while_down, mut errors_while_down) = (0, 0);
    let mut recovered_after = None;
    for phase in 0..3 {
        if phase == 1 {
            topo.shard(1).stop().unwrap();
        }
        if phase == 2 {
            topo.shard(1).start().unwrap();
        }
        let phase_start = Instant::now();
        while phase_start.elapsed() < Duration::from_secs(2) {
            next += 1;
            match client
                .batch_execute(&format!("INSERT INTO load VALUES ({next})"))
                .await
            {
                Ok(()) => {
                    acked.insert(next);
                    ok_while_down += usize::from(phase == 1);
                }
                Err(e) => {
                    assert!(phase != 0, "insert {next} failed before any fault: {e}");
                    let code = sqlstate(&e).unwrap_or_default();
                    assert!(
                        ["08006", "57P01", "57P03", "53300", "08001"].contains(&code.as_str()),
                        "unclear error: {e}"
                    );
                    failed.insert(next);
                    errors_while_down += usize::from(phase == 1);
                    if client.is_closed() {
                        client = connect(&proxy).await;
                    }
                }
            }
            if phase == 2 && recovered_after.is_none() {
                // A key that failed while shard 1 was down goes in once it is back.
                if let Some(id) = failed.iter().next().copied() {
                    if client
                        .batch_execute(&format!(
                            "INSERT INTO load VALUES ({id}) ON CONFLICT DO NOTHING"
                        ))
                        .await
                        .is_ok()
                    {
                        failed.remove(&id);
                        acked.insert(id);
                        recovered_after = Some(phase_start.elapsed());
                    }
                }
            }
        }
    }
    // Every acknowledged row is there once; nothing else but possibly in-doubt failures.
    let present: BTreeSet<i64> = {
        let rows = app.simple_query("SELECT id FROM load").await.unwrap();
        rows.iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|v| v.parse().unwrap()),
                _ => None,
            })
            .collect()
    };
    let lost: Vec<_> = acked.difference(&present).collect();
    assert!(lost.is_empty(), "acknowledged rows lost: {lost:?}");
    assert!(present
        .iter()
        .all(|id| acked.contains(id) || failed.contains(id)));
    let count: usize = one(&app, "SELECT count(*) FROM load")
        .await
        .parse()
        .unwrap();
    assert_eq!(count, present.len(), "duplicates");
    assert!(errors_while_down > 0, "the dead shard's inserts must fail");
    assert!(ok_while_down > 0, "the live shard's inserts must go on");
    assert!(recovered_after.is_some(), "shard 1 never came back");
    report("shard_kill_inserts_acked", acked.len());
    report("shard_kill_inserts_failed", failed.len());
    report("shard_kill_rows_lost", lost.len());
    report("shard_kill_rows_duplicated", 0);
    if let Some(t) = recovered_after {
        report("shard_kill_recovered_ms", t.as_millis());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_get_clear_errors_and_nothing_else_breaks() {
    let (_topo, proxy) = pgdog("auth_type = \"plain\"", 2);
    let app = connect(&proxy).await;
    // (what, bytes sent on a fresh connection, after logging in?)
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("startup length 3", 3i32.to_be_bytes().to_vec(), false),
        (
            "startup length 2^31-1",
            i32::MAX.to_be_bytes().to_vec(),
            false,
        ),
        (
            "protocol 9.9",
            {
                let mut v = 8i32.to_be_bytes().to_vec();
                v.extend_from_slice(&((9 << 16) | 9i32).to_be_bytes());
                v
            },
            false,
        ),
        (
            "startup without terminator",
            {
                let body = b"user\0app";
                let mut v = ((8 + body.len()) as i32).to_be_bytes().to_vec();
                v.extend_from_slice(&196608i32.to_be_bytes());
                v.extend_from_slice(body);
                v
            },
            false,
        ),
        ("unknown message type", raw::msg(b'!', b"x"), true),
        ("negative length", vec![b'Q', 0xff, 0xff, 0xff, 0xf0], true),
        (
            "Query without terminator",
            raw::msg(b'Q', b"SELECT 1"),
            true,
        ),
        (
            "Bind to a missing statement",
            {
                let mut v = raw::bind("nope", &[]);
                v.extend_from_slice(&raw::sync());
                v
            },
            true,
        ),
        ("SQL that does not parse", raw::query("SELEC 1 FROM"), true),
        (
            "Parse with bad parameter count",
            {
                let mut v = raw::msg(b'P', b"\0SELECT 1\0\xff\xff");
                v.extend_from_slice(&raw::sync());
                v
            },
            true,
        ),
    ];
    let n = cases.len();
    for (what, bytes, login) in cases {
        let mut c = if login {
            Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await
        } else {
            Conn::connect(proxy.port).await
        };
        let _ = c.try_send(&bytes).await;
        // Up to ReadyForQuery (the session goes on) or the end (a malformed message closes it).
        let msgs = c.until_ready().await;
        let error = msgs.iter().find(|m| m.tag == b'E');
        assert!(
            error.is_some_and(|e| e.sqlstate().is_some_and(|s| s.len() == 5)) || msgs.is_empty(),
            "{what}: {:?}",
            msgs.iter().map(|m| m.tag as char).collect::<String>()
        );
    }
    // Wrong password, unknown user.
    for (user, pw) in [(USER, "wrong"), ("nobody", "x")] {
        let e = connect_as(&proxy, user, pw, DB).await.expect_err("refused");
        assert_eq!(sqlstate(&e).as_deref(), Some("28P01"));
    }
    // Everyone else is unaffected.
    assert_eq!(one(&app, "SELECT 'fine'").await, "fine");
    report("bad_inputs_tried", n + 2);
}
