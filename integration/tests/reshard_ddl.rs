//! Schema changes during a reshard: `ALTER TABLE` on a published table while the replay runs
//! (a column added with a default and NOT NULL, one without, a rename, a type change, a drop)
//! reaches both destination shards in order with the rows around it; the destination ends
//! with the source's columns and rows (`pgdog verify`).
use crate::reshard_common::load::{APP_DBS, USERS};
use crate::reshard_common::*;
use topology::Topology;

/// `schema.table`'s columns and types, in order.
fn columns(node: &topology::Node) -> String {
    node.psql(
        "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) \
           || CASE WHEN attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY attnum) \
         FROM pg_attribute WHERE attrelid = 'items'::regclass AND attnum > 0 AND NOT attisdropped",
    )
    .unwrap()
}

#[test]
fn alter_table_during_the_replay_reaches_every_shard_in_order() {
    let source = Topology::single().expect("source");
    let dest = Topology::shards(2).expect("destination");
    let primary = source.primary();
    primary
        .psql(
            "CREATE TABLE items (id bigint PRIMARY KEY, v text);
             INSERT INTO items SELECT i, 'row ' || i FROM generate_series(1, 1000) i;
             CREATE PUBLICATION pub FOR TABLE items;",
        )
        .unwrap();
    let dir = std::env::temp_dir().join(format!("pgdog-reshard-ddl-{}", std::process::id()));
    let config = database("app", 0, primary.port, "primary")
        + &shards("app_new", &dest, 2)
        + &sharded_table("app_new", "items", "id", "bigint");
    write_files(&dir, &config, USERS);
    let args = [&APP_DBS[..], &["--publication", "pub"]].concat();
    let child = spawn(&dir, &source, "reshard", &args);
    wait_for("the replay to stream", || {
        (0..2).all(|s| {
            dest.shard(s)
                .psql("SELECT count(*) FROM pgdog_reshard_progress")
                .is_ok_and(|n| n == "1")
        }) && slot_active(primary, "pgdog_reshard")
    });

    // Each change with rows of the new shape in the same transaction, and rows after it.
    for sql in [
        "ALTER TABLE items ADD COLUMN n int NOT NULL DEFAULT 7;
         INSERT INTO items SELECT i, 'added', 8 FROM generate_series(1001, 1100) i;",
        "ALTER TABLE items ADD COLUMN note text;
         UPDATE items SET note = 'noted ' || id WHERE id % 10 = 0;",
        "ALTER TABLE items RENAME COLUMN v TO label;
         UPDATE items SET label = 'renamed' WHERE id % 3 = 0;",
        "ALTER TABLE items ALTER COLUMN n TYPE bigint;
         UPDATE items SET n = n + 5000000000 WHERE id % 7 = 0;",
        "ALTER TABLE items DROP COLUMN note;
         INSERT INTO items SELECT i, 'after the drop', i FROM generate_series(1101, 1150) i;
         DELETE FROM items WHERE id % 11 = 0;",
    ] {
        primary.psql(sql).unwrap();
    }
    let caught_up = |want: &str| {
        wait_for("the new shape and rows on both shards", || {
            (0..2).all(|s| columns(dest.shard(s)) == want)
                && count_on(&dest, 2, "SELECT count(*) FROM items")
                    == primary
                        .psql("SELECT count(*) FROM items")
                        .unwrap()
                        .parse::<i64>()
                        .unwrap()
        });
        verify_until_equal(&dir, &source, "app", "app_new");
    };
    // Those changes came faster than the replay (the catalog had moved on): the rename was
    // told by position.
    caught_up("id bigint not null, label text, n bigint not null");
    // The rows that existed before the column was added have its default there too.
    assert_eq!(
        count_on(
            &dest,
            2,
            "SELECT count(*) FROM items WHERE n = 7 AND id <= 1000"
        ),
        primary
            .psql("SELECT count(*) FROM items WHERE n = 7 AND id <= 1000")
            .unwrap()
            .parse::<i64>()
            .unwrap()
    );
    // A column dropped and another of its type added in its place, the replay caught up: told
    // apart from a rename by the column numbers (rows not updated have NULL, not n's value).
    primary
        .psql(
            "ALTER TABLE items DROP COLUMN n, ADD COLUMN m bigint;
             UPDATE items SET m = id WHERE id % 2 = 0;",
        )
        .unwrap();
    caught_up("id bigint not null, label text, m bigint");
    let out = sigterm(child);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    run_ok(
        &dir,
        &source,
        "reshard",
        &APP_DBS,
        &["--publication", "pub", "--abort"],
    );
}
