//! `pgdog reshard --cutover` end to end, 2 -> 4 shards under load: clients write through pgdog
//! to a 2-shard database while the whole move runs (schema, copy, replay, cutover through the
//! admin database); they must see no error, their writes after the cutover land on the 4 new
//! shards, the configuration file names the new shards, the slots are gone, sequences moved,
//! and `pgdog verify` reports no difference between the old and the new shards.
use crate::reshard_common;

use reshard_common::load::{
    admin_url, assert_item_on, config, cutover_args, runtime, source_and_destination, start_loads,
    stop_clean_loads, stop_loads, wait_for_cutover, wait_for_statements, ADMIN_PASSWORD, APP_DBS,
    USERS,
};
use reshard_common::{
    app_ports, command, count_on, count_on_shard, database, omnisharded, pgdog_with, sharded_table,
    shards, sigterm, slot_active, slot_active_on_shards, spawn, text, verify_until_equal, wait_for,
    write_files,
};
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};
use topology::proxy::Proxy;
use topology::Topology;

/// The roll back after a cutover with `--reverse`: `pgdog cutover` on the reverse slot (names as
/// they are after the swap) while clients write; they see no error and their last rows are
/// on the old shards, which `app` names again.
struct Rollback<'a> {
    rt: &'a tokio::runtime::Runtime,
    url: &'a str,
    done: &'a Arc<AtomicU64>,
    admin_url: &'a str,
}

impl Rollback<'_> {
    fn run(&self, proxy: &Proxy, source: &Topology, dest: &Topology) {
        let stop = Arc::new(AtomicBool::new(false));
        let urls = (1..=2).map(|k| (self.url.to_string(), 10_000_000 + k * 1_000_000));
        let loads = start_loads(self.rt, urls, &stop, self.done);
        wait_for_statements(self.done, 50);
        let out = pgdog_with(
            &proxy.dir,
            source,
            "cutover",
            &APP_DBS,
            &[
                "--publication",
                "pub",
                "--slot",
                "move_reverse",
                "--admin-url",
                self.admin_url,
            ],
        );
        assert!(
            out.status.success(),
            "rollback: {}\n{}",
            text(&out),
            proxy.log()
        );
        wait_for_statements(self.done, 100);
        for (_, errors, last) in stop_loads(self.rt, &stop, loads) {
            assert!(
                errors.is_empty(),
                "clients saw errors during the rollback: {errors:?}\n{}",
                proxy.log()
            );
            // Written after the rollback: on the old shards.
            assert_item_on(source, 2, last - 1, "the old shards");
        }
        let toml = std::fs::read_to_string(proxy.dir.join("pgdog.toml")).unwrap();
        let source_ports: Vec<String> = (0..2).map(|s| source.shard(s).port.to_string()).collect();
        let app_entries: Vec<&str> = toml
            .split("[[databases]]")
            .filter(|e| e.contains("name = \"app\""))
            .collect();
        assert_eq!(app_entries.len(), 2, "{toml}");
        assert!(
            app_entries.iter().all(|e| source_ports
                .iter()
                .any(|p| e.contains(&format!("port = {p}")))),
            "{toml}"
        );
        for s in 0..4 {
            assert_eq!(
                dest.shard(s)
                    .psql("SELECT count(*) FROM pg_replication_slots")
                    .unwrap(),
                "0"
            );
        }
    }
}

/// 5,000 rows through pgdog, placed on the two source shards (both get more than 1,000).
fn seed_items(rt: &tokio::runtime::Runtime, url: &str, source: &Topology) {
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        for batch in 0..10 {
            let values: Vec<String> = (1..=500)
                .map(|i| {
                    let id = batch * 500 + i;
                    format!("({id}, 'row {id}')")
                })
                .collect();
            client
                .simple_query(&format!(
                    "INSERT INTO items (id, v) VALUES {}",
                    values.join(", ")
                ))
                .await
                .unwrap();
        }
    });
    for s in 0..2 {
        let n = count_on_shard(source, s, "SELECT count(*) FROM items");
        assert!(n > 1000, "source shard {s} has {n} rows");
    }
}

/// After the cutover: every new shard holds rows, the configuration serves `app` from the new
/// shards (the old ones are `app_new`), the source slots are gone and the sequences moved
/// forward.
fn check_switched(dir: &Path, source: &Topology, dest: &Topology) {
    for s in 0..4 {
        let n = count_on_shard(dest, s, "SELECT count(*) FROM items");
        assert!(n > 500, "destination shard {s} has {n} rows");
    }
    let toml = std::fs::read_to_string(dir.join("pgdog.toml")).unwrap();
    assert!(
        toml.contains(&dest.shard(3).port.to_string()),
        "new config: {toml}"
    );
    assert!(dir.join("pgdog.toml.before-cutover").is_file());
    let app_ports = app_ports(dir);
    let dest_ports: Vec<u16> = (0..4).map(|s| dest.shard(s).port).collect();
    assert_eq!(app_ports.len(), 4, "{toml}");
    assert!(app_ports.iter().all(|p| dest_ports.contains(p)), "{toml}");

    // Slots dropped, sequences moved.
    let mut seq_max = 0i64;
    for s in 0..2 {
        assert_eq!(
            source
                .shard(s)
                .psql("SELECT count(*) FROM pg_replication_slots")
                .unwrap(),
            "0"
        );
        let v: i64 = source
            .shard(s)
            .psql("SELECT last_value FROM items_n_seq")
            .unwrap()
            .parse()
            .unwrap();
        seq_max = seq_max.max(v);
    }
    // The new shards took writes after the cutover, so their sequences went further.
    let dest_seq: i64 = dest
        .shard(0)
        .psql("SELECT last_value FROM items_n_seq")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        dest_seq >= seq_max,
        "sequence {dest_seq} < source's {seq_max}"
    );
}

#[test]
fn reshard_two_to_four_under_load_with_cutover() {
    let (source, dest) = source_and_destination();
    let proxy = Proxy::start(&config(&source, &dest), USERS).expect("pgdog starts");
    let dir = proxy.dir.clone();
    let url = proxy.url("app", "secret", "app");

    let rt = runtime();
    seed_items(&rt, &url, &source);

    // Load through pgdog for the whole move.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let urls = (1..=2).map(|k| (url.clone(), k * 1_000_000));
    let loads = start_loads(&rt, urls, &stop, &done);
    wait_for_statements(&done, 100);

    let admin_urls = [admin_url(proxy.port)];
    let mut child = spawn(&dir, &source, "reshard", &cutover_args("move", &admin_urls));
    // The cutover is done once reverse replication reads its slot on the new shards; it
    // starts after the configuration swap (slots are also active for a moment while they are
    // created).
    let cutover_done = || {
        dir.join("pgdog.toml.before-cutover").is_file()
            && slot_active_on_shards(&dest, 4, "move_reverse")
    };
    let what = "pgdog reshard did not cut over";
    wait_for_cutover(&mut child, 180, what, || proxy.log(), cutover_done);

    // Clients keep writing after the cutover, now to the new shards.
    wait_for_statements(&done, 200);
    let last_ids = stop_clean_loads(&rt, &stop, loads, || proxy.log());

    // The last rows written are on the new shards (and back on the old ones through reverse
    // replication, checked by verify below).
    for id in last_ids {
        assert_item_on(&dest, 4, id - 1, "the new shards");
    }
    check_switched(&dir, &source, &dest);

    // Old (now `app_new`, kept in sync by reverse replication) against new (now `app`): no
    // difference once the reverse replication applied the last writes.
    verify_until_equal(&dir, &source, "app_new", "app");

    // Stopping the reshard ends reverse replication; its slots stay for a rollback.
    let out = sigterm(child);
    assert!(out.status.success(), "pgdog reshard: {}", text(&out));
    assert!(text(&out).contains("cutover done"), "{}", text(&out));
    assert!(text(&out).contains("roll back"), "{}", text(&out));
    for s in 0..4 {
        assert_eq!(
            dest.shard(s)
                .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'move_reverse'")
                .unwrap(),
            "1"
        );
    }

    let rollback = Rollback {
        rt: &rt,
        url: &url,
        done: &done,
        admin_url: &admin_urls[0],
    };
    rollback.run(&proxy, &source, &dest);
}

/// No destination shard kept the progress tables (the reshard cleaned up).
fn assert_no_progress_tables(dest: &Topology, shards: usize) {
    for s in 0..shards {
        assert_eq!(
            dest.shard(s)
                .psql("SELECT to_regclass('pgdog_reshard_progress') IS NULL")
                .unwrap(),
            "t"
        );
    }
}

/// Runs one admin statement, returning its rows as text.
async fn admin(client: &tokio_postgres::Client, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let msgs = client.simple_query(sql).await.map_err(|e| {
        e.as_db_error()
            .map(|d| format!("{}: {}", d.code().code(), d.message()))
            .unwrap_or_else(|| e.to_string())
    })?;
    Ok(msgs
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("").to_string())
                    .collect(),
            ),
            _ => None,
        })
        .collect())
}

/// `app` on the source primary and its standby (a replica), `app_new` on the 3 destination
/// shards, items and accounts sharded in both, the admin database and the metrics endpoint;
/// tables over 64 KiB copied in key ranges.
fn one_to_three_config(source: &Topology, dest: &Topology, metrics_port: u16) -> String {
    let mut config = format!(
        "admin_password = \"{ADMIN_PASSWORD}\"\nopenmetrics_port = {metrics_port}\n\n\
         [[databases]]\nname = \"app\"\nport = {}\n\
         database_name = \"postgres\"\nuser = \"postgres\"\n\n[[databases]]\nname = \"app\"\n\
         port = {}\nrole = \"replica\"\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n",
        source.primary().port,
        source.standby().port
    );
    for shard in 0..3 {
        config.push_str(&format!(
            "\n[[databases]]\nname = \"app_new\"\nshard = {shard}\nport = {}\n\
             database_name = \"postgres\"\nuser = \"postgres\"\n",
            dest.shard(shard).port
        ));
    }
    for db in ["app", "app_new"] {
        config.push_str(&format!(
            "\n[[sharded_tables]]\ndatabase = \"{db}\"\nname = \"items\"\ncolumn = \"id\"\n\
             data_type = \"bigint\"\n\n[[sharded_tables]]\ndatabase = \"{db}\"\n\
             name = \"accounts\"\ncolumn = \"id\"\ndata_type = \"integer\"\n"
        ));
    }
    config.push_str("\n[resharding]\ncopy_split_bytes = 65536\n");
    config
}

/// Waits (SHOW RESHARD) until the reshard started from the admin database replays; each copied
/// table, and each key range of items, then names the standby it was read from and its MB/s,
/// in SHOW RESHARD and metrics.
fn wait_for_replaying(
    rt: &tokio::runtime::Runtime,
    admin_client: &tokio_postgres::Client,
    proxy: &Proxy,
    metrics_port: u16,
    standby: u16,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rows = rt
            .block_on(admin(admin_client, "SHOW RESHARD"))
            .expect("SHOW RESHARD");
        let status = rows
            .iter()
            .find(|r| r[0] == "reshard")
            .map(|r| r[9].clone())
            .unwrap_or_default();
        assert!(!status.starts_with("failed"), "{status}\n{}", proxy.log());
        if status.starts_with("replaying") {
            // Each table names the server it is read from and its MB/s.
            assert!(
                rows.iter().any(|r| r[0] == "table"
                    && r[10].starts_with("replica 127.0.0.1:")
                    && r[11].parse::<f64>().is_ok()),
                "{rows:?}"
            );
            // items is copied in key ranges: a row each, the first from no lower bound.
            let ranges = rows
                .iter()
                .filter(|r| r[0] == "table" && r[1].starts_with("public.items [\"id\" "))
                .count();
            assert!(ranges >= 2, "{rows:?}");
            let metrics = http_get(metrics_port, "/metrics");
            assert!(
                metrics.lines().any(|l| l.starts_with(
                    "pgdog_reshard_copied_rows_total{table=\"public.items [\\\"id\\\" ..",
                ) && l.contains(&format!(
                    "shard=\"0\",server=\"replica 127.0.0.1:{standby}\"}} "
                ))),
                "{metrics}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "still {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The body of `GET path` on 127.0.0.1:port.
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("metrics endpoint");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

#[test]
fn reshard_one_to_three_from_the_admin_database() {
    let source = Topology::replicated().expect("source primary + standby");
    let dest = Topology::shards(3).expect("destination shards");
    let primary = source.primary();
    primary
        .psql(
            "CREATE TABLE items (id bigint PRIMARY KEY, v text);
             CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL);
             INSERT INTO accounts SELECT i, i * 10 FROM generate_series(1, 3000) i;
             INSERT INTO items SELECT i, 'row ' || i FROM generate_series(1, 4000) i;
             CREATE PUBLICATION pub FOR TABLE items, accounts;",
        )
        .expect("source schema");
    source
        .wait_for_standby(Duration::from_secs(30))
        .expect("standby caught up");
    let metrics_port = Proxy::lease_port().expect("port").port;
    let config = one_to_three_config(&source, &dest, metrics_port);
    let proxy = Proxy::start(&config, USERS).expect("pgdog starts");
    let dir = proxy.dir.clone();
    let url = proxy.url("app", "secret", "app");
    let admin_url = proxy.url("admin", ADMIN_PASSWORD, "admin");
    let rt = runtime();
    let admin_client = rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&admin_url, tokio_postgres::NoTls)
            .await
            .expect("admin login");
        tokio::spawn(conn);
        c
    });

    let done = Arc::new(AtomicU64::new(0));
    let start_load = |stop: &Arc<AtomicBool>, round: i64| {
        let urls = (1..=2).map(|k| (url.clone(), round * 10_000_000 + k * 1_000_000));
        start_loads(&rt, urls, stop, &done)
    };
    let finish = |stop: &AtomicBool, loads| stop_clean_loads(&rt, stop, loads, || proxy.log());

    // The checks alone from the admin database: one row each, creating no slot.
    let checks = rt
        .block_on(admin(&admin_client, "RESHARD app app_new pub CHECK"))
        .expect("RESHARD ... CHECK");
    assert!(checks.len() >= 10, "{checks:?}");
    assert!(checks.iter().all(|r| r[1] != "refused"), "{checks:?}");
    assert!(
        checks.iter().any(|r| r[0] == "wal_level" && r[1] == "ok"),
        "{checks:?}"
    );
    assert_eq!(
        primary
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")
            .unwrap(),
        "0"
    );

    // Start the reshard from the admin database while clients write.
    let stop = Arc::new(AtomicBool::new(false));
    let loads = start_load(&stop, 1);
    wait_for_statements(&done, 50);
    rt.block_on(admin(
        &admin_client,
        "RESHARD app app_new pub SLOT one_to_three",
    ))
    .expect("RESHARD starts");
    wait_for_replaying(
        &rt,
        &admin_client,
        &proxy,
        metrics_port,
        source.standby().port,
    );
    // DDL the replay would not carry is refused through this pgdog while the rows move.
    let refused = rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("client login");
        tokio::spawn(conn);
        let simple = c
            .simple_query("CREATE INDEX items_v ON items (v)")
            .await
            .expect_err("CREATE INDEX during a reshard");
        // The extended protocol (Parse) too.
        let extended = c
            .execute("CREATE TABLE not_carried (id int)", &[])
            .await
            .expect_err("CREATE TABLE during a reshard");
        [simple, extended]
    });
    for e in &refused {
        let db = e.as_db_error().expect("an ErrorResponse");
        assert_eq!(db.code().code(), "55000", "{db:?}");
        assert!(db.message().contains("app_new"), "{db:?}");
    }
    finish(&stop, loads);

    // Writes stopped: once the replay caught up, the destination equals the source.
    verify_until_equal(&dir, &source, "app", "app_new");

    // Cut over with clients connected and writing.
    let stop = Arc::new(AtomicBool::new(false));
    let loads = start_load(&stop, 2);
    wait_for_statements(&done, 50);
    rt.block_on(admin(&admin_client, "CUTOVER"))
        .unwrap_or_else(|e| panic!("CUTOVER: {e}\n{}", proxy.log()));
    wait_for_statements(&done, 200);
    let last = finish(&stop, loads);
    let rows = rt.block_on(admin(&admin_client, "SHOW RESHARD")).unwrap();
    assert!(rows[0][9].starts_with("done"), "{rows:?}");

    // Writes after the cutover are on the new shards, not on the old server.
    for id in last {
        assert_item_on(&dest, 3, id - 1, "the new shards");
        assert_eq!(
            primary
                .psql(&format!("SELECT count(*) FROM items WHERE id = {}", id - 1))
                .unwrap(),
            "0"
        );
    }
    // The static table matches: old (now app_new) against new (now app).
    let old_to_new = ["--from-database", "app_new", "--to-database", "app"];
    let out = pgdog_with(
        &dir,
        &source,
        "verify",
        &old_to_new,
        &["--table", "accounts"],
    );
    assert!(out.status.success(), "verify accounts: {}", text(&out));
    // Nothing left behind: no logical slot, no progress tables.
    assert_eq!(
        primary
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")
            .unwrap(),
        "0"
    );
    assert_no_progress_tables(&dest, 3);
}

/// A single source server with `sql` run on it, and 2 empty destination shards.
fn single_source_and_two_shards(sql: &str) -> (Topology, Topology) {
    let source = Topology::single().expect("source");
    let dest = Topology::shards(2).expect("destination");
    source.primary().psql(sql).expect("source schema");
    (source, dest)
}

/// `--from-database app --to-database app_new --publication pub --slot <slot>`.
fn move_args(slot: &str) -> Vec<&str> {
    [&APP_DBS[..], &["--publication", "pub", "--slot", slot]].concat()
}

/// Starts `pgdog reshard` ([`move_args`]) from `source`'s primary to `dest`'s 2 shards and
/// waits until its replay streams: the slot is also active while it is being created, so
/// streaming means the copy committed (`watermarks` watermark rows of the slot on every shard)
/// and the slot is in use again.
fn reshard_until_streaming(
    dir: &Path,
    source: &Topology,
    dest: &Topology,
    slot: &str,
    watermarks: &str,
) -> Child {
    let child = spawn(dir, source, "reshard", &move_args(slot));
    let sql = format!("SELECT count(*) FROM pgdog_reshard_progress WHERE slot = '{slot}'");
    wait_for("the replay to stream", || {
        (0..2).all(|s| dest.shard(s).psql(&sql).is_ok_and(|n| n == watermarks))
            && slot_active(source.primary(), slot)
    });
    child
}

#[test]
fn reshard_refuses_keyless_tables_stops_resumes_and_aborts() {
    let (source, dest) = single_source_and_two_shards(
        "CREATE TABLE keyed (id bigint PRIMARY KEY, v text);
         CREATE TABLE nokey (v int);
         CREATE TABLE wrongkey (id bigint PRIMARY KEY, tenant int NOT NULL, v text);
         INSERT INTO keyed SELECT i, 'k' || i FROM generate_series(1, 1000) i;
         INSERT INTO nokey SELECT i FROM generate_series(1, 50) i;
         INSERT INTO wrongkey SELECT i, i % 7, 'w' FROM generate_series(1, 70) i;
         CREATE PUBLICATION pub FOR TABLE keyed, nokey, wrongkey;",
    );
    let primary = source.primary();
    let dir = std::env::temp_dir().join(format!("pgdog-reshard-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = database("app", 0, primary.port, "primary")
        + &shards("app_new", &dest, 2)
        + &sharded_table("app_new", "keyed", "id", "bigint")
        + &sharded_table("app_new", "wrongkey", "tenant", "integer")
        + &omnisharded("app_new", &["nokey"]);
    write_files(&dir, &config, USERS);
    let args = move_args("cli");
    let slots = || {
        primary
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")
            .unwrap()
    };

    // A table the replay could not find rows of is refused before anything is created.
    let out = command(&dir, &source, "reshard", &args).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("public.nokey") && text(&out).contains("REPLICA IDENTITY FULL"),
        "{}",
        text(&out)
    );
    // A replica identity without the sharding key is fine: applied by identity on every shard.
    assert!(!text(&out).contains("wrongkey"), "{}", text(&out));
    assert_eq!(slots(), "0");
    assert_eq!(
        dest.shard(0)
            .psql("SELECT to_regclass('keyed') IS NULL")
            .unwrap(),
        "t"
    );

    // Fixed: the reshard runs until stopped, keeping its slot; a rerun resumes.
    primary
        .psql("ALTER TABLE nokey REPLICA IDENTITY FULL")
        .unwrap();
    let run_until_streaming_then_stop =
        || reshard_until_streaming(&dir, &source, &dest, "cli", "3");
    let stop = |child: Child| {
        let out = sigterm(child);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(text(&out).contains("stopped during"), "{}", text(&out));
    };
    let child = run_until_streaming_then_stop();
    stop(child);
    assert_eq!(slots(), "1", "the permanent slot is kept for a resume");
    primary
        .psql(
            "INSERT INTO keyed SELECT i, 'late' FROM generate_series(1001, 1100) i;
             DELETE FROM nokey WHERE v <= 10;
             UPDATE wrongkey SET tenant = tenant + 1 WHERE id <= 20;
             DELETE FROM wrongkey WHERE id > 60;",
        )
        .unwrap();
    let child = run_until_streaming_then_stop();
    wait_for("the late rows on the destination", || {
        let n: i64 = count_on(&dest, 2, "SELECT count(*) FROM keyed");
        n == 1100
            && (0..2).all(|s| dest.shard(s).psql("SELECT count(*) FROM nokey").unwrap() == "40")
            && count_on(&dest, 2, "SELECT count(*) FROM wrongkey") == 60
    });
    stop(child);
    let out = pgdog_with(&dir, &source, "verify", &APP_DBS, &[]);
    assert!(out.status.success(), "verify: {}", text(&out));

    // --abort leaves nothing behind on the servers.
    let out = command(&dir, &source, "reshard", &[&args[..4], &args[6..]].concat())
        .arg("--abort")
        .output()
        .unwrap();
    assert!(out.status.success(), "abort: {}", text(&out));
    assert_eq!(slots(), "0");
    assert_no_progress_tables(&dest, 2);
}

#[test]
fn pgdog_cutover_after_a_stopped_reshard_moves_a_connected_client() {
    let (source, dest) = single_source_and_two_shards(
        "CREATE TABLE keyed (id bigint PRIMARY KEY, v text);
         INSERT INTO keyed SELECT i, 'k' || i FROM generate_series(1, 500) i;
         CREATE PUBLICATION pub FOR TABLE keyed;",
    );
    let primary = source.primary();
    // `app` is declared shardable, so its sessions follow it from 1 to 2 shards in place.
    let config = format!("admin_password = \"{ADMIN_PASSWORD}\"\n")
        + &database("app", 0, primary.port, "primary")
        + &shards("app_new", &dest, 2)
        + &sharded_table("app", "keyed", "id", "bigint")
        + &sharded_table("app_new", "keyed", "id", "bigint");
    let proxy = Proxy::start(&config, USERS).expect("pgdog starts");
    let dir = proxy.dir.clone();
    let args = move_args("later");
    let child = reshard_until_streaming(&dir, &source, &dest, "later", "1");
    let out = sigterm(child);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        let (c, conn) =
            tokio_postgres::connect(&proxy.url("app", "secret", "app"), tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(conn);
        c.execute("INSERT INTO keyed VALUES (501, 'before cutover')", &[])
            .await
            .unwrap();
        c
    });
    // Without the admin URL the cutover is refused (it could not pause anything).
    let out = command(&dir, &source, "cutover", &args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let admin_url = proxy.url("admin", ADMIN_PASSWORD, "admin");
    let out = command(&dir, &source, "cutover", &args)
        .args(["--admin-url", &admin_url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cutover: {}\n{}",
        text(&out),
        proxy.log()
    );
    assert!(text(&out).contains("cutover done"), "{}", text(&out));

    // The same client connection now writes and reads on the two new shards.
    rt.block_on(async {
        client
            .execute("INSERT INTO keyed VALUES (502, 'after cutover')", &[])
            .await
            .unwrap_or_else(|e| panic!("insert after cutover: {e}\n{}", proxy.log()));
        let row = client
            .query_one("SELECT count(*) FROM keyed", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 502);
    });
    assert_eq!(
        primary
            .psql("SELECT count(*) FROM keyed WHERE id = 502")
            .unwrap(),
        "0"
    );
    let on_dest: i64 = count_on(
        &dest,
        2,
        "SELECT count(*) FROM keyed WHERE id IN (501, 502)",
    );
    assert_eq!(on_dest, 2);
    assert_eq!(
        primary
            .psql("SELECT count(*) FROM pg_replication_slots")
            .unwrap(),
        "0"
    );
}
