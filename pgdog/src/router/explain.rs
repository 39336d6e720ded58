//! `pgdog route`: the routing decision for each statement of a query, as text, computed from the
//! configuration alone (no server is contacted).
use super::route::{Overrides, Route, Router};
use super::{Params, QueryCache, Schema};
use crate::config::Settings;
use pg_query_raw::router::{Const, StatementKind};

/// One line per statement: `shard N`, `shards A,B,...` (with what the merge does) or
/// `error CODE: message`.
pub fn explain(
    settings: &Settings,
    database: &str,
    sql: &str,
    params: &[String],
) -> Result<Vec<String>, String> {
    let schema = Schema::new(settings, database).map_err(|e| e.to_string())?;
    let router = Router::new(schema);
    let parsed = match QueryCache::global().get(sql) {
        Ok(p) => p,
        Err(e) => return Ok(vec![format!("error {}: {e}", e.code())]),
    };
    let values: Vec<Option<&[u8]>> = params.iter().map(|p| Some(p.as_bytes())).collect();
    let bind = Params {
        values,
        formats: Vec::new(),
        types: Vec::new(),
        codec: Default::default(),
    };
    let mut overrides = Overrides::default();
    let mut out = Vec::new();
    for (i, st) in parsed.statements.iter().enumerate() {
        let text = sql.get(st.location..st.location + st.len).unwrap_or(sql);
        if let (StatementKind::Set, Some(set)) = (&st.kind, &st.set) {
            match set.name.as_deref() {
                Some("pgdog.shard") => {
                    overrides.shard = match set.values.first() {
                        Some(Const::Integer(n)) => Some(*n as usize),
                        Some(Const::String(s)) => s.parse().ok(),
                        _ => None,
                    };
                    out.push("pgdog (session setting)".into());
                    continue;
                }
                Some("pgdog.sharding_key") => {
                    overrides.sharding_key = match set.values.first() {
                        Some(Const::Integer(n)) => Some(n.to_string()),
                        Some(Const::String(s)) => Some(s.clone()),
                        _ => None,
                    };
                    out.push("pgdog (session setting)".into());
                    continue;
                }
                _ => {}
            }
        }
        if matches!(
            st.kind,
            StatementKind::Transaction(_) | StatementKind::Set | StatementKind::Deallocate
        ) {
            out.push(
                "pgdog (transaction and session control: every shard the session uses)".into(),
            );
            continue;
        }
        let p = (!params.is_empty()).then_some(&bind);
        out.push(match router.route(&parsed, i, text, p, &overrides) {
            Ok(Route::Shard(s)) => format!("shard {s}"),
            Ok(Route::Multi { shards, plan, .. }) => {
                let list: Vec<String> = shards.iter().map(|s| s.to_string()).collect();
                match plan {
                    Some(plan) if !plan.merge.is_passthrough() => {
                        format!("shards {} (merged)", list.join(","))
                    }
                    _ => format!("shards {}", list.join(",")),
                }
            }
            Ok(Route::Split(parts)) => {
                let list: Vec<String> = parts.iter().map(|p| p.shard.to_string()).collect();
                format!("shards {} (rows split)", list.join(","))
            }
            Err(e) => format!("error {}: {e}", e.code()),
        });
    }
    Ok(out)
}
