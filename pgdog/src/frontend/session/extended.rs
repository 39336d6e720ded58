//! The extended protocol of a one-server session. In transaction mode the client's named
//! statements are pgdog's global ones (`backend::prepared`), prepared lazily on whichever
//! server the client holds; a name is defined once (42P05 for a second Parse, as Postgres). In
//! session mode the server is the client's own: every message reaches it unchanged, so
//! DEALLOCATE, `pg_prepared_statements` and re-preparing after DDL behave as directly. In both
//! modes the client's unnamed statement follows it from server to server (`unnamed`); in
//! transaction mode it is cached as a global statement too (`cache_unnamed_statements`).
use super::expect::UnnamedSwap;
use super::{Expect, Session, SessionError};
use crate::backend::prepared::{self, Prepared};
use crate::config::PoolerMode;
use crate::frontend::mentions::{Mentions, Word};
use crate::frontend::read_only;
use crate::frontend::statements;
use crate::net::message::{self, read_parse, read_target};
use crate::net::tag::{frontend, target};
use crate::net::Message;

impl Session {
    /// What a Parse's text mentions: the last Parse's answer when the text is the same (a
    /// comparison of the bytes; the scan was about 1,000 instructions of a `pgbench -M
    /// extended` transaction's 17,300, callgrind).
    fn parse_mentions(&mut self, text: &str) -> Mentions {
        // Texts up to 4 KiB are kept: an idle client holds no large one.
        const KEPT: usize = 4096;
        let (last, mentions) = &mut self.last_parse;
        if last.as_slice() == text.as_bytes() {
            return *mentions;
        }
        last.clear();
        if text.len() <= KEPT {
            last.extend_from_slice(text.as_bytes());
        } else {
            last.shrink_to(KEPT);
        }
        *mentions = Mentions::of(text);
        *mentions
    }

    /// `prepared::intern`, remembering its last answer: a client repeating its Parse gets the
    /// same statement without the global lookup (which copied the text to look it up: three
    /// allocations and a SipHash of the text a `-M extended` transaction, callgrind). Any
    /// retirement since makes it look up again.
    fn intern(&mut self, query: &str, wire: &[u8], types: &[i32], settings: u64) -> Prepared {
        let retired = prepared::retirements();
        if let Some((p, at)) = &self.last_interned {
            let s = &p.statement;
            if *at == retired
                && s.settings == settings
                && s.wire_text() == wire
                && s.param_types == types
            {
                return p.clone();
            }
        }
        let p = prepared::intern_wire(query, wire, types, settings);
        self.last_interned = Some((p.clone(), retired));
        p
    }

    pub(super) async fn extended(&mut self, m: Message) -> Result<(), SessionError> {
        // A Parse's text, read once here for what every Parse needs checked.
        let mut deallocate = false;
        // What a Parse's text mentions, found once for every check below.
        let mut mentions = Mentions::default();
        // A Parse's fields and text, read once for every step below (three reads of each
        // were 800 instructions a `-M extended` transaction, callgrind).
        let parsed = match m.tag() {
            frontend::PARSE => {
                let fields = read_parse(&m)?;
                let text = self.client_text(fields.text);
                Some((fields, text))
            }
            _ => None,
        };
        if let Some((fields, text)) = &parsed {
            let name = &fields.name;
            mentions = self.parse_mentions(text);
            self.set_in_transaction |= mentions.has(Word::Set);
            if mentions.ddl_word() && statements::may_change_catalog(text) {
                if let Some(why) = crate::reshard::moving::ddl_refusal(&self.client.database, text)
                {
                    self.fail_in_order(message::error("55000", &why)).await;
                    return Ok(());
                }
                self.functions_changed |= super::catalog_changes(text);
            }
            if self.read_only && read_only::turns_off(text) {
                let error = message::error(read_only::CODE, read_only::MESSAGE);
                self.fail_in_order(error).await;
                return Ok(());
            }
            deallocate = self.client.mode == PoolerMode::Transaction
                && self.parse_deallocate(name, text, mentions);
        }
        if let Some(error) = invalid_subtype(&m) {
            // Postgres' answer; the session goes on after the next Sync.
            self.fail_in_order(error).await;
            return Ok(());
        }
        if self.client.mode == PoolerMode::Session {
            return self.passthrough(m).await;
        }
        self.replan.note(&m);
        if deallocate {
            return Ok(());
        }
        if self.answer_deallocate(&m).await? {
            return Ok(());
        }
        // A named statement some server has already accepted needs no server to be "prepared":
        // it is prepared on whichever connection the client holds when it is used. This keeps
        // synchronous prepares (libpq PQprepare) from waiting for a connection.
        if let Some((fields, query)) = parsed
            .as_ref()
            .filter(|_| self.server.is_none() && self.expected.is_empty())
        {
            let unnamed = fields.name.is_empty();
            if !unnamed && self.statements.contains_key(&*fields.name) {
                let error = redefined(&fields.name);
                self.send(&error);
                self.skip_until_sync = true;
                return Ok(());
            }
            let settings = self.statement_settings();
            if !unnamed || (crate::config::cache_unnamed_statements() && settings.is_some()) {
                let settings = settings.unwrap_or_else(prepared::unshared);
                let prepared = self.intern(query, fields.text, &fields.param_types, settings);
                if prepared.is_valid() {
                    self.note_parse(&fields.name, query, mentions);
                    self.unnamed = self.unnamed.take().filter(|_| !unnamed);
                    self.statements.insert(fields.name.to_string(), prepared);
                    self.send(&message::parse_complete());
                    return Ok(());
                }
            }
        }
        match m.tag() {
            frontend::SYNC if self.copy_in => {
                // Postgres ignores Sync during COPY FROM STDIN (libpq sends one).
                self.send_to_server(&m).await;
                return Ok(());
            }
            frontend::SYNC | frontend::FLUSH
                if self.server.is_none() && self.expected.is_empty() =>
            {
                if m.tag() == frontend::SYNC {
                    self.send(&message::ready_for_query(self.status));
                }
                return Ok(());
            }
            frontend::CLOSE => {
                let (kind, name) = read_target(&m)?;
                if kind == target::STATEMENT && !name.is_empty() {
                    self.statements.remove(&*name);
                    self.synthetic(message::close_complete());
                    return Ok(());
                }
            }
            _ => {}
        }
        let read = self.message_reads(&m)?;
        if !self.attach_for(&m, read).await? {
            return Ok(());
        }
        match m.tag() {
            frontend::PARSE => {
                if let Some((fields, query)) = &parsed {
                    self.parse(&m, fields, query, mentions).await?
                }
            }
            frontend::BIND => {
                let (_, name, offset) = message::read_bind_names(&m)?;
                self.dealloc.bound(&name);
                match self.ensure_prepared(&name).await {
                    Some(prepared) => {
                        // Written straight into the bytes for the server (no message built).
                        let out = &mut self.server_out;
                        let mark = out.len();
                        message::rewrite_bind_into(&m, offset, prepared.server_name(), out)?;
                        if self.server.is_none() {
                            self.server_out.truncate(mark);
                        }
                        self.expected.push_back(Expect::Bind(Some(prepared)));
                        if self.server_out.len() >= 64 * 1024 {
                            self.flush_server().await;
                        }
                    }
                    None => {
                        if name.is_empty() {
                            self.ensure_unnamed().await;
                        }
                        // Unknown to us: the server says "does not exist".
                        self.forward(&m, Expect::Bind(None)).await
                    }
                }
            }
            frontend::DESCRIBE => {
                let (kind, name) = read_target(&m)?;
                if kind == target::STATEMENT {
                    if let Some(prepared) = self.ensure_prepared(&name).await {
                        let server_name = prepared.server_name_arc();
                        self.forward(
                            &message::target(frontend::DESCRIBE, target::STATEMENT, &server_name),
                            Expect::Describe(Some(prepared)),
                        )
                        .await;
                        return Ok(());
                    }
                    if name.is_empty() {
                        self.ensure_unnamed().await;
                    }
                }
                self.forward(&m, Expect::Describe(None)).await;
            }
            frontend::CLOSE => {
                let expect = self.closing(&m)?;
                self.forward(&m, expect).await
            }
            _ => self.forward_plain(&m).await,
        }
        Ok(())
    }

    /// Session mode: the message reaches the server as the client sent it (the unnamed
    /// statement still checked: pgdog's own queries between requests drop it on the server).
    async fn passthrough(&mut self, m: Message) -> Result<(), SessionError> {
        if m.tag() == frontend::SYNC && self.copy_in {
            self.send_to_server(&m).await;
            return Ok(());
        }
        if !self.attach_for(&m, false).await? {
            return Ok(());
        }
        match m.tag() {
            frontend::PARSE => {
                let fields = read_parse(&m)?;
                let (name, text) = (fields.name, self.client_text(fields.text));
                let mentions = Mentions::of(&text);
                self.may_begin |= mentions.may_begin();
                if self.query_parser {
                    self.note(super::not_utf8(
                        self.classify(&text, mentions, false),
                        &text,
                    ));
                    self.uncertain |= !self.pending.is_empty();
                }
                let expect = if name.is_empty() {
                    Expect::ParseUnnamed(self.unnamed_parsed(&m))
                } else {
                    Expect::Parse {
                        prepared: None,
                        swap: None,
                    }
                };
                self.forward(&m, expect).await;
            }
            frontend::BIND => {
                if message::read_bind_names(&m)?.1.is_empty() {
                    self.ensure_unnamed().await;
                }
                self.forward(&m, Expect::Bind(None)).await;
            }
            frontend::DESCRIBE => {
                if read_target(&m)? == (target::STATEMENT, "".into()) {
                    self.ensure_unnamed().await;
                }
                self.forward(&m, Expect::Describe(None)).await;
            }
            frontend::CLOSE => {
                let expect = self.closing(&m)?;
                self.forward(&m, expect).await;
            }
            _ => self.forward_plain(&m).await,
        }
        Ok(())
    }

    /// A server for extended-protocol message `m` (noted as on its way to it); false when none
    /// could be had: the error is out, the rest up to Sync is skipped (Sync gets its
    /// ReadyForQuery).
    async fn attach_for(&mut self, m: &Message, read: bool) -> Result<bool, SessionError> {
        if !self.attach_now(read) && !self.attach(read).await? {
            self.skip_until_sync = m.tag() != frontend::SYNC;
            if m.tag() == frontend::SYNC {
                self.send(&message::ready_for_query(self.status));
            }
            return Ok(false);
        }
        self.note_unsynced(m.tag());
        Ok(true)
    }

    /// Execute, Sync, FunctionCall (each with its answer expected) and Flush.
    async fn forward_plain(&mut self, m: &Message) {
        match m.tag() {
            frontend::EXECUTE => {
                self.pending_discard_all |= self.dealloc.executes_discard();
                self.forward(m, Expect::Execute).await
            }
            frontend::SYNC | frontend::FUNCTION_CALL => self.forward(m, Expect::Ready).await,
            _ => self.send_to_server(m).await, // Flush
        }
    }

    /// A Close reaching the server (what to expect of it): closing the unnamed statement
    /// leaves the client none.
    fn closing(&mut self, m: &Message) -> Result<Expect, SessionError> {
        if read_target(m)? == (target::STATEMENT, "".into()) {
            self.unnamed_closed();
            return Ok(Expect::CloseUnnamed);
        }
        Ok(Expect::Close)
    }

    /// A Parse (transaction mode) whose text mentions `mentions`.
    async fn parse(
        &mut self,
        m: &Message,
        fields: &message::ParseFields<'_>,
        query: &str,
        mentions: Mentions,
    ) -> Result<(), SessionError> {
        self.may_begin |= mentions.may_begin();
        self.note_parse(&fields.name, query, mentions);
        let unnamed = fields.name.is_empty();
        let settings = self.statement_settings();
        let prepared = (!unnamed
            || (crate::config::cache_unnamed_statements() && settings.is_some()))
        .then(|| {
            let settings = settings.unwrap_or_else(prepared::unshared);
            self.intern(query, fields.text, &fields.param_types, settings)
        });
        // The unnamed statement is not cached when the setting is off, while the client's
        // settings are changing in this transaction, or while this server's Parse of the same
        // text is unanswered (it may fail: answering this one locally would hide that).
        let prepared = prepared.filter(|p| {
            !unnamed
                || p.is_valid()
                || !self
                    .server
                    .as_ref()
                    .is_some_and(|s| s.prepared.contains(&p.id))
        });
        let Some(prepared) = prepared else {
            self.unnamed_forgotten();
            let expect = Expect::ParseUnnamed(self.unnamed_parsed(m));
            self.forward(m, expect).await;
            return Ok(());
        };
        if !unnamed && self.statements.contains_key(&*fields.name) {
            // Postgres' answer comes in order, and fails the server's batch as its own would.
            let error = redefined(&fields.name);
            self.fail_on_server(error).await;
            return Ok(());
        }
        // The unnamed statement, cached: one of the global statements under the client's name
        // "" (a Parse of it replaces the one before, which comes back if the server skips it).
        let previous = self
            .statements
            .insert(fields.name.to_string(), prepared.clone());
        let swap = unnamed.then_some(UnnamedSwap {
            set: prepared.id,
            previous,
        });
        if unnamed {
            self.unnamed = None;
        }
        let has = self
            .server
            .as_ref()
            .is_some_and(|s| s.prepared.contains(&prepared.id));
        if has {
            self.local_parse(&fields.name, swap);
        } else {
            let expect = Expect::Parse {
                prepared: Some((prepared.clone(), (*fields.name).into())),
                swap,
            };
            self.parse_on_server(&prepared, expect).await;
        }
        Ok(())
    }

    /// The settings a statement parsed now is shared under (`Statement::settings`): the
    /// client's fingerprint; None while a SET of the current transaction (SET LOCAL too) may
    /// have changed what the server parses with, which the fingerprint does not show yet.
    fn statement_settings(&self) -> Option<u64> {
        (!self.set_in_transaction && self.pending.is_empty())
            .then(|| self.client.params.fingerprint())
    }

    /// What a Parse of `query` as statement `name` means for the pooler (transaction mode).
    fn note_parse(&mut self, name: &str, query: &str, mentions: Mentions) {
        if !self.query_parser {
            return;
        }
        let mut classified = self.classify(query, mentions, false);
        // A DISCARD ALL takes effect when it runs (see `Deallocs::executes_discard`).
        self.dealloc
            .parsed(name, std::mem::take(&mut classified.discard_all));
        self.note(classified);
        // Executed later (or never): read the values back afterwards.
        self.uncertain |= !self.pending.is_empty();
    }

    /// ParseComplete answered by pgdog for a statement the server already has; the client's
    /// name is forgotten again if an earlier error makes the server skip this Parse.
    fn local_parse(&mut self, name: &str, swap: Option<UnnamedSwap>) {
        if self.expected.is_empty() {
            self.send(&message::parse_complete());
        } else {
            self.expected.push_back(Expect::LocalParse {
                name: name.into(),
                swap,
            });
        }
    }

    /// Makes the server fail where the client's message stands, with `error` as the client's
    /// answer: a Bind of a statement that does not exist (26000, replaced by `error`). The
    /// server then skips to Sync and aborts the transaction, as for an error of its own.
    pub(super) async fn fail_on_server(&mut self, error: Message) {
        let bind = message::build(frontend::BIND, |b| {
            message::put_cstr(b, "");
            message::put_cstr(b, MISSING);
            b.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        });
        self.forward(&bind, Expect::Replace(error)).await;
    }

    /// Answers the client's extended-protocol message with `error`, in order with what the
    /// server still owes it; the rest up to Sync is skipped, as after a server's error.
    pub(super) async fn fail_in_order(&mut self, error: Message) {
        if self.server.is_some() {
            self.note_unsynced(frontend::PARSE);
            self.fail_on_server(error).await;
        } else {
            self.send(&error);
            self.skip_until_sync = true;
        }
    }

    /// Sends `prepared`'s Parse to the attached server (known there from now on).
    pub(super) async fn parse_on_server(&mut self, prepared: &Prepared, expect: Expect) {
        if let Some(s) = self.server.as_mut() {
            s.prepared.insert(prepared.id);
        }
        let parse = message::parse_bytes(
            prepared.server_name(),
            prepared.statement.wire_text(),
            &prepared.statement.param_types,
        );
        self.forward(&parse, expect).await;
    }

    /// Makes sure the client's statement `name` exists on the attached server (injecting a
    /// Parse whose answer the client does not see); its server-side name.
    async fn ensure_prepared(&mut self, name: &str) -> Option<Prepared> {
        let prepared = self.statements.get(name)?.clone();
        let has = self
            .server
            .as_ref()
            .is_some_and(|s| s.prepared.contains(&prepared.id));
        if !has {
            let expect = Expect::HiddenParse {
                prepared: Some(prepared.clone()),
            };
            self.parse_on_server(&prepared, expect).await;
        }
        Some(prepared)
    }
}

/// A statement name no server has: a Bind of it fails (see `fail_on_server`).
const MISSING: &str = "__pgdog_missing";

/// Postgres' answer to a Parse of a name the client has already prepared.
fn redefined(name: &str) -> Message {
    let name = message::shown_name(name);
    message::error(
        "42P05",
        &format!("prepared statement \"{name}\" already exists"),
    )
}

/// A Describe or Close whose subtype is neither statement nor portal: Postgres' error for it.
fn invalid_subtype(m: &Message) -> Option<Message> {
    let what = match m.tag() {
        frontend::DESCRIBE => "DESCRIBE",
        frontend::CLOSE => "CLOSE",
        _ => return None,
    };
    let kind = *m.payload().first()?;
    (kind != target::STATEMENT && kind != target::PORTAL)
        .then(|| message::error("08P01", &format!("invalid {what} message subtype {kind}")))
}
