//! The dry run on real PostgreSQL 18: the same statements through a one-server database in a
//! dry run (`dry_run_shards = 3`) and through a really sharded copy (3 shards). The dry run
//! serves every statement unchanged; its SHOW ROUTES verdicts equal the sharded copy's, and
//! every statement the sharded copy refused is reported refused with the very SQLSTATE and
//! message the client got there. Counts, shares and RESET ROUTES; metrics; `pgdog readiness`.
use crate::sharding_common;

use sharding_common::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;
use tokio_postgres::Client;
use topology::{Proxy, Topology};

const ADMIN_PASSWORD: &str = "admin-pw";

const TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "accounts"
column = "id"
data_type = "bigint"

[[sharded_tables]]
database = "app"
name = "orders"
column = "account_id"
data_type = "bigint"

[[omnisharded_tables]]
database = "app"
tables = ["countries"]
"#;

const SCHEMA: &str = "CREATE TABLE accounts (id bigint PRIMARY KEY, balance int, name text); \
     CREATE TABLE orders (id bigint, account_id bigint, note text); \
     CREATE TABLE countries (code text PRIMARY KEY, name text)";

/// (statement, its one bigint parameter: sent with the extended protocol)
fn workload() -> Vec<(String, Option<i64>)> {
    let mut w: Vec<(String, Option<i64>)> = Vec::new();
    for id in 1..=6 {
        w.push((
            format!("SELECT balance FROM accounts WHERE id = {id}"),
            None,
        ));
    }
    for id in [4, 9, 12] {
        let q = "SELECT name FROM accounts WHERE id = $1".to_string();
        w.push((q, Some(id)));
    }
    let simple = [
        "SELECT count(*) FROM accounts",
        "SELECT count(*) FROM accounts",
        "SELECT id FROM accounts WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8)",
        "SELECT a.id FROM accounts a JOIN orders o ON o.id = a.id",
        "SELECT count(DISTINCT balance) FROM accounts",
        "UPDATE accounts SET balance = balance + 1 WHERE id = 3",
        "DELETE FROM orders WHERE note = 'gone'",
        "UPDATE countries SET name = 'France' WHERE code = 'FR'",
        "INSERT INTO accounts (id, balance, name) VALUES (101, 1, 'a'), (102, 2, 'b'), (103, 3, 'c'), (104, 4, 'd')",
        "INSERT INTO orders (id, account_id, note) VALUES (1, 101, 'n')",
        "BEGIN",
        "SELECT balance FROM accounts WHERE id = 2",
        "COMMIT",
        "MERGE INTO accounts a USING orders o ON a.id = o.account_id WHEN MATCHED THEN DO NOTHING",
        "CREATE INDEX IF NOT EXISTS accounts_balance ON accounts (balance)",
    ];
    w.extend(simple.iter().map(|s| (s.to_string(), None)));
    w
}

fn config(nodes: &[(u16, &str)], general: &str) -> String {
    let mut c =
        format!("auth_type = \"trust\"\nadmin_password = \"{ADMIN_PASSWORD}\"\n{general}\n");
    for (i, (port, db)) in nodes.iter().enumerate() {
        write!(
            c,
            "\n[[databases]]\nname = \"{DB}\"\nport = {port}\ndatabase_name = \"{db}\"\nuser = \"postgres\"\nshard = {i}\npool_size = 4\n"
        )
        .unwrap();
    }
    c + TABLES
}

async fn admin(proxy: &Proxy) -> Client {
    connect_str(&proxy.conninfo("admin", ADMIN_PASSWORD, "admin")).await
}

/// SHOW ROUTES: fingerprint -> every column by name.
async fn routes(proxy: &Proxy) -> BTreeMap<String, BTreeMap<String, String>> {
    let rows = simple_rows(&admin(proxy).await, "SHOW ROUTES").await;
    rows.iter()
        .map(|r| {
            let cols: BTreeMap<String, String> = r
                .columns()
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name().to_string(), r.get(i).unwrap_or("").to_string()))
                .collect();
            (cols["fingerprint"].clone(), cols)
        })
        .collect()
}

/// Runs the workload; per statement, the error (`CODE: message`) it got, if any.
async fn run(client: &Client) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for (sql, params) in workload() {
        let r = match &params {
            None => client.simple_query(&sql).await.map(|_| ()),
            Some(id) => client.query(&sql, &[id]).await.map(|_| ()),
        };
        out.push(r.err().map(|e| {
            let db = e.as_db_error().expect("a server error");
            format!("{}: {}", db.code().code(), db.message())
        }));
    }
    out
}

#[test]
fn dry_run_verdicts_equal_the_sharded_copy() {
    let topo = Topology::shards(3).expect("topology");
    runtime().block_on(async {
        let first = connect_port(topo.nodes()[0].port).await;
        first.batch_execute("CREATE DATABASE single").await.unwrap();
        let ports: Vec<u16> = topo.nodes().iter().map(|n| n.port).collect();
        for p in &ports {
            connect_port(*p).await.batch_execute(SCHEMA).await.unwrap();
        }
        let single_db = format!("host=127.0.0.1 port={} user=postgres dbname=single", ports[0]);
        connect_str(&single_db).await.batch_execute(SCHEMA).await.unwrap();

        let dry = Proxy::start(
            &config(&[(ports[0], "single")], "dry_run = true\ndry_run_shards = 3"),
            &users_toml(),
        )
        .expect("dry-run pgdog");
        let nodes: Vec<(u16, &str)> = ports.iter().map(|p| (*p, "postgres")).collect();
        let sharded = Proxy::start(&config(&nodes, "dry_run = true"), &users_toml())
            .expect("sharded pgdog");

        let on_dry = run(&connect_proxy(&dry).await).await;
        let on_sharded = run(&connect_proxy(&sharded).await).await;
        let workload = workload();
        // The dry run serves everything as the one server does.
        for ((sql, _), err) in workload.iter().zip(&on_dry) {
            assert_eq!(err, &None, "dry run: {sql}");
        }
        let refused: Vec<_> = on_sharded.iter().flatten().collect();
        assert!(refused.len() >= 3, "the sharded copy refuses some: {on_sharded:?}");

        let dry_routes = routes(&dry).await;
        let sharded_routes = routes(&sharded).await;
        let verdicts = |m: &BTreeMap<String, BTreeMap<String, String>>| -> BTreeMap<String, (String, String, String)> {
            m.iter()
                .map(|(fp, c)| (fp.clone(), (c["verdict"].clone(), c["reason"].clone(), c["calls"].clone())))
                .collect()
        };
        assert_eq!(verdicts(&dry_routes), verdicts(&sharded_routes));

        // Each statement's shape: refused there exactly when the sharded copy refused it, with
        // its SQLSTATE and message.
        for ((sql, _), err) in workload.iter().zip(&on_sharded) {
            let row = dry_routes
                .values()
                .find(|c| same_shape(&c["query"], sql))
                .unwrap_or_else(|| panic!("no shape for {sql}: {dry_routes:#?}"));
            match err {
                Some(e) => {
                    assert_eq!(row["verdict"], "refused", "{sql}");
                    assert_eq!(&row["reason"], e, "{sql}");
                }
                None => assert_ne!(row["verdict"], "refused", "{sql}: {row:?}"),
            }
        }
        check_counts(&dry_routes);
        let url = format!("postgres://admin:{ADMIN_PASSWORD}@127.0.0.1:{}/admin", dry.port);
        let report = readiness(&dry, &["--admin-url", &url]);
        for part in [
            "Database app: ",
            "% of calls go to one shard",
            "would be refused by the sharded cluster",
            "0A000: MERGE on a sharded database",
            "go to all shards",
            "no filter on the sharding key (accounts.id)",
            "SELECT count(*) FROM accounts",
        ] {
            assert!(report.contains(part), "{part:?} in\n{report}");
        }
        from_postgres_log(&topo, &dry, &single_db).await;
        let a = admin(&dry).await;
        a.simple_query("RESET ROUTES").await.unwrap();
        assert!(routes(&dry).await.is_empty());
    });
}

/// The sample's text with `$n` matches the statement's text with its constants.
fn same_shape(sample: &str, sql: &str) -> bool {
    let norm = |s: &str| -> String {
        let mut out = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '$' || c.is_ascii_digit() {
                while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                    chars.next();
                }
                out.push('#');
            } else if c == '\'' {
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
                out.push('#');
            } else {
                out.push(c);
            }
        }
        out
    };
    norm(sample) == norm(sql)
}

fn check_counts(routes: &BTreeMap<String, BTreeMap<String, String>>) {
    let by_query = |q: &str| {
        routes
            .values()
            .find(|c| same_shape(&c["query"], q))
            .unwrap_or_else(|| panic!("{q}"))
    };
    let point = by_query("SELECT balance FROM accounts WHERE id = 1");
    assert_eq!(
        point["calls"], "7",
        "6 simple + 1 in the transaction: {point:?}"
    );
    assert_eq!(point["one_shard"], "7");
    assert_eq!(point["verdict"], "one shard");
    let count = by_query("SELECT count(*) FROM accounts");
    assert_eq!(count["calls"], "2");
    assert_eq!(count["verdict"], "all shards");
    assert_eq!(
        count["reason"],
        "no filter on the sharding key (accounts.id)"
    );
    let prepared = by_query("SELECT name FROM accounts WHERE id = $1");
    assert_eq!(prepared["calls"], "3");
    assert_eq!(prepared["verdict"], "one shard");
    let begin = by_query("BEGIN");
    assert_eq!(begin["verdict"], "session");
    let delete = by_query("DELETE FROM orders WHERE note = 'gone'");
    assert_eq!(delete["verdict"], "all shards");
    let total: u64 = routes
        .values()
        .map(|c| c["calls"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(total as usize, workload().len());
    let pct: f64 = routes
        .values()
        .map(|c| c["calls_pct"].parse::<f64>().unwrap())
        .sum();
    assert!((pct - 100.0).abs() < 0.1, "{pct}");
    assert!(routes.values().any(|c| c["time_us"] != "0"));
}

/// `pgdog readiness ARGS` with the configuration of `proxy`; its stdout.
fn readiness(proxy: &Proxy, args: &[&str]) -> String {
    let out = std::process::Command::new(topology::proxy::binary())
        .arg("readiness")
        .args(args)
        .arg("--config")
        .arg(proxy.dir.join("pgdog.toml"))
        .arg("--users")
        .arg(proxy.dir.join("users.toml"))
        .output()
        .expect("pgdog readiness");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The server's own log (log_statement = 'all') of statements run straight on it, read by
/// `pgdog readiness --file` with the dry run's configuration.
async fn from_postgres_log(topo: &Topology, dry: &Proxy, single_db: &str) {
    let node = &topo.nodes()[0];
    let direct = connect_str(single_db).await;
    for sql in [
        "ALTER SYSTEM SET log_statement = 'all'",
        "SELECT pg_reload_conf()",
    ] {
        direct.batch_execute(sql).await.unwrap();
    }
    // The setting reaches new sessions once the postmaster has reloaded.
    let log_has = |marker: &str| {
        let marker = marker.to_string();
        topology::wait_until(
            &marker.clone(),
            Duration::from_secs(10),
            Duration::from_millis(20),
            move || {
                Ok(std::fs::read_to_string(node.log_path())
                    .unwrap_or_default()
                    .contains(&marker))
            },
        )
        .expect("the server log");
    };
    log_has(r#"parameter "log_statement" changed to "all""#);
    let client = connect_str(single_db).await;
    for id in [3_i64, 4, 5] {
        client
            .query("SELECT name FROM accounts WHERE id = $1", &[&id])
            .await
            .unwrap();
    }
    client
        .batch_execute(
            "SELECT a.id\n  FROM accounts a JOIN orders o ON o.id = a.id; \
             SELECT count(*) FROM orders; SELECT 'readiness-log-end'",
        )
        .await
        .unwrap();
    log_has("readiness-log-end");
    for sql in [
        "ALTER SYSTEM RESET log_statement",
        "SELECT pg_reload_conf()",
    ] {
        direct.batch_execute(sql).await.unwrap();
    }
    let log = node.log_path();
    let report = readiness(dry, &["--file", log.to_str().unwrap(), "--database", "app"]);
    for part in [
        "0A000: cross-shard join",
        "JOIN orders o ON o.id = a.id",
        "no filter on the sharding key (orders.account_id)",
    ] {
        assert!(report.contains(part), "{part:?} in\n{report}");
    }
    // The prepared point reads were routed by their logged parameters: one shard.
    assert!(!report.contains("WHERE id = $1"), "{report}");
    assert!(report.contains("always go to one shard"), "{report}");
}
