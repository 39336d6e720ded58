//! The 2 -> 4 cutover fixture shared by the cutover tests: the configuration (`app` on the
//! source shards, `app_new` on the destination), its users, and a write load through pgdog.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use topology::Topology;

pub const ADMIN_PASSWORD: &str = "admin_pw";

/// The admin database URL of the pgdog listening on `port`.
pub fn admin_url(port: u16) -> String {
    format!("postgres://admin:{ADMIN_PASSWORD}@127.0.0.1:{port}/admin")
}

/// A 2-shard source with `items (id bigint PRIMARY KEY, v text, n bigserial)` and publication
/// `pub` on each shard, and 4 empty destination shards.
pub fn source_and_destination() -> (Topology, Topology) {
    let source = Topology::shards(2).expect("source shards");
    let dest = Topology::shards(4).expect("destination shards");
    for s in 0..2 {
        source
            .shard(s)
            .psql(
                "CREATE TABLE items (id bigint PRIMARY KEY, v text, n bigserial);
                 CREATE PUBLICATION pub FOR TABLE items;",
            )
            .expect("source schema");
    }
    (source, dest)
}

/// pgdog.toml without `[general]` host/port: `app` on `source`'s 2 shards, `app_new` on
/// `dest`'s 4, `items` sharded by `id` in both.
pub fn config(source: &Topology, dest: &Topology) -> String {
    let mut c = format!("admin_password = \"{ADMIN_PASSWORD}\"\n");
    for (name, topo, shards) in [("app", source, 2), ("app_new", dest, 4)] {
        for shard in 0..shards {
            c.push_str(&format!(
                "\n[[databases]]\nname = \"{name}\"\nshard = {shard}\nport = {}\n\
                 database_name = \"postgres\"\nuser = \"postgres\"\n",
                topo.shard(shard).port
            ));
        }
        c.push_str(&format!(
            "\n[[sharded_tables]]\ndatabase = \"{name}\"\nname = \"items\"\ncolumn = \"id\"\n\
             data_type = \"bigint\"\n"
        ));
    }
    c
}

pub const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"app\"\npassword = \"secret\"\n\n\
                     [[users]]\nname = \"app\"\ndatabase = \"app_new\"\npassword = \"secret\"\n";

/// Writes through pgdog until `stop`: inserts (ids from `base`), updates and deletes of its own
/// earlier rows. Returns (statements done, errors seen, highest id inserted).
pub async fn load(
    url: String,
    base: i64,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> (u64, Vec<String>, i64) {
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("load client connects");
    tokio::spawn(conn);
    let mut errors = Vec::new();
    let mut id = base;
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        id += 1;
        let r = client
            .execute(
                "INSERT INTO items (id, v) VALUES ($1, $2)",
                &[&id, &format!("load {id}")],
            )
            .await;
        if let Err(e) = r {
            errors.push(format!("insert {id}: {e}"));
        }
        if id % 3 == 0 {
            let target = id - 2;
            if let Err(e) = client
                .execute(
                    "UPDATE items SET v = v || ' updated' WHERE id = $1",
                    &[&target],
                )
                .await
            {
                errors.push(format!("update {target}: {e}"));
            }
        }
        if id % 7 == 0 {
            let target = id - 5;
            if let Err(e) = client
                .execute("DELETE FROM items WHERE id = $1", &[&target])
                .await
            {
                errors.push(format!("delete {target}: {e}"));
            }
        }
        n += 1;
        done.fetch_add(1, Ordering::SeqCst);
    }
    (n, errors, id)
}

/// Waits until the load did `more` statements more.
pub fn wait_for_statements(done: &AtomicU64, more: u64) {
    let target = done.load(Ordering::SeqCst) + more;
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.load(Ordering::SeqCst) < target {
        assert!(Instant::now() < deadline, "the load made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
}
