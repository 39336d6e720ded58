//! The CopyBoth sub-protocol of a running START_REPLICATION: XLogData (`w`) and primary
//! keepalive (`k`) read from CopyData messages, Standby Status Update (`r`) written as one.
//! Pure functions over [`Message`]s: no I/O here.
use crate::net::message::{self, Message, Reader};
use crate::net::tag::frontend;
use bytes::{BufMut, Bytes};
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds between the Unix epoch and the Postgres epoch (2000-01-01 UTC).
const POSTGRES_EPOCH_UNIX_MICROS: i64 = 946_684_800_000_000;

/// Header length of an XLogData inside CopyData: tag (1) + length (4) + `w` (1) + 3 × 8.
const XLOG_HEADER: usize = 5 + 1 + 24;
/// The messages inside the CopyBoth stream: XLogData and primary keepalive from the server,
/// standby status update from us.
const XLOG_DATA: u8 = b'w';
const PRIMARY_KEEPALIVE: u8 = b'k';
const STANDBY_STATUS_UPDATE: u8 = b'r';

/// One thing the server sent on a replication stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicationEvent {
    /// One output plugin message (for pgoutput: one logical replication message).
    XLogData {
        /// The LSN this message belongs to (for a Commit: the transaction's end LSN).
        wal_start: u64,
        /// The server's current end of WAL.
        wal_end: u64,
        /// Server clock, microseconds since 2000-01-01 UTC.
        send_time: i64,
        /// The plugin's bytes: a zero-copy slice of the received message.
        data: Bytes,
    },
    /// The server is alive; `wal_end` is how far it has sent.
    Keepalive {
        wal_end: u64,
        send_time: i64,
        /// The server wants a status update now (the client already sent it).
        reply_requested: bool,
    },
}

/// Reads the CopyData payload of a replication stream. `None` for a sub-message this client
/// does not know (skipped, like the server's own clients do).
pub fn parse_copy_data(m: &Message) -> Result<Option<ReplicationEvent>, &'static str> {
    let payload = m.payload();
    let Some(&kind) = payload.first() else {
        return Err("empty CopyData");
    };
    let mut r = Reader::new(&payload[1..], "replication CopyData");
    let u64_of = |r: &mut Reader<'_>| -> Result<u64, &'static str> {
        let b = r.bytes(8).map_err(|_| "replication CopyData")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    };
    match kind {
        XLOG_DATA => {
            if m.len() < XLOG_HEADER {
                return Err("XLogData");
            }
            let wal_start = u64_of(&mut r).map_err(|_| "XLogData")?;
            let wal_end = u64_of(&mut r).map_err(|_| "XLogData")?;
            let send_time = u64_of(&mut r).map_err(|_| "XLogData")? as i64;
            Ok(Some(ReplicationEvent::XLogData {
                wal_start,
                wal_end,
                send_time,
                data: m.bytes().slice(XLOG_HEADER..),
            }))
        }
        PRIMARY_KEEPALIVE => {
            let wal_end = u64_of(&mut r).map_err(|_| "primary keepalive")?;
            let send_time = u64_of(&mut r).map_err(|_| "primary keepalive")? as i64;
            let reply = r.u8().map_err(|_| "primary keepalive")?;
            Ok(Some(ReplicationEvent::Keepalive {
                wal_end,
                send_time,
                reply_requested: reply != 0,
            }))
        }
        _ => Ok(None),
    }
}

/// Positions reported in a Standby Status Update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Received and written (by this client: seen).
    pub written: u64,
    /// Durably processed: the slot's `confirmed_flush_lsn` moves here.
    pub flushed: u64,
    pub applied: u64,
}

/// A Standby Status Update (`r`) in a CopyData message.
pub fn status_update(p: Progress, now: i64, reply_requested: bool) -> Message {
    message::build(frontend::COPY_DATA, |b| {
        b.put_u8(STANDBY_STATUS_UPDATE);
        b.put_u64(p.written);
        b.put_u64(p.flushed);
        b.put_u64(p.applied);
        b.put_i64(now);
        b.put_u8(reply_requested as u8);
    })
}

/// CopyDone: ends our side of the CopyBoth.
pub fn copy_done() -> Message {
    message::empty(frontend::COPY_DONE)
}

/// Now, in microseconds since 2000-01-01 UTC.
pub fn postgres_now() -> i64 {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    unix - POSTGRES_EPOCH_UNIX_MICROS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_xlogdata_and_keepalive() {
        let m = message::build(b'd', |b| {
            b.put_u8(b'w');
            b.put_u64(10);
            b.put_u64(20);
            b.put_i64(30);
            b.put_slice(b"Bxyz");
        });
        assert_eq!(
            parse_copy_data(&m).unwrap(),
            Some(ReplicationEvent::XLogData {
                wal_start: 10,
                wal_end: 20,
                send_time: 30,
                data: Bytes::from_static(b"Bxyz")
            })
        );
        let k = message::build(b'd', |b| {
            b.put_u8(b'k');
            b.put_u64(7);
            b.put_i64(8);
            b.put_u8(1);
        });
        assert_eq!(
            parse_copy_data(&k).unwrap(),
            Some(ReplicationEvent::Keepalive {
                wal_end: 7,
                send_time: 8,
                reply_requested: true
            })
        );
        let short = message::build(b'd', |b| {
            b.put_u8(b'w');
            b.put_u64(1);
        });
        assert!(parse_copy_data(&short).is_err());
        assert!(parse_copy_data(&message::build(b'd', |_| {})).is_err());
    }

    #[test]
    fn builds_status_update() {
        let p = Progress {
            written: 3,
            flushed: 2,
            applied: 1,
        };
        let m = status_update(p, 99, false);
        let body = m.payload();
        assert_eq!(body.len(), 1 + 8 * 4 + 1);
        assert_eq!(body[0], b'r');
        assert_eq!(&body[1..9], &3u64.to_be_bytes());
        assert_eq!(&body[17..25], &1u64.to_be_bytes());
        assert!(postgres_now() > 0);
    }
}
