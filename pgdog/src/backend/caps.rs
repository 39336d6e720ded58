//! Caps on server connections across pools, with PgBouncer's meaning: `max_db_connections`
//! (one database, every user's pools) and `max_user_connections` (one user, every database).
//! A pool that needs a new server connection takes a slot of each cap it is under, first come
//! first served (a fair semaphore), waiting at most the checkout's time; the slot goes with the
//! connection and is freed when it closes. When a cap is full and another pool under it holds
//! an idle connection, that connection is closed for the waiting client, as PgBouncer's
//! `evict_connection` does (warm `min_pool_size` connections included). Reusing an idle
//! connection of the pool takes no slot: the hot path does not see the caps.
use std::sync::{Arc, Weak};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A pool under a cap, as the cap sees it: one that can give up an idle connection.
pub trait Evict: Send + Sync {
    /// When its least recently used idle connection was last used, if it has one.
    fn oldest_idle(&self) -> Option<std::time::Instant>;
    /// Closes its least recently used idle connection (its slots are freed as it closes);
    /// false if it had none.
    fn evict_idle(&self) -> bool;
}

/// One cap: its name (`database app`, `user alice`), its limit and its free slots.
pub struct Cap {
    pub name: String,
    pub limit: usize,
    slots: Arc<Semaphore>,
    /// The pools under it (dropped pools fall out as they are met).
    members: parking_lot::Mutex<Vec<Weak<dyn Evict>>>,
}

impl std::fmt::Debug for Cap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cap({}, {}/{})", self.name, self.in_use(), self.limit)
    }
}

/// Caps are shared by identity: two pools under the same cap hold the same `Arc<Cap>`.
impl PartialEq for Cap {
    fn eq(&self, other: &Cap) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Cap {}

impl Cap {
    pub fn new(name: String, limit: usize) -> Arc<Cap> {
        Arc::new(Cap {
            name,
            limit,
            slots: Arc::new(Semaphore::new(limit)),
            members: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// `pool` takes slots of this cap.
    pub fn join(&self, pool: Weak<dyn Evict>) {
        let mut members = self.members.lock();
        members.retain(|m| m.strong_count() > 0);
        members.push(pool);
    }

    /// Closes the idle connection, of any pool under the cap, that was used least recently;
    /// false if no pool has one.
    fn evict_one(&self) -> bool {
        let pools: Vec<Arc<dyn Evict>> = self
            .members
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let oldest = pools
            .iter()
            .filter_map(|p| p.oldest_idle().map(|at| (at, p)))
            .min_by_key(|(at, _)| *at);
        match oldest {
            Some((_, pool)) => pool.evict_idle(),
            None => false,
        }
    }

    /// Server connections holding a slot now.
    pub fn in_use(&self) -> usize {
        self.limit.saturating_sub(self.slots.available_permits())
    }
}

/// The slots a new server connection holds (freed when it is dropped).
pub type Slots = Vec<OwnedSemaphorePermit>;

/// A slot of every cap, waiting in arrival order until `deadline`; `Err` names the cap that
/// stayed full.
pub async fn take(caps: &[Arc<Cap>], deadline: tokio::time::Instant) -> Result<Slots, String> {
    let mut slots = Vec::with_capacity(caps.len());
    for cap in caps {
        if let Ok(slot) = cap.slots.clone().try_acquire_owned() {
            slots.push(slot);
            continue;
        }
        // Full: an idle connection of another pool under it makes room (its slot is freed
        // when it has closed, a moment later; the wait below takes it in arrival order).
        if cap.evict_one() {
            tracing::info!(
                "{} reached: closed an idle connection for a waiting client",
                cap.name
            );
        }
        let wait = tokio::time::timeout_at(deadline, cap.slots.clone().acquire_owned());
        match wait.await {
            Ok(Ok(slot)) => slots.push(slot),
            _ => return Err(format!("{} = {}", cap.name, cap.limit)),
        }
    }
    Ok(slots)
}

/// A slot of every cap if all have one free now (warm connections do not wait).
pub fn try_take(caps: &[Arc<Cap>]) -> Option<Slots> {
    caps.iter()
        .map(|c| c.slots.clone().try_acquire_owned().ok())
        .collect()
}

/// Every cap by name, carried from one registry to the next: a cap whose limit did not
/// change keeps counting the connections that hold its slots.
#[derive(Default)]
pub struct CapTable {
    caps: parking_lot::Mutex<std::collections::HashMap<String, Arc<Cap>>>,
}

impl CapTable {
    /// A table starting with `previous`'s caps.
    pub fn carried(previous: Option<&CapTable>) -> CapTable {
        let caps = previous.map(|p| p.caps.lock().clone()).unwrap_or_default();
        CapTable {
            caps: parking_lot::Mutex::new(caps),
        }
    }

    /// The cap named `name` with `limit` (0: none): the existing one when its limit is the
    /// same, else a new one (the old one's connections drain with their pools).
    pub fn get(&self, name: String, limit: usize) -> Option<Arc<Cap>> {
        if limit == 0 {
            return None;
        }
        let mut caps = self.caps.lock();
        if let Some(cap) = caps.get(&name).filter(|c| c.limit == limit) {
            return Some(cap.clone());
        }
        let cap = Cap::new(name.clone(), limit);
        caps.insert(name, cap.clone());
        Some(cap)
    }

    /// Every cap, by name.
    pub fn list(&self) -> Vec<Arc<Cap>> {
        let mut all: Vec<Arc<Cap>> = self.caps.lock().values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn slots_are_held_by_connections_and_waiters_served_in_order() {
        let db = Cap::new("max_db_connections of app".into(), 2);
        let user = Cap::new("max_user_connections of bob".into(), 5);
        let caps = vec![db.clone(), user.clone()];
        let soon = || tokio::time::Instant::now() + Duration::from_millis(50);
        let a = take(&caps, soon()).await.unwrap();
        let _b = take(&caps, soon()).await.unwrap();
        assert_eq!((db.in_use(), user.in_use()), (2, 2));
        // Full: a new connection waits, then fails naming the cap.
        let err = take(&caps, soon()).await.unwrap_err();
        assert!(err.contains("app") && err.contains("= 2"), "{err}");
        assert!(try_take(&caps).is_none());
        // A connection closing frees its slot for the next one.
        drop(a);
        assert!(take(&caps, soon()).await.is_ok());
        assert_eq!(db, db.clone());
        assert_ne!(*db, *Cap::new("max_db_connections of app".into(), 2));
    }
}
