//! The plan of a cross-shard SELECT: which SQL each shard gets and how the merger combines the
//! shards' rows. [`plan`] reads the query (lean router view for the checks, full tree for the
//! rewrite) and refuses, with SQLSTATE 0A000, what cannot be merged correctly.
use super::aggfn::{distinct_key, is_aggregate};
use super::error::MergeError;
use super::having::HavingCond;
use super::list::ListAgg;
use super::rewrite::{self, node};
use super::setop::{self, SetOpPlan};
use super::spread::Spread;
use pg_query_raw::protobuf::{self as pb, node::Node as N};
use pg_query_raw::router::{self, StatementKind};

/// A column of the shard rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnRef {
    /// Absolute position (known when no `*` precedes it).
    Index(usize),
    /// The n-th hidden column, appended after the client's columns.
    Hidden(usize),
}

/// An ORDER BY key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderKey {
    pub column: ColumnRef,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A LIMIT or OFFSET value: a constant or a `$n` parameter to bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Const(i64),
    Param(u32),
}

/// How a column is merged across the rows of one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFn {
    /// A group key or an expression of the keys: the first value.
    First,
    Count,
    Sum,
    Min,
    Max,
    BoolAnd,
    BoolOr,
    /// `bit_and` / `bit_or` / `bit_xor` of integers: the same operation over the shards'.
    BitAnd,
    BitOr,
    BitXor,
    /// `avg`: recomputed from the `sum` and `count` columns (absolute indexes).
    Avg {
        sum: usize,
        count: usize,
    },
    /// `stddev` / `variance` forms: from `count(x)`, `sum(x::numeric)` and
    /// `sum(x::numeric * x::numeric)` (absolute indexes).
    Spread {
        kind: Spread,
        count: usize,
        sum: usize,
        sumsq: usize,
    },
    /// `array_agg` / `string_agg`: entry `i` of [`Grouping::lists`].
    List(usize),
    /// A helper column of a list aggregate (its values' or an ORDER BY key's array).
    ListPart,
    /// `count(DISTINCT key)`: exact as a sum of the shards' counts when `key` is the sharding
    /// key (the router checks that), since each value lives on one shard.
    CountDistinct,
}

/// GROUP BY / aggregate merging: every shard column has a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    /// Group key columns (empty: one group, as for `SELECT count(*) FROM t`).
    pub keys: Vec<usize>,
    /// One role per shard column, hidden ones included.
    pub columns: Vec<AggFn>,
    pub having: Vec<HavingCond>,
    /// The `array_agg` / `string_agg` calls.
    pub lists: Vec<ListAgg>,
}

/// DISTINCT handling.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DistinctPlan {
    #[default]
    None,
    /// Plain DISTINCT: dedupe on the client's columns.
    All,
    /// DISTINCT ON: keep the first row (in ORDER BY order) of each key.
    On(Vec<ColumnRef>),
}

/// How the shards' rows become the client's rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MergePlan {
    /// Hidden trailing columns, stripped before the client sees the rows.
    pub hidden: usize,
    pub order_by: Vec<OrderKey>,
    pub limit: Option<Bound>,
    pub offset: Option<Bound>,
    pub distinct: DistinctPlan,
    pub grouping: Option<Grouping>,
    /// UNION / INTERSECT / EXCEPT: the branches' combination.
    pub set_op: Option<SetOpPlan>,
    /// The columns of `count(DISTINCT ...)` calls: right across shards only when each is the
    /// sharding key of the table it names (the router checks).
    pub distinct_keys: Vec<KeyColumn>,
}

/// A column reference `[qualifier.]name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumn {
    pub qualifier: Option<String>,
    pub name: String,
}

impl MergePlan {
    /// No post-processing: shard rows go to the client as they come.
    pub fn passthrough() -> MergePlan {
        MergePlan::default()
    }

    pub fn is_passthrough(&self) -> bool {
        *self == MergePlan::default()
    }

    /// Number of hidden trailing columns the shards return (in the result format the Bind asks
    /// for).
    pub fn hidden_columns(&self) -> usize {
        self.hidden
    }

    /// Whether LIMIT/OFFSET are `$n` parameters that [`MergePlan::bind`] must fill in.
    pub fn needs_params(&self) -> bool {
        matches!(self.limit, Some(Bound::Param(_))) || matches!(self.offset, Some(Bound::Param(_)))
    }

    /// The plan with `$n` LIMIT/OFFSET replaced by the Bind message's values. `formats` are the
    /// Bind's parameter format codes (none: all text; one: for all; else one per parameter).
    pub fn bind(&self, params: &[Option<&[u8]>], formats: &[i16]) -> Result<MergePlan, MergeError> {
        let mut plan = self.clone();
        let value = |n: u32| -> Result<Option<i64>, MergeError> {
            let i = n as usize - 1;
            let bad = |why: &str| MergeError::BadParameter(n, why.to_string());
            let v = params.get(i).ok_or_else(|| bad("not supplied"))?;
            let binary = match formats {
                [] => false,
                [f] => *f == 1,
                fs => fs.get(i).copied() == Some(1),
            };
            let Some(v) = v else { return Ok(None) };
            if binary {
                return match v.len() {
                    8 => Ok(Some(i64::from_be_bytes(
                        v[..8].try_into().map_err(|_| bad("size"))?,
                    ))),
                    4 => Ok(Some(
                        i32::from_be_bytes(v[..4].try_into().map_err(|_| bad("size"))?) as i64,
                    )),
                    2 => Ok(Some(
                        i16::from_be_bytes(v[..2].try_into().map_err(|_| bad("size"))?) as i64,
                    )),
                    _ => Err(bad("binary value of unexpected size")),
                };
            }
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .map(Some)
                .ok_or_else(|| bad("not a bigint"))
        };
        // NULL LIMIT means no limit; NULL OFFSET means 0.
        if let Some(Bound::Param(n)) = plan.limit {
            plan.limit = value(n)?.map(Bound::Const);
        }
        if let Some(Bound::Param(n)) = plan.offset {
            plan.offset = value(n)?.map(Bound::Const);
        }
        if matches!(plan.limit, Some(Bound::Const(v)) if v < 0) {
            return Err(MergeError::NegativeLimit);
        }
        if matches!(plan.offset, Some(Bound::Const(v)) if v < 0) {
            return Err(MergeError::NegativeOffset);
        }
        Ok(plan)
    }
}

/// What a cross-shard SELECT needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossShardPlan {
    /// SQL to send to each shard (`None`: the client's text unchanged).
    pub shard_sql: Option<String>,
    pub merge: MergePlan,
    /// A `NOT IN (SELECT key ...)` whose NULLs are checked first (see `router::not_in`).
    pub null_guard: Option<NullGuard>,
}

/// `NOT IN (SELECT ...)` across shards: `probe` (a one-value SELECT) run on every shard says
/// whether the subquery gives a NULL anywhere; if so every shard runs `with_null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullGuard {
    pub probe: String,
    pub with_null: String,
}

impl CrossShardPlan {
    fn passthrough() -> CrossShardPlan {
        CrossShardPlan {
            shard_sql: None,
            merge: MergePlan::passthrough(),
            null_guard: None,
        }
    }
}

/// Plans one SELECT sent to every shard. Other statements get a passthrough plan.
pub fn plan(sql: &str) -> Result<CrossShardPlan, MergeError> {
    let parse_err = |e: pg_query_raw::Error| MergeError::Parse(e.to_string());
    let stmts = router::parse(sql).map_err(parse_err)?;
    let [st] = stmts.as_slice() else {
        return Err(MergeError::unsupported("several statements in one query"));
    };
    if st.kind != StatementKind::Select {
        return Ok(CrossShardPlan::passthrough());
    }
    if let Some(name) = rewrite::calls(sql)?.window {
        return Err(MergeError::unsupported(format!(
            "window functions ({name})"
        )));
    }
    let mut tree = pg_query_raw::parse_protobuf(sql).map_err(parse_err)?;
    let Some(N::SelectStmt(select)) = pg_query_raw::first_statement_mut(&mut tree) else {
        return Ok(CrossShardPlan::passthrough());
    };
    if select.op != pb::SetOperation::SetopNone as i32 {
        // Branches run on several shards are plain filters (the router checks them); LIMIT
        // in a branch pinned to one shard is fine.
        let merge = setop::plan(select)?;
        let shard_sql =
            pg_query_raw::deparse(&tree).map_err(|e| MergeError::Unsupported(e.to_string()))?;
        return Ok(CrossShardPlan {
            shard_sql: Some(shard_sql),
            merge,
            null_guard: None,
        });
    }
    // LIMIT / OFFSET inside subqueries: the router accepts only subqueries whose rows all live
    // on the shard that runs them (correlated on the key, restricted by it, a UNION ALL of
    // such branches), where a LIMIT is the global one (`router::subquery`).
    if select.into_clause.is_some() || !select.values_lists.is_empty() {
        return Ok(CrossShardPlan::passthrough());
    }
    let mut planner = Planner::new(select)?;
    let merge = planner.plan(select)?;
    let shard_sql = if planner.changed {
        Some(pg_query_raw::deparse(&tree).map_err(|e| MergeError::Unsupported(e.to_string()))?)
    } else {
        None
    };
    Ok(CrossShardPlan {
        shard_sql,
        merge,
        null_guard: None,
    })
}

/// One entry of the client's target list.
pub(super) struct Target {
    pub(super) star: bool,
    /// Canonical SQL of the expression.
    pub(super) key: String,
    /// Output column name (alias, or the name Postgres derives).
    pub(super) name: Option<String>,
    /// `name` is an explicit `AS` alias.
    pub(super) alias: bool,
    pub(super) expr: Option<pb::Node>,
}

/// A column added for the merger.
pub(super) struct Hidden {
    pub(super) expr: pb::Node,
    pub(super) key: String,
    pub(super) role: AggFn,
}

pub(super) struct Planner {
    pub(super) targets: Vec<Target>,
    /// Index of the first `*` target.
    pub(super) star_at: Option<usize>,
    pub(super) hidden: Vec<Hidden>,
    pub(super) grouping: bool,
    pub(super) changed: bool,
    /// `array_agg` / `string_agg` calls planned so far.
    pub(super) lists: Vec<ListAgg>,
}

impl Planner {
    fn new(select: &pb::SelectStmt) -> Result<Planner, MergeError> {
        let mut targets = Vec::with_capacity(select.target_list.len());
        let mut star_at = None;
        for (i, t) in select.target_list.iter().enumerate() {
            let Some(N::ResTarget(rt)) = t.node.as_ref() else {
                return Err(MergeError::unsupported("this target list"));
            };
            let expr = rt.val.as_deref();
            let star = matches!(expr.and_then(|e| e.node.as_ref()), Some(N::ColumnRef(c))
                if matches!(c.fields.last().and_then(|f| f.node.as_ref()), Some(N::AStar(_))));
            if star && star_at.is_none() {
                star_at = Some(i);
            }
            let key = match (star, expr) {
                (false, Some(e)) => rewrite::expr_text(e)?,
                _ => String::new(),
            };
            let name = if rt.name.is_empty() {
                expr.and_then(figure_name)
            } else {
                Some(rt.name.clone())
            };
            targets.push(Target {
                star,
                key,
                name,
                alias: !rt.name.is_empty(),
                expr: expr.cloned(),
            });
        }
        Ok(Planner {
            targets,
            star_at,
            hidden: Vec::new(),
            grouping: false,
            lists: Vec::new(),
            changed: false,
        })
    }

    fn plan(&mut self, select: &mut pb::SelectStmt) -> Result<MergePlan, MergeError> {
        if select.limit_option == pb::LimitOption::WithTies as i32 {
            return Err(MergeError::unsupported("FETCH ... WITH TIES"));
        }
        let limit = bound(select.limit_count.as_deref(), "LIMIT")?;
        let offset = bound(select.limit_offset.as_deref(), "OFFSET")?;
        // Aggregates anywhere at this level (targets, HAVING, ORDER BY) or GROUP BY.
        let mut target_aggs = Vec::with_capacity(self.targets.len());
        for t in &self.targets {
            target_aggs.push(match &t.expr {
                Some(e) if !t.star => self.aggregate_of(e, &t.key)?,
                _ => None,
            });
        }
        let mut order_aggs = false;
        for s in &select.sort_clause {
            if let Some(e) = sort_expr(s) {
                order_aggs |= self.aggregate_of(e, &rewrite::expr_text(e)?)?.is_some();
            }
        }
        self.grouping = target_aggs.iter().any(Option::is_some)
            || order_aggs
            || !select.group_clause.is_empty()
            || select.having_clause.is_some();
        let mut plan = MergePlan {
            limit,
            offset,
            ..MergePlan::default()
        };
        let mut grouping = None;
        if self.grouping {
            if self.star_at.is_some() {
                return Err(MergeError::unsupported(
                    "SELECT * together with aggregates or GROUP BY",
                ));
            }
            if select.group_distinct {
                return Err(MergeError::unsupported("GROUP BY DISTINCT"));
            }
            let mut columns = Vec::with_capacity(self.targets.len());
            for agg in &target_aggs {
                columns.push(agg.unwrap_or(AggFn::First));
            }
            let mut g = Grouping {
                keys: Vec::new(),
                columns,
                having: Vec::new(),
                lists: Vec::new(),
            };
            // avg(x), stddev(x), ...: the partial sums and counts beside them.
            for i in 0..self.targets.len() {
                if let Some(e) = self.targets[i].expr.clone() {
                    if let Some(role) = self.composite(&e, g.columns[i])? {
                        g.columns[i] = role;
                    }
                }
            }
            for item in &select.group_clause {
                let col = match item.node.as_ref() {
                    Some(N::GroupingSet(_)) => {
                        return Err(MergeError::unsupported("GROUPING SETS, ROLLUP or CUBE"))
                    }
                    _ => self.resolve_group(item)?,
                };
                g.keys.push(self.absolute(col));
            }
            if let Some(having) = select.having_clause.take() {
                let mut keep = Vec::new();
                for c in rewrite::conjuncts(*having) {
                    let key = rewrite::expr_text(&c)?;
                    if !rewrite::calls(&key)?.names.iter().any(|n| is_aggregate(n)) {
                        keep.push(c);
                        continue;
                    }
                    g.having.push(self.having_condition(&c, &key)?);
                }
                select.having_clause = rewrite::and(keep).map(Box::new);
                self.changed = true;
            }
            grouping = Some(g);
            // Groups span shards: every shard must return all of its groups.
            if select.limit_count.is_some() || select.limit_offset.is_some() {
                select.limit_count = None;
                select.limit_offset = None;
                self.changed = true;
            }
        } else {
            self.changed |= shard_limit(select, limit, offset);
        }
        for s in &select.sort_clause {
            let Some(N::SortBy(sb)) = s.node.as_ref() else {
                continue;
            };
            if sb.sortby_dir == pb::SortByDir::SortbyUsing as i32 {
                return Err(MergeError::unsupported("ORDER BY ... USING"));
            }
            let Some(e) = sb.node.as_deref() else {
                continue;
            };
            let column = self.resolve(e, true)?;
            let descending = sb.sortby_dir == pb::SortByDir::SortbyDesc as i32;
            let nulls_first = match sb.sortby_nulls {
                n if n == pb::SortByNulls::SortbyNullsFirst as i32 => true,
                n if n == pb::SortByNulls::SortbyNullsLast as i32 => false,
                _ => descending,
            };
            plan.order_by.push(OrderKey {
                column,
                descending,
                nulls_first,
            });
        }
        plan.distinct = match select.distinct_clause.as_slice() {
            [] => DistinctPlan::None,
            items if items.iter().all(|n| n.node.is_none()) => DistinctPlan::All,
            items => {
                let mut cols = Vec::with_capacity(items.len());
                for e in items {
                    cols.push(self.resolve(e, true)?);
                }
                DistinctPlan::On(cols)
            }
        };
        // Hidden columns: append to the shard query, record their roles.
        plan.hidden = self.hidden.len();
        for (i, h) in self.hidden.iter().enumerate() {
            select
                .target_list
                .push(rewrite::res_target(h.expr.clone(), &format!("__pgdog_{i}")));
            self.changed = true;
        }
        if let Some(mut g) = grouping {
            g.columns.extend(self.hidden.iter().map(|h| h.role));
            g.lists = std::mem::take(&mut self.lists);
            let exprs = self.targets.iter().map(|t| t.expr.as_ref());
            let exprs = exprs.chain(self.hidden.iter().map(|h| Some(&h.expr)));
            for (role, expr) in g.columns.iter().zip(exprs) {
                if *role == AggFn::CountDistinct {
                    plan.distinct_keys.push(distinct_key(expr)?);
                }
            }
            plan.grouping = Some(g);
        }
        Ok(plan)
    }

    /// Absolute index of a column in grouping mode (no `*`, so every position is known).
    pub(super) fn absolute(&self, c: ColumnRef) -> usize {
        match c {
            ColumnRef::Index(i) => i,
            ColumnRef::Hidden(j) => self.targets.len() + j,
        }
    }

    /// The column holding `e`: by position or output name (ORDER BY / DISTINCT ON rules, when
    /// `sql92`), else by equal expression, else a new hidden column.
    pub(super) fn resolve(&mut self, e: &pb::Node, sql92: bool) -> Result<ColumnRef, MergeError> {
        let visible = self.star_at.unwrap_or(self.targets.len());
        match e.node.as_ref() {
            Some(N::AConst(c)) => {
                if let Some(pb::a_const::Val::Ival(i)) = &c.val {
                    if i.ival >= 1
                        && (self.star_at.is_some() || (i.ival as usize) <= self.targets.len())
                    {
                        return Ok(ColumnRef::Index(i.ival as usize - 1));
                    }
                }
                return Err(MergeError::unsupported("this ORDER BY / GROUP BY constant"));
            }
            Some(N::ColumnRef(c)) if sql92 && c.fields.len() == 1 => {
                let name = rewrite::last_name(&c.fields);
                if let Some(i) = self
                    .targets
                    .iter()
                    .position(|t| !t.star && t.name.as_deref() == Some(name.as_str()))
                {
                    if i < visible {
                        return Ok(ColumnRef::Index(i));
                    }
                    let (expr, key) = match &self.targets[i].expr {
                        Some(x) => (x.clone(), self.targets[i].key.clone()),
                        None => (e.clone(), name),
                    };
                    return self.hidden_column(expr, key);
                }
            }
            _ => {}
        }
        let key = rewrite::expr_text(e)?;
        if let Some(i) = self.targets[..visible].iter().position(|t| t.key == key) {
            return Ok(ColumnRef::Index(i));
        }
        self.hidden_column(e.clone(), key)
    }

    /// A GROUP BY item. Postgres reads a bare name as an input column first, else as an output
    /// alias; the input columns are unknown here, so: a target with that very expression, else
    /// the target aliased so (the shard resolves the name itself), else a hidden column.
    pub(super) fn resolve_group(&mut self, e: &pb::Node) -> Result<ColumnRef, MergeError> {
        if let Some(N::ColumnRef(c)) = e.node.as_ref() {
            if c.fields.len() == 1 {
                let key = rewrite::expr_text(e)?;
                let name = rewrite::last_name(&c.fields);
                let visible = self.star_at.unwrap_or(self.targets.len());
                let by_key = self.targets[..visible].iter().position(|t| t.key == key);
                let by_alias = || {
                    self.targets[..visible]
                        .iter()
                        .position(|t| t.alias && t.name.as_deref() == Some(name.as_str()))
                };
                if let Some(i) = by_key.or_else(by_alias) {
                    return Ok(ColumnRef::Index(i));
                }
            }
        }
        self.resolve(e, false)
    }

    pub(super) fn hidden_column(
        &mut self,
        expr: pb::Node,
        key: String,
    ) -> Result<ColumnRef, MergeError> {
        if let Some(j) = self.hidden.iter().position(|h| h.key == key) {
            return Ok(ColumnRef::Hidden(j));
        }
        let role = if self.grouping {
            self.aggregate_of(&expr, &key)?.unwrap_or(AggFn::First)
        } else {
            AggFn::First
        };
        self.hidden.push(Hidden {
            expr: expr.clone(),
            key,
            role,
        });
        let j = self.hidden.len() - 1;
        if let Some(role) = self.composite(&expr, role)? {
            self.hidden[j].role = role;
        }
        Ok(ColumnRef::Hidden(j))
    }
}

fn sort_expr(s: &pb::Node) -> Option<&pb::Node> {
    match s.node.as_ref()? {
        N::SortBy(sb) => sb.node.as_deref(),
        _ => None,
    }
}

/// The name Postgres gives an unnamed target (enough of FigureColname for ORDER BY names).
pub(super) fn figure_name(e: &pb::Node) -> Option<String> {
    match e.node.as_ref()? {
        N::ColumnRef(c) => match c.fields.last()?.node.as_ref()? {
            N::String(s) => Some(s.sval.clone()),
            _ => None,
        },
        N::FuncCall(f) => Some(rewrite::last_name(&f.funcname)),
        N::TypeCast(tc) => tc.arg.as_deref().and_then(figure_name),
        _ => None,
    }
}

/// LIMIT / OFFSET: `None` for absent, `NULL` or `ALL`.
pub(super) fn bound(e: Option<&pb::Node>, what: &str) -> Result<Option<Bound>, MergeError> {
    let Some(e) = e else { return Ok(None) };
    match e.node.as_ref() {
        Some(N::AConst(c)) if c.isnull => Ok(None),
        Some(N::AConst(c)) => match &c.val {
            Some(pb::a_const::Val::Ival(i)) => Ok(Some(Bound::Const(i.ival as i64))),
            Some(pb::a_const::Val::Fval(f)) => f
                .fval
                .parse::<i64>()
                .map(|v| Some(Bound::Const(v)))
                .map_err(|_| MergeError::unsupported(format!("{what} {}", f.fval))),
            _ => Err(MergeError::unsupported(format!("this {what} value"))),
        },
        Some(N::ParamRef(p)) if p.number >= 1 => Ok(Some(Bound::Param(p.number as u32))),
        _ => Err(MergeError::unsupported(format!(
            "{what} with an expression (use a constant or a $n parameter)"
        ))),
    }
    .and_then(|b| match b {
        Some(Bound::Const(v)) if v < 0 => Err(if what == "LIMIT" {
            MergeError::NegativeLimit
        } else {
            MergeError::NegativeOffset
        }),
        other => Ok(other),
    })
}

/// Each shard returns the first LIMIT + OFFSET rows (the merger skips OFFSET of them): the
/// shard query's LIMIT and OFFSET rewritten so. Whether the query changed.
pub(super) fn shard_limit(
    select: &mut pb::SelectStmt,
    limit: Option<Bound>,
    offset: Option<Bound>,
) -> bool {
    if offset.is_none() {
        return false;
    }
    let shard_limit = match (limit, offset) {
        (None, _) => None,
        (Some(l), None | Some(Bound::Const(0))) => Some(bound_node(l)),
        (Some(Bound::Const(l)), Some(Bound::Const(o))) => {
            Some(rewrite::int_const(l.saturating_add(o)))
        }
        (Some(l), Some(o)) => Some(rewrite::plus(bigint_node(l), bigint_node(o))),
    };
    if shard_limit.is_some() {
        select.limit_option = pb::LimitOption::Count as i32;
    }
    select.limit_count = shard_limit.map(Box::new);
    select.limit_offset = None;
    true
}

fn bound_node(b: Bound) -> pb::Node {
    match b {
        Bound::Const(v) => rewrite::int_const(v),
        Bound::Param(n) => node(N::ParamRef(pb::ParamRef {
            number: n as i32,
            location: -1,
        })),
    }
}

fn bigint_node(b: Bound) -> pb::Node {
    match b {
        Bound::Const(v) => rewrite::int_const(v),
        Bound::Param(n) => rewrite::bigint_param(n),
    }
}
