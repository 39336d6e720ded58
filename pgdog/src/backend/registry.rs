//! All pools, built from the configuration and swapped whole on reload: pools whose settings
//! did not change are carried over with their connections; the others drain. The admin
//! database (`SHOW POOLS`, `RELOAD`) reads and replaces it too.
use super::pool::{Pool, PoolSettings};
use super::server::ServerTarget;
use crate::config::Settings;
use crate::router::{Router, Schema};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Pools by (user, database, shard) plus the settings they came from.
pub struct Registry {
    pub settings: Settings,
    pools: HashMap<(String, String, usize), Pool>,
    /// Routers of sharded databases (more than one shard, or declared shardable).
    routers: HashMap<String, Arc<Router>>,
}

static CURRENT: RwLock<Option<Arc<Registry>>> = RwLock::new(None);
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Registry {
    /// Builds pools for every user entry, reusing `previous` pools with identical settings.
    pub fn build(settings: Settings, previous: Option<&Registry>) -> Registry {
        let g = &settings.config.general;
        let mut pools = HashMap::new();
        for user in &settings.users.users {
            for shard in 0..settings.shards(&user.database) {
                let Some(db) = settings.shard_server(&user.database, shard) else {
                    continue;
                };
                let target = ServerTarget {
                    host: db.host.clone(),
                    port: db.port,
                    database: db.database_name().to_string(),
                    user: db.user.clone().unwrap_or_else(|| user.name.clone()),
                    password: db.password.clone().or_else(|| user.password.clone()),
                };
                let size = user
                    .pool_size
                    .or(db.pool_size)
                    .unwrap_or(g.default_pool_size)
                    .max(1);
                let pool_settings = PoolSettings {
                    size,
                    min: g.min_pool_size.min(size),
                    mode: user.pooler_mode.or(db.pooler_mode).unwrap_or(g.pooler_mode),
                    checkout_timeout: Duration::from_millis(g.checkout_timeout),
                    idle_timeout: Duration::from_millis(g.idle_timeout),
                    server_lifetime: Duration::from_millis(g.server_lifetime),
                    connect_timeout: Duration::from_millis(g.connect_timeout),
                };
                let key = (user.name.clone(), user.database.clone(), shard);
                let reused = previous
                    .and_then(|p| p.pools.get(&key))
                    .filter(|p| p.target() == &target && p.settings() == &pool_settings)
                    .cloned();
                pools.insert(
                    key,
                    reused.unwrap_or_else(|| Pool::new(target, pool_settings)),
                );
            }
        }
        let mut routers = HashMap::new();
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
            if (settings.shards(&db.name) < 2 && !declared) || routers.contains_key(&db.name) {
                continue;
            }
            match Schema::new(&settings, &db.name) {
                Ok(schema) => {
                    routers.insert(db.name.clone(), Arc::new(Router::new(schema)));
                }
                Err(e) => tracing::error!("database {}: {e}", db.name),
            }
        }
        Registry {
            settings,
            pools,
            routers,
        }
    }

    /// Installs `registry` as the current one; pools no longer used are shut down.
    pub fn install(registry: Registry) {
        let new = Arc::new(registry);
        let old = CURRENT.write().replace(new.clone());
        GENERATION.fetch_add(1, std::sync::atomic::Ordering::Release);
        if let Some(old) = old {
            for (key, pool) in &old.pools {
                let kept = new.pools.get(key).is_some_and(|p| p.same(pool));
                if !kept {
                    pool.shutdown();
                }
            }
        }
    }

    /// Bumped by every `install`: sessions compare it to know when to look their pool up again.
    pub fn generation() -> u64 {
        GENERATION.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn current() -> Arc<Registry> {
        CURRENT.read().clone().unwrap_or_else(|| {
            Arc::new(Registry {
                settings: Settings::default(),
                pools: HashMap::new(),
                routers: HashMap::new(),
            })
        })
    }

    /// The pool of shard 0 (the only one of an unsharded database).
    pub fn pool(&self, user: &str, database: &str) -> Option<&Pool> {
        self.pools.get(&(user.to_string(), database.to_string(), 0))
    }

    /// The pools of every shard of a database, in shard order.
    pub fn shard_pools(&self, user: &str, database: &str) -> Option<Vec<Pool>> {
        let shards = self.settings.shards(database);
        (0..shards)
            .map(|shard| {
                self.pools
                    .get(&(user.to_string(), database.to_string(), shard))
                    .cloned()
            })
            .collect()
    }

    /// The router of a sharded (or declared shardable) database.
    pub fn router(&self, database: &str) -> Option<Arc<Router>> {
        self.routers.get(database).cloned()
    }

    pub fn pools(&self) -> impl Iterator<Item = &Pool> {
        self.pools.values()
    }

    /// Every pool with its (user, database, shard), for the admin database's SHOW POOLS.
    pub fn pool_entries(&self) -> impl Iterator<Item = (&(String, String, usize), &Pool)> {
        self.pools.iter()
    }
}
