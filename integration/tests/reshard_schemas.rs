//! Resharding into schema-based sharding: one source database with two tenant schemas is split
//! over 2 destination shards whose `[[sharded_schemas]]` put tenant_a on shard 0 and tenant_b on
//! shard 1. `schema-sync`, `copy-data`, `replay` and `verify` move each schema as a unit: every
//! row of a schema's tables lands (and its later changes replay) on that schema's shard only.
use crate::reshard_common;
use reshard_common::*;
use topology::Topology;

fn count(dest: &Topology, shard: usize, table: &str) -> i64 {
    count_on_shard(dest, shard, &format!("SELECT count(*) FROM {table}"))
}

#[test]
fn schemas_move_as_units() {
    let (source, dest, dir) = single_to_two_shards(
        "reshard-schemas",
        "\n[[sharded_schemas]]\ndatabase = \"dst\"\nname = \"tenant_a\"\nshard = 0\n\
           \n[[sharded_schemas]]\ndatabase = \"dst\"\nname = \"tenant_b\"\nshard = 1\n",
    );
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
    schema_sync_pre(&dir, &source);
    copy_data_ok(&dir, &source, &["--slot", "s1"]);
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
    let lsn = current_lsn(primary);
    let out = replay_until(&dir, &source, "s1", &lsn);
    assert!(out.status.success(), "replay: {}", text(&out));
    assert_eq!(count(&dest, 0, "tenant_a.items"), 701);
    assert_eq!(count(&dest, 1, "tenant_b.items"), 290);
    assert_eq!(count(&dest, 1, "tenant_b.items WHERE v = 'changed'"), 10);
    verify_ok(&dir, &source, &[], "");

    // A row on the wrong shard is reported.
    dest.shard(1)
        .psql("INSERT INTO tenant_a.items VALUES (9999, 'misplaced')")
        .unwrap();
    let out = pgdog(&dir, &source, "verify", &SRC_DST);
    assert!(!out.status.success(), "verify should fail: {}", text(&out));
    assert!(
        text(&out).contains("schema tenant_a lives on shard 0"),
        "{}",
        text(&out)
    );
    drop_slot(primary, "s1");
}
