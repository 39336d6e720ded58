//! `pgdog logical-dump`: streams a logical slot and prints every pgoutput message as one JSON
//! line, confirming progress at transaction ends, until `--until-lsn` or Ctrl-C / SIGTERM,
//! then stops the stream cleanly (CopyDone, drained to ReadyForQuery).
//!
//! Owns the CLI's options and loop only: the protocol is [`super::client`], decoding and JSON
//! are [`super::pgoutput`].
use super::client::{
    format_lsn, url::parse_url, ReplicationClient, ReplicationError, ReplicationEvent, SlotOptions,
    StartOptions, Streaming,
};
use super::pgoutput::{DecodeError, Decoder, LogicalMessage};
use std::future::Future;
use std::io::Write;
use std::time::Duration;

/// Connection timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long creating a temporary slot on a standby may take.
const SLOT_DEADLINE: Duration = Duration::from_secs(60);

/// What `pgdog logical-dump` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpOptions {
    /// `postgres://user[:password]@host[:port]/database`.
    pub url: String,
    pub slot: String,
    pub publications: Vec<String>,
    /// Create the slot as TEMPORARY first (it goes away when the dump ends).
    pub create_temporary: bool,
    /// With `url` a standby: its primary, nudged with `pg_log_standby_snapshot()` while the
    /// temporary slot is created.
    pub primary_url: Option<String>,
    pub proto: u32,
    pub binary: bool,
    pub streaming: Streaming,
    pub two_phase: bool,
    /// Stop once everything up to this LSN was printed and confirmed.
    pub until_lsn: Option<u64>,
}

/// Why a dump failed.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error(transparent)]
    Replication(#[from] ReplicationError),
    #[error("decoding the stream: {0}")]
    Decode(#[from] DecodeError),
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
    #[error("the server ended the replication stream before --until-lsn {0}")]
    EndedEarly(String),
}

/// What a finished dump did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DumpSummary {
    /// Messages printed.
    pub messages: u64,
    /// The last LSN confirmed to the server (restart from here).
    pub confirmed: u64,
}

/// Tracks transaction boundaries to know what may be confirmed: the end of a transaction
/// (Commit, Prepare, Commit/Rollback Prepared, Stream Commit/Prepare/Abort), or a keepalive's
/// position while no transaction is open.
#[derive(Debug, Clone, Copy, Default)]
pub struct Boundary {
    in_transaction: bool,
}

impl Boundary {
    /// Feeds one decoded message sent at `lsn`; the LSN to confirm when it ends a transaction.
    pub fn after(&mut self, msg: &LogicalMessage, lsn: u64) -> Option<u64> {
        use LogicalMessage as M;
        match msg {
            M::Begin { .. } | M::BeginPrepare(_) => {
                self.in_transaction = true;
                None
            }
            M::Commit { end_lsn, .. }
            | M::CommitPrepared { end_lsn, .. }
            | M::StreamCommit { end_lsn, .. } => {
                self.in_transaction = false;
                Some(lsn.max(*end_lsn))
            }
            M::Prepare(p) | M::StreamPrepare(p) => {
                self.in_transaction = false;
                Some(lsn.max(p.end_lsn))
            }
            M::RollbackPrepared {
                rollback_end_lsn, ..
            } => {
                self.in_transaction = false;
                Some(lsn.max(*rollback_end_lsn))
            }
            // Non-transactional messages outside a transaction are complete by themselves.
            M::Message {
                transactional: false,
                ..
            } if !self.in_transaction => Some(lsn),
            _ => None,
        }
    }

    /// Whether a transaction is open (its end not yet seen).
    pub fn in_transaction(&self) -> bool {
        self.in_transaction
    }
}

/// Runs a dump, writing JSON lines to `out`, until `until_lsn` or until `shutdown` resolves.
pub async fn dump<W: Write>(
    options: &DumpOptions,
    out: &mut W,
    shutdown: impl Future<Output = ()>,
) -> Result<DumpSummary, DumpError> {
    let target = parse_url(&options.url)?;
    let mut client = ReplicationClient::connect(&target, CONNECT_TIMEOUT).await?;
    let mut start = 0;
    if options.create_temporary {
        let mut slot = SlotOptions::new(&options.slot);
        slot.temporary = true;
        slot.two_phase = options.two_phase;
        let created = match &options.primary_url {
            Some(primary) => {
                let primary = parse_url(primary)?;
                client
                    .create_slot_on_standby(&slot, &primary, SLOT_DEADLINE)
                    .await?
            }
            None => client.create_slot(&slot).await?,
        };
        tracing::info!(
            "created temporary slot {} at {}",
            created.name,
            format_lsn(created.consistent_point)
        );
        start = created.consistent_point;
    }
    let publications: Vec<&str> = options.publications.iter().map(String::as_str).collect();
    let mut start_options = StartOptions::new(options.proto, &publications);
    start_options.binary = options.binary;
    start_options.streaming = options.streaming;
    start_options.two_phase = options.two_phase;
    client.start(&options.slot, start, &start_options).await?;

    let mut decoder = Decoder::new(options.proto);
    let mut boundary = Boundary::default();
    let mut summary = DumpSummary {
        messages: 0,
        confirmed: client.progress().flushed,
    };
    let until = options.until_lsn;
    let reached = |lsn: u64| until.is_some_and(|u| lsn >= u);
    tokio::pin!(shutdown);
    loop {
        // next_event only writes a 39-byte status update: cancelling it loses no data.
        let event = tokio::select! {
            event = client.next_event() => event?,
            _ = &mut shutdown => break,
        };
        let Some(event) = event else {
            if let Some(u) = until {
                return Err(DumpError::EndedEarly(format_lsn(u)));
            }
            return Ok(summary);
        };
        match event {
            ReplicationEvent::XLogData {
                wal_start, data, ..
            } => {
                if !boundary.in_transaction() && until.is_some_and(|u| wal_start > u) {
                    break;
                }
                let msg = decoder.decode(wal_start, data)?;
                writeln!(out, "{}", decoder.to_json(&msg, wal_start))?;
                summary.messages += 1;
                if let Some(lsn) = boundary.after(&msg, wal_start) {
                    out.flush()?;
                    client.confirm(lsn);
                    summary.confirmed = lsn;
                    if reached(lsn) {
                        break;
                    }
                }
            }
            ReplicationEvent::Keepalive { wal_end, .. } => {
                if !boundary.in_transaction() && decoder.in_stream().is_none() {
                    client.confirm(wal_end);
                    summary.confirmed = summary.confirmed.max(wal_end);
                    if reached(wal_end) {
                        break;
                    }
                }
            }
        }
    }
    out.flush()?;
    client.stop().await?;
    client.close().await;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::pgoutput::PrepareInfo;

    #[test]
    fn confirms_only_at_transaction_ends() {
        let mut b = Boundary::default();
        let begin = LogicalMessage::Begin {
            final_lsn: 90,
            commit_time: 0,
            xid: 1,
        };
        assert_eq!(b.after(&begin, 10), None);
        assert!(b.in_transaction());
        let stop = LogicalMessage::StreamStop;
        assert_eq!(b.after(&stop, 20), None);
        let commit = LogicalMessage::Commit {
            flags: 0,
            commit_lsn: 90,
            end_lsn: 100,
            commit_time: 0,
        };
        assert_eq!(b.after(&commit, 100), Some(100));
        assert!(!b.in_transaction());
        let prepare = LogicalMessage::Prepare(PrepareInfo {
            flags: 0,
            prepare_lsn: 110,
            end_lsn: 120,
            prepare_time: 0,
            xid: 2,
            gid: "g".into(),
        });
        assert_eq!(b.after(&prepare, 115), Some(120));
    }
}
