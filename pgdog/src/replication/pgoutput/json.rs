//! One-line JSON for a decoded message (`pgdog logical-dump`). Hand-written: the shapes are
//! small and fixed, and escaping follows RFC 8259.
//!
//! Every line has `lsn` (Postgres text form) and `kind` (see [`LogicalMessage::kind_name`]).
//! Row changes name the relation `schema.table` and give `new`, and `old_key` (replica
//! identity columns) or `old` (whole row), as objects of column name to value: text as a
//! string, binary as `"\\x0a1b.."` hex, SQL NULL as `null`, an unchanged TOAST value as
//! `{"unchanged_toast":true}`. LSNs are strings (`"0/16B3748"`), timestamps ISO 8601 UTC.

use std::fmt::Write;

use super::decoder::Decoder;
use super::lsn::format_timestamp;
use super::message::{ColumnValue, LogicalMessage, OldTuple, PrepareInfo, TupleData};

impl Decoder {
    /// `msg` (decoded by this decoder at XLogData `lsn`) as one JSON line, without newline.
    /// Relation and column names come from the decoder's relation cache.
    pub fn to_json(&self, msg: &LogicalMessage, lsn: u64) -> String {
        let mut j = Json::new();
        j.lsn_field("lsn", lsn);
        j.str_field("kind", msg.kind_name());
        match msg {
            LogicalMessage::Begin {
                final_lsn,
                commit_time,
                xid,
            } => {
                j.num_field("xid", *xid);
                j.lsn_field("final_lsn", *final_lsn);
                j.time_field("commit_time", *commit_time);
            }
            LogicalMessage::Commit {
                flags,
                commit_lsn,
                end_lsn,
                commit_time,
            } => {
                j.num_field("flags", *flags);
                j.lsn_field("commit_lsn", *commit_lsn);
                j.lsn_field("end_lsn", *end_lsn);
                j.time_field("commit_time", *commit_time);
            }
            LogicalMessage::Origin { commit_lsn, name } => {
                j.lsn_field("commit_lsn", *commit_lsn);
                j.str_field("name", name);
            }
            LogicalMessage::Relation(rel) => {
                j.xid_field(rel.xid);
                j.num_field("oid", rel.oid);
                j.str_field("relation", &rel.qualified_name());
                j.str_field(
                    "replica_identity",
                    &(rel.replica_identity as char).to_string(),
                );
                j.key("columns");
                j.out.push('[');
                for (i, col) in rel.columns.iter().enumerate() {
                    if i > 0 {
                        j.out.push(',');
                    }
                    j.out.push('{');
                    j.first = true;
                    j.str_field("name", &col.name);
                    j.num_field("type_oid", col.type_oid);
                    j.num_field("type_modifier", col.type_modifier);
                    j.bool_field("key", col.is_key());
                    j.out.push('}');
                }
                j.out.push(']');
            }
            LogicalMessage::Type {
                xid,
                oid,
                namespace,
                name,
            } => {
                j.xid_field(*xid);
                j.num_field("oid", *oid);
                j.str_field("namespace", namespace);
                j.str_field("name", name);
            }
            LogicalMessage::Insert { xid, relation, new } => {
                j.xid_field(*xid);
                self.relation_field(&mut j, *relation);
                self.tuple_field(&mut j, "new", *relation, new);
            }
            LogicalMessage::Update {
                xid,
                relation,
                old,
                new,
            } => {
                j.xid_field(*xid);
                self.relation_field(&mut j, *relation);
                if let Some(old) = old {
                    self.old_field(&mut j, *relation, old);
                }
                self.tuple_field(&mut j, "new", *relation, new);
            }
            LogicalMessage::Delete { xid, relation, old } => {
                j.xid_field(*xid);
                self.relation_field(&mut j, *relation);
                self.old_field(&mut j, *relation, old);
            }
            LogicalMessage::Truncate {
                xid,
                options,
                relations,
            } => {
                j.xid_field(*xid);
                j.key("relations");
                j.out.push('[');
                for (i, oid) in relations.iter().enumerate() {
                    if i > 0 {
                        j.out.push(',');
                    }
                    j.string(&self.relation_name(*oid));
                }
                j.out.push(']');
                j.bool_field("cascade", options.cascade());
                j.bool_field("restart_identity", options.restart_identity());
            }
            LogicalMessage::Message {
                xid,
                transactional,
                lsn,
                prefix,
                content,
            } => {
                j.xid_field(*xid);
                j.bool_field("transactional", *transactional);
                j.lsn_field("message_lsn", *lsn);
                j.str_field("prefix", prefix);
                j.key("content");
                match std::str::from_utf8(content) {
                    Ok(text) => j.string(text),
                    Err(_) => j.hex(content),
                }
            }
            LogicalMessage::StreamStart { xid, first_segment } => {
                j.num_field("xid", *xid);
                j.bool_field("first_segment", *first_segment);
            }
            LogicalMessage::StreamStop => (),
            LogicalMessage::StreamCommit {
                xid,
                flags,
                commit_lsn,
                end_lsn,
                commit_time,
            } => {
                j.num_field("xid", *xid);
                j.num_field("flags", *flags);
                j.lsn_field("commit_lsn", *commit_lsn);
                j.lsn_field("end_lsn", *end_lsn);
                j.time_field("commit_time", *commit_time);
            }
            LogicalMessage::StreamAbort { xid, subxid, abort } => {
                j.num_field("xid", *xid);
                j.num_field("subxid", *subxid);
                if let Some(abort) = abort {
                    j.lsn_field("abort_lsn", abort.abort_lsn);
                    j.time_field("abort_time", abort.abort_time);
                }
            }
            LogicalMessage::BeginPrepare(p)
            | LogicalMessage::Prepare(p)
            | LogicalMessage::StreamPrepare(p) => prepare_fields(&mut j, p),
            LogicalMessage::CommitPrepared {
                flags,
                commit_lsn,
                end_lsn,
                commit_time,
                xid,
                gid,
            } => {
                j.num_field("xid", *xid);
                j.str_field("gid", gid);
                j.num_field("flags", *flags);
                j.lsn_field("commit_lsn", *commit_lsn);
                j.lsn_field("end_lsn", *end_lsn);
                j.time_field("commit_time", *commit_time);
            }
            LogicalMessage::RollbackPrepared {
                flags,
                prepare_end_lsn,
                rollback_end_lsn,
                prepare_time,
                rollback_time,
                xid,
                gid,
            } => {
                j.num_field("xid", *xid);
                j.str_field("gid", gid);
                j.num_field("flags", *flags);
                j.lsn_field("prepare_end_lsn", *prepare_end_lsn);
                j.lsn_field("rollback_end_lsn", *rollback_end_lsn);
                j.time_field("prepare_time", *prepare_time);
                j.time_field("rollback_time", *rollback_time);
            }
        }
        j.finish()
    }

    /// `schema.table`, or the bare oid as text when the relation is unknown.
    fn relation_name(&self, oid: u32) -> String {
        match self.relation(oid) {
            Some(rel) => rel.qualified_name(),
            None => oid.to_string(),
        }
    }

    /// `"relation":"schema.table"`, escaped in place (no intermediate string per row).
    fn relation_field(&self, j: &mut Json, oid: u32) {
        match self.relation(oid) {
            Some(rel) if !rel.namespace.is_empty() => {
                j.key("relation");
                j.out.push('"');
                j.escaped(&rel.namespace);
                j.out.push('.');
                j.escaped(&rel.name);
                j.out.push('"');
            }
            _ => j.str_field("relation", &self.relation_name(oid)),
        }
    }

    fn old_field(&self, j: &mut Json, oid: u32, old: &OldTuple) {
        match old {
            OldTuple::Key(t) => self.tuple_field(j, "old_key", oid, t),
            OldTuple::Full(t) => self.tuple_field(j, "old", oid, t),
        }
    }

    /// `"name":{"col":value,...}`; columns without a known name are `$1`, `$2`...
    fn tuple_field(&self, j: &mut Json, name: &str, oid: u32, tuple: &TupleData) {
        let columns = self
            .relation(oid)
            .map(|rel| &rel.columns[..])
            .unwrap_or(&[]);
        j.key(name);
        j.out.push('{');
        for (i, value) in tuple.columns.iter().enumerate() {
            if i > 0 {
                j.out.push(',');
            }
            match columns.get(i) {
                Some(col) => j.string(&col.name),
                None => j.string(&format!("${}", i + 1)),
            }
            j.out.push(':');
            match value {
                ColumnValue::Null => j.out.push_str("null"),
                ColumnValue::Unchanged => j.out.push_str(r#"{"unchanged_toast":true}"#),
                ColumnValue::Text(text) => j.string(&String::from_utf8_lossy(text)),
                ColumnValue::Binary(data) => j.hex(data),
            }
        }
        j.out.push('}');
    }
}

fn prepare_fields(j: &mut Json, p: &PrepareInfo) {
    j.num_field("xid", p.xid);
    j.str_field("gid", &p.gid);
    j.num_field("flags", p.flags);
    j.lsn_field("prepare_lsn", p.prepare_lsn);
    j.lsn_field("end_lsn", p.end_lsn);
    j.time_field("prepare_time", p.prepare_time);
}

/// A JSON object being written field by field.
struct Json {
    out: String,
    first: bool,
}

impl Json {
    fn new() -> Json {
        Json {
            out: String::from("{"),
            first: true,
        }
    }

    fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.string(key);
        self.out.push(':');
    }

    fn str_field(&mut self, key: &str, value: &str) {
        self.key(key);
        self.string(value);
    }

    fn num_field(&mut self, key: &str, value: impl std::fmt::Display) {
        self.key(key);
        let _ = write!(self.out, "{value}");
    }

    fn bool_field(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out.push_str(if value { "true" } else { "false" });
    }

    fn lsn_field(&mut self, key: &str, lsn: u64) {
        self.key(key);
        let _ = write!(self.out, "\"{:X}/{:X}\"", lsn >> 32, lsn & 0xFFFF_FFFF);
    }

    fn time_field(&mut self, key: &str, micros: i64) {
        self.str_field(key, &format_timestamp(micros));
    }

    /// `"xid":N` for streamed changes; nothing otherwise.
    fn xid_field(&mut self, xid: Option<u32>) {
        if let Some(xid) = xid {
            self.num_field("xid", xid);
        }
    }

    /// `"\\x0a1b..."`: bytea's hex form, as a JSON string.
    fn hex(&mut self, data: &[u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.out.reserve(data.len() * 2 + 5);
        self.out.push_str("\"\\\\x");
        for &b in data {
            self.out.push(HEX[usize::from(b >> 4)] as char);
            self.out.push(HEX[usize::from(b & 15)] as char);
        }
        self.out.push('"');
    }

    /// A JSON string literal, escaped per RFC 8259.
    fn string(&mut self, s: &str) {
        self.out.reserve(s.len() + 2);
        self.out.push('"');
        self.escaped(s);
        self.out.push('"');
    }

    /// `s` escaped per RFC 8259, without the quotes; unescaped runs are copied at once.
    fn escaped(&mut self, s: &str) {
        let mut plain = 0;
        for (i, c) in s.char_indices() {
            if !matches!(c, '"' | '\\' | '\u{0}'..='\u{1f}' | '\u{7f}') {
                continue;
            }
            self.out.push_str(&s[plain..i]);
            plain = i + 1;
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                c => {
                    let _ = write!(self.out, "\\u{:04x}", c as u32);
                }
            }
        }
        self.out.push_str(&s[plain..]);
    }
}
