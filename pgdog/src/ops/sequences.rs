//! `pgdog configcheck`'s look at the shards: columns of sharded tables (other than the sharding
//! key) whose values come from a sequence or an identity. Every shard counts with its own
//! sequence, so such values repeat across shards; pgdog warns (the key itself is supplied with
//! `pgdog.unique_id()` when its `primary_key` says so).
use crate::backend::server::Server;
use crate::config::Settings;
use crate::reshard::schema_sync::target;
use std::collections::BTreeSet;
use std::time::Duration;

/// One line per column of a sharded table that takes per-shard sequence values, and one per
/// database whose first shard could not be asked.
pub async fn warnings(settings: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    let databases: BTreeSet<&str> = settings
        .config
        .sharded_tables
        .iter()
        .map(|t| t.database.as_str())
        .collect();
    for database in databases {
        if settings.shards(database) < 2 {
            continue;
        }
        let Some(db) = settings.primary(database) else {
            continue;
        };
        let tables: Vec<(&str, &str)> = settings
            .config
            .sharded_tables
            .iter()
            .filter(|t| t.database == database)
            .filter_map(|t| t.name.as_deref().map(|n| (n, t.column.as_str())))
            .collect();
        if tables.is_empty() {
            continue;
        }
        let names: Vec<String> = tables
            .iter()
            .map(|(n, _)| crate::net::quote::literal(n))
            .collect();
        let sql = format!(
            "SELECT c.relname::text, a.attname::text FROM pg_catalog.pg_attribute a \
             JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
             LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE c.relname IN ({}) AND a.attnum > 0 AND NOT a.attisdropped \
             AND (a.attidentity <> '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%') \
             ORDER BY 1, 2",
            names.join(", ")
        );
        let found = async {
            let mut server = Server::connect(&target(settings, db), Duration::from_secs(3))
                .await
                .map_err(|e| e.to_string())?;
            let rows = server.query_rows(&sql).await.map_err(|e| e.to_string());
            server.terminate().await;
            rows
        }
        .await;
        match found {
            Ok(rows) => {
                for r in rows {
                    let (Some(Some(table)), Some(Some(column))) = (r.first(), r.get(1)) else {
                        continue;
                    };
                    let key = tables.iter().any(|(t, k)| t == table && k == column);
                    if !key {
                        out.push(format!(
                            "database {database}: {table}.{column} takes values from a sequence (or identity) of each shard: its values repeat across shards (use pgdog.unique_id() for ids that must be unique)"
                        ));
                    }
                }
            }
            Err(e) => out.push(format!(
                "database {database}: could not check its sharded tables' sequences on shard 0: {e}"
            )),
        }
    }
    out
}
