//! Two-phase commit across shards: a transaction that wrote on two shards commits on both; and a
//! pgdog killed between PREPARE TRANSACTION and COMMIT PREPARED leaves prepared transactions that
//! the next pgdog to start commits (every PREPARE had succeeded), so nothing is lost or half-done.
use std::time::Duration;
use topology::{wait_until, Proxy, Topology};

fn config(topo: &Topology) -> String {
    let mut c = String::from("auth_type = \"trust\"\ntwo_phase_commit = true\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        c.push_str(&format!(
            "\n[[databases]]\nname = \"app\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = {i}\n",
            node.port
        ));
    }
    c.push_str("\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\n");
    c
}

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"app\"\n";

fn prepared(topo: &Topology) -> Vec<usize> {
    topo.nodes()
        .iter()
        .map(|n| {
            n.psql("SELECT count(*) FROM pg_prepared_xacts")
                .expect("psql")
                .trim()
                .parse()
                .expect("count")
        })
        .collect()
}

fn rows(topo: &Topology) -> Vec<usize> {
    topo.nodes()
        .iter()
        .map(|n| {
            n.psql("SELECT count(*) FROM t")
                .expect("psql")
                .trim()
                .parse()
                .expect("count")
        })
        .collect()
}

#[test]
fn two_phase_commit_and_in_doubt_recovery() {
    let topo = Topology::shards(2).expect("topology");
    let proxy = Proxy::start(&config(&topo), USERS).expect("pgdog");
    proxy
        .psql("app", "", "app", "CREATE TABLE t (id bigint PRIMARY KEY)")
        .expect("ddl");
    // Ids 1..=20 land on both shards of 2.
    let values: Vec<String> = (1..=20).map(|i| format!("({i})")).collect();
    proxy
        .psql(
            "app",
            "",
            "app",
            &format!(
                "BEGIN; INSERT INTO t (id) VALUES {}; COMMIT;",
                values.join(",")
            ),
        )
        .expect("2pc commit");
    let r = rows(&topo);
    assert!(r.iter().all(|n| *n > 0), "rows on every shard: {r:?}");
    assert_eq!(r.iter().sum::<usize>(), 20);
    assert_eq!(prepared(&topo), vec![0, 0], "nothing left prepared");
    drop(proxy);

    // A pgdog that dies right after every shard prepared.
    std::env::set_var("PGDOG_TEST_CRASH_AFTER_PREPARE", "1");
    let crashing = Proxy::start(&config(&topo), USERS).expect("pgdog");
    std::env::remove_var("PGDOG_TEST_CRASH_AFTER_PREPARE");
    let values: Vec<String> = (21..=40).map(|i| format!("({i})")).collect();
    let result = crashing.psql(
        "app",
        "",
        "app",
        &format!(
            "BEGIN; INSERT INTO t (id) VALUES {}; COMMIT;",
            values.join(",")
        ),
    );
    assert!(result.is_err(), "the crashing pgdog cannot answer COMMIT");
    assert_eq!(prepared(&topo), vec![1, 1], "in doubt on both shards");
    drop(crashing);

    // The next pgdog commits them.
    let _proxy = Proxy::start(&config(&topo), USERS).expect("pgdog");
    wait_until(
        "in-doubt transactions to be resolved",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || Ok(prepared(&topo) == vec![0, 0]),
    )
    .expect("recovered");
    assert_eq!(
        rows(&topo).iter().sum::<usize>(),
        40,
        "the in-doubt rows were committed"
    );
}
