//! Replicas and failover on real streaming standbys: reads spread over replicas and writes stay
//! on the primary (by the parser's read/write rule, transactions, hints), a killed replica is
//! banned and reads go on without errors, a dead primary with `role = "auto"` is replaced by a
//! promoted standby without a reload, two primaries refuse writes, and the sharded variant.
use crate::common;
use common::*;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use topology::{Kind, Node, Topology};

/// pgdog.toml lines for one `[[databases]]` entry of database `app`.
fn entry(node: &Node, role: &str, shard: usize) -> String {
    format!(
        "\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nrole = \"{role}\"\nshard = {shard}\npool_size = 4\n",
        node.port
    )
}

const GENERAL: &str = "auth_type = \"trust\"\nhealthcheck_interval = 200\nhealthcheck_timeout = 500\nconnect_timeout = 1000\n";

async fn port_of(client: &tokio_postgres::Client, sql: &str) -> u16 {
    one(client, sql).await.parse().unwrap()
}

fn replicas(topo: &Topology) -> Vec<&Node> {
    topo.nodes()
        .iter()
        .filter(|n| n.name.starts_with("replica"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_go_to_replicas_and_writes_to_the_primary() {
    let topo = Topology::start(Kind::Replicas(2)).unwrap();
    let primary = topo.primary();
    primary
        .psql("CREATE TABLE t (id int PRIMARY KEY); CREATE SEQUENCE s")
        .unwrap();
    let mut config = GENERAL.to_string();
    config.push_str(&entry(primary, "primary", 0));
    for r in replicas(&topo) {
        config.push_str(&entry(r, "replica", 0));
    }
    let proxy = start_with(&config, &users(""));
    let client = connect(&proxy).await;
    let replica_ports: BTreeSet<u16> = replicas(&topo).iter().map(|n| n.port).collect();

    // Simple and extended reads: round robin over both replicas, never the primary.
    let mut seen = BTreeSet::new();
    for _ in 0..10 {
        seen.insert(port_of(&client, "SELECT inet_server_port()").await);
        let row = client
            .query_one("SELECT inet_server_port()::int", &[])
            .await
            .unwrap();
        seen.insert(row.get::<_, i32>(0) as u16);
    }
    assert_eq!(seen, replica_ports, "reads must spread over the replicas");

    // Writes and everything not proven read-only: the primary.
    let p = primary.port;
    for sql in [
        "INSERT INTO t VALUES (1) RETURNING inet_server_port()",
        "SELECT inet_server_port() FROM t FOR UPDATE",
        "WITH d AS (DELETE FROM t WHERE id = -1 RETURNING id) SELECT inet_server_port()",
        "/* pgdog_role: primary */ SELECT inet_server_port()",
    ] {
        assert_eq!(port_of(&client, sql).await, p, "{sql}");
    }
    // nextval writes (and leaves lastval behind: the client is pinned to that server).
    let pinned = connect(&proxy).await;
    let sql = "SELECT inet_server_port() FROM (SELECT nextval('s')) x";
    assert_eq!(port_of(&pinned, sql).await, p, "{sql}");
    // An explicit transaction runs on the primary from BEGIN to COMMIT.
    exec(&client, "BEGIN").await;
    assert_eq!(port_of(&client, "SELECT inet_server_port()").await, p);
    exec(&client, "INSERT INTO t VALUES (2)").await;
    assert_eq!(port_of(&client, "SELECT inet_server_port()").await, p);
    exec(&client, "COMMIT").await;
    // A read-only transaction stays on one replica.
    exec(&client, "BEGIN READ ONLY").await;
    let first = port_of(&client, "SELECT inet_server_port()").await;
    assert!(replica_ports.contains(&first));
    for _ in 0..3 {
        assert_eq!(port_of(&client, "SELECT inet_server_port()").await, first);
    }
    exec(&client, "COMMIT").await;
    // The client pins itself to the primary, then back.
    exec(&client, "SET pgdog.role = 'primary'").await;
    for _ in 0..3 {
        assert_eq!(port_of(&client, "SELECT inet_server_port()").await, p);
    }
    exec(&client, "RESET pgdog.role").await;
    assert!(replica_ports.contains(&port_of(&client, "SELECT inet_server_port()").await));
    let err = client
        .batch_execute("SET pgdog.role = 'nowhere'")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("22023"));
    assert_eq!(primary.psql("SELECT count(*) FROM t").unwrap(), "2");
}

/// Each read of [`read_load`]: its protocol (simple: true) and the port that answered.
type Read = (bool, Result<u16, String>);

/// Runs `SELECT inet_server_port()` on `clients` clients until the log is finished (even ones
/// with the simple protocol, odd ones extended), logging every read.
fn read_load(
    proxy: &topology::Proxy,
    clients: usize,
) -> (LoadLog<Read>, Vec<tokio::task::JoinHandle<()>>) {
    let log = LoadLog::new();
    let tasks = (0..clients)
        .map(|i| {
            let simple = i % 2 == 0;
            let (log, conninfo) = (log.clone(), proxy.conninfo(USER, PASSWORD, DB));
            tokio::spawn(async move {
                let (client, _conn) = connect_str(&conninfo).await.unwrap();
                while log.running() {
                    let query = async {
                        if simple {
                            simple_value(&client, "SELECT inet_server_port() FROM pg_sleep(0.05)")
                                .await
                                .map(|v| v.parse::<u16>().unwrap_or(0))
                        } else {
                            client
                                .query_one(
                                    "SELECT inet_server_port()::int FROM pg_sleep(0.05)",
                                    &[],
                                )
                                .await
                                .map(|row| row.get::<_, i32>(0) as u16)
                        }
                    };
                    let r = match tokio::time::timeout(Duration::from_secs(10), query).await {
                        Ok(Ok(port)) => Ok(port),
                        Ok(Err(e)) => Err(err_text(&e)),
                        Err(_) => Err("hung".into()),
                    };
                    log.push((simple, r));
                }
            })
        })
        .collect();
    (log, tasks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_is_banned_and_reads_go_on() {
    let topo = Topology::start(Kind::Replicas(2)).unwrap();
    let mut config = GENERAL.to_string();
    config.push_str(&entry(topo.primary(), "primary", 0));
    for r in replicas(&topo) {
        config.push_str(&entry(r, "replica", 0));
    }
    let proxy = start_with(&config, &users(""));
    let (log, tasks) = read_load(&proxy, 4);
    let victim = topo.node("replica1").unwrap();
    let survivor = topo.node("replica2").unwrap().port;
    eventually(
        "reads on both replicas",
        Duration::from_secs(10),
        || async {
            let reads = log.snapshot();
            let ports: BTreeSet<u16> = reads
                .into_iter()
                .filter_map(|(_, (_, port))| port.ok())
                .collect();
            ports.len() == 2
        },
    )
    .await;
    let killed = Instant::now();
    tokio::task::block_in_place(|| victim.stop().unwrap());
    // Reads keep succeeding, now only on the surviving replica.
    let what = "200 reads after the kill";
    log.until(what, Duration::from_secs(20), killed, 100, |r| r.1.is_ok())
        .await;
    let after = log.finish(tasks, killed).await;
    let failures = |simple: bool| -> Vec<&String> {
        after
            .iter()
            .filter(|r| r.0 == simple)
            .filter_map(|r| r.1.as_ref().err())
            .collect()
    };
    // Simple-protocol reads in flight on the victim are retried on the other replica: no
    // error, unless rows of the answer had reached the client when the server died (the
    // replica flushes what it has when it is told to quit: pgdog says so in its log).
    // Extended ones fail at most once per client (the query in flight).
    let too_late = proxy
        .log()
        .matches("reached the client: not retried")
        .count();
    assert!(
        failures(true).len() <= too_late,
        "simple-protocol reads failed ({too_late} lost after rows): {:?}",
        failures(true)
    );
    assert!(
        failures(false).len() <= 4,
        "extended reads failed: {:?}",
        failures(false)
    );
    let first_ok = after.iter().position(|r| r.1.is_ok()).unwrap();
    let last_failure = after.iter().rposition(|r| r.1.is_err());
    let tail = &after[after.len() - 40..];
    assert!(
        tail.iter().all(|r| r.1.as_ref().ok() == Some(&survivor)),
        "reads after the ban must go to the surviving replica"
    );
    let retried = proxy.log().matches("retrying a read").count();
    let lost = proxy.log().matches("server connection lost").count();
    eprintln!("pgdog log: {retried} reads retried, {lost} connections lost");
    eprintln!(
        "extended failures after the kill: {} (first success at #{first_ok}, last failure at {last_failure:?})",
        failures(false).len()
    );
}

/// Admin console SHOW POOLS rows as (port, role, banned).
async fn pools(proxy: &topology::Proxy) -> Vec<(String, String, String)> {
    let (admin, _c) = connect_str(&proxy.conninfo("admin", "admin", "admin"))
        .await
        .unwrap();
    let rows = admin.simple_query("SHOW POOLS").await.unwrap();
    rows.iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some((
                r.get("port").unwrap().to_string(),
                r.get("role").unwrap().to_string(),
                r.get("banned").unwrap().to_string(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_with_auto_roles_needs_no_reload() {
    let topo = Topology::start(Kind::Replicas(2)).unwrap();
    let old = topo.primary();
    old.psql("CREATE TABLE t (id int PRIMARY KEY)").unwrap();
    old.psql("CHECKPOINT").unwrap();
    let mut config = format!("{GENERAL}admin_password = \"admin\"\n");
    config.push_str(&entry(old, "auto", 0));
    for r in replicas(&topo) {
        config.push_str(&entry(r, "auto", 0));
    }
    let proxy = start_with(&config, &users(""));
    let client = connect(&proxy).await;
    let insert = |id: i32| format!("INSERT INTO t VALUES ({id}) RETURNING inet_server_port()");
    assert_eq!(port_of(&client, &insert(1)).await, old.port);
    let roles = pools(&proxy).await;
    assert!(
        roles.contains(&(old.port.to_string(), "primary".into(), "false".into())),
        "{roles:?}"
    );

    // The primary dies: writes fail fast with 08006 naming the shard, reads go on.
    tokio::task::block_in_place(|| old.stop().unwrap());
    let started = Instant::now();
    let attempt = tokio::time::timeout(Duration::from_secs(5), client.simple_query(&insert(2)))
        .await
        .unwrap_or_else(|_| panic!("a write hung with the primary down\n{}", proxy.log()));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "a write took {:?} to fail",
        started.elapsed()
    );
    let write_error = attempt.err();
    let e = write_error.expect("a write succeeded with the primary down");
    assert_eq!(sqlstate(&e).as_deref(), Some("08006"), "{}", err_text(&e));
    // After the next health check the error names the shard.
    eventually("writes to be refused as having no primary", Duration::from_secs(5), || async {
        matches!(client.simple_query(&insert(2)).await, Err(e) if err_text(&e).contains("shard 0"))
    })
    .await;
    let reader = port_of(&client, "SELECT inet_server_port()").await;
    assert_ne!(reader, old.port);

    // Promote replica1: writes reach it without a reload, within 2 health-check intervals.
    let new = topo.node("replica1").unwrap();
    tokio::task::block_in_place(|| topo.promote(new).unwrap());
    let promoted = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match client.simple_query(&insert(3)).await {
            Ok(_) => break,
            Err(e) => {
                assert!(
                    promoted.elapsed() < Duration::from_secs(5),
                    "no write after promotion: {}",
                    err_text(&e)
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    let took = promoted.elapsed();
    eprintln!("first write {took:?} after the promotion ({attempts} attempts)");
    assert!(
        took <= Duration::from_millis(2 * 200 + 300),
        "failover took {took:?}"
    );
    assert_eq!(
        new.psql("SELECT count(*) FROM t WHERE id = 3").unwrap(),
        "1"
    );

    // The old primary comes back as a primary too: writes are refused until it steps down.
    tokio::task::block_in_place(|| old.start().unwrap());
    eventually("two primaries to refuse writes", Duration::from_secs(5), || async {
        matches!(client.simple_query(&insert(4)).await, Err(e) if err_text(&e).contains("several servers claim"))
    })
    .await;
    tokio::task::block_in_place(|| old.stop().unwrap());
    eventually(
        "writes on the new primary again",
        Duration::from_secs(5),
        || async { client.simple_query(&insert(5)).await.is_ok() },
    )
    .await;
    assert_eq!(
        new.psql("SELECT count(*) FROM t WHERE id = 5").unwrap(),
        "1"
    );
}

/// Shard `i`'s primary, where table `t` is created (its replica gets it by streaming), and its
/// replica.
fn shard_with_table(topo: &Topology, i: usize) -> (&Node, &Node) {
    let primary = topo.shard(i);
    primary
        .psql("CREATE TABLE t (id bigint PRIMARY KEY, v int)")
        .unwrap();
    (primary, topo.node(&format!("shard{i}_replica")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_database_with_a_replica_per_shard() {
    let topo = Topology::start(Kind::ShardReplicas(2, 2)).unwrap();
    let mut config = GENERAL.to_string();
    for i in 0..2 {
        let (primary, replica) = shard_with_table(&topo, i);
        config.push_str(&entry(primary, "primary", i));
        config.push_str(&entry(replica, "replica", i));
    }
    config.push_str(&format!(
        "\n[[sharded_tables]]\ndatabase = \"{DB}\"\nname = \"t\"\ncolumn = \"id\"\n"
    ));
    let proxy = start_with(&config, &users(""));
    let client = connect(&proxy).await;
    for id in 1..=20 {
        exec(&client, &format!("INSERT INTO t VALUES ({id}, 0)")).await;
    }
    // Each shard's rows reach its replica.
    for i in 0..2 {
        let lsn = topo
            .shard(i)
            .psql("SELECT pg_current_wal_insert_lsn()")
            .unwrap();
        let replica = topo.node(&format!("shard{i}_replica")).unwrap();
        eventually(
            "the replica to catch up",
            Duration::from_secs(10),
            || async {
                replica
                    .psql(&format!("SELECT pg_last_wal_replay_lsn() >= '{lsn}'"))
                    .unwrap()
                    == "t"
            },
        )
        .await;
    }
    let replica_ports: BTreeSet<u16> = (0..2)
        .map(|i| topo.node(&format!("shard{i}_replica")).unwrap().port)
        .collect();
    let primary_ports: BTreeSet<u16> = (0..2).map(|i| topo.shard(i).port).collect();
    // A single-shard read goes to that shard's replica, a write to its primary.
    for id in 1..=6 {
        let read = port_of(
            &client,
            &format!("SELECT inet_server_port() FROM t WHERE id = {id}"),
        )
        .await;
        assert!(replica_ports.contains(&read), "read of {id} on {read}");
        let write = port_of(
            &client,
            &format!("UPDATE t SET v = v + 1 WHERE id = {id} RETURNING inet_server_port()"),
        )
        .await;
        assert!(primary_ports.contains(&write), "write of {id} on {write}");
    }
    // A cross-shard read on the replicas has every row.
    assert_eq!(one(&client, "SELECT count(*) FROM t").await, "20");
    let (_p, counts): (Vec<u16>, Vec<String>) = (0..2)
        .map(|i| {
            let r = topo.node(&format!("shard{i}_replica")).unwrap();
            (r.port, r.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdog' AND backend_type = 'client backend'").unwrap())
        })
        .unzip();
    assert!(
        counts.iter().all(|c| c != "0"),
        "both replicas served: {counts:?}"
    );
    // In a transaction everything is on the primaries.
    exec(&client, "BEGIN").await;
    let in_tx = port_of(&client, "SELECT inet_server_port() FROM t WHERE id = 1").await;
    assert!(primary_ports.contains(&in_tx));
    exec(&client, "COMMIT").await;
}

/// read_your_writes: right after a client's write its reads go to the primary (and see the
/// write); once the health checks see a replica past that write, reads go back to replicas.
async fn reads_follow_writes(proxy: &topology::Proxy, primaries: &BTreeSet<u16>, key: i64) {
    let client = connect(proxy).await;
    let port = port_of(
        &client,
        &format!("INSERT INTO t VALUES ({key}, 0) RETURNING inet_server_port()"),
    )
    .await;
    assert!(primaries.contains(&port));
    let read = one(
        &client,
        &format!("SELECT inet_server_port() || ':' || count(*) FROM t WHERE id = {key}"),
    )
    .await;
    assert_eq!(read, format!("{port}:1"), "the read right after the write");
    let read_port = format!("SELECT inet_server_port() FROM t WHERE id = {key}");
    eventually_value(
        "reads back on a replica",
        Duration::from_secs(5),
        &client,
        &read_port,
        |p| !primaries.contains(&p.parse().unwrap()),
    )
    .await;
    // A client that wrote nothing reads from replicas at once.
    let other = connect(proxy).await;
    let p = port_of(&other, &read_port).await;
    assert!(!primaries.contains(&p));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_your_writes_unsharded_and_sharded() {
    let topo = Topology::start(Kind::ShardReplicas(2, 2)).unwrap();
    let general = format!("{GENERAL}read_your_writes = true\n");
    let mut single = general.clone();
    let mut sharded = general.clone();
    for i in 0..2 {
        let (primary, replica) = shard_with_table(&topo, i);
        sharded.push_str(&entry(primary, "primary", i));
        sharded.push_str(&entry(replica, "replica", i));
        if i == 0 {
            single.push_str(&entry(primary, "primary", 0));
            single.push_str(&entry(replica, "replica", 0));
        }
    }
    sharded.push_str(&format!(
        "\n[[sharded_tables]]\ndatabase = \"{DB}\"\nname = \"t\"\ncolumn = \"id\"\n"
    ));
    let primaries: BTreeSet<u16> = (0..2).map(|i| topo.shard(i).port).collect();
    let proxy = start_with(&single, &users(""));
    reads_follow_writes(&proxy, &primaries, 1).await;
    drop(proxy);
    let proxy = start_with(&sharded, &users(""));
    for key in 2..6 {
        reads_follow_writes(&proxy, &primaries, key).await;
    }
}

/// Values of SHOW BANS as (port, reason, manual).
async fn bans(admin: &tokio_postgres::Client) -> Vec<(String, String, String)> {
    simple_rows(admin, "SHOW BANS")
        .await
        .iter()
        .map(|r| {
            let v = |c: &str| r.get(c).unwrap_or("NULL").to_string();
            (v("port"), v("reason"), v("manual"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_ban_keeps_traffic_off_a_server_until_unban() {
    let topo = Topology::start(Kind::Replicas(1)).unwrap();
    let (primary, replica) = (topo.primary(), replicas(&topo)[0]);
    let mut config = format!("{GENERAL}admin_password = \"{ADMIN_PASSWORD}\"\n");
    config.push_str(&entry(primary, "primary", 0));
    config.push_str(&entry(replica, "replica", 0));
    let proxy = start_with(&config, &users(""));
    let client = connect(&proxy).await;
    let admin = admin(&proxy).await;
    let read = "SELECT inet_server_port()";
    assert_eq!(port_of(&client, read).await, replica.port);
    assert!(bans(&admin).await.is_empty());

    let server = format!("127.0.0.1:{}", replica.port);
    exec(&admin, &format!("BAN {server} {DB}")).await;
    assert_eq!(
        bans(&admin).await,
        vec![(
            replica.port.to_string(),
            "BAN (admin)".into(),
            "true".into()
        )]
    );
    assert_eq!(port_of(&client, read).await, primary.port);
    // A health check that passes does not lift it (HEALTHCHECK runs one now).
    let checked = simple_rows(&admin, &format!("HEALTHCHECK {server}")).await;
    assert_eq!(checked.len(), 1);
    let row = &checked[0];
    assert_eq!(
        (row.get("ok"), row.get("in_recovery"), row.get("banned")),
        (Some("true"), Some("true"), Some("true"))
    );
    assert_eq!(port_of(&client, read).await, primary.port);
    exec(&admin, &format!("UNBAN {server}")).await;
    assert!(bans(&admin).await.is_empty());
    assert_eq!(port_of(&client, read).await, replica.port);
    // A banned primary: writes fail fast naming the BAN, until UNBAN.
    let primary_server = format!("127.0.0.1:{}", primary.port);
    exec(&admin, &format!("BAN {primary_server}")).await;
    let err = client
        .simple_query("CREATE TABLE banned_write (x int)")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "08006");
    assert!(err_text(&err).contains("BAN"), "{}", err_text(&err));
    exec(&admin, &format!("UNBAN {primary_server}")).await;
    exec(&client, "CREATE TABLE banned_write (x int)").await;

    // HEALTHCHECK of every server; a stopped server fails it and is banned until it is back.
    assert_eq!(simple_rows(&admin, "HEALTHCHECK").await.len(), 2);
    replica.stop().unwrap();
    let checked = simple_rows(&admin, &format!("HEALTHCHECK {server}")).await;
    assert_eq!(checked[0].get("ok"), Some("false"));
    assert!(checked[0].get("error").is_some_and(|e| !e.is_empty()));
    assert_eq!(bans(&admin).await.len(), 1);
    assert_eq!(bans(&admin).await[0].2, "false");

    // An unknown server: 22023 naming the known ones.
    let err = admin.simple_query("BAN 127.0.0.1:1").await.unwrap_err();
    assert_sqlstate(&err, "22023");
    assert!(
        err_text(&err).contains(&primary.port.to_string()),
        "{}",
        err_text(&err)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_show_of_one_setting() {
    let topo = Topology::single().unwrap();
    let config = config(
        &topo,
        &format!("admin_password = \"{ADMIN_PASSWORD}\"\nhealthcheck_interval = 700"),
        2,
    );
    let proxy = start_with(&config, &users(""));
    let admin = admin(&proxy).await;
    let show = |key: &'static str| {
        let admin = &admin;
        async move {
            let rows = simple_rows(admin, &format!("SHOW {key}")).await;
            assert_eq!(rows[0].columns()[0].name(), key.to_ascii_lowercase());
            rows[0].get(0).map(String::from)
        }
    };
    assert_eq!(show("healthcheck_interval").await.as_deref(), Some("700"));
    assert_eq!(show("DEFAULT_POOL_SIZE").await.as_deref(), Some("10"));
    assert_eq!(show("pooler_mode").await.as_deref(), Some("transaction"));
    assert_eq!(show("admin_password").await.as_deref(), Some("****"));
    assert_eq!(show("tls_certificate").await, None);
    assert!(show("resharding.copy_parallel").await.is_some());
    exec(&admin, "SET healthcheck_interval = 900").await;
    assert_eq!(show("healthcheck_interval").await.as_deref(), Some("900"));
    let err = admin
        .simple_query("SHOW no_such_setting")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "08P01");
}
