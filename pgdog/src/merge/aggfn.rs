//! Which aggregates merge across shards and how: the role of each aggregate call, the extra
//! partial columns `avg` and `stddev`/`variance` need, `count(DISTINCT key)`.
use super::error::MergeError;
use super::plan::{AggFn, KeyColumn, Planner};
use super::rewrite;
use super::spread::Spread;
use pg_query_raw::protobuf::{self as pb, node::Node as N};

/// Aggregates the merger combines from partial results.
const MERGEABLE: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "bit_xor",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "array_agg",
    "string_agg",
];

/// Aggregates whose partial results cannot be combined.
const UNMERGEABLE: &[&str] = &[
    "percentile_cont",
    "percentile_disc",
    "mode",
    "corr",
    "covar_pop",
    "covar_samp",
    "regr_avgx",
    "regr_avgy",
    "regr_count",
    "regr_intercept",
    "regr_r2",
    "regr_slope",
    "regr_sxx",
    "regr_sxy",
    "regr_syy",
    "any_value",
    "xmlagg",
    "json_objectagg",
    "json_arrayagg",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
];

pub(crate) fn is_aggregate(name: &str) -> bool {
    is_builtin_aggregate(name) || name.ends_with("_agg")
}

/// One of Postgres' own aggregates or window functions (all read-only).
pub(crate) fn is_builtin_aggregate(name: &str) -> bool {
    MERGEABLE.contains(&name) || UNMERGEABLE.contains(&name)
}

impl Planner {
    /// The merge role of an expression that is an aggregate call; `None` for expressions
    /// without aggregates; an error for aggregates that cannot be merged or that sit inside a
    /// larger expression.
    pub(super) fn aggregate_of(
        &self,
        e: &pb::Node,
        key: &str,
    ) -> Result<Option<AggFn>, MergeError> {
        let calls = rewrite::calls(key)?;
        let aggs: Vec<&String> = calls.names.iter().filter(|n| is_aggregate(n)).collect();
        if aggs.is_empty() {
            return Ok(None);
        }
        let Some(N::FuncCall(fc)) = e.node.as_ref() else {
            return Err(MergeError::unsupported(format!(
                "an aggregate inside an expression ({key})"
            )));
        };
        let name = rewrite::last_name(&fc.funcname);
        if !is_aggregate(&name) || aggs.len() > 1 {
            return Err(MergeError::unsupported(format!(
                "an aggregate inside an expression ({key})"
            )));
        }
        if !MERGEABLE.contains(&name.as_str()) {
            return Err(MergeError::unsupported(format!("the aggregate {name}")));
        }
        if fc.agg_within_group {
            return Err(MergeError::unsupported(format!("{name}(...) WITHIN GROUP")));
        }
        // FILTER (WHERE ...) stays in the shards' query: each shard's partial result is over
        // its filtered rows, which merge like unfiltered ones (avg's sum and count carry it).
        let list = matches!(name.as_str(), "array_agg" | "string_agg");
        if !fc.agg_order.is_empty() && !list {
            return Err(MergeError::unsupported(format!(
                "ORDER BY inside {name}(...)"
            )));
        }
        let role = match name.as_str() {
            "count" => AggFn::Count,
            "sum" => AggFn::Sum,
            "min" => AggFn::Min,
            "max" => AggFn::Max,
            "bool_and" | "every" => AggFn::BoolAnd,
            "bool_or" => AggFn::BoolOr,
            "bit_and" => AggFn::BitAnd,
            "bit_or" => AggFn::BitOr,
            "bit_xor" => AggFn::BitXor,
            // Placeholders: `composite` fills in the columns.
            "avg" => AggFn::Avg { sum: 0, count: 0 },
            "array_agg" | "string_agg" => AggFn::List(0),
            other => AggFn::Spread {
                kind: Spread::of(other)
                    .ok_or_else(|| MergeError::unsupported(format!("the aggregate {name}")))?,
                count: 0,
                sum: 0,
                sumsq: 0,
            },
        };
        if fc.agg_distinct && role == AggFn::Count {
            // The router allows it only on the sharding key.
            return Ok(Some(AggFn::CountDistinct));
        }
        if fc.agg_distinct
            && matches!(
                role,
                AggFn::Sum | AggFn::Avg { .. } | AggFn::BitXor | AggFn::Spread { .. }
            )
        {
            return Err(MergeError::unsupported(format!("{name}(DISTINCT ...)")));
        }
        Ok(Some(role))
    }

    /// The role of `avg(x)` or a `stddev`/`variance` form with the columns of its partial
    /// sums and count (added hidden unless present; FILTER kept); `None` for other roles.
    pub(super) fn composite(
        &mut self,
        e: &pb::Node,
        role: AggFn,
    ) -> Result<Option<AggFn>, MergeError> {
        let Some(N::FuncCall(fc)) = e.node.as_ref() else {
            return Ok(None);
        };
        let part = |name: &str, args: Vec<pb::Node>| {
            let mut call = rewrite::func_call(name, args, false);
            if let Some(N::FuncCall(f)) = call.node.as_mut() {
                f.agg_filter = fc.agg_filter.clone();
            }
            call
        };
        let column = |planner: &mut Planner, call: pb::Node| -> Result<usize, MergeError> {
            let c = planner.resolve(&call, false)?;
            Ok(planner.absolute(c))
        };
        match role {
            AggFn::Avg { .. } => {
                let sum = column(self, part("sum", fc.args.clone()))?;
                let count = column(self, part("count", fc.args.clone()))?;
                Ok(Some(AggFn::Avg { sum, count }))
            }
            AggFn::Spread { kind, .. } => {
                let [arg] = fc.args.as_slice() else {
                    return Err(MergeError::unsupported("this stddev/variance call"));
                };
                let x = rewrite::cast(arg.clone(), "numeric");
                let count = column(self, part("count", fc.args.clone()))?;
                let sum = column(self, part("sum", vec![x.clone()]))?;
                let square = rewrite::op("*", x.clone(), x);
                let sumsq = column(self, part("sum", vec![square]))?;
                Ok(Some(AggFn::Spread {
                    kind,
                    count,
                    sum,
                    sumsq,
                }))
            }
            AggFn::List(_) => self.list_role(e),
            _ => Ok(None),
        }
    }
}

/// The column of `count(DISTINCT column)`.
pub(super) fn distinct_key(e: Option<&pb::Node>) -> Result<KeyColumn, MergeError> {
    let refuse = || {
        MergeError::unsupported(
            "count(DISTINCT ...) across shards except on the sharding key column",
        )
    };
    let Some(N::FuncCall(fc)) = e.and_then(|e| e.node.as_ref()) else {
        return Err(refuse());
    };
    let [arg] = fc.args.as_slice() else {
        return Err(refuse());
    };
    let Some(N::ColumnRef(c)) = arg.node.as_ref() else {
        return Err(refuse());
    };
    let names: Vec<String> = c
        .fields
        .iter()
        .map(|f| match f.node.as_ref() {
            Some(N::String(s)) => Ok(s.sval.clone()),
            _ => Err(refuse()),
        })
        .collect::<Result<_, _>>()?;
    match names.as_slice() {
        [name] => Ok(KeyColumn {
            qualifier: None,
            name: name.clone(),
        }),
        [.., q, name] => Ok(KeyColumn {
            qualifier: Some(q.clone()),
            name: name.clone(),
        }),
        [] => Err(refuse()),
    }
}
