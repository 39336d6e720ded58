//! Drains a logical slot with pgdog's replication client and pgoutput decoder, as the
//! resharding engine will: every message decoded, progress confirmed at each commit, stop at an
//! LSN. Prints the number of messages and the seconds taken.
//!
//! Usage: `replication-drain URL SLOT PUBLICATION END_LSN`
use pgdog::replication::client::url::parse_url;
use pgdog::replication::client::{parse_lsn, ReplicationClient, ReplicationEvent, StartOptions};
use pgdog::replication::pgoutput::{Decoder, LogicalMessage};
use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, slot, publication, end] = args.as_slice() else {
        eprintln!("usage: replication-drain URL SLOT PUBLICATION END_LSN");
        std::process::exit(2);
    };
    let end = parse_lsn(end).expect("END_LSN");
    let target = parse_url(url).expect("URL");
    let started = Instant::now();
    let mut client = ReplicationClient::connect(&target, Duration::from_secs(10))
        .await
        .expect("connect");
    client
        .start(slot, 0, &StartOptions::new(4, &[publication.as_str()]))
        .await
        .expect("start");
    let mut decoder = Decoder::new(4);
    let mut messages = 0u64;
    let mut in_tx = false;
    'drain: while let Some(event) = client.next_event().await.expect("stream") {
        match event {
            ReplicationEvent::XLogData {
                wal_start, data, ..
            } => {
                if !in_tx && wal_start > end {
                    break;
                }
                let msg = decoder.decode(wal_start, data).expect("decode");
                messages += 1;
                match msg {
                    LogicalMessage::Begin { .. } => in_tx = true,
                    LogicalMessage::Commit { end_lsn, .. } => {
                        in_tx = false;
                        client.confirm(end_lsn);
                        if end_lsn >= end {
                            break 'drain;
                        }
                    }
                    other => {
                        std::hint::black_box(&other);
                    }
                }
            }
            ReplicationEvent::Keepalive { wal_end, .. } => {
                if !in_tx && wal_end >= end {
                    break;
                }
            }
        }
    }
    client.stop().await.expect("stop");
    println!("{messages} {:.2}", started.elapsed().as_secs_f64());
}
