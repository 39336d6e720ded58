//! Subqueries and outer joins across shards: a statement runs on one shard or on every shard
//! and each shard answers for its own rows, so every subquery that reads sharded tables must
//! give, on each shard, exactly what it would give on one database holding all the rows. That
//! is the case when it is correlated on the sharding key with a sharded table of the enclosing
//! query (the rows it needs live on the same shard), when it is restricted to the one shard the
//! statement runs on, or when it is a plain filter in FROM of a query with no other sharded
//! table (no aggregate, GROUP BY, DISTINCT, LIMIT, window or set operation inside it). Anything
//! else is refused with 0A000 naming the subquery's table, never answered shard by shard. The
//! same goes for an outer join that keeps rows of a table copied on every shard (omnisharded)
//! while NULL-extending a sharded one: each shard would add its own unmatched copy.
use super::keys::Params;
use super::route::{is_catalog, Router};
use super::RouterError;
use pg_query_raw::router::{Expr, Relation, Statement, StatementKind};

/// Where the statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    One(usize),
    All,
}

/// A subquery of a statement: where it sits and, for `x IN (SELECT ...)` / `x = ANY (...)`,
/// the expression it is compared with.
struct Nested<'a> {
    st: &'a Statement,
    place: Place,
    compared: Option<&'a Expr>,
    /// `x NOT IN (SELECT ...)`.
    negated: bool,
}

/// How a subquery is attached to its enclosing statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// FROM subquery, CTE or set-operation branch.
    From,
    /// In an expression (IN, EXISTS, scalar, ANY).
    Expr,
}

impl Router {
    /// Whether a relation has the same rows on every shard.
    fn is_local(&self, r: &Relation) -> bool {
        self.schema.is_omnisharded(&r.name) || is_catalog(r)
    }

    /// Whether a statement reads a table whose rows differ between shards (anywhere in it).
    pub(super) fn reads_sharded(&self, st: &Statement) -> bool {
        st.relations.iter().any(|r| !self.is_local(r))
            || nested(st).iter().any(|n| self.reads_sharded(n.st))
    }

    /// Refuses (0A000) what would be answered shard by shard although its answer depends on
    /// rows of other shards; see the module documentation.
    pub(super) fn check_nested(
        &self,
        outer: &Statement,
        scope: Scope,
        params: Option<&Params<'_>>,
    ) -> Result<(), RouterError> {
        self.check_nested_guarded(outer, scope, params, false)
    }

    /// `check_nested`; `null_guard`: the caller runs a `x NOT IN (SELECT key ...)` on the key
    /// with a NullGuard (see `not_in`), so such a subquery is accepted.
    pub(super) fn check_nested_guarded(
        &self,
        outer: &Statement,
        scope: Scope,
        params: Option<&Params<'_>>,
        null_guard: bool,
    ) -> Result<(), RouterError> {
        self.check_outer_joins(outer, scope)?;
        let outer_sharded = self.sharded_relations(outer);
        // FROM subqueries, CTEs (once per read: a CTE joined with itself is two sources) and
        // set-operation branches that read sharded tables.
        let reads = |i: usize| outer.cte_reads.get(i).map_or(1, |n| (*n).max(1));
        let from_reading_sharded: usize = outer
            .subqueries
            .iter()
            .enumerate()
            .filter(|(_, s)| self.reads_sharded(s))
            .map(|(i, _)| reads(i))
            .sum();
        let outer_has_sharded = outer.relations.iter().any(|r| !self.is_local(r));
        for Nested {
            st: n,
            place,
            compared,
            negated,
        } in nested(outer)
        {
            if !self.reads_sharded(n) {
                continue;
            }
            let ok = self.correlated_on_key(n, &outer_sharded)
                || (compared.is_some_and(|c| self.in_on_key(n, c, &outer_sharded))
                    && (!negated || null_guard))
                || match scope {
                    Scope::One(shard) => self.restricted_to(n, shard, params)?,
                    // A plain filter of its tables: a UNION ALL branch, or the one sharded
                    // source of the outer query; its own joins must be on the keys.
                    Scope::All => {
                        place == Place::From
                            && (outer.set_operation
                                || (!outer_has_sharded && from_reading_sharded == 1))
                            && (((passes_rows_through(n) || self.grouped_by_key(n))
                                && self.check_colocated(n, &self.sharded_relations(n)).is_ok())
                                || self.union_all_partitioned(n, params)?)
                    }
                };
            if !ok {
                return Err(refusal(n, self));
            }
            self.check_nested_guarded(n, scope, params, null_guard)?;
        }
        Ok(())
    }

    /// A UNION ALL (in FROM) whose every branch gives, on each shard, exactly its rows that
    /// live there: a plain filter of sharded tables, or a branch restricted by its keys to one
    /// shard (which gives nothing elsewhere) without an aggregate that answers empty input
    /// with a row. The shards' rows then add up to the global UNION ALL.
    fn union_all_partitioned(
        &self,
        n: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<bool, RouterError> {
        if !n.set_operation || !n.union_all || n.subqueries.len() < 2 {
            return Ok(false);
        }
        let branches = &n.subqueries[n.subqueries.len() - 2..];
        if n.subqueries.len() > 2
            && n.subqueries[..n.subqueries.len() - 2]
                .iter()
                .any(|c| self.reads_sharded(c))
        {
            return Ok(false);
        }
        for b in branches {
            if b.set_operation {
                if !self.union_all_partitioned(b, params)? {
                    return Ok(false);
                }
                continue;
            }
            let own = self.sharded_relations(b);
            let unresolved = b.relations.iter().filter(|r| !self.is_local(r)).count();
            if own.is_empty() || own.len() != unresolved {
                // Rows on every shard (no sharded table), or a table pgdog cannot place.
                return Ok(false);
            }
            let plain = passes_rows_through(b) && self.check_colocated(b, &own).is_ok();
            let pinned = || -> Result<bool, RouterError> {
                let one = matches!(
                    self.predicate_shards(b, own.clone(), params)?,
                    Some(set) if set.len() == 1
                );
                Ok(one && !aggregates_empty_input(b) && self.check_colocated(b, &own).is_ok())
            };
            if !(plain || pinned()?) {
                return Ok(false);
            }
            self.check_nested(b, Scope::All, params)?;
        }
        Ok(true)
    }

    /// How many `x NOT IN (SELECT key ...)` on the key the statement holds (anywhere in it).
    pub(super) fn not_in_on_key(&self, st: &Statement) -> usize {
        let outer_sharded = self.sharded_relations(st);
        nested(st)
            .iter()
            .map(|n| {
                let own = usize::from(
                    n.negated
                        && self.reads_sharded(n.st)
                        && n.compared
                            .is_some_and(|c| self.in_on_key(n.st, c, &outer_sharded)),
                );
                own + self.not_in_on_key(n.st)
            })
            .sum()
    }

    /// Every sharded table the subquery reads is equated on its key with a sharded table of
    /// the enclosing statement (`o.user_id = u.id`): evaluated with the outer row's shard.
    fn correlated_on_key(
        &self,
        n: &Statement,
        outer: &[(&Relation, &super::schema::TableSharding)],
    ) -> bool {
        if outer.is_empty() || n.relations.is_empty() {
            return false;
        }
        let inner = self.sharded_relations(n);
        if inner.len() != n.relations.iter().filter(|r| !self.is_local(r)).count() {
            return false;
        }
        let mut all: Vec<(&Relation, &super::schema::TableSharding)> = outer.to_vec();
        all.extend(inner.iter().copied());
        let mut pairs = Vec::new();
        for c in n.where_clause.iter().chain(&n.join_conditions) {
            super::route::key_pairs(c, &all, &mut pairs);
        }
        // Outer relations are connected from the start; every inner one must join them.
        let mut connected: Vec<usize> = (0..outer.len()).collect();
        super::route::connect(&mut connected, &pairs);
        (outer.len()..all.len()).all(|i| connected.contains(&i))
    }

    pub(super) fn reads_sharded_relation(&self, r: &Relation) -> bool {
        !self.is_local(r)
    }

    /// The one shard every subquery reading sharded tables is restricted to by its own keys
    /// (`SELECT * FROM (SELECT ... WHERE user_id = 5 ORDER BY x LIMIT 3) s`), if there is one.
    pub(super) fn subqueries_shard(
        &self,
        st: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<Option<usize>, RouterError> {
        let mut shard = None;
        for n in nested(st) {
            if !self.reads_sharded(n.st) {
                continue;
            }
            let own = self.sharded_relations(n.st);
            let unresolved = n.st.relations.iter().filter(|r| !self.is_local(r)).count();
            if own.is_empty() || own.len() != unresolved {
                return Ok(None);
            }
            let Some(set) = self.predicate_shards(n.st, own, params)? else {
                return Ok(None);
            };
            let [s] = set.into_iter().collect::<Vec<_>>()[..] else {
                return Ok(None);
            };
            if shard.is_some_and(|prev| prev != s) {
                return Ok(None);
            }
            shard = Some(s);
        }
        Ok(shard)
    }

    /// `outer_key IN (SELECT key FROM t ...)`: the subquery returns keys of one sharded table
    /// of the same sharding as the outer key, so the matching rows are on the outer row's shard.
    fn in_on_key(
        &self,
        n: &Statement,
        compared: &Expr,
        outer: &[(&Relation, &super::schema::TableSharding)],
    ) -> bool {
        let inner = self.sharded_relations(n);
        let [target] = n.targets.as_slice() else {
            return false;
        };
        if inner.len() != 1
            || n.relations.iter().filter(|r| !self.is_local(r)).count() != 1
            || n.limit.is_some()
            || n.offset.is_some()
            || n.set_operation
        {
            return false;
        }
        let outer_preds = super::keys::Predicates {
            relations: outer.to_vec(),
            params: None,
        };
        let inner_preds = super::keys::Predicates {
            relations: inner,
            params: None,
        };
        match (
            outer_preds.key_column(compared),
            inner_preds.key_column(&target.expr),
        ) {
            (Some(a), Some(b)) => {
                a.config.data_type == b.config.data_type && a.config.mapping == b.config.mapping
            }
            _ => false,
        }
    }

    /// GROUP BY (or DISTINCT) including the key of the subquery's one sharded table, without
    /// LIMIT, OFFSET, window or set operation: every group lives on one shard, so each shard's
    /// rows are the global ones.
    pub(super) fn grouped_by_key(&self, n: &Statement) -> bool {
        let own = self.sharded_relations(n);
        if own.len() != 1
            || n.relations.iter().filter(|r| !self.is_local(r)).count() != 1
            || n.limit.is_some()
            || n.offset.is_some()
            || n.set_operation
            || n.functions().iter().any(|f| f.window)
        {
            return false;
        }
        let preds = super::keys::Predicates {
            relations: own,
            params: None,
        };
        let keyed = |e: &Expr| preds.key_column(e).is_some();
        if !n.group_by.is_empty() {
            return n.group_by.iter().any(keyed);
        }
        match &n.distinct {
            pg_query_raw::router::Distinct::All => n.targets.iter().any(|t| keyed(&t.expr)),
            pg_query_raw::router::Distinct::On(on) => on.iter().any(keyed),
            _ => false,
        }
    }

    /// Every sharded table of the subquery is restricted by its key to `shard` (or to no shard).
    fn restricted_to(
        &self,
        n: &Statement,
        shard: usize,
        params: Option<&Params<'_>>,
    ) -> Result<bool, RouterError> {
        let own = self.sharded_relations(n);
        if own.len() != n.relations.iter().filter(|r| !self.is_local(r)).count() {
            return Ok(false);
        }
        if own.is_empty() {
            // Only subqueries of its own read sharded tables: they are checked in turn.
            return Ok(true);
        }
        Ok(match self.predicate_shards(n, own, params)? {
            Some(set) => set.iter().all(|s| *s == shard),
            None => false,
        })
    }

    /// An outer join keeping rows of a table that is on every shard while NULL-extending a
    /// sharded one: each shard would return its own unmatched copy of those rows.
    fn check_outer_joins(&self, st: &Statement, scope: Scope) -> Result<(), RouterError> {
        if scope != Scope::All {
            return Ok(());
        }
        let by_name = |name: &String| {
            st.relations
                .iter()
                .find(|r| r.alias.as_ref().unwrap_or(&r.name) == name)
        };
        for j in &st.outer_joins {
            let keeps_local = j
                .preserved
                .iter()
                .filter_map(by_name)
                .any(|r| self.is_local(r));
            let extends_sharded = j
                .nullable
                .iter()
                .filter_map(by_name)
                .find(|r| !self.is_local(r));
            if let (true, Some(sharded)) = (keeps_local, extends_sharded) {
                return Err(RouterError::Unsupported(format!(
                    "outer join keeping the rows of a table copied on every shard while matching them with sharded table \"{}\": each shard would return its own unmatched rows; use an inner join, put the sharded table on the preserved side, or add a sharding key filter",
                    sharded.name
                )));
            }
        }
        Ok(())
    }
}

/// The 0A000 for a subquery evaluated shard by shard.
fn refusal(n: &Statement, router: &Router) -> RouterError {
    let table = first_sharded(n, router).unwrap_or_else(|| "?".into());
    RouterError::Unsupported(format!(
        "subquery reading sharded table \"{table}\" is neither correlated on the sharding key with the outer query nor restricted to the shard the query runs on: each shard would answer it with its own rows only; add a sharding key filter to it, or run the query on one shard with /* pgdog_shard: N */"
    ))
}

fn first_sharded(n: &Statement, router: &Router) -> Option<String> {
    n.relations
        .iter()
        .find(|r| !router.is_local(r))
        .map(|r| r.name.clone())
        .or_else(|| nested(n).iter().find_map(|s| first_sharded(s.st, router)))
}

/// A FROM subquery whose rows are just filtered rows of its tables (so the outer query can be
/// merged as if it read the tables): no aggregate, grouping, DISTINCT, LIMIT, window or set
/// operation.
pub(super) fn passes_rows_through(n: &Statement) -> bool {
    n.kind == StatementKind::Select
        && n.group_by.is_empty()
        && n.having.is_none()
        && n.limit.is_none()
        && n.offset.is_none()
        && matches!(n.distinct, pg_query_raw::router::Distinct::None)
        && !n.set_operation
        && !n
            .functions()
            .iter()
            .any(|f| f.window || crate::merge::is_aggregate(&f.name))
}

/// An aggregate without GROUP BY: one row even from no input (`count(*)` = 0).
fn aggregates_empty_input(b: &Statement) -> bool {
    b.group_by.is_empty()
        && b.functions()
            .iter()
            .any(|f| !f.window && crate::merge::is_aggregate(&f.name))
}

/// Whether a statement holds a subquery anywhere (FROM, CTE, set operation, expressions).
pub(super) fn has_nested(st: &Statement) -> bool {
    !nested(st).is_empty()
}

/// The statement's subqueries: FROM subqueries, CTEs and set-operation branches, then those in
/// its expressions (WHERE, JOIN conditions, targets, HAVING, ORDER BY, GROUP BY, RETURNING).
fn nested(st: &Statement) -> Vec<Nested<'_>> {
    let mut out: Vec<Nested<'_>> = st
        .subqueries
        .iter()
        .map(|s| Nested {
            st: s,
            place: Place::From,
            compared: None,
            negated: false,
        })
        .collect();
    let mut exprs: Vec<&Expr> = Vec::new();
    exprs.extend(st.where_clause.iter());
    exprs.extend(st.join_conditions.iter());
    exprs.extend(st.having.iter());
    exprs.extend(st.targets.iter().map(|t| &t.expr));
    exprs.extend(st.returning.iter().map(|t| &t.expr));
    exprs.extend(st.update_set.iter().map(|t| &t.expr));
    exprs.extend(st.order_by.iter().map(|k| &k.expr));
    exprs.extend(st.group_by.iter());
    let mut subs = Vec::new();
    for e in exprs {
        sublinks(e, &mut subs);
    }
    out.extend(subs.into_iter().map(|(s, compared, negated)| Nested {
        st: s,
        place: Place::Expr,
        compared,
        negated,
    }));
    out
}

/// Subqueries of an expression: each with the expression an `IN` / `= ANY` compares with it,
/// and whether that comparison is negated (`NOT IN`).
type Sublinks<'a> = Vec<(&'a Statement, Option<&'a Expr>, bool)>;

fn sublinks<'a>(e: &'a Expr, out: &mut Sublinks<'a>) {
    match e {
        Expr::SubLink(s) => out.push((s, None, false)),
        Expr::Op {
            op,
            left: Some(left),
            right: Some(right),
            quantifier: Some(pg_query_raw::router::Quantifier::Any),
        } if op == "=" && matches!(&**right, Expr::SubLink(_)) => {
            if let Expr::SubLink(s) = &**right {
                out.push((s, Some(left), false));
            }
            sublinks(left, out);
        }
        // `NOT (x IN (SELECT ...))` is not a semi-join: a NULL key on one shard changes every
        // shard's answer (accepted only with a NullGuard, see `not_in`). Other subqueries
        // under NOT count as not compared with anything.
        Expr::Not(expr) => {
            let mut inner = Vec::new();
            sublinks(expr, &mut inner);
            let direct = matches!(
                &**expr,
                Expr::Op { quantifier: Some(pg_query_raw::router::Quantifier::Any), op, right: Some(r), .. }
                    if op == "=" && matches!(&**r, Expr::SubLink(_))
            );
            out.extend(inner.into_iter().enumerate().map(|(i, (s, c, _))| {
                if direct && i == 0 {
                    (s, c, true)
                } else {
                    (s, None, false)
                }
            }));
        }
        Expr::Cast { expr, .. } | Expr::IsNull { expr, .. } => sublinks(expr, out),
        Expr::Op { left, right, .. } => left
            .iter()
            .chain(right.iter())
            .for_each(|x| sublinks(x, out)),
        Expr::In { expr, list, .. } => {
            sublinks(expr, out);
            list.iter().for_each(|x| sublinks(x, out));
        }
        Expr::Between {
            expr, low, high, ..
        } => [expr, low, high].into_iter().for_each(|x| sublinks(x, out)),
        Expr::And(v) | Expr::Or(v) | Expr::Row(v) | Expr::Array(v) => {
            v.iter().for_each(|x| sublinks(x, out))
        }
        Expr::Func(f) => f.args.iter().for_each(|x| sublinks(x, out)),
        _ => {}
    }
}

/// Whether the text has more SELECTs than the parse tree shows: a subquery inside an
/// expression the router does not look into (CASE, COALESCE, ...).
pub(super) fn hidden_subquery(st: &Statement, sql: &str) -> bool {
    let mut in_text = 0;
    crate::router::read_write::words_outside_literals(sql, |w, _| {
        if w.eq_ignore_ascii_case("select") {
            in_text += 1;
        }
        false
    });
    in_text > visible_selects(st)
}

fn visible_selects(st: &Statement) -> usize {
    let own = usize::from(st.kind == StatementKind::Select && !st.set_operation);
    own + nested(st)
        .iter()
        .map(|n| visible_selects(n.st))
        .sum::<usize>()
        + st.insert_select.as_deref().map_or(0, visible_selects)
}
