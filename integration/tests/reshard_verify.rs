//! `pgdog verify` end to end: a single source server against a two-shard destination loaded
//! with pgdog's own placement, then broken three ways (a row deleted on a shard, a value
//! changed, a row moved to the wrong shard) and an omnisharded table out of step.
use crate::reshard_common;

use pgdog::config::Settings;
use pgdog::router::schema::Schema;
use reshard_common::{command, omnisharded, sharded_table, single_to_two_shards, SRC_DST};
use std::path::PathBuf;
use topology::Topology;

const SCHEMA: &str = "
CREATE TABLE items (id bigint PRIMARY KEY, name text, qty int, tags text[]);
CREATE TABLE kinds (id int PRIMARY KEY, label text);
";

const ROWS: i64 = 200;

struct Setup {
    source: Topology,
    dest: Topology,
    dir: PathBuf,
}

fn setup() -> Setup {
    let (source, dest, dir) = single_to_two_shards(
        "verify",
        &(sharded_table("dst", "items", "id", "bigint") + &omnisharded("dst", &["kinds"])),
    );

    source.primary().psql(SCHEMA).expect("source schema");
    source
        .primary()
        .psql(&format!(
            "INSERT INTO items SELECT i, 'item ' || i, i % 7, ARRAY['a', i::text] FROM generate_series(1, {ROWS}) i;
             INSERT INTO kinds VALUES (1, 'one'), (2, 'two'), (3, NULL);"
        ))
        .expect("source rows");
    let s = Setup { source, dest, dir };
    s.load_destination();
    s
}

impl Setup {
    /// Creates the tables on both shards and copies the rows, each item on the shard pgdog's
    /// placement gives its key, every kind on both.
    fn load_destination(&self) {
        let settings = Settings::load(&self.dir.join("pgdog.toml"), &self.dir.join("users.toml"))
            .expect("config");
        let schema = Schema::new(&settings, "dst").expect("schema");
        let items = schema.table("items").expect("items is sharded");
        let mut per_shard = [Vec::new(), Vec::new()];
        for id in 1..=ROWS {
            let shard = items
                .shard_of_text(Some(&id.to_string()))
                .expect("placement");
            per_shard[shard].push(id.to_string());
        }
        assert!(per_shard.iter().all(|ids| !ids.is_empty()));
        for (shard, ids) in per_shard.iter().enumerate() {
            let node = self.dest.shard(shard);
            node.psql(SCHEMA).expect("destination schema");
            node.psql(&format!(
                "INSERT INTO items SELECT i, 'item ' || i, i % 7, ARRAY['a', i::text] FROM unnest('{{{}}}'::bigint[]) i;
                 INSERT INTO kinds VALUES (1, 'one'), (2, 'two'), (3, NULL);",
                ids.join(",")
            ))
            .expect("destination rows");
        }
    }

    /// Runs `pgdog verify`; its exit success and stdout.
    fn verify(&self, tables: &[&str]) -> (bool, String) {
        let mut args = SRC_DST.to_vec();
        args.extend(tables.iter().flat_map(|t| ["--table", t]));
        let out = command(&self.dir, &self.source, "verify", &args)
            .output()
            .expect("running pgdog verify");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "verify crashed: {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stderr.is_empty(),
            "verify reported an error: {stderr}\n{stdout}"
        );
        (out.status.success(), stdout)
    }

    fn assert_clean(&self) {
        let (ok, out) = self.verify(&[]);
        assert!(ok, "verify should pass:\n{out}");
        assert!(out.contains(&format!("items: OK ({ROWS} rows, ")), "{out}");
        assert!(out.contains("kinds: OK (3 rows, "), "{out}");
    }

    /// `pgdog verify` of every table fails (`broken` says what broke the destination); its
    /// output.
    fn verify_fails(&self, broken: &str) -> String {
        let (ok, out) = self.verify(&[]);
        assert!(!ok, "{broken} must fail:\n{out}");
        out
    }

    /// The shard holding item `id`.
    fn shard_of(&self, id: i64) -> usize {
        reshard_common::shard_of(&self.dest, 2, "items", id)
    }

    /// Runs `sql` on destination shard `shard`.
    fn on(&self, shard: usize, sql: &str) {
        self.dest.shard(shard).psql(sql).unwrap();
    }
}

fn item_line(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("items: "))
        .unwrap_or_else(|| panic!("no items line in:\n{out}"))
}

#[test]
fn verify_finds_missing_changed_and_misplaced_rows() {
    let s = setup();
    s.assert_clean();
    let (ok, out) = s.verify(&["items"]);
    assert!(ok, "{out}");
    // The snapshot line (no replay runs here), then the table's rows, checksum, misplaced rows
    // and the LSN compared at.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0]
            .starts_with("no replay running: each shard read in one snapshot, the source at LSN "),
        "{out}"
    );
    let lsn = lines[0].rsplit(' ').next().unwrap();
    assert!(
        lines[1].starts_with(&format!("items: OK ({ROWS} rows, checksum "))
            && lines[1].ends_with(&format!(", 0 misplaced) at {lsn}")),
        "{out}"
    );

    // 1. A row deleted on its shard.
    let shard = s.shard_of(17);
    s.on(shard, "DELETE FROM items WHERE id = 17");
    let out = s.verify_fails("a missing row");
    let line = item_line(&out);
    assert!(
        line.contains(&format!(
            "row count: source {ROWS}, destination {}",
            ROWS - 1
        )),
        "{out}"
    );
    assert!(out.contains("kinds: OK (3 rows, "), "{out}");
    s.on(
        shard,
        "INSERT INTO items VALUES (17, 'item 17', 17 % 7, ARRAY['a', '17'])",
    );
    s.assert_clean();

    // 2. A value changed.
    let shard = s.shard_of(42);
    s.on(shard, "UPDATE items SET name = 'changed' WHERE id = 42");
    let out = s.verify_fails("a changed value");
    let line = item_line(&out);
    assert!(line.contains("checksum"), "{out}");
    assert!(line.contains("same row count, different rows"), "{out}");
    s.on(shard, "UPDATE items SET name = 'item 42' WHERE id = 42");
    s.assert_clean();

    // 3. A row moved, unchanged, to the wrong shard: counts and checksums still match.
    let shard = s.shard_of(99);
    let other = 1 - shard;
    let item_99 = "INSERT INTO items VALUES (99, 'item 99', 99 % 7, ARRAY['a', '99'])";
    s.on(shard, "DELETE FROM items WHERE id = 99");
    s.on(other, item_99);
    let out = s.verify_fails("a misplaced row");
    let line = item_line(&out);
    assert!(
        line.contains(&format!(
            "1 misplaced rows on shard {other} (e.g. key 99 on shard {other} belongs on shard {shard})"
        )),
        "{out}"
    );
    assert!(
        !line.contains("row count") && !line.contains("checksum"),
        "{out}"
    );
    s.on(other, "DELETE FROM items WHERE id = 99");
    s.on(shard, item_99);
    s.assert_clean();

    // 4. An omnisharded table out of step on one shard.
    s.on(1, "UPDATE kinds SET label = 'uno' WHERE id = 1");
    let out = s.verify_fails("an omnisharded table out of step");
    assert!(
        out.contains("kinds: DIFFERENT: omnisharded: checksum on shard 1 differs"),
        "{out}"
    );
    assert!(item_line(&out).contains("OK"), "{out}");

    // 5. A table missing on the destination is named, not an error.
    s.source
        .primary()
        .psql("CREATE TABLE extra (id int PRIMARY KEY)")
        .unwrap();
    let (ok, out) = s.verify(&["extra"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("extra: DIFFERENT: missing on dst shard 0; missing on dst shard 1"),
        "{out}"
    );
}
