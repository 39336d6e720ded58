//! Ids pgdog generates before routing: `pgdog.unique_id()` calls replaced by values (literals
//! for a simple query; extra `$n` parameters for a prepared statement, filled at each Bind), and
//! the sharding key added to INSERTs into a table whose key pgdog supplies (`primary_key =
//! "unique_id"`) when the INSERT leaves it out or writes `DEFAULT`. The rewritten statement is
//! then routed by those values like any other.
use super::schema::Schema;
use super::RouterError;
use pg_query_raw::protobuf::{self as pb, node::Node as N, Token};
use pg_query_raw::router::{Expr, Statement, StatementKind};

/// How generated ids appear in the rewritten text.
pub enum Ids<'a> {
    /// As bigint literals from this generator.
    Literal(&'a mut dyn FnMut() -> i64),
    /// As parameters numbered from this one up (the caller appends their values to each Bind).
    Params(u32),
}

/// A statement with its ids filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub sql: String,
    /// How many ids it takes (parameters appended in [`Ids::Params`] mode).
    pub ids: usize,
}

/// Whether `stmt` (text `sql`) needs ids: a `pgdog.unique_id()` call, or an INSERT that leaves
/// out a key pgdog supplies. Cheap for statements that do not.
pub fn needed(sql: &str, stmt: &Statement, schema: &Schema) -> bool {
    mentions_unique_id(sql) || missing_key(stmt, schema).is_some()
}

/// Whether `sql` names `unique_id` (in any case, anywhere in the text).
pub fn mentions_unique_id(sql: &str) -> bool {
    // At each `_`: a point query checks every text (a window compare at every byte was 600
    // instructions of a pgbench SELECT, this is a tenth).
    let b = sql.as_bytes();
    memchr::memchr_iter(b'_', b).any(|at| {
        at >= 6
            && b.get(at - 6..at + 3)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"unique_id"))
    })
}

/// The key column an INSERT leaves out (or sets to DEFAULT) that pgdog supplies.
fn missing_key<'a>(stmt: &Statement, schema: &'a Schema) -> Option<&'a str> {
    if stmt.kind != StatementKind::Insert || stmt.values.is_empty() {
        return None;
    }
    let target = stmt.relations.first()?;
    if schema.is_omnisharded(&target.name) {
        return None;
    }
    let ts = schema.table(&target.name)?;
    if !ts.config.generates_key() || stmt.insert_columns.is_empty() {
        return None;
    }
    let key = ts.column();
    match stmt.insert_columns.iter().position(|c| c == key) {
        None => Some(key),
        Some(p) => stmt
            .values
            .iter()
            .any(|row| matches!(row.get(p), Some(Expr::Other("SetToDefault"))))
            .then_some(key),
    }
}

/// Fills in the ids statement `stmt` (text `sql`) needs; `None` when it needs none.
pub fn rewrite(
    sql: &str,
    stmt: &Statement,
    schema: &Schema,
    ids: Ids<'_>,
) -> Result<Option<Rewritten>, RouterError> {
    if !needed(sql, stmt, schema) {
        return Ok(None);
    }
    let with_key = match missing_key(stmt, schema) {
        Some(column) => add_key(sql, column)?,
        None => None,
    };
    let text = with_key.as_deref().unwrap_or(sql);
    let calls = unique_id_calls(text)?;
    if calls.is_empty() {
        return Ok(None);
    }
    check_placement(stmt, with_key.is_some())?;
    let mut out = String::with_capacity(text.len() + calls.len() * 24);
    let mut last = 0;
    let mut ids = ids;
    for (n, (start, end)) in calls.iter().enumerate() {
        out.push_str(&text[last..*start]);
        match &mut ids {
            Ids::Literal(next) => out.push_str(&format!("{}::bigint", next())),
            Ids::Params(first) => out.push_str(&format!("${}::bigint", *first as usize + n)),
        }
        last = *end;
    }
    out.push_str(&text[last..]);
    Ok(Some(Rewritten {
        sql: out,
        ids: calls.len(),
    }))
}

/// One value per call site: right where each call runs once (a SELECT without tables, INSERT
/// ... VALUES); elsewhere it would give every row the same id.
fn check_placement(stmt: &Statement, added: bool) -> Result<(), RouterError> {
    let single_row = match stmt.kind {
        StatementKind::Select => stmt.relations.is_empty() && stmt.subqueries.is_empty(),
        StatementKind::Insert => !stmt.values.is_empty(),
        _ => false,
    };
    if single_row || added && stmt.kind == StatementKind::Insert {
        return Ok(());
    }
    Err(RouterError::Unsupported(
        "pgdog.unique_id() where it would run once per row (pgdog substitutes one value per call): use it in INSERT ... VALUES or a SELECT without tables".into(),
    ))
}

/// Byte spans of the `pgdog.unique_id()` calls in `sql` (not in literals or comments).
fn unique_id_calls(sql: &str) -> Result<Vec<(usize, usize)>, RouterError> {
    let scanned = pg_query_raw::scan(sql).map_err(RouterError::Syntax)?;
    let t = &scanned.tokens;
    let text = |i: usize| -> String {
        let (s, e) = (t[i].start as usize, t[i].end as usize);
        let raw = sql.get(s..e).unwrap_or("");
        match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => raw.to_ascii_lowercase(),
        }
    };
    let ident = |i: usize| t[i].token == Token::Ident as i32;
    let mut spans = Vec::new();
    let mut i = 0;
    while i + 4 < t.len() {
        if ident(i)
            && text(i) == "pgdog"
            && text(i + 1) == "."
            && ident(i + 2)
            && text(i + 2) == "unique_id"
            && text(i + 3) == "("
            && text(i + 4) == ")"
        {
            spans.push((t[i].start as usize, t[i + 4].end as usize));
            i += 5;
        } else {
            i += 1;
        }
    }
    Ok(spans)
}

/// The INSERT with `column` given `pgdog.unique_id()` in every VALUES row (added to the column
/// list, or replacing `DEFAULT`); `None` when every row already gives it a value.
fn add_key(sql: &str, column: &str) -> Result<Option<String>, RouterError> {
    let mut tree = pg_query_raw::parse_protobuf(sql).map_err(RouterError::Syntax)?;
    let Some(insert) = tree.stmts.first_mut().and_then(super::insert::insert_of) else {
        return Ok(None);
    };
    let position = insert.cols.iter().position(|c| {
        matches!(c.node.as_ref(), Some(N::ResTarget(rt)) if rt.name == column && rt.indirection.is_empty())
    });
    let Some(N::SelectStmt(select)) = insert.select_stmt.as_mut().and_then(|s| s.node.as_mut())
    else {
        return Ok(None);
    };
    let call = || pb::Node {
        node: Some(N::FuncCall(Box::new(pb::FuncCall {
            funcname: vec![string_node("pgdog"), string_node("unique_id")],
            funcformat: pb::CoercionForm::CoerceExplicitCall as i32,
            location: -1,
            ..Default::default()
        }))),
    };
    let mut changed = false;
    for row in &mut select.values_lists {
        let Some(N::List(list)) = row.node.as_mut() else {
            continue;
        };
        match position {
            Some(p) => {
                if let Some(v) = list.items.get_mut(p) {
                    if matches!(v.node, Some(N::SetToDefault(_))) {
                        *v = call();
                        changed = true;
                    }
                }
            }
            None => {
                list.items.push(call());
                changed = true;
            }
        }
    }
    if position.is_none() {
        insert.cols.push(pb::Node {
            node: Some(N::ResTarget(Box::new(pb::ResTarget {
                name: column.to_string(),
                location: -1,
                ..Default::default()
            }))),
        });
    }
    if !changed {
        return Ok(None);
    }
    pg_query_raw::deparse(&tree)
        .map(Some)
        .map_err(RouterError::Syntax)
}

fn string_node(s: &str) -> pb::Node {
    pb::Node {
        node: Some(N::String(pb::String {
            sval: s.to_string(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DataType, ShardedTable};
    use crate::router::schema::TableSharding;
    use crate::sharding::Placement;

    fn schema() -> Schema {
        let t = ShardedTable {
            database: "app".into(),
            name: Some("users".into()),
            column: "id".into(),
            data_type: DataType::Bigint,
            mapping: Vec::new(),
            default_shard: None,
            primary_key: None,
        };
        Schema {
            shards: 2,
            tables: vec![TableSharding {
                placement: Placement::new(&t, 2, None).unwrap(),
                config: t,
            }],
            ..Default::default()
        }
    }

    fn run(sql: &str) -> Result<Option<Rewritten>, RouterError> {
        let st = pg_query_raw::router::parse(sql).unwrap().remove(0);
        let mut n = 100;
        let mut next = || {
            n += 1;
            n
        };
        rewrite(sql, &st, &schema(), Ids::Literal(&mut next))
    }

    #[test]
    fn unique_id_is_found_in_any_case_anywhere() {
        let naive = |sql: &str| {
            sql.as_bytes()
                .windows(9)
                .any(|w| w.eq_ignore_ascii_case(b"unique_id"))
        };
        let texts = [
            "unique_id",
            "SELECT pgdog.UNIQUE_ID()",
            "x_unique_id_y",
            "uniqueid",
            "unique_i",
            "_nique_id",
            "__unique__id",
            "SELECT 'unique_id'",
            "ünique_id unique_Id",
            "",
            "_",
        ];
        for t in texts {
            assert_eq!(mentions_unique_id(t), naive(t), "{t:?}");
        }
        assert!(mentions_unique_id("SELECT unique_id()"));
    }

    #[test]
    fn calls_become_values() {
        let r = run("SELECT pgdog.unique_id(), PGDOG.Unique_Id() AS b, 'pgdog.unique_id()'")
            .unwrap()
            .unwrap();
        assert_eq!(
            r.sql,
            "SELECT 101::bigint, 102::bigint AS b, 'pgdog.unique_id()'"
        );
        let st = pg_query_raw::router::parse("INSERT INTO t VALUES (pgdog.unique_id(), $1)")
            .unwrap()
            .remove(0);
        let r = rewrite(
            "INSERT INTO t VALUES (pgdog.unique_id(), $1)",
            &st,
            &schema(),
            Ids::Params(2),
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.sql, "INSERT INTO t VALUES ($2::bigint, $1)");
        assert_eq!(r.ids, 1);
        assert!(run("SELECT 1").unwrap().is_none());
    }

    #[test]
    fn missing_keys_are_supplied() {
        let r = run("INSERT INTO users (name) VALUES ('a'), ('b') RETURNING id")
            .unwrap()
            .unwrap();
        assert_eq!(
            r.sql,
            "INSERT INTO users (name, id) VALUES ('a', 101::bigint), ('b', 102::bigint) RETURNING id"
        );
        let r = run("INSERT INTO users (id, name) VALUES (DEFAULT, 'a'), (7, 'b')")
            .unwrap()
            .unwrap();
        assert_eq!(
            r.sql,
            "INSERT INTO users (id, name) VALUES (101::bigint, 'a'), (7, 'b')"
        );
        assert!(run("INSERT INTO users (id, name) VALUES (1, 'a')")
            .unwrap()
            .is_none());
        let st = pg_query_raw::router::parse("INSERT INTO users (id, name) VALUES ($1, 'a')")
            .unwrap()
            .remove(0);
        assert!(!needed(
            "INSERT INTO users (id, name) VALUES ($1, 'a')",
            &st,
            &schema()
        ));
        assert!(run("INSERT INTO other (name) VALUES ('a')")
            .unwrap()
            .is_none());
    }

    #[test]
    fn once_per_row_is_refused() {
        let e = run("SELECT pgdog.unique_id() FROM users").unwrap_err();
        assert!(matches!(e, RouterError::Unsupported(_)));
        assert!(run("UPDATE users SET n = pgdog.unique_id()").is_err());
    }
}
