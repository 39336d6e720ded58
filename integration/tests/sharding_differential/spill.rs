//! The spill family: the reads whose merge holds rows (GROUP BY, aggregates, DISTINCT, UNION /
//! INTERSECT / EXCEPT) run once more with `merge_work_mem` at its minimum (8kB), so every one
//! of them that holds more than a few rows spills to temporary files; the writes that follow
//! (INSERT ... SELECT among them) run under it too. At the end SHOW MERGE must show spilling,
//! and no merge memory still counted.
use super::*;

/// Whether pgdog's merge of `sql` keeps rows or groups (what spills).
pub(crate) fn holds_rows(sql: &str) -> bool {
    let s = sql.to_ascii_uppercase();
    [
        "GROUP BY",
        "DISTINCT",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "COUNT(",
        "SUM(",
        "MIN(",
        "MAX(",
        "AVG(",
    ]
    .iter()
    .any(|k| s.contains(k))
}

async fn admin(proxy: &Proxy) -> Client {
    connect_str(&proxy.conninfo("admin", ADMIN_PASSWORD, "admin")).await
}

/// `SET merge_work_mem` through the admin database.
pub(crate) async fn set_work_mem(proxy: &Proxy, value: &str) {
    admin(proxy)
        .await
        .simple_query(&format!("SET merge_work_mem = '{value}'"))
        .await
        .expect("SET merge_work_mem");
}

/// SHOW MERGE's values by column.
pub(crate) async fn show_merge(proxy: &Proxy) -> HashMap<String, u64> {
    let rows = admin(proxy)
        .await
        .simple_query("SHOW MERGE")
        .await
        .expect("SHOW MERGE");
    let mut out = HashMap::new();
    for m in rows {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            for (i, c) in r.columns().iter().enumerate() {
                if let Some(v) = r.get(i).and_then(|v| v.parse().ok()) {
                    out.insert(c.name().to_string(), v);
                }
            }
        }
    }
    out
}

/// The spilled merges left a trace and gave all their memory back.
pub(crate) async fn check_spilled(proxy: &Proxy, report: &mut Report) {
    let m = show_merge(proxy).await;
    eprintln!("SHOW MERGE: {m:?}");
    let get = |k: &str| m.get(k).copied().unwrap_or(0);
    if get("spill_files") == 0 || get("spilled_bytes") == 0 {
        report.fail(format!("the spill family spilled nothing: {m:?}"));
    }
    if get("memory_bytes") != 0 {
        report.fail(format!(
            "merge memory still counted with no query running: {m:?}"
        ));
    }
}
