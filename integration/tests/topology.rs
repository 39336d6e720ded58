//! The topology harness against real PostgreSQL 18: each topology comes up and answers, the
//! standby streams, a logical slot on the standby sees the primary's insert, and everything is
//! released afterwards, also after the owner was killed with SIGKILL.
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use topology::{lock::process_alive, wait_until, Topology};

const DEADLINE: Duration = Duration::from_secs(60);

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[test]
fn single_answers_and_is_released() {
    let topo = Topology::single().expect("single topology");
    let pg = topo.primary();
    assert_eq!(pg.psql("SHOW server_version_num").unwrap()[..2], *"18");
    assert_eq!(pg.psql("SHOW wal_level").unwrap(), "logical");
    assert!(!port_free(pg.port), "the server should hold its port");
    let (dir, port) = (topo.run_dir().to_path_buf(), pg.port);
    assert!(dir.exists());
    drop(topo);
    assert!(
        !dir.exists(),
        "run folder {} should be removed",
        dir.display()
    );
    assert!(port_free(port), "port {port} should be released");
}

#[test]
fn shards_are_independent_servers() {
    let topo = Topology::shards(3).expect("3 shards");
    let ports: Vec<u16> = topo.nodes().iter().map(|n| n.port).collect();
    let mut unique = ports.clone();
    unique.dedup();
    assert_eq!(unique.len(), 3, "{ports:?}");
    topo.shard(0)
        .psql("CREATE TABLE only_here (id int)")
        .unwrap();
    for i in 0..3 {
        let shard = topo.shard(i);
        let exists = shard
            .psql("SELECT count(*) FROM pg_class WHERE relname = 'only_here'")
            .unwrap();
        assert_eq!(exists, if i == 0 { "1" } else { "0" }, "shard {i}");
        assert_eq!(shard.psql("SELECT pg_is_in_recovery()").unwrap(), "f");
    }
    let dirs: Vec<PathBuf> = topo.nodes().iter().map(|n| n.dir.clone()).collect();
    drop(topo);
    for (dir, port) in dirs.iter().zip(ports) {
        assert!(
            !dir.exists() && port_free(port),
            "{} / {port} not released",
            dir.display()
        );
    }
}

#[test]
fn standby_streams_from_primary() {
    let topo = Topology::replicated().expect("replicated topology");
    let (primary, standby) = (topo.primary(), topo.standby());
    assert_eq!(standby.psql("SELECT pg_is_in_recovery()").unwrap(), "t");
    assert_eq!(
        standby
            .psql("SELECT status FROM pg_stat_wal_receiver")
            .unwrap(),
        "streaming"
    );
    assert_eq!(
        primary
            .psql("SELECT slot_name || ' ' || active FROM pg_replication_slots")
            .unwrap(),
        "standby1 true"
    );
    primary
        .psql("CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 1000)")
        .unwrap();
    topo.wait_for_standby(DEADLINE).unwrap();
    assert_eq!(standby.psql("SELECT count(*) FROM t").unwrap(), "1000");
}

#[test]
fn logical_slot_on_standby_receives_primary_insert() {
    let topo = Topology::replicated().expect("replicated topology");
    let (primary, standby) = (topo.primary(), topo.standby());
    primary
        .psql("CREATE TABLE items (id int PRIMARY KEY, name text)")
        .unwrap();
    topo.wait_for_standby(DEADLINE).unwrap();

    let lsn = topo
        .create_standby_slot("s1", "test_decoding", DEADLINE)
        .expect("slot on standby");
    assert!(lsn.contains('/'), "an LSN: {lsn}");
    assert_eq!(
        standby
            .psql("SELECT slot_type FROM pg_replication_slots WHERE slot_name = 's1'")
            .unwrap(),
        "logical"
    );

    primary
        .psql("INSERT INTO items VALUES (42, 'answer')")
        .unwrap();
    topo.wait_for_standby(DEADLINE).unwrap();
    let changes = standby
        .psql("SELECT string_agg(data, E'\\n') FROM pg_logical_slot_get_changes('s1', NULL, NULL)")
        .unwrap();
    assert!(
        changes.contains("table public.items: INSERT: id[integer]:42 name[text]:'answer'"),
        "changes: {changes}"
    );
}

#[test]
fn killed_run_is_cleaned_by_the_next() {
    let dir = std::env::temp_dir().join(format!("pgdog-topology-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env_file = dir.join("env");
    let mut owner = Command::new(env!("CARGO_BIN_EXE_pgdog-topology"))
        .args(["single", "--env-file"])
        .arg(&env_file)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "the topology's env file",
        DEADLINE,
        Duration::from_millis(20),
        || Ok(env_file.exists()),
    )
    .unwrap();
    let env = std::fs::read_to_string(&env_file).unwrap();
    let get = |key: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
            .unwrap()
    };
    let run_dir = PathBuf::from(get("PGDOG_TOPOLOGY_DIR"));
    let port: u16 = get("PG_PG_PORT").parse().unwrap();
    let pid: i32 = std::fs::read_to_string(run_dir.join("pg/data/postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();

    owner.kill().unwrap(); // SIGKILL: no teardown runs
    owner.wait().unwrap();
    assert!(
        process_alive(pid) && run_dir.exists(),
        "the killed run's server is left behind"
    );

    let next = Topology::single().expect("next topology");
    assert!(!run_dir.exists(), "{} should be cleaned", run_dir.display());
    assert!(!process_alive(pid), "postmaster {pid} should be stopped");
    wait_until(
        "the old port to be free",
        DEADLINE,
        Duration::from_millis(20),
        || Ok(port_free(port) || next.primary().port == port),
    )
    .unwrap();
    drop(next);
    let _ = std::fs::remove_dir_all(&dir);
}
