//! Server side: connections to Postgres (startup, authentication, parameters, health), the
//! pools that hand them to client sessions per (user, database), and the registry of prepared
//! statements (one server-side name per distinct statement) that pools, sessions and admin read.
//! Must not interpret client traffic: the frontend decides what to send; a server connection only
//! carries it.
pub mod builtins;
pub mod caps;
pub mod host;
pub mod listener;
pub mod mirror;
pub mod pause;
pub mod pool;
pub mod prepared;
pub mod server;
pub mod shard;
pub mod twophase;
pub mod unique_id;

#[cfg(test)]
mod server_auth_tests;

pub use pool::{Pool, PoolError, PooledServer};
pub use server::{CancelKey, Server, ServerError, ServerTarget, Unnamed};
pub use shard::{Shard, ShardError};
