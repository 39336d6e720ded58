//! Transactions across shards: BEGIN is remembered and replayed on each shard the transaction
//! touches (with the SETs made inside it); COMMIT and ROLLBACK reach every touched shard. With
//! `two_phase_commit`, a transaction that wrote on several shards is prepared on all of them
//! (`PREPARE TRANSACTION`) before any commits. Also session-level SET/RESET on a sharded
//! database, including pgdog's own `pgdog.shard` and `pgdog.sharding_key`.
use super::{ClientError, ShardedSession};
use crate::backend::twophase;
use crate::frontend::statements::{self, SetChange};
use crate::net::TxStatus;
use pg_query_raw::router::{Const, Statement, StatementKind, Transaction};

/// An open transaction.
#[derive(Debug, Clone)]
pub struct Tx {
    /// Statements that start it on a shard: the client's BEGIN, then its SETs.
    pub prelude: Vec<String>,
    /// Per shard: BEGIN sent.
    pub begun: Vec<bool>,
    /// Session-level SET/RESET made inside it, applied when it commits.
    pub changes: Vec<SetChange>,
    /// Opened by pgdog around a multi-statement query.
    #[allow(dead_code)]
    pub implicit: bool,
    /// BEGIN READ ONLY (or SET TRANSACTION READ ONLY before any shard began): it may run on
    /// replicas.
    pub read_only: bool,
    /// A shard's server was lost inside it: its work there is gone, so no savepoint can
    /// repair it; only ROLLBACK (or COMMIT, which rolls back) ends it.
    pub lost: bool,
}

impl Tx {
    pub fn new(begin: &str, implicit: bool, shards: usize) -> Tx {
        Tx {
            prelude: vec![begin.to_string()],
            begun: vec![false; shards],
            changes: Vec::new(),
            implicit,
            read_only: crate::router::read_write::begins_read_only(begin),
            lost: false,
        }
    }
}

/// Whether a statement may run in a failed transaction (it ends or repairs it).
pub fn ends_transaction(kind: &StatementKind) -> bool {
    matches!(
        kind,
        StatementKind::Transaction(
            Transaction::Commit | Transaction::Rollback | Transaction::RollbackTo(_)
        )
    )
}

pub fn aborted() -> ClientError {
    ClientError::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

impl ShardedSession {
    /// Transaction control; returns the CommandComplete tag.
    pub(super) async fn transaction(
        &mut self,
        t: &Transaction,
        sql: &str,
    ) -> Result<String, ClientError> {
        match t {
            Transaction::Begin => {
                if std::mem::take(&mut self.batch_tx) {
                    // BEGIN inside a batch's implicit transaction makes it explicit (Postgres).
                    self.status = TxStatus::InTransaction;
                } else if self.tx.is_some() {
                    self.send(&crate::net::message::error_response(
                        "WARNING",
                        "25001",
                        "there is already a transaction in progress",
                    ));
                } else {
                    self.tx = Some(Tx::new(sql, false, self.shards.len()));
                    self.status = TxStatus::InTransaction;
                }
                Ok("BEGIN".into())
            }
            Transaction::Commit => {
                if self.tx.is_none() {
                    self.warn_no_transaction();
                    return Ok("COMMIT".into());
                }
                if self.status == TxStatus::Failed {
                    self.rollback().await?;
                    return Ok("ROLLBACK".into());
                }
                if let Some(e) = self.lost_before_commit() {
                    self.rollback().await?;
                    return Err(e);
                }
                self.commit().await?;
                Ok("COMMIT".into())
            }
            Transaction::Rollback => {
                if self.tx.is_none() {
                    self.warn_no_transaction();
                    return Ok("ROLLBACK".into());
                }
                self.rollback().await?;
                Ok("ROLLBACK".into())
            }
            Transaction::Savepoint(_) | Transaction::Release(_) | Transaction::RollbackTo(_) => {
                if matches!(t, Transaction::RollbackTo(_))
                    && self.tx.as_ref().is_some_and(|tx| tx.lost)
                {
                    return Err(ClientError::new(
                        "08006",
                        "a shard's server connection was lost in this transaction: its work there is gone; end the transaction with ROLLBACK",
                    ));
                }
                let Some(tx) = self.tx.as_mut() else {
                    return Err(ClientError::new(
                        "25P01",
                        format!(
                            "{} can only be used in transaction blocks",
                            sql.split_whitespace().next().unwrap_or("SAVEPOINT").to_uppercase()
                        ),
                    ));
                };
                tx.prelude.push(sql.to_string());
                let begun: Vec<usize> = (0..tx.begun.len()).filter(|s| tx.begun[*s]).collect();
                let mut first_error = None;
                for shard in begun {
                    let server = self.server(shard).await?;
                    if let Err(e) = server.execute(sql).await {
                        first_error.get_or_insert(ClientError::from(e));
                    }
                }
                if let Some(e) = first_error {
                    return Err(e);
                }
                if matches!(t, Transaction::RollbackTo(_)) {
                    self.status = TxStatus::InTransaction;
                }
                Ok(match t {
                    Transaction::Savepoint(_) => "SAVEPOINT",
                    Transaction::Release(_) => "RELEASE",
                    _ => "ROLLBACK",
                }
                .into())
            }
            Transaction::Prepare(_)
            | Transaction::CommitPrepared(_)
            | Transaction::RollbackPrepared(_) => Err(ClientError::new(
                "0A000",
                "two-phase commit statements are managed by pgdog on sharded databases (two_phase_commit = true)",
            )),
        }
    }

    /// COMMIT or ROLLBACK outside a transaction: Postgres' WARNING, and the command succeeds.
    fn warn_no_transaction(&mut self) {
        let m = crate::net::message::error_response(
            "WARNING",
            "25P01",
            "there is no transaction in progress",
        );
        self.send(&m);
    }

    /// A server of the transaction that died while the client was idle in it (found before
    /// anything commits, so no shard commits while another's work is gone): the error to give.
    fn lost_before_commit(&mut self) -> Option<ClientError> {
        let begun: Vec<usize> = self
            .tx
            .as_ref()
            .map(|t| (0..t.begun.len()).filter(|s| t.begun[*s]).collect())
            .unwrap_or_default();
        for shard in begun {
            let broken = self.servers[shard].as_mut().is_none_or(|s| s.is_broken());
            if broken {
                let addr = self.servers[shard]
                    .as_ref()
                    .map(|s| s.addr().to_string())
                    .unwrap_or_default();
                let e = crate::backend::ServerError::Protocol {
                    addr,
                    error: crate::net::ProtocolError::Closed,
                };
                let lost = self.lose(shard, &e);
                return Some(ClientError::new(
                    "08006",
                    format!("{}; the transaction was rolled back", lost.message),
                ));
            }
        }
        None
    }

    /// Postgres runs the Executes of one extended-protocol batch (up to Sync) in one implicit
    /// transaction. A write (INSERT, UPDATE, DELETE, MERGE) with no transaction open and more
    /// messages before the Sync (`sync_next`: the next buffered message is the Sync, as for
    /// one statement and its Sync) opens that transaction on every shard the batch touches:
    /// committed at Sync (two-phase when on), rolled back after an error or when the client
    /// leaves.
    pub(super) fn open_batch_tx(&mut self, kind: &StatementKind, sync_next: bool) {
        let write = matches!(
            kind,
            StatementKind::Insert
                | StatementKind::Update
                | StatementKind::Delete
                | StatementKind::Merge
        );
        if self.tx.is_some() || !write || sync_next {
            return;
        }
        self.tx = Some(Tx::new("BEGIN", true, self.shards.len()));
        self.batch_tx = true;
    }

    /// At Sync: commits the batch's implicit transaction, or rolls it back after an error
    /// (whose ErrorResponse the client has); a failed COMMIT's error goes before ReadyForQuery.
    pub(super) async fn end_batch_tx(&mut self) {
        if !std::mem::take(&mut self.batch_tx) || self.tx.is_none() {
            return;
        }
        let result = if self.status == TxStatus::Failed {
            self.rollback().await
        } else {
            self.commit().await
        };
        self.status = TxStatus::Idle;
        if let Err(e) = result {
            self.send(&e.message());
        }
    }

    /// Opens the transaction pgdog runs one statement in when the client has none (`true`),
    /// so that it succeeds or fails as a whole across shards.
    pub(super) fn begin_implicit(&mut self) -> bool {
        if self.tx.is_some() {
            return false;
        }
        self.tx = Some(Tx::new("BEGIN", true, self.shards.len()));
        true
    }

    /// Ends what [`Self::begin_implicit`] opened (`implicit`): COMMIT after success (two-phase
    /// when configured), else ROLLBACK; the statement's error first, then the COMMIT's.
    pub(super) async fn end_implicit<T>(
        &mut self,
        implicit: bool,
        result: Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        if !implicit {
            return result;
        }
        let end = if result.is_ok() {
            self.commit().await
        } else {
            self.rollback().await
        };
        self.status = TxStatus::Idle;
        let value = result?;
        end.map(|()| value)
    }

    pub(super) async fn commit(&mut self) -> Result<(), ClientError> {
        let Some(tx) = self.tx.take() else {
            return Ok(());
        };
        self.status = TxStatus::Idle;
        let begun: Vec<usize> = (0..tx.begun.len()).filter(|s| tx.begun[*s]).collect();
        let result = if self.two_phase && begun.len() > 1 {
            self.commit_two_phase(&begun).await
        } else {
            let mut first_error = None;
            for shard in begun.iter().copied() {
                let r = match self.servers[shard].as_mut() {
                    Some(server) => server.execute("COMMIT").await,
                    None => continue,
                };
                if let Err(e) = r {
                    first_error.get_or_insert(ClientError::from(e));
                }
            }
            first_error.map_or(Ok(()), Err)
        };
        if result.is_ok() {
            for change in &tx.changes {
                self.client.params.apply(change);
            }
            self.settle_settings(&begun);
        } else {
            // Settings may be anything now: forget what the servers have.
            for shard in begun {
                if let Some(s) = self.servers[shard].as_mut() {
                    s.set_settings(Default::default());
                    s.discard();
                }
            }
        }
        result
    }

    /// Two-phase commit (see `backend::twophase`): prepare every participant but the first,
    /// record the decision in the first one's transaction and commit it, then commit the
    /// prepared ones. Failpoints (feature `failpoints`) stop the process at each step.
    async fn commit_two_phase(&mut self, shards: &[usize]) -> Result<(), ClientError> {
        let in_flight = twophase::begin();
        let txn = &in_flight.0;
        let gid = |shard: usize| txn.gid(shard, shards);
        let Some((&first, rest)) = shards.split_first() else {
            return Ok(());
        };
        fail::fail_point!("2pc-before-prepare", |_| std::process::abort());
        // Phase one.
        let mut prepared = Vec::new();
        let mut failure = None;
        for &shard in rest {
            if !prepared.is_empty() {
                fail::fail_point!("2pc-between-prepares", |_| std::process::abort());
            }
            let Some(server) = self.servers[shard].as_mut() else {
                failure = Some(ClientError::new(
                    "08006",
                    format!("shard {shard}: server connection lost before commit"),
                ));
                break;
            };
            match server
                .execute(&format!("PREPARE TRANSACTION '{}'", gid(shard)))
                .await
            {
                Ok(()) => prepared.push(shard),
                Err(e) => {
                    failure = Some(ClientError::from(e));
                    break;
                }
            }
            // Test hook: the second PREPARE succeeded but its reply is taken as lost.
            #[cfg(feature = "failpoints")]
            if prepared.len() == 2 && fail::eval("2pc-prepare-reply-lost", |_| ()).is_some() {
                prepared.pop();
                failure = Some(ClientError::new("08006", "PREPARE reply lost (failpoint)"));
                break;
            }
        }
        // Test hook: every branch prepared, the decision not yet written (another process of
        // the instance runs its recovery meanwhile).
        #[cfg(feature = "failpoints")]
        if let Some(ms) = fail::eval("2pc-hold-before-decision", |arg| {
            arg.and_then(|a| a.parse::<u64>().ok()).unwrap_or(1000)
        }) {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        // The decision, atomically with the first participant's writes.
        let mut decided = false;
        if failure.is_none() {
            match self.servers[first].as_mut() {
                Some(server) => {
                    let sql = format!("{}; COMMIT", twophase::decision_sql(txn));
                    match server.execute(&sql).await {
                        Ok(()) if server.status == TxStatus::Idle => decided = true,
                        Ok(()) => {
                            failure = Some(ClientError::new(
                                "40000",
                                format!("shard {first}: the commit decision was not recorded"),
                            ))
                        }
                        Err(crate::backend::ServerError::Postgres(fields, _)) => {
                            failure = Some(ClientError::new(&fields.code, fields.message));
                        }
                        Err(e) => {
                            // Unknown whether the first participant committed: the recorded
                            // decision (or its absence) settles it in recovery.
                            tracing::error!("two-phase commit {}: decision outcome unknown on shard {first}: {e}", txn.key());
                            return Err(ClientError::new(
                                "08006",
                                format!("shard {first}: connection lost while committing; the transaction's outcome is decided by pgdog's two-phase recovery ({})", txn.key()),
                            ));
                        }
                    }
                }
                None => {
                    failure = Some(ClientError::new(
                        "08006",
                        format!("shard {first}: server connection lost before commit"),
                    ))
                }
            }
        }
        if decided {
            fail::fail_point!("2pc-after-decision", |_| std::process::abort());
        }
        // Phase two: commit the prepared ones, or roll everything back.
        let verb = if decided { "COMMIT" } else { "ROLLBACK" };
        let order: Vec<usize> = if decided {
            rest.to_vec()
        } else {
            shards.iter().rev().copied().collect()
        };
        let mut committed = 0;
        for shard in order {
            if decided && committed > 0 {
                fail::fail_point!("2pc-between-commits", |_| std::process::abort());
            }
            let Some(server) = self.servers[shard].as_mut() else {
                continue;
            };
            let r = if prepared.contains(&shard) {
                server
                    .execute(&format!("{verb} PREPARED '{}'", gid(shard)))
                    .await
            } else if server.status != TxStatus::Idle {
                server.execute("ROLLBACK").await
            } else {
                Ok(())
            };
            match r {
                Ok(()) => committed += 1,
                // Decided: recovery finishes the commit; the client's transaction committed.
                Err(e) if decided => tracing::error!(
                    "two-phase COMMIT PREPARED on shard {shard} failed (pgdog's recovery finishes it): {e}"
                ),
                Err(e) => {
                    tracing::error!("two-phase ROLLBACK on shard {shard} failed (pgdog's recovery finishes it): {e}");
                    failure.get_or_insert(ClientError::from(e));
                }
            }
        }
        if decided {
            Ok(())
        } else {
            Err(failure.unwrap_or_else(|| ClientError::new("40000", "transaction rolled back")))
        }
    }

    /// Rolls back on every shard the transaction touched.
    pub(super) async fn rollback(&mut self) -> Result<(), ClientError> {
        let Some(tx) = self.tx.take() else {
            return Ok(());
        };
        self.status = TxStatus::Idle;
        let begun: Vec<usize> = (0..tx.begun.len()).filter(|s| tx.begun[*s]).collect();
        for shard in begun.iter().copied() {
            if let Some(server) = self.servers[shard].as_mut() {
                if server.execute("ROLLBACK").await.is_err() {
                    server.discard();
                }
            }
        }
        // SETs made in the transaction are undone on those servers.
        self.settle_settings(&begun);
        Ok(())
    }

    /// After a transaction ends, what the client's settings are is what those servers have.
    fn settle_settings(&mut self, shards: &[usize]) {
        for &shard in shards {
            if let Some(s) = self.servers[shard].as_mut() {
                // Unknown after SETs inside the transaction: the next checkout re-applies.
                s.set_settings(Default::default());
                s.settings_fingerprint = u64::MAX;
            }
        }
    }

    /// SET / RESET: pgdog's own parameters are kept here; the others are tried on one shard
    /// (so a bad value fails now), then tracked and applied on every shard used later.
    pub(super) async fn set(
        &mut self,
        st: &Statement,
        sql: &str,
    ) -> Result<Option<String>, ClientError> {
        let Some(set) = &st.set else {
            return Ok(None);
        };
        let tag = if set.reset && !sql.trim_start().to_ascii_lowercase().starts_with("set") {
            "RESET"
        } else {
            "SET"
        };
        match set.name.as_deref() {
            Some("pgdog.shard") => {
                self.overrides.shard = match set.values.first() {
                    None => None,
                    Some(Const::Integer(n)) if *n >= 0 => Some(*n as usize),
                    Some(Const::String(s)) => Some(s.trim().parse().map_err(|_| {
                        ClientError::new(
                            "22023",
                            format!("pgdog.shard must be a shard number, not \"{s}\""),
                        )
                    })?),
                    Some(other) => {
                        return Err(ClientError::new(
                            "22023",
                            format!("pgdog.shard must be a shard number, not {other:?}"),
                        ))
                    }
                };
                if let Some(n) = self.overrides.shard {
                    if n >= self.shards.len() {
                        self.overrides.shard = None;
                        return Err(ClientError::new(
                            "22023",
                            format!(
                                "shard {n} does not exist (this database has {} shards)",
                                self.shards.len()
                            ),
                        ));
                    }
                }
                return Ok(Some(tag.into()));
            }
            Some("pgdog.role") => {
                self.role_hint =
                    match set.values.first() {
                        None => None,
                        Some(Const::String(s)) => {
                            match crate::router::read_write::RoleHint::parse(s) {
                            Some(hint) => Some(hint),
                            None => {
                                return Err(ClientError::new(
                                    "22023",
                                    format!("invalid value for parameter \"pgdog.role\": \"{s}\" (primary or replica)"),
                                ))
                            }
                        }
                        }
                        Some(other) => {
                            return Err(ClientError::new(
                                "22023",
                                format!("pgdog.role must be 'primary' or 'replica', not {other:?}"),
                            ))
                        }
                    };
                return Ok(Some(tag.into()));
            }
            Some("pgdog.sharding_key") => {
                self.overrides.sharding_key = match set.values.first() {
                    None | Some(Const::Null) => None,
                    Some(Const::Integer(n)) => Some(n.to_string()),
                    Some(Const::String(s)) | Some(Const::Numeric(s)) | Some(Const::Bits(s)) => {
                        Some(s.clone())
                    }
                    Some(Const::Bool(b)) => Some(b.to_string()),
                };
                return Ok(Some(tag.into()));
            }
            None if set.reset => {
                self.overrides = Default::default();
            }
            Some("search_path") => {
                // Schema-based sharding routes unqualified names by it.
                self.overrides.search_path = match set.reset {
                    true => Vec::new(),
                    false => set
                        .values
                        .iter()
                        .filter_map(|v| match v {
                            Const::String(s) => Some(s.clone()),
                            _ => None,
                        })
                        .collect(),
                };
            }
            _ => {}
        }
        let builtins = self.builtins(sql);
        let classified = statements::classify(sql, builtins.as_deref());
        match self.tx.as_mut() {
            Some(tx) => {
                if !tx.begun.iter().any(|b| *b) && crate::router::read_write::begins_read_only(sql)
                {
                    tx.read_only = true;
                }
                tx.prelude.push(sql.to_string());
                tx.changes.extend(classified.changes);
                let begun: Vec<usize> = (0..tx.begun.len()).filter(|s| tx.begun[*s]).collect();
                for shard in begun {
                    let server = self.server(shard).await?;
                    server.execute(sql).await?;
                }
            }
            None => {
                let shard = 0;
                let server = self.server(shard).await?;
                server.execute(sql).await?;
                for change in &classified.changes {
                    self.client.params.apply(change);
                }
                if let Some(s) = self.servers[shard].as_mut() {
                    if let Some((_, after)) = self.client.params.sync(&s.settings) {
                        s.set_settings(after);
                    }
                }
            }
        }
        Ok(Some(tag.into()))
    }
}
