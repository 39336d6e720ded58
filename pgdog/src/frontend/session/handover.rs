//! A transaction-mode session moving to another pgdog at a restart (`frontend::handover`):
//! whether it can move now, the state it takes along, and the state it arrives with.
use super::listening::Listening;
use super::timeouts::stopped;
use super::unnamed::ClientUnnamed;
use super::{Session, SessionError};
use crate::config::PoolerMode;
use crate::frontend::handover::HandedSession;
use crate::frontend::prepared;
use crate::net::stream::Stream;
use crate::net::TxStatus;
use crate::router::read_write::RoleHint;
use std::os::fd::AsRawFd;

impl Session {
    /// The shutdown asked the session to end between transactions: it moves to the pgdog
    /// taking over when there is one and it can, else it ends with 57P01.
    pub(super) async fn stop_between_transactions(&mut self) -> SessionError {
        if self.info.is_killed() || crate::ops::handover::successor().is_none() {
            return stopped();
        }
        let Stream::Plain(tcp) = &self.client.stream else {
            return self.stays("a TLS connection");
        };
        let state = match self.movable_state() {
            Ok(state) => state,
            Err(why) => return self.stays(why),
        };
        let bytes = match serde_json::to_vec(&state) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("handover: session state: {e}");
                return stopped();
            }
        };
        match crate::ops::handover::pass_session(&bytes, tcp.as_raw_fd()).await {
            Ok(()) => SessionError::HandedOver,
            Err(e) => {
                tracing::warn!(
                    "handover of client {}@{}: {e}",
                    self.client.user,
                    self.client.database
                );
                stopped()
            }
        }
    }

    /// A client that cannot move ends as in any shutdown (57P01).
    fn stays(&self, why: &str) -> SessionError {
        tracing::info!(
            "client {}@{} not handed over: {why}",
            self.client.user,
            self.client.database
        );
        stopped()
    }

    /// The state to hand over, when nothing of the session is on a server or half-read;
    /// else why it cannot move.
    fn movable_state(&self) -> Result<HandedSession, &'static str> {
        if self.client.mode != PoolerMode::Transaction {
            return Err("session pooling");
        }
        if let Some(why) = self.pinned {
            return Err(why);
        }
        let between = self.server.is_none()
            && self.expected.is_empty()
            && self.status == TxStatus::Idle
            && self.pending.is_empty()
            && !self.pending_discard_all
            && self.aborted.is_none()
            && !self.copy_in
            && !self.skip_until_sync
            && !self.unsynced;
        if !between {
            return Err("in the middle of a request");
        }
        if !self.dealloc.is_empty() {
            return Err("a prepared DEALLOCATE or DISCARD ALL");
        }
        if !self.client.reader.is_empty() || !self.client.out.is_empty() {
            return Err("bytes in flight");
        }
        let login = self.info.login();
        Ok(HandedSession {
            user: self.client.user.clone(),
            database: self.client.database.clone(),
            application_name: login.application_name,
            params: self.client.params.clone(),
            pid: self.client.cancel.pid,
            secret: self.client.cancel.secret,
            statements: self
                .statements
                .iter()
                .map(|(name, p)| {
                    let s = &p.statement;
                    (name.clone(), s.query.clone(), s.param_types.clone())
                })
                .collect(),
            unnamed: self.unnamed.as_ref().map(ClientUnnamed::parse_bytes),
            role_hint: self.role_hint.map(|h| match h {
                RoleHint::Primary => "primary".into(),
                RoleHint::Replica => "replica".into(),
            }),
            write_lsn: self.write_lsn,
            channels: self
                .listening
                .as_ref()
                .map(Listening::channels)
                .unwrap_or_default(),
        })
    }

    /// Takes up the state a client brought from another pgdog.
    pub(crate) fn restore(&mut self, state: HandedSession) {
        for (name, query, types) in state.statements {
            self.statements
                .insert(name, prepared::intern(&query, &types));
        }
        self.unnamed = state.unnamed.map(ClientUnnamed::from_parse_bytes);
        self.role_hint = state.role_hint.as_deref().and_then(RoleHint::parse);
        self.write_lsn = state.write_lsn;
        if !state.channels.is_empty() {
            self.listening = Listening::resume(&self.shard, state.channels);
        }
    }
}
