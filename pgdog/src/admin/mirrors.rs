//! SHOW MIRRORS: each `[[mirroring]]` entry with its counters (`backend::mirror`).
use super::Reply;
use crate::backend::mirror;
use std::sync::atomic::Ordering::Relaxed;

/// Average microseconds, 0 without transactions.
fn avg(total_us: u64, n: u64) -> u64 {
    total_us.checked_div(n).unwrap_or(0)
}

pub fn show() -> Reply {
    let columns = [
        "source_db",
        "destination_db",
        "exposure",
        "level",
        "queue_length",
        "queue_depth",
        "mirrored",
        "dropped",
        "errors",
        "source_avg_us",
        "destination_avg_us",
    ];
    let rows = mirror::all()
        .iter()
        .map(|m| {
            let c = &m.config;
            let mirrored = m.mirrored.load(Relaxed);
            [
                c.source_db.clone(),
                c.destination_db.clone(),
                c.exposure.to_string(),
                c.level.name().to_string(),
                c.queue_length.to_string(),
                m.depth().to_string(),
                mirrored.to_string(),
                m.dropped.load(Relaxed).to_string(),
                m.errors.load(Relaxed).to_string(),
                avg(m.source_us.load(Relaxed), mirrored).to_string(),
                avg(m.destination_us.load(Relaxed), mirrored).to_string(),
            ]
            .into_iter()
            .map(Some)
            .collect()
        })
        .collect();
    Reply::Rows {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        tag: "SHOW".into(),
    }
}
