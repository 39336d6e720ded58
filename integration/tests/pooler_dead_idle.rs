//! Server connections that died while idle in the pool are never handed to a client: after
//! `pg_ctl restart -m fast` and after Postgres' `idle_session_timeout` closed them, 20
//! transactions in a row all succeed (plain TCP here; TLS in `server_tls`). And
//! `server_check_delay` / `server_check_query` as PgBouncer runs them, seen through the server
//! process a client lands on.
use crate::common;
use common::*;
use std::path::Path;
use std::time::Duration;
use topology::install::{run, Install};
use topology::Proxy;

/// `n` clients through pgdog, each having held a server connection at the same time (inside a
/// transaction): the pool then has `n` idle connections.
pub async fn warm(clients: &[tokio_postgres::Client]) {
    for c in clients {
        exec(c, "BEGIN").await;
    }
    for c in clients {
        exec(c, "COMMIT").await;
    }
}

/// `pg_ctl restart -m fast` of the data folder `data` (the server's connections get FATAL
/// 57P01 and are closed; the server is up again when it returns).
pub fn restart_fast(install: &Install, dir: &Path, data: &Path, log: &Path) {
    run(install
        .server_command("pg_ctl", dir)
        .arg("-D")
        .arg(data)
        .arg("-l")
        .arg(log)
        .args(["-m", "fast", "-w", "-t", "60", "restart"]))
    .expect("pg_ctl restart");
}

/// 20 transactions in a row on `client`: every one must succeed.
pub async fn twenty_succeed(client: &tokio_postgres::Client, what: &str, proxy: &Proxy) {
    for i in 0..20 {
        let r = simple_value(client, &format!("SELECT {i}")).await;
        assert_eq!(
            r.as_deref().map_err(err_text),
            Ok(i.to_string().as_str()),
            "{what}: transaction {} of 20\n{}",
            i + 1,
            proxy.log()
        );
    }
}

/// Five pooled connections, then the server restarts: none of them reaches a client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_of_a_restarted_server_are_never_handed_out() {
    // No check query: the check without a round trip alone must catch them.
    let (topo, proxy) = pgdog("server_check_query = \"\"\nmin_pool_size = 0", 5);
    let clients = futures_util::future::join_all((0..5).map(|_| connect(&proxy))).await;
    warm(&clients).await;
    let pg = topo.primary();
    tokio::task::block_in_place(|| {
        restart_fast(topo.install(), &pg.dir, &pg.data_dir(), &pg.log_path())
    });
    twenty_succeed(&clients[0], "after pg_ctl restart -m fast", &proxy).await;
}

/// Postgres closes idle sessions after `idle_session_timeout` (FATAL 57P05): the pool's
/// connections it closed are replaced, not handed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_closed_by_idle_session_timeout_are_never_handed_out() {
    let (topo, proxy) = pgdog("server_check_query = \"\"\nmin_pool_size = 0", 5);
    let pg = topo.primary();
    // pgdog's server user only (the test's own psql runs one statement and leaves).
    pg.psql("ALTER ROLE postgres SET idle_session_timeout = '300ms'")
        .unwrap();
    let clients = futures_util::future::join_all((0..5).map(|_| connect(&proxy))).await;
    warm(&clients).await;
    eventually(
        "the server to close pgdog's idle connections",
        Duration::from_secs(10),
        || async {
            pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdog'")
                .unwrap()
                == "0"
        },
    )
    .await;
    twenty_succeed(&clients[0], "after idle_session_timeout", &proxy).await;
}

/// The server process of each of 6 transactions on one client (pool of 1).
async fn backend_pids(general: &str) -> Vec<String> {
    let (_topo, proxy) = pgdog(general, 1);
    let client = connect(&proxy).await;
    let mut pids = Vec::new();
    for _ in 0..6 {
        let pid = simple_value(&client, "SELECT pg_backend_pid()").await;
        pids.push(pid.unwrap_or_else(|e| panic!("{general}: {}", err_text(&e))));
    }
    pids
}

fn distinct(pids: &[String]) -> usize {
    pids.iter().collect::<std::collections::HashSet<_>>().len()
}

/// A check that fails closes the connection and the client gets a new one (each transaction on
/// another server process, none failing); a passing check keeps it; with the delay not reached
/// no check runs at all (the failing query would show).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_check_query_runs_after_the_delay_and_a_failed_check_replaces_the_connection() {
    let failing = "server_check_delay = 0\nserver_check_query = \"SELECT 1/0\"";
    assert_eq!(distinct(&backend_pids(failing).await), 6, "{failing}");
    let passing = "server_check_delay = 0\nserver_check_query = \"SELECT 1\"";
    assert_eq!(distinct(&backend_pids(passing).await), 1, "{passing}");
    let empty = "server_check_delay = 0";
    assert_eq!(distinct(&backend_pids(empty).await), 1, "{empty} (<empty>)");
    let not_due = "server_check_delay = 600000\nserver_check_query = \"SELECT 1/0\"";
    assert_eq!(distinct(&backend_pids(not_due).await), 1, "{not_due}");
}

/// Keeps a process stopped (SIGSTOP) until dropped (SIGCONT), also when the test fails.
struct Frozen(i32);

impl Frozen {
    fn postmaster(node: &topology::Node) -> Frozen {
        let pidfile = std::fs::read_to_string(node.data_dir().join("postmaster.pid")).unwrap();
        let pid: i32 = pidfile.lines().next().unwrap().trim().parse().unwrap();
        // SAFETY: kill(2) on this test's own server.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

fn pgdog_connections(node: &topology::Node) -> String {
    node.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdog'")
        .unwrap()
}

/// Database `b`'s server swallows connection attempts (its postmaster is SIGSTOPped: each
/// attempt waits out connect_timeout, 10 s). Database `a`'s pool still refills its warm
/// connections within a pass or two after the server closed them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_server_holds_up_no_other_pools_upkeep() {
    let a = topology::Topology::single().unwrap();
    let b = topology::Topology::single().unwrap();
    let frozen = Frozen::postmaster(b.primary());
    let config = format!(
        "connect_timeout = 10000\nmin_pool_size = 2\n\n[[databases]]\nname = \"a\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n\n[[databases]]\nname = \"b\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n",
        a.primary().port,
        b.primary().port
    );
    let users = format!(
        "[[users]]\nname = \"{USER}\"\ndatabase = \"a\"\npassword = \"{PASSWORD}\"\n\n[[users]]\nname = \"{USER}\"\ndatabase = \"b\"\npassword = \"{PASSWORD}\"\n"
    );
    let _proxy = start_with(&config, &users);
    let a_node = a.primary();
    eventually("a's pool to warm up", Duration::from_secs(5), || async {
        pgdog_connections(a_node) == "2"
    })
    .await;
    a_node
        .psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'pgdog'")
        .unwrap();
    // One pass a second; b's stalled attempts must not delay a's.
    eventually("a's pool to refill", Duration::from_secs(4), || async {
        pgdog_connections(a_node) == "2"
    })
    .await;
    drop(frozen);
}
