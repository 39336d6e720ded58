//! SET / RESET applied to the client's parameters once the transaction that ran them is
//! settled, or read back from the server when that is not certain.
use super::{Session, SetChange};
use crate::net::TxStatus;

impl Session {
    /// Applies SET/RESET once their transaction is settled. A single SET outside a transaction
    /// that succeeded is certain; otherwise (transaction blocks, savepoints, multi-statement
    /// queries, errors, the extended protocol) the values are read back from the server before
    /// it is released (see `verify_settings`).
    pub(super) fn settle_parameters(&mut self, status: TxStatus) {
        if status == TxStatus::InTransaction
            || status == TxStatus::Failed
            || !self.expected.is_empty()
        {
            return;
        }
        let failed = std::mem::take(&mut self.batch_failed);
        let uncertain = std::mem::take(&mut self.uncertain);
        let changes = std::mem::take(&mut self.pending);
        let discard_all = std::mem::take(&mut self.pending_discard_all);
        if discard_all && !failed {
            // DISCARD ALL only runs alone, outside a transaction.
            if let Some(s) = self.server.as_mut() {
                s.prepared.clear();
                s.set_settings(Default::default());
            }
            // Every named statement, not the unnamed one (prepared again where it is used).
            self.statements.retain(|name, _| name.is_empty());
        }
        if changes.is_empty() {
            return;
        }
        if failed || uncertain {
            let mut names: Vec<String> = Vec::new();
            for change in &changes {
                match change {
                    SetChange::Set(name, _)
                    | SetChange::Config(name, _)
                    | SetChange::Reset(name) => names.push(name.clone()),
                    SetChange::ResetAll => {
                        names.extend(self.client.params.names());
                        if let Some(s) = self.server.as_ref() {
                            names.extend(s.settings.keys().cloned());
                        }
                    }
                }
            }
            names.sort();
            names.dedup();
            self.verify = Some(names);
            return;
        }
        for change in &changes {
            self.client.params.apply(change);
        }
        if let Some(s) = self.server.as_mut() {
            // The server now runs with the client's values.
            if let Some((_, after)) = self.client.params.sync(&s.settings) {
                s.set_settings(after);
            }
        }
    }

    /// Reads the parameters in `verify` back from the server and records them as the client's
    /// (and the server's) values, then releases the server if it is idle.
    pub(super) async fn verify_settings(&mut self) {
        let Some(names) = self.verify.take() else {
            return;
        };
        let Some(server) = self.server.as_mut() else {
            return;
        };
        let columns: Vec<String> = names
            .iter()
            .map(|n| {
                format!(
                    "pg_catalog.current_setting({}, true)",
                    crate::net::quote::literal(n)
                )
            })
            .collect();
        match server
            .query_row(&format!("SELECT {}", columns.join(", ")))
            .await
        {
            Ok(values) if values.len() == names.len() => {
                for (name, value) in names.iter().zip(values) {
                    self.client.params.set_actual(name, value.as_deref());
                }
                let settings = server.settings.clone();
                if let Some((_, after)) = self.client.params.sync(&settings) {
                    server.set_settings(after);
                }
            }
            Ok(_) | Err(_) => {
                // Unknown state: do not hand this connection to anyone else.
                tracing::warn!(
                    "client {}@{}: could not read back session settings",
                    self.client.user,
                    self.client.database
                );
                server.discard();
                self.pin("unknown session settings");
            }
        }
        self.release_if_idle();
    }

    /// Runs `server_reset_query` on the server (query_parser off in transaction mode) and
    /// lets it go back to the pool; a failure closes it instead.
    pub(super) async fn reset_server(&mut self) {
        self.reset_due = false;
        let query = crate::registry::Registry::current()
            .settings
            .config
            .general
            .server_reset_query
            .clone();
        if let Some(server) = self.server.as_mut() {
            if !query.trim().is_empty() && server.execute(&query).await.is_err() {
                server.discard();
            }
            // Whatever the query reset, pgdog no longer vouches for the server's statements
            // and settings.
            server.prepared.clear();
            server.set_settings(Default::default());
        }
        self.reset_done = true;
        self.release_if_idle();
    }
}
