//! pgoutput decode throughput: a synthetic stream of realistic messages (Begin, Insert, Update
//! with old key, Delete, Commit on a 5-column table with text values) decoded in-process by
//! `pgdog::replication::pgoutput::Decoder`. Prints Markdown table lines (events/s, ns/event),
//! for decoding alone and for decoding + JSON (what `pgdog logical-dump` does per message).
//!
//! Usage: `pgoutput-bench [transactions]` (default 200000, i.e. one million events), or
//! `pgoutput-bench --captured FILE`: a stream captured from PostgreSQL, one message per line in
//! hex (`SELECT encode(data, 'hex') FROM pg_logical_slot_get_binary_changes(...)`), decoded with
//! protocol version 4.
use bytes::Bytes;
use pgdog::replication::pgoutput::{Decoder, LogicalMessage};
use std::time::Instant;

const OID: u32 = 16384;

/// Big-endian message writer.
struct Msg(Vec<u8>);

impl Msg {
    fn new(kind: u8) -> Msg {
        Msg(vec![kind])
    }
    fn u8(mut self, v: u8) -> Msg {
        self.0.push(v);
        self
    }
    fn i16(mut self, v: i16) -> Msg {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Msg {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Msg {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn str(mut self, s: &str) -> Msg {
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        self
    }
    /// TupleData of text columns; `None` is NULL.
    fn tuple(mut self, cols: &[Option<&str>]) -> Msg {
        self = self.i16(cols.len() as i16);
        for col in cols {
            self = match col {
                None => self.u8(b'n'),
                Some(t) => {
                    let m = self.u8(b't').u32(t.len() as u32);
                    Msg([m.0, t.as_bytes().to_vec()].concat())
                }
            };
        }
        self
    }
    fn done(self) -> Bytes {
        Bytes::from(self.0)
    }
}

/// The relation: public.accounts (id bigint key, email text, name text, balance numeric,
/// updated_at timestamptz).
fn relation() -> Bytes {
    let mut m = Msg::new(b'R')
        .u32(OID)
        .str("public")
        .str("accounts")
        .u8(b'd')
        .i16(5);
    for (flags, name, ty) in [
        (1, "id", 20),
        (0, "email", 25),
        (0, "name", 25),
        (0, "balance", 1700),
        (0, "updated_at", 1184),
    ] {
        m = m.u8(flags).str(name).u32(ty).u32(u32::MAX);
    }
    m.done()
}

/// One transaction: Begin, Insert, Update (old key), Delete, Commit, as (LSN, payload).
fn transaction(i: u64, out: &mut Vec<(u64, Bytes)>) {
    let lsn = 0x1_0000_0000 + i * 512;
    let id = (i + 1_000_000).to_string();
    let email = format!("user{i}@example.com");
    let name = format!("User Number {i}");
    let balance = format!("{}.{:02}", i % 100_000, i % 100);
    let ts = "2025-06-01 12:34:56.789012+00";
    let row = [
        Some(id.as_str()),
        Some(email.as_str()),
        Some(name.as_str()),
        Some(balance.as_str()),
        Some(ts),
    ];
    let key = [Some(id.as_str()), None, None, None, None];
    out.push((
        lsn,
        Msg::new(b'B')
            .u64(lsn + 400)
            .u64(800_000_000_000_000)
            .u32(i as u32)
            .done(),
    ));
    out.push((
        lsn + 40,
        Msg::new(b'I').u32(OID).u8(b'N').tuple(&row).done(),
    ));
    out.push((
        lsn + 160,
        Msg::new(b'U')
            .u32(OID)
            .u8(b'K')
            .tuple(&key)
            .u8(b'N')
            .tuple(&row)
            .done(),
    ));
    out.push((
        lsn + 280,
        Msg::new(b'D').u32(OID).u8(b'K').tuple(&key).done(),
    ));
    out.push((
        lsn + 400,
        Msg::new(b'C')
            .u8(0)
            .u64(lsn + 400)
            .u64(lsn + 512)
            .u64(800_000_000_000_000)
            .done(),
    ));
}

/// Decodes a captured stream (hex lines) three times; prints one table row for the best pass.
fn captured(path: &str) {
    let text = std::fs::read_to_string(path).expect("read the captured stream");
    let stream: Vec<Bytes> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| Bytes::from(hex(l.trim_start_matches("\\x"))))
        .collect();
    let bytes: usize = stream.iter().map(|b| b.len()).sum();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let mut decoder = Decoder::new(4);
        let start = Instant::now();
        for (i, data) in stream.iter().enumerate() {
            let msg = decoder
                .decode(i as u64, data.clone())
                .expect("valid stream");
            std::hint::black_box(&msg);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let events = stream.len() as f64;
    println!(
        "| pgoutput decode, captured from PostgreSQL 18 | {} | {:.1} | {:.2}M | {:.0} |",
        stream.len(),
        bytes as f64 / 1e6,
        events / best / 1e6,
        best * 1e9 / events
    );
}

fn hex(s: &str) -> Vec<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => panic!("not hex: {c}"),
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| digit(p[0]) << 4 | digit(p[1]))
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    if let Some(first) = args.next() {
        if first == "--captured" {
            let path = args.next().expect("--captured FILE");
            println!("| workload | events | MB | events/s | ns/event |");
            println!("|---|---|---|---|---|");
            captured(&path);
            return;
        }
    }
    let transactions: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let mut stream = Vec::with_capacity(transactions as usize * 5);
    for i in 0..transactions {
        transaction(i, &mut stream);
    }
    let bytes: usize = stream.iter().map(|(_, b)| b.len()).sum();

    println!("| workload | events | MB | events/s | ns/event |");
    println!("|---|---|---|---|---|");
    for (label, json) in [("decode", false), ("decode + to_json", true)] {
        let mut decoder = Decoder::new(4);
        decoder.decode(0, relation()).expect("relation");
        // Warm-up pass, then the measured pass.
        let mut best = f64::MAX;
        let mut rows = 0u64;
        let mut json_bytes = 0usize;
        for _ in 0..3 {
            rows = 0;
            let start = Instant::now();
            for (lsn, data) in &stream {
                let msg = decoder.decode(*lsn, data.clone()).expect("valid stream");
                if matches!(
                    msg,
                    LogicalMessage::Insert { .. }
                        | LogicalMessage::Update { .. }
                        | LogicalMessage::Delete { .. }
                ) {
                    rows += 1;
                }
                if json {
                    json_bytes += decoder.to_json(&msg, *lsn).len();
                }
                std::hint::black_box(&msg);
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        std::hint::black_box(json_bytes);
        assert_eq!(rows, transactions * 3);
        let events = stream.len() as f64;
        println!(
            "| pgoutput {label} (B, I, U+K, D+K, C; 5 text columns) | {} | {:.1} | {:.2}M | {:.0} |",
            stream.len(),
            bytes as f64 / 1e6,
            events / best / 1e6,
            best * 1e9 / events
        );
    }
}
