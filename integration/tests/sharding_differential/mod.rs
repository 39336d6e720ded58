//! Differential test of pgdog's sharding router: one reference PostgreSQL 18 server and pgdog in
//! front of three PostgreSQL 18 shards get the same schema and the same ~2,000 users, ~6,000
//! orders and a dozen omnisharded countries (loaded through pgdog with multi-row INSERTs,
//! parameterized single-row INSERTs and COPY text/CSV), then the same queries: every read runs
//! with the simple protocol and with the extended protocol (binary results), writes run in the
//! same order on both, and each answer from pgdog must equal the reference's: column names, row
//! count of the command tag, rows (in order when the query orders them totally, else as
//! multisets, and with ORDER BY key columns in the same order when there are ties), or the same
//! SQLSTATE when both fail. Row placement is checked on every shard against Postgres' own hash
//! partitioning (`satisfies_hash_partition`), COPY TO STDOUT output is compared as row multisets,
//! and what pgdog must refuse (cross-shard window functions, string_agg/array_agg with DISTINCT,
//! percentile_cont, joins not on the sharding keys, UPDATE of a sharding key) must fail with
//! SQLSTATE 0A000.
//!
//! Reads run in three ways: the simple protocol; tokio-postgres' extended protocol (Parse and
//! Describe statement, then Bind/Execute/Sync with binary results: no Describe of the portal);
//! libpq's PQexecParams (Parse/Bind/Describe portal/Execute/Sync, text). Writes run once, in
//! the order listed. `SHARDING_DIFF_MODES=simple,libpq` limits the read modes when
//! investigating one protocol path.
//!
//! The spill family (`spill.rs`) runs the reads that hold rows in pgdog's merge once more with
//! `merge_work_mem` at its minimum, and the writes after them under it: spilled merges must
//! give the same answers.
//!
//! The shape family (`shapes.rs`) runs query templates many times each with fresh literals in
//! every slot, simple protocol only: pgdog serves them from its shape cache.
//!
//! Every mismatch is collected; the test fails at the end listing all of them with both results.
//! Queries marked `bug(...)` reproduce pgdog bugs found by this suite (their checks stay active):
//!
//! - B1: a query over several shards through the extended protocol without a Describe of the
//!   portal (tokio-postgres, and most drivers after a prepare) fails with
//!   `XX000 cross-shard merge: DataRow before RowDescription`. Most `[Extended]` mismatches.
//! - B2: after a statement prepared on several shards fails while executing on one of them,
//!   pgdog forgets the shards prepared it and prepares it again next time: `42P05 prepared
//!   statement "__pgdog_N" already exists`, for good (also triggered by B1). Most `[Libpq]`
//!   mismatches that follow a failing one.
//! - B3: a constant of a wider numeric type than the key column is read as a key of the
//!   column's type: `WHERE id = 71.0` on a bigint key (22P02), `WHERE id = 3000000000` on an
//!   integer key (22003), where Postgres compares the values (a row, or none).
//! - B4: `GROUP BY t` where `t` is an output alias: the shard query gets `t AS __pgdog_0`: 42703.
//! - B5: a text parameter sent in binary (`$1::text::bigint`, `$1::text::uuid`: what
//!   tokio-postgres sends for a String) is decoded as a binary value of the key column's type:
//!   2- and 4-character texts route (and INSERT) to the wrong shard, other lengths fail (22P03).
//! - B6: INSERT/DELETE ... RETURNING on an omnisharded table returns the rows once per shard.
//! - B7: with a non-ISO DateStyle, merging timestamptz/date values fails (XX000).
//! - B8: COPY through the extended protocol (tokio-postgres `copy_in`/`copy_out`) is refused.
mod data;
mod load;
mod more;
mod queries;
mod run;
mod shapes;
mod spill;

use data::*;
use load::*;
use more::*;
use queries::*;
use run::*;
use shapes::*;
use spill::*;

use crate::sharding_common::*;
use std::collections::HashMap;
use std::time::Instant;
use tokio_postgres::Client;
use topology::{Proxy, Topology};

const SHARDS: usize = 3;
const USERS: usize = 2000;
const ORDERS: usize = 6000;

/// The sharded and omnisharded tables of pgdog.toml.
fn tables() -> String {
    let generated = three_ranges("metrics", "bucket", 1000);
    format!("{}{generated}", include_str!("tables.toml"))
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE users (id bigint PRIMARY KEY, name text, email text, age int, score numeric(10,2), created_at timestamptz NOT NULL, active bool, tenant text, country text)",
    "CREATE TABLE orders (id bigint NOT NULL, user_id bigint NOT NULL, amount numeric(12,2), status text, created_at timestamptz, PRIMARY KEY (user_id, id))",
    "CREATE TABLE countries (code text PRIMARY KEY, name text NOT NULL, region text)",
    "CREATE INDEX users_tenant ON users (tenant)",
    "CREATE TABLE events (user_id bigint NOT NULL, id bigint NOT NULL, note text)",
    "CREATE TABLE items (sku text PRIMARY KEY, qty int, tags text)",
    "CREATE TABLE sessions (sid uuid PRIMARY KEY, user_id bigint, n int)",
    "CREATE TABLE counters (id int PRIMARY KEY, n bigint)",
    "CREATE TABLE metrics (bucket bigint NOT NULL, id bigint NOT NULL, val int, PRIMARY KEY (bucket, id))",
];

/// Loads the data sets through one side; what each step reported.
async fn load_side(side: &mut Side, d: &Data, m: &More) -> Vec<(String, Result<String, String>)> {
    let mut l = Loader::new(&side.client, &mut side.raw);
    load(&mut l, d).await;
    load_more(&mut l, m).await;
    l.out
}

async fn suite(reference: &Topology, shards: &Topology, proxy: &Proxy) -> Report {
    let t0 = Instant::now();
    let mut report = Report {
        failures: Vec::new(),
        refused: Vec::new(),
        compared: 0,
    };
    let mut pg = Side {
        client: connect_port(reference.primary().port).await,
        raw: raw::Conn::login(reference.primary().port, "postgres", "postgres", None).await,
    };
    let mut dog = Side {
        client: connect_proxy(proxy).await,
        raw: raw::Conn::login(proxy.port, USER, DB, None).await,
    };
    let mut direct = Vec::new();
    for node in shards.nodes() {
        let c = connect_port(node.port).await;
        c.batch_execute(
            "CREATE TABLE users_hash_check (id bigint) PARTITION BY HASH (id); \
             CREATE TABLE text_hash_check (k text) PARTITION BY HASH (k); \
             CREATE TABLE uuid_hash_check (k uuid) PARTITION BY HASH (k); \
             CREATE TABLE int_hash_check (k int) PARTITION BY HASH (k)",
        )
        .await
        .expect("helper table on a shard");
        direct.push(c);
    }

    let d = generate();
    let more = generate_more();
    let v = vars(&d, &more);
    let (got, want) = tokio::join!(
        load_side(&mut dog, &d, &more),
        load_side(&mut pg, &d, &more)
    );
    for ((what, g), (_, w)) in got.iter().zip(&want) {
        if g != w {
            report.fail(format!(
                "load: {what}\n      pgdog: {g:?}\n      reference: {w:?}"
            ));
        }
    }
    eprintln!("load: {:.1}s", t0.elapsed().as_secs_f64());
    check_placement(&direct, &pg.client, "after load", &mut report).await;
    check_more_placement(&direct, "after load", &mut report).await;

    let t1 = Instant::now();
    let reads = reads(&v);
    for q in &reads {
        differential(q, &mut dog, &mut pg, false, &mut report).await;
    }
    eprintln!("{} reads: {:.1}s", reads.len(), t1.elapsed().as_secs_f64());
    let pools = pools(&d, &more);
    for q in &shape_reads(&pools) {
        differential(q, &mut dog, &mut pg, false, &mut report).await;
    }
    let t_spill = Instant::now();
    set_work_mem(proxy, "8kB").await;
    let spilling: Vec<&Q> = reads.iter().filter(|q| holds_rows(&q.sql)).collect();
    for q in &spilling {
        differential(q, &mut dog, &mut pg, true, &mut report).await;
    }
    eprintln!(
        "{} reads again with merge_work_mem = 8kB: {:.1}s",
        spilling.len(),
        t_spill.elapsed().as_secs_f64()
    );

    for (sql, header) in [
        ("COPY users TO STDOUT", false),
        (
            "COPY (SELECT id, name FROM users WHERE age > 50) TO STDOUT",
            false,
        ),
        ("COPY orders TO STDOUT WITH (FORMAT csv, HEADER)", true),
        ("COPY countries TO STDOUT", false),
        (
            "COPY users (id, score, created_at) TO STDOUT WITH (FORMAT csv)",
            false,
        ),
    ] {
        check_copy_out(&mut dog.raw, &mut pg.raw, sql, header, &mut report).await;
    }
    let sql = format!(
        "COPY (SELECT * FROM users WHERE id = {}) TO STDOUT",
        v.get("a")
    );
    check_copy_out(&mut dog.raw, &mut pg.raw, &sql, false, &mut report).await;
    // A separate connection: a failure there must not end the main one.
    let dog2 = connect_proxy(proxy).await;
    check_extended_copy(
        &dog2,
        &pg.client,
        proxy,
        reference.primary().port,
        &mut report,
    )
    .await;

    check_refusals(&mut dog, &v, &mut report).await;

    let t2 = Instant::now();
    let writes = writes(&v);
    for q in writes.iter().chain(&shape_writes(&pools)) {
        differential(q, &mut dog, &mut pg, true, &mut report).await;
    }
    let after = after(&v);
    for q in &after {
        differential(q, &mut dog, &mut pg, false, &mut report).await;
    }
    check_placement(&direct, &pg.client, "after the writes", &mut report).await;
    check_copy_out(
        &mut dog.raw,
        &mut pg.raw,
        "COPY users TO STDOUT",
        false,
        &mut report,
    )
    .await;
    eprintln!(
        "{} writes and {} reads after them: {:.1}s",
        writes.len(),
        after.len(),
        t2.elapsed().as_secs_f64()
    );
    check_shape_cache(proxy, &mut report).await;
    check_spilled(proxy, &mut report).await;
    report
}

#[test]
fn sharding_differential() {
    let t0 = Instant::now();
    let (reference, shards) = std::thread::scope(|s| {
        let r = s.spawn(|| Topology::single().expect("reference server"));
        let sh = Topology::shards(SHARDS).expect("shards");
        (r.join().expect("reference thread"), sh)
    });
    let proxy = start_proxy(
        &shards,
        &format!("admin_password = \"{ADMIN_PASSWORD}\""),
        &tables(),
    );
    eprintln!("servers and pgdog up: {:.1}s", t0.elapsed().as_secs_f64());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let report = rt.block_on(Box::pin(suite(&reference, &shards, &proxy)));
    eprintln!(
        "{} comparisons, {} mismatches, {} allowed refusals, {:.1}s in all",
        report.compared,
        report.failures.len(),
        report.refused.len(),
        t0.elapsed().as_secs_f64()
    );
    if !report.refused.is_empty() {
        eprintln!(
            "refused by pgdog with 0A000 (allowed):\n  {}",
            report.refused.join("\n  ")
        );
    }
    if !report.failures.is_empty() {
        panic!(
            "{} mismatches between pgdog (3 shards) and one PostgreSQL:\n\n  {}\n",
            report.failures.len(),
            report.failures.join("\n\n  ")
        );
    }
}
