//! A fleet cutover: two pgdog instances serve the same 2-shard database (each with its own
//! pgdog.toml, same databases), clients write through both while `pgdog reshard --cutover
//! --reverse --admin-url A --admin-url B` moves it to 4 shards. Both proxies are paused,
//! switched and resumed together: the clients see no error, both configuration files and both
//! proxies' `SHOW DATABASES` name the new shards, writes through either land there, and
//! `pgdog verify` finds the old shards (kept in sync by reverse replication) equal to the new.
use crate::reshard_common;

use reshard_common::load::{
    admin_url, assert_item_on, config, cutover_args, runtime, source_and_destination, start_loads,
    stop_clean_loads, wait_for_cutover, wait_for_statements, ADMIN_PASSWORD, USERS,
};
use reshard_common::{app_ports, count_on, slot_active_on_shards, spawn, verify_until_equal};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};
use topology::proxy::Proxy;

/// `p`'s admin database shows the 4 new shards (`dest_ports`) under `app`.
fn assert_shows_new_shards(p: &Proxy, dest_ports: &[u16]) {
    let shown = p
        .psql("admin", ADMIN_PASSWORD, "admin", "SHOW DATABASES")
        .expect("SHOW DATABASES");
    let ports: Vec<u16> = shown
        .lines()
        .filter(|l| l.starts_with("app|"))
        .filter_map(|l| l.split('|').nth(2)?.parse().ok())
        .collect();
    assert_eq!(ports.len(), 4, "{shown}");
    assert!(ports.iter().all(|p| dest_ports.contains(p)), "{shown}");
}

#[test]
fn two_proxies_cut_over_together() {
    let (source, dest) = source_and_destination();
    let a = Proxy::start(&config(&source, &dest), USERS).expect("pgdog A");
    let b = Proxy::start(&config(&source, &dest), USERS).expect("pgdog B");
    let rt = runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let urls = [&a, &b, &a, &b]
        .into_iter()
        .enumerate()
        .map(|(k, p)| (p.url("app", "secret", "app"), (k as i64 + 1) * 1_000_000));
    let loads = start_loads(&rt, urls, &stop, &done);
    wait_for_statements(&done, 200);

    let admin_urls = [admin_url(a.port), admin_url(b.port)];
    let mut child = spawn(
        &a.dir,
        &source,
        "reshard",
        &cutover_args("fleet", &admin_urls),
    );
    let dest_ports: Vec<u16> = (0..4).map(|s| dest.shard(s).port).collect();
    let logs = || format!("A: {}\nB: {}", a.log(), b.log());
    // Both files switched and reverse replication reading its slot on the new shards.
    let switched = || {
        [&a, &b].iter().all(|p| {
            app_ports(&p.dir)
                .iter()
                .all(|port| dest_ports.contains(port))
        }) && slot_active_on_shards(&dest, 4, "fleet_reverse")
    };
    wait_for_cutover(
        &mut child,
        180,
        "the fleet did not cut over",
        logs,
        switched,
    );

    // Clients of both proxies go on writing, now to the new shards, without an error.
    wait_for_statements(&done, 200);
    for last in stop_clean_loads(&rt, &stop, loads, logs) {
        assert_item_on(&dest, 4, last - 1, "the new shards");
    }
    // Each proxy's admin database shows the new shards under `app`.
    for p in [&a, &b] {
        assert_shows_new_shards(p, &dest_ports);
    }

    // Old (now app_new, fed by reverse replication) equals new (now app).
    verify_until_equal(&a.dir, &source, "app_new", "app");
    let _ = child.kill();
    let _ = child.wait();
}

/// `RESHARD ... CUTOVER` from one proxy's admin database with `[[resharding.peers]]` naming the
/// other: both are paused, switched and resumed together, as with the command line's
/// `--admin-url` list.
#[test]
fn admin_reshard_switches_its_peers() {
    let (source, dest) = source_and_destination();
    let b = Proxy::start(&config(&source, &dest), USERS).expect("pgdog B");
    let peers = format!(
        "\n[resharding]\n[[resharding.peers]]\nadmin_url = \"{}\"\n",
        admin_url(b.port)
    );
    let a = Proxy::start(&(config(&source, &dest) + &peers), USERS).expect("pgdog A");
    for id in 1..=10 {
        a.psql(
            "app",
            "secret",
            "app",
            &format!("INSERT INTO items (id, v) VALUES ({id}, 'row {id}')"),
        )
        .expect("a row through A");
    }

    let admin = |p: &Proxy, sql: &str| p.psql("admin", ADMIN_PASSWORD, "admin", sql);
    admin(&a, "RESHARD app app_new pub SLOT peers CUTOVER").expect("RESHARD starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let shown = admin(&a, "SHOW RESHARD").expect("SHOW RESHARD");
        let status = shown
            .lines()
            .find(|l| l.starts_with("reshard|"))
            .and_then(|l| l.split('|').nth(9))
            .unwrap_or_default()
            .to_string();
        assert!(
            !status.starts_with("failed"),
            "{shown}\nA: {}\nB: {}",
            a.log(),
            b.log()
        );
        if status.starts_with("done") {
            break;
        }
        assert!(Instant::now() < deadline, "still {status}\nA: {}", a.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let dest_ports: Vec<u16> = (0..4).map(|s| dest.shard(s).port).collect();
    for p in [&a, &b] {
        assert_shows_new_shards(p, &dest_ports);
        assert!(app_ports(&p.dir).iter().all(|p| dest_ports.contains(p)));
    }
    // A write through B lands on the new shards, with the copied rows.
    b.psql(
        "app",
        "secret",
        "app",
        "INSERT INTO items (id, v) VALUES (1000, 'after')",
    )
    .expect("write through B");
    let on_dest = count_on(&dest, 4, "SELECT count(*) FROM items");
    assert_eq!(on_dest, 11);
}
