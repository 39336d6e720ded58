//! Schema-based sharding (`[[sharded_schemas]]`): every table of a schema lives on the schema's
//! shard. A statement goes to the shard of the schemas it names: qualified names (`tenant_a.t`),
//! else the first schema of the client's `search_path` (set with SET) that is listed; DDL by the
//! schema it creates, alters or drops. Schemas on different shards in one statement: refused
//! (0A000). Catalog schemas go anywhere.
use super::schema::Schema;
use super::RouterError;
use pg_query_raw::protobuf::node::Node as N;
use pg_query_raw::router::{Statement, StatementKind};
use std::collections::BTreeSet;

/// The schemas-to-shards map of one database.
#[derive(Debug, Clone, Default)]
pub struct SchemaShards {
    pub named: std::collections::HashMap<String, usize>,
    /// The shard of schemas not listed.
    pub default: Option<usize>,
}

impl SchemaShards {
    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.default.is_none()
    }

    /// The shard of a schema by its entry or the default one (`None`: neither).
    pub fn shard_of_listed(&self, schema: &str) -> Option<usize> {
        self.named.get(schema).copied().or(self.default)
    }

    fn shard_of(&self, schema: &str) -> Result<usize, RouterError> {
        self.named
            .get(schema)
            .copied()
            .or(self.default)
            .ok_or_else(|| {
                RouterError::Unsupported(format!(
                    "schema \"{schema}\" is not in [[sharded_schemas]] and there is no default entry: pgdog cannot tell its shard"
                ))
            })
    }
}

fn is_catalog(schema: &str) -> bool {
    matches!(schema, "pg_catalog" | "information_schema") || schema.starts_with("pg_temp")
}

/// The one shard the schemas statement `stmt` (text `sql`) names live on; `None` when it names
/// none (the table rules then apply).
pub fn shard(
    schema: &Schema,
    stmt: &Statement,
    sql: &str,
    search_path: &[String],
) -> Result<Option<usize>, RouterError> {
    let map = &schema.schemas;
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut unqualified = false;
    collect(stmt, &mut names, &mut unqualified);
    if matches!(stmt.kind, StatementKind::Utility(_)) {
        utility_schemas(sql, &mut names, &mut unqualified);
    }
    if unqualified {
        // The first listed schema of the search path, else the default shard.
        match search_path
            .iter()
            .find(|s| map.named.contains_key(s.as_str()))
        {
            Some(s) => {
                names.insert(s.clone());
            }
            None if map.default.is_some() => {
                names.insert(String::new());
            }
            None => {}
        }
    }
    let mut shards = BTreeSet::new();
    for n in names.iter().filter(|n| !is_catalog(n)) {
        shards.insert(if n.is_empty() {
            map.default.unwrap_or(0)
        } else {
            map.shard_of(n)?
        });
    }
    match shards.len() {
        0 => Ok(None),
        1 => Ok(shards.into_iter().next()),
        _ => Err(RouterError::Unsupported(format!(
            "a statement naming schemas on different shards ({}): run it per schema",
            names.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn collect(stmt: &Statement, names: &mut BTreeSet<String>, unqualified: &mut bool) {
    for r in &stmt.relations {
        match &r.schema {
            Some(s) => {
                names.insert(s.clone());
            }
            None => *unqualified = true,
        }
    }
    for s in stmt.subqueries.iter().chain(stmt.insert_select.as_deref()) {
        collect(s, names, unqualified);
    }
}

/// Schemas a utility statement (DDL) names: its tables, and the schema of CREATE/DROP/ALTER
/// SCHEMA.
fn utility_schemas(sql: &str, names: &mut BTreeSet<String>, unqualified: &mut bool) {
    let Ok(tree) = pg_query_raw::parse(sql) else {
        return;
    };
    for t in tree.tables() {
        match t.rsplit_once('.') {
            Some((schema, _)) => {
                names.insert(schema.to_string());
            }
            None => *unqualified = true,
        }
    }
    for raw in &tree.protobuf.stmts {
        let Some(node) = raw.stmt.as_ref().and_then(|s| s.node.as_ref()) else {
            continue;
        };
        match node {
            N::CreateSchemaStmt(c) => {
                names.insert(c.schemaname.clone());
            }
            N::DropStmt(d)
                if d.remove_type == pg_query_raw::protobuf::ObjectType::ObjectSchema as i32 =>
            {
                for o in &d.objects {
                    if let Some(N::String(s)) = o.node.as_ref() {
                        names.insert(s.sval.clone());
                    }
                }
            }
            N::RenameStmt(r)
                if r.rename_type == pg_query_raw::protobuf::ObjectType::ObjectSchema as i32 =>
            {
                names.insert(r.subname.clone());
            }
            _ => {}
        }
    }
}
