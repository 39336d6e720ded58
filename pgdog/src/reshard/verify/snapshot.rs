//! One snapshot per shard of both sides, taken so that the two sides show the same source LSN
//! when a replay runs between them.
//!
//! - A replay running (its slot active on every upstream shard, its progress rows on the
//!   downstream's shard 0; checked in both directions, so a reverse replay after a cutover
//!   counts): verify holds it (`reshard/replay/hold.rs`): pause; a temporary slot's exported
//!   snapshot on every upstream shard, consistent at LSN L; advance the replay to exactly L;
//!   snapshots of the downstream shards; release. Every table is then compared at L.
//! - No replay running: one REPEATABLE READ snapshot per shard; the LSN reported is each source
//!   shard's WAL position in its snapshot (a side that changes meanwhile differs, as it should).
use super::shard::Shard;
use super::{VerifyError, VerifyOptions};
use crate::backend::server::Server;
use crate::config::Settings;
use crate::net::quote::literal;
use crate::replication::client::{
    format_lsn, ReplicationClient, ReplicationError, SlotOptions, SnapshotAction,
};
use crate::replication::pgoutput::parse_lsn;
use crate::reshard::copy::progress_key;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How often verify reads the replay's answer.
const POLL: Duration = Duration::from_millis(10);
const BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// Where the comparison stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparedAt {
    /// The LSN per upstream shard (the source's when no replay runs).
    pub lsns: Vec<u64>,
    /// The replay held at those LSNs: its slot and the database it reads.
    pub held: Option<(String, String)>,
    /// How long the replay stood still: from its pause to verify's release.
    pub held_for: Option<Duration>,
}

impl ComparedAt {
    /// `0/3000060` or `0/3000060, 0/3000100` (one per source shard).
    pub fn lsns(&self) -> String {
        let l: Vec<String> = self.lsns.iter().map(|&l| format_lsn(l)).collect();
        l.join(", ")
    }
}

impl std::fmt::Display for ComparedAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.held {
            Some((slot, database)) => write!(
                f,
                "compared at LSN {} of {database}: the replay of slot {slot} held there for {} ms \
                 while the snapshots were taken",
                self.lsns(),
                self.held_for.unwrap_or_default().as_millis()
            ),
            None => write!(
                f,
                "no replay running: each shard read in one snapshot, the source at LSN {}",
                self.lsns()
            ),
        }
    }
}

/// A replay found running: which side it reads (true: the source) and its slot.
struct Running {
    from_source: bool,
    slot: String,
}

fn single(rows: &[Vec<Option<String>>]) -> Option<&str> {
    rows.first()?.first()?.as_deref()
}

/// The slots of replays into `down` whose slot is active on every shard of `up`.
async fn running_slots(
    up: &mut [Shard],
    down: &mut [Shard],
    wanted: Option<&str>,
) -> Result<Vec<String>, VerifyError> {
    let context = "looking for a running replay";
    let exists = down[0]
        .rows(
            "SELECT to_regclass('pgdog_reshard_hold') IS NOT NULL \
             AND to_regclass('pgdog_reshard_progress') IS NOT NULL",
            context,
        )
        .await?;
    if single(&exists) != Some("t") {
        return Ok(Vec::new());
    }
    let keys = down[0]
        .rows("SELECT DISTINCT slot FROM pgdog_reshard_progress", context)
        .await?;
    let slots: BTreeSet<String> = keys
        .iter()
        .filter_map(|r| r.first().cloned().flatten())
        .map(|k| k.split('/').next().unwrap_or_default().to_string())
        .filter(|s| wanted.is_none_or(|w| w == s))
        .collect();
    let mut running = Vec::new();
    for slot in slots {
        let mut active = true;
        for s in up.iter_mut() {
            let sql = format!(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name = {} AND active \
                 AND database = current_database()",
                literal(&slot)
            );
            active &= single(&s.rows(&sql, context).await?) == Some("1");
        }
        if active {
            running.push(slot);
        }
    }
    Ok(running)
}

/// The replay between the two sides, if one runs (`--slot` picks one).
async fn running_replay(
    options: &VerifyOptions,
    source: &mut [Shard],
    dest: &mut [Shard],
) -> Result<Option<Running>, VerifyError> {
    let wanted = options.slot.as_deref();
    let mut found = Vec::new();
    for slot in running_slots(source, dest, wanted).await? {
        found.push(Running {
            from_source: true,
            slot,
        });
    }
    for slot in running_slots(dest, source, wanted).await? {
        found.push(Running {
            from_source: false,
            slot,
        });
    }
    match (found.len(), wanted) {
        (0, Some(w)) => Err(VerifyError::Hold(format!(
            "no replay of slot {w} is running between {} and {}",
            options.databases.from, options.databases.to
        ))),
        (0 | 1, _) => Ok(found.pop()),
        _ => Err(VerifyError::Hold(format!(
            "several replays are running between {} and {} ({}): pick one with --slot",
            options.databases.from,
            options.databases.to,
            found
                .iter()
                .map(|r| r.slot.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Takes the snapshots of both sides (see the module doc).
pub(super) async fn take(
    settings: &Settings,
    options: &VerifyOptions,
    source: &mut [Shard],
    dest: &mut [Shard],
) -> Result<ComparedAt, VerifyError> {
    let Some(running) = running_replay(options, source, dest).await? else {
        let mut lsns = Vec::new();
        for s in source.iter_mut() {
            let sql = format!(
                "{BEGIN}; SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
                 ELSE pg_current_wal_lsn() END)::text"
            );
            let rows = s.rows(&sql, "taking a snapshot").await?;
            let lsn = single(&rows).and_then(parse_lsn);
            lsns.push(lsn.ok_or_else(|| s.answer("reading the WAL position", &rows))?);
        }
        for s in dest.iter_mut() {
            s.execute(&format!("{BEGIN}; SELECT 1"), "taking a snapshot")
                .await?;
        }
        return Ok(ComparedAt {
            lsns,
            held: None,
            held_for: None,
        });
    };
    let (up, down, up_name) = if running.from_source {
        (source, dest, &options.databases.from)
    } else {
        (dest, source, &options.databases.to)
    };
    let mut hold = Hold::open(&mut down[0], &running.slot, up.len()).await?;
    let timeout = Duration::from_millis(settings.config.resharding.lag_timeout);
    let result = hold.run(up, down, timeout).await;
    let held_for = hold.paused_at.map(|t| t.elapsed());
    hold.release().await;
    Ok(ComparedAt {
        lsns: result?,
        held: Some((running.slot, up_name.clone())),
        held_for,
    })
}

/// verify's end of the hold: a connection of its own to the downstream's shard 0 (the
/// downstream connections sit in their snapshots).
struct Hold {
    server: Server,
    database: String,
    addr: String,
    slot: String,
    keys: Vec<String>,
    /// When every stream answered `paused`.
    paused_at: Option<Instant>,
}

impl Hold {
    async fn open(down0: &mut Shard, slot: &str, streams: usize) -> Result<Hold, VerifyError> {
        let server = Server::connect(&down0.target, super::CONNECT_TIMEOUT)
            .await
            .map_err(|e| down0.error("connecting for the hold", e))?;
        Ok(Hold {
            server,
            database: down0.database.clone(),
            addr: down0.addr.clone(),
            slot: slot.to_string(),
            keys: (0..streams).map(|i| progress_key(slot, i)).collect(),
            paused_at: None,
        })
    }

    fn error(&self, what: String) -> VerifyError {
        VerifyError::Hold(format!(
            "holding the replay of slot {} ({} shard 0, {}): {what}",
            self.slot, self.database, self.addr
        ))
    }

    async fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, VerifyError> {
        match self.server.query_rows(sql).await {
            Ok(rows) => Ok(rows),
            Err(e) => Err(self.error(format!("{sql}: {e}"))),
        }
    }

    fn key_list(&self) -> String {
        let k: Vec<String> = self.keys.iter().map(|k| literal(k)).collect();
        k.join(", ")
    }

    /// Waits until every stream answered `state`.
    async fn wait_for(&mut self, state: &str, timeout: Duration) -> Result<(), VerifyError> {
        let sql = format!(
            "SELECT count(*) FROM pgdog_reshard_hold WHERE slot IN ({}) AND state = '{state}'",
            self.key_list()
        );
        let deadline = Instant::now() + timeout;
        loop {
            let rows = self.rows(&sql).await?;
            if single(&rows).and_then(|n| n.parse::<usize>().ok()) == Some(self.keys.len()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.error(format!(
                    "the replay did not answer `{state}` within lag_timeout ({} ms)",
                    timeout.as_millis()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Pause, source snapshots at L, advance to L, destination snapshots: the LSNs.
    async fn run(
        &mut self,
        up: &mut [Shard],
        down: &mut [Shard],
        timeout: Duration,
    ) -> Result<Vec<u64>, VerifyError> {
        let mut ask = String::new();
        for k in &self.keys {
            ask.push_str(&format!(
                "INSERT INTO pgdog_reshard_hold (slot, state) VALUES ({}, 'pause') \
                 ON CONFLICT (slot) DO UPDATE SET state = 'pause', lsn = NULL, reached = NULL;",
                literal(k)
            ));
        }
        self.rows(&ask).await?;
        self.wait_for("paused", timeout).await?;
        self.paused_at = Some(Instant::now());
        let mut lsns = Vec::with_capacity(up.len());
        for s in up.iter_mut() {
            lsns.push(source_snapshot(s).await?);
        }
        for (k, lsn) in self.keys.clone().iter().zip(&lsns) {
            let sql = format!(
                "UPDATE pgdog_reshard_hold SET state = 'advance', lsn = '{}' \
                 WHERE slot = {} AND state = 'paused' RETURNING 1",
                format_lsn(*lsn),
                literal(k)
            );
            if self.rows(&sql).await?.is_empty() {
                return Err(self.error(format!(
                    "stream {k} stopped pausing (hold_timeout) before the source snapshot was taken"
                )));
            }
        }
        self.wait_for("holding", timeout).await?;
        for s in down.iter_mut() {
            s.execute(&format!("{BEGIN}; SELECT 1"), "taking a snapshot")
                .await?;
        }
        let sql = format!(
            "DELETE FROM pgdog_reshard_hold WHERE slot IN ({}) AND state = 'holding' RETURNING 1",
            self.key_list()
        );
        if self.rows(&sql).await?.len() != self.keys.len() {
            return Err(self.error(
                "the replay stopped holding (hold_timeout) before the destination snapshots \
                 were taken"
                    .into(),
            ));
        }
        Ok(lsns)
    }

    /// Lets the replay go on (also after a failure) and closes the connection.
    async fn release(mut self) {
        let sql = format!(
            "DELETE FROM pgdog_reshard_hold WHERE slot IN ({})",
            self.key_list()
        );
        let _ = self.rows(&sql).await;
        self.server.terminate().await;
    }
}

/// A temporary slot's exported snapshot imported into the shard's connection: the LSN it is
/// consistent at (every transaction committed before it, none after).
async fn source_snapshot(s: &mut Shard) -> Result<u64, VerifyError> {
    let name = format!("pgdog_verify_{}_{}", std::process::id(), s.shard);
    let slot = SlotOptions {
        temporary: true,
        snapshot: SnapshotAction::Export,
        ..SlotOptions::new(&name)
    };
    let replication = |e: ReplicationError| {
        VerifyError::Hold(format!(
            "{} shard {} ({}): {e}",
            s.database, s.shard, s.addr
        ))
    };
    let mut repl = ReplicationClient::connect(&s.target, super::CONNECT_TIMEOUT)
        .await
        .map_err(replication)?;
    let created = match repl.create_slot(&slot).await {
        Ok(c) => c,
        Err(e) => {
            repl.close().await;
            return Err(replication(e));
        }
    };
    // The exported snapshot lives while `repl` idles: import it, then close (which drops the
    // temporary slot).
    let imported = match &created.snapshot {
        Some(snapshot) => {
            let sql = format!("{BEGIN}; SET TRANSACTION SNAPSHOT {}", literal(snapshot));
            s.execute(&sql, "importing the slot's snapshot").await
        }
        None => Err(s.answer("creating a temporary slot", "no exported snapshot")),
    };
    repl.close().await;
    imported.map(|_| created.consistent_point)
}
