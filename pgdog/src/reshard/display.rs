//! Renders a running reshard's progress: per table rows, bytes, rate and ETA; per source shard
//! the replication lag in bytes and seconds. Used by the terminal display of `pgdog reshard`
//! and by the admin database's `SHOW RESHARD`.
use crate::replication::client::format_lsn;
use crate::reshard::orchestrate::Control;
use crate::reshard::progress::TableProgress;
use std::time::Instant;

/// One line of `SHOW RESHARD` / the terminal display.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `table`, `stream` or `reshard`.
    pub kind: &'static str,
    pub name: String,
    pub shard: Option<usize>,
    pub rows: u64,
    pub bytes: u64,
    /// Rows per second (tables) or transactions per second (streams).
    pub rate: f64,
    pub eta_seconds: Option<f64>,
    pub lag_bytes: Option<u64>,
    pub lag_seconds: Option<f64>,
    pub status: String,
    /// Tables: the server read from and the reader connections (`replica host:port x2`).
    pub server: Option<String>,
    /// Tables: source COPY megabytes (10^6 bytes) per second.
    pub mb_per_s: Option<f64>,
}

pub fn table_row(t: &TableProgress, now: Instant) -> Row {
    let elapsed = match (t.started, t.finished) {
        (Some(s), Some(f)) => f.duration_since(s).as_secs_f64(),
        (Some(s), None) => now.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let (rate, mb_per_s) = if elapsed > 0.0 {
        (t.rows as f64 / elapsed, t.bytes as f64 / 1e6 / elapsed)
    } else {
        (0.0, 0.0)
    };
    let status = if t.skipped {
        "copied before".to_string()
    } else if t.finished.is_some() {
        "copied".to_string()
    } else if t.started.is_some() {
        "copying".to_string()
    } else {
        "waiting".to_string()
    };
    let eta = if t.finished.is_none() && t.started.is_some() && rate > 0.0 {
        Some(t.estimated_rows.saturating_sub(t.rows) as f64 / rate)
    } else {
        None
    };
    Row {
        kind: "table",
        name: t.table.clone(),
        shard: Some(t.source_shard),
        rows: t.rows,
        bytes: t.bytes,
        rate,
        eta_seconds: eta,
        lag_bytes: None,
        lag_seconds: None,
        status,
        server: (!t.server.is_empty()).then(|| match t.readers {
            0 | 1 => t.server.clone(),
            n => format!("{} x{n}", t.server),
        }),
        mb_per_s: (!t.skipped).then_some(mb_per_s),
    }
}

/// The rows describing `control` now.
pub fn rows(control: &Control) -> Vec<Row> {
    let now = Instant::now();
    let mut out = vec![Row {
        kind: "reshard",
        name: format!(
            "{} -> {}",
            control.options.databases.from, control.options.databases.to
        ),
        shard: None,
        rows: 0,
        bytes: 0,
        rate: 0.0,
        eta_seconds: None,
        lag_bytes: None,
        lag_seconds: None,
        status: format!(
            "{} ({:.0} s){}",
            control.step(),
            control.started.elapsed().as_secs_f64(),
            if control.cutover_requested() {
                ", cutover requested"
            } else {
                ""
            }
        ),
        server: None,
        mb_per_s: None,
    }];
    out.extend(control.progress.tables().iter().map(|t| table_row(t, now)));
    let lag = control.lag();
    for s in control.progress.streams() {
        let l = lag.get(s.source_shard).copied();
        let elapsed = control.started.elapsed().as_secs_f64();
        out.push(Row {
            kind: "stream",
            name: format!("applied {}", format_lsn(s.applied_lsn)),
            shard: Some(s.source_shard),
            rows: s.rows,
            bytes: 0,
            rate: if elapsed > 0.0 {
                s.transactions as f64 / elapsed
            } else {
                0.0
            },
            eta_seconds: None,
            lag_bytes: l.map(|l| l.bytes),
            lag_seconds: l.map(|l| l.seconds),
            status: format!("{} transactions", s.transactions),
            server: None,
            mb_per_s: None,
        });
    }
    out
}

/// `1.2 MB`-style sizes.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The progress as a text block for a terminal.
pub fn render(control: &Control) -> String {
    let mut out = String::new();
    for w in control.checks.lock().iter() {
        out.push_str(w);
        out.push('\n');
    }
    let retries = control.retries.lock();
    let shown = retries.len().saturating_sub(10);
    if shown > 0 {
        out.push_str(&format!("({shown} earlier retries)\n"));
    }
    for r in &retries[shown..] {
        out.push_str(r);
        out.push('\n');
    }
    for r in rows(control) {
        let line = match r.kind {
            "reshard" => format!("reshard {}: {}", r.name, r.status),
            "table" => format!(
                "  {:<32} shard {:<2} {:>12} rows {:>10} {:>10.0} rows/s {:>7.1} MB/s  {:<14} {} from {}",
                r.name,
                r.shard.unwrap_or(0),
                r.rows,
                bytes(r.bytes),
                r.rate,
                r.mb_per_s.unwrap_or(0.0),
                r.eta_seconds
                    .map(|e| format!("ETA {e:.0} s"))
                    .unwrap_or_default(),
                r.status,
                r.server.as_deref().unwrap_or("-")
            ),
            _ => format!(
                "  replication from shard {}: {}, {}, lag {} / {:.1} s",
                r.shard.unwrap_or(0),
                r.name,
                r.status,
                bytes(r.lag_bytes.unwrap_or(0)),
                r.lag_seconds.unwrap_or(0.0)
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1_500), "1.5 kB");
        assert_eq!(bytes(2_000_000_000), "2.0 GB");
    }

    #[test]
    fn eta_from_rate() {
        let start = Instant::now() - std::time::Duration::from_secs(10);
        let t = TableProgress {
            table: "public.t".into(),
            rows: 100,
            bytes: 5_000_000,
            estimated_rows: 300,
            started: Some(start),
            server: "replica 127.0.0.1:5433".into(),
            readers: 2,
            ..Default::default()
        };
        let r = table_row(&t, start + std::time::Duration::from_secs(10));
        assert!((r.rate - 10.0).abs() < 1e-9);
        assert!((r.eta_seconds.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(r.status, "copying");
        assert!((r.mb_per_s.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(r.server.as_deref(), Some("replica 127.0.0.1:5433 x2"));
    }
}
