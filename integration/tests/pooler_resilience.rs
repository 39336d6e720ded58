//! pgdog when things go wrong or change: query cancellation (right key, wrong key, a client
//! that is no longer on the server), a PostgreSQL restart under load, and SIGHUP reloads with
//! good and bad configuration files.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;
use topology::{Node, Topology};

fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

/// Number of server backends running `SELECT pg_sleep(...)` right now.
fn sleeping(node: &Node) -> usize {
    node.psql("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(%'")
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_reaches_the_right_query_and_a_wrong_key_does_nothing() {
    let (topo, proxy) = pgdog("", 2);
    let pg = topo.primary();
    let x = Arc::new(connect(&proxy).await);
    let y = Arc::new(connect(&proxy).await);
    let x_query = {
        let x = x.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            (
                x.simple_query("SELECT pg_sleep(30)").await,
                started.elapsed(),
            )
        })
    };
    let y_query = {
        let y = y.clone();
        tokio::spawn(async move { y.simple_query("SELECT pg_sleep(2.5)").await })
    };
    eventually(
        "both sleeps to run on the server",
        Duration::from_secs(5),
        || async { sleeping(pg) == 2 },
    )
    .await;

    // A CancelRequest with a made-up key: pgdog closes the connection and cancels nothing.
    let r = random_u64();
    let mut bogus = Conn::connect(proxy.port).await;
    bogus
        .send(&raw::cancel_request(
            (r >> 33) as i32,
            &(r as u32).to_be_bytes(),
        ))
        .await;
    let answer = bogus.until_closed().await;
    assert!(
        answer.is_empty(),
        "a CancelRequest gets no answer: {answer:?}"
    );
    // Give a wrongly forwarded cancel the time to land, then check nothing was hit.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !x_query.is_finished(),
        "X's query ended after a wrong-key cancel"
    );
    assert_eq!(sleeping(pg), 2, "a wrong-key cancel stopped a query");

    // The right key, through tokio-postgres: X's query stops, Y's does not.
    let cancelled_at = Instant::now();
    x.cancel_token()
        .cancel_query(NoTls)
        .await
        .expect("sending the cancel");
    let (result, _) = tokio::time::timeout(Duration::from_secs(5), x_query)
        .await
        .expect("X's query still runs 5 s after the cancel")
        .unwrap();
    let err = result.expect_err("X's query was cancelled");
    assert_eq!(sqlstate(&err).as_deref(), Some("57014"), "{err}");
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    y_query
        .await
        .unwrap()
        .expect("Y's query must not be cancelled");
    // X carries on.
    assert_eq!(one(&x, "SELECT 'after cancel'").await, "after cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_from_an_idle_client_does_not_hit_the_server_it_used_before() {
    // Pool of 1: Z's former server is the one Y is now sleeping on.
    let (topo, proxy) = pgdog("", 1);
    let z = connect(&proxy).await;
    assert_eq!(one(&z, "SELECT 1").await, "1");
    let y = Arc::new(connect(&proxy).await);
    let y_query = {
        let y = y.clone();
        tokio::spawn(async move { y.simple_query("SELECT pg_sleep(1.5)").await })
    };
    eventually("Y's sleep to run", Duration::from_secs(5), || async {
        sleeping(topo.primary()) == 1
    })
    .await;
    z.cancel_token().cancel_query(NoTls).await.unwrap();
    y_query
        .await
        .unwrap()
        .expect("Y's query was cancelled by a request from idle client Z");
    assert_eq!(one(&z, "SELECT 2").await, "2");
}

/// Starts a stopped node again, as the harness does (`pg_ctl start` as the server user).
fn start_node(topo: &Topology, node: &Node) {
    let mut cmd = topo.install().server_command("pg_ctl", &node.dir);
    cmd.arg("-D")
        .arg(node.data_dir())
        .arg("-l")
        .arg(node.log_path())
        .args(["-w", "-t", "60", "start"]);
    topology::install::run(&mut cmd).expect("restarting the server");
}

/// Runs `SELECT $1` on its own client every 10 ms until the log is finished, logging each
/// result.
fn query_loop(
    proxy: &topology::Proxy,
) -> (LoadLog<Result<(), String>>, tokio::task::JoinHandle<()>) {
    let results = LoadLog::new();
    let conninfo = proxy.conninfo(USER, PASSWORD, DB);
    let out = results.clone();
    let task = tokio::spawn(async move {
        let (client, _task) = connect_str(&conninfo).await.unwrap();
        let mut i = 0i32;
        while out.running() {
            let r = tokio::time::timeout(
                Duration::from_secs(15),
                client.query_one("SELECT $1::int", &[&i]),
            )
            .await;
            let r = match r {
                Ok(Ok(row)) if row.get::<_, i32>(0) == i => Ok(()),
                Ok(Ok(_)) => Err("wrong answer".to_string()),
                Ok(Err(e)) => Err(err_text(&e)),
                Err(_) => Err("hung for 15 s".to_string()),
            };
            out.push(r);
            i += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    (results, task)
}

/// After a restart: the first query may fail, the next ones must succeed.
async fn recovers(client: &tokio_postgres::Client, what: &str, proxy: &topology::Proxy) {
    let first = simple_value(client, "SELECT 'first'").await;
    for i in 0..20 {
        let r = simple_value(client, &format!("SELECT {i}")).await;
        assert_eq!(
            r.as_deref().map_err(err_text),
            Ok(i.to_string().as_str()),
            "{what}: query {} after the restart (first one: {:?})\n{}",
            i + 2,
            first.as_ref().map_err(err_text),
            proxy.log()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restart_recovers_without_restarting_pgdog() {
    let (topo, proxy) = pgdog("connect_timeout = 2000\ncheckout_timeout = 3000", 2);
    let pg = topo.primary();
    let loop_start = Instant::now();
    let (results, looper) = query_loop(&proxy);
    let m = connect(&proxy).await;
    let n = connect(&proxy).await;
    // Both servers in use, then idle in the pool.
    exec(&m, "BEGIN").await;
    exec(&n, "BEGIN").await;
    exec(&m, "COMMIT").await;
    exec(&n, "COMMIT").await;
    let what = "the query loop to run";
    results
        .until(what, Duration::from_secs(5), loop_start, 5, Result::is_ok)
        .await;

    // 1. A quick restart: the pool holds connections to the old server.
    let boot = || pg.psql("SELECT pg_postmaster_start_time()").unwrap();
    let first_boot = boot();
    tokio::task::block_in_place(|| {
        pg.stop().unwrap();
        start_node(&topo, pg);
    });
    assert_ne!(boot(), first_boot, "the server did not restart");
    recovers(&m, "client M, quick restart", &proxy).await;
    recovers(&n, "client N, quick restart", &proxy).await;

    // 2. Down for a while, with queries failing meanwhile (quickly, not hanging).
    tokio::task::block_in_place(|| pg.stop().unwrap());
    let started = Instant::now();
    let down = tokio::time::timeout(Duration::from_secs(10), m.simple_query("SELECT 1"))
        .await
        .expect("a query while the server is down must fail, not hang");
    assert!(down.is_err(), "a query succeeded with the server down");
    eprintln!(
        "query with the server down failed after {:?}: {:?}",
        started.elapsed(),
        down.err()
    );
    tokio::task::block_in_place(|| start_node(&topo, pg));
    let restarted = Instant::now();
    recovers(&m, "client M, after downtime", &proxy).await;
    recovers(&n, "client N, after downtime", &proxy).await;
    let fresh = connect(&proxy).await;
    recovers(&fresh, "new client", &proxy).await;

    // The background loop recovered too: at most one failure after the restart, and the last
    // results are all successes.
    let what = "more background queries after the restart";
    results
        .until(what, Duration::from_secs(10), restarted, 10, Result::is_ok)
        .await;
    let after = results.finish(vec![looper], restarted).await;
    let failures: Vec<&String> = after.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.len() <= 1,
        "background client failed {} times after the restart: {failures:?}",
        failures.len()
    );
    assert!(after.iter().rev().take(10).all(|r| r.is_ok()));
}

/// Current number of reload messages in the log (`ok`: successful ones, else failed ones).
fn reloads(proxy: &topology::Proxy, ok: bool) -> usize {
    let needle = if ok {
        "configuration reloaded"
    } else {
        "reload failed"
    };
    proxy.log().matches(needle).count()
}

/// Sends SIGHUP and waits (`what`) until pgdog logs one more reload done (`ok`) or refused.
async fn reload(proxy: &topology::Proxy, ok: bool, what: &str) {
    let before = reloads(proxy, ok);
    proxy.reload();
    eventually(what, Duration::from_secs(5), || async {
        reloads(proxy, ok) > before
    })
    .await;
}

/// Holds `n` transactions open at once on new clients; the distinct server pids (or an error).
async fn hold_transactions(proxy: &topology::Proxy, n: usize) -> Result<usize, String> {
    let mut clients = Vec::new();
    let mut pids = std::collections::HashSet::new();
    for _ in 0..n {
        let c = connect(proxy).await;
        c.batch_execute("BEGIN").await.map_err(|e| err_text(&e))?;
        pids.insert(
            simple_value(&c, "SELECT pg_backend_pid()")
                .await
                .map_err(|e| err_text(&e))?,
        );
        clients.push(c);
    }
    for c in &clients {
        c.batch_execute("COMMIT").await.map_err(|e| err_text(&e))?;
    }
    Ok(pids.len())
}

/// pgdog with `checkout_timeout = 500` and a pool of `pool_size`, for reloads: the topology,
/// pgdog.toml as started (to rewrite), the proxy and a client connected before any reload.
async fn reloadable(
    pool_size: usize,
) -> (Topology, String, topology::Proxy, tokio_postgres::Client) {
    let topo = Topology::single().unwrap();
    let cfg = config(&topo, "checkout_timeout = 500", pool_size);
    let proxy = start_with(&cfg, &users(""));
    let client = connect(&proxy).await;
    (topo, cfg, proxy, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_applies_new_settings_and_keeps_connected_clients() {
    let (_topo, cfg, proxy, a) = reloadable(2).await;
    let b = connect(&proxy).await;
    assert_eq!(one(&a, "SELECT 'a'").await, "a");
    assert_eq!(one(&b, "SELECT 'b'").await, "b");
    // Pool of 2: a third transaction at once times out.
    let err = hold_transactions(&proxy, 3).await.unwrap_err();
    assert!(err.contains("timed out"), "{err}");
    assert!(connect_as(&proxy, "app2", "secret2", DB).await.is_err());

    // Pool of 5 for the user, and a new user.
    let new_users = format!(
        "{}\n[[users]]\nname = \"app2\"\ndatabase = \"{DB}\"\npassword = \"secret2\"\n",
        users("pool_size = 5")
    );
    proxy.rewrite(&cfg, &new_users).unwrap();
    reload(&proxy, true, "pgdog to log the reload").await;
    let app2 = connect_as(&proxy, "app2", "secret2", DB)
        .await
        .unwrap_or_else(|e| panic!("the new user cannot log in: {e}\n{}", proxy.log()));
    assert_eq!(one(&app2, "SELECT current_user").await, "postgres");

    // The clients connected before the reload carry on.
    let mut broken = Vec::new();
    for (name, c) in [("a", &a), ("b", &b)] {
        for i in 0..3 {
            if let Err(e) = simple_value(c, &format!("SELECT {i}")).await {
                broken.push(format!("client {name}, query {i}: {}", err_text(&e)));
            }
        }
    }
    // New clients get the new pool size.
    let held = hold_transactions(&proxy, 5).await;
    assert!(
        broken.is_empty(),
        "clients connected before the reload failed: {broken:?}\n(new clients: 5 transactions at once gave {held:?})\n{}",
        proxy.log()
    );
    assert_eq!(
        held,
        Ok(5),
        "5 transactions at once after raising pool_size to 5"
    );
    assert_eq!(one(&a, "SELECT 'a again'").await, "a again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_on_reload_keeps_the_old_one() {
    let (_topo, cfg, proxy, a) = reloadable(3).await;
    exec(&a, "BEGIN").await;
    assert_eq!(one(&a, "SELECT 'in transaction'").await, "in transaction");

    // An unchanged reload first: nothing happens to anyone.
    reload(&proxy, true, "the no-op reload").await;
    assert_eq!(
        one(&a, "SELECT 'still in transaction'").await,
        "still in transaction"
    );

    for (what, config, users_toml) in [
        (
            "broken TOML",
            "default_pool_size = [".to_string(),
            users(""),
        ),
        ("unknown key", format!("pool_sise = 3\n{cfg}"), users("")),
        // Read only at start: refused by name, not half applied.
        (
            "change of workers",
            format!("workers = 2\n{cfg}"),
            users(""),
        ),
        (
            "user on a missing database",
            cfg.clone(),
            format!(
                "{}\n[[users]]\nname = \"x\"\ndatabase = \"nope\"\npassword = \"p\"\n",
                users("")
            ),
        ),
    ] {
        proxy.rewrite(&config, &users_toml).unwrap();
        reload(&proxy, false, &format!("pgdog to reject the {what}")).await;
        // Old configuration in force: the open transaction, new logins, the pool of 3.
        assert_eq!(one(&a, "SELECT 'kept'").await, "kept", "{what}");
        let b = connect(&proxy).await;
        assert_eq!(one(&b, "SELECT 'new client'").await, "new client", "{what}");
        assert_eq!(hold_transactions(&proxy, 2).await, Ok(2), "{what}");
    }
    exec(&a, "COMMIT").await;
    assert_eq!(hold_transactions(&proxy, 3).await, Ok(3));
    assert!(
        proxy
            .log()
            .contains("workers changed and takes effect only at a restart"),
        "{}",
        proxy.log()
    );
    assert!(!proxy.log().contains("panicked"), "{}", proxy.log());
}
