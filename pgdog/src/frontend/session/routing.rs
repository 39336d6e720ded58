//! Read or write: which server of the database a session's next transaction goes to (see
//! `router::read_write` for what counts as a read).
use super::Session;
use crate::backend::Registry;
use crate::config::PoolerMode;
use crate::net::message::{self, read_parse, read_target};
use crate::net::{Message, ProtocolError};
use crate::router::read_write::{self, RoleHint};

impl Session {
    /// Whether a statement may go to a replica: only when the database has replicas, in
    /// transaction mode, and the parser proves it a read (or the client asked for one).
    pub(super) fn wants_read(&self, sql: &str) -> bool {
        if self.mode == PoolerMode::Session || !self.shard.splits_reads() {
            return false;
        }
        if let Some(hint) = read_write::comment_hint(sql).or(self.role_hint) {
            return hint == RoleHint::Replica;
        }
        let strategy = Registry::current()
            .settings
            .config
            .general
            .read_write_strategy;
        crate::router::cache::QueryCache::global()
            .get(sql)
            .is_ok_and(|parsed| read_write::is_read(&parsed.statements, sql, strategy))
    }

    /// Whether the extended-protocol message that attaches a server is a read (a Parse, or a
    /// Bind or Describe of a named statement, by its query).
    pub(super) fn message_reads(&self, m: &Message) -> Result<bool, ProtocolError> {
        if self.server.is_some() || !self.shard.splits_reads() {
            return Ok(false);
        }
        let named = match m.tag() {
            b'P' => return Ok(self.wants_read(read_parse(m)?.query)),
            b'B' => message::read_bind_names(m)?.1,
            b'D' => match read_target(m)? {
                (b'S', name) => name,
                _ => "",
            },
            _ => "",
        };
        Ok(self
            .statements
            .get(named)
            .is_some_and(|p| self.wants_read(&p.statement.query)))
    }
}
