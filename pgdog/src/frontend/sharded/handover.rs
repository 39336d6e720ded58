//! A sharded session moving to another pgdog at a restart (`frontend::handover`): whether it
//! can move now, the state it takes along, and the state it arrives with.
use super::{ShardedSession, Statement};
use crate::frontend::handover::{self, HandedRouting, HandedSession, HandedStatement};
use crate::frontend::session::SessionError;
use crate::net::TxStatus;
use crate::router::read_write::RoleHint;
use crate::router::route::Overrides;

impl ShardedSession {
    /// The shutdown asked the session to end between transactions: it moves to the pgdog
    /// taking over when there is one and it can, else it ends with 57P01.
    pub(super) async fn stop_between_transactions(&mut self) -> SessionError {
        handover::pass(&self.client, || self.movable_state()).await
    }

    /// The state to hand over, when nothing of the session is on a server or half-done;
    /// else why it cannot move.
    fn movable_state(&self) -> Result<HandedSession, &'static str> {
        handover::stays_on_server(self.client.mode, self.pinned)?;
        let between = self.servers.iter().all(|s| s.is_none())
            && self.tx.is_none()
            && self.status == TxStatus::Idle
            && !self.skip_until_sync
            && self.captured.is_none()
            && self.reconfigured.is_none()
            && !self.out_of_step;
        if !between {
            return Err("in the middle of a request");
        }
        let statements = self
            .statements
            .iter()
            .map(|(name, s)| HandedStatement {
                name: name.clone(),
                query: s.sql.to_string(),
                wire: None,
                param_types: s.param_types.clone(),
                inferred: s.inferred.clone(),
                generated: s.generated,
            })
            .collect();
        Ok(HandedSession {
            sharded: Some(HandedRouting {
                shard: self.overrides.shard,
                sharding_key: self.overrides.sharding_key.clone(),
                search_path: self.overrides.search_path.clone(),
            }),
            ..HandedSession::of_client(
                &self.client,
                statements,
                self.role_hint,
                self.write_lsns.clone(),
            )
        })
    }

    /// Takes up the state a client brought from another pgdog.
    pub(crate) fn restore(&mut self, state: HandedSession) {
        for s in state.statements {
            let statement = Statement {
                sql: s.query.into(),
                param_types: s.param_types,
                inferred: s.inferred,
                generated: s.generated,
            };
            self.statements.insert(s.name, statement);
        }
        self.role_hint = state.role_hint.as_deref().and_then(RoleHint::parse);
        self.write_lsns = state.write_lsns;
        let routing = state.sharded.unwrap_or_default();
        self.overrides = Overrides {
            shard: routing.shard,
            sharding_key: routing.sharding_key,
            search_path: routing.search_path,
        };
    }
}
