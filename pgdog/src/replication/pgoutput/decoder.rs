//! The stateful decoder: protocol version, streamed-segment state and the relation cache.
//! Message bodies are parsed in `parse.rs`; this file owns the state machine and the checks
//! that need state (which messages a version or a stream segment allows, known relations).

use std::collections::HashMap;

use bytes::Bytes;

use super::error::{DecodeError, Reason};
use super::message::{Kind, LogicalMessage, Relation};
use super::parse;
use super::reader::Reader;

/// Lowest protocol version that streams large in-progress transactions.
pub const STREAM_VERSION: u32 = 2;
/// Lowest protocol version with two-phase commit messages.
pub const TWO_PHASE_VERSION: u32 = 3;
/// Lowest protocol version whose Stream Abort may carry the abort LSN and time.
pub const PARALLEL_STREAM_VERSION: u32 = 4;
/// Highest protocol version this decoder knows.
pub const MAX_VERSION: u32 = 4;

/// Decodes the pgoutput messages of one replication connection, in order.
///
/// Stateful: a Relation message must come before the rows that use it, and between Stream
/// Start and Stream Stop changes carry a leading xid. Feed every message of the stream, and
/// use a new decoder for a new connection.
#[derive(Debug, Clone)]
pub struct Decoder {
    proto_version: u32,
    /// Xid of the Stream Start we are inside, if any.
    stream: Option<u32>,
    relations: HashMap<u32, Relation>,
}

impl Decoder {
    /// A decoder for `proto_version` (the `proto_version` option given to pgoutput, 1 to 4).
    /// Other versions make every `decode` fail.
    pub fn new(proto_version: u32) -> Decoder {
        Decoder {
            proto_version,
            stream: None,
            relations: HashMap::new(),
        }
    }

    /// The protocol version given at construction.
    pub fn proto_version(&self) -> u32 {
        self.proto_version
    }

    /// The xid of the streamed transaction whose segment we are in (between Stream Start and
    /// Stream Stop), if any.
    pub fn in_stream(&self) -> Option<u32> {
        self.stream
    }

    /// The latest Relation message seen for `oid`.
    pub fn relation(&self, oid: u32) -> Option<&Relation> {
        self.relations.get(&oid)
    }

    /// Every relation announced so far, in no particular order.
    pub fn relations(&self) -> impl Iterator<Item = &Relation> {
        self.relations.values()
    }

    /// Decodes one message (the payload of one XLogData); `lsn` is the XLogData start LSN,
    /// reported in errors. On error the decoder's state is unchanged.
    pub fn decode(&mut self, lsn: u64, data: Bytes) -> Result<LogicalMessage, DecodeError> {
        let kind = match data.first() {
            Some(&b) if b.is_ascii_graphic() => b as char,
            _ => '?',
        };
        self.decode_message(data)
            .map_err(|reason| reason.at(lsn, kind))
    }

    fn decode_message(&mut self, data: Bytes) -> Result<LogicalMessage, Reason> {
        if !(1..=MAX_VERSION).contains(&self.proto_version) {
            return Err(Reason::other(format!(
                "unsupported protocol version {} (1 to {MAX_VERSION} are)",
                self.proto_version
            )));
        }
        let mut r = Reader::new(data);
        let kind = match r.u8("message type") {
            Ok(byte) => Kind::of(byte)
                .ok_or_else(|| Reason::other(format!("unknown message type 0x{byte:02X}")))?,
            Err(_) => return Err(Reason::other("empty message")),
        };
        self.check_allowed(kind)?;
        // Changes inside a streamed segment carry the (sub)transaction's xid first.
        let xid = match (self.stream, kind) {
            (
                Some(_),
                Kind::Relation
                | Kind::Type
                | Kind::Insert
                | Kind::Update
                | Kind::Delete
                | Kind::Truncate
                | Kind::Message,
            ) => Some(r.u32("streamed transaction xid")?),
            _ => None,
        };
        let message = match kind {
            Kind::Begin => parse::begin(&mut r)?,
            Kind::Commit => parse::commit(&mut r)?,
            Kind::Origin => parse::origin(&mut r)?,
            Kind::Relation => parse::relation(&mut r, xid)?,
            Kind::Type => parse::type_(&mut r, xid)?,
            Kind::Insert => parse::insert(&mut r, xid, &self.relations)?,
            Kind::Update => parse::update(&mut r, xid, &self.relations)?,
            Kind::Delete => parse::delete(&mut r, xid, &self.relations)?,
            Kind::Truncate => parse::truncate(&mut r, xid, &self.relations)?,
            Kind::Message => parse::message(&mut r, xid)?,
            Kind::StreamStart => parse::stream_start(&mut r)?,
            Kind::StreamStop => LogicalMessage::StreamStop,
            Kind::StreamCommit => parse::stream_commit(&mut r)?,
            Kind::StreamAbort => {
                parse::stream_abort(&mut r, self.proto_version >= PARALLEL_STREAM_VERSION)?
            }
            Kind::BeginPrepare => parse::begin_prepare(&mut r)?,
            Kind::Prepare => LogicalMessage::Prepare(parse::prepare(&mut r)?),
            Kind::CommitPrepared => parse::commit_prepared(&mut r)?,
            Kind::RollbackPrepared => parse::rollback_prepared(&mut r)?,
            Kind::StreamPrepare => LogicalMessage::StreamPrepare(parse::prepare(&mut r)?),
        };
        r.finish()?;
        // The message is whole: only now does the state change.
        match &message {
            LogicalMessage::Relation(rel) => {
                self.relations.insert(rel.oid, rel.clone());
            }
            LogicalMessage::StreamStart { xid, .. } => self.stream = Some(*xid),
            LogicalMessage::StreamStop => self.stream = None,
            _ => (),
        }
        Ok(message)
    }

    /// Rejects message types the protocol version or the stream state does not allow.
    fn check_allowed(&self, kind: Kind) -> Result<(), Reason> {
        // Streaming changes the layout of other messages (leading xid), so it must match the
        // version. Two-phase messages are not gated: a slot created with two_phase sends them
        // whatever proto_version says (seen with PostgreSQL 18 and proto_version 2).
        if matches!(
            kind,
            Kind::StreamStart | Kind::StreamStop | Kind::StreamCommit | Kind::StreamAbort
        ) && self.proto_version < STREAM_VERSION
        {
            return Err(Reason::other(format!(
                "streaming messages need protocol version {STREAM_VERSION}, the stream uses {}",
                self.proto_version
            )));
        }
        match (self.stream, kind) {
            (
                Some(xid),
                Kind::Begin
                | Kind::Commit
                | Kind::StreamStart
                | Kind::StreamCommit
                | Kind::StreamAbort
                | Kind::BeginPrepare
                | Kind::Prepare
                | Kind::CommitPrepared
                | Kind::RollbackPrepared
                | Kind::StreamPrepare,
            ) => Err(Reason::other(format!(
                "not allowed inside the streamed segment of xid {xid} (missing Stream Stop)"
            ))),
            (None, Kind::StreamStop) => Err(Reason::other("Stream Stop without Stream Start")),
            _ => Ok(()),
        }
    }
}
