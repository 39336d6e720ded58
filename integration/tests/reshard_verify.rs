//! `pgdog verify` end to end: a single source server against a two-shard destination loaded
//! with pgdog's own placement, then broken three ways (a row deleted on a shard, a value
//! changed, a row moved to the wrong shard) and an omnisharded table out of step.
use pgdog::config::Settings;
use pgdog::router::schema::Schema;
use std::path::PathBuf;
use std::process::Command;
use topology::{Node, Topology};

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
    let source = Topology::single().expect("source topology");
    let dest = Topology::shards(2).expect("destination topology");
    let dir = std::env::temp_dir().join(format!("pgdog-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = format!(
        "[[databases]]\nname = \"src\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n",
        source.primary().port
    );
    for shard in 0..2 {
        config.push_str(&format!(
            "\n[[databases]]\nname = \"dst\"\nshard = {shard}\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n",
            dest.shard(shard).port
        ));
    }
    config.push_str(
        "\n[[sharded_tables]]\ndatabase = \"dst\"\nname = \"items\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n\
         \n[[omnisharded_tables]]\ndatabase = \"dst\"\ntables = [\"kinds\"]\n",
    );
    let users = "[[users]]\nname = \"app\"\ndatabase = \"src\"\npassword = \"secret\"\n\n\
                 [[users]]\nname = \"app\"\ndatabase = \"dst\"\npassword = \"secret\"\n";
    std::fs::write(dir.join("pgdog.toml"), config).unwrap();
    std::fs::write(dir.join("users.toml"), users).unwrap();

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
        let mut cmd = Command::new(topology::proxy::binary());
        cmd.arg("verify")
            .arg("--config")
            .arg(self.dir.join("pgdog.toml"))
            .arg("--users")
            .arg(self.dir.join("users.toml"))
            .args(["--from-database", "src", "--to-database", "dst"]);
        for t in tables {
            cmd.args(["--table", t]);
        }
        let out = cmd.output().expect("running pgdog verify");
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

    /// The shard holding item `id`.
    fn shard_of(&self, id: i64) -> usize {
        (0..2)
            .find(|&s| {
                self.dest
                    .shard(s)
                    .psql(&format!("SELECT count(*) FROM items WHERE id = {id}"))
                    .unwrap()
                    == "1"
            })
            .expect("item is somewhere")
    }

    fn node(&self, shard: usize) -> &Node {
        self.dest.shard(shard)
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
    s.node(shard)
        .psql("DELETE FROM items WHERE id = 17")
        .unwrap();
    let (ok, out) = s.verify(&[]);
    assert!(!ok, "a missing row must fail:\n{out}");
    let line = item_line(&out);
    assert!(
        line.contains(&format!(
            "row count: source {ROWS}, destination {}",
            ROWS - 1
        )),
        "{out}"
    );
    assert!(out.contains("kinds: OK (3 rows, "), "{out}");
    s.node(shard)
        .psql("INSERT INTO items VALUES (17, 'item 17', 17 % 7, ARRAY['a', '17'])")
        .unwrap();
    s.assert_clean();

    // 2. A value changed.
    let shard = s.shard_of(42);
    s.node(shard)
        .psql("UPDATE items SET name = 'changed' WHERE id = 42")
        .unwrap();
    let (ok, out) = s.verify(&[]);
    assert!(!ok, "a changed value must fail:\n{out}");
    let line = item_line(&out);
    assert!(line.contains("checksum"), "{out}");
    assert!(line.contains("same row count, different rows"), "{out}");
    s.node(shard)
        .psql("UPDATE items SET name = 'item 42' WHERE id = 42")
        .unwrap();
    s.assert_clean();

    // 3. A row moved, unchanged, to the wrong shard: counts and checksums still match.
    let shard = s.shard_of(99);
    let other = 1 - shard;
    s.node(shard)
        .psql("DELETE FROM items WHERE id = 99")
        .unwrap();
    s.node(other)
        .psql("INSERT INTO items VALUES (99, 'item 99', 99 % 7, ARRAY['a', '99'])")
        .unwrap();
    let (ok, out) = s.verify(&[]);
    assert!(!ok, "a misplaced row must fail:\n{out}");
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
    s.node(other)
        .psql("DELETE FROM items WHERE id = 99")
        .unwrap();
    s.node(shard)
        .psql("INSERT INTO items VALUES (99, 'item 99', 99 % 7, ARRAY['a', '99'])")
        .unwrap();
    s.assert_clean();

    // 4. An omnisharded table out of step on one shard.
    s.node(1)
        .psql("UPDATE kinds SET label = 'uno' WHERE id = 1")
        .unwrap();
    let (ok, out) = s.verify(&[]);
    assert!(!ok, "{out}");
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
