//! Read or write: which server of the database a session's next transaction goes to (see
//! `router::read_write` for what counts as a read), and what a read-only pool refuses.
use super::{Expect, Session};
use crate::config::PoolerMode;
use crate::frontend::read_only;
use crate::net::message::{self, read_parse, read_target};
use crate::net::tag::{frontend, target};
use crate::net::{Message, ProtocolError};
use crate::router::read_write::{self, RoleHint};

impl Session {
    /// `SET pgdog.role` / `RESET pgdog.role`, answered by pgdog; false for other statements.
    pub(super) fn answer_set_role(&mut self, sql: &str) -> bool {
        let Some(change) = read_write::set_role(sql) else {
            return false;
        };
        match change {
            Ok(hint) => {
                self.role_hint = hint;
                let tag = if hint.is_some() { "SET" } else { "RESET" };
                self.send(&message::command_complete(tag));
            }
            Err(value) => self.send(&message::error(
                "22023",
                &format!(
                    "invalid value for parameter \"pgdog.role\": \"{value}\" (primary or replica)"
                ),
            )),
        }
        self.ready_now();
        true
    }

    /// Whether a statement may go to a replica: only when the database has replicas, in
    /// transaction mode, and the parser proves it a read (or the client asked for one).
    /// `simple`: a Query message's text (parsed through the shape cache).
    pub(super) fn wants_read(&self, sql: &str, simple: bool) -> bool {
        if self.client.mode == PoolerMode::Session || !self.shard.splits_reads() {
            return false;
        }
        if let Some(hint) = read_write::comment_hint(sql).or(self.role_hint) {
            return hint == RoleHint::Replica;
        }
        let strategy = self.shard.policy().reads;
        let parsed = if simple {
            crate::router::ShapeCache::global().get(sql)
        } else {
            crate::router::QueryCache::global().get(sql)
        };
        parsed.is_ok_and(|parsed| read_write::is_read(&parsed.statements, sql, strategy))
    }

    /// Whether the extended-protocol message that attaches a server is a read (a Parse, or a
    /// Bind or Describe of a named statement, by its query).
    pub(super) fn message_reads(&self, m: &Message) -> Result<bool, ProtocolError> {
        if self.server.is_some() || !self.shard.splits_reads() {
            return Ok(false);
        }
        let named = match m.tag() {
            frontend::PARSE => {
                let text = self.client_text(read_parse(m)?.text);
                return Ok(self.wants_read(&text, false));
            }
            frontend::BIND => message::read_bind_names(m)?.1,
            frontend::DESCRIBE => match read_target(m)? {
                (target::STATEMENT, name) => name,
                _ => "".into(),
            },
            _ => "".into(),
        };
        Ok(self
            .statements
            .get(&*named)
            .is_some_and(|p| self.wants_read(&p.statement.query, false)))
    }

    /// read_your_writes: reads the primary's WAL insert position after this client's write
    /// transaction (its reads then wait for a replica that replayed it), then releases the
    /// server.
    pub(super) async fn record_write_lsn(&mut self) {
        self.fetch_lsn = false;
        self.on_primary = false;
        if let Some(server) = self.server.as_mut() {
            match server
                .query_row("SELECT pg_catalog.pg_current_wal_insert_lsn()")
                .await
            {
                Ok(row) => {
                    let lsn = row.first().cloned().flatten();
                    self.write_lsn = lsn
                        .as_deref()
                        .and_then(crate::replication::pgoutput::parse_lsn);
                }
                Err(e) => {
                    tracing::warn!(
                        "client {}@{}: reading the WAL position: {e}",
                        self.client.user,
                        self.client.database
                    );
                    server.discard();
                }
            }
        }
        self.release_if_idle();
    }

    /// A simple query that would turn a read-only pool's transactions read-write: refused
    /// (25006). In a transaction the server fails it too, so the transaction is aborted as
    /// Postgres would abort it.
    pub(super) async fn refuse_read_write(&mut self) {
        self.refuse(message::error(read_only::CODE, read_only::MESSAGE))
            .await;
    }

    /// Answers a simple query with `error` (and ReadyForQuery) instead of running it; inside a
    /// transaction the server's state follows (its transaction fails as an error there would).
    pub(super) async fn refuse(&mut self, error: Message) {
        if self.server.is_none() {
            self.send(&error);
            self.ready_now();
            return;
        }
        self.expected.push_back(Expect::Replace(error));
        self.expected.push_back(Expect::Ready);
        // A syntax error: what the server answers is replaced by the error above.
        self.send_to_server(&message::query("pgdog refused")).await;
    }
}
