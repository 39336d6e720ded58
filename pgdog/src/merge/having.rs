//! HAVING conditions the merger applies to merged groups: `aggregate <op> constant`, joined
//! with AND (other conditions stay in the shards' query).
use super::decimal::Decimal;
use super::error::MergeError;
use super::plan::Planner;
use super::rewrite;
use pg_query_raw::protobuf::{self as pb, node::Node as N};

/// Comparison operator of a HAVING condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn parse(op: &str) -> Option<CmpOp> {
        Some(match op {
            "=" => CmpOp::Eq,
            "<>" | "!=" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }

    pub fn holds(self, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => o == Equal,
            CmpOp::Ne => o != Equal,
            CmpOp::Lt => o == Less,
            CmpOp::Le => o != Greater,
            CmpOp::Gt => o == Greater,
            CmpOp::Ge => o != Less,
        }
    }
}

/// The constant side of a HAVING condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constant {
    Number(Decimal),
    Text(String),
}

/// `HAVING <aggregate column> <op> <constant>`, applied to merged groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HavingCond {
    pub column: usize,
    pub op: CmpOp,
    pub value: Constant,
}

impl Planner {
    /// `aggregate <op> constant` (either way round).
    pub(super) fn having_condition(
        &mut self,
        c: &pb::Node,
        key: &str,
    ) -> Result<HavingCond, MergeError> {
        let unsupported = || {
            MergeError::unsupported(format!("this HAVING condition ({key}); supported: aggregate <op> constant, joined with AND"))
        };
        let Some(N::AExpr(a)) = c.node.as_ref() else {
            return Err(unsupported());
        };
        if a.kind != pb::AExprKind::AexprOp as i32 {
            return Err(unsupported());
        }
        let op = CmpOp::parse(&rewrite::last_name(&a.name)).ok_or_else(unsupported)?;
        let (l, r) = (
            a.lexpr.as_deref().ok_or_else(unsupported)?,
            a.rexpr.as_deref().ok_or_else(unsupported)?,
        );
        let (agg, value, op) = match (constant(l), constant(r)) {
            (None, Some(v)) => (l, v, op),
            (Some(v), None) => (r, v, op.flipped()),
            _ => return Err(unsupported()),
        };
        let agg_key = rewrite::expr_text(agg)?;
        if self.aggregate_of(agg, &agg_key)?.is_none() {
            return Err(unsupported());
        }
        let col = self.resolve(agg, false)?;
        Ok(HavingCond {
            column: self.absolute(col),
            op,
            value,
        })
    }
}

/// A constant of a HAVING condition: number, string, `-number`, or a cast of one.
fn constant(e: &pb::Node) -> Option<Constant> {
    match e.node.as_ref()? {
        N::AConst(c) => match c.val.as_ref()? {
            pb::a_const::Val::Ival(i) => Some(Constant::Number(Decimal::from_i128(i.ival as i128))),
            pb::a_const::Val::Fval(f) => Decimal::parse(&f.fval).map(Constant::Number),
            pb::a_const::Val::Sval(s) => Some(Constant::Text(s.sval.clone())),
            pb::a_const::Val::Boolval(b) => {
                Some(Constant::Text(if b.boolval { "t" } else { "f" }.into()))
            }
            _ => None,
        },
        N::TypeCast(tc) => constant(tc.arg.as_deref()?),
        N::AExpr(a) if a.lexpr.is_none() && rewrite::last_name(&a.name) == "-" => {
            match constant(a.rexpr.as_deref()?)? {
                Constant::Number(d) => Some(Constant::Number(negate(&d))),
                Constant::Text(_) => None,
            }
        }
        _ => None,
    }
}

fn negate(d: &Decimal) -> Decimal {
    let s = d.to_string();
    let neg = match s.strip_prefix('-') {
        Some(rest) => rest.to_string(),
        None => format!("-{s}"),
    };
    Decimal::parse(&neg).unwrap_or(Decimal::NaN)
}
