//! The real PostgreSQL 18 captures decode in order, without error, to what the SQL did.

use bytes::Bytes;

use super::fixtures::{self, Fixture};
use super::unhex;
use crate::replication::pgoutput::*;

/// Decodes a whole capture; returns (message, JSON line) pairs.
fn decode_all(fixture: &Fixture) -> Vec<(LogicalMessage, String)> {
    let mut d = Decoder::new(fixture.proto_version);
    fixture
        .messages
        .iter()
        .map(|(lsn, hex)| {
            let lsn = parse_lsn(lsn).unwrap();
            let msg = d
                .decode(lsn, Bytes::from(unhex(hex)))
                .unwrap_or_else(|e| panic!("{}: {e}", fixture.name));
            let json = d.to_json(&msg, lsn);
            (msg, json)
        })
        .collect()
}

fn assert_has(lines: &[(LogicalMessage, String)], needle: &str) {
    assert!(
        lines.iter().any(|(_, json)| json.contains(needle)),
        "no line contains {needle}:\n{}",
        lines
            .iter()
            .map(|(_, j)| j.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn kinds(lines: &[(LogicalMessage, String)]) -> String {
    lines.iter().map(|(m, _)| m.type_byte() as char).collect()
}

#[test]
fn every_capture_decodes() {
    for fixture in fixtures::ALL.iter() {
        let lines = decode_all(fixture);
        assert_eq!(lines.len(), fixture.messages.len());
    }
}

#[test]
fn v4_plain_changes() {
    let lines = decode_all(fixtures::named("V4_PLAIN"));
    assert_has(
        &lines,
        r#""kind":"insert","relation":"public.items","new":{"id":"1","name":"apple","qty":"3","price":"1.25","note":null}"#,
    );
    assert_has(
        &lines,
        r#""new":{"id":"2","name":"pear \"x\"","qty":"5","price":"2.5","note":"tab\there"}"#,
    );
    // UPDATE items SET id = 10 WHERE id = 2: the old key comes along.
    assert_has(
        &lines,
        r#""kind":"update","relation":"public.items","old_key":{"id":"2","name":null,"qty":null,"price":null,"note":null},"new":{"id":"10""#,
    );
    assert_has(
        &lines,
        r#""kind":"delete","relation":"public.items","old_key":{"id":"1","#,
    );
    // REPLICA IDENTITY FULL: whole old rows.
    assert_has(
        &lines,
        r#""kind":"update","relation":"public.full_ident","old":{"id":"1","v":"a"},"new":{"id":"1","v":"b"}"#,
    );
    assert_has(
        &lines,
        r#""kind":"delete","relation":"public.full_ident","old":{"id":"1","v":"b"}"#,
    );
    // The TOASTed column is not resent when unchanged.
    assert_has(
        &lines,
        r#""new":{"id":"1","small":"t","large":{"unchanged_toast":true}}"#,
    );
    assert_has(&lines, r#""kind":"type","#);
    assert_has(&lines, r#""new":{"id":"1","m":"happy"}"#);
    assert_has(&lines, r#""kind":"message","transactional":true,"#);
    assert_has(&lines, r#""prefix":"pfx","content":"hello""#);
    assert_has(&lines, r#""transactional":false,"#);
    assert_has(&lines, r#""prefix":"nontx","content":"\\x00ff""#);
    assert_has(
        &lines,
        r#""kind":"truncate","relations":["public.items","public.full_ident"],"cascade":true,"restart_identity":true"#,
    );
    let k = kinds(&lines);
    assert!(k.starts_with("BRIIC"), "{k}");
    assert!(k.contains('Y') && k.contains('T') && k.contains('M'), "{k}");
}

#[test]
fn v1_binary_columns() {
    let lines = decode_all(fixtures::named("V1_BINARY"));
    // int4 1, text "apple" in binary send format.
    assert_has(
        &lines,
        r#""new":{"id":"\\x00000001","name":"\\x6170706c65","qty":"\\x00000003","#,
    );
    let binary = lines.iter().any(|(m, _)| {
        matches!(m, LogicalMessage::Insert { new, .. }
            if matches!(new.columns[0], ColumnValue::Binary(_)))
    });
    assert!(binary);
}

#[test]
fn v4_streamed_transaction() {
    let lines = decode_all(fixtures::named("V4_STREAM"));
    let k = kinds(&lines);
    assert!(k.starts_with("SRII"), "{k}");
    assert!(k.ends_with("Ec"), "{k}");
    let streamed = lines
        .iter()
        .filter(|(m, _)| matches!(m, LogicalMessage::Insert { xid: Some(_), .. }))
        .count();
    assert!(streamed > 10);
    assert_has(&lines, r#""kind":"stream_start","xid":"#);
    assert_has(&lines, r#""kind":"update","xid":"#);
    assert_has(&lines, r#""kind":"delete","xid":"#);
    assert_has(&lines, r#""kind":"message","xid":"#);
    assert_has(&lines, r#""prefix":"spfx","content":"in stream""#);
    assert_has(&lines, r#""kind":"truncate","xid":"#);
    assert_has(&lines, r#""kind":"stream_commit","#);
}

#[test]
fn v4_two_phase_and_parallel_abort() {
    let lines = decode_all(fixtures::named("V4_TWO_PHASE_PARALLEL"));
    for kind in [
        "begin_prepare",
        "prepare",
        "commit_prepared",
        "rollback_prepared",
        "stream_prepare",
    ] {
        assert_has(&lines, &format!(r#""kind":"{kind}","#));
    }
    assert_has(&lines, r#""gid":"gid1""#);
    assert_has(&lines, r#""gid":"gid2""#);
    assert_has(&lines, r#""gid":"gid3""#);
    let abort = lines.iter().find_map(|(m, _)| match m {
        LogicalMessage::StreamAbort { xid, subxid, abort } => Some((*xid, *subxid, *abort)),
        _ => None,
    });
    let (xid, subxid, abort) = abort.unwrap();
    assert_ne!(xid, subxid);
    assert!(
        abort.is_some(),
        "parallel streaming sends abort LSN and time"
    );
}

#[test]
fn v2_stream_abort_without_abort_info() {
    let lines = decode_all(fixtures::named("V2_STREAM"));
    assert!(lines
        .iter()
        .any(|(m, _)| matches!(m, LogicalMessage::StreamAbort { abort: None, .. })));
    // A subtransaction's changes carry its own xid, not the stream's.
    assert_has(&lines, r#""kind":"relation","xid":759,"#);
}
