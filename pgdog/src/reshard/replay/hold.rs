//! The verify hold: how `pgdog verify` gets the destination to stand still at a source LSN it
//! chose while writes go on. A row per stream key in `pgdog_reshard_hold` on destination shard 0
//! carries the request; the replay reads it every [`super::STOP_POLL`] between transactions:
//!
//! 1. verify writes `pause`: the replay commits its batch, writes `paused` and waits;
//! 2. verify takes a source snapshot (a temporary slot's exported snapshot, consistent at LSN L)
//!    and writes `advance` with L: the replay applies every transaction committed before L and
//!    none after (it stops at the first `Begin` whose commit LSN is L or later, or at a
//!    keepalive past L), commits, writes `holding` and waits;
//! 3. verify takes its destination snapshots, then deletes the row where it is still
//!    `holding`: the replay goes on.
//!
//! A hold lasts at most `[resharding] hold_timeout` ms; then the replay writes `expired` (only
//! where the row is still in its state, so verify's delete and this update exclude each other)
//! and goes on, and verify, finding no `holding` row to delete, reports that its snapshots are
//! not at one LSN. While holding, the replay keeps its walsender alive with status updates.
use super::{lost, other, ReplayError};
use crate::backend::server::{Server, ServerTarget};
use crate::replication::client::{format_lsn, ReplicationClient};
use crate::replication::pgoutput::parse_lsn;
use crate::reshard::copy::{connect, literal};
use std::time::{Duration, Instant};

/// How often a holding replay reads its row.
const HOLD_POLL: Duration = Duration::from_millis(10);
/// How often a holding replay sends the walsender a status update.
const KEEPALIVE: Duration = Duration::from_secs(5);

/// What verify asks of this stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    Nothing,
    /// Stop between transactions, now.
    Pause,
    /// Apply what committed before this LSN, then stop.
    Advance(u64),
}

/// One stream's end of the hold.
pub(super) struct Hold {
    server: Server,
    addr: String,
    key: String,
    timeout: Duration,
    pub(super) ask: Ask,
}

impl Hold {
    /// Connects to destination shard 0 (where verify writes its requests).
    pub(super) async fn open(
        shard0: &ServerTarget,
        key: &str,
        timeout: Duration,
    ) -> Result<Hold, ReplayError> {
        Ok(Hold {
            server: connect(shard0).await?,
            addr: shard0.addr(),
            key: key.to_string(),
            timeout,
            ask: Ask::Nothing,
        })
    }

    async fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, ReplayError> {
        self.server
            .query_rows(sql)
            .await
            .map_err(lost(format!("verify hold on {}: {sql}", self.addr)))
    }

    /// Reads the request for this stream.
    pub(super) async fn poll(&mut self) -> Result<Ask, ReplayError> {
        let sql = format!(
            "SELECT state, lsn::text FROM pgdog_reshard_hold WHERE slot = {}",
            literal(&self.key)
        );
        let rows = self.rows(&sql).await?;
        self.ask = match rows.first().map(|r| r.as_slice()) {
            Some([Some(state), _]) if state == "pause" => Ask::Pause,
            Some([Some(state), Some(lsn)]) if state == "advance" => {
                Ask::Advance(parse_lsn(lsn).ok_or_else(|| other(format!("bad hold LSN {lsn}")))?)
            }
            _ => Ask::Nothing,
        };
        Ok(self.ask)
    }

    /// Whether the stream must stop before a transaction committed at `lsn` (or once the
    /// server is past `lsn` with nothing left to send).
    pub(super) fn stops_at(&self, lsn: u64) -> bool {
        match self.ask {
            Ask::Nothing => false,
            Ask::Pause => true,
            Ask::Advance(l) => lsn >= l,
        }
    }

    /// The answer to the current request (`paused` or `holding`), written with the position
    /// applied so far; then waits until verify changes or removes the row, or the hold times
    /// out. `self.ask` is the new request on return.
    pub(super) async fn wait(
        &mut self,
        applied: u64,
        client: &mut ReplicationClient,
    ) -> Result<(), ReplayError> {
        let (asked, state) = match self.ask {
            Ask::Nothing => return Ok(()),
            Ask::Pause => ("pause", "paused"),
            Ask::Advance(_) => ("advance", "holding"),
        };
        let key = literal(&self.key);
        let sql = format!(
            "UPDATE pgdog_reshard_hold SET state = '{state}', reached = '{}' \
             WHERE slot = {key} AND state = '{asked}' RETURNING 1",
            format_lsn(applied)
        );
        if self.rows(&sql).await?.is_empty() {
            // verify changed its mind (or went away) meanwhile.
            self.poll().await?;
            return Ok(());
        }
        let started = Instant::now();
        let mut keepalive = Instant::now();
        let check = format!("SELECT state FROM pgdog_reshard_hold WHERE slot = {key}");
        loop {
            tokio::time::sleep(HOLD_POLL).await;
            let rows = self.rows(&check).await?;
            match rows.first().and_then(|r| r.first()).cloned().flatten() {
                Some(s) if s == state => {}
                _ => {
                    self.poll().await?;
                    return Ok(());
                }
            }
            if started.elapsed() >= self.timeout {
                let expire = format!(
                    "UPDATE pgdog_reshard_hold SET state = 'expired' \
                     WHERE slot = {key} AND state = '{state}' RETURNING 1"
                );
                if !self.rows(&expire).await?.is_empty() {
                    eprintln!(
                        "pgdog: replay: {}: verify held the replay over hold_timeout ({} ms): \
                         going on",
                        self.key,
                        self.timeout.as_millis()
                    );
                }
                self.poll().await?;
                return Ok(());
            }
            if keepalive.elapsed() >= KEEPALIVE {
                client.send_status(false).await?;
                keepalive = Instant::now();
            }
        }
    }

    pub(super) async fn close(self) {
        self.server.terminate().await;
    }
}
