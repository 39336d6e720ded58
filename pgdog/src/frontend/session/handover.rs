//! A transaction-mode session moving to another pgdog at a restart (`frontend::handover`):
//! whether it can move now, the state it takes along, and the state it arrives with.
use super::listening::Listening;
use super::unnamed::ClientUnnamed;
use super::{Session, SessionError};
use crate::backend::prepared;
use crate::frontend::handover::{self, HandedSession, HandedStatement};
use crate::net::TxStatus;
use crate::router::read_write::RoleHint;

impl Session {
    /// The shutdown asked the session to end between transactions: it moves to the pgdog
    /// taking over when there is one and it can, else it ends with 57P01.
    pub(super) async fn stop_between_transactions(&mut self) -> SessionError {
        handover::pass(&self.client, || self.movable_state()).await
    }

    /// The state to hand over, when nothing of the session is on a server or half-done;
    /// else why it cannot move.
    fn movable_state(&self) -> Result<HandedSession, &'static str> {
        handover::stays_on_server(self.client.mode, self.pinned)?;
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
        let statements = self
            .statements
            .iter()
            .map(|(name, p)| HandedStatement {
                name: name.clone(),
                query: p.statement.query.clone(),
                wire: p.statement.wire.as_deref().map(<[u8]>::to_vec),
                param_types: p.statement.param_types.clone(),
                inferred: Vec::new(),
                generated: 0,
            })
            .collect();
        Ok(HandedSession {
            unnamed: self.unnamed.as_ref().map(ClientUnnamed::parse_bytes),
            channels: self
                .listening
                .as_ref()
                .map(Listening::channels)
                .unwrap_or_default(),
            answered: serde_json::to_value(&self.dealloc).map_err(|_| "its prepared statements")?,
            ..HandedSession::of_client(
                &self.client,
                statements,
                self.role_hint,
                vec![self.write_lsn],
            )
        })
    }

    /// Takes up the state a client brought from another pgdog.
    pub(crate) fn restore(&mut self, state: HandedSession) {
        for s in state.statements {
            let wire = s.wire.as_deref().unwrap_or(s.query.as_bytes());
            let settings = self.client.params.fingerprint();
            let p = prepared::intern_wire(&s.query, wire, &s.param_types, settings);
            self.statements.insert(s.name, p);
        }
        self.unnamed = state.unnamed.map(ClientUnnamed::from_parse_bytes);
        self.dealloc = serde_json::from_value(state.answered).unwrap_or_default();
        self.role_hint = state.role_hint.as_deref().and_then(RoleHint::parse);
        self.write_lsn = state.write_lsns.first().copied().flatten();
        if !state.channels.is_empty() {
            self.listening = Listening::resume(&self.shard, state.channels);
        }
    }
}
