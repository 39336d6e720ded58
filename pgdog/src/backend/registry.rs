//! All pools, built from the configuration and swapped whole on reload: pools whose settings
//! did not change are carried over with their connections; the others drain.
use super::pool::{Pool, PoolSettings};
use super::server::ServerTarget;
use crate::config::Settings;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Pools by (user, database) plus the settings they came from.
pub struct Registry {
    pub settings: Settings,
    pools: HashMap<(String, String), Pool>,
}

static CURRENT: RwLock<Option<Arc<Registry>>> = RwLock::new(None);
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Registry {
    /// Builds pools for every user entry, reusing `previous` pools with identical settings.
    pub fn build(settings: Settings, previous: Option<&Registry>) -> Registry {
        let g = &settings.config.general;
        let mut pools = HashMap::new();
        for user in &settings.users.users {
            let Some(db) = settings.primary(&user.database) else {
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
            let key = (user.name.clone(), user.database.clone());
            let reused = previous
                .and_then(|p| p.pools.get(&key))
                .filter(|p| p.target() == &target && p.settings() == &pool_settings)
                .cloned();
            pools.insert(
                key,
                reused.unwrap_or_else(|| Pool::new(target, pool_settings)),
            );
        }
        Registry { settings, pools }
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
            })
        })
    }

    pub fn pool(&self, user: &str, database: &str) -> Option<&Pool> {
        self.pools.get(&(user.to_string(), database.to_string()))
    }

    pub fn pools(&self) -> impl Iterator<Item = &Pool> {
        self.pools.values()
    }
}
