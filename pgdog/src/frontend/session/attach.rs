//! Attaching a server to the session and letting it go: the pause gate, a reloaded pool, the
//! checkout, the client's settings brought to the server; and a reload that made the database
//! sharded ending the session.
use super::{Session, SessionError};
use crate::backend::pool::PooledServer;
use crate::backend::ServerError;
use crate::net::message;
use crate::registry::Registry;

impl Session {
    /// This session's transactions are not mirrored (it replays another's).
    pub(crate) fn mirror_off(&mut self) {
        self.mirror = None;
    }

    /// Checks out a server (and brings its session parameters in line with the client's) if
    /// none is attached: waits while the database is paused, then takes the current pool.
    /// On failure the error is sent to the client and false returned; a database that became
    /// sharded ends the session.
    pub(super) async fn attach(&mut self, read: bool) -> Result<bool, SessionError> {
        if self.server.is_some() {
            return Ok(true);
        }
        if self.client.ticket.is_none() {
            self.client.ticket = Some(crate::backend::pause::enter(&self.client.gate).await);
        }
        let attached = self.attach_server(read).await?;
        if !attached {
            self.client.ticket = None;
        }
        Ok(attached)
    }

    /// Ends the session (FATAL 57P01) if a reload made its database sharded.
    pub(super) fn check_still_single(&mut self) -> Result<(), SessionError> {
        let current = Registry::generation();
        if current == self.client.checked_generation {
            return Ok(());
        }
        self.client.checked_generation = current;
        if Registry::current().router(&self.client.database).is_some() {
            return Err(SessionError::Reconfigured(format!(
                "database {} was reconfigured (resharded): reconnect",
                self.client.database
            )));
        }
        Ok(())
    }

    /// The registry generation its pools were looked up at (a later one makes it look again).
    pub fn set_generation(&mut self, generation: u64) {
        self.registry_generation = generation;
    }

    /// `attach` without waiting, the steady state of a transaction: attached at once when the
    /// database is not paused, its pools are as they were and an idle connection is free
    /// (not an async call chain: about 300 instructions a transaction, callgrind). False:
    /// `attach` does the rest (with the connection taken here, if its settings need syncing).
    pub(super) fn attach_now(&mut self, read: bool) -> bool {
        if self.server.is_some() {
            return true;
        }
        if self.registry_generation != Registry::generation() || self.taken.is_some() {
            return false;
        }
        if self.client.ticket.is_none() {
            match crate::backend::pause::try_enter(&self.client.gate) {
                Some(ticket) => self.client.ticket = Some(ticket),
                None => return false,
            }
        }
        let Some(server) = self.shard.try_checkout(read, self.min_lsn()) else {
            return false;
        };
        self.client.meter.waited_none();
        self.on_primary = !read && self.shard.splits_reads();
        if server.settings_fingerprint != self.client.params.fingerprint() {
            self.taken = Some(server);
            return false;
        }
        self.install(server);
        true
    }

    /// read_your_writes: a replica for this client's reads must have replayed this far.
    fn min_lsn(&self) -> Option<u64> {
        self.write_lsn
            .filter(|_| self.shard.policy().read_your_writes)
    }

    /// `server` serves the client from now on (its cancel requests go there).
    fn install(&mut self, server: PooledServer) {
        *self.client.cancel.slot.lock() = Some(server.cancel_key.clone());
        self.server = Some(server);
    }

    async fn attach_server(&mut self, read: bool) -> Result<bool, SessionError> {
        if let Some(server) = self.taken.take() {
            // (`attach_now` took it for this request: `read` and the pools are as then.)
            return self.sync_and_install(server).await;
        }
        // A reload may have replaced the pool: use the current one.
        if self.registry_generation != Registry::generation() {
            self.check_still_single()?;
            let registry = Registry::current();
            self.registry_generation = Registry::generation();
            match registry.shard(&self.client.user, &self.client.database) {
                Some(shard) => {
                    if !shard.same(&self.shard) {
                        self.shard = shard.clone();
                        self.read_only = shard.read_only();
                        self.client.mode = shard.mode();
                    }
                }
                None => {
                    let m = format!(
                        "user \"{}\" is no longer configured for database \"{}\"",
                        self.client.user, self.client.database
                    );
                    self.send(&message::error("28000", &m));
                    return Ok(false);
                }
            }
        }
        self.on_primary = !read && self.shard.splits_reads();
        let checkout = self
            .client
            .checkout(&self.shard, read, self.min_lsn())
            .await;
        let server = match checkout {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("client {}@{}: {e}", self.client.user, self.client.database);
                self.send(&message::error(&e.code(), &e.to_string()));
                return Ok(false);
            }
        };
        self.sync_and_install(server).await
    }

    /// Brings `server`'s session parameters in line with the client's, then attaches it;
    /// false when that failed (the error is out).
    async fn sync_and_install(&mut self, mut server: PooledServer) -> Result<bool, SessionError> {
        if server.settings_fingerprint != self.client.params.fingerprint() {
            if let Some((sql, after)) = self.client.params.sync(&server.settings) {
                if let Err(e) = server.execute(&sql).await {
                    let m = match e {
                        ServerError::Postgres(fields, _) => {
                            message::error(&fields.code, &fields.message)
                        }
                        other => {
                            server.discard();
                            message::error(&other.code(), &other.to_string())
                        }
                    };
                    self.send(&m);
                    return Ok(false);
                }
                server.set_settings(after);
            }
        }
        self.install(server);
        Ok(true)
    }

    pub(super) fn detach(&mut self) {
        self.unsynced = false;
        *self.client.cancel.slot.lock() = None;
        self.server = None;
        self.client.ticket = None;
    }
}
