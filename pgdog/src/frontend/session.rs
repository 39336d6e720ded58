//! One client session after login: the protocol state machine of transaction and session
//! pooling. Messages are forwarded as they arrive; the session keeps, per attached server, the
//! queue of responses it expects so it knows when a transaction is over (and the server can go
//! back to the pool), where to insert answers it makes itself (ParseComplete for a statement the
//! server already has, CloseComplete), and which answers to swallow (a Parse it injected).
//! Before it checks out a server the session passes its database's pause gate (the admin
//! database's PAUSE makes it wait there), then picks up a reloaded configuration.
mod attach;
mod deallocate;
mod dry_run;
mod error;
mod expect;
mod extended;
mod handover;
mod listening;
mod lost;
mod relay;
mod replan;
mod routing;
mod settle;
pub(crate) mod timeouts;
mod unnamed;

use crate::net::tag::{backend, frontend};
use crate::net::TxStatus;
pub use error::SessionError;
use expect::Expect;
use lost::{ReadRetry, ServerFatal};
use unnamed::ClientUnnamed;

/// Whether `server_reset_query` is set (query_parser off: run before a server goes back).
fn reset_query_set() -> bool {
    !crate::config::active().server_reset_query.trim().is_empty()
}

use super::aborted::Aborted;
use super::client::{Client, ServeClient};
use super::mentions::{Mentions, Word};
use super::read_only;
use super::statements::{self, Classified, SetChange};
use crate::backend::prepared::{self, Prepared};
use crate::backend::{PooledServer, Shard};
use crate::config::PoolerMode;
use crate::net::message::{self, read_error};
use crate::net::{Message, ProtocolError};
use crate::registry::Registry;
use crate::router::read_write::RoleHint;
use crate::stats::clients::ClientInfo;
use bytes::BytesMut;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A statement whose text is not UTF-8 (another client_encoding) was read as UTF-8 (see
/// `Session::client_text`): the session state it changes stays on its server (pinned), pgdog
/// replays only UTF-8 text. `text` is the statement as read: borrowed when it was UTF-8.
#[allow(clippy::ptr_arg)] // Borrowed or Owned is the point
fn not_utf8(mut c: Classified, text: &std::borrow::Cow<'_, str>) -> Classified {
    let lossy = matches!(text, std::borrow::Cow::Owned(_));
    if lossy && !c.changes.is_empty() {
        c.changes.clear();
        c.pin = c.pin.or(Some("a session change in text that is not UTF-8"));
    }
    c
}

/// A client's prepared statements by its names (foldhash, not SipHash: looked up at every
/// Bind and Describe).
pub(crate) type Statements = HashMap<String, Prepared, foldhash::fast::RandomState>;

pub struct Session {
    /// The client's entry in the clients table (KILL and the shutdown reach it there).
    info: Arc<ClientInfo>,
    /// The client end: socket, identity, output, meter, pause gate.
    pub client: Client,
    /// The database's servers (primary, replicas) and their pools.
    pub shard: Shard,
    pub query_parser: bool,
    /// Its pools are read-only (`read_only`).
    read_only: bool,
    server: Option<PooledServer>,
    /// A connection `attach_now` took whose settings `attach` brings in line.
    taken: Option<PooledServer>,
    /// Client messages waiting to be written to the server in one go (a pipeline of Bind,
    /// Execute, Sync written message by message would wake the server once per message).
    server_out: BytesMut,
    /// Registry generation `pool` was taken from (a reload bumps it).
    registry_generation: u64,
    /// Client statement name -> global statement.
    statements: Statements,
    expected: VecDeque<Expect>,
    /// Why the session holds its server until it ends (session state was created).
    pinned: Option<&'static str>,
    /// Statement pooling (`client.mode` is then Transaction): a ReadyForQuery that is not idle
    /// ends the client, as PgBouncer does.
    statement_pooling: bool,
    /// That happened: the session ends before reading more.
    transaction_block: bool,
    copy_in: bool,
    /// After pgdog answered an extended-protocol message with an error: drop messages until Sync.
    skip_until_sync: bool,
    /// Transaction status the client last saw.
    status: TxStatus,
    /// SET/RESET waiting for the end of the current query batch or transaction.
    pending: Vec<SetChange>,
    pending_discard_all: bool,
    /// The pending changes may not all have taken effect (they were made inside a transaction
    /// block, a multi-statement query or the extended protocol): ask the server afterwards.
    uncertain: bool,
    batch_failed: bool,
    /// Parameters to read back from the server before it goes back to the pool.
    verify: Option<Vec<String>>,
    /// A query in flight may have opened a transaction block (it mentions BEGIN or START).
    may_begin: bool,
    /// A statement of the current transaction (or request) mentions SET: settings it changed
    /// may not be in the client's fingerprint yet (see `statement_settings`).
    set_in_transaction: bool,
    /// The text of the last Parse and what it mentions: a client repeating its Parse (the
    /// unnamed statement of every `-M extended` transaction) is not scanned again.
    last_parse: (Vec<u8>, crate::frontend::mentions::Mentions),
    /// The last global statement `intern` gave and `prepared::retirements()` then.
    last_interned: Option<(Prepared, u64)>,
    /// The FATAL a server sent before closing (why it was lost).
    server_fatal: Option<ServerFatal>,
    /// The client's transaction was lost with its server: pgdog answers until it ends it.
    aborted: Option<Aborted>,
    /// `SET pgdog.role`: where the client's statements go.
    role_hint: Option<RoleHint>,
    /// The attached server was taken for writes (the primary).
    on_primary: bool,
    /// read_your_writes: the primary's WAL position is to be read before the server goes back.
    fetch_lsn: bool,
    /// read_your_writes: the primary's WAL position after this client's last write.
    write_lsn: Option<u64>,
    /// A simple-protocol read to a replica: can it be run again elsewhere if the server dies?
    retry: ReadRetry,
    /// query_timeout fired: the running query was cancelled.
    cancel_sent: bool,
    /// `server_reset_query` is to run before the server goes back (query_parser off).
    reset_due: bool,
    /// It ran for this transaction: the server may go.
    reset_done: bool,
    /// DDL that may add functions ran: once it is committed, the servers' catalogs of
    /// built-in functions are read again (`backend::builtins`).
    functions_changed: bool,
    /// The client's last batches, to run again when a shared statement's plan went stale.
    replan: replan::Replan,
    /// Extended-protocol messages reached the server since the last Sync: it may be inside an
    /// implicit transaction, so it cannot go to another client as it is.
    unsynced: bool,
    /// A simple query went out while an Execute's answer was pending: if that Execute is a
    /// COPY FROM STDIN that swallows its Sync, the query lands in an unsynced batch.
    query_behind_execute: bool,
    /// The client's unnamed prepared statement (see `unnamed`).
    unnamed: Option<ClientUnnamed>,
    /// The client's unnamed statement is a DEALLOCATE pgdog answers (see `deallocate`).
    dealloc: deallocate::Deallocs,
    /// Its LISTENs, run by the database's listener (transaction mode, see `listening`).
    listening: Option<listening::Listening>,
    /// `[[mirroring]]`: its transactions go to the mirrors of its database.
    mirror: Option<Box<crate::backend::mirror::Tap>>,
    /// `dry_run`: each statement counted by the planned layout's verdict.
    dry_run: Option<Box<dry_run::DryRunTap>>,
}

impl Session {
    #[allow(clippy::too_many_arguments)]
    /// A session for `client` on one shard's servers (its pooling mode is the shard's).
    pub fn new(mut client: Client, shard: Shard, query_parser: bool) -> Session {
        client.mode = shard.mode();
        let statement_pooling = client.mode == PoolerMode::Statement;
        if statement_pooling {
            client.mode = PoolerMode::Transaction;
        }
        let read_only = shard.read_only();
        let mirror = super::tap(&client.user, &client.database);
        let dry_run = Registry::current().dry_run(&client.database);
        Session {
            info: client.meter.client().clone(),
            client,
            shard,
            query_parser,
            read_only,
            server: None,
            taken: None,
            server_out: BytesMut::with_capacity(1024),
            registry_generation: Registry::generation(),
            statements: HashMap::default(),
            expected: VecDeque::new(),
            pinned: None,
            statement_pooling,
            transaction_block: false,
            copy_in: false,
            skip_until_sync: false,
            status: TxStatus::Idle,
            pending: Vec::new(),
            pending_discard_all: false,
            uncertain: false,
            batch_failed: false,
            verify: None,
            may_begin: false,
            set_in_transaction: false,
            last_parse: Default::default(),
            last_interned: None,
            server_fatal: None,
            aborted: None,
            role_hint: None,
            on_primary: false,
            fetch_lsn: false,
            write_lsn: None,
            retry: ReadRetry::No,
            cancel_sent: false,
            reset_due: false,
            reset_done: false,
            unsynced: false,
            query_behind_execute: false,
            replan: Default::default(),
            functions_changed: false,
            unnamed: None,
            dealloc: Default::default(),
            listening: None,
            mirror,
            dry_run: dry_run.map(|d| Box::new(dry_run::DryRunTap::new(d))),
        }
    }
}

impl ServeClient for Session {
    fn client_mut(&mut self) -> &mut Client {
        &mut self.client
    }

    async fn cleanup(&mut self) {
        self.leave_server_clean().await
    }

    async fn serve(&mut self) -> Result<(), SessionError> {
        if self.read_only && self.client.params.names().any(|n| n.contains("read_only")) {
            // Synced to each server, a startup value would turn read-only transactions off.
            return Err(SessionError::Terminated(
                read_only::CODE,
                read_only::MESSAGE.into(),
            ));
        }
        loop {
            if self.transaction_block {
                return Err(SessionError::Terminated(
                    "08P01",
                    "transaction blocks not allowed in statement pooling mode".into(),
                ));
            }
            // Everything already buffered from the client first.
            while let Some(m) = self.client.next_buffered()? {
                let mark = self.client.out.len();
                if self.server.is_some()
                    && self.expected.is_empty()
                    && self.status == TxStatus::Idle
                {
                    // Between transactions with a server kept (session mode, pinned).
                    self.check_still_single()?;
                }
                if let Err(e) = self.client_message(m).await {
                    if matches!(e, SessionError::Reconfigured(_)) {
                        // Nothing of the request that ends the session is answered.
                        self.client.out.truncate(mark);
                    }
                    return Err(e);
                }
            }
            let to_server = !self.server_out.is_empty();
            self.flush_server().await;
            // Answers pgdog made itself (a ParseComplete for a statement the server has) ahead
            // of requests now on their way to the server go out with the server's answers: one
            // write to the client, not two (pgbench -M extended: 3 sendto a transaction before).
            if !(to_server && self.server.is_some() && !self.expected.is_empty()) {
                self.flush().await?;
            }
            self.wait().await?;
        }
    }
}

impl Session {
    /// A client's query text as UTF-8 for pgdog to read: as the client's encoding reads it
    /// (borrowed when it was UTF-8), else a view with the unreadable bytes replaced (U+FFFD).
    /// The client's bytes are what servers get either way.
    pub(super) fn client_text<'a>(&self, bytes: &'a [u8]) -> std::borrow::Cow<'a, str> {
        self.client
            .codec
            .decode(bytes)
            .unwrap_or_else(|| String::from_utf8_lossy(bytes))
    }

    /// What `sql` means for the pooler (see `statements::classify`), calls judged against the
    /// server's own catalog of built-in functions; `simple`: a Query message's text.
    fn classify(&self, sql: &str, mentions: Mentions, simple: bool) -> Classified {
        let builtins = mentions.paren().then(|| self.shard.builtins()).flatten();
        statements::classify_mentioning(sql, mentions, builtins.as_deref(), simple)
    }

    /// Writes what is waiting for the client.
    async fn flush(&mut self) -> Result<(), ProtocolError> {
        self.client.flush().await
    }

    fn send(&mut self, m: &Message) {
        match m.tag() {
            backend::ERROR_RESPONSE => {
                crate::stats::error_response(m);
                if let Some(t) = self.mirror.as_mut() {
                    t.error_sent();
                }
            }
            backend::READY_FOR_QUERY => self.ready_sent(TxStatus::of(m)),
            _ => {}
        }
        self.client.queue(m.bytes());
    }

    /// A ReadyForQuery goes to the client: the request (and with `I` the transaction) is
    /// metered as over.
    fn ready_sent(&mut self, status: TxStatus) {
        let took = self.client.meter.ready(status);
        if let Some(d) = self.dry_run.as_mut() {
            d.ended(took, status);
        }
        if let Some(t) = self.mirror.as_mut() {
            t.ready(status);
        }
        self.cancel_sent = false;
    }

    /// ReadyForQuery with the transaction status the client is in now.
    fn ready_now(&mut self) {
        let status = self.server.as_ref().map_or(self.status, |s| s.status);
        self.send(&message::ready_for_query(status));
    }

    // ---- client -> server ----

    async fn client_message(&mut self, m: Message) -> Result<(), SessionError> {
        if let Some(tap) = self.mirror.as_mut() {
            tap.message(&m);
        }
        if let Some(d) = self.dry_run.as_mut() {
            d.message(&m);
        }
        if let Some(lost) = self.aborted.as_mut() {
            if lost.answer(&m, &mut self.statements, &mut self.client.out)? {
                self.aborted = None;
                self.status = TxStatus::Idle;
            }
            return Ok(());
        }
        let m = if matches!(m.tag(), frontend::FLUSH | frontend::SYNC) && m.len() != 5 {
            match self.well_sized(m).await {
                Some(m) => m,
                None => return Ok(()),
            }
        } else {
            m
        };
        if self.skip_until_sync {
            if m.tag() == frontend::SYNC {
                self.skip_until_sync = false;
                self.ready_now();
            }
            return Ok(());
        }
        match m.tag() {
            frontend::QUERY => self.query(m).await,
            frontend::PARSE
            | frontend::BIND
            | frontend::DESCRIBE
            | frontend::EXECUTE
            | frontend::CLOSE
            | frontend::SYNC
            | frontend::FLUSH
            | frontend::FUNCTION_CALL => self.extended(m).await,
            // CopyData/CopyDone/CopyFail: forwarded during COPY, ignored otherwise (as Postgres).
            frontend::COPY_DATA | frontend::COPY_DONE | frontend::COPY_FAIL => {
                if self.server.is_some() {
                    if m.tag() != frontend::COPY_DATA {
                        if !self.copy_in && !self.expected.is_empty() {
                            // A COPY that has not answered yet may be running.
                            self.expected.push_back(Expect::CopyEnd);
                        }
                        self.copy_in = false;
                    }
                    self.send_to_server(&m).await;
                }
                Ok(())
            }
            other => Err(ProtocolError::UnknownMessage(other).into()),
        }
    }

    async fn query(&mut self, m: Message) -> Result<(), SessionError> {
        let text = self.client_text(message::read_query_text(&m)?);
        let sql: &str = &text;
        let transaction = self.client.mode == PoolerMode::Transaction;
        // One pass over the text for every cheap filter below.
        let mentions = Mentions::of(sql);
        let deallocate = mentions
            .has(Word::Deallocate)
            .then(|| statements::deallocate(sql))
            .flatten();
        let target_all_forwarded = matches!(deallocate, Some(None));
        if let Some(target) = deallocate.filter(|_| transaction) {
            let tag = if target.is_none() {
                "DEALLOCATE ALL"
            } else {
                "DEALLOCATE"
            };
            if self.deallocate(target) {
                self.send(&message::command_complete(tag));
                self.ready_now();
                return Ok(());
            }
        }
        // ("reset" contains "set".)
        if mentions.has(Word::Set) && self.answer_set_role(sql) {
            return Ok(());
        }
        // ("unlisten" contains "listen".)
        if mentions.has(Word::Listen) && self.answer_listen(sql).await {
            return Ok(());
        }
        if self.read_only && read_only::turns_off(sql) {
            self.refuse_read_write().await;
            return Ok(());
        }
        self.may_begin |= mentions.may_begin();
        self.set_in_transaction |= mentions.has(Word::Set);
        if mentions.ddl_word() && statements::may_change_catalog(sql) {
            if let Some(why) = crate::reshard::moving::ddl_refusal(&self.client.database, sql) {
                self.refuse(message::error("55000", &why)).await;
                return Ok(());
            }
            self.functions_changed |= catalog_changes(sql);
        }
        let read = self.wants_read(sql, true);
        let classified = if self.query_parser {
            self.classify(sql, mentions, true)
        } else {
            Classified::default()
        };
        self.note(not_utf8(classified, &text));
        let fresh = self.server.is_none() && self.status == TxStatus::Idle;
        if !self.attach_now(read) && !self.attach(read).await? {
            // The error is out; a simple query still ends with ReadyForQuery.
            self.send(&message::ready_for_query(self.status));
            return Ok(());
        }
        if read && fresh && self.expected.is_empty() {
            self.retry = ReadRetry::possible(m.clone());
        } else if !matches!(self.retry, ReadRetry::SkipHeader) {
            // (A read run again elsewhere still drops its second RowDescription.)
            self.retry = ReadRetry::No;
        }
        // A simple query drops the unnamed statement and ends an implicit transaction.
        self.unnamed_closed();
        if self.unsynced {
            // Behind an extended batch that no Sync ended, a simple query can leave the
            // server's transaction state broken for whoever runs the next statement on it
            // (XX000 "StartTransactionCommand: unexpected state"): this client goes on with
            // it, then it is closed instead of going back.
            self.discard_after_use();
        }
        if self.expected.iter().any(|e| matches!(e, Expect::Execute)) {
            self.query_behind_execute = true;
        }
        self.unsynced = false;
        if target_all_forwarded {
            // DEALLOCATE ALL reaches the server (SQL-level statements): it drops pgdog's too.
            self.statements.clear();
            if let Some(s) = self.server.as_mut() {
                s.prepared.clear();
            }
        }
        self.expected.push_back(Expect::Ready);
        self.send_to_server(&m).await;
        Ok(())
    }

    /// A Flush or Sync with a body (the caller checks) gets Postgres' answer, ERROR 08P01 "invalid message
    /// format" (never forwarded: a Flush with a body left the server skipping to the next
    /// Sync, unknown to pgdog). After a Flush the rest up to Sync is skipped (none when
    /// skipping already); a Sync still ends the batch: it comes back as a Sync.
    async fn well_sized(&mut self, m: Message) -> Option<Message> {
        let flush = m.tag() == frontend::FLUSH;
        if flush && self.skip_until_sync {
            return None;
        }
        let error = message::error("08P01", "invalid message format");
        self.fail_in_order(error).await;
        (!flush).then(message::sync)
    }

    /// Notes an extended-protocol message on its way to the server: until a Sync follows, the
    /// server may be inside an implicit transaction.
    fn note_unsynced(&mut self, tag: u8) {
        match tag {
            frontend::SYNC | frontend::FUNCTION_CALL => self.unsynced = false,
            frontend::FLUSH => {}
            _ => self.unsynced = true,
        }
    }

    /// Remembers what a statement means for the session (applied when the server confirms).
    /// The session keeps its server connection until it leaves (transaction mode).
    fn pin(&mut self, reason: &'static str) {
        if self.client.mode == PoolerMode::Transaction {
            self.client.meter.client().pin(reason);
        }
        self.pinned = self.pinned.or(Some(reason));
    }

    fn note(&mut self, c: Classified) {
        if let Some(reason) = c.pin {
            if self.client.mode == PoolerMode::Transaction && self.pinned.is_none() {
                tracing::debug!(
                    "client {}@{} pinned to its server: {reason}",
                    self.client.user,
                    self.client.database
                );
            }
            self.pin(reason);
        }
        if !c.changes.is_empty() && (self.status != TxStatus::Idle || c.statements > 1) {
            self.uncertain = true;
        }
        self.pending.extend(c.changes);
        self.pending_discard_all |= c.discard_all;
        if c.discard_all {
            // DISCARD ALL includes UNLISTEN *.
            self.listening = None;
        }
    }

    /// Client-side DEALLOCATE of protocol-level statements; false when it is not ours.
    /// The global statements the client drops are retired: prepared again, the same text is
    /// planned afresh (see `prepared::retire`).
    fn deallocate(&mut self, target: Option<String>) -> bool {
        match target {
            None => {
                // DEALLOCATE ALL also reaches SQL-level statements of a pinned session.
                if self.pinned == Some("SQL-level PREPARE") {
                    return false;
                }
                // (Not the unnamed statement, which DEALLOCATE ALL leaves alone.)
                self.statements.retain(|name, p| {
                    prepared::retire(p);
                    name.is_empty()
                });
                // Its own DEALLOCATE statements go too.
                self.dealloc = Default::default();
                true
            }
            // `DEALLOCATE ""`: the server's syntax error (42601).
            Some(name) if name.is_empty() => false,
            Some(name) => self
                .statements
                .remove(&name)
                .map(|p| prepared::retire(&p))
                .is_some(),
        }
    }

    /// Queues an answer pgdog makes itself, in order with the server's answers.
    fn synthetic(&mut self, m: Message) {
        if self.expected.is_empty() {
            self.send(&m);
        } else {
            self.expected.push_back(Expect::Synthetic(m));
        }
    }

    async fn forward(&mut self, m: &Message, expect: Expect) {
        self.expected.push_back(expect);
        self.send_to_server(m).await;
    }

    /// Writes to the attached server; a failure is handled like a lost server.
    async fn send_to_server(&mut self, m: &Message) {
        if self.server.is_none() {
            return;
        }
        self.server_out.extend_from_slice(m.bytes());
        if self.server_out.len() >= 64 * 1024 {
            self.flush_server().await;
        }
    }

    /// Writes the queued client messages to the server; a failure is handled like a lost
    /// server (which may queue a read again for another server: written too).
    async fn flush_server(&mut self) {
        while !self.server_out.is_empty() {
            let Some(server) = self.server.as_mut() else {
                self.server_out.clear();
                return;
            };
            let written = server.write_raw(&self.server_out).await;
            crate::net::reuse(&mut self.server_out);
            if let Err(e) = written {
                let _ = self.server_lost(e).await;
            }
        }
    }

    // ---- server -> client ----

    async fn server_messages(&mut self) -> Result<(), SessionError> {
        loop {
            self.relay_in_place();
            let next = match self.server.as_mut() {
                Some(s) => s.try_read(),
                None => return Ok(()),
            };
            match next {
                Ok(Some(m)) => self.server_message(m),
                Ok(None) => return Ok(()),
                Err(e) => return self.server_lost(e).await,
            }
            if self.client.out.len() > 64 * 1024 {
                self.flush().await?;
            }
        }
    }

    /// Sends queued synthetic answers that are now due.
    fn release_synthetic(&mut self) {
        while let Some(Expect::Synthetic(_) | Expect::LocalParse { .. } | Expect::CopyEnd) =
            self.expected.front()
        {
            match self.expected.pop_front() {
                Some(Expect::Synthetic(m)) => self.send(&m),
                Some(Expect::LocalParse { .. }) => self.send(&message::parse_complete()),
                _ => {}
            }
        }
    }

    fn server_message(&mut self, m: Message) {
        if !self.retry.forward(m.tag()) {
            return;
        }
        self.release_synthetic();
        match m.tag() {
            backend::PARSE_COMPLETE => {
                match self.expected.front() {
                    Some(Expect::HiddenParse {
                        prepared: Some(prepared),
                    })
                    | Some(Expect::Parse {
                        prepared: Some((prepared, _)),
                        ..
                    }) => {
                        prepared.mark_valid();
                    }
                    _ => {}
                }
                if let Some(Expect::HiddenParse { .. }) = self.expected.front() {
                    self.expected.pop_front();
                    return;
                }
                self.pop_if(|e| matches!(e, Expect::Parse { .. } | Expect::ParseUnnamed(_)));
            }
            backend::BIND_COMPLETE => self.pop_if(|e| matches!(e, Expect::Bind(_))),
            backend::CLOSE_COMPLETE => {
                if let Some(Expect::HiddenClose) = self.expected.front() {
                    self.expected.pop_front();
                    return;
                }
                self.pop_if(|e| matches!(e, Expect::Close | Expect::CloseUnnamed))
            }
            backend::ROW_DESCRIPTION | backend::NO_DATA => {
                self.pop_if(|e| matches!(e, Expect::Describe(_)))
            }
            backend::COMMAND_COMPLETE
            | backend::EMPTY_QUERY_RESPONSE
            | backend::PORTAL_SUSPENDED => self.pop_if(|e| matches!(e, Expect::Execute)),
            backend::ERROR_RESPONSE => {
                if self.stale_plan(&m) {
                    return;
                }
                self.batch_failed = true;
                self.server_error(&m);
                return;
            }
            backend::COPY_IN_RESPONSE => self.copy_started(),
            backend::PARAMETER_STATUS => {
                if let Some(s) = self.server.as_mut() {
                    s.record_parameter(&m);
                }
                self.client.parameter_reported(&m);
                if self.client.mode == PoolerMode::Transaction && self.pinned.is_none() {
                    self.client.track_reported(&m);
                }
            }
            backend::READY_FOR_QUERY
                if matches!(self.expected.front(), Some(Expect::HiddenReady)) =>
            {
                self.expected.pop_front();
                return;
            }
            backend::READY_FOR_QUERY => {
                self.send(&m);
                self.ready(TxStatus::of(&m));
                return;
            }
            _ => {}
        }
        self.send(&m);
    }

    /// COPY FROM STDIN started: the server ignores the Syncs the client sent after the
    /// statement and before its CopyDone/CopyFail (libpq sends one right after Execute), so
    /// no ReadyForQuery answers them.
    fn copy_started(&mut self) {
        // Through the extended protocol, the COPY swallows the Sync after its Execute: the
        // server answers nothing more (not even an error's ReadyForQuery) until another Sync.
        let extended = matches!(self.expected.front(), Some(Expect::Execute));
        let queued = std::mem::take(&mut self.expected);
        let mut copying = true;
        for (i, e) in queued.into_iter().enumerate() {
            match e {
                Expect::CopyEnd if copying => copying = false,
                Expect::Ready if copying && i > 0 => {}
                e => self.expected.push_back(e),
            }
        }
        self.copy_in = copying;
        // (A Sync the client sent after its CopyDone is already on its way.)
        if extended && !self.expected.iter().any(|e| matches!(e, Expect::Ready)) {
            self.unsynced = true;
        }
        if extended && self.query_behind_execute {
            // A simple query already sent lands in the batch whose Sync the COPY swallowed
            // (see `query`): the server is not handed on after this client.
            self.discard_after_use();
        }
    }

    /// The server serves this client on, then is closed instead of going back to the pool.
    fn discard_after_use(&mut self) {
        if let Some(s) = self.server.as_mut() {
            s.discard();
        }
    }

    fn pop_if(&mut self, f: impl Fn(&Expect) -> bool) {
        if self.expected.front().is_some_and(f) {
            self.expected.pop_front();
        }
    }

    /// An ErrorResponse: in the extended protocol the server skips everything up to Sync.
    fn server_error(&mut self, m: &Message) {
        if let Ok(f) = read_error(m) {
            if f.severity == "FATAL" || f.severity == "PANIC" {
                // The server closes the connection next: `server_lost` answers for it.
                if let Some(s) = self.server.as_mut() {
                    s.discard();
                }
                self.server_fatal = Some(ServerFatal::new(m, &f));
                return;
            }
        }
        if self.expected.is_empty() {
            // An error to a message that has no answer of its own (a malformed Flush): the
            // server now skips everything up to a Sync.
            self.unsynced = true;
        }
        let forwarded = match self.expected.front() {
            Some(Expect::Replace(error)) => error.clone(),
            _ => m.clone(),
        };
        self.retry = ReadRetry::No;
        self.send(&forwarded);
        self.skip_to_sync();
        self.copy_in = false;
    }

    /// After an error the server skips every message up to the next Sync: what pgdog expected
    /// of them is forgotten, with what those messages would have created.
    fn skip_to_sync(&mut self) {
        let mut failed = true;
        // Parses of the cached unnamed statement among the undone messages: what the client's
        // unnamed statement was before the first (none if the first is the one that failed,
        // as with Postgres), and what the last one set.
        let (mut before, mut last_set) = (None, None);
        // (Unless a later Parse or a simple query already sent has changed it since.)
        let current = self.statements.get("").map(|p| p.id);
        while let Some(front) = self.expected.pop_front() {
            if let Expect::Ready = front {
                self.expected.push_front(Expect::Ready);
                break;
            }
            if let Some(swap) = front.unnamed_swap() {
                before = before.or_else(|| Some(swap.previous.clone().filter(|_| !failed)));
                last_set = Some(swap.set);
            }
            self.not_done(front, failed);
            failed = false;
        }
        if let Some(before) = before.filter(|_| last_set.is_some() && current == last_set) {
            match before {
                Some(p) => self.statements.insert(String::new(), p),
                None => self.statements.remove(""),
            };
        }
    }

    /// A message the server failed (`failed`), skipped or never answered (its connection
    /// lost): whatever it would have created does not exist.
    fn not_done(&mut self, expect: Expect, failed: bool) {
        match expect {
            Expect::Parse {
                prepared: Some((p, name)),
                ..
            } => self.forget_statement(&p, Some(&name)),
            Expect::HiddenParse { prepared: Some(p) } => self.forget_statement(&p, None),
            Expect::ParseUnnamed(parse) => self.unnamed_parse_failed(parse, failed),
            Expect::HiddenParse { prepared: None } | Expect::HiddenClose | Expect::CloseUnnamed => {
                self.unnamed_unknown()
            }
            Expect::LocalParse { name, .. } => {
                self.statements.remove(&*name);
            }
            _ => {}
        }
    }

    /// A Parse of `p` failed or was skipped: the server does not have it, nor the client
    /// `name` (unless it has been redefined since).
    fn forget_statement(&mut self, p: &Prepared, name: Option<&str>) {
        if let Some(s) = self.server.as_mut() {
            s.prepared.remove(&p.id);
        }
        if let Some(name) = name {
            if self.statements.get(name).is_some_and(|q| q.id == p.id) {
                self.statements.remove(name);
            }
        }
    }

    /// ReadyForQuery: one Sync/Query answered.
    fn ready(&mut self, status: TxStatus) {
        if self.statement_pooling && status != TxStatus::Idle {
            // PgBouncer ends the client instead of forwarding this ReadyForQuery (just queued).
            let ready = [b'Z', 0, 0, 0, 5, status.byte()];
            if self.client.out.ends_with(&ready) {
                let keep = self.client.out.len() - ready.len();
                self.client.out.truncate(keep);
            }
            self.transaction_block = true;
        }
        self.pop_if(|e| matches!(e, Expect::Ready));
        if status == TxStatus::Idle && !self.expected.iter().any(|e| matches!(e, Expect::Ready)) {
            self.set_in_transaction = false;
        }
        if !self.expected.iter().any(|e| matches!(e, Expect::Execute)) {
            self.query_behind_execute = false;
        }
        self.retry = ReadRetry::No;
        if self.may_begin && !self.expected.iter().any(|e| matches!(e, Expect::Ready)) {
            self.may_begin = false;
        }
        self.release_synthetic();
        self.status = status;
        if let Some(s) = self.server.as_mut() {
            s.status = status;
        }
        self.settle_parameters(status);
        if status == TxStatus::Idle && std::mem::take(&mut self.functions_changed) {
            crate::backend::builtins::mark_stale();
            crate::registry::health::wake();
        }
        self.release_if_idle();
    }

    /// Transaction mode: the server goes back to the pool once nothing is in flight.
    fn release_if_idle(&mut self) {
        let idle = self.expected.is_empty()
            && self.status == TxStatus::Idle
            && !self.unsynced
            && !self.copy_in
            && self.server_out.is_empty()
            && self.verify.is_none()
            && !self.fetch_lsn;
        let releasing =
            idle && self.client.mode == PoolerMode::Transaction && self.pinned.is_none();
        if releasing && self.on_primary && self.shard.policy().read_your_writes {
            // Where this client's writes end on the primary, before the server goes back.
            self.fetch_lsn = true;
            return;
        }
        if releasing && !self.query_parser && !self.reset_done && reset_query_set() {
            // pgdog saw nothing of the session state: reset the server before it goes back.
            self.reset_due = true;
            return;
        }
        if releasing {
            self.reset_done = false;
            if let Some(s) = self.server.as_mut() {
                s.returned_at(self.client.meter.ready_at());
            }
            self.detach();
        }
    }

    /// The client is gone: leave the server clean for the next one, or close it.
    async fn leave_server_clean(&mut self) {
        let Some(mut server) = self.server.take() else {
            return;
        };
        *self.client.cancel.slot.lock() = None;
        if !self.expected.is_empty() || self.copy_in || self.unsynced {
            // In the middle of a query, or of a batch not ended by Sync (an implicit
            // transaction may be open: a Sync would commit it): closed, so Postgres rolls
            // back what the client left, as when a client disconnects from it directly.
            server.discard();
            return;
        }
        let reset = self.client.mode == PoolerMode::Session || self.pinned.is_some();
        server.leave_clean(reset).await;
    }
}

/// `sql` may change the catalog: shared prepared statements are planned afresh. True when it
/// may also add a function that shadows a built-in one (see `functions_changed`).
fn catalog_changes(sql: &str) -> bool {
    prepared::retire_all();
    crate::backend::builtins::may_add_functions(sql)
}
