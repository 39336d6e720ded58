//! One shard of a database for one user: its servers (a primary, replicas, or `auto` servers
//! whose role the health checks observe), each with its pool. Picks the pool for a write (the
//! one primary; none, or two claiming it, is an error naming the shard) or for a read (a
//! healthy replica by `load_balancing_strategy`, the primary too with `include_primary`, the
//! primary when every replica is banned). Knows nothing of SQL: the session says read or write.
use super::host::{HostState, Observed};
use super::pool::{Pool, PoolError, PooledServer};
use crate::config::{LoadBalancingStrategy, PoolerMode, ReadWriteSplit, ReadWriteStrategy, Role};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Why a shard has no server for a request (SQLSTATE 08006).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ShardError {
    #[error("database \"{database}\" shard {shard}: no primary is available ({why}); writes fail until one is back or a standby is promoted")]
    NoPrimary {
        database: String,
        shard: usize,
        why: String,
    },
    #[error("database \"{database}\" shard {shard}: several servers claim to be the primary ({hosts}); writes are refused until one steps down")]
    SplitBrain {
        database: String,
        shard: usize,
        hosts: String,
    },
}

impl ShardError {
    pub fn code(&self) -> &'static str {
        "08006"
    }
}

/// Why no connection could be had.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error(transparent)]
    Shard(#[from] ShardError),
    #[error(transparent)]
    Pool(PoolError),
}

impl CheckoutError {
    pub fn code(&self) -> String {
        match self {
            CheckoutError::Shard(e) => e.code().to_string(),
            CheckoutError::Pool(e) => e.code(),
        }
    }
}

/// A server of the shard: its pool and its shared state.
#[derive(Clone)]
pub struct Host {
    pub pool: Pool,
    pub state: Arc<HostState>,
}

/// How reads are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPolicy {
    pub strategy: LoadBalancingStrategy,
    pub split: ReadWriteSplit,
    /// Which statements count as reads (kept here so sessions need no registry lookup).
    pub reads: ReadWriteStrategy,
    /// A client's reads wait for a replica that has replayed its last write.
    pub read_your_writes: bool,
}

struct Inner {
    database: String,
    index: usize,
    hosts: Vec<Host>,
    policy: ReadPolicy,
    /// A server is not the configured primary (read per statement: kept, not searched).
    splits_reads: bool,
    next: AtomicUsize,
}

/// Cheap to clone handle.
#[derive(Clone)]
pub struct Shard {
    inner: Arc<Inner>,
}

impl Shard {
    pub fn new(database: &str, index: usize, hosts: Vec<Host>, policy: ReadPolicy) -> Shard {
        let splits_reads = hosts.iter().any(|h| h.state.configured != Role::Primary);
        Shard {
            inner: Arc::new(Inner {
                database: database.to_string(),
                index,
                hosts,
                policy,
                splits_reads,
                next: AtomicUsize::new(0),
            }),
        }
    }

    pub fn index(&self) -> usize {
        self.inner.index
    }

    pub fn hosts(&self) -> &[Host] {
        &self.inner.hosts
    }

    /// The built-in functions of its servers (they share one catalog), once a health check
    /// has read them (see `builtins`).
    pub fn builtins(&self) -> Option<Arc<super::builtins::Builtins>> {
        self.inner
            .hosts
            .iter()
            .find_map(|h| h.state.builtins.current())
    }

    pub fn policy(&self) -> ReadPolicy {
        self.inner.policy
    }

    /// Whether both handles are the same shard object (same pools, same policy).
    pub fn same(&self, other: &Shard) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether anything but its holder uses it: a session (each holds a handle) or a
    /// connection of its pools checked out.
    pub fn in_use(&self) -> bool {
        Arc::strong_count(&self.inner) > 1 || self.inner.hosts.iter().any(|h| h.pool.counts().1 > 0)
    }

    /// Whether reads can go anywhere but the primary: only then is a statement's read or
    /// write nature worth finding out.
    pub fn splits_reads(&self) -> bool {
        self.inner.splits_reads
    }

    /// Whether its pools are read-only (`read_only`: statements turning that off are refused).
    pub fn read_only(&self) -> bool {
        self.inner.hosts.iter().any(|h| h.pool.settings().read_only)
    }

    /// Transaction or session pooling (the same for every server of the shard).
    /// The clients' timeouts of this shard's pools (the first server's).
    pub fn clocks(&self) -> crate::config::ClientClocks {
        self.inner
            .hosts
            .first()
            .map(|h| h.pool.settings().clocks)
            .unwrap_or_default()
    }

    pub fn mode(&self) -> PoolerMode {
        self.inner
            .hosts
            .first()
            .map(|h| h.pool.settings().mode)
            .unwrap_or_default()
    }

    /// The pool of the primary, for writes.
    pub fn primary(&self) -> Result<&Pool, ShardError> {
        let host = self.primary_host()?;
        if host.state.manually_banned() {
            // The admin's BAN: writes fail fast until UNBAN (automatic bans never stop them).
            return Err(ShardError::NoPrimary {
                database: self.inner.database.clone(),
                shard: self.inner.index,
                why: format!(
                    "{} is banned by the admin (BAN; UNBAN lets writes through)",
                    host.state.addr()
                ),
            });
        }
        Ok(&host.pool)
    }

    fn primary_host(&self) -> Result<&Host, ShardError> {
        let hosts = &self.inner.hosts;
        if hosts.len() == 1 {
            return Ok(&hosts[0]);
        }
        let fixed = hosts.iter().find(|h| h.state.configured == Role::Primary);
        if let Some(h) = fixed {
            return Ok(h);
        }
        // An `auto` server is the primary while its last health check saw it accept writes and
        // no connection to it has failed since; bans (which keep reads away) do not matter
        // here: there is no other place for writes.
        let claiming: Vec<&Host> = hosts
            .iter()
            .filter(|h| h.state.role() == Observed::Primary)
            .collect();
        match claiming.as_slice() {
            [one] => Ok(one),
            [] => Err(ShardError::NoPrimary {
                database: self.inner.database.clone(),
                shard: self.inner.index,
                why: self.describe_hosts(),
            }),
            many => {
                let hosts = many
                    .iter()
                    .map(|h| h.state.addr())
                    .collect::<Vec<_>>()
                    .join(", ");
                tracing::error!(
                    "database {} shard {}: several servers claim to be the primary: {hosts}; refusing writes",
                    self.inner.database,
                    self.inner.index
                );
                Err(ShardError::SplitBrain {
                    database: self.inner.database.clone(),
                    shard: self.inner.index,
                    hosts,
                })
            }
        }
    }

    /// The pool for a read: a healthy replica (or the primary, by policy or when no replica is
    /// available).
    pub fn read(&self) -> Result<&Pool, ShardError> {
        self.read_after(None)
    }

    /// The same, among replicas whose replayed WAL position (at their last health check) is at
    /// least `min_lsn`: the primary when none has caught up.
    pub fn read_after(&self, min_lsn: Option<u64>) -> Result<&Pool, ShardError> {
        let hosts = &self.inner.hosts;
        if hosts.len() == 1 {
            return Ok(&hosts[0].pool);
        }
        let include_primary = self.inner.policy.split == ReadWriteSplit::IncludePrimary;
        let mut candidates: Vec<&Host> = Vec::with_capacity(hosts.len());
        for h in hosts {
            if h.state.is_banned() {
                continue;
            }
            if let Some(min) = min_lsn {
                let caught_up = h.state.status().lsn.is_some_and(|lsn| lsn >= min);
                if h.state.role() == Observed::Replica && !caught_up {
                    continue;
                }
            }
            match h.state.role() {
                Observed::Replica => candidates.push(h),
                Observed::Primary if include_primary => candidates.push(h),
                _ => {}
            }
        }
        match candidates.len() {
            0 => self.primary(),
            1 => Ok(&candidates[0].pool),
            n => {
                let i = match self.inner.policy.strategy {
                    LoadBalancingStrategy::RoundRobin => {
                        self.inner.next.fetch_add(1, Ordering::Relaxed) % n
                    }
                    LoadBalancingStrategy::Random => rand::random::<usize>() % n,
                    LoadBalancingStrategy::LeastActiveConnections => (0..n)
                        .min_by_key(|i| {
                            let pool = &candidates[*i].pool;
                            pool.counts().1 + pool.waiting()
                        })
                        .unwrap_or(0),
                };
                Ok(&candidates[i].pool)
            }
        }
    }

    /// An idle connection of the pool `checkout` would try first, if one is free now.
    pub fn try_checkout(&self, read: bool, min_lsn: Option<u64>) -> Option<PooledServer> {
        let pool = if read {
            self.read_after(min_lsn)
        } else {
            self.primary()
        };
        pool.ok()?.try_get()
    }

    /// A connection for a write (the primary) or a read. A read whose server turns out to be
    /// down (it is banned by the failed connect) is tried on the next candidate, so reads go
    /// on while a replica dies.
    pub async fn checkout(
        &self,
        read: bool,
        min_lsn: Option<u64>,
    ) -> Result<PooledServer, CheckoutError> {
        let mut attempts = if read { self.inner.hosts.len() } else { 1 };
        loop {
            let pool = if read {
                self.read_after(min_lsn)?
            } else {
                self.primary()?
            };
            match pool.get().await {
                Err(PoolError::Server(e)) if attempts > 1 && e.is_unavailable() => {
                    attempts -= 1;
                    tracing::warn!("shard {}: {e}; trying another server", self.inner.index);
                }
                other => return other.map_err(CheckoutError::Pool),
            }
        }
    }

    /// A pool that can answer now (for the ParameterStatus values at login): the primary if
    /// there is one, else the first server not banned.
    pub fn any(&self) -> &Pool {
        if let Ok(p) = self.primary() {
            return p;
        }
        let hosts = &self.inner.hosts;
        &hosts
            .iter()
            .find(|h| !h.state.is_banned())
            .unwrap_or(&hosts[0])
            .pool
    }

    /// One line per server: address, role, and why it cannot take writes.
    fn describe_hosts(&self) -> String {
        self.inner
            .hosts
            .iter()
            .map(|h| {
                let s = h.state.status();
                let what = if !s.checked {
                    "not checked yet".to_string()
                } else if !s.reachable {
                    format!(
                        "unreachable: {}",
                        s.last_error.as_deref().unwrap_or("health check failed")
                    )
                } else if let Some(reason) = &s.ban_reason {
                    format!("banned: {reason}")
                } else {
                    h.state.role().name().to_string()
                };
                format!("{} {what}", h.state.addr())
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}
