//! Operations, observed from outside: `/metrics` parsed by a real OpenMetrics parser (Python's
//! `prometheus_client`) moving with traffic, `/health` turning 503 when the primary dies, and the
//! admin database's PgBouncer commands (SHOW CLIENTS/SERVERS/POOLS/STATS/..., SET, KILL,
//! RECONNECT), with the admin login always password-checked, even under `auth_type = "trust"`.
use crate::common;
use common::*;
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::{Client, SimpleQueryMessage};
use topology::Proxy;

/// Rows of a simple query as column name -> value maps.
async fn table(client: &Client, sql: &str) -> Vec<HashMap<String, String>> {
    simple_rows(client, sql)
        .await
        .iter()
        .map(|r| {
            r.columns()
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name().to_string(), r.get(i).unwrap_or("NULL").into()))
                .collect()
        })
        .collect()
}

/// Column names of a SHOW command.
async fn columns(client: &Client, sql: &str) -> Vec<String> {
    let msgs = client.simple_query(sql).await.expect(sql);
    for m in msgs {
        if let SimpleQueryMessage::RowDescription(cols) = m {
            return cols.iter().map(|c| c.name().to_string()).collect();
        }
    }
    panic!("{sql}: no RowDescription");
}

/// The words of a list of column names written as one string.
fn words(list: &str) -> Vec<&str> {
    list.split_whitespace().collect()
}

/// `GET path` over HTTP/1.1: status, content type, body.
async fn http_get(port: u16, path: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the metrics endpoint");
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP response");
    let status = head[9..12].parse().expect("status code");
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or("")
        .to_string();
    (status, content_type, body.to_string())
}

/// One sample of the exposition: (name, labels, value).
type Sample = (String, HashMap<String, String>, f64);

/// Parses an OpenMetrics exposition with prometheus_client's strict OpenMetrics parser (which
/// rejects a missing `# EOF`, bad counters or histograms); every sample.
fn parse_openmetrics(text: &str) -> Vec<Sample> {
    let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python3");
    let script = r#"
import sys, json
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 of .venv (run scripts/provision.sh)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the OpenMetrics parser refused /metrics: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Vec<(String, HashMap<String, String>, serde_json::Value)> =
        serde_json::from_slice(&out.stdout).expect("the parser's JSON");
    json.into_iter()
        .map(|(name, labels, v)| (name, labels, v.as_f64().unwrap_or(f64::NAN)))
        .collect()
}

/// The value of the sample `name` whose labels include `want`.
fn value(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && want
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.2)
}

fn general(metrics_port: u16, extra: &str) -> String {
    format!(
        "admin_password = \"{ADMIN_PASSWORD}\"\nopenmetrics_port = {metrics_port}\nhealthcheck_interval = 200\nhealthcheck_timeout = 500\nstats_period = 1000\n{extra}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_with_traffic_and_health_follows_the_primary() {
    let lease = Proxy::lease_port().expect("port");
    let mport = lease.port;
    drop(lease);
    let (topo, proxy) = pgdog(&general(mport, ""), 4);
    let app = connect(&proxy).await;
    for _ in 0..5 {
        one(&app, "SELECT 1").await;
    }
    exec(&app, "BEGIN; SELECT 1; SELECT 2; COMMIT").await;
    let err = app.simple_query("SELEC 1").await.unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("42601"));
    let stmt = app.prepare("SELECT $1::int + 1").await.unwrap();
    app.query_one(&stmt, &[&1i32]).await.unwrap();

    let (status, ctype, body) = http_get(mport, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        ctype,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let m = parse_openmetrics(&body);
    let app_labels = [("database", "app"), ("user", "app")];
    let queries = value(&m, "pgdog_queries_total", &app_labels).expect("queries counter");
    // 5 + the multi-statement Query (one) + the failed one + the Execute.
    assert!(queries >= 8.0, "queries {queries}");
    let xacts = value(&m, "pgdog_transactions_total", &app_labels).expect("transactions");
    assert!(xacts >= 8.0, "transactions {xacts}");
    assert!(value(&m, "pgdog_received_bytes_total", &app_labels).unwrap() > 100.0);
    assert!(value(&m, "pgdog_sent_bytes_total", &app_labels).unwrap() > 100.0);
    assert!(value(&m, "pgdog_errors_total", &[("class", "42")]).unwrap() >= 1.0);
    let qcount = value(&m, "pgdog_query_time_seconds_count", &app_labels).unwrap();
    let inf = value(
        &m,
        "pgdog_query_time_seconds_bucket",
        &[("database", "app"), ("user", "app"), ("le", "+Inf")],
    )
    .unwrap();
    assert_eq!(qcount, inf);
    assert!(value(&m, "pgdog_checkout_wait_seconds_count", &app_labels).unwrap() >= 1.0);
    assert!(value(&m, "pgdog_clients", &[("state", "idle")]).unwrap() >= 1.0);
    let idle_servers = value(
        &m,
        "pgdog_server_connections",
        &[
            ("database", "app"),
            ("shard", "0"),
            ("role", "primary"),
            ("state", "idle"),
        ],
    )
    .unwrap();
    assert!(idle_servers >= 1.0);
    assert_eq!(
        value(
            &m,
            "pgdog_host_banned",
            &[("database", "app"), ("shard", "0")]
        ),
        Some(0.0)
    );
    assert!(value(&m, "pgdog_prepared_statements", &[]).unwrap() >= 1.0);
    assert!(value(&m, "pgdog_query_cache_entries", &[]).is_some());

    // The counters move with more traffic.
    for _ in 0..10 {
        one(&app, "SELECT 2").await;
    }
    let m2 = parse_openmetrics(&http_get(mport, "/metrics").await.2);
    let queries2 = value(&m2, "pgdog_queries_total", &app_labels).unwrap();
    assert!(queries2 >= queries + 10.0, "{queries} -> {queries2}");

    // Health: 200 while the primary is up; 404 elsewhere; 503 naming the shard once it is down.
    let (status, ctype, body) = http_get(mport, "/health").await;
    assert_eq!(
        (status, ctype.as_str()),
        (200, "application/json"),
        "{body}"
    );
    assert!(body.contains("\"ok\""), "{body}");
    assert_eq!(http_get(mport, "/nope").await.0, 404);
    topo.primary().stop().expect("stop the primary");
    eventually(
        "/health to report the dead primary",
        Duration::from_secs(10),
        || async {
            let (status, _, body) = http_get(mport, "/health").await;
            status == 503 && body.contains("\"database\":\"app\"") && body.contains("\"shard\":0")
        },
    )
    .await;
    let m3 = parse_openmetrics(&http_get(mport, "/metrics").await.2);
    assert_eq!(
        value(
            &m3,
            "pgdog_host_banned",
            &[("database", "app"), ("shard", "0")]
        ),
        Some(1.0)
    );
}

/// SHOW STATS has PgBouncer's columns and counts the traffic; STATS_TOTALS and
/// STATS_AVERAGES follow it.
async fn stats_columns_and_values(a: &Client, app: &Client) {
    let stats_cols = columns(a, "SHOW STATS").await;
    let pgbouncer_stats = "database total_xact_count total_query_count total_received \
        total_sent total_xact_time total_query_time total_wait_time avg_xact_count \
        avg_query_count avg_recv avg_sent avg_xact_time avg_query_time avg_wait_time";
    assert_eq!(stats_cols, words(pgbouncer_stats));
    let stats = table(a, "SHOW STATS").await;
    let app_stats = stats
        .iter()
        .find(|r| r["database"] == "app")
        .expect("app stats");
    let q: u64 = app_stats["total_query_count"].parse().unwrap();
    assert!(q >= 21, "{app_stats:?}");
    let totals = table(a, "SHOW STATS_TOTALS").await;
    let t = totals.iter().find(|r| r["database"] == "app").unwrap();
    assert!(t["query_count"].parse::<u64>().unwrap() >= q);
    assert!(t["bytes_received"].parse::<u64>().unwrap() > 0);
    // Averages cover the last full stats period (1 s here): traffic now shows up there.
    for _ in 0..50 {
        one(app, "SELECT 1").await;
    }
    eventually(
        "SHOW STATS_AVERAGES to show the traffic",
        Duration::from_secs(5),
        || async {
            let avg = table(a, "SHOW STATS_AVERAGES").await;
            avg.iter()
                .any(|r| r["database"] == "app" && r["query_count"].parse::<u64>().unwrap_or(0) > 0)
        },
    )
    .await;
}

/// SET changes a run-time setting ([general] or [resharding]); a fixed or unknown one is
/// refused and the session goes on.
async fn set_changes_settings(a: &Client, app: &Client) {
    a.simple_query("SET query_timeout = 250").await.unwrap();
    let config = table(a, "SHOW CONFIG").await;
    assert_eq!(
        config.iter().find(|r| r["key"] == "query_timeout").unwrap()["value"],
        "250"
    );
    let err = app.simple_query("SELECT pg_sleep(3)").await.unwrap_err();
    assert_sqlstate(&err, "57014");
    // [resharding] values: shown as resharding.<key>, changed for the reshards started next.
    let row = |config: &[std::collections::HashMap<String, String>], key: &str| {
        config
            .iter()
            .find(|r| r["key"] == key)
            .unwrap_or_else(|| panic!("no {key} in SHOW CONFIG"))
            .clone()
    };
    let before = row(&config, "resharding.replay_batch");
    assert_eq!(
        (before["value"].as_str(), before["changeable"].as_str()),
        ("1000", "yes")
    );
    a.simple_query("SET resharding.replay_batch = 10")
        .await
        .unwrap();
    a.simple_query("SET resharding.copy_format = 'text'")
        .await
        .unwrap();
    let config = table(a, "SHOW CONFIG").await;
    assert_eq!(row(&config, "resharding.replay_batch")["value"], "10");
    assert_eq!(row(&config, "resharding.replay_batch")["default"], "1000");
    assert_eq!(row(&config, "resharding.copy_format")["value"], "text");
    for bad in [
        "SET port = 1",
        "SET nope = 1",
        "SET query_timeout = 'abc'",
        "SET resharding.replay_batch = 0",
        "SET resharding.copy_format = 'csv'",
        "SET resharding.peers = 1",
        "SET resharding.nope = 1",
    ] {
        let err = a.simple_query(bad).await.unwrap_err();
        assert_eq!(
            sqlstate(&err).as_deref(),
            Some("22023"),
            "{bad}: {}",
            err_text(&err)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_show_commands_have_pgbouncer_columns_and_live_values() {
    let (_topo, proxy) = pgdog(
        &format!("admin_password = \"{ADMIN_PASSWORD}\"\nstats_period = 1000"),
        4,
    );
    let app = connect_as(&proxy, USER, PASSWORD, DB).await.unwrap();
    exec(&app, "SET application_name = 'ops-test'").await;
    for _ in 0..20 {
        one(&app, "SELECT 1").await;
    }
    let a = admin(&proxy).await;

    let cols = columns(&a, "SHOW CLIENTS").await;
    let pgbouncer_clients = "type user database replication state addr port local_addr \
        local_port connect_time request_time wait";
    assert_eq!(cols[..12], words(pgbouncer_clients));
    let clients = table(&a, "show clients;").await;
    assert!(
        clients.iter().any(|c| c["user"] == "app"
            && c["database"] == "app"
            && c["state"] == "idle"
            && c["addr"] == "127.0.0.1"),
        "{clients:?}"
    );
    assert!(
        clients.iter().any(|c| c["database"] == "admin"),
        "{clients:?}"
    );

    let servers = table(&a, "SHOW SERVERS").await;
    assert!(
        servers
            .iter()
            .any(|s| s["database"] == "app" && s["state"] == "idle" && s["remote_pid"] != "0"),
        "{servers:?}"
    );
    let pid = one(&app, "SELECT pg_backend_pid()").await;
    let servers = table(&a, "SHOW SERVERS").await;
    assert!(
        servers.iter().any(|s| s["remote_pid"] == pid),
        "{pid} {servers:?}"
    );

    let pools_cols = columns(&a, "SHOW POOLS").await;
    // PgBouncer's SHOW POOLS columns, in its order; pgdog's own come after them.
    let pgbouncer_pools = "database user cl_active cl_waiting cl_active_cancel_req \
        cl_waiting_cancel_req sv_active sv_active_cancel sv_being_canceled sv_idle sv_used \
        sv_tested sv_login maxwait maxwait_us pool_mode";
    assert_eq!(pools_cols[..16], words(pgbouncer_pools));

    stats_columns_and_values(&a, &app).await;

    let config = table(&a, "SHOW CONFIG").await;
    let row = |k: &str| {
        config
            .iter()
            .find(|r| r["key"] == k)
            .cloned()
            .unwrap_or_else(|| panic!("SHOW CONFIG has no {k}"))
    };
    assert_eq!(row("query_timeout")["value"], "0");
    assert_eq!(row("query_timeout")["changeable"], "yes");
    assert_eq!(row("port")["changeable"], "no");
    assert_eq!(row("admin_password")["value"], "****");

    let lists = table(&a, "SHOW LISTS").await;
    let item = |k: &str| lists.iter().find(|r| r["list"] == k).unwrap()["items"].clone();
    assert_eq!(item("databases"), "1");
    assert!(item("used_clients").parse::<u64>().unwrap() >= 2);

    let users = table(&a, "SHOW USERS").await;
    assert_eq!(users[0]["name"], "app");
    assert_eq!(users[0]["pool_mode"], "transaction");

    let stmt = app
        .prepare("SELECT $1::text || 'ops-prepared'")
        .await
        .unwrap();
    app.query_one(&stmt, &[&"x"]).await.unwrap();
    let prepared = table(&a, "SHOW PREPARED_STATEMENTS").await;
    assert!(
        prepared
            .iter()
            .any(|r| r["statement"].contains("ops-prepared")),
        "{prepared:?}"
    );
    let cache = table(&a, "SHOW QUERY_CACHE").await;
    assert_eq!(cache[0]["capacity"], "4096");
    a.simple_query("SET query_cache_limit = 100").await.unwrap();
    let cache = table(&a, "SHOW QUERY_CACHE").await;
    assert_eq!(cache[0]["capacity"], "100");
    // A simple query that calls a function is parsed (through the shape cache), twice with
    // other literals: a new shape, then a hit.
    let shapes = |c: &[HashMap<String, String>], k: &str| c[0][k].parse::<u64>().unwrap();
    let before = table(&a, "SHOW QUERY_CACHE").await;
    for v in [1, 2] {
        one(&app, &format!("SELECT abs({v}) + {v}")).await;
    }
    let cache = table(&a, "SHOW QUERY_CACHE").await;
    for (k, more) in [("shape_entries", 1), ("shape_misses", 1), ("shape_hits", 1)] {
        assert_eq!(
            shapes(&cache, k),
            shapes(&before, k) + more,
            "{k}: {cache:?}"
        );
    }
    assert_eq!(cache[0]["shape_mismatches"], "0", "{cache:?}");
    a.simple_query("SET query_shape_cache_limit = 0")
        .await
        .unwrap();
    let cache = table(&a, "SHOW QUERY_CACHE").await;
    assert_eq!(cache[0]["shape_entries"], "0", "{cache:?}");

    set_changes_settings(&a, &app).await;
    let err = a.simple_query("SHOW NOTHING").await.unwrap_err();
    assert_eq!(
        err_text(&err),
        "ERROR 08P01: invalid command 'SHOW NOTHING', use SHOW HELP;"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_ends_clients_and_reconnect_replaces_servers() {
    let (_topo, proxy) = pgdog(
        &format!("admin_password = \"{ADMIN_PASSWORD}\"\npooler_mode = \"session\""),
        4,
    );
    let app = connect(&proxy).await;
    let before = one(&app, "SELECT pg_backend_pid()").await;
    let a = admin(&proxy).await;

    a.simple_query("RECONNECT app").await.unwrap();
    // Session mode: the connection comes back (and is then replaced) when the client leaves.
    drop(app);
    let app = connect(&proxy).await;
    eventually(
        "a new server connection after RECONNECT",
        Duration::from_secs(5),
        || async { one(&app, "SELECT pg_backend_pid()").await != before },
    )
    .await;

    // PgBouncer's words and code for an unknown database.
    let err = a.simple_query("KILL nosuchdb").await.unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("08P01"));
    assert!(
        err_text(&err).ends_with(": no such database: nosuchdb"),
        "{}",
        err_text(&err)
    );
    a.simple_query("KILL app").await.unwrap();
    eventually(
        "the killed client's session to end",
        Duration::from_secs(5),
        || async { app.is_closed() || app.simple_query("SELECT 1").await.is_err() },
    )
    .await;
    // The admin session itself goes on; a new client waits until RESUME, as in PgBouncer.
    assert_eq!(table(&a, "SHOW VERSION").await.len(), 1);
    let again = connect(&proxy).await;
    let waiting = tokio::spawn(async move { one(&again, "SELECT 5").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "a killed database waits for RESUME");
    a.simple_query("RESUME app").await.unwrap();
    assert_eq!(waiting.await.unwrap(), "5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_always_requires_a_password() {
    let (_topo, proxy) = pgdog(
        &format!("admin_password = \"{ADMIN_PASSWORD}\"\nauth_type = \"trust\""),
        2,
    );
    // trust: the application user gets in with any password ...
    let app = connect_as(&proxy, USER, "whatever", DB).await.unwrap();
    assert_eq!(one(&app, "SELECT 1").await, "1");
    // ... the admin user does not.
    let err = connect_as(&proxy, "admin", "wrong", "admin")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "28P01");
    let err = connect_as(&proxy, "admin", "", "admin").await.unwrap_err();
    assert!(sqlstate(&err).as_deref() == Some("28P01") || err.as_db_error().is_none());
    let a = admin(&proxy).await;
    assert_eq!(table(&a, "SHOW VERSION").await.len(), 1);
}

/// The families a running pgdog exports: name (without `pgdog_`) -> kind.
fn families(exposition: &str) -> HashMap<String, String> {
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE pgdog_"))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| (name.to_string(), kind.to_string()))
        .collect()
}

/// The Grafana dashboard in the repo (grafana/pgdog.json) queries only series a running pgdog
/// exports: each `pgdog_...` name in its expressions is a family (a counter's `_total`, a
/// histogram's `_bucket`, `_sum` or `_count`), and it covers pools, rates, latency, errors,
/// bans and failovers, merges and resharding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grafana_dashboard_queries_only_exported_series() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../grafana/pgdog.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("grafana/pgdog.json"))
            .expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            exprs.push(target["expr"].as_str().expect("expr").to_string());
        }
    }
    for var in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        exprs.push(var["query"].as_str().unwrap_or_default().to_string());
    }
    let lease = Proxy::lease_port().expect("port");
    let mport = lease.port;
    drop(lease);
    let (_topo, proxy) = pgdog(&general(mport, ""), 2);
    let app = connect(&proxy).await;
    one(&app, "SELECT 1").await;
    let (_, _, body) = http_get(mport, "/metrics").await;
    let exported = families(&body);
    let mut used = std::collections::BTreeSet::new();
    for expr in &exprs {
        let mut rest = expr.as_str();
        while let Some(at) = rest.find("pgdog_") {
            let name: String = rest[at + 6..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            rest = &rest[at + 6 + name.len()..];
            let family = [
                ("_total", "counter"),
                ("_bucket", "histogram"),
                ("_sum", "histogram"),
                ("_count", "histogram"),
            ]
            .iter()
            .find_map(|(suffix, kind)| {
                let base = name.strip_suffix(suffix)?;
                (exported.get(base).map(String::as_str) == Some(*kind)).then(|| base.to_string())
            })
            .unwrap_or_else(|| name.clone());
            assert!(
                exported.contains_key(&family),
                "the dashboard queries pgdog_{name}, which pgdog does not export: {expr}\nexported: {exported:?}"
            );
            used.insert(family);
        }
    }
    for needed in [
        "clients",
        "pool_waiting_clients",
        "server_connections",
        "checkout_wait_seconds",
        "transactions",
        "queries",
        "query_time_seconds",
        "errors",
        "host_banned",
        "host_primary",
        "merge_spilled_bytes",
        "reshard_copied_rows",
        "reshard_replay_lag_bytes",
    ] {
        assert!(
            used.contains(needed),
            "the dashboard shows no pgdog_{needed}"
        );
    }
    drop(proxy);
}
