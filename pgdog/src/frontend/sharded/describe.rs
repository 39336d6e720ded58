//! Describe of a prepared statement: any one shard can answer (every shard has the same
//! schema), so the statement is prepared there and its ParameterDescription and RowDescription
//! are relayed.
use super::{in_client_encoding, ClientError, ShardedSession, Statement};
use crate::backend::prepared;
use crate::net::tag::{backend, frontend, target};
use crate::net::TxStatus;
use crate::net::{message, Message};
use bytes::BytesMut;

impl ShardedSession {
    /// With schema-based sharding: the shard of the schemas `sql` names (tables of a schema
    /// exist only there).
    fn schema_shard(&self, sql: &str) -> Option<usize> {
        let schema = &self.router.schema;
        if schema.schemas.is_empty() {
            return None;
        }
        let parsed = crate::router::QueryCache::global().get(sql).ok()?;
        let st = parsed.statements.first()?;
        crate::router::schemas::shard(schema, st, sql, &self.overrides.search_path)
            .ok()
            .flatten()
    }

    /// Relays the statement's description; returns the parameter types the server inferred.
    /// When any shard will do, a shard whose connection is lost before it answered (a server
    /// that went down) gives way to the next one.
    pub(super) async fn describe_statement(
        &mut self,
        st: &Statement,
    ) -> Result<Vec<i32>, ClientError> {
        if is_explain(&st.sql) {
            // pgdog answers EXPLAIN itself (the route, then each shard's plan), in text.
            self.send(&message::parameter_description(&[]));
            let plan = crate::net::rows::Field::computed("QUERY PLAN", 25, -1);
            self.send(&crate::net::rows::row_description(&[plan]));
            return Ok(Vec::new());
        }
        let fixed = self.overrides.shard.or(self.schema_shard(&st.sql)).or(self
            .tx
            .as_ref()
            .and_then(|t| t.begun.iter().position(|b| *b)));
        let candidates: Vec<usize> = match fixed {
            Some(s) => vec![s],
            None if self.tx.is_some() => vec![0],
            None => (0..self.shards.len()).collect(),
        };
        let mut last = None;
        // Inside a transaction a failed shard fails it: no other shard is tried.
        let any = fixed.is_none() && self.tx.is_none();
        for shard in candidates {
            if let Err(e) = self.server(shard).await {
                // Not reached (down, starting up, banned): another shard answers the same.
                if !any || !e.code.starts_with(['0', '5']) {
                    return Err(e);
                }
                last = Some(e);
                continue;
            }
            match self.describe_on(shard, st).await {
                Ok((types, answer)) => {
                    answer.iter().for_each(|m| self.send(m));
                    return Ok(types);
                }
                Err(e) if any && e.code.starts_with("08") && e.raw.is_none() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| ClientError::new("08006", "no shard to describe on")))
    }

    /// The description from `shard`: the parameter types and the messages for the client.
    async fn describe_on(
        &mut self,
        shard: usize,
        st: &Statement,
    ) -> Result<(Vec<i32>, Vec<Message>), ClientError> {
        let codec = self.client.codec;
        let server = self.server(shard).await?;
        let p = prepared::intern(&st.sql, &st.param_types, 0);
        let mut buf = BytesMut::new();
        let mut parsed_now = false;
        if !server.prepared.contains(&p.id) {
            let text = in_client_encoding(codec, &st.sql)?;
            buf.extend_from_slice(
                message::parse_bytes(p.server_name(), &text, &st.param_types).bytes(),
            );
            server.prepared.insert(p.id);
            parsed_now = true;
        }
        buf.extend_from_slice(
            message::target(frontend::DESCRIBE, target::STATEMENT, p.server_name()).bytes(),
        );
        buf.extend_from_slice(message::sync().bytes());
        if let Err(e) = server.write_raw(&buf).await {
            return Err(self.lose(shard, &e));
        }
        let mut error = None;
        let mut types = Vec::new();
        let mut answer = Vec::new();
        while let Some(s) = self.servers[shard].as_mut() {
            let r = s.read().await;
            let m = match r {
                Ok(m) => m,
                Err(e) => return Err(self.lose(shard, &e)),
            };
            match m.tag() {
                backend::PARAMETER_DESCRIPTION => {
                    let mut r = m.reader();
                    let n = r.i16().unwrap_or(0).max(0);
                    types = (0..n).map_while(|_| r.i32().ok()).collect();
                    // The parameters pgdog added for generated ids are not the client's.
                    types.truncate(types.len().saturating_sub(st.generated));
                    answer.push(message::parameter_description(&types));
                }
                backend::ROW_DESCRIPTION | backend::NO_DATA | backend::NOTICE_RESPONSE => {
                    answer.push(m)
                }
                backend::ERROR_RESPONSE => {
                    if let Some(e) = ClientError::from_response(&m) {
                        error = Some(e);
                    }
                }
                backend::READY_FOR_QUERY => {
                    if let Some(s) = self.servers[shard].as_mut() {
                        s.status = TxStatus::of(&m);
                        if error.is_some() && parsed_now {
                            s.prepared.remove(&p.id);
                        }
                    }
                    break;
                }
                _ => {}
            }
        }
        error.map_or(Ok((types, answer)), Err)
    }
}

/// An EXPLAIN without parameters (the ones pgdog answers, see `explain`).
fn is_explain(sql: &str) -> bool {
    crate::router::QueryCache::global()
        .get(sql)
        .ok()
        .and_then(|p| {
            p.statements
                .first()
                .map(|s| s.kind == pg_query_raw::router::StatementKind::Explain && s.max_param == 0)
        })
        .unwrap_or(false)
}
