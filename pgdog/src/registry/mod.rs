//! All pools, built from the configuration and swapped whole on reload: pools whose settings
//! did not change are carried over with their connections; the others drain. The admin
//! database (`SHOW POOLS`, `RELOAD`) reads and replaces it too.
//!
//! It sits above the backend (pools, servers) and the router (each sharded database's router is
//! built here), so both stay free of each other; the health checker that walks it lives here too.
pub mod health;

use crate::backend::caps::CapTable;
use crate::backend::host::{self, HostState};
use crate::backend::pool::{Pool, PoolSettings};
use crate::backend::server::{PassThrough, ServerTarget};
use crate::backend::shard::{Host, ReadPolicy, Shard};
use crate::config::{ConfigError, Database, Settings, User};
use crate::router::verdict::DryRun;
use crate::router::{Router, Schema};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The configuration checks that need the sharding code: every `[[sharded_tables]]` entry's
/// placement (mapping values read as the key type, shards that exist). They live here, above
/// `config/` and `sharding/`, so the configuration layer does not call into sharding.
pub fn check_sharding(settings: &Settings) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: settings.config_path.clone(),
        message,
    };
    let mut maps = HashMap::new();
    for (i, m) in settings.config.bucket_maps.iter().enumerate() {
        let shards = settings.shards(&m.database);
        if shards == 0 {
            return Err(invalid(format!(
                "bucket_maps[{i}]: database `{}` is not configured",
                m.database
            )));
        }
        let buckets = crate::sharding::Buckets::new(m, shards)
            .map_err(|e| invalid(format!("bucket_maps[{i}]: {e}")))?;
        if maps.insert(m.database.as_str(), buckets).is_some() {
            return Err(invalid(format!(
                "bucket_maps[{i}]: database `{}` has two bucket maps",
                m.database
            )));
        }
    }
    for (i, t) in settings.config.sharded_tables.iter().enumerate() {
        let shards = settings.shards(&t.database);
        let buckets = maps.get(t.database.as_str());
        if let Err(e) = crate::sharding::Placement::new(t, shards, buckets) {
            return Err(invalid(format!("sharded_tables[{i}]: {e}")));
        }
    }
    Ok(())
}

/// What every entry point loads: both files read and checked (the configuration's own checks,
/// then [`check_sharding`]), then made active.
pub fn load_settings(config: &Path, users: &Path) -> Result<Settings, ConfigError> {
    let settings = Settings::read(config, users)?;
    check_sharding(&settings)?;
    settings.activate();
    Ok(settings)
}

/// Shards (each with its servers' pools) by (user, database), plus the settings they came from.
pub struct Registry {
    pub settings: Settings,
    shards: HashMap<(String, String), Vec<Shard>>,
    /// Shards of users found by `auth_query`, made at their first login ([`Registry::discover`]).
    discovered: RwLock<HashMap<(String, String), Discovered>>,
    /// `max_db_connections` / `max_user_connections`, carried over reloads.
    pub caps: CapTable,
    /// Routers of sharded databases (more than one shard, or declared shardable).
    routers: HashMap<String, Arc<Router>>,
    /// One-server databases in a dry run (sharded ones have it in their router).
    dry_runs: HashMap<String, Arc<DryRun>>,
}

/// How pgdog logs in to the servers as a user found by `auth_query`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// The client sent its password (cleartext method).
    Password(String),
    /// What its SCRAM proof or MD5 secret allows (no password known).
    PassThrough(PassThrough),
    /// Nothing (a `trust` or `cert` login with a SCRAM secret): the servers must let the
    /// user in without a password.
    Nothing,
}

/// A discovered user's shards and the credential their pools log in with.
struct Discovered {
    credential: Credential,
    shards: Vec<Shard>,
    /// Since when nothing used them (`sweep_unused`).
    unused_since: Option<std::time::Instant>,
}

/// Held while discovered users are added, and while `install` carries them over to the new
/// registry: a first login racing a reload lands in the registry that stays.
static DISCOVERY: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

static CURRENT: RwLock<Option<Arc<Registry>>> = RwLock::new(None);
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A server's pool for one user: reused from `previous` when nothing about it changed.
fn host_pool(
    settings: &Settings,
    caps: &CapTable,
    user: &User,
    pass_through: Option<&PassThrough>,
    db: &Database,
    previous: &[&Pool],
) -> (Pool, Arc<HostState>) {
    let g = &settings.config.general;
    let c = settings.pool_config(user, db);
    // Without a server password, the client's own (a [[databases]] user's too, as before).
    let password = c
        .server_password
        .clone()
        .or_else(|| c.client_password.then(|| user.password.clone()).flatten());
    let target = ServerTarget {
        host: db.host.clone(),
        port: db.port,
        database: db.database_name().to_string(),
        user: c.server_user.clone().unwrap_or_else(|| user.name.clone()),
        // The client's own secret only when pgdog logs in as the client.
        pass_through: pass_through
            .filter(|_| c.server_user.is_none() && password.is_none())
            .cloned(),
        password,
    };
    let pool_settings = PoolSettings {
        size: c.size,
        min: c.min,
        reserve: c.reserve,
        reserve_timeout: Duration::from_millis(g.reserve_pool_timeout),
        mode: c.mode,
        checkout_timeout: Duration::from_millis(c.checkout_timeout),
        clocks: c.clocks,
        idle_timeout: Duration::from_millis(c.idle_timeout),
        server_lifetime: Duration::from_millis(c.server_lifetime),
        connect_timeout: Duration::from_millis(g.connect_timeout),
        startup: c.startup_parameters(),
        read_only: c.read_only,
        caps: [
            caps.get(
                format!(
                    "max_db_connections of database \"{}\" on {}:{}",
                    db.name, db.host, db.port
                ),
                settings.max_db_connections(&db.name),
            ),
            caps.get(
                format!("max_user_connections of user \"{}\"", user.name),
                settings.max_user_connections(&user.name),
            ),
        ]
        .into_iter()
        .flatten()
        .collect(),
        check_delay: Duration::from_millis(g.server_check_delay),
        check_query: g.check_query(),
    };
    let state = host::host_state(&db.host, db.port, db.database_name(), db.role);
    let reused = previous
        .iter()
        .find(|p| {
            p.target() == &target && p.settings() == &pool_settings && Arc::ptr_eq(p.host(), &state)
        })
        .map(|p| (*p).clone());
    let pool = reused.unwrap_or_else(|| Pool::new(target, pool_settings, state.clone()));
    (pool, state)
}

/// The read policy of every shard, from `[general]`.
fn read_policy(settings: &Settings) -> ReadPolicy {
    let g = &settings.config.general;
    ReadPolicy {
        strategy: g.load_balancing_strategy,
        split: g.read_write_split,
        reads: g.read_write_strategy,
        read_your_writes: g.read_your_writes,
    }
}

/// A user's shards of its database, reusing `old` pools whose settings did not change.
fn user_shards(
    settings: &Settings,
    caps: &CapTable,
    user: &User,
    pass_through: Option<&PassThrough>,
    old: &[&Pool],
) -> Vec<Shard> {
    let policy = read_policy(settings);
    (0..settings.shards_served(&user.database))
        .map(|index| {
            let hosts: Vec<Host> = settings
                .database_hosts(&user.database, index)
                .iter()
                .map(|db| {
                    let (pool, state) = host_pool(settings, caps, user, pass_through, db, old);
                    Host { pool, state }
                })
                .collect();
            Shard::new(&user.database, index, hosts, policy)
        })
        .collect()
}

/// The router of `database`, with its dry run's planned router when `dry_run` gives a shard
/// count.
fn router_of(
    settings: &Settings,
    database: &str,
    dry_run: Option<usize>,
) -> Result<Router, crate::sharding::ShardingError> {
    let router = Router::new(Schema::new(settings, database)?);
    let Some(shards) = dry_run else {
        return Ok(router);
    };
    Ok(router.with_dry_run(dry_run_of(settings, database, shards)?))
}

/// The dry run of `database` as if it had `shards` shards.
fn dry_run_of(
    settings: &Settings,
    database: &str,
    shards: usize,
) -> Result<DryRun, crate::sharding::ShardingError> {
    Ok(DryRun {
        router: Router::new(Schema::with_shards(settings, database, shards)?),
        database: Arc::from(database),
    })
}

/// Every pool of some shards.
fn pools_of(shards: &[Shard]) -> impl Iterator<Item = &Pool> {
    shards
        .iter()
        .flat_map(|s| s.hosts().iter().map(|h| &h.pool))
}

impl Registry {
    /// Builds pools for every user entry, reusing `previous` pools with identical settings.
    pub fn build(settings: Settings, previous: Option<&Registry>) -> Registry {
        host::set_ban_timeout(settings.config.general.ban_timeout);
        crate::backend::mirror::configure(&settings);
        let caps = CapTable::carried(previous.map(|p| &p.caps));
        let mut shards = HashMap::new();
        // Users of the fallback database get pools per database at login (`discover`).
        let users = settings.users.users.iter();
        // So do users whose servers see only what the client proves (pass-through).
        let users = users.filter(|u| !settings.logs_in_as_client(u));
        for user in users.filter(|u| u.database != crate::config::FALLBACK_DATABASE) {
            let key = (user.name.clone(), user.database.clone());
            let old: Vec<&Pool> = previous
                .and_then(|p| p.shards.get(&key))
                .map(|v| pools_of(v).collect())
                .unwrap_or_default();
            shards.insert(key, user_shards(&settings, &caps, user, None, &old));
        }
        let mut routers = HashMap::new();
        let mut dry_runs = HashMap::new();
        for db in &settings.config.databases {
            // A one-server database declared shardable (it has [[sharded_tables]] or
            // [[omnisharded_tables]]) is served by sharded sessions too, so a reshard's cutover
            // (1 -> N shards) moves its clients without reconnecting them.
            let declared = settings
                .config
                .sharded_tables
                .iter()
                .any(|t| t.database == db.name)
                || settings
                    .config
                    .omnisharded_tables
                    .iter()
                    .any(|t| t.database == db.name);
            // A one-server database in a dry run keeps its one-server sessions, which count
            // each statement's verdict by the planned layout.
            let dry_run = settings.dry_run(&db.name);
            if let (Some(shards), 1) = (dry_run, settings.shards(&db.name)) {
                match dry_run_of(&settings, &db.name, shards) {
                    Ok(d) => {
                        dry_runs.insert(db.name.clone(), Arc::new(d));
                    }
                    Err(e) => tracing::error!("database {}: {e}", db.name),
                }
                continue;
            }
            if (settings.shards(&db.name) < 2 && !declared) || routers.contains_key(&db.name) {
                continue;
            }
            match router_of(&settings, &db.name, dry_run) {
                Ok(router) => {
                    routers.insert(db.name.clone(), Arc::new(router));
                }
                Err(e) => tracing::error!("database {}: {e}", db.name),
            }
        }
        Registry {
            settings,
            shards,
            discovered: RwLock::new(HashMap::new()),
            caps,
            routers,
            dry_runs,
        }
    }

    /// The shards of a user found by `auth_query` (or served by the fallback database, or
    /// logging in by pass-through) for `database`, made at its first login. A login with
    /// another credential (a changed password, another rotation secret, the other method)
    /// replaces them only once that credential has logged in to the server, so a client with
    /// a stale secret cannot take working pools away from the others; `Nothing` (a trust or
    /// cert login) never replaces any. `None` when the database no longer makes pools at login.
    pub async fn discover(
        user: &str,
        database: &str,
        credential: Credential,
    ) -> Option<Vec<Shard>> {
        let current = {
            let _guard = DISCOVERY.lock();
            let registry = Registry::current();
            if !registry.discoverable(user, database) {
                return None;
            }
            let key = (user.to_string(), database.to_string());
            let mut map = registry.discovered.write();
            match map.get(&key) {
                Some(d) if d.credential == credential || credential == Credential::Nothing => {
                    return Some(d.shards.clone())
                }
                Some(d) => d.shards.clone(),
                None => {
                    let shards = registry.discovered_shards(user, database, &credential, &[]);
                    let entry = Discovered {
                        credential,
                        shards: shards.clone(),
                        unused_since: None,
                    };
                    map.insert(key, entry);
                    return Some(shards);
                }
            }
        };
        // Another credential: it must log in before it replaces the pools.
        let fresh = Registry::current().discovered_shards(user, database, &credential, &[]);
        let probe = fresh
            .first()
            .and_then(|s| s.hosts().first())
            .map(|h| h.pool.target().clone());
        let timeout = Duration::from_millis(crate::config::active().connect_timeout);
        let works = match probe {
            Some(target) => match crate::backend::server::Server::connect(&target, timeout).await {
                Ok(server) => {
                    server.terminate().await;
                    true
                }
                Err(e) => {
                    tracing::info!("{user}@{database}: a login with another secret could not log in to {} ({e}); its pools stay", target.addr());
                    false
                }
            },
            None => false,
        };
        if !works {
            return Some(current);
        }
        let _guard = DISCOVERY.lock();
        let registry = Registry::current();
        let key = (user.to_string(), database.to_string());
        let mut map = registry.discovered.write();
        let entry = Discovered {
            credential,
            shards: fresh.clone(),
            unused_since: None,
        };
        let replaced = map.insert(key, entry);
        drop(map);
        if let Some(old) = replaced {
            // Sessions holding the old pools look theirs up again (as after a reload) and move
            // to the new credential's pools; the old ones drain.
            GENERATION.fetch_add(1, std::sync::atomic::Ordering::Release);
            pools_of(&old.shards).for_each(Pool::shutdown);
        }
        Some(fresh)
    }

    /// Drops the pools made at login (auth_query and pass-through users, databases of the
    /// fallback `*`) that no session and no checkout used for `autodb_idle_timeout`
    /// (PgBouncer's key; 0: kept): their connections close and SHOW POOLS and the metrics stop
    /// listing them. The user's next login makes them again. Called once a second.
    pub fn sweep_unused() {
        let timeout = crate::config::active().autodb_idle_timeout;
        if timeout == 0 {
            return;
        }
        let timeout = Duration::from_millis(timeout);
        let _guard = DISCOVERY.lock();
        let registry = Registry::current();
        let now = std::time::Instant::now();
        let mut dropped = Vec::new();
        registry.discovered.write().retain(|(user, database), d| {
            if d.shards.iter().any(Shard::in_use) {
                d.unused_since = None;
                return true;
            }
            let since = *d.unused_since.get_or_insert(now);
            if now.saturating_duration_since(since) < timeout {
                return true;
            }
            tracing::info!(
                "{user}@{database}: pools made at login unused for autodb_idle_timeout: dropped"
            );
            dropped.extend(pools_of(&d.shards).cloned());
            false
        });
        dropped.iter().for_each(Pool::shutdown);
    }

    /// Forgets the pools made at login for (user, database) (their first connection failed:
    /// a database the fallback's server does not have), so that made-up names leave nothing.
    pub fn forget(user: &str, database: &str) {
        let _guard = DISCOVERY.lock();
        let registry = Registry::current();
        let key = (user.to_string(), database.to_string());
        let removed = registry.discovered.write().remove(&key);
        for pool in removed.iter().flat_map(|d| pools_of(&d.shards)) {
            pool.shutdown();
        }
    }

    /// Whether `user` may get pools for `database` at login: the database looks users up
    /// with `auth_query`, the fallback database `*` serves it, or users.toml's entry logs in
    /// to the servers by pass-through.
    fn discoverable(&self, user: &str, database: &str) -> bool {
        let s = &self.settings;
        s.auth_query(database).is_some()
            || s.served_by_fallback(database)
            || s.user(user, database)
                .is_some_and(|u| s.logs_in_as_client(u))
    }

    fn discovered_shards(
        &self,
        user: &str,
        database: &str,
        credential: &Credential,
        old: &[&Pool],
    ) -> Vec<Shard> {
        let entry = User {
            name: user.to_string(),
            database: database.to_string(),
            password: match credential {
                Credential::Password(p) => Some(p.clone()),
                _ => None,
            },
            ..Default::default()
        };
        let pass_through = match credential {
            Credential::PassThrough(p) => Some(p),
            _ => None,
        };
        user_shards(&self.settings, &self.caps, &entry, pass_through, old)
    }

    /// Discovered users of `old` whose database is still discoverable (and who are not in
    /// users.toml now), with their pools carried over where nothing changed.
    fn carry_discovered(&self, old: &Registry) {
        let old_map = old.discovered.read();
        let mut map = self.discovered.write();
        for ((user, database), d) in old_map.iter() {
            let key = (user.clone(), database.clone());
            if !self.discoverable(user, database) || self.shards.contains_key(&key) {
                continue;
            }
            let pools: Vec<&Pool> = pools_of(&d.shards).collect();
            let shards = self.discovered_shards(user, database, &d.credential, &pools);
            map.insert(
                (user.clone(), database.clone()),
                Discovered {
                    credential: d.credential.clone(),
                    shards,
                    unused_since: d.unused_since,
                },
            );
        }
    }

    /// Installs `registry` as the current one; pools no longer used are shut down.
    pub fn install(registry: Registry) {
        let g = &registry.settings.config.general;
        crate::config::set_active(g);
        crate::router::QueryCache::global().resize(g.query_cache_limit);
        crate::router::ShapeCache::global().resize(g.query_shape_cache_limit);
        crate::backend::prepared::set_limit(g.prepared_statements_limit);
        let guard = DISCOVERY.lock();
        if let Some(old) = CURRENT.read().clone() {
            registry.carry_discovered(&old);
        }
        let new = Arc::new(registry);
        let old = CURRENT.write().replace(new.clone());
        GENERATION.fetch_add(1, std::sync::atomic::Ordering::Release);
        drop(guard);
        if let Some(old) = old {
            let kept: Vec<Pool> = new.pools().collect();
            for pool in old.pools() {
                if !kept.iter().any(|p| p.same(&pool)) {
                    pool.shutdown();
                }
            }
        }
        health::wake();
    }

    /// Bumped by every `install`: sessions compare it to know when to look their pool up again.
    pub fn generation() -> u64 {
        GENERATION.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn current() -> Arc<Registry> {
        CURRENT.read().clone().unwrap_or_else(|| {
            Arc::new(Registry {
                settings: Settings::default(),
                shards: HashMap::new(),
                discovered: RwLock::new(HashMap::new()),
                caps: CapTable::default(),
                routers: HashMap::new(),
                dry_runs: HashMap::new(),
            })
        })
    }

    /// Shard 0 (the only one of an unsharded database).
    pub fn shard(&self, user: &str, database: &str) -> Option<Shard> {
        self.shards(user, database)?.into_iter().next()
    }

    /// Every shard of a database, in shard order (users.toml's, else discovered ones).
    pub fn shards(&self, user: &str, database: &str) -> Option<Vec<Shard>> {
        let key = (user.to_string(), database.to_string());
        match self.shards.get(&key) {
            Some(v) => Some(v.clone()),
            None => self.discovered.read().get(&key).map(|d| d.shards.clone()),
        }
    }

    /// Whether (user, database) is a user found by `auth_query` (not in users.toml).
    pub fn is_discovered(&self, user: &str, database: &str) -> bool {
        let key = (user.to_string(), database.to_string());
        !self.shards.contains_key(&key) && self.discovered.read().contains_key(&key)
    }

    /// The primary pools of every shard (for two-phase recovery); None if a shard has none.
    pub fn primary_pools(&self, user: &str, database: &str) -> Option<Vec<Pool>> {
        self.shards(user, database)?
            .iter()
            .map(|s| s.primary().ok().cloned())
            .collect()
    }

    /// The router of a sharded (or declared shardable) database.
    pub fn router(&self, database: &str) -> Option<Arc<Router>> {
        self.routers.get(database).cloned()
    }

    /// The dry run of a one-server database.
    pub fn dry_run(&self, database: &str) -> Option<Arc<DryRun>> {
        self.dry_runs.get(database).cloned()
    }

    /// Every server pool (discovered users' too).
    pub fn pools(&self) -> impl Iterator<Item = Pool> {
        self.shard_entries()
            .flat_map(|(_, s)| s.hosts().iter().map(|h| h.pool.clone()).collect::<Vec<_>>())
    }

    /// Every shard with its (user, database), for the admin database's SHOW POOLS.
    pub fn shard_entries(&self) -> impl Iterator<Item = ((String, String), Shard)> {
        let mut all: Vec<((String, String), Shard)> = Vec::new();
        for (key, list) in &self.shards {
            all.extend(list.iter().map(|s| (key.clone(), s.clone())));
        }
        for (key, d) in self.discovered.read().iter() {
            all.extend(d.shards.iter().map(|s| (key.clone(), s.clone())));
        }
        all.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_settings_refuses_a_placement_on_a_missing_shard() {
        let dir = crate::scratch::Scratch::new("pgdog-registry");
        let mut config = String::new();
        for shard in 0..2 {
            config.push_str(&format!(
                "[[databases]]\nname = \"app\"\nshard = {shard}\nport = {}\n\n",
                5432 + shard
            ));
        }
        config.push_str(
            "[[sharded_tables]]\ndatabase = \"app\"\nname = \"users\"\ncolumn = \"id\"\n\
             data_type = \"bigint\"\n\n[[sharded_tables.mapping]]\nvalues = [1]\nshard = 5\n",
        );
        let (c, u) = (
            dir.write("pgdog.toml", &config),
            dir.write("users.toml", ""),
        );
        // The configuration layer alone accepts it; the entry points' load refuses it.
        assert!(Settings::read(&c, &u).is_ok());
        let err = load_settings(&c, &u).unwrap_err().to_string();
        assert!(
            err.contains("sharded_tables[0]") && err.contains("shard 5 does not exist"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod discovery_tests {
    use super::*;

    #[tokio::test]
    async fn the_fallback_database_gives_pools_per_database_at_login() {
        let dir = crate::scratch::Scratch::new("pgdog-registry-fallback");
        let c = dir.write(
            "pgdog.toml",
            "[[databases]]\nname = \"*\"\nport = 5999\nuser = \"postgres\"\n",
        );
        let u = dir.write(
            "users.toml",
            "[[users]]\nname = \"app\"\ndatabase = \"*\"\npassword = \"pw\"\n",
        );
        let settings = load_settings(&c, &u).unwrap();
        assert!(settings.served_by_fallback("other"));
        Registry::install(Registry::build(settings, None));
        let registry = Registry::current();
        assert!(registry.shard("app", "other").is_none());
        let shards = Registry::discover("app", "other", Credential::Password("pw".into()))
            .await
            .expect("discovered");
        assert_eq!(shards.len(), 1);
        let target = shards[0].hosts()[0].pool.target().clone();
        assert_eq!(
            (target.database.as_str(), target.user.as_str()),
            ("other", "postgres")
        );
        assert!(registry.is_discovered("app", "other"));
        // A configured name is not served by the fallback.
        assert!(!registry.settings.served_by_fallback("*"));
    }
}
