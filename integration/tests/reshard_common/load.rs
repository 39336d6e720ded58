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
            errors.push(format!("insert {id}: {e:?}"));
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

/// `--from-database app --to-database app_new`.
pub const APP_DBS: [&str; 4] = ["--from-database", "app", "--to-database", "app_new"];

/// `pgdog reshard` arguments moving `app` to `app_new` (publication `pub`, slot `slot`) with
/// `--cutover --reverse`, pausing and switching every pgdog of `admin_urls`.
pub fn cutover_args<'a>(slot: &'a str, admin_urls: &'a [String]) -> Vec<&'a str> {
    let mut args = APP_DBS.to_vec();
    args.extend([
        "--publication",
        "pub",
        "--slot",
        slot,
        "--cutover",
        "--reverse",
    ]);
    for url in admin_urls {
        args.extend(["--admin-url", url.as_str()]);
    }
    args
}

/// The handle of one [`load`] task: (statements done, errors seen, highest id inserted).
pub type LoadTask = tokio::task::JoinHandle<(u64, Vec<String>, i64)>;

#[allow(unused_imports)] // not every test module drives clients from sync code
pub use topology::runtime;

/// Starts one [`load`] on `rt` per (pgdog URL, first id), all stopped by `stop` and counting
/// their statements in `done`.
pub fn start_loads(
    rt: &tokio::runtime::Runtime,
    loads: impl IntoIterator<Item = (String, i64)>,
    stop: &Arc<AtomicBool>,
    done: &Arc<AtomicU64>,
) -> Vec<LoadTask> {
    loads
        .into_iter()
        .map(|(url, base)| rt.spawn(load(url, base, stop.clone(), done.clone())))
        .collect()
}

/// Sets `stop` and waits for every load; their (statements done, errors seen, highest id).
pub fn stop_loads(
    rt: &tokio::runtime::Runtime,
    stop: &AtomicBool,
    loads: Vec<LoadTask>,
) -> Vec<(u64, Vec<String>, i64)> {
    stop.store(true, Ordering::SeqCst);
    loads.into_iter().map(|l| rt.block_on(l).unwrap()).collect()
}

/// [`stop_loads`], then every load did some statements and saw no error (`logs` for the
/// message); the highest id each inserted.
pub fn stop_clean_loads(
    rt: &tokio::runtime::Runtime,
    stop: &AtomicBool,
    loads: Vec<LoadTask>,
    logs: impl Fn() -> String,
) -> Vec<i64> {
    stop_loads(rt, stop, loads)
        .into_iter()
        .map(|(n, errors, last)| {
            assert!(n > 0);
            assert!(
                errors.is_empty(),
                "clients saw errors: {errors:?}\n{}",
                logs()
            );
            last
        })
        .collect()
}

/// Row `id` of `items` is on exactly one of the first `shards` shards of `topo` (`which` names
/// them in the message).
pub fn assert_item_on(topo: &Topology, shards: usize, id: i64, which: &str) {
    let n = super::count_on(
        topo,
        shards,
        &format!("SELECT count(*) FROM items WHERE id = {id}"),
    );
    assert_eq!(n, 1, "row {id} on {which}");
}

/// Polls `switched` every 50 ms while the [`super::spawn`]ed `child` (a `pgdog reshard
/// --cutover`) runs: panics with its output and `logs` if it ends first, or (killing it) if
/// `switched` does not hold within `secs` seconds (`what` names the failure).
pub fn wait_for_cutover(
    child: &mut std::process::Child,
    secs: u64,
    what: &str,
    logs: impl Fn() -> String,
    mut switched: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = read_output(child);
            panic!("pgdog reshard ended early ({status}): {out}\n{}", logs());
        }
        if switched() {
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = read_output(child);
            panic!("{what}: {out}\n{}", logs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The stdout and stderr of an ended (or killed) child with piped output.
fn read_output(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let _ = child.wait();
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    out.push('\n');
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut out);
    }
    out
}
