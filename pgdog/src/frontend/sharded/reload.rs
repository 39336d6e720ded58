//! The pause gate and configuration reloads for a sharded session: before routing, a session
//! without servers waits while its database is paused, then takes the current pools and router
//! (a new shard count is taken outside a transaction; a database that is no longer sharded ends
//! the session with FATAL 57P01).
use super::{ClientError, ShardedSession};

impl ShardedSession {
    /// Waits while the database is paused (unless this session already holds a pass: its
    /// transaction or servers), then takes a reloaded configuration. Called before routing.
    pub(super) async fn pass_gate(&mut self) -> Result<(), ClientError> {
        if self.client.ticket.is_some() {
            return Ok(());
        }
        let ticket = crate::backend::pause::enter(&self.client.gate).await;
        self.refresh_after_reload()?;
        self.client.ticket = Some(ticket);
        Ok(())
    }

    /// Gives the pass back once no server is attached and no transaction is open.
    pub(super) fn release_ticket(&mut self) {
        if self.tx.is_none() && self.servers.iter().all(|s| s.is_none()) {
            self.client.ticket = None;
        }
    }

    /// Marks the session for FATAL 57P01 if a reload made its database unsharded.
    pub(super) fn check_still_sharded(&mut self) {
        let current = crate::registry::Registry::generation();
        if current == self.client.checked_generation {
            return;
        }
        self.client.checked_generation = current;
        let registry = crate::registry::Registry::current();
        if registry.router(&self.client.database).is_none()
            && registry
                .shard(&self.client.user, &self.client.database)
                .is_some()
        {
            let _ = self.reconfigure_error();
        }
    }

    /// The FATAL that ends a session whose database changed under it.
    pub(super) fn reconfigure_error(&mut self) -> ClientError {
        let why = format!(
            "database {} was reconfigured (resharded): reconnect",
            self.client.database
        );
        self.reconfigured = Some(why.clone());
        ClientError::new("57P01", why)
    }

    /// A reload may have replaced the pools and the router: take the current ones while no
    /// server is attached (a transaction in progress finishes on the ones it has). A new
    /// number of shards is taken in place outside a transaction block; a database that is no
    /// longer sharded ends the session.
    pub(super) fn refresh_after_reload(&mut self) -> Result<(), ClientError> {
        let current = crate::registry::Registry::generation();
        if current == self.generation || self.servers.iter().any(|s| s.is_some()) {
            return Ok(());
        }
        let registry = crate::registry::Registry::current();
        if registry.router(&self.client.database).is_none()
            && registry
                .shard(&self.client.user, &self.client.database)
                .is_some()
        {
            return Err(self.reconfigure_error());
        }
        self.generation = current;
        let (Some(shards), Some(router)) = (
            registry.shards(&self.client.user, &self.client.database),
            registry.router(&self.client.database),
        ) else {
            return Err(ClientError::new(
                "28000",
                format!(
                    "user \"{}\" is no longer configured for sharded database \"{}\"",
                    self.client.user, self.client.database
                ),
            ));
        };
        if shards.len() != self.shards.len() {
            if self.tx.is_some() {
                return Err(self.reconfigure_error());
            }
            self.servers = shards.iter().map(|_| None).collect();
            self.on_replica = shards.iter().map(|_| false).collect();
        }
        self.client.mode = shards.first().map(|s| s.mode()).unwrap_or(self.client.mode);
        self.shards = shards;
        self.router = router;
        Ok(())
    }
}
