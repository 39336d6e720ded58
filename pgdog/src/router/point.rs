//! Point queries of the simple protocol routed from their shape (`shapes`): a SELECT of one
//! sharded table whose WHERE clause equates its key with one literal. Such a statement goes to
//! the shard of that literal, whatever its other literals are, so once a shape is known to be
//! one, a later text of it is routed from its key literal alone: no parse of its own, no walk
//! of the router (issue 47: a third of a sharded `pgbench -S` transaction's instructions).
//!
//! [`Router::point`] accepts only statements where [`Router::route`] provably ends in
//! `select`'s one-shard answer decided by that literal: one statement, a plain SELECT (no set
//! operation, subquery, sublink, join, outer join or function call), of one table sharded by
//! name (not omnisharded, not a catalog), with no hidden subquery in its text, and a WHERE
//! clause that is `key = $k` or an AND holding it once while no other condition names the key
//! column (`Predicates::shards` only finds shards through a named key column, so the other
//! conditions say nothing). [`Router::point_shard`] then gives what `select` gives: the shard
//! of rows matching `key = <literal>` (`shard_matching`), or any shard when no row can match.
//! What depends on the text rather than its shape (comments, manual overrides, `unique_id`)
//! is checked by the session on every text. Debug builds (the test suites) check every use
//! against the full route (`shapes::PointHit::shard`).
use super::keys::{shard_matching, value_of, Predicates};
use super::route::{column_names, Router};
use super::subquery::{has_nested, hidden_subquery};
use super::RouterError;
use crate::sharding::{Key, ShardingError};
use pg_query_raw::router::{Const, Expr, Statement, StatementKind};

/// A shape routed by one of its literals (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// The key literal: the shape's `$k` is `literal + 1`.
    pub literal: usize,
    /// The table, an index into its router's `schema.tables`.
    table: usize,
}

impl Router {
    /// The point plan of a shape's statements (literals as `$k`), whose text of this shape is
    /// `sql`; `calls`: the functions the statement calls. `None` when the full route is needed.
    pub fn point(&self, statements: &[Statement], sql: &str, calls: &[String]) -> Option<Point> {
        let [st] = statements else { return None };
        if self.schema.shards < 2
            || !self.schema.schemas.is_empty()
            || !calls.is_empty()
            || st.kind != StatementKind::Select
            || st.set_operation
            || st.with
            || !st.subqueries.is_empty()
            || !st.join_conditions.is_empty()
            || !st.outer_joins.is_empty()
            || !st.natural_joins.is_empty()
            || !st.using_joins.is_empty()
            || has_nested(st)
            || hidden_subquery(st, sql)
        {
            return None;
        }
        let [rel] = st.relations.as_slice() else {
            return None;
        };
        if !self.reads_sharded_relation(rel) {
            return None;
        }
        let table = self
            .schema
            .tables
            .iter()
            .position(|t| t.config.name.as_deref() == Some(rel.name.as_str()))?;
        if self.schema.is_omnisharded(&rel.name) {
            return None;
        }
        let ts = &self.schema.tables[table];
        let preds = Predicates {
            relations: vec![(rel, ts)],
            params: None,
        };
        let conditions: &[Expr] = match st.where_clause.as_ref()? {
            Expr::And(items) => items,
            one => std::slice::from_ref(one),
        };
        let mut key = None;
        for c in conditions {
            if let Some(k) = key_param(&preds, c) {
                if key.replace(k).is_some() {
                    return None;
                }
                continue;
            }
            let mut columns = Vec::new();
            column_names(c, &mut columns);
            if columns.contains(&ts.column()) {
                return None;
            }
        }
        let k = key?;
        Some(Point {
            literal: (k as usize).checked_sub(1)?,
            table,
        })
    }

    /// The shard a text of a point shape goes to, whose key literal is `value`.
    pub fn point_shard(&self, point: Point, value: &Const) -> Result<usize, RouterError> {
        let Some(ts) = self.schema.tables.get(point.table) else {
            return Err(RouterError::Invalid("point plan of another layout".into()));
        };
        if let Const::Integer(i) = value {
            // An integer key: the placement of the integer itself (`shard_matching` goes through
            // its digits); past the type's range no row matches, as there.
            if let Some(key) = Key::from_integer(ts.config.data_type, *i) {
                return match key.and_then(|k| ts.placement.shard(&k)) {
                    Ok(shard) => Ok(shard),
                    Err(
                        ShardingError::OutOfRange { .. } | ShardingError::ValueOutOfRange { .. },
                    ) => Ok(self.any_shard()),
                    Err(e) => Err(e.into()),
                };
            }
        }
        let Some(value) = value_of(&Expr::Const(value.clone()), None) else {
            return Err(RouterError::Invalid("point plan without a value".into()));
        };
        // As `select`: no row can match (`key = 1.5` on an integer key): any shard answers.
        Ok(shard_matching(ts, &value)?.unwrap_or_else(|| self.any_shard()))
    }
}

impl Router {
    /// Whether no row can match the point's key `value` (then any shard answers).
    pub fn point_matches_none(&self, point: Point, value: &Const) -> bool {
        let (Some(ts), Some(value)) = (
            self.schema.tables.get(point.table),
            value_of(&Expr::Const(value.clone()), None),
        ) else {
            return false;
        };
        matches!(shard_matching(ts, &value), Ok(None))
    }
}

/// `key = $k` or `$k = key` (a cast of the key column as `Predicates::key_column` allows it): `k`.
fn key_param(preds: &Predicates<'_, '_>, e: &Expr) -> Option<u32> {
    let Expr::Op {
        op,
        left: Some(left),
        right: Some(right),
        quantifier: None,
    } = e
    else {
        return None;
    };
    if op != "=" {
        return None;
    }
    // A bare literal: a cast may change its value (`keys::value_of`), `point_shard` reads it
    // as written.
    let param = |e: &Expr| match e {
        Expr::Param(k) => Some(*k),
        _ => None,
    };
    match (preds.key_column(left), preds.key_column(right)) {
        (Some(_), _) => param(right),
        (None, Some(_)) => param(left),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
