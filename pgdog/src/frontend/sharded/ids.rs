//! Generated ids in a sharded session (`pgdog.unique_id()` and keys pgdog supplies): a simple
//! query gets them as literals before it is routed; a prepared statement is rewritten once at
//! Parse with extra parameters, whose values each Execute appends to the client's Bind.
use super::{ClientError, ShardedSession, Statement};
use crate::backend::{twophase, unique_id};
use crate::registry::Registry;
use crate::router::generate::{self, Ids};
use crate::router::Parsed;
use pg_query_raw::router::parse as parse_statements;
use std::sync::Arc;

/// bigint
const INT8: i32 = 20;

impl ShardedSession {
    /// This instance's unique-id node in the session's database (claimed on first use).
    pub(super) async fn id_node(&mut self) -> Result<u16, ClientError> {
        if let Some(n) = unique_id::node(&self.client.database) {
            return Ok(n);
        }
        let missing = || {
            ClientError::new(
                "58000",
                "pgdog.unique_id(): the first shard's primary is not configured",
            )
        };
        let pools = Registry::current()
            .primary_pools(&self.client.user, &self.client.database)
            .ok_or_else(missing)?;
        let first = pools.first().ok_or_else(missing)?;
        unique_id::claim(&self.client.database, first, &twophase::instance())
            .await
            .map_err(|e| ClientError::new(e.code(), e.to_string()))
    }

    /// A simple query's statement `i` (text `sql`) with its ids as literals, parsed; `None`
    /// when it needs none.
    pub(super) async fn with_ids(
        &mut self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
    ) -> Result<Option<(Arc<Parsed>, String)>, ClientError> {
        let st = &parsed.statements[i];
        if !generate::needed(sql, st, &self.router.schema) {
            return Ok(None);
        }
        let node = self.id_node().await?;
        let mut next = || unique_id::next(node);
        let schema = self.router.schema.clone();
        let Some(r) = generate::rewrite(sql, st, &schema, Ids::Literal(&mut next))? else {
            return Ok(None);
        };
        // Not cached: the text holds this execution's ids.
        let parsed = Parsed::new(&r.sql)?;
        Ok(Some((Arc::new(parsed), r.sql)))
    }

    /// The statement a Parse prepares: with `$n` parameters for the ids it needs (their type
    /// bigint), or as the client sent it.
    pub(super) fn prepared_with_ids(&self, sql: &str, param_types: &[i32]) -> Statement {
        let plain = Statement {
            sql: Arc::from(sql),
            param_types: param_types.to_vec(),
            inferred: Vec::new(),
            generated: 0,
        };
        let stmts = match parse_statements(sql) {
            Ok(s) if s.len() == 1 => s,
            _ => return plain,
        };
        let st = &stmts[0];
        let declared = param_types.len().max(st.max_param as usize);
        let first = declared as u32 + 1;
        match generate::rewrite(sql, st, &self.router.schema, Ids::Params(first)) {
            Ok(Some(r)) => {
                let mut types = param_types.to_vec();
                types.resize(declared, 0);
                types.extend(std::iter::repeat_n(INT8, r.ids));
                Statement {
                    sql: Arc::from(r.sql.as_str()),
                    param_types: types,
                    inferred: Vec::new(),
                    generated: r.ids,
                }
            }
            // Errors (a call where it would run once per row) come back at Execute.
            _ => plain,
        }
    }

    /// Text values of `n` new ids for one execution.
    pub(super) async fn id_values(&mut self, n: usize) -> Result<Vec<Vec<u8>>, ClientError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let node = self.id_node().await?;
        Ok((0..n)
            .map(|_| unique_id::next(node).to_string().into_bytes())
            .collect())
    }
}
