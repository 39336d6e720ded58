//! `pgdog readiness`: the routes report summed up for a person deciding to shard. The rows come
//! from a running pgdog's SHOW ROUTES (`from_show`) or from a statement log routed here
//! (`log::route_log`); `summary` prints what share of calls goes to one shard, and which shapes
//! would be refused or go to all shards, most called first.
pub mod log;

use super::routes::RouteRow;
use crate::router::verdict::VerdictKind;
use std::fmt::Write as _;

/// SHOW ROUTES rows (columns in `routes::COLUMNS` order) as report rows.
pub fn from_show(rows: Vec<Vec<Option<String>>>) -> Result<Vec<RouteRow>, String> {
    let columns = super::routes::COLUMNS;
    let at = |name: &str| columns.iter().position(|c| *c == name);
    let text = |r: &[Option<String>], name: &str| -> String {
        at(name)
            .and_then(|i| r.get(i).cloned().flatten())
            .unwrap_or_default()
    };
    let number = |r: &[Option<String>], name: &str| -> Result<u64, String> {
        let v = text(r, name);
        v.parse()
            .map_err(|_| format!("SHOW ROUTES: column {name} is {v:?}, not a number"))
    };
    rows.iter()
        .map(|r| {
            if r.len() != columns.len() {
                return Err(format!(
                    "SHOW ROUTES returned {} columns, this pgdog expects {}: run the readiness command of the same version",
                    r.len(),
                    columns.len()
                ));
            }
            let verdict = text(r, "verdict");
            let mut by_kind = [0; 5];
            for k in VerdictKind::ALL {
                by_kind[k.index()] = number(r, column_of(k))?;
            }
            Ok(RouteRow {
                database: text(r, "database"),
                fingerprint: u64::from_str_radix(&text(r, "fingerprint"), 16).unwrap_or(0),
                sample: text(r, "query"),
                calls: number(r, "calls")?,
                time_us: number(r, "time_us")?,
                by_kind,
                verdict: VerdictKind::ALL.into_iter().find(|k| k.name() == verdict),
                reason: text(r, "reason"),
            })
        })
        .collect()
}

/// The SHOW ROUTES column of a kind's calls.
pub fn column_of(kind: VerdictKind) -> &'static str {
    match kind {
        VerdictKind::Session => "session",
        VerdictKind::OneShard => "one_shard",
        VerdictKind::Several => "several_shards",
        VerdictKind::AllShards => "all_shards",
        VerdictKind::Refused => "refused",
    }
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// The report of one database's rows; `limit`: shapes listed per section.
pub fn summary(database: &str, rows: &[RouteRow], limit: usize) -> String {
    let rows: Vec<&RouteRow> = rows.iter().filter(|r| r.database == database).collect();
    let mut kinds = [0u64; 5];
    for r in &rows {
        (0..5).for_each(|i| kinds[i] += r.by_kind[i]);
    }
    let session = kinds[VerdictKind::Session.index()];
    let routed: u64 = kinds.iter().sum::<u64>() - session;
    let time: u64 = rows.iter().map(|r| r.time_us).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Database {database}: {routed} statements of {} shapes routed by the planned layout.",
        rows.len()
    );
    if routed == 0 {
        let _ = writeln!(
            out,
            "Nothing counted yet: run traffic with dry_run = true (or give a statement log)."
        );
        return out;
    }
    let share = |k: VerdictKind| pct(kinds[k.index()], routed);
    let _ = writeln!(
        out,
        "{:.1}% of calls go to one shard, {:.1}% to several shards, {:.1}% to all shards; {:.1}% would be refused.",
        share(VerdictKind::OneShard),
        share(VerdictKind::Several),
        share(VerdictKind::AllShards),
        share(VerdictKind::Refused),
    );
    if session > 0 {
        let _ = writeln!(
            out,
            "(Not counted: {session} transaction-control and SET statements, which go where the transaction runs.)"
        );
    }
    let sections = [
        (
            VerdictKind::Refused,
            "would be refused by the sharded cluster: change them, or pin them to a shard with /* pgdog_shard: N */",
        ),
        (
            VerdictKind::AllShards,
            "go to all shards: add a filter on the sharding key where the query allows it",
        ),
        (VerdictKind::Several, "go to several shards"),
    ];
    for (kind, what) in sections {
        section(&mut out, &rows, kind, what, (routed, time), limit);
    }
    let one: Vec<&&RouteRow> = rows
        .iter()
        .filter(|r| r.verdict == Some(VerdictKind::OneShard))
        .collect();
    let calls: u64 = one.iter().map(|r| r.calls).sum();
    let _ = writeln!(
        out,
        "\n{} shapes always go to one shard ({calls} calls).",
        one.len()
    );
    out
}

fn section(
    out: &mut String,
    rows: &[&RouteRow],
    kind: VerdictKind,
    what: &str,
    (routed, time): (u64, u64),
    limit: usize,
) {
    let mut of: Vec<&&RouteRow> = rows.iter().filter(|r| r.verdict == Some(kind)).collect();
    if of.is_empty() {
        return;
    }
    of.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.sample.cmp(&b.sample)));
    let calls: u64 = of.iter().map(|r| r.calls).sum();
    let _ = writeln!(
        out,
        "\nThese {} shapes ({calls} calls, {:.1}% of calls) {what}:",
        of.len(),
        pct(calls, routed)
    );
    for (i, r) in of.iter().take(limit).enumerate() {
        let _ = writeln!(
            out,
            "{:>4}. {} calls ({:.1}% of calls, {:.1}% of time): {}\n      {}",
            i + 1,
            r.calls,
            pct(r.calls, routed),
            pct(r.time_us, time),
            r.reason,
            one_line(&r.sample)
        );
    }
    if of.len() > limit {
        let _ = writeln!(out, "      ... and {} more (--limit)", of.len() - limit);
    }
}

/// A query on one line, cut at 200 characters.
fn one_line(sql: &str) -> String {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &flat[..at]),
        None => flat,
    }
}

#[cfg(test)]
mod tests;
