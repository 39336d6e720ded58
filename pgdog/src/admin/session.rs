//! The admin database's client session: simple query protocol only. Each statement of a Query
//! answers like Postgres (RowDescription, DataRows in text, CommandComplete; or ErrorResponse,
//! which skips the rest of that Query) and the Query ends with ReadyForQuery. Extended-protocol
//! messages get an error (once per Sync) and the session stays usable.
use super::commands::{self, COMMANDS};
use super::{AdminError, Reply};
use crate::net::message;
use crate::net::rows::{data_row, row_description, Field};
use crate::net::stream::Stream;
use crate::net::tag::frontend;
use crate::net::{Message, MessageReader, ProtocolError};
use crate::stats::ClientInfo;
use tokio::io::AsyncWriteExt;

/// OID of `text`.
const TEXT_OID: i32 = 25;

/// Admin sessions connected now.
static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Serves an authenticated admin client until it leaves (or KILL / the shutdown end it).
pub async fn serve(mut stream: Stream, mut reader: MessageReader, client: &ClientInfo) {
    use std::sync::atomic::Ordering::SeqCst;
    SESSIONS.fetch_add(1, SeqCst);
    serve_one(&mut stream, &mut reader, client).await;
    // The last admin session gone while suspended: nobody could RESUME any more (no connection
    // is accepted), so pgdog resumes, as PgBouncer does.
    if SESSIONS.fetch_sub(1, SeqCst) == 1 && crate::ops::suspend::is_suspended() {
        tracing::warn!("the last admin session left while suspended: resuming");
        super::control::unsuspend();
        super::resume(None);
    }
}

async fn serve_one(stream: &mut Stream, reader: &mut MessageReader, client: &ClientInfo) {
    let served = tokio::select! {
        r = serve_messages(stream, reader) => r,
        _ = client.stop_requested(true) => Err(ProtocolError::Terminated(
            "terminating connection due to administrator command".into(),
        )),
    };
    match served {
        Ok(()) | Err(ProtocolError::Closed) | Err(ProtocolError::Io(_)) => {}
        Err(e) => {
            tracing::info!("admin client: {e}");
            let _ = stream
                .write_all(message::fatal(e.code(), &e.to_string()).bytes())
                .await;
        }
    }
    let _ = stream.shutdown().await;
}

async fn serve_messages(
    stream: &mut Stream,
    reader: &mut MessageReader,
) -> Result<(), ProtocolError> {
    // After an extended-protocol message was refused: drop messages until Sync.
    let mut skip_until_sync = false;
    loop {
        let m = reader.next(stream).await?;
        let mut out = Vec::new();
        match m.tag() {
            frontend::TERMINATE => return Ok(()),
            frontend::QUERY => {
                query(&m, &mut out).await?;
                out.extend_from_slice(message::ready_for_query(crate::net::TxStatus::Idle).bytes());
            }
            frontend::SYNC => {
                skip_until_sync = false;
                out.extend_from_slice(message::ready_for_query(crate::net::TxStatus::Idle).bytes());
            }
            frontend::PARSE
            | frontend::BIND
            | frontend::DESCRIBE
            | frontend::EXECUTE
            | frontend::CLOSE
            | frontend::FLUSH
            | frontend::FUNCTION_CALL => {
                if !skip_until_sync {
                    skip_until_sync = m.tag() != frontend::FUNCTION_CALL;
                    let e = AdminError::Unsupported {
                        commands: COMMANDS.into(),
                    };
                    out.extend_from_slice(message::error(e.code(), &e.to_string()).bytes());
                    if m.tag() == frontend::FUNCTION_CALL {
                        out.extend_from_slice(
                            message::ready_for_query(crate::net::TxStatus::Idle).bytes(),
                        );
                    }
                }
            }
            // CopyData/CopyDone/CopyFail outside COPY: ignored, as Postgres does.
            frontend::COPY_DATA | frontend::COPY_DONE | frontend::COPY_FAIL => {}
            other => return Err(ProtocolError::UnknownMessage(other)),
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
        }
    }
}

/// Runs each statement of a Query, appending the answers to `out` (not the ReadyForQuery).
async fn query(m: &Message, out: &mut Vec<u8>) -> Result<(), ProtocolError> {
    let sql = message::read_query(m)?;
    let statements = commands::split(sql);
    if statements.is_empty() {
        out.extend_from_slice(message::empty(b'I').bytes());
        return Ok(());
    }
    for statement in statements {
        match commands::run(statement).await {
            Ok(reply) => encode(&reply, out),
            Err(e) => {
                tracing::info!("admin: {statement}: {e}");
                out.extend_from_slice(message::error(e.code(), &e.to_string()).bytes());
                break;
            }
        }
    }
    Ok(())
}

/// A reply on the wire.
fn encode(reply: &Reply, out: &mut Vec<u8>) {
    match reply {
        Reply::Tag(tag) => out.extend_from_slice(message::command_complete(tag).bytes()),
        Reply::Rows { columns, rows, tag } => {
            let fields: Vec<Field> = columns
                .iter()
                .map(|c| Field::computed(c, TEXT_OID, -1))
                .collect();
            out.extend_from_slice(row_description(&fields).bytes());
            for row in rows {
                out.extend_from_slice(data_row(row).bytes());
            }
            let tag = if tag == "SELECT" {
                format!("{tag} {}", rows.len())
            } else {
                tag.clone()
            };
            out.extend_from_slice(message::command_complete(&tag).bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_encode_as_postgres_does() {
        let mut out = Vec::new();
        encode(
            &Reply::Rows {
                columns: vec!["a".into()],
                rows: vec![vec![Some("x".into())], vec![None]],
                tag: "SHOW".into(),
            },
            &mut out,
        );
        let tags: Vec<u8> = {
            let mut v = Vec::new();
            let mut rest = &out[..];
            while rest.len() >= 5 {
                let len = i32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
                v.push(rest[0]);
                rest = &rest[1 + len..];
            }
            v
        };
        assert_eq!(tags, b"TDDC");
        assert!(out.ends_with(b"SHOW\0"));
    }
}
