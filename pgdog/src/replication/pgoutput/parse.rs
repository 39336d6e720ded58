//! Message bodies, one function per message type, laid out as in Postgres' `proto.c` and the
//! "Logical Replication Message Formats" section of the protocol docs. The type byte and any
//! streamed xid were already read by the decoder; these functions never touch its state.

use std::collections::HashMap;

use super::error::Reason;
use super::message::{
    marker, AbortInfo, ColumnValue, LogicalMessage, OldTuple, PrepareInfo, Relation,
    RelationColumn, TruncateOptions, TupleData,
};
use super::reader::Reader;

type Relations = HashMap<u32, Relation>;

/// 'B': Int64 final LSN, Int64 commit time, Int32 xid.
pub(crate) fn begin(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::Begin {
        final_lsn: r.u64("final LSN")?,
        commit_time: r.i64("commit timestamp")?,
        xid: r.u32("xid")?,
    })
}

/// 'C': Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time.
pub(crate) fn commit(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::Commit {
        flags: r.u8("flags")?,
        commit_lsn: r.u64("commit LSN")?,
        end_lsn: r.u64("end LSN")?,
        commit_time: r.i64("commit timestamp")?,
    })
}

/// 'O': Int64 commit LSN on the origin, String origin name.
pub(crate) fn origin(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::Origin {
        commit_lsn: r.u64("origin commit LSN")?,
        name: r.string("origin name")?,
    })
}

/// 'R': Int32 oid, String namespace, String name, Int8 replica identity, Int16 column count,
/// then per column Int8 flags, String name, Int32 type oid, Int32 type modifier.
pub(crate) fn relation(r: &mut Reader, xid: Option<u32>) -> Result<LogicalMessage, Reason> {
    let oid = r.u32("relation oid")?;
    let namespace = r.string("namespace")?;
    let name = r.string("relation name")?;
    let replica_identity = r.u8("replica identity")?;
    if !matches!(replica_identity, b'd' | b'n' | b'f' | b'i') {
        return Err(Reason::other(format!(
            "unknown replica identity 0x{replica_identity:02X} for relation {oid}"
        )));
    }
    let count = column_count(r, "relation column count")?;
    let mut columns = Vec::with_capacity(count.min(r.remaining() / 10));
    for _ in 0..count {
        columns.push(RelationColumn {
            flags: r.u8("column flags")?,
            name: r.string("column name")?,
            type_oid: r.u32("column type oid")?,
            type_modifier: r.i32("column type modifier")?,
        });
    }
    Ok(LogicalMessage::Relation(Relation {
        xid,
        oid,
        namespace,
        name,
        replica_identity,
        columns,
    }))
}

/// 'Y': Int32 type oid, String namespace, String name.
pub(crate) fn type_(r: &mut Reader, xid: Option<u32>) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::Type {
        xid,
        oid: r.u32("type oid")?,
        namespace: r.string("type namespace")?,
        name: r.string("type name")?,
    })
}

/// 'I': Int32 relation oid, 'N', TupleData.
pub(crate) fn insert(
    r: &mut Reader,
    xid: Option<u32>,
    relations: &Relations,
) -> Result<LogicalMessage, Reason> {
    let (relation, columns) = known_relation(r, relations)?;
    match r.u8("tuple marker")? {
        marker::NEW => Ok(LogicalMessage::Insert {
            xid,
            relation,
            new: tuple(r, columns)?,
        }),
        other => Err(bad_marker(other, "'N'")),
    }
}

/// 'U': Int32 relation oid, optional 'K' or 'O' + old TupleData, 'N' + new TupleData.
pub(crate) fn update(
    r: &mut Reader,
    xid: Option<u32>,
    relations: &Relations,
) -> Result<LogicalMessage, Reason> {
    let (relation, columns) = known_relation(r, relations)?;
    let (old, marker) = match r.u8("tuple marker")? {
        marker::NEW => (None, marker::NEW),
        marker::KEY => (
            Some(OldTuple::Key(tuple(r, columns)?)),
            r.u8("tuple marker")?,
        ),
        marker::OLD => (
            Some(OldTuple::Full(tuple(r, columns)?)),
            r.u8("tuple marker")?,
        ),
        other => return Err(bad_marker(other, "'K', 'O' or 'N'")),
    };
    if marker != marker::NEW {
        return Err(bad_marker(marker, "'N'"));
    }
    Ok(LogicalMessage::Update {
        xid,
        relation,
        old,
        new: tuple(r, columns)?,
    })
}

/// 'D': Int32 relation oid, 'K' or 'O' + old TupleData.
pub(crate) fn delete(
    r: &mut Reader,
    xid: Option<u32>,
    relations: &Relations,
) -> Result<LogicalMessage, Reason> {
    let (relation, columns) = known_relation(r, relations)?;
    let old = match r.u8("tuple marker")? {
        marker::KEY => OldTuple::Key(tuple(r, columns)?),
        marker::OLD => OldTuple::Full(tuple(r, columns)?),
        other => return Err(bad_marker(other, "'K' or 'O'")),
    };
    Ok(LogicalMessage::Delete { xid, relation, old })
}

/// 'T': Int32 relation count, Int8 options (1 CASCADE, 2 RESTART IDENTITY), Int32 oid each.
pub(crate) fn truncate(
    r: &mut Reader,
    xid: Option<u32>,
    relations: &Relations,
) -> Result<LogicalMessage, Reason> {
    let count = r.i32("relation count")?;
    let options = TruncateOptions(r.u8("truncate options")?);
    let count = usize::try_from(count)
        .map_err(|_| Reason::other(format!("negative relation count {count}")))?;
    if r.remaining() != count.saturating_mul(4) {
        return Err(Reason::other(format!(
            "{count} relation oid(s) announced, {} byte(s) left",
            r.remaining()
        )));
    }
    let mut oids = Vec::with_capacity(count);
    for _ in 0..count {
        let oid = r.u32("relation oid")?;
        if !relations.contains_key(&oid) {
            return Err(unknown_relation(oid));
        }
        oids.push(oid);
    }
    Ok(LogicalMessage::Truncate {
        xid,
        options,
        relations: oids,
    })
}

/// 'M': Int8 flags (1 transactional), Int64 LSN, String prefix, Int32 length, content.
pub(crate) fn message(r: &mut Reader, xid: Option<u32>) -> Result<LogicalMessage, Reason> {
    let flags = r.u8("flags")?;
    let lsn = r.u64("message LSN")?;
    let prefix = r.string("prefix")?;
    let len = r.i32("content length")?;
    let len = usize::try_from(len)
        .map_err(|_| Reason::other(format!("negative content length {len}")))?;
    Ok(LogicalMessage::Message {
        xid,
        transactional: flags & 1 != 0,
        lsn,
        prefix,
        content: r.bytes(len, "content")?,
    })
}

/// 'S': Int32 xid, Int8 first segment (1 or 0).
pub(crate) fn stream_start(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::StreamStart {
        xid: r.u32("xid")?,
        first_segment: r.u8("first segment flag")? == 1,
    })
}

/// 'c': Int32 xid, Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time.
pub(crate) fn stream_commit(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::StreamCommit {
        xid: r.u32("xid")?,
        flags: r.u8("flags")?,
        commit_lsn: r.u64("commit LSN")?,
        end_lsn: r.u64("end LSN")?,
        commit_time: r.i64("commit timestamp")?,
    })
}

/// 'A': Int32 xid, Int32 subxid; with protocol 4 and `streaming = parallel` also Int64 abort
/// LSN and Int64 abort time. Whether they are there is told by the message length.
pub(crate) fn stream_abort(r: &mut Reader, v4: bool) -> Result<LogicalMessage, Reason> {
    let xid = r.u32("xid")?;
    let subxid = r.u32("subtransaction xid")?;
    let abort = if v4 && r.remaining() > 0 {
        Some(AbortInfo {
            abort_lsn: r.u64("abort LSN")?,
            abort_time: r.i64("abort timestamp")?,
        })
    } else {
        None
    };
    Ok(LogicalMessage::StreamAbort { xid, subxid, abort })
}

/// 'b': Int64 prepare LSN, Int64 end LSN, Int64 prepare time, Int32 xid, String gid.
pub(crate) fn begin_prepare(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::BeginPrepare(PrepareInfo {
        flags: 0,
        prepare_lsn: r.u64("prepare LSN")?,
        end_lsn: r.u64("end LSN")?,
        prepare_time: r.i64("prepare timestamp")?,
        xid: r.u32("xid")?,
        gid: r.string("gid")?,
    }))
}

/// 'P' and 'p': Int8 flags, then the Begin Prepare fields.
pub(crate) fn prepare(r: &mut Reader) -> Result<PrepareInfo, Reason> {
    Ok(PrepareInfo {
        flags: r.u8("flags")?,
        prepare_lsn: r.u64("prepare LSN")?,
        end_lsn: r.u64("end LSN")?,
        prepare_time: r.i64("prepare timestamp")?,
        xid: r.u32("xid")?,
        gid: r.string("gid")?,
    })
}

/// 'K': Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time, Int32 xid, String gid.
pub(crate) fn commit_prepared(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::CommitPrepared {
        flags: r.u8("flags")?,
        commit_lsn: r.u64("commit LSN")?,
        end_lsn: r.u64("end LSN")?,
        commit_time: r.i64("commit timestamp")?,
        xid: r.u32("xid")?,
        gid: r.string("gid")?,
    })
}

/// 'r': Int8 flags, Int64 prepare end LSN, Int64 rollback end LSN, Int64 prepare time,
/// Int64 rollback time, Int32 xid, String gid.
pub(crate) fn rollback_prepared(r: &mut Reader) -> Result<LogicalMessage, Reason> {
    Ok(LogicalMessage::RollbackPrepared {
        flags: r.u8("flags")?,
        prepare_end_lsn: r.u64("prepared transaction end LSN")?,
        rollback_end_lsn: r.u64("rollback end LSN")?,
        prepare_time: r.i64("prepare timestamp")?,
        rollback_time: r.i64("rollback timestamp")?,
        xid: r.u32("xid")?,
        gid: r.string("gid")?,
    })
}

/// TupleData: Int16 column count (must match the relation), then per column 'n', 'u', or
/// 't' / 'b' + Int32 length + bytes.
fn tuple(r: &mut Reader, expected: usize) -> Result<TupleData, Reason> {
    let count = column_count(r, "tuple column count")?;
    if count != expected {
        return Err(Reason::other(format!(
            "tuple has {count} column(s), the relation has {expected}"
        )));
    }
    // The kind byte before each column: NULL, unchanged TOAST, text, binary.
    const NULL: u8 = b'n';
    const UNCHANGED: u8 = b'u';
    const TEXT: u8 = b't';
    const BINARY: u8 = b'b';
    let mut columns = Vec::with_capacity(count);
    for i in 0..count {
        let truncated = Reason::TruncatedTuple {
            column: i + 1,
            of: count,
        };
        let value = match r.u8("column kind").map_err(|_| truncated.clone())? {
            NULL => ColumnValue::Null,
            UNCHANGED => ColumnValue::Unchanged,
            kind @ (TEXT | BINARY) => {
                let len = r.i32("column length").map_err(|_| truncated.clone())?;
                let len = usize::try_from(len).map_err(|_| {
                    Reason::other(format!(
                        "negative length {len} (column {} of {count})",
                        i + 1
                    ))
                })?;
                let data = r.bytes(len, "column value").map_err(|_| truncated)?;
                if kind == TEXT {
                    ColumnValue::Text(data)
                } else {
                    ColumnValue::Binary(data)
                }
            }
            other => {
                return Err(Reason::other(format!(
                    "unknown column kind 0x{other:02X} (column {} of {count})",
                    i + 1
                )))
            }
        };
        columns.push(value);
    }
    Ok(TupleData { columns })
}

/// An Int16 count that must not be negative.
fn column_count(r: &mut Reader, field: &'static str) -> Result<usize, Reason> {
    let count = r.i16(field)?;
    usize::try_from(count).map_err(|_| Reason::other(format!("negative {field} {count}")))
}

/// Reads a relation oid that a Relation message announced; returns it with its column count.
fn known_relation(r: &mut Reader, relations: &Relations) -> Result<(u32, usize), Reason> {
    let oid = r.u32("relation oid")?;
    match relations.get(&oid) {
        Some(rel) => Ok((oid, rel.columns.len())),
        None => Err(unknown_relation(oid)),
    }
}

fn unknown_relation(oid: u32) -> Reason {
    Reason::other(format!(
        "relation {oid} was never announced by a Relation message"
    ))
}

fn bad_marker(found: u8, expected: &str) -> Reason {
    Reason::other(format!(
        "expected tuple marker {expected}, found 0x{found:02X}"
    ))
}
