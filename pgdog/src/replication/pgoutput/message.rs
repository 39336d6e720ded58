//! Decoded pgoutput messages. Column values and message contents are `Bytes` slices of the
//! XLogData payload (no copies); names are owned strings (they arrive once per relation).

use bytes::Bytes;

/// pgoutput message kinds (the first byte of each logical replication message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Begin = b'B',
    Commit = b'C',
    Origin = b'O',
    Relation = b'R',
    Type = b'Y',
    Insert = b'I',
    Update = b'U',
    Delete = b'D',
    Truncate = b'T',
    Message = b'M',
    StreamStart = b'S',
    StreamStop = b'E',
    StreamCommit = b'c',
    StreamAbort = b'A',
    BeginPrepare = b'b',
    Prepare = b'P',
    CommitPrepared = b'K',
    RollbackPrepared = b'r',
    StreamPrepare = b'p',
}

impl Kind {
    /// The kind a message's first byte names, if any.
    pub fn of(byte: u8) -> Option<Kind> {
        use Kind::*;
        [
            Begin,
            Commit,
            Origin,
            Relation,
            Type,
            Insert,
            Update,
            Delete,
            Truncate,
            Message,
            StreamStart,
            StreamStop,
            StreamCommit,
            StreamAbort,
            BeginPrepare,
            Prepare,
            CommitPrepared,
            RollbackPrepared,
            StreamPrepare,
        ]
        .into_iter()
        .find(|k| *k as u8 == byte)
    }
}

/// The markers before a tuple in Insert, Update and Delete (a column's kind: `parse::tuple`).
pub mod marker {
    /// A new tuple follows (Insert, Update).
    pub const NEW: u8 = b'N';
    /// The old tuple's replica identity key follows (Update, Delete).
    pub const KEY: u8 = b'K';
    /// The whole old tuple follows (REPLICA IDENTITY FULL).
    pub const OLD: u8 = b'O';
}

/// One logical replication message, as pgoutput emits it (protocol versions 1 to 4).
///
/// LSNs are raw `u64` (format with [`super::format_lsn`]); timestamps are Postgres'
/// `TimestampTz`, microseconds since 2000-01-01 UTC (format with [`super::format_timestamp`]).
/// `xid: Option<u32>` on changes is the streamed transaction's xid, present only between
/// Stream Start and Stream Stop (protocol 2+).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogicalMessage {
    /// 'B': a transaction starts.
    Begin {
        final_lsn: u64,
        commit_time: i64,
        xid: u32,
    },
    /// 'C': the transaction commits.
    Commit {
        flags: u8,
        commit_lsn: u64,
        end_lsn: u64,
        commit_time: i64,
    },
    /// 'O': the transaction came from another replication origin.
    Origin { commit_lsn: u64, name: String },
    /// 'R': a relation's shape; also stored in the decoder's cache.
    Relation(Relation),
    /// 'Y': a non-built-in data type used by a following relation.
    Type {
        xid: Option<u32>,
        oid: u32,
        namespace: String,
        name: String,
    },
    /// 'I': a new row.
    Insert {
        xid: Option<u32>,
        relation: u32,
        new: TupleData,
    },
    /// 'U': a changed row; `old` is the old key ('K') or whole old row ('O') when sent.
    Update {
        xid: Option<u32>,
        relation: u32,
        old: Option<OldTuple>,
        new: TupleData,
    },
    /// 'D': a deleted row, identified by its old key or whole old row.
    Delete {
        xid: Option<u32>,
        relation: u32,
        old: OldTuple,
    },
    /// 'T': one or more relations truncated together.
    Truncate {
        xid: Option<u32>,
        options: TruncateOptions,
        relations: Vec<u32>,
    },
    /// 'M': `pg_logical_emit_message()` output.
    Message {
        xid: Option<u32>,
        transactional: bool,
        lsn: u64,
        prefix: String,
        content: Bytes,
    },
    /// 'S': a segment of a large in-progress transaction starts (protocol 2+).
    StreamStart { xid: u32, first_segment: bool },
    /// 'E': the current streamed segment ends.
    StreamStop,
    /// 'c': a streamed transaction commits.
    StreamCommit {
        xid: u32,
        flags: u8,
        commit_lsn: u64,
        end_lsn: u64,
        commit_time: i64,
    },
    /// 'A': a streamed (sub)transaction aborts; `abort` is present with protocol 4 and
    /// `streaming = parallel`.
    StreamAbort {
        xid: u32,
        subxid: u32,
        abort: Option<AbortInfo>,
    },
    /// 'b': a transaction to be prepared starts (protocol 3+, two_phase).
    BeginPrepare(PrepareInfo),
    /// 'P': the transaction was prepared.
    Prepare(PrepareInfo),
    /// 'K': a prepared transaction was committed.
    CommitPrepared {
        flags: u8,
        commit_lsn: u64,
        end_lsn: u64,
        commit_time: i64,
        xid: u32,
        gid: String,
    },
    /// 'r': a prepared transaction was rolled back.
    RollbackPrepared {
        flags: u8,
        prepare_end_lsn: u64,
        rollback_end_lsn: u64,
        prepare_time: i64,
        rollback_time: i64,
        xid: u32,
        gid: String,
    },
    /// 'p': a streamed transaction was prepared.
    StreamPrepare(PrepareInfo),
}

impl LogicalMessage {
    /// The protocol's type byte for this message.
    pub fn type_byte(&self) -> u8 {
        self.kind() as u8
    }

    pub fn kind(&self) -> Kind {
        match self {
            LogicalMessage::Begin { .. } => Kind::Begin,
            LogicalMessage::Commit { .. } => Kind::Commit,
            LogicalMessage::Origin { .. } => Kind::Origin,
            LogicalMessage::Relation(_) => Kind::Relation,
            LogicalMessage::Type { .. } => Kind::Type,
            LogicalMessage::Insert { .. } => Kind::Insert,
            LogicalMessage::Update { .. } => Kind::Update,
            LogicalMessage::Delete { .. } => Kind::Delete,
            LogicalMessage::Truncate { .. } => Kind::Truncate,
            LogicalMessage::Message { .. } => Kind::Message,
            LogicalMessage::StreamStart { .. } => Kind::StreamStart,
            LogicalMessage::StreamStop => Kind::StreamStop,
            LogicalMessage::StreamCommit { .. } => Kind::StreamCommit,
            LogicalMessage::StreamAbort { .. } => Kind::StreamAbort,
            LogicalMessage::BeginPrepare(_) => Kind::BeginPrepare,
            LogicalMessage::Prepare(_) => Kind::Prepare,
            LogicalMessage::CommitPrepared { .. } => Kind::CommitPrepared,
            LogicalMessage::RollbackPrepared { .. } => Kind::RollbackPrepared,
            LogicalMessage::StreamPrepare(_) => Kind::StreamPrepare,
        }
    }

    /// A short lower-case name (`"insert"`, `"stream_commit"`...), used as JSON `kind`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            LogicalMessage::Begin { .. } => "begin",
            LogicalMessage::Commit { .. } => "commit",
            LogicalMessage::Origin { .. } => "origin",
            LogicalMessage::Relation(_) => "relation",
            LogicalMessage::Type { .. } => "type",
            LogicalMessage::Insert { .. } => "insert",
            LogicalMessage::Update { .. } => "update",
            LogicalMessage::Delete { .. } => "delete",
            LogicalMessage::Truncate { .. } => "truncate",
            LogicalMessage::Message { .. } => "message",
            LogicalMessage::StreamStart { .. } => "stream_start",
            LogicalMessage::StreamStop => "stream_stop",
            LogicalMessage::StreamCommit { .. } => "stream_commit",
            LogicalMessage::StreamAbort { .. } => "stream_abort",
            LogicalMessage::BeginPrepare(_) => "begin_prepare",
            LogicalMessage::Prepare(_) => "prepare",
            LogicalMessage::CommitPrepared { .. } => "commit_prepared",
            LogicalMessage::RollbackPrepared { .. } => "rollback_prepared",
            LogicalMessage::StreamPrepare(_) => "stream_prepare",
        }
    }
}

/// Shared body of Begin Prepare, Prepare and Stream Prepare. For Begin Prepare, `flags` is
/// always 0 (the message has no flags byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepareInfo {
    pub flags: u8,
    pub prepare_lsn: u64,
    pub end_lsn: u64,
    pub prepare_time: i64,
    pub xid: u32,
    pub gid: String,
}

/// Stream Abort's extra fields under parallel streaming (protocol 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortInfo {
    pub abort_lsn: u64,
    pub abort_time: i64,
}

/// Truncate's option bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TruncateOptions(pub u8);

impl TruncateOptions {
    /// `TRUNCATE ... CASCADE`.
    pub const CASCADE: u8 = 1;
    /// `TRUNCATE ... RESTART IDENTITY`.
    pub const RESTART_IDENTITY: u8 = 2;

    pub fn cascade(self) -> bool {
        self.0 & Self::CASCADE != 0
    }

    pub fn restart_identity(self) -> bool {
        self.0 & Self::RESTART_IDENTITY != 0
    }
}

/// A relation (table) as announced by a Relation message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// The streamed transaction's xid, when sent inside a stream.
    pub xid: Option<u32>,
    pub oid: u32,
    /// Schema; pgoutput sends an empty string for `pg_catalog`, kept as sent.
    pub namespace: String,
    pub name: String,
    /// `relreplident`: `b'd'` default, `b'n'` nothing, `b'f'` full, `b'i'` index.
    pub replica_identity: u8,
    pub columns: Vec<RelationColumn>,
}

impl Relation {
    /// `schema.table`, or `pg_catalog.table` when pgoutput sent an empty schema.
    pub fn qualified_name(&self) -> String {
        let namespace = if self.namespace.is_empty() {
            "pg_catalog"
        } else {
            &self.namespace
        };
        format!("{namespace}.{}", self.name)
    }
}

/// One published column of a relation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationColumn {
    /// Bit 1: the column is part of the replica identity key.
    pub flags: u8,
    pub name: String,
    pub type_oid: u32,
    pub type_modifier: i32,
}

impl RelationColumn {
    /// Whether the column is part of the key (replica identity).
    pub fn is_key(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// A row's column values, in the relation's column order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TupleData {
    pub columns: Vec<ColumnValue>,
}

/// One column of a tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnValue {
    /// 'n': SQL NULL.
    Null,
    /// 'u': an unchanged TOASTed value; the actual value was not sent.
    Unchanged,
    /// 't': the type's text output.
    Text(Bytes),
    /// 'b': the type's binary send format (`binary = true`).
    Binary(Bytes),
}

/// The old row sent with an Update or Delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OldTuple {
    /// 'K': only the replica identity key columns (others are null).
    Key(TupleData),
    /// 'O': the whole old row (`REPLICA IDENTITY FULL`).
    Full(TupleData),
}

impl OldTuple {
    /// The tuple, whichever kind it is.
    pub fn tuple(&self) -> &TupleData {
        match self {
            OldTuple::Key(t) | OldTuple::Full(t) => t,
        }
    }
}
