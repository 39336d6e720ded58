//! The routing decision for one statement: which shards it goes to and how their answers are
//! combined. Manual overrides first (`/* pgdog_shard: N */`, `SET pgdog.shard`,
//! `SET pgdog.sharding_key`), then sharding keys found in the statement, else every shard.
use super::cache::Parsed;
use super::insert::{self, InsertPart};
use super::keys::{shard_of, value_of, Params, Predicates, Value};
use super::schema::{Schema, TableSharding};
use super::setop::{with_branch_sources, SetOpShards};
use super::subquery::Scope;
use super::RouterError;
use crate::merge::{CrossShardPlan, KeyColumn};
use pg_query_raw::router::{Expr, Relation, Statement, StatementKind};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Where a statement goes.
#[derive(Debug, Clone)]
pub enum Route {
    /// One shard, statement unchanged.
    Shard(usize),
    /// Several shards (sorted). `plan`: how to merge a SELECT's rows (None: rows pass
    /// through); `sum_tags`: CommandComplete counts are added up (not for writes to
    /// omnisharded tables or DDL, where every shard does the same thing); `atomic`: a write
    /// that runs in one transaction across the shards when the client has none open.
    Multi {
        shards: Vec<usize>,
        plan: Option<Arc<CrossShardPlan>>,
        sum_tags: bool,
        atomic: bool,
    },
    /// A multi-row INSERT split into one statement per shard.
    Split(Vec<InsertPart>),
}

impl Route {
    /// The shards it touches.
    pub fn shards(&self) -> Vec<usize> {
        match self {
            Route::Shard(s) => vec![*s],
            Route::Multi { shards, .. } => shards.clone(),
            Route::Split(parts) => parts.iter().map(|p| p.shard).collect(),
        }
    }
}

/// Manual routing a session asked for with `SET pgdog.shard` / `SET pgdog.sharding_key`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub shard: Option<usize>,
    pub sharding_key: Option<String>,
    /// The schemas of the client's `search_path` (schema-based sharding).
    pub search_path: Vec<String>,
}

/// Routes statements of one database.
#[derive(Debug)]
pub struct Router {
    pub schema: Arc<Schema>,
    /// Unique in the process: what a shape's point plans are kept by.
    id: u64,
    next: AtomicUsize,
    /// `dry_run`: the planned layout's router, whose verdicts the session counts.
    dry_run: Option<Box<super::verdict::DryRun>>,
}

impl Router {
    pub fn new(schema: Schema) -> Router {
        static IDS: AtomicU64 = AtomicU64::new(0);
        Router {
            schema: Arc::new(schema),
            id: IDS.fetch_add(1, Ordering::Relaxed),
            next: AtomicUsize::new(0),
            dry_run: None,
        }
    }

    /// This router, whose sessions count the verdicts of `dry_run`'s.
    pub fn with_dry_run(mut self, dry_run: super::verdict::DryRun) -> Router {
        self.dry_run = Some(Box::new(dry_run));
        self
    }

    /// This router's id (unique in the process).
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn dry_run(&self) -> Option<&super::verdict::DryRun> {
        self.dry_run.as_deref()
    }

    pub fn shards(&self) -> usize {
        self.schema.shards
    }

    /// One shard for a statement any shard can answer (round robin).
    pub(super) fn any_shard(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.schema.shards
    }

    pub(super) fn all(&self) -> Vec<usize> {
        (0..self.schema.shards).collect()
    }

    fn check_shard(&self, shard: usize) -> Result<usize, RouterError> {
        if shard < self.schema.shards {
            Ok(shard)
        } else {
            Err(RouterError::NoSuchShard(shard, self.schema.shards))
        }
    }

    /// Routes statement `i` of `parsed` (its text is `sql`).
    pub fn route(
        &self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
        params: Option<&Params<'_>>,
        overrides: &Overrides,
    ) -> Result<Route, RouterError> {
        let Some(stmt) = parsed.statements.get(i) else {
            return Err(RouterError::Invalid(format!("no statement {i}")));
        };
        if let Some(shard) = parsed.shard_comment.or(overrides.shard) {
            return Ok(Route::Shard(self.check_shard(shard)?));
        }
        if let Some(key) = parsed
            .key_comment
            .as_deref()
            .or(overrides.sharding_key.as_deref())
        {
            return Ok(Route::Shard(self.shard_of_override(stmt, key)?));
        }
        if self.schema.shards == 1 {
            return Ok(Route::Shard(0));
        }
        if !self.schema.schemas.is_empty() {
            let search_path = &overrides.search_path;
            if let Some(shard) = super::schemas::shard(&self.schema, stmt, sql, search_path)? {
                return Ok(Route::Shard(self.check_shard(shard)?));
            }
        }
        match &stmt.kind {
            StatementKind::Select => self.select(parsed, i, sql, stmt, params),
            StatementKind::Update | StatementKind::Delete => self.write(stmt, params),
            StatementKind::Insert => self.insert(sql, stmt, params),
            StatementKind::Merge => Err(RouterError::Unsupported(
                "MERGE on a sharded database needs a shard: add /* pgdog_shard: N */".into(),
            )),
            StatementKind::Copy { .. } => Ok(self.multi(self.all(), None, true)),
            StatementKind::Show | StatementKind::Explain => Ok(Route::Shard(self.any_shard())),
            // DDL and the rest: every shard does the same. Column orders may change.
            _ => {
                self.schema.columns.write().clear();
                Ok(self.multi(self.all(), None, false))
            }
        }
    }

    pub(super) fn multi(
        &self,
        shards: Vec<usize>,
        plan: Option<Arc<CrossShardPlan>>,
        sum_tags: bool,
    ) -> Route {
        if shards.len() == 1 {
            return Route::Shard(shards[0]);
        }
        Route::Multi {
            shards,
            plan,
            sum_tags,
            atomic: false,
        }
    }

    /// A write on several shards: atomic across them.
    fn multi_write(&self, shards: Vec<usize>, sum_tags: bool) -> Route {
        match self.multi(shards, None, sum_tags) {
            Route::Multi {
                shards,
                plan,
                sum_tags,
                ..
            } => Route::Multi {
                shards,
                plan,
                sum_tags,
                atomic: true,
            },
            other => other,
        }
    }

    /// `SET pgdog.sharding_key`: the shard of that value for the statement's sharded table
    /// (or the only sharded table configured).
    fn shard_of_override(&self, stmt: &Statement, key: &str) -> Result<usize, RouterError> {
        let table = stmt
            .relations
            .iter()
            .find_map(|r| self.schema.table(&r.name))
            .or_else(|| self.schema.tables.first())
            .or_else(|| self.schema.any_table.first())
            .ok_or_else(|| {
                RouterError::Invalid(
                    "pgdog.sharding_key is set but no sharded table is configured".into(),
                )
            })?;
        Ok(table.shard_of_text(Some(key))?)
    }

    /// How a relation is sharded: its entry, else an entry for a column the statement names.
    fn sharding_of<'a>(&'a self, rel: &Relation, columns: &[&str]) -> Option<&'a TableSharding> {
        if self.schema.is_omnisharded(&rel.name) {
            return None;
        }
        self.schema.table(&rel.name).or_else(|| {
            columns
                .iter()
                .find_map(|c| self.schema.by_column(c))
                .filter(|_| true)
        })
    }

    /// The sharded relations of a statement (with name-less entries matched by the columns
    /// its predicates mention).
    pub(super) fn sharded_relations<'a>(
        &'a self,
        stmt: &'a Statement,
    ) -> Vec<(&'a Relation, &'a TableSharding)> {
        let mut columns = Vec::new();
        if let Some(w) = &stmt.where_clause {
            column_names(w, &mut columns);
        }
        for j in &stmt.join_conditions {
            column_names(j, &mut columns);
        }
        stmt.relations
            .iter()
            .filter_map(|r| self.sharding_of(r, &columns).map(|ts| (r, ts)))
            .collect()
    }

    /// Shards a WHERE clause (plus JOIN conditions) restricts the statement to.
    pub(super) fn predicate_shards(
        &self,
        stmt: &Statement,
        relations: Vec<(&Relation, &TableSharding)>,
        params: Option<&Params<'_>>,
    ) -> Result<Option<BTreeSet<usize>>, RouterError> {
        let preds = Predicates { relations, params };
        let mut acc: Option<BTreeSet<usize>> = None;
        for e in stmt.where_clause.iter().chain(&stmt.join_conditions) {
            if let Some(set) = preds.shards(e)? {
                acc = Some(match acc {
                    None => set,
                    Some(prev) => prev.intersection(&set).copied().collect(),
                });
            }
        }
        Ok(acc)
    }

    fn select(
        &self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
        stmt: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<Route, RouterError> {
        if super::subquery::hidden_subquery(stmt, sql) && self.reads_sharded(stmt) {
            return Err(RouterError::Unsupported(
                "a subquery inside an expression pgdog cannot analyse (CASE, COALESCE, ...) in a query on sharded tables: it could be answered shard by shard; move the subquery out of the expression or add /* pgdog_shard: N */".into(),
            ));
        }
        if !self.reads_sharded(stmt) {
            // SELECT 1, SELECT now(), omnisharded tables and catalogs (subqueries included):
            // any shard answers.
            return Ok(Route::Shard(self.any_shard()));
        }
        if stmt.set_operation {
            return match self.set_operation(stmt, params)? {
                SetOpShards::One(shard) => Ok(Route::Shard(shard)),
                SetOpShards::Several { shards, positions } => {
                    let plan = with_branch_sources(parsed.plan(i, sql)?, positions);
                    Ok(self.multi(shards, Some(plan), true))
                }
            };
        }
        let sharded = self.sharded_relations(stmt);
        let shards = self.predicate_shards(stmt, sharded.clone(), params)?;
        let shards: Vec<usize> = match shards {
            Some(set) if set.is_empty() => {
                // A contradiction (`id = 1 AND id = 2`): no rows anywhere; one shard answers.
                vec![self.any_shard()]
            }
            Some(set) => set.into_iter().collect(),
            None if sharded.is_empty()
                && !stmt
                    .relations
                    .iter()
                    .any(|r| self.reads_sharded_relation(r)) =>
            {
                // Only subqueries read sharded tables: one shard when they all pin the same.
                match self.subqueries_shard(stmt, params)? {
                    Some(shard) => vec![shard],
                    None => self.all(),
                }
            }
            None => {
                self.check_colocated(stmt, &sharded)?;
                self.all()
            }
        };
        // `x NOT IN (SELECT key ...)`: its NULLs are looked for on every shard first.
        let guarded = stmt.kind == StatementKind::Select && self.not_in_on_key(stmt) > 0;
        if shards.len() == 1 && !guarded {
            self.check_nested(stmt, Scope::One(shards[0]), params)?;
            return Ok(Route::Shard(shards[0]));
        }
        let scope = match shards.as_slice() {
            [one] => Scope::One(*one),
            _ => Scope::All,
        };
        self.check_nested_guarded(stmt, scope, params, guarded)?;
        let mut plan = parsed.plan(i, sql)?;
        for key in &plan.merge.distinct_keys {
            self.check_distinct_key(stmt, key)?;
        }
        if guarded {
            let mut p = CrossShardPlan::clone(&plan);
            p.null_guard = Some(super::not_in::guard(p.shard_sql.as_deref().unwrap_or(sql))?);
            plan = Arc::new(p);
            // Even on one shard: the probe reads them all.
            return Ok(Route::Multi {
                shards,
                plan: Some(plan),
                sum_tags: true,
                atomic: false,
            });
        }
        Ok(self.multi(shards, Some(plan), true))
    }

    /// `count(DISTINCT c)` across shards adds the shards' counts: right only when `c` is the
    /// sharding key of the table it comes from (each value then lives on one shard).
    fn check_distinct_key(&self, stmt: &Statement, key: &KeyColumn) -> Result<(), RouterError> {
        let table = match &key.qualifier {
            Some(q) => stmt
                .relations
                .iter()
                .find(|r| r.alias.as_deref().unwrap_or(&r.name) == q),
            None => match stmt.relations.as_slice() {
                [only] => Some(only),
                _ => None,
            },
        };
        let on_key = table
            .and_then(|r| self.sharding_of(r, &[]))
            .is_some_and(|ts| ts.column() == key.name);
        if on_key {
            return Ok(());
        }
        Err(RouterError::Unsupported(format!(
            "count(DISTINCT {}) across shards: the same value can be on several shards; it is exact only on a table's sharding key (qualify the column when the query reads several tables)",
            key.name
        )))
    }

    /// A cross-shard join is right only when the tables are joined on their sharding keys.
    pub(super) fn check_colocated(
        &self,
        stmt: &Statement,
        sharded: &[(&Relation, &TableSharding)],
    ) -> Result<(), RouterError> {
        if sharded.len() < 2 {
            return Ok(());
        }
        let preds = Predicates {
            relations: sharded.to_vec(),
            params: None,
        };
        let mut joined: Vec<usize> = vec![0];
        let mut conditions: Vec<&Expr> = stmt.join_conditions.iter().collect();
        if let Some(w) = &stmt.where_clause {
            conditions.push(w);
        }
        let mut pairs = Vec::new();
        for c in conditions {
            key_equalities(c, &preds, sharded, &mut pairs);
        }
        // `a NATURAL JOIN b` equates every column the two share: their keys when named alike.
        let index = |name: &str| {
            sharded
                .iter()
                .position(|(r, _)| r.alias.as_deref().unwrap_or(&r.name) == name)
        };
        for (l, r) in &stmt.natural_joins {
            if let (Some(a), Some(b)) = (index(l), index(r)) {
                if sharded[a].1.column() == sharded[b].1.column() {
                    pairs.push((a, b));
                }
            }
        }
        // `... JOIN t USING (c)` with a join on a side: the one table of each side whose key is
        // `c` holds the column (Postgres refuses a name two tables of a side share).
        for u in &stmt.using_joins {
            let keyed = |side: &[String], column: &str| -> Option<usize> {
                let mut found = side
                    .iter()
                    .filter_map(|n| index(n))
                    .filter(|i| sharded[*i].1.column() == column);
                let first = found.next()?;
                found.next().is_none().then_some(first)
            };
            for column in &u.columns {
                if let (Some(a), Some(b)) = (keyed(&u.left, column), keyed(&u.right, column)) {
                    let (x, y) = (&sharded[a].1.config, &sharded[b].1.config);
                    if x.data_type == y.data_type && x.mapping == y.mapping {
                        pairs.push((a, b));
                    }
                }
            }
        }
        // Union the relations connected by key equalities; all must end up connected.
        connect(&mut joined, &pairs);
        if joined.len() == sharded.len() {
            return Ok(());
        }
        let names: Vec<String> = sharded
            .iter()
            .map(|(r, ts)| format!("{}.{}", r.name, ts.column()))
            .collect();
        Err(RouterError::Unsupported(format!(
            "cross-shard join of tables not joined on their sharding keys ({}): add a condition equating them or a sharding key filter",
            names.join(", ")
        )))
    }

    /// An UPDATE that assigns the sharding key of its table: the table and the shards holding
    /// the rows it picks (by its key conditions), in shard order. `None` for other statements.
    /// Rows picked by anything but the key are refused: pgdog could not tell where they are
    /// without reading every shard, and moving them is a cross-shard write it cannot bound.
    pub fn key_update(
        &self,
        stmt: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<Option<(TableSharding, Vec<usize>)>, RouterError> {
        if stmt.kind != StatementKind::Update || self.schema.shards < 2 {
            return Ok(None);
        }
        let sharded = self.sharded_relations(stmt);
        let Some((target, ts)) = sharded.first().cloned() else {
            return Ok(None);
        };
        if stmt.relations.first() != Some(target)
            || !stmt
                .update_set
                .iter()
                .any(|t| t.name.as_deref() == Some(ts.column()))
        {
            return Ok(None);
        }
        if sharded.len() > 1 || stmt.relations.len() > 1 {
            return Err(RouterError::Unsupported(format!(
                "UPDATE of sharding key column \"{}\" with other tables in FROM: update the rows by their key alone",
                ts.column()
            )));
        }
        match self.predicate_shards(stmt, sharded, params)? {
            Some(set) => Ok(Some((ts.clone(), set.into_iter().collect()))),
            None => Err(RouterError::Unsupported(format!(
                "UPDATE of sharding key column \"{}\" on rows not picked by their key: pgdog moves rows to their new shard only when the WHERE clause gives their current key (= or IN)",
                ts.column()
            ))),
        }
    }

    fn write(&self, stmt: &Statement, params: Option<&Params<'_>>) -> Result<Route, RouterError> {
        let Some(target) = stmt.relations.first() else {
            return Ok(self.multi_write(self.all(), true));
        };
        if self.schema.is_omnisharded(&target.name) {
            // The same write on every shard: its subqueries must see the same rows everywhere.
            self.check_nested(stmt, Scope::All, params)?;
            return Ok(self.multi_write(self.all(), false));
        }
        let sharded = self.sharded_relations(stmt);
        if let Some((_, ts)) = sharded.first() {
            if stmt
                .update_set
                .iter()
                .any(|t| t.name.as_deref() == Some(ts.column()))
            {
                return Err(RouterError::Unsupported(format!(
                    "UPDATE of sharding key column \"{}\" (the row could move to another shard): delete and insert it instead",
                    ts.column()
                )));
            }
        }
        let shards = self.predicate_shards(stmt, sharded, params)?;
        let shards: Vec<usize> = match shards {
            Some(set) if set.is_empty() => vec![self.any_shard()],
            Some(set) => set.into_iter().collect(),
            None => self.all(),
        };
        let scope = match shards.as_slice() {
            [one] => Scope::One(*one),
            _ => Scope::All,
        };
        self.check_nested(stmt, scope, params)?;
        Ok(self.multi_write(shards, true))
    }

    /// `sql` is the text of this one statement.
    fn insert(
        &self,
        sql: &str,
        stmt: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<Route, RouterError> {
        let Some(target) = stmt.relations.first() else {
            return Err(RouterError::Invalid("INSERT without a table".into()));
        };
        if self.schema.is_omnisharded(&target.name) {
            return Ok(self.multi_write(self.all(), false));
        }
        let columns: Vec<&str> = stmt.insert_columns.iter().map(|c| c.as_str()).collect();
        let Some(ts) = self.sharding_of(target, &columns) else {
            return Err(RouterError::Unsupported(format!(
                "INSERT into table \"{}\", which is neither sharded nor omnisharded: add it to [[sharded_tables]] or [[omnisharded_tables]], or route it with /* pgdog_shard: N */",
                target.name
            )));
        };
        let position = if stmt.insert_columns.is_empty() {
            let known = self.schema.columns.read().get(&target.name).cloned();
            match known {
                Some(cols) => cols.iter().position(|c| c == ts.column()),
                None => return Err(RouterError::NeedColumns(target.name.clone())),
            }
        } else {
            stmt.insert_columns.iter().position(|c| c == ts.column())
        };
        let Some(position) = position else {
            return Err(RouterError::Unsupported(format!(
                "INSERT into sharded table \"{}\" must give a value for the sharding key \"{}\": the shards' own defaults would collide (primary_key = \"unique_id\" lets pgdog supply one)",
                target.name,
                ts.column()
            )));
        };
        if stmt.values.is_empty() {
            return Err(RouterError::Unsupported(format!(
                "INSERT ... SELECT into sharded table \"{}\" (the rows would stay on the shard that read them): insert the rows with VALUES or COPY",
                target.name
            )));
        }
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (row, values) in stmt.values.iter().enumerate() {
            let expr = values.get(position).ok_or_else(|| {
                RouterError::Invalid(format!("VALUES row {} has no sharding key", row + 1))
            })?;
            let value = match value_of(expr, params) {
                Some(v) => v,
                None if params.is_none() && matches!(expr, Expr::Param(_)) => {
                    // Routed at Bind time; the statement alone says nothing.
                    return Ok(self.multi_write(self.all(), true));
                }
                None => {
                    return Err(RouterError::Unsupported(format!(
                        "the sharding key \"{}\" of VALUES row {} is an expression: use a constant or a parameter",
                        ts.column(),
                        row + 1
                    )))
                }
            };
            let shard = shard_of(ts, &value)?;
            match groups.iter_mut().find(|(s, _)| *s == shard) {
                Some((_, rows)) => rows.push(row),
                None => groups.push((shard, vec![row])),
            }
        }
        if groups.len() == 1 {
            self.check_nested(stmt, Scope::One(groups[0].0), params)?;
            return Ok(Route::Shard(groups[0].0));
        }
        self.check_nested(stmt, Scope::All, params)?;
        groups.sort_by_key(|g| g.0);
        Ok(Route::Split(insert::split(sql, 0, &groups)?))
    }
}

/// System catalogs are the same on every shard (psql's \d and drivers' introspection).
pub(super) fn is_catalog(r: &Relation) -> bool {
    match r.schema.as_deref() {
        Some("pg_catalog") | Some("information_schema") => true,
        Some(_) => false,
        None => r.name.starts_with("pg_"),
    }
}

/// Column names an expression mentions (outside subqueries).
pub(super) fn column_names<'a>(e: &'a Expr, out: &mut Vec<&'a str>) {
    match e {
        Expr::Column { name, .. } => out.push(name),
        Expr::Cast { expr, .. } | Expr::Not(expr) | Expr::IsNull { expr, .. } => {
            column_names(expr, out)
        }
        Expr::Op { left, right, .. } => {
            left.iter()
                .chain(right.iter())
                .for_each(|x| column_names(x, out));
        }
        Expr::In { expr, list, .. } => {
            column_names(expr, out);
            list.iter().for_each(|x| column_names(x, out));
        }
        Expr::Between {
            expr, low, high, ..
        } => {
            for x in [expr, low, high] {
                column_names(x, out);
            }
        }
        Expr::And(v) | Expr::Or(v) | Expr::Row(v) | Expr::Array(v) => {
            v.iter().for_each(|x| column_names(x, out))
        }
        _ => {}
    }
}

/// Adds to `connected` every relation index linked to it through `pairs` (key equalities),
/// directly or by a chain.
pub(super) fn connect(connected: &mut Vec<usize>, pairs: &[(usize, usize)]) {
    let mut changed = true;
    while changed {
        changed = false;
        for (a, b) in pairs {
            if connected.contains(a) != connected.contains(b) {
                connected.push(if connected.contains(a) { *b } else { *a });
                changed = true;
            }
        }
    }
}

/// Pairs of sharded relations (indexes into `sharded`) whose keys `e` equates (under AND).
pub(super) fn key_pairs(
    e: &Expr,
    sharded: &[(&Relation, &TableSharding)],
    out: &mut Vec<(usize, usize)>,
) {
    let preds = Predicates {
        relations: sharded.to_vec(),
        params: None,
    };
    key_equalities(e, &preds, sharded, out);
}

/// Pairs of sharded relations (indexes into `sharded`) whose keys `e` equates (under AND).
fn key_equalities(
    e: &Expr,
    preds: &Predicates<'_, '_>,
    sharded: &[(&Relation, &TableSharding)],
    out: &mut Vec<(usize, usize)>,
) {
    match e {
        Expr::And(items) => items
            .iter()
            .for_each(|x| key_equalities(x, preds, sharded, out)),
        // `(a.k, a.x) = (b.k, b.y)`: each pair of the rows.
        Expr::Op {
            op,
            left: Some(l),
            right: Some(r),
            quantifier: None,
        } if op == "="
            && matches!((&**l, &**r), (Expr::Row(a), Expr::Row(b)) if a.len() == b.len()) =>
        {
            if let (Expr::Row(a), Expr::Row(b)) = (&**l, &**r) {
                for (x, y) in a.iter().zip(b) {
                    let pair = Expr::Op {
                        op: op.clone(),
                        left: Some(Box::new(x.clone())),
                        right: Some(Box::new(y.clone())),
                        quantifier: None,
                    };
                    key_equalities(&pair, preds, sharded, out);
                }
            }
        }
        Expr::Op {
            op,
            left: Some(l),
            right: Some(r),
            quantifier: None,
        } if op == "=" => {
            let index = |x: &Expr| -> Option<usize> {
                let Expr::Column { table, name } = x else {
                    return None;
                };
                sharded.iter().position(|(rel, ts)| {
                    ts.column() == name
                        && match table {
                            Some(t) => rel.alias.as_deref().unwrap_or(&rel.name) == t,
                            None => false,
                        }
                })
            };
            if let (Some(a), Some(b)) = (index(l), index(r)) {
                let same_type = sharded[a].1.config.data_type == sharded[b].1.config.data_type
                    && sharded[a].1.config.mapping == sharded[b].1.config.mapping;
                if same_type {
                    out.push((a, b));
                }
            }
            let _ = preds;
        }
        _ => {}
    }
}

/// The values of a statement's `Value` type, re-exported for the session.
pub type KeyValue<'a> = Value<'a>;
