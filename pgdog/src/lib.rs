//! pgdog: a PostgreSQL proxy that pools connections, routes queries across shards and reshards
//! live databases. One folder per concern:
//!
//! - `config`: pgdog.toml / users.toml;
//! - `net`: the wire protocol;
//! - `auth`: SCRAM-SHA-256, MD5, plain;
//! - `backend`: server connections and pools;
//! - `frontend`: client sessions;
//! - `router`: which shards a statement goes to;
//! - `sharding`: placement of key values on shards (hash, list, range);
//! - `merge`: cross-shard results assembled as one;
//! - `replication`: logical replication (pgoutput decoder, replication client);
//! - `reshard`: resharding (schema sync, copy, replay, cutover, verify);
//! - `admin`: the admin database (PAUSE, RESUME, RELOAD, SHOW) and its in-process API;
//! - `stats`: traffic counters, latency histograms and the connected clients;
//! - `ops`: the OpenMetrics / health HTTP endpoint and graceful shutdown;
//! - `signals`: Ctrl-C / SIGTERM for the command-line tools.
//!
//! `frontend` (which also serves the admin database) and `admin` sit on top: no other folder but
//! `reshard` (which registers its admin commands) imports them, checked by `layering_tests`, so
//! no circle of imports runs through a session and back. What a lower folder must call back is
//! handed to it (`ops::handover::start`, `backend::mirror::Tap::new`).
pub mod admin;
pub mod auth;
pub mod backend;
pub mod config;
pub mod frontend;
#[cfg(test)]
mod layering_tests;
pub mod merge;
pub mod net;
pub mod ops;
pub mod registry;
pub mod replication;
pub mod reshard;
pub mod router;
#[cfg(test)]
mod scratch;
pub mod sharding;
pub mod signals;
pub mod stats;
