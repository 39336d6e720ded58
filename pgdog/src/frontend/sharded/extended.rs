//! The extended protocol on a sharded database: Parse and Bind are answered by pgdog (the
//! statement is parsed once, its Bind kept in a portal); Describe is answered from a shard;
//! each Execute is routed by its Bind's parameter values.
use super::*;
use crate::net::encoding::Codec;
use crate::router::Params;

impl ShardedSession {
    pub(super) fn parse(&mut self, m: &Message) -> Result<(), SessionError> {
        let fields = read_parse(m)?;
        let codec = self.client.codec;
        let Some(query) = fields.query(codec) else {
            self.fail_extended(unreadable(codec));
            return Ok(());
        };
        // Syntax errors are reported at Parse time, as Postgres does.
        let parsed = match QueryCache::global().get(&query) {
            Ok(p) => p,
            Err(e) => {
                self.fail_extended(e.into());
                return Ok(());
            }
        };
        let database = &self.client.database;
        if let Some(why) =
            crate::reshard::moving::ddl_refusal_parsed(database, &query, &parsed.statements)
        {
            self.fail_extended(ClientError::new("55000", why));
            return Ok(());
        }
        let statement = self.prepared_with_ids(&query, &fields.param_types);
        self.statements.insert(fields.name.into_owned(), statement);
        self.send(&message::parse_complete());
        Ok(())
    }

    pub(super) fn bind(&mut self, m: Message) -> Result<(), SessionError> {
        let (portal, statement) = {
            let b = read_bind(&m)?;
            (b.portal.to_string(), b.statement.to_string())
        };
        let Some(st) = self.statements.get(&statement).cloned() else {
            self.fail_extended(ClientError::new(
                "26000",
                format!("prepared statement \"{statement}\" does not exist"),
            ));
            return Ok(());
        };
        self.portals.insert(
            portal,
            Portal {
                statement: st,
                bind: m,
                describe: false,
            },
        );
        self.send(&message::empty(b'2'));
        Ok(())
    }

    pub(super) async fn describe(&mut self, m: &Message) -> Result<(), SessionError> {
        let (kind, name) = read_target(m)?;
        if kind == target::PORTAL {
            match self.portals.get_mut(&*name) {
                Some(p) => p.describe = true,
                None => self.fail_extended(ClientError::new(
                    "34000",
                    format!("portal \"{name}\" does not exist"),
                )),
            }
            return Ok(());
        }
        let Some(st) = self.statements.get(&*name).cloned() else {
            self.fail_extended(ClientError::new(
                "26000",
                format!("prepared statement \"{name}\" does not exist"),
            ));
            return Ok(());
        };
        let name = name.to_string();
        if let Err(e) = self.pass_gate().await {
            self.fail_extended(e);
            return Ok(());
        }
        match self.describe_statement(&st).await {
            Ok(types) => {
                if let Some(entry) = self.statements.get_mut(&name) {
                    entry.inferred = types;
                }
            }
            Err(e) => self.fail_extended(e),
        }
        Ok(())
    }

    pub(super) async fn execute(&mut self, m: &Message) -> Result<(), SessionError> {
        let portal_name = m.reader().cstr()?.to_string();
        let Some(portal) = self.portals.get(&portal_name).cloned() else {
            self.fail_extended(ClientError::new(
                "34000",
                format!("portal \"{portal_name}\" does not exist"),
            ));
            return Ok(());
        };
        if let Some(p) = self.portals.get_mut(&portal_name) {
            p.describe = false;
        }
        if let Err(e) = self.pass_gate().await {
            self.fail_extended(e);
            return Ok(());
        }
        if let Ok(parsed) = QueryCache::global().get(&portal.statement.sql) {
            if let [st] = parsed.statements.as_slice() {
                let sync_next =
                    matches!(self.client.reader.complete_at(0), Some((frontend::SYNC, _)));
                self.open_batch_tx(&st.kind, sync_next);
            }
        }
        if let Err(e) = self.execute_portal(&portal).await {
            self.fail_extended(e);
        }
        Ok(())
    }

    pub(super) async fn execute_portal(&mut self, portal: &Portal) -> Result<(), ClientError> {
        let sql = portal.statement.sql.clone();
        let parsed = QueryCache::global().get(&sql)?;
        if parsed.statements.len() > 1 {
            return Err(ClientError::new(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        if parsed.statements.is_empty() {
            self.send(&message::empty(b'I'));
            return Ok(());
        }
        let st = &parsed.statements[0];
        if self.status == TxStatus::Failed && !tx::ends_transaction(&st.kind) {
            return Err(tx::aborted());
        }
        if self.router.dry_run().is_some() {
            if let Ok(bind) = read_bind(&portal.bind) {
                let params = params_of(&portal.statement, &bind, self.client.codec);
                self.count_route(&parsed, 0, &sql, Some(&params));
            }
        }
        if portal.statement.param_types.is_empty() || st.max_param == 0 {
            if let Some(tag) = self.session_statement(&parsed, 0, &sql).await? {
                if portal.describe {
                    self.send(&message::empty(b'n'));
                }
                self.send(&message::command_complete(&tag));
                return Ok(());
            }
        }
        if let StatementKind::Copy { from } = st.kind {
            if portal.describe {
                self.send(&message::empty(b'n'));
            }
            // The shards run it as a simple query; the client sees the same COPY messages.
            // Its Sync right after Execute is ignored during COPY FROM, as Postgres does.
            return self.copy(&sql, from).await;
        }
        if self.explain(st, &sql, Some(portal.describe)).await? {
            return Ok(());
        }
        let binary_results = read_bind(&portal.bind)
            .map(|b| b.result_formats.contains(&1))
            .unwrap_or(false);
        let extended = Some((portal.describe, binary_results));
        if self.insert_select(st, &sql, extended).await? {
            return Ok(());
        }
        let ids = self.id_values(portal.statement.generated).await?;
        let mut bind =
            read_bind(&portal.bind).map_err(|e| ClientError::new("08P01", e.to_string()))?;
        if !ids.is_empty() {
            // The client's parameters keep their formats; the ids go as text.
            let n = bind.values.len();
            let mut formats = match bind.param_formats.as_slice() {
                [] => vec![0; n],
                [f] => vec![*f; n],
                many => many.to_vec(),
            };
            formats.extend(std::iter::repeat_n(0, ids.len()));
            bind.param_formats = formats;
            bind.values.extend(ids.iter().map(|v| Some(v.as_slice())));
        }
        let params = params_of(&portal.statement, &bind, self.client.codec);
        let origin = key_update::Origin::Extended {
            statement: &portal.statement,
            bind: &bind,
            params: &params,
            describe: portal.describe,
        };
        if self.key_update(st, &sql, origin).await? {
            return Ok(());
        }
        let route: Route = self.route(&parsed, 0, &sql, Some(&params)).await?;
        self.note_pin(&sql, st);
        self.read_intent = self.reads(&parsed.statements[0], &sql);
        let result = self
            .run_route(
                &route,
                exec::Request::Extended {
                    statement: &portal.statement,
                    bind: &bind,
                    describe: portal.describe,
                },
            )
            .await;
        self.read_intent = false;
        result
    }
}

/// The parameters of a Bind for routing: values, formats, and each one's type (declared at
/// Parse, else inferred).
fn params_of<'a>(
    statement: &Statement,
    bind: &crate::net::bind::Bind<'a>,
    codec: Codec,
) -> Params<'a> {
    Params {
        codec,
        values: bind.values.clone(),
        formats: bind.param_formats.clone(),
        types: (0..bind.values.len())
            .map(|i| {
                statement
                    .param_types
                    .get(i)
                    .copied()
                    .filter(|t| *t != 0)
                    .or_else(|| statement.inferred.get(i).copied())
                    .unwrap_or(0)
            })
            .collect(),
    }
}
