//! What pgdog knows about one Postgres server (host, port, database): its configured and
//! observed role, the last health check, replication lag, and bans. Shared by every pool that
//! connects there (one per user) and kept across reloads, so a ban outlives a RELOAD. Written by
//! the health checks (`registry::health`), by pools that fail to connect and by sessions that
//! lose a connection; read when a shard picks a server.
use crate::config::Role;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `ban_timeout` of the configuration in force (milliseconds).
static BAN_TIMEOUT_MS: AtomicU64 = AtomicU64::new(60_000);

pub fn set_ban_timeout(ms: u64) {
    BAN_TIMEOUT_MS.store(ms, Ordering::Relaxed);
}

fn ban_timeout() -> Duration {
    Duration::from_millis(BAN_TIMEOUT_MS.load(Ordering::Relaxed))
}

/// The last observations of a server.
#[derive(Debug, Clone, Default)]
pub struct HostStatus {
    /// A health check has completed (passed or failed) at least once.
    pub checked: bool,
    /// The last health check reached the server.
    pub reachable: bool,
    /// `pg_is_in_recovery()` at the last passing check.
    pub in_recovery: Option<bool>,
    /// WAL position at the last passing check: current (primary) or replayed (standby).
    pub lsn: Option<u64>,
    /// Bytes of WAL this standby is behind its primary (standbys only).
    pub lag_bytes: Option<u64>,
    /// No new traffic before this instant (and, after it, until a health check passes).
    pub banned_until: Option<Instant>,
    pub ban_reason: Option<String>,
    /// Why the last check failed.
    pub last_error: Option<String>,
}

/// One server's shared state.
#[derive(Debug)]
pub struct HostState {
    pub host: String,
    pub port: u16,
    pub database: String,
    pub configured: Role,
    status: Mutex<HostStatus>,
    /// Banned by the admin's BAN: until UNBAN, whatever the health checks see (read on every
    /// write checkout: no lock).
    manual_ban: std::sync::atomic::AtomicBool,
    /// Its built-in functions (read by the health check).
    pub builtins: super::builtins::Catalog,
}

/// The role a server has now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    Primary,
    Replica,
    /// `auto` server not (yet) reached by a health check.
    Unknown,
}

impl Observed {
    pub fn name(self) -> &'static str {
        match self {
            Observed::Primary => "primary",
            Observed::Replica => "replica",
            Observed::Unknown => "unknown",
        }
    }
}

impl HostState {
    pub fn addr(&self) -> String {
        crate::net::unix::address(&self.host, self.port)
    }

    pub fn status(&self) -> HostStatus {
        self.status.lock().clone()
    }

    /// The role now: the configured one, or for `auto` the one the last check saw.
    pub fn role(&self) -> Observed {
        match self.configured {
            Role::Primary => Observed::Primary,
            Role::Replica => Observed::Replica,
            Role::Auto => {
                let s = self.status.lock();
                match (s.reachable, s.in_recovery) {
                    (true, Some(false)) => Observed::Primary,
                    (true, Some(true)) => Observed::Replica,
                    _ => Observed::Unknown,
                }
            }
        }
    }

    /// Whether new traffic must avoid this server: inside its ban, or after it until a health
    /// check passes.
    pub fn is_banned(&self) -> bool {
        self.manually_banned() || self.status.lock().banned_until.is_some()
    }

    /// Banned by the admin's BAN.
    pub fn manually_banned(&self) -> bool {
        self.manual_ban.load(Ordering::Relaxed)
    }

    /// The admin's BAN: no new traffic until UNBAN (health checks do not lift it).
    pub fn ban_until_unbanned(&self) {
        tracing::warn!("banning {} ({}) until UNBAN", self.addr(), self.database);
        self.manual_ban.store(true, Ordering::Relaxed);
        self.status.lock().ban_reason = Some("BAN (admin)".into());
    }

    /// The admin's UNBAN: any ban is lifted now (a failing server is banned again by the next
    /// health check or failed connect).
    pub fn unban(&self) {
        tracing::info!("unbanning {} ({}): UNBAN", self.addr(), self.database);
        self.manual_ban.store(false, Ordering::Relaxed);
        let mut s = self.status.lock();
        s.banned_until = None;
        s.ban_reason = None;
    }

    /// Keeps new traffic away for `ban_timeout`; logged when the ban starts.
    pub fn ban(&self, reason: &str) {
        let until = Instant::now() + ban_timeout();
        let role = self.role();
        let mut s = self.status.lock();
        if s.banned_until.is_none() {
            tracing::warn!(
                "banning {} ({} {}) for {} ms: {reason}",
                self.addr(),
                self.database,
                role.name(),
                ban_timeout().as_millis()
            );
        }
        s.banned_until = Some(until);
        s.ban_reason = Some(reason.to_string());
    }

    /// A connection to the server failed (connect refused, connection lost): banned, and an
    /// `auto` server has no role until a health check reaches it again.
    pub fn mark_down(&self, reason: &str) {
        self.status.lock().reachable = false;
        self.ban(reason);
    }

    /// A health check reached the server.
    pub fn check_passed(&self, in_recovery: bool, lsn: Option<u64>) {
        let mut s = self.status.lock();
        if !s.reachable || s.in_recovery != Some(in_recovery) {
            tracing::info!(
                "{} ({}) is up, {}",
                self.addr(),
                self.database,
                if in_recovery {
                    "in recovery (standby)"
                } else {
                    "accepting writes (primary)"
                }
            );
        }
        s.checked = true;
        s.reachable = true;
        s.in_recovery = Some(in_recovery);
        s.lsn = lsn;
        s.last_error = None;
        if !in_recovery {
            s.lag_bytes = None;
        }
        if s.banned_until.is_some_and(|t| Instant::now() >= t) {
            tracing::info!("unbanning {} ({})", self.addr(), self.database);
            s.banned_until = None;
            if !self.manually_banned() {
                s.ban_reason = None;
            }
        }
    }

    /// A health check failed: the server is banned.
    pub fn check_failed(&self, error: &str) {
        {
            let mut s = self.status.lock();
            s.checked = true;
            s.reachable = false;
            s.last_error = Some(error.to_string());
        }
        self.ban(&format!("health check failed: {error}"));
    }

    /// Replication lag measured against the shard's primary; bans past `max` bytes.
    pub fn set_lag(&self, lag: u64, max: u64) {
        self.status.lock().lag_bytes = Some(lag);
        if lag > max {
            self.ban(&format!(
                "replication lag {lag} bytes exceeds max_replica_lag ({max})"
            ));
        }
    }
}

type Key = (String, u16, String, Role);

static HOSTS: Mutex<Option<HashMap<Key, Arc<HostState>>>> = Mutex::new(None);

/// The shared state of a server, created on first use.
pub fn host_state(host: &str, port: u16, database: &str, role: Role) -> Arc<HostState> {
    let key = (host.to_string(), port, database.to_string(), role);
    let mut all = HOSTS.lock();
    all.get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| {
            Arc::new(HostState {
                host: host.to_string(),
                port,
                database: database.to_string(),
                configured: role,
                status: Mutex::new(HostStatus::default()),
                manual_ban: Default::default(),
                builtins: Default::default(),
            })
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_role_follows_checks_and_bans_need_a_passing_check() {
        set_ban_timeout(0);
        let h = host_state("127.0.0.1", 1, "unit-auto", Role::Auto);
        assert_eq!(h.role(), Observed::Unknown);
        h.check_passed(false, Some(10));
        assert_eq!(h.role(), Observed::Primary);
        h.check_passed(true, Some(10));
        assert_eq!(h.role(), Observed::Replica);
        h.check_failed("refused");
        assert_eq!(h.role(), Observed::Unknown);
        assert!(
            h.is_banned(),
            "expired ban without a passing check still holds"
        );
        h.check_passed(true, None);
        assert!(!h.is_banned());
        h.set_lag(100, 10);
        assert!(h.is_banned());
        set_ban_timeout(60_000);
    }
}
