//! SHOW ROUTES and RESET ROUTES: the routes report of the databases in a dry run
//! (`stats::routes`), one row per statement shape, most called first.
use super::Reply;
use crate::router::verdict::VerdictKind;
use crate::stats::routes::{self, COLUMNS};
use std::collections::HashMap;

/// Percent with two decimals; 0 of 0 is 0.
fn pct(part: u64, total: u64) -> String {
    if total == 0 {
        return "0.00".into();
    }
    format!("{:.2}", part as f64 * 100.0 / total as f64)
}

pub fn show() -> Reply {
    let rows = routes::rows();
    let mut totals: HashMap<&str, (u64, u64)> = HashMap::new();
    for r in &rows {
        let t = totals.entry(r.database.as_str()).or_default();
        t.0 += r.calls;
        t.1 += r.time_us;
    }
    let out = rows
        .iter()
        .map(|r| {
            let (calls, time) = totals.get(r.database.as_str()).copied().unwrap_or_default();
            let mut row = vec![
                Some(r.database.clone()),
                Some(format!("{:016x}", r.fingerprint)),
                Some(r.sample.clone()),
                Some(r.calls.to_string()),
                Some(pct(r.calls, calls)),
                Some(r.time_us.to_string()),
                Some(pct(r.time_us, time)),
                r.verdict.map(|v| v.name().to_string()),
                Some(r.reason.clone()),
            ];
            row.extend(
                VerdictKind::ALL
                    .iter()
                    .map(|k| Some(r.by_kind[k.index()].to_string())),
            );
            row
        })
        .collect();
    Reply::Rows {
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: out,
        tag: "SHOW".into(),
    }
}

pub fn reset() -> Reply {
    routes::reset();
    Reply::Tag("RESET".into())
}
