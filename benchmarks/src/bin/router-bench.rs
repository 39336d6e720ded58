//! Parsing and routing cost per query, in-process: pgbench-style statements by key with random
//! keys as Bind parameters, through pgdog's query cache and router exactly as a sharded session
//! routes each Execute; and the same point SELECT in the simple protocol (the key a literal, so
//! every text differs) through the shape cache and with it off. Prints Markdown tables (µs per
//! query, cache hit ratios).
//!
//! `router-bench PGDOG_TOML USERS_TOML [QUERIES]`: the configuration written by
//! benchmarks/router-run.sh (database "bench", 2 shards); QUERIES per statement (200,000).
use pgdog::config::Settings;
use pgdog::router::route::Overrides;
use pgdog::router::{Params, QueryCache, Route, Router, Schema, ShapeCache};
use std::path::Path;
use std::time::Instant;

fn main() {
    // The configuration of the sharded database "bench" that benchmarks/router-run.sh measures
    // through pgdog (pgbench_accounts sharded by aid over 2 shards): the same routing here.
    let args: Vec<String> = std::env::args().collect();
    let [_, config, users, rest @ ..] = &args[..] else {
        eprintln!("usage: router-bench PGDOG_TOML USERS_TOML [QUERIES]");
        std::process::exit(2);
    };
    let settings = Settings::load(Path::new(config), Path::new(users)).expect("config");
    let router = Router::new(Schema::new(&settings, "bench").expect("schema"));
    let overrides = Overrides::default();
    let cache = QueryCache::global();
    let statements = [
        (
            "point SELECT",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
        ),
        (
            "UPDATE by key",
            "UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1",
        ),
    ];
    let n: u64 = rest.first().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    println!("| statement | µs per query (parse via cache + route) | shards hit |");
    println!("|---|---|---|");
    let mut seed: u64 = 0x2545F4914F6CDD1D;
    for (name, sql) in statements {
        row(name, n, &mut seed, |aid| {
            let aid = aid.to_string();
            let delta = b"42";
            let params = Params {
                values: vec![Some(aid.as_bytes()), Some(&delta[..])],
                formats: Vec::new(),
                types: Vec::new(),
                codec: Default::default(),
            };
            let parsed = cache.get(sql).expect("parse");
            router
                .route(&parsed, 0, sql, Some(&params), &overrides)
                .expect("route")
        });
    }
    simple(&router, &overrides, n);
    let (h, m) = cache.stats();
    println!();
    println!(
        "Query cache: {h} hits, {m} misses ({:.4}% hit ratio) over {} queries.",
        100.0 * h as f64 / (h + m).max(1) as f64,
        h + m
    );
}

/// The point SELECT as a simple-protocol text with its aid as a literal: through the shape cache,
/// then with it off (`query_shape_cache_limit = 0`: every text parsed, as before it existed).
fn simple(router: &Router, overrides: &Overrides, n: u64) {
    println!();
    println!("| simple protocol, point SELECT `... WHERE aid = <literal>` | µs per query (text made, parsed or shape hit, routed) | shards hit |");
    println!("|---|---|---|");
    let shapes = ShapeCache::global();
    for (name, limit) in [
        ("shape cache (default)", 4096),
        ("shape cache off (before)", 0),
    ] {
        shapes.resize(limit);
        row(name, n, &mut 0x2545F4914F6CDD1D, |aid| {
            let sql = format!("SELECT abalance FROM pgbench_accounts WHERE aid = {aid}");
            let parsed = shapes.get(&sql).expect("parse");
            router
                .route(&parsed, 0, &sql, None, overrides)
                .expect("route")
        });
    }
    let s = shapes.stats();
    println!();
    println!(
        "Shape cache: {} hits, {} misses, {} not cacheable.",
        s.hits, s.misses, s.not_cacheable
    );
}

/// The next pseudo-random aid (1 to 200,000) of a xorshift sequence: the same keys in each table.
fn random_aid(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed % 200_000 + 1
}

/// Routes `n` queries (`route_one` given each next aid), timed; prints the table row: µs per
/// query and the shards hit.
fn row(name: &str, n: u64, seed: &mut u64, mut route_one: impl FnMut(u64) -> Route) {
    let mut hits = [0u64; 2];
    let start = Instant::now();
    for _ in 0..n {
        for s in route_one(random_aid(seed)).shards() {
            hits[s] += 1;
        }
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!(
        "| {name} | {us:.3} | shard 0: {}, shard 1: {} |",
        hits[0], hits[1]
    );
}
