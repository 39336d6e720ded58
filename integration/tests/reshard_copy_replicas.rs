//! `pgdog copy-data` over two replicas: a primary with two streaming standbys, both configured
//! as `src`'s replicas, four tables of different sizes. The copies go largest first, each to
//! the replica with the fewest bytes assigned so far, so both replicas serve two tables (and
//! none is read from the primary); `pgdog verify` then finds the destination equal.
use crate::reshard_common;

use reshard_common::{
    config_dir, copy_data_ok, database, line_starting, schema_sync_pre, sharded_table, shards,
    verify_ok,
};
use std::time::Duration;
use topology::{Kind, Topology};

#[test]
fn copy_data_spreads_tables_over_every_replica() {
    let source = Topology::start(Kind::Replicas(2)).expect("primary and two replicas");
    let dest = Topology::shards(2).expect("destination topology");
    let primary = source.primary();
    let replica = |i: usize| source.node(&format!("replica{i}")).expect("replica");
    let mut config = database("src", 0, primary.port, "primary")
        + &database("src", 0, replica(1).port, "replica")
        + &database("src", 0, replica(2).port, "replica")
        + &shards("dst", &dest, 2);
    let sizes = [("t1", 8000), ("t2", 6000), ("t3", 4000), ("t4", 2000)];
    let mut schema = String::new();
    for (t, rows) in sizes {
        config += &sharded_table("dst", t, "id", "bigint");
        schema += &format!(
            "CREATE TABLE {t} (id bigint PRIMARY KEY, v text);
             INSERT INTO {t} SELECT i, repeat('x', 50) || i FROM generate_series(1, {rows}) i;"
        );
    }
    schema += "CREATE PUBLICATION pub FOR TABLE t1, t2, t3, t4;";
    let dir = config_dir("copy-replicas", &config);
    primary.psql(&schema).expect("source tables");
    for i in 1..=2 {
        source
            .wait_for_replay(replica(i), Duration::from_secs(30))
            .expect("replica caught up");
    }

    schema_sync_pre(&dir, &source);
    let output = copy_data_ok(&dir, &source, &["--parallel", "1"]);
    let read_from = |t: &str| -> u16 {
        let line = line_starting(&output, &format!("table public.{t}:"));
        let addr = line.split("(read from 127.0.0.1:").nth(1).expect(line);
        addr.split(')').next().unwrap().parse().expect(line)
    };
    let (r1, r2) = (replica(1).port, replica(2).port);
    // Largest first, each to the least loaded: t1 -> r1, t2 -> r2, t3 -> r2, t4 -> r1.
    let got: Vec<u16> = sizes.iter().map(|(t, _)| read_from(t)).collect();
    assert_eq!(got, vec![r1, r2, r2, r1], "{output}");

    verify_ok(&dir, &source, &[], "");
}
