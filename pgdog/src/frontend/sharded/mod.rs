//! A client session on a sharded database (more than one shard). Every statement is routed:
//! sent unchanged to the one shard that holds its rows, or to several shards whose answers are
//! merged into one result. Transactions span the shards they touch (one server per shard until
//! they end; COMMIT and ROLLBACK reach all of them, with two-phase commit when configured).
//! The extended protocol is served statement by statement: Parse and Bind are answered by pgdog,
//! and each Execute is routed by that Bind's parameter values.
//! Before a request that may need servers (Query, Describe of a statement, Execute) and while
//! none is attached, the session passes its database's pause gate (the admin database's PAUSE
//! makes it wait there) and then picks up a reloaded configuration, before anything is routed.
mod copy;
mod describe;
mod dry_run;
mod exec;
mod explain;
mod extended;
mod handover;
mod ids;
mod insert_select;
mod key_update;
mod point;
mod reload;
mod tx;

use super::client::{Client, ServeClient};
use super::statements;
use crate::backend::{PooledServer, ServerError, Shard};
use crate::config::{PoolerMode, ReadWriteStrategy};
use crate::net::bind::read_bind;
use crate::net::encoding::Codec;
use crate::net::message::{self, read_parse, read_target};
use crate::net::tag::{backend, frontend, target};
use crate::net::TxStatus;
use crate::net::{Message, ProtocolError};
use crate::router::read_write::{self, RoleHint};
use crate::router::route::Overrides;
use crate::router::{Parsed, QueryCache, Route, Router, RouterError, Served, ShapeCache};
use pg_query_raw::router::StatementKind;
use std::collections::HashMap;
use std::sync::Arc;
use tx::Tx;

pub use super::session::SessionError;

/// Query text the client's encoding does not let pgdog read: it cannot be routed.
fn unreadable(codec: Codec) -> ClientError {
    ClientError::new("0A000", codec.unreadable())
}

/// SQL pgdog sends to a shard, in the client's encoding (the shard's connection speaks it).
fn in_client_encoding(codec: Codec, sql: &str) -> Result<std::borrow::Cow<'_, [u8]>, ClientError> {
    codec.encode(sql).ok_or_else(|| {
        ClientError::new(
            "0A000",
            "pgdog cannot write this query in the client's encoding (client_encoding)",
        )
    })
}

/// A statement the client prepared (named or unnamed).
#[derive(Debug, Clone)]
struct Statement {
    sql: Arc<str>,
    param_types: Vec<i32>,
    /// Parameter types the server inferred (from a Describe), for reading binary values.
    inferred: Vec<i32>,
    /// Trailing parameters pgdog added for generated ids (filled at each Execute).
    generated: usize,
}

/// A bound portal: the statement and the client's Bind.
#[derive(Debug, Clone)]
struct Portal {
    statement: Statement,
    bind: Message,
    /// A Describe of this portal came before its Execute.
    describe: bool,
}

/// An error to send to the client: SQLSTATE and message.
#[derive(Debug, Clone)]
pub struct ClientError {
    pub code: String,
    pub message: String,
    /// A Postgres ErrorResponse to pass through as it is.
    pub raw: Option<Message>,
}

impl ClientError {
    fn new(code: &str, message: impl Into<String>) -> ClientError {
        ClientError {
            code: code.into(),
            message: message.into(),
            raw: None,
        }
    }

    /// A server's ErrorResponse, relayed as it came (`None` when it cannot be read).
    fn from_response(m: &Message) -> Option<ClientError> {
        message::read_error(m).ok().map(|f| ClientError {
            code: f.code,
            message: f.message,
            raw: Some(m.clone()),
        })
    }

    fn message(&self) -> Message {
        match &self.raw {
            Some(m) => m.clone(),
            None => message::error(&self.code, &self.message),
        }
    }
}

impl From<crate::merge::MergeError> for ClientError {
    fn from(e: crate::merge::MergeError) -> ClientError {
        ClientError::new(e.code(), e.to_string())
    }
}

impl From<RouterError> for ClientError {
    fn from(e: RouterError) -> ClientError {
        let mut c = ClientError::new(e.code(), e.to_string());
        if let Some(position) = e.position() {
            c.raw = Some(message::error_at(e.code(), &e.to_string(), position));
        }
        c
    }
}

impl From<ServerError> for ClientError {
    fn from(e: ServerError) -> ClientError {
        match e {
            ServerError::Postgres(fields, raw) => ClientError {
                code: fields.code,
                message: fields.message,
                raw: Some(raw),
            },
            other => ClientError::new(&other.code(), other.to_string()),
        }
    }
}

pub struct ShardedSession {
    /// The client end: socket, identity, output, meter, pause gate.
    client: Client,
    /// Every shard's servers (primary, replicas) and their pools.
    shards: Vec<Shard>,
    router: Arc<Router>,
    two_phase: bool,
    servers: Vec<Option<PooledServer>>,
    /// Per shard: the attached server is a replica's (taken for a read).
    on_replica: Vec<bool>,
    /// The statement being run may go to replicas.
    read_intent: bool,
    /// read_your_writes: per shard, the primary's WAL position after this client's last write.
    write_lsns: Vec<Option<u64>>,
    /// `SET pgdog.role`: where the client's statements go.
    role_hint: Option<RoleHint>,
    /// While set, what would be sent to the client is kept here (INSERT ... SELECT reads its
    /// SELECT's rows so).
    captured: Option<crate::merge::Spool>,
    /// Transaction status the client sees.
    status: TxStatus,
    tx: Option<Tx>,
    overrides: Overrides,
    statements: HashMap<String, Statement>,
    portals: HashMap<String, Portal>,
    /// After an error in the extended protocol: drop messages until Sync.
    skip_until_sync: bool,
    /// `tx` is the implicit transaction of an extended-protocol batch (see `open_batch_tx`).
    batch_tx: bool,
    /// Why servers stay attached until the client leaves (session state was created).
    pinned: Option<&'static str>,
    /// Registry generation the pools and router were taken from (a reload bumps it).
    generation: u64,
    /// Set when a reload made this session unable to continue: it ends with this FATAL.
    reconfigured: Option<String>,
    /// The client sent a message COPY FROM STDIN cannot take: after the ERROR, the session
    /// ends with FATAL 08P01, as Postgres ends it.
    out_of_step: bool,
    /// dry_run: the routes counted in the request in flight, to take its time.
    routes: dry_run::Counted,
    /// `[[mirroring]]`: its transactions go to the mirrors of its database.
    mirror: Option<Box<crate::backend::mirror::Tap>>,
    /// The Query a point query writes (kept: no allocation per query).
    query: Vec<u8>,
}

impl ShardedSession {
    #[allow(clippy::too_many_arguments)]
    /// A session for `client` over `shards` (its pooling mode is the first shard's).
    pub fn new(
        mut client: Client,
        shards: Vec<Shard>,
        router: Arc<Router>,
        two_phase: bool,
    ) -> ShardedSession {
        client.mode = shards.first().map(|s| s.mode()).unwrap_or_default();
        let servers = shards.iter().map(|_| None).collect();
        let mirror = super::tap(&client.user, &client.database);
        let on_replica = shards.iter().map(|_| false).collect();
        ShardedSession {
            client,
            shards,
            router,
            two_phase,
            servers,
            on_replica,
            read_intent: false,
            write_lsns: Vec::new(),
            role_hint: None,
            captured: None,
            status: TxStatus::Idle,
            tx: None,
            overrides: Overrides::default(),
            statements: HashMap::new(),
            portals: HashMap::new(),
            skip_until_sync: false,
            batch_tx: false,
            pinned: None,
            generation: crate::registry::Registry::generation(),
            reconfigured: None,
            out_of_step: false,
            routes: Default::default(),
            mirror,
            query: Vec::new(),
        }
    }

    /// This session's transactions are not mirrored (it replays another's).
    pub(crate) fn mirror_off(&mut self) {
        self.mirror = None;
    }

    /// The registry generation its pools were looked up at (a later one makes it look again).
    pub fn set_generation(&mut self, generation: u64) {
        self.generation = generation;
    }

    /// Reads more from the client, unless an idle timeout, KILL or the shutdown comes first.
    async fn wait_for_client(&mut self) -> Result<(), SessionError> {
        use super::session::timeouts::{expiry, idle_error, next_deadline, stopped};
        let idle = self.tx.is_none() && self.status == TxStatus::Idle;
        let shards = &self.shards;
        let clocks = || shards.first().map(|s| s.clocks()).unwrap_or_default();
        let deadline = next_deadline(clocks, None, !idle, self.client.meter.last_message());
        if deadline.is_none() {
            // No clock running (the steady state): one poll over the stop flag and the
            // socket, as the one-server session waits (`session::relay`), no futures made.
            let info = self.client.meter.client().clone();
            let read = std::future::poll_fn(|cx| {
                if info.poll_stop(cx, idle).is_ready() {
                    return std::task::Poll::Ready(None);
                }
                self.client.poll_read(cx, idle).map(Some)
            })
            .await;
            return match read {
                Some(r) => Ok(r?),
                None if idle => Err(self.stop_between_transactions().await),
                None => Err(stopped(&info)),
            };
        }
        let client = self.client.meter.client();
        let timer = expiry(deadline);
        let stop = tokio::select! {
            r = self.client.reader.fill(&mut self.client.stream) => {
                r?;
                self.client.meter.arrived();
                return Ok(());
            }
            _ = client.stop_requested(idle) => idle,
            _ = timer, if deadline.is_some() => {
                return Err(idle_error(deadline.map_or(super::session::timeouts::Clock::Idle, |d| d.1)));
            }
        };
        if stop {
            // Between transactions: the client may move to the pgdog taking over.
            return Err(self.stop_between_transactions().await);
        }
        Err(stopped(self.client.meter.client()))
    }

    async fn flush(&mut self) -> Result<(), ProtocolError> {
        self.client.flush().await
    }

    fn send(&mut self, m: &Message) {
        if let Some(kept) = self.captured.as_mut() {
            kept.push(m);
            return;
        }
        if m.tag() == backend::ERROR_RESPONSE {
            crate::stats::error_response(m);
            if let Some(t) = self.mirror.as_mut() {
                t.error_sent();
            }
        }
        self.client.queue(m.bytes());
    }

    /// Sends merged rows (taken out of `rows`).
    fn send_rows(&mut self, rows: &mut Vec<Message>) {
        match self.captured.as_mut() {
            Some(kept) => rows.drain(..).for_each(|r| kept.push(&r)),
            None => rows.drain(..).for_each(|r| self.client.queue(r.bytes())),
        }
    }

    fn ready(&mut self) {
        if self.out_of_step {
            return;
        }
        let status = self.status;
        let took = self.client.meter.ready(status);
        self.routes.ended(took);
        if let Some(t) = self.mirror.as_mut() {
            t.ready(status);
        }
        self.send(&message::ready_for_query(status));
    }

    async fn client_message(&mut self, m: Message) -> Result<(), SessionError> {
        if let Some(tap) = self.mirror.as_mut() {
            tap.message(&m);
        }
        if self.skip_until_sync {
            if m.tag() == frontend::SYNC {
                self.skip_until_sync = false;
                self.end_batch_tx().await;
                self.end_of_request().await;
                self.ready();
            }
            return Ok(());
        }
        match m.tag() {
            frontend::QUERY => {
                let codec = self.client.codec;
                let Some(sql) = codec.decode(message::read_query_text(&m)?) else {
                    self.fail(unreadable(codec));
                    self.ready();
                    return Ok(());
                };
                match self.pass_gate().await {
                    Ok(()) => self.simple_query(&sql).await?,
                    Err(e) => self.fail(e),
                }
                self.end_of_request().await;
                self.ready();
            }
            frontend::PARSE => self.parse(&m)?,
            frontend::BIND => self.bind(m)?,
            frontend::DESCRIBE => self.describe(&m).await?,
            frontend::EXECUTE => self.execute(&m).await?,
            frontend::CLOSE => {
                let (kind, name) = read_target(&m)?;
                if kind == target::STATEMENT {
                    self.statements.remove(&*name);
                } else {
                    self.portals.remove(&*name);
                }
                self.send(&message::close_complete());
            }
            frontend::FLUSH => {}
            frontend::SYNC => {
                self.end_batch_tx().await;
                self.end_of_request().await;
                self.ready();
            }
            // CopyData/CopyDone/CopyFail outside COPY: ignored, as Postgres does.
            frontend::COPY_DATA | frontend::COPY_DONE | frontend::COPY_FAIL => {}
            frontend::FUNCTION_CALL => {
                self.fail(ClientError::new(
                    "0A000",
                    "the function call protocol is not supported on sharded databases",
                ));
            }
            other => return Err(ProtocolError::UnknownMessage(other).into()),
        }
        Ok(())
    }

    /// Reports an error; in the extended protocol the rest up to Sync is skipped; a
    /// transaction in progress is failed.
    fn fail(&mut self, e: ClientError) {
        self.send(&e.message());
        if self.tx.is_some() {
            self.status = TxStatus::Failed;
        }
    }

    fn fail_extended(&mut self, e: ClientError) {
        self.fail(e);
        self.skip_until_sync = true;
    }

    // ---- simple query ----

    async fn simple_query(&mut self, sql: &str) -> Result<(), SessionError> {
        let parsed = match ShapeCache::global().serve(sql, self.point_router(sql)) {
            Ok(Served::Parsed(p)) => p,
            Ok(Served::Point(hit)) => {
                if let Err(e) = self.point(&hit, sql).await {
                    self.fail(e);
                }
                return Ok(());
            }
            Err(e) => {
                self.fail(e.into());
                return Ok(());
            }
        };
        if parsed.statements.is_empty() {
            self.send(&message::empty(b'I'));
            return Ok(());
        }
        if let Some(why) = crate::reshard::moving::ddl_refusal_parsed(
            &self.client.database,
            sql,
            &parsed.statements,
        ) {
            self.fail(ClientError::new("55000", why));
            return Ok(());
        }
        // Several statements run as one implicit transaction unless they control it.
        let controls_tx = parsed
            .statements
            .iter()
            .any(|s| matches!(s.kind, StatementKind::Transaction(_)));
        let implicit = parsed.statements.len() > 1 && self.tx.is_none() && !controls_tx;
        if implicit {
            self.tx = Some(Tx::new("BEGIN", true, self.shards.len()));
        }
        let mut failed = false;
        for i in 0..parsed.statements.len() {
            let st = &parsed.statements[i];
            let text = sql
                .get(st.location..st.location + st.len)
                .unwrap_or(sql)
                .to_string();
            if let Err(e) = self.statement(&parsed, i, &text).await {
                self.fail(e);
                failed = true;
                break;
            }
        }
        if implicit {
            let result = if failed {
                self.rollback().await
            } else {
                self.commit().await
            };
            if let Err(e) = result {
                self.fail(e);
            }
            self.status = TxStatus::Idle;
        }
        Ok(())
    }

    /// One statement of a simple query.
    async fn statement(
        &mut self,
        parsed: &Arc<Parsed>,
        i: usize,
        sql: &str,
    ) -> Result<(), ClientError> {
        let st = &parsed.statements[i];
        if self.status == TxStatus::Failed && !tx::ends_transaction(&st.kind) {
            return Err(tx::aborted());
        }
        if self.router.dry_run().is_some() {
            self.count_route(parsed, i, sql, None);
        }
        if let Some(tag) = self.session_statement(parsed, i, sql).await? {
            self.send(&message::command_complete(&tag));
            return Ok(());
        }
        if let StatementKind::Copy { from } = st.kind {
            return self.copy(sql, from).await;
        }
        if self.explain(st, sql, None).await?
            || self.insert_select(st, sql, None).await?
            || self.key_update(st, sql, key_update::Origin::Simple).await?
        {
            return Ok(());
        }
        let with_ids = self.with_ids(parsed, i, sql).await?;
        let (parsed, i, sql) = match &with_ids {
            Some((p, text)) => (p, 0, text.as_str()),
            None => (parsed, i, sql),
        };
        let st = &parsed.statements[i];
        let route = self.route(parsed, i, sql, None).await?;
        self.note_pin(sql, st);
        let builtins = self.builtins(sql);
        if let Some(reason) = statements::unknown_call_in(parsed, i, sql, builtins.as_deref()) {
            self.pin(reason);
        }
        self.read_intent = self.reads(st, sql);
        let result = self.run_route(&route, exec::Request::Simple(sql)).await;
        self.read_intent = false;
        result
    }

    /// The servers' built-in functions (shard 0's catalog: the shards share a schema), when
    /// `sql` calls anything.
    fn builtins(&self, sql: &str) -> Option<Arc<crate::backend::builtins::Builtins>> {
        sql.contains('(')
            .then(|| self.shards.first().and_then(|s| s.builtins()))
            .flatten()
    }

    /// The session keeps its servers until it leaves.
    fn pin(&mut self, reason: &'static str) {
        if self.client.mode == PoolerMode::Transaction {
            self.client.meter.client().pin(reason);
        }
        self.pinned = self.pinned.or(Some(reason));
    }

    fn note_pin(&mut self, sql: &str, st: &pg_query_raw::router::Statement) {
        if let Some(reason) = statements::classify_parsed(sql, std::slice::from_ref(st)).pin {
            self.pin(reason);
        }
    }

    /// Statements pgdog answers itself or with special care: transaction control, SET/RESET,
    /// DISCARD, DEALLOCATE. Returns the CommandComplete tag when handled.
    async fn session_statement(
        &mut self,
        parsed: &Arc<Parsed>,
        i: usize,
        sql: &str,
    ) -> Result<Option<String>, ClientError> {
        let st = &parsed.statements[i];
        match &st.kind {
            StatementKind::Transaction(t) => self.transaction(t, sql).await.map(Some),
            StatementKind::Set => self.set(st, sql).await,
            StatementKind::Deallocate => {
                match statements::deallocate(sql) {
                    Some(None) => self.statements.clear(),
                    Some(Some(name)) => {
                        self.statements.remove(&name);
                    }
                    None => {}
                }
                Ok(Some(
                    if sql.to_ascii_lowercase().contains("all") {
                        "DEALLOCATE ALL"
                    } else {
                        "DEALLOCATE"
                    }
                    .into(),
                ))
            }
            StatementKind::Utility("DiscardStmt") if sql.to_ascii_lowercase().contains("all") => {
                if self.tx.is_some() {
                    return Err(ClientError::new(
                        "25001",
                        "DISCARD ALL cannot run inside a transaction block",
                    ));
                }
                self.client.params.apply(&statements::SetChange::ResetAll);
                self.statements.clear();
                self.portals.clear();
                self.overrides = Overrides::default();
                Ok(Some("DISCARD ALL".into()))
            }
            _ => Ok(None),
        }
    }

    /// Whether statement `i` may go to replicas: the database has some, the client did not ask
    /// for the primary, and the parser proves it a read.
    fn reads(&self, st: &pg_query_raw::router::Statement, sql: &str) -> bool {
        self.may_read(sql, |strategy| {
            read_write::is_read(std::slice::from_ref(st), sql, strategy)
        })
    }

    /// `reads`, with `is_read` saying whether the statement (whose text is `sql`) is a read.
    fn may_read(&self, sql: &str, is_read: impl FnOnce(ReadWriteStrategy) -> bool) -> bool {
        if self.client.mode == PoolerMode::Session || !self.shards.iter().any(|s| s.splits_reads())
        {
            return false;
        }
        if let Some(hint) = read_write::comment_hint(sql).or(self.role_hint) {
            return hint == RoleHint::Replica;
        }
        is_read(self.shards[0].policy().reads)
    }

    /// Routes a statement; the column order of a table is read from a shard when an INSERT
    /// without a column list needs it.
    async fn route(
        &mut self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
        params: Option<&crate::router::Params<'_>>,
    ) -> Result<Route, ClientError> {
        match self.router.route(parsed, i, sql, params, &self.overrides) {
            Err(RouterError::NeedColumns(table)) => {
                let schema = parsed.statements[i]
                    .relations
                    .first()
                    .and_then(|r| r.schema.clone());
                let columns = self.table_columns(schema.as_deref(), &table).await?;
                if columns.is_empty() {
                    return Err(ClientError::new(
                        "42P01",
                        format!("relation \"{table}\" does not exist"),
                    ));
                }
                self.router
                    .schema
                    .columns
                    .write()
                    .insert(table, Arc::new(columns));
                Ok(self.router.route(parsed, i, sql, params, &self.overrides)?)
            }
            other => Ok(other?),
        }
    }

    // ---- servers ----

    /// The server of `shard`, checked out (and its settings and transaction brought in line
    /// with the client's) if needed.
    async fn server(&mut self, shard: usize) -> Result<&mut PooledServer, ClientError> {
        self.pass_gate().await?;
        if shard >= self.servers.len() {
            return Err(RouterError::NoSuchShard(shard, self.servers.len()).into());
        }
        // A read-only transaction runs where it starts; another one on the primary.
        let read = self.tx.as_ref().map_or(self.read_intent, |t| t.read_only);
        let begun = self.tx.as_ref().is_some_and(|t| t.begun[shard]);
        if self.on_replica[shard] && !read && !begun {
            // A write needs the primary: the replica's connection goes back.
            if let Some(mut old) = self.servers[shard].take() {
                if old.status != TxStatus::Idle {
                    old.discard();
                }
            }
            self.on_replica[shard] = false;
        }
        if self.servers[shard].is_none() {
            let min_lsn = self.write_lsns.get(shard).copied().flatten();
            let checkout = self
                .client
                .checkout(&self.shards[shard], read, min_lsn)
                .await;
            let server = checkout.map_err(|e| {
                tracing::warn!("client {}@{}: {e}", self.client.user, self.client.database);
                ClientError::new(&e.code(), format!("shard {shard}: {e}"))
            })?;
            self.on_replica[shard] = read;
            if self.servers.iter().all(|s| s.is_none()) {
                *self.client.cancel.slot.lock() = Some(server.cancel_key.clone());
            } else {
                self.client
                    .cancel
                    .others
                    .lock()
                    .push(server.cancel_key.clone());
            }
            self.servers[shard] = Some(server);
        }
        let fingerprint = self.client.params.fingerprint();
        let in_tx = self.tx.as_ref().map(|t| !t.begun[shard]).unwrap_or(false);
        let prelude = self.tx.as_ref().map(|t| t.prelude.join(";"));
        let Some(server) = self.servers[shard].as_mut() else {
            return Err(ClientError::new("08006", "server connection lost"));
        };
        if server.settings_fingerprint != fingerprint {
            if let Some((sql, after)) = self.client.params.sync(&server.settings) {
                if let Err(e) = server.execute(&sql).await {
                    server.discard();
                    self.servers[shard] = None;
                    return Err(e.into());
                }
                server.set_settings(after);
            }
        }
        if in_tx {
            if let Some(prelude) = prelude {
                if let Err(e) = server.execute(&prelude).await {
                    return Err(e.into());
                }
            }
            if let Some(t) = self.tx.as_mut() {
                t.begun[shard] = true;
            }
        }
        self.servers[shard]
            .as_mut()
            .ok_or_else(|| ClientError::new("08006", "server connection lost"))
    }

    /// After a request (Query or Sync): outside a transaction, servers go back to their pools.
    async fn end_of_request(&mut self) {
        if self.tx.is_some() || self.pinned.is_some() || self.client.mode == PoolerMode::Session {
            self.release_ticket();
            return;
        }
        self.record_write_lsns().await;
        self.release_all();
        self.release_ticket();
    }

    /// read_your_writes: before the primaries' connections go back, where this client's
    /// writes end on each (its reads then wait for a replica that replayed them).
    async fn record_write_lsns(&mut self) {
        if !self
            .shards
            .iter()
            .any(|s| s.policy().read_your_writes && s.splits_reads())
        {
            return;
        }
        self.write_lsns.resize(self.shards.len(), None);
        for shard in 0..self.servers.len() {
            if self.on_replica[shard] {
                continue;
            }
            let Some(server) = self.servers[shard].as_mut() else {
                continue;
            };
            match server
                .query_row("SELECT pg_catalog.pg_current_wal_insert_lsn()")
                .await
            {
                Ok(row) => {
                    self.write_lsns[shard] = row
                        .first()
                        .cloned()
                        .flatten()
                        .as_deref()
                        .and_then(crate::replication::pgoutput::parse_lsn);
                }
                Err(_) => server.discard(),
            }
        }
    }

    /// Every server goes back to its pool (closed if mid-transaction), taking the clock read
    /// of the coming ReadyForQuery as its `last_used`.
    fn release_all(&mut self) {
        *self.client.cancel.slot.lock() = None;
        self.client.cancel.others.lock().clear();
        for s in self.servers.iter_mut() {
            if let Some(server) = s.as_mut() {
                if server.status != TxStatus::Idle {
                    server.discard();
                }
                server.returned_at(Some(self.client.meter.ready_now()));
            }
            *s = None;
        }
        self.on_replica.iter_mut().for_each(|r| *r = false);
    }

    /// A server failed mid-conversation: it is closed, the client gets an error.
    fn lose(&mut self, shard: usize, e: &ServerError) -> ClientError {
        tracing::warn!(
            "client {}@{}: shard {shard}: server connection lost: {e}",
            self.client.user,
            self.client.database
        );
        if let Some(s) = self.servers.get_mut(shard).and_then(|s| s.as_mut()) {
            s.discard();
            if e.says_server_down() {
                s.pool()
                    .host()
                    .mark_down(&format!("server connection lost: {e}"));
            }
            let key = s.cancel_key.clone();
            self.client
                .cancel
                .others
                .lock()
                .retain(|k| !std::sync::Arc::ptr_eq(k, &key));
            let mut slot = self.client.cancel.slot.lock();
            if slot
                .as_ref()
                .is_some_and(|k| std::sync::Arc::ptr_eq(k, &key))
            {
                *slot = None;
            }
        }
        if let Some(s) = self.servers.get_mut(shard) {
            *s = None;
        }
        if let Some(t) = self.tx.as_mut() {
            t.begun[shard] = false;
            t.lost = true;
            self.status = TxStatus::Failed;
        }
        ClientError::new(
            "08006",
            format!("shard {shard}: server connection lost: {e}"),
        )
    }
}

impl ServeClient for ShardedSession {
    fn client_mut(&mut self) -> &mut Client {
        &mut self.client
    }

    async fn serve(&mut self) -> Result<(), SessionError> {
        loop {
            // Everything already buffered from the client first.
            while let Some(m) = self.client.next_buffered()? {
                let mark = self.client.out.len();
                if self.tx.is_none() && self.servers.iter().any(|s| s.is_some()) {
                    // Between transactions with servers kept (session mode, pinned).
                    self.check_still_sharded();
                }
                if self.reconfigured.is_none() {
                    self.client_message(m).await?;
                }
                if self.out_of_step {
                    return Err(SessionError::Terminated(
                        "08P01",
                        "terminating connection because protocol synchronization was lost".into(),
                    ));
                }
                if let Some(why) = self.reconfigured.take() {
                    // Nothing of the request that ends the session is answered.
                    self.client.out.truncate(mark);
                    return Err(SessionError::Reconfigured(why));
                }
                if self.client.out.len() > 64 * 1024 {
                    self.flush().await?;
                }
            }
            self.flush().await?;
            self.wait_for_client().await?;
        }
    }

    /// The client is gone: every server back clean (see `PooledServer::leave_clean`).
    async fn cleanup(&mut self) {
        *self.client.cancel.slot.lock() = None;
        self.client.cancel.others.lock().clear();
        let reset = self.client.mode == PoolerMode::Session || self.pinned.is_some();
        for server in self.servers.iter_mut().filter_map(Option::take) {
            server.leave_clean(reset).await;
        }
    }
}
