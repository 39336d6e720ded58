//! Mirroring on real PostgreSQL 18: a one-server database's transactions (simple and extended
//! protocol, autocommit and BEGIN ... COMMIT, 4 clients under load) replayed on a database of
//! 2 shards through pgdog. One destination shard is stopped (`pg_ctl stop -m immediate`) and
//! started again mid-run: the source's clients see no error; on the destination each client's
//! rows are a prefix of what it wrote (complete for the clients on the other shard, cut short
//! for those on the stopped one); a client connecting after the restart is mirrored again.
//! SHOW MIRRORS and the metrics count it all.
use crate::sharding_common;

use sharding_common::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::Client;
use topology::{Proxy, Topology};

const ADMIN_PASSWORD: &str = "admin-pw";
const TRANSACTIONS: i64 = 150;

fn config(source: u16, shards: [u16; 2], queue_length: usize) -> String {
    let mut c = format!(
        "auth_type = \"trust\"\nadmin_password = \"{ADMIN_PASSWORD}\"\n\
         \n[[databases]]\nname = \"app\"\nport = {source}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\npool_size = 8\n"
    );
    for (i, port) in shards.iter().enumerate() {
        write!(
            c,
            "\n[[databases]]\nname = \"app_new\"\nport = {port}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = {i}\npool_size = 8\n"
        )
        .unwrap();
    }
    c + r#"
[[sharded_tables]]
database = "app_new"
name = "log"
column = "client"
data_type = "bigint"

[[mirroring]]
source_db = "app"
destination_db = "app_new"
exposure = 1.0
"# + &format!("queue_length = {queue_length}\n")
}

fn users() -> String {
    ["app", "app_new"]
        .iter()
        .map(|db| {
            format!("[[users]]\nname = \"app\"\ndatabase = \"{db}\"\npassword = \"secret\"\n\n")
        })
        .collect()
}

async fn admin(proxy: &Proxy) -> Client {
    connect_str(&proxy.conninfo("admin", ADMIN_PASSWORD, "admin")).await
}

/// SHOW MIRRORS' one row, by column name.
async fn mirrors(proxy: &Proxy) -> BTreeMap<String, String> {
    let rows = simple_rows(&admin(proxy).await, "SHOW MIRRORS").await;
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    r.columns()
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name().to_string(), r.get(i).unwrap_or("").to_string()))
        .collect()
}

/// Waits until the mirror's queue is empty.
async fn drained(proxy: &Proxy) {
    for _ in 0..500 {
        if mirrors(proxy).await["queue_depth"] == "0" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the mirror queue did not drain: {:?}", mirrors(proxy).await);
}

/// One client's load: TRANSACTIONS transactions, seq counting its rows; every third is
/// BEGIN, two INSERTs, COMMIT; the rest one INSERT with parameters (extended protocol).
async fn load(client: Client, id: i64, done: Arc<AtomicUsize>) -> i64 {
    let mut seq = 0_i64;
    for t in 0..TRANSACTIONS {
        if t % 3 == 0 {
            let sql = format!(
                "BEGIN; INSERT INTO log VALUES ({id}, {}, 'a'); INSERT INTO log VALUES ({id}, {}, 'b'); COMMIT",
                seq,
                seq + 1
            );
            client
                .batch_execute(&sql)
                .await
                .expect("source transaction");
            seq += 2;
        } else {
            client
                .execute("INSERT INTO log VALUES ($1, $2, 'c')", &[&id, &seq])
                .await
                .expect("source insert");
            seq += 1;
        }
        done.fetch_add(1, Ordering::SeqCst);
    }
    seq
}

async fn wait_for(done: &AtomicUsize, n: usize) {
    while done.load(Ordering::SeqCst) < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The seq values of `client` on the destination, sorted.
async fn seqs(shards: &[Client], client: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for s in shards {
        for v in col(s, &format!("SELECT seq FROM log WHERE client = {client}")).await {
            out.push(v.unwrap().parse::<i64>().unwrap());
        }
    }
    out.sort();
    out
}

async fn run(topo: &Topology) {
    let ports: Vec<u16> = topo.nodes().iter().map(|n| n.port).collect();
    for p in &ports {
        connect_port(*p)
            .await
            .batch_execute("CREATE TABLE log (client bigint, seq bigint, note text)")
            .await
            .unwrap();
    }
    // A queue longer than the whole run: only the stopped shard loses transactions.
    let proxy =
        Proxy::start(&config(ports[0], [ports[1], ports[2]], 100_000), &users()).expect("pgdog");
    let probe = hash_probe(ports[1]).await;
    let keys = keys_per_shard(&probe, 2, 3).await;
    // Two clients on each destination shard; shard 0 (node 1) is the one stopped.
    let (stopped_keys, kept_keys) = (&keys[0][..2], &keys[1][..2]);
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for id in stopped_keys.iter().chain(kept_keys) {
        let c = connect_str(&proxy.conninfo("app", "secret", "app")).await;
        tasks.push(tokio::spawn(load(c, *id, done.clone())));
    }
    let stopped = &topo.nodes()[1];
    wait_for(&done, 4 * 40).await;
    stopped.stop().expect("stop a destination shard");
    wait_for(&done, 4 * 80).await;
    stopped.start().expect("start it again");
    let mut written = BTreeMap::new();
    for (id, t) in stopped_keys.iter().chain(kept_keys).zip(tasks) {
        written.insert(*id, t.await.expect("client task"));
    }
    drained(&proxy).await;

    let source = connect_port(ports[0]).await;
    let dest = [connect_port(ports[1]).await, connect_port(ports[2]).await];
    for (id, n) in &written {
        let on_source = seqs(std::slice::from_ref(&source), *id).await;
        assert_eq!(
            on_source,
            (0..*n).collect::<Vec<_>>(),
            "source rows of {id}"
        );
        let got = seqs(&dest, *id).await;
        assert_eq!(
            got,
            (0..got.len() as i64).collect::<Vec<_>>(),
            "client {id}: not a prefix"
        );
        if kept_keys.contains(id) {
            assert_eq!(
                got.len() as i64,
                *n,
                "client {id} on the running shard: all of it"
            );
        } else {
            assert!(
                (got.len() as i64) < *n,
                "client {id} on the stopped shard: {} of {n}",
                got.len()
            );
            // The lane may lag the source: some, not all, of the 40 transactions before the stop.
            assert!(
                !got.is_empty(),
                "client {id}: nothing mirrored before the stop"
            );
        }
    }
    let m = mirrors(&proxy).await;
    let count = |k: &str| m[k].parse::<u64>().unwrap();
    // Every request ending in ReadyForQuery I is one (a prepare, an execute, a Close + Sync of
    // tokio-postgres' unnamed statements, each BEGIN ... COMMIT).
    assert!(
        count("mirrored") + count("dropped") + count("errors") >= 4 * TRANSACTIONS as u64,
        "{m:?}"
    );
    assert_eq!(
        count("errors"),
        2,
        "each lane on the stopped shard failed once: {m:?}"
    );
    assert!(count("dropped") > 0, "{m:?}");
    assert!(m["destination_avg_us"] != "0", "{m:?}");

    // A client that connects after the restart is mirrored again (once pgdog reaches the
    // restarted shard).
    let late = keys[0][2];
    let direct_new = connect_str(&proxy.conninfo("app", "secret", "app_new")).await;
    let probe_sql = format!("SELECT count(*) FROM log WHERE client = {late}");
    for _ in 0..500 {
        if direct_new.simple_query(&probe_sql).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again = connect_str(&proxy.conninfo("app", "secret", "app")).await;
    for seq in 0..5_i64 {
        again
            .execute("INSERT INTO log VALUES ($1, $2, 'late')", &[&late, &seq])
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..500 {
        got = seqs(&dest, late).await;
        if got.len() == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(got, (0..5).collect::<Vec<_>>());
    drop(proxy);
    frozen(topo, keys[1][2]).await;
}

/// Every process of `node`'s server (postmaster and backends) stopped or continued.
fn signal_server(node: &topology::Node, signal: &str) {
    let pid = std::fs::read_to_string(node.data_dir().join("postmaster.pid")).unwrap();
    let pid = pid.lines().next().unwrap().trim().to_string();
    let script = format!("kill -{signal} $(pgrep -P {pid}) {pid}");
    let status = std::process::Command::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// A frozen destination (SIGSTOP): the source goes on at its own pace, the queue stays at
/// queue_length and the rest is dropped, counted; after SIGCONT the destination holds a prefix.
async fn frozen(topo: &Topology, key: i64) {
    let ports: Vec<u16> = topo.nodes().iter().map(|n| n.port).collect();
    let proxy = Proxy::start(&config(ports[0], [ports[1], ports[2]], 8), &users()).expect("pgdog");
    let client = connect_str(&proxy.conninfo("app", "secret", "app")).await;
    let insert = |seq: i64| format!("INSERT INTO log VALUES ({key}, {seq}, 'frozen')");
    for seq in 0..5 {
        client.batch_execute(&insert(seq)).await.unwrap();
    }
    // COPY is replayed too (split by key on the sharded destination).
    let rows: String = (5..8).map(|seq| format!("{key}\t{seq}\tcopy\n")).collect();
    copy_in(&client, "COPY log FROM STDIN", &rows)
        .await
        .unwrap();
    drained(&proxy).await;
    let dest = [connect_port(ports[1]).await, connect_port(ports[2]).await];
    assert_eq!(seqs(&dest, key).await, (0..8).collect::<Vec<_>>());
    let node = &topo.nodes()[2];
    signal_server(node, "STOP");
    for seq in 8..108 {
        client
            .batch_execute(&insert(seq))
            .await
            .expect("the source does not wait");
    }
    let m = mirrors(&proxy).await;
    let count = |k: &str| m[k].parse::<u64>().unwrap();
    assert!(count("queue_depth") <= 8, "{m:?}");
    assert!(count("dropped") >= 100 - 8, "{m:?}");
    signal_server(node, "CONT");
    drained(&proxy).await;
    let got = seqs(&dest, key).await;
    assert_eq!(
        got,
        (0..got.len() as i64).collect::<Vec<_>>(),
        "not a prefix"
    );
    assert!(
        (8..=8 + 8).contains(&got.len()),
        "{} rows: {m:?}",
        got.len()
    );
}

#[test]
fn mirroring_survives_a_destination_restart_and_keeps_prefixes() {
    let topo = Topology::shards(3).expect("topology");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(&topo));
}
