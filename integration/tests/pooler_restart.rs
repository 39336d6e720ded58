//! Zero-downtime restart on a real PostgreSQL 18 server (`so_reuseport = true`): a second
//! pgdog started with the same configuration shares the port; SIGTERM to the first hands it
//! the listening socket (the connections waiting in its queue with it) and every client that
//! is between transactions, with its session state. pgbench with a new connection per
//! transaction and pgbench with persistent connections see no failure across the restart; a
//! cancel reaches the client's query whichever process gets it; `[[peers]]` forward cancels
//! between pgdogs on different ports.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_postgres::AsyncMessage;
use topology::{Proxy, Topology};

const RESTART: &str = "so_reuseport = true\nshutdown_timeout = 20000";

/// pgbench through `proxy`'s port in the background (`-i` tables made first).
fn pgbench(topo: &Topology, proxy: &Proxy, args: &[&str]) -> Child {
    Command::new(topo.install().tool("pgbench"))
        .args(["-h", "127.0.0.1", "-p", &proxy.port.to_string(), "-U", USER])
        .args(args)
        .arg(DB)
        .env("PGPASSWORD", PASSWORD)
        .env("PGSSLMODE", "disable")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgbench")
}

/// Waits for pgbench; its stdout, after checking it ended well with no failed transaction.
fn pgbench_ok(child: Child, what: &str) -> String {
    let out = child.wait_with_output().expect("pgbench output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let problems: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("progress:") && !l.contains("pgbench (") && !l.is_empty())
        .collect();
    assert!(
        out.status.success() && problems.is_empty(),
        "{what}: pgbench {}:\n{stdout}\n{}",
        out.status,
        problems.join("\n")
    );
    assert!(
        stdout.contains("number of failed transactions: 0 (0.000%)"),
        "{what}:\n{stdout}"
    );
    stdout
}

/// The first pgdog with pgbench's tables made through it.
fn first_pgdog() -> (Topology, Proxy) {
    let (topo, proxy) = pgdog(RESTART, 4);
    let init = pgbench(&topo, &proxy, &["-i", "-s", "1", "-q"]);
    let out = init.wait_with_output().expect("pgbench -i");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (topo, proxy)
}

/// Starts a second pgdog on the port after `before`, SIGTERMs the first after `overlap`,
/// and checks the first exits cleanly; the second one.
fn restart(first: &mut Proxy, before: Duration, overlap: Duration) -> Proxy {
    std::thread::sleep(before);
    let second = first.start_alongside("next").expect("second pgdog");
    std::thread::sleep(overlap);
    first.signal(libc::SIGTERM);
    let status = first
        .wait_exit(Duration::from_secs(30))
        .expect("the first pgdog exits");
    assert!(status.success(), "{status}");
    assert!(
        second
            .log()
            .contains("accepting on a listening socket handed over"),
        "{}",
        second.log()
    );
    second
}

/// The transactions processed, from pgbench's summary.
fn processed(stdout: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|v| v.split('/').next()?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn restart_with_a_connection_per_transaction_loses_none() {
    let (topo, mut first) = first_pgdog();
    let started = Instant::now();
    let bench = pgbench(
        &topo,
        &first,
        &["-C", "-c", "16", "-j", "2", "-T", "20", "-n", "-S"],
    );
    let second = restart(&mut first, Duration::from_secs(5), Duration::from_secs(4));
    let out = pgbench_ok(bench, "pgbench -C across the restart");
    report("restart_connect_per_tx_processed", processed(&out));
    assert!(processed(&out) > 0, "{out}");
    assert!(started.elapsed() >= Duration::from_secs(20));
    drop(second);
}

#[test]
fn restart_moves_clients_between_transactions() {
    let (topo, mut first) = first_pgdog();
    let bench = pgbench(
        &topo,
        &first,
        &["-M", "prepared", "-c", "16", "-j", "2", "-T", "20", "-n"],
    );
    let second = restart(&mut first, Duration::from_secs(5), Duration::from_secs(4));
    let out = pgbench_ok(bench, "persistent pgbench -M prepared across the restart");
    report("restart_persistent_processed", processed(&out));
    // Every transaction reached the server once.
    let history = topo
        .primary()
        .psql("SELECT count(*) FROM pgbench_history")
        .unwrap();
    assert_eq!(history.parse::<u64>().unwrap(), processed(&out), "{out}");
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_client_keeps_its_session() {
    let (_topo, mut first) = pgdog(RESTART, 2);
    let (client, mut messages) = connect_with_messages(&first).await;
    exec_each(
        &client,
        &["SET application_name = 'moved'", "LISTEN moved_chan"],
    )
    .await;
    // A LISTEN prepared with the extended protocol too: pgdog answers it, and that statement
    // moves with the client.
    client.execute("LISTEN moved_ext", &[]).await.unwrap();
    let statement = client.prepare("SELECT $1::int + 1").await.unwrap();
    let second = tokio::task::block_in_place(|| first.start_alongside("next")).unwrap();
    first.signal(libc::SIGTERM);
    tokio::task::block_in_place(|| first.wait_exit(Duration::from_secs(20)))
        .expect("the first pgdog exits");
    // Only the second pgdog is left, and the connection is still there.
    assert_eq!(one(&client, "SHOW application_name").await, "moved");
    let row = client.query_one(&statement, &[&41i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
    let other = connect(&second).await;
    exec(&other, "NOTIFY moved_chan, 'after'").await;
    assert_eq!(next_payload(&mut messages).await, "after");
    exec(&other, "NOTIFY moved_ext, 'prepared'").await;
    assert_eq!(next_payload(&mut messages).await, "prepared");
    // Its cancel key moved too.
    let token = client.cancel_token();
    let sleeping = tokio::spawn(async move { client.simple_query("SELECT pg_sleep(30)").await });
    cancel_when_running(&other, token).await;
    let err = tokio::time::timeout(Duration::from_secs(10), sleeping)
        .await
        .expect("cancelled in time")
        .unwrap()
        .unwrap_err();
    assert_sqlstate(&err, "57014");
}

/// A client of the Unix-domain socket moves like a TCP one; the successor binds the socket
/// name anew and the first pgdog leaves it in place at exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_socket_client_keeps_its_session() {
    let dir = std::env::temp_dir().join(format!("pgdog-unix-moved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let general = format!("{RESTART}\nunix_socket_dir = \"{}\"", dir.display());
    let (_topo, mut first) = pgdog(&general, 2);
    let conninfo = format!(
        "host={} port={} user={USER} dbname={DB} password={PASSWORD}",
        dir.display(),
        first.port
    );
    let (client, _) = connect_str(&conninfo).await.expect("socket login");
    exec(&client, "SET application_name = 'moved'").await;
    let _second = tokio::task::block_in_place(|| first.start_alongside("next")).unwrap();
    first.signal(libc::SIGTERM);
    tokio::task::block_in_place(|| first.wait_exit(Duration::from_secs(20)))
        .expect("the first pgdog exits");
    assert_eq!(one(&client, "SHOW application_name").await, "moved");
    let (other, _) = connect_str(&conninfo)
        .await
        .expect("the socket is the second's");
    assert_eq!(one(&other, "SELECT 'new'").await, "new");
    drop((other, _second));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The payload of the next notification among a client's messages, within 10 s.
async fn next_payload(messages: &mut tokio::sync::mpsc::UnboundedReceiver<AsyncMessage>) -> String {
    let next = async {
        loop {
            match messages.recv().await {
                Some(AsyncMessage::Notification(n)) => return n.payload().to_string(),
                Some(_) => continue,
                None => return String::new(),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), next)
        .await
        .expect("a notification within 10 s")
}

/// Sends the cancel once `pg_sleep` runs on the server.
async fn cancel_when_running(
    observer: &tokio_postgres::Client,
    token: tokio_postgres::CancelToken,
) {
    eventually("pg_sleep to run", Duration::from_secs(10), || async {
        one(
            observer,
            "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'",
        )
        .await
            == "1"
    })
    .await;
    token
        .cancel_query(tokio_postgres::NoTls)
        .await
        .expect("cancel request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancels_reach_whichever_pgdog_serves_the_client() {
    let (_topo, mut first) = pgdog(RESTART, 3);
    let observer = connect(&first).await;
    let client = connect(&first).await;
    let second = tokio::task::block_in_place(|| first.start_alongside("next")).unwrap();
    // Both listen: the kernel gives each cancel's connection to either of them.
    for round in 0..6 {
        let c = connect(&first).await;
        let token = c.cancel_token();
        let sleeping = tokio::spawn(async move { c.simple_query("SELECT pg_sleep(30)").await });
        cancel_when_running(&observer, token).await;
        let err = tokio::time::timeout(Duration::from_secs(10), sleeping)
            .await
            .unwrap_or_else(|_| panic!("round {round}: not cancelled"))
            .unwrap()
            .unwrap_err();
        assert_sqlstate(&err, "57014");
    }
    // A client of the first pgdog in a transaction while it shuts down: only the second
    // listens, and passes the cancel on.
    exec(&client, "BEGIN").await;
    let token = client.cancel_token();
    first.signal(libc::SIGTERM);
    eventually(
        "the second pgdog to take the listening socket",
        Duration::from_secs(10),
        || async {
            second
                .log()
                .contains("accepting on a listening socket handed over")
        },
    )
    .await;
    let client = std::sync::Arc::new(client);
    let sleeper = client.clone();
    let sleeping = tokio::spawn(async move { sleeper.simple_query("SELECT pg_sleep(30)").await });
    let observer = connect(&second).await;
    cancel_when_running(&observer, token).await;
    let err = tokio::time::timeout(Duration::from_secs(10), sleeping)
        .await
        .expect("cancelled in time")
        .unwrap()
        .unwrap_err();
    assert_sqlstate(&err, "57014");
    exec(&client, "ROLLBACK").await;
    // Between transactions now: it moves to the second pgdog, and the first exits.
    tokio::task::block_in_place(|| first.wait_exit(Duration::from_secs(20)))
        .expect("the first pgdog exits");
    assert_eq!(one(&client, "SELECT 7").await, "7");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_forward_cancels_to_the_pgdog_of_the_key() {
    let topo = Topology::single().expect("topology");
    let (one_lease, two_lease) = (Proxy::lease_port().unwrap(), Proxy::lease_port().unwrap());
    let (p1, p2) = (one_lease.port, two_lease.port);
    let peers =
        format!("[[peers]]\npeer_id = 1\nport = {p1}\n\n[[peers]]\npeer_id = 2\nport = {p2}\n");
    let body = config(&topo, "", 2);
    let file = |id: u16, port: u16| {
        format!("[general]\nhost = \"127.0.0.1\"\nport = {port}\npeer_id = {id}\nauth_type = \"plain\"\n{body}\n{peers}")
    };
    let one_proxy = Proxy::start_complete(&file(1, p1), &users(""), one_lease).unwrap();
    let two_proxy = Proxy::start_complete(&file(2, p2), &users(""), two_lease).unwrap();
    let mut conn = Conn::login(p1, USER, DB, Some(PASSWORD)).await;
    let (pid, secret) = conn.key.clone().expect("BackendKeyData");
    assert_eq!(pid >> 16, 1, "the key carries peer_id 1: {pid}");
    conn.send(&raw::query("SELECT pg_sleep(30)")).await;
    let observer = connect(&one_proxy).await;
    eventually("pg_sleep to run", Duration::from_secs(10), || async {
        one(
            &observer,
            "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'",
        )
        .await
            == "1"
    })
    .await;
    // To the other pgdog's port: it forwards the request to peer 1.
    let mut cancel = Conn::connect(p2).await;
    cancel.send(&raw::cancel_request(pid, &secret)).await;
    let answer = tokio::time::timeout(Duration::from_secs(10), conn.until_ready())
        .await
        .expect("cancelled in time");
    let error = answer.iter().find(|m| m.tag == b'E').expect("an error");
    assert_eq!(error.sqlstate().as_deref(), Some("57014"));
    drop(two_proxy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_client_of_a_sharded_database_keeps_its_session() {
    let topo = Topology::shards(2).expect("topology");
    let mut config = format!("{RESTART}\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&database(
            node.port,
            &format!("shard = {i}\npool_size = 2\n"),
        ));
    }
    config.push_str(
        "\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"moved_t\"\ncolumn = \"id\"\n",
    );
    let mut first = start_with(&config, &users(""));
    let client = connect(&first).await;
    exec(
        &client,
        "CREATE TABLE moved_t (id bigint PRIMARY KEY, v text)",
    )
    .await;
    let insert = client
        .prepare("INSERT INTO moved_t VALUES ($1, $2)")
        .await
        .unwrap();
    for id in 0..20i64 {
        client.execute(&insert, &[&id, &"before"]).await.unwrap();
    }
    exec(&client, "SET pgdog.shard = 1").await;
    let on_shard_1 = one(&client, "SELECT count(*) FROM moved_t").await;
    let second = tokio::task::block_in_place(|| first.start_alongside("next")).unwrap();
    first.signal(libc::SIGTERM);
    tokio::task::block_in_place(|| first.wait_exit(Duration::from_secs(20)))
        .expect("the first pgdog exits");
    assert!(
        second.log().contains("accepting on a listening socket"),
        "{}",
        second.log()
    );
    // The same connection, served by the second pgdog: its prepared statement and its
    // `SET pgdog.shard` came along.
    assert_eq!(
        one(&client, "SELECT count(*) FROM moved_t").await,
        on_shard_1
    );
    exec(&client, "RESET pgdog.shard").await;
    for id in 20..30i64 {
        client.execute(&insert, &[&id, &"after"]).await.unwrap();
    }
    assert_eq!(one(&client, "SELECT count(*) FROM moved_t").await, "30");
    let on_shards: Vec<i64> = {
        let mut counts = Vec::new();
        for node in topo.nodes() {
            let n = node.psql("SELECT count(*) FROM moved_t").unwrap();
            counts.push(n.parse().unwrap());
        }
        counts
    };
    assert_eq!(on_shards.iter().sum::<i64>(), 30);
    assert!(on_shards.iter().all(|&n| n > 0), "{on_shards:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_idle_clients_move_at_once() {
    // Plain passwords: 300 SCRAM logins take seconds in a debug build.
    let general = format!("{RESTART}\nmax_client_connections = 1000\nauth_type = \"plain\"");
    let (_topo, mut first) = pgdog(&general, 4);
    let mut clients = Vec::new();
    for i in 0..300 {
        let c = connect(&first).await;
        exec(&c, &format!("SET application_name = 'idle{i}'")).await;
        clients.push(c);
    }
    let _second = tokio::task::block_in_place(|| first.start_alongside("next")).unwrap();
    let started = std::time::Instant::now();
    first.signal(libc::SIGTERM);
    tokio::task::block_in_place(|| first.wait_exit(Duration::from_secs(30)))
        .expect("the first pgdog exits");
    report(
        "restart_300_idle_clients_moved_ms",
        started.elapsed().as_millis(),
    );
    for (i, c) in clients.iter().enumerate() {
        assert_eq!(one(c, "SHOW application_name").await, format!("idle{i}"));
    }
}
