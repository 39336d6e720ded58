//! Resharding into schema-based sharding: one source database with two tenant schemas is split
//! over 2 destination shards whose `[[sharded_schemas]]` put tenant_a on shard 0 and tenant_b on
//! shard 1. `schema-sync`, `copy-data`, `replay` and `verify` move each schema as a unit: every
//! row of a schema's tables lands (and its later changes replay) on that schema's shard only.
mod reshard_common;
use reshard_common::*;
use topology::Topology;

const DBS: [&str; 4] = ["--from-database", "src", "--to-database", "dst"];

fn count(dest: &Topology, shard: usize, table: &str) -> i64 {
    dest.shard(shard)
        .psql(&format!("SELECT count(*) FROM {table}"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn schemas_move_as_units() {
    let source = Topology::single().expect("source topology");
    let dest = Topology::shards(2).expect("destination topology");
    let dir = std::env::temp_dir().join(format!("pgdog-reshard-schemas-{}", std::process::id()));
    let config = database("src", 0, source.primary().port, "primary")
        + &shards("dst", &dest, 2)
        + "\n[[sharded_schemas]]\ndatabase = \"dst\"\nname = \"tenant_a\"\nshard = 0\n\
           \n[[sharded_schemas]]\ndatabase = \"dst\"\nname = \"tenant_b\"\nshard = 1\n";
    write_files(&dir, &config, USERS);
    let primary = source.primary();
    primary
        .psql(
            "CREATE SCHEMA tenant_a; CREATE SCHEMA tenant_b;
             CREATE TABLE tenant_a.items (id int PRIMARY KEY, v text);
             CREATE TABLE tenant_b.items (id int PRIMARY KEY, v text);
             INSERT INTO tenant_a.items SELECT i, 'a' || i FROM generate_series(1, 700) i;
             INSERT INTO tenant_b.items SELECT i, 'b' || i FROM generate_series(1, 300) i;
             CREATE PUBLICATION pub FOR TABLE tenant_a.items, tenant_b.items;",
        )
        .expect("source schema");
    let run = |command: &str, rest: &[&str]| {
        let args: Vec<&str> = DBS.iter().chain(rest).copied().collect();
        pgdog(&dir, &source, command, &args)
    };
    let out = run("schema-sync", &["--publication", "pub", "--phase", "pre"]);
    assert!(out.status.success(), "schema-sync: {}", text(&out));
    let out = run("copy-data", &["--publication", "pub", "--slot", "s1"]);
    assert!(out.status.success(), "copy-data: {}", text(&out));
    assert_eq!(count(&dest, 0, "tenant_a.items"), 700);
    assert_eq!(count(&dest, 1, "tenant_a.items"), 0);
    assert_eq!(count(&dest, 0, "tenant_b.items"), 0);
    assert_eq!(count(&dest, 1, "tenant_b.items"), 300);

    // Changes after the copy replay on the schema's shard.
    primary
        .psql(
            "INSERT INTO tenant_a.items VALUES (701, 'late a'); \
             UPDATE tenant_b.items SET v = 'changed' WHERE id <= 10; \
             DELETE FROM tenant_b.items WHERE id > 290;",
        )
        .expect("source writes");
    let lsn = primary.psql("SELECT pg_current_wal_insert_lsn()").unwrap();
    let out = run(
        "replay",
        &["--publication", "pub", "--slot", "s1", "--until-lsn", &lsn],
    );
    assert!(out.status.success(), "replay: {}", text(&out));
    assert_eq!(count(&dest, 0, "tenant_a.items"), 701);
    assert_eq!(count(&dest, 1, "tenant_b.items"), 290);
    assert_eq!(count(&dest, 1, "tenant_b.items WHERE v = 'changed'"), 10);
    let out = run("verify", &[]);
    assert!(out.status.success(), "verify: {}", text(&out));

    // A row on the wrong shard is reported.
    dest.shard(1)
        .psql("INSERT INTO tenant_a.items VALUES (9999, 'misplaced')")
        .unwrap();
    let out = run("verify", &[]);
    assert!(!out.status.success(), "verify should fail: {}", text(&out));
    assert!(
        text(&out).contains("schema tenant_a lives on shard 0"),
        "{}",
        text(&out)
    );
    primary
        .psql("SELECT pg_drop_replication_slot('s1')")
        .expect("dropping the slot");
}
