//! `pgdog schema-sync` end to end: a publication's tables copied from a single server to two
//! shards, pre-data (types, tables, sequences, primary keys) then post-data (indexes, foreign
//! keys, triggers), and a second run that succeeds and changes nothing.
use crate::reshard_common;

use reshard_common::{command, sharded_table, single_to_two_shards, SRC_DST};
use std::path::PathBuf;
use topology::{Node, Topology};

const SCHEMA: &str = "
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE TABLE users (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email text NOT NULL,
    feeling mood,
    updated_at timestamptz
);
CREATE TABLE orders (id serial PRIMARY KEY, user_id bigint REFERENCES users (id), total numeric);
CREATE TABLE order_items (
    order_id int REFERENCES orders (id),
    line int,
    qty int,
    PRIMARY KEY (order_id, line)
);
CREATE INDEX orders_user_idx ON orders (user_id);
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- keep the row's timestamp fresh

    NEW.updated_at = now();
    RETURN NEW;
END
$$;
CREATE TRIGGER users_touch BEFORE UPDATE ON users FOR EACH ROW EXECUTE FUNCTION touch();
CREATE TABLE unpublished (id int PRIMARY KEY);
CREATE PUBLICATION pub FOR TABLE users, orders, order_items;
";

/// Everything schema-sync may create in `public`, with OIDs, so a re-created object shows.
const FINGERPRINT: &str = "SELECT string_agg(x, ' | ' ORDER BY x) FROM (
    SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || c.oid::text FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace
    UNION ALL SELECT 'con ' || conname || ' ' || oid::text || ' ' || pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'trg ' || tgname || ' ' || oid::text FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL SELECT 'type ' || typname || ' ' || oid::text FROM pg_type
        WHERE typnamespace = 'public'::regnamespace AND typtype = 'e'
    UNION ALL SELECT 'fn ' || proname || ' ' || oid::text FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace
    UNION ALL SELECT 'seq ' || seqrelid::regclass::text FROM pg_sequence
) s(x)";

/// The table left out of the publication.
const UNPUBLISHED: &str = "SELECT count(*) FROM pg_class WHERE relname = 'unpublished'";

/// The post-data objects of `node`, counted: the index, the foreign keys, the triggers.
fn post_data(node: &Node) -> [i64; 3] {
    [
        "SELECT count(*) FROM pg_class WHERE relname = 'orders_user_idx'",
        "SELECT count(*) FROM pg_constraint WHERE contype = 'f'",
        "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal",
    ]
    .map(|sql| count(node, sql))
}

struct Setup {
    source: Topology,
    dest: Topology,
    dir: PathBuf,
}

fn setup(tag: &str) -> Setup {
    let (source, dest, dir) = single_to_two_shards(
        &format!("schema-sync-{tag}"),
        &sharded_table("dst", "users", "id", "bigint"),
    );
    source.primary().psql(SCHEMA).expect("source schema");
    Setup { source, dest, dir }
}

impl Setup {
    /// Runs `pgdog schema-sync` with `phase`; panics with its output when it fails.
    fn sync(&self, phase: Option<&str>) -> String {
        let out = self
            .schema_sync("pub", phase)
            .output()
            .expect("running pgdog schema-sync");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "schema-sync {phase:?} failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// `pgdog schema-sync` of `publication` from src to dst (`--phase phase` when given).
    fn schema_sync(&self, publication: &str, phase: Option<&str>) -> std::process::Command {
        let mut args = [&SRC_DST[..], &["--publication", publication]].concat();
        args.extend(phase.iter().flat_map(|p| ["--phase", p]));
        command(&self.dir, &self.source, "schema-sync", &args)
    }

    fn shards(&self) -> [&Node; 2] {
        [self.dest.shard(0), self.dest.shard(1)]
    }
}

fn count(node: &Node, sql: &str) -> i64 {
    node.psql(sql)
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn schema_sync_pre_then_post_then_again_changes_nothing() {
    let s = setup("phases");
    s.sync(Some("pre"));
    for node in s.shards() {
        let tables = node
            .psql("SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'")
            .unwrap();
        assert_eq!(tables, "order_items,orders,users", "shard {}", node.name);
        assert_eq!(
            count(node, "SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND connamespace = 'public'::regnamespace"),
            3
        );
        let pk = node
            .psql("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'order_items_pkey'")
            .unwrap();
        assert_eq!(pk, "PRIMARY KEY (order_id, line)");
        assert_eq!(count(node, "SELECT count(*) FROM pg_sequence"), 2);
        assert_eq!(
            node.psql("SELECT attidentity FROM pg_attribute WHERE attrelid = 'users'::regclass AND attname = 'id'").unwrap(),
            "a"
        );
        assert_eq!(
            node.psql("SELECT enum_range(NULL::mood)::text").unwrap(),
            "{happy,sad}"
        );
        // Nothing of post-data yet.
        assert_eq!(post_data(node), [0, 0, 0]);
        // The sequences work: a serial default and an identity column.
        assert_eq!(
            node.psql("INSERT INTO users (email, feeling) VALUES ('a@b', 'happy') RETURNING id")
                .unwrap(),
            "1"
        );
        assert_eq!(
            node.psql("INSERT INTO orders (user_id) VALUES (1) RETURNING id")
                .unwrap(),
            "1"
        );
    }

    s.sync(Some("post"));
    for node in s.shards() {
        // The index and the foreign keys.
        assert_eq!(post_data(node)[..2], [1, 2]);
        assert_eq!(
            node.psql("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
                .unwrap(),
            "users_touch"
        );
        node.psql("UPDATE users SET email = 'c@d'").unwrap();
        assert_eq!(
            count(
                node,
                "SELECT count(*) FROM users WHERE updated_at IS NOT NULL"
            ),
            1
        );
    }

    let before: Vec<String> = s
        .shards()
        .iter()
        .map(|n| n.psql(FINGERPRINT).unwrap())
        .collect();
    s.sync(None);
    s.sync(Some("pre"));
    s.sync(Some("post"));
    let after: Vec<String> = s
        .shards()
        .iter()
        .map(|n| n.psql(FINGERPRINT).unwrap())
        .collect();
    assert_eq!(before, after);
    assert!(before[0].contains("orders_user_idx"));
    // The source is untouched and the unpublished table stayed there.
    assert_eq!(count(s.source.primary(), UNPUBLISHED), 1);
    let _ = std::fs::remove_dir_all(&s.dir);
}

#[test]
fn schema_sync_both_phases_at_once_and_unknown_publication() {
    let s = setup("both");
    s.sync(None);
    for node in s.shards() {
        assert_eq!(post_data(node), [1, 2, 1]);
        assert_eq!(count(node, UNPUBLISHED), 0);
    }
    let out = s.schema_sync("nope", None).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("publication `nope`"), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    let _ = std::fs::remove_dir_all(&s.dir);
}
