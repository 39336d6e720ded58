//! `pgdog reshard --check` and the checks every reshard runs first, on real servers: a topology
//! that passes (then a reshard runs with the destination's triggers off), then the same
//! topology broken for each check at once (each line refused or warned), and nothing created
//! by either: no slot, no table, no publication.
use crate::reshard_common::load::{APP_DBS, USERS};
use crate::reshard_common::*;
use std::path::Path;
use std::time::Instant;
use topology::{Kind, Topology};

/// One `[[databases]]` entry as `user`.
fn entry(name: &str, shard: usize, port: u16, role: &str, user: &str) -> String {
    database(name, shard, port, role).replace("user = \"postgres\"", &format!("user = \"{user}\""))
}

/// The verdict (`ok`, `warning`, `refused`) and text of check `name` in the output.
fn line<'a>(out: &'a str, name: &str) -> (&'a str, &'a str) {
    let l = out
        .lines()
        .find(|l| l.split_once(':').is_some_and(|(h, _)| h.ends_with(name)))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{out}"));
    let (verdict, rest) = l.split_once(' ').unwrap();
    (verdict, rest.trim_start())
}

/// `pgdog reshard --check`: (exit code, output); the time it took is printed.
fn check(dir: &Path, source: &Topology, more: &[&str]) -> (Option<i32>, String) {
    let args = [&APP_DBS[..], &["--publication", "pub", "--check"], more].concat();
    let started = Instant::now();
    let out = command(dir, source, "reshard", &args).output().unwrap();
    eprintln!(
        "reshard --check answered in {:?}:\n{}",
        started.elapsed(),
        text(&out)
    );
    (out.status.code(), text(&out))
}

/// Nothing of a reshard is on the servers: no logical slot on the source's servers, no
/// progress table and none of `tables` on the destination, one publication (the test's).
fn nothing_created(source: &Topology, dest: &Topology, tables: &[&str]) {
    for node in ["primary", "replica1"] {
        assert_eq!(
            source
                .node(node)
                .unwrap()
                .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")
                .unwrap(),
            "0",
            "a logical slot on {node}"
        );
    }
    assert_eq!(
        source
            .primary()
            .psql("SELECT count(*) FROM pg_publication")
            .unwrap(),
        "1"
    );
    for s in 0..2 {
        for t in tables.iter().chain(&["pgdog_reshard_progress"]) {
            let sql = format!("SELECT to_regclass('{t}') IS NULL");
            assert_eq!(dest.shard(s).psql(&sql).unwrap(), "t", "{t} on shard {s}");
        }
        assert_eq!(
            dest.shard(s)
                .psql("SELECT count(*) FROM pg_publication")
                .unwrap(),
            "0"
        );
    }
}

const SOURCE_SQL: &str = "
    CREATE TABLE orders (id bigint PRIMARY KEY, customer bigint NOT NULL, v text);
    CREATE TABLE items (order_id bigint, sku text);
    ALTER TABLE items REPLICA IDENTITY FULL;
    CREATE TABLE events (id bigint PRIMARY KEY, seq bigserial, tag text);
    CREATE TABLE audit (id bigint);
    CREATE FUNCTION audit_it() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN INSERT INTO audit VALUES (NEW.id); RETURN NEW; END $$;
    CREATE TRIGGER audited AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION audit_it();
    INSERT INTO orders SELECT i, i % 17, 'o' FROM generate_series(1, 200) i;
    INSERT INTO items SELECT i, 's' || i FROM generate_series(1, 50) i;
    INSERT INTO events (id, tag) SELECT i, 't' FROM generate_series(1, 30) i;
    CREATE PUBLICATION pub FOR TABLE orders, items, events;";

#[test]
fn checks_pass_refuse_and_warn_creating_nothing() {
    let source = Topology::start(Kind::Replicas(1)).expect("source");
    let dest = Topology::shards(2).expect("destination");
    let (primary, replica) = (source.primary(), source.node("replica1").unwrap());
    primary.psql(SOURCE_SQL).unwrap();
    source
        .wait_for_replay(replica, std::time::Duration::from_secs(30))
        .unwrap();
    let alter_system = |sql: &[&str]| {
        // One statement per call: ALTER SYSTEM cannot run in the implicit transaction of several.
        for s in sql.iter().chain(&["SELECT pg_reload_conf()"]) {
            replica.psql(s).unwrap();
        }
    };
    alter_system(&["ALTER SYSTEM SET max_standby_streaming_delay = -1"]);
    let dir = std::env::temp_dir().join(format!("pgdog-reshard-checks-{}", std::process::id()));
    let tables = sharded_table("app_new", "orders", "customer", "bigint")
        + &sharded_table("app_new", "events", "id", "bigint")
        + &omnisharded("app_new", &["items"]);
    let healthy = database("app", 0, primary.port, "primary")
        + &database("app", 0, replica.port, "replica")
        + &shards("app_new", &dest, 2)
        + &tables;
    write_files(&dir, &healthy, USERS);

    // 1. Healthy: every check answers, two warnings, nothing is created.
    let (code, out) = check(&dir, &source, &[]);
    assert_eq!(code, Some(0), "{out}");
    for name in [
        "servers",
        "wal_level",
        "replication slots and WAL senders",
        "hot_standby_feedback",
        "server versions",
        "REPLICATION privilege",
        "statement and transaction timeouts",
        "publication",
        "replica identity",
        "sharding column",
        "triggers and foreign keys",
        "free space",
    ] {
        assert_eq!(line(&out, name).0, "ok", "{name}:\n{out}");
    }
    let (v, t) = line(&out, "primary keys");
    assert!(
        v == "warning" && t.contains("public.items") && t.contains("no unique index"),
        "{out}"
    );
    let (v, t) = line(&out, "sequences");
    assert!(v == "warning" && t.contains("public.events.seq"), "{out}");
    assert!(
        line(&out, "triggers and foreign keys")
            .1
            .contains("1 triggers"),
        "{out}"
    );
    assert!(line(&out, "free space").1.contains("B free"), "{out}");
    nothing_created(&source, &dest, &["orders"]);
    // With --reverse the destination is checked as the reverse replication's source too, and
    // orders (identity without its key) cannot be replicated back from 2 shards.
    let (code, out) = check(&dir, &source, &["--cutover", "--reverse"]);
    assert_eq!(code, Some(1), "{out}");
    let (v, t) = line(&out, "replica identity");
    assert!(
        v == "refused" && t.contains("public.orders") && t.contains("--reverse"),
        "{out}"
    );
    let (v, t) = line(&out, "replication slots and WAL senders");
    assert!(
        v == "ok" && t.contains("(destination shard 1): needs 1 slots"),
        "{out}"
    );

    // The reshard itself runs the checks (its warnings printed), then copies and replays with
    // the destination's triggers off: rows written meanwhile arrive.
    let child = spawn(
        &dir,
        &source,
        "reshard",
        &[&APP_DBS[..], &["--publication", "pub"]].concat(),
    );
    let progress = "SELECT count(*) FROM pgdog_reshard_progress";
    wait_for("the replay to stream", || {
        (0..2).all(|s| dest.shard(s).psql(progress).is_ok_and(|n| n == "3"))
            && slot_active(primary, "pgdog_reshard")
    });
    // A trigger on the destination that fails if it fires (`audit` is not there).
    for s in 0..2 {
        dest.shard(s)
            .psql(
                "CREATE OR REPLACE FUNCTION audit_it() RETURNS trigger LANGUAGE plpgsql AS
                   $$ BEGIN INSERT INTO audit VALUES (NEW.id); RETURN NEW; END $$;
                 CREATE OR REPLACE TRIGGER audited AFTER INSERT ON orders
                   FOR EACH ROW EXECUTE FUNCTION audit_it();",
            )
            .unwrap();
    }
    primary
        .psql("INSERT INTO orders SELECT i, i % 17, 'late' FROM generate_series(201, 260) i")
        .unwrap();
    wait_for("the late orders on the destination", || {
        count_on(&dest, 2, "SELECT count(*) FROM orders WHERE v = 'late'") == 60
    });
    let out = sigterm(child);
    assert!(text(&out).contains("warning  sequences"), "{}", text(&out));
    run_ok(
        &dir,
        &source,
        "reshard",
        &APP_DBS,
        &["--publication", "pub", "--abort"],
    );
    assert_eq!(count_on(&dest, 2, "SELECT count(*) FROM orders"), 260);

    // 2. Broken for each check.
    primary
        .psql(
            "CREATE ROLE plain LOGIN;
             ALTER ROLE plain SET statement_timeout = '1min';
             CREATE TABLE nokey (v int);
             CREATE TABLE amounts (id bigint PRIMARY KEY, amount numeric);
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO plain;
             ALTER PUBLICATION pub ADD TABLE nokey, amounts;
             SELECT count(pg_create_physical_replication_slot('fill_' || i))
               FROM generate_series(1, 15) i;",
        )
        .unwrap();
    for s in 0..2 {
        dest.shard(s).psql("CREATE ROLE plain LOGIN").unwrap();
    }
    alter_system(&[
        "ALTER SYSTEM SET hot_standby_feedback = off",
        "ALTER SYSTEM RESET max_standby_streaming_delay",
        "ALTER SYSTEM SET wal_level = replica",
    ]);
    replica.stop().unwrap();
    replica.start().unwrap();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let broken = entry("app", 0, primary.port, "primary", "plain")
        + &entry("app", 0, replica.port, "replica", "plain")
        + &entry("app", 0, dead, "replica", "plain")
        + &entry("app_new", 0, dest.shard(0).port, "primary", "plain")
        + &entry("app_new", 1, dest.shard(1).port, "primary", "plain")
        + &tables
        + &sharded_table("app_new", "amounts", "amount", "bigint")
        + &omnisharded("app_new", &["nokey"]);
    write_files(&dir, &broken, USERS);
    let (code, out) = check(&dir, &source, &[]);
    assert_eq!(code, Some(1), "{out}");
    let expect = [
        ("servers", "refused", format!("127.0.0.1:{dead}")),
        ("wal_level", "refused", "replica on".to_string()),
        (
            "replication slots and WAL senders",
            "refused",
            "0 free replication slots".into(),
        ),
        ("hot_standby_feedback", "refused", "off on".into()),
        ("REPLICATION privilege", "refused", "user plain".into()),
        (
            "statement and transaction timeouts",
            "warning",
            "max_standby_streaming_delay = 30s".into(),
        ),
        ("replica identity", "refused", "public.nokey".into()),
        (
            "sharding column",
            "refused",
            "public.amounts.amount is numeric".into(),
        ),
        (
            "triggers and foreign keys",
            "warning",
            "session_replication_role".into(),
        ),
        ("primary keys", "warning", "public.items".into()),
        ("sequences", "warning", "public.events.seq".into()),
    ];
    for (name, verdict, says) in expect {
        let (v, t) = line(&out, name);
        assert!(
            v == verdict && t.contains(&says),
            "{name}: want {verdict} with {says:?}:\n{out}"
        );
    }
    assert!(line(&out, "statement and transaction timeouts")
        .1
        .contains("statement_timeout = 1min"));
    nothing_created(&source, &dest, &["nokey", "amounts"]);

    // A reshard refuses with the same lines, creating nothing.
    let out = command(
        &dir,
        &source,
        "reshard",
        &[&APP_DBS[..], &["--publication", "pub"]].concat(),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("refused  wal_level"), "{}", text(&out));
    nothing_created(&source, &dest, &["nokey", "amounts"]);

    // A publication the source does not have.
    write_files(&dir, &healthy, USERS);
    let args = [&APP_DBS[..], &["--publication", "nope", "--check"]].concat();
    let out = command(&dir, &source, "reshard", &args).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let (v, t) = line(&all, "publication");
    assert!(
        v == "refused" && t.contains("publication nope does not exist"),
        "{all}"
    );
}
