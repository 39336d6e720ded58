//! The router's view of a statement: the types [`parse`](super::parse) returns, and the walks
//! over them consumers share (function calls).
use std::borrow::Cow;

/// What kind of statement it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    Merge,
    /// `COPY`: `from` is true for `COPY ... FROM`.
    Copy {
        from: bool,
    },
    Set,
    Show,
    Transaction(Transaction),
    Prepare,
    Execute,
    Deallocate,
    Explain,
    /// Any other utility statement (DDL and the rest), by node name (`CreateStmt`, ...).
    Utility(&'static str),
}

/// Transaction control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transaction {
    Begin,
    Commit,
    Rollback,
    Savepoint(String),
    Release(String),
    RollbackTo(String),
    /// PREPARE TRANSACTION 'gid'
    Prepare(String),
    CommitPrepared(String),
    RollbackPrepared(String),
}

/// An outer join: the relations (alias, else name) whose rows it keeps without a match, and
/// those that become NULL-extended (both sides of a FULL join are both).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OuterJoin {
    pub preserved: Vec<String>,
    pub nullable: Vec<String>,
}

/// A table reference.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Relation {
    pub schema: Option<String>,
    pub name: String,
    pub alias: Option<String>,
}

/// A constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    Null,
    Bool(bool),
    Integer(i64),
    /// Numeric text as written (`1.5e3`, `2147483648`).
    Numeric(String),
    String(String),
    /// Bit string as Postgres keeps it (`b101`, `x1F`).
    Bits(String),
}

/// An expression, pruned to what routing reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `[table.]column`
    Column {
        table: Option<String>,
        name: String,
    },
    /// `*` or `table.*`
    Star {
        table: Option<String>,
    },
    /// `$n`
    Param(u32),
    Const(Const),
    /// `expr::type`; `type_name` is the last name part (`int8`, `text`, `uuid`...), with `()`
    /// when the type has a modifier (`varchar(2)` is `varchar()`, `char` is `bpchar()`) and `[]`
    /// for an array.
    Cast {
        expr: Box<Expr>,
        type_name: String,
    },
    /// Binary or unary operator (`=`, `<`, `+`, `~~`...); `ANY`/`ALL` when `quantifier` is set.
    Op {
        op: Cow<'static, str>,
        left: Option<Box<Expr>>,
        right: Option<Box<Expr>>,
        quantifier: Option<Quantifier>,
    },
    /// `expr [NOT] IN (list)`
    In {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    /// `expr [NOT] BETWEEN [SYMMETRIC] low AND high`
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
        symmetric: bool,
    },
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    /// `expr IS [NOT] NULL`
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    Func(Box<Func>),
    Row(Vec<Expr>),
    Array(Vec<Expr>),
    /// A subquery in an expression (`EXISTS`, scalar; `x IN (SELECT ...)` and `x op ANY/ALL
    /// (SELECT ...)` are an [`Expr::Op`] with the quantifier whose right side is the subquery).
    SubLink(Box<Statement>),
    /// Another node kind, by name (`CaseExpr`, `CoalesceExpr`, ...).
    Other(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    Any,
    All,
}

/// A function or aggregate call.
#[derive(Debug, Clone, PartialEq)]
pub struct Func {
    /// The last name part, lower-case as parsed (`count`, `sum`, `now`).
    pub name: String,
    pub schema: Option<String>,
    pub args: Vec<Expr>,
    /// `count(*)`
    pub star: bool,
    pub distinct: bool,
    /// Has an `OVER (...)` window.
    pub window: bool,
    pub filter: bool,
    pub within_group: bool,
    /// Has `ORDER BY` inside the call.
    pub ordered: bool,
}

/// A target list or RETURNING entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub expr: Expr,
    /// `AS name` (or the column name of an UPDATE SET / INSERT column).
    pub name: Option<String>,
}

/// An ORDER BY key.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
    /// NULLS FIRST / LAST as written; `None`: the default (last for ASC, first for DESC).
    pub nulls_first: Option<bool>,
    /// `USING op`
    pub using: bool,
}

/// DISTINCT clause.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Distinct {
    #[default]
    None,
    All,
    On(Vec<Expr>),
}

/// A SET / RESET statement.
#[derive(Debug, Clone, PartialEq)]
pub struct SetStatement {
    /// Parameter name as parsed (lower-case unless quoted); `None` for `RESET ALL`.
    pub name: Option<String>,
    /// The values of `SET name = v1, v2`; empty for `SET ... TO DEFAULT` and RESET.
    pub values: Vec<Const>,
    pub local: bool,
    /// `RESET name`, `RESET ALL` or `SET name TO DEFAULT`.
    pub reset: bool,
    /// `SET TRANSACTION ...` / `SET SESSION CHARACTERISTICS ...` and the like (`VAR_SET_MULTI`).
    pub multi: bool,
}

/// `JOIN ... USING (columns)` with a join on one side.
#[derive(Debug, Clone, PartialEq)]
pub struct UsingJoin {
    /// The tables (names or aliases) of each side.
    pub left: Vec<String>,
    pub right: Vec<String>,
    pub columns: Vec<String>,
}

/// One statement as the router sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub kind: StatementKind,
    /// Every relation read or written, in the order met (DML target first).
    pub relations: Vec<Relation>,
    pub targets: Vec<Target>,
    pub where_clause: Option<Expr>,
    /// JOIN ... ON conditions.
    pub join_conditions: Vec<Expr>,
    pub group_by: Vec<Expr>,
    pub having: Option<Expr>,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub distinct: Distinct,
    /// INSERT column list (empty: all columns in table order).
    pub insert_columns: Vec<String>,
    /// INSERT ... VALUES rows (empty for INSERT ... SELECT / DEFAULT VALUES).
    pub values: Vec<Vec<Expr>>,
    /// INSERT ... SELECT
    pub insert_select: Option<Box<Statement>>,
    /// UPDATE SET column = expr, as targets named by column.
    pub update_set: Vec<Target>,
    pub returning: Vec<Target>,
    pub set: Option<SetStatement>,
    /// Highest `$n` seen anywhere in the statement (0: none).
    pub max_param: u32,
    /// UNION / INTERSECT / EXCEPT
    pub set_operation: bool,
    /// The set operation is UNION ALL (rows of both inputs, kept as they are).
    pub union_all: bool,
    /// WITH clause present.
    pub with: bool,
    /// SELECT's WITH queries: how often each is read (its name in a FROM clause, anywhere in
    /// the statement); they are the first `cte_reads.len()` entries of `subqueries`. A CTE
    /// read in FROM is not listed in `relations`.
    pub cte_reads: Vec<usize>,
    /// Subqueries in FROM or in expressions.
    pub subqueries: Vec<Statement>,
    /// FOR UPDATE / SHARE
    pub locking: bool,
    /// `ON CONFLICT`
    pub on_conflict: bool,
    /// LEFT / RIGHT / FULL joins of this statement's FROM clause.
    pub outer_joins: Vec<OuterJoin>,
    /// `l NATURAL JOIN r` of two tables (names or aliases): joined on every column they share.
    pub natural_joins: Vec<(String, String)>,
    /// `JOIN ... USING (...)` where a side is itself a join (with single tables on both sides
    /// the equalities are in `join_conditions`).
    pub using_joins: Vec<UsingJoin>,
    /// Text of the statement within the query string.
    pub location: usize,
    pub len: usize,
}

impl Statement {
    pub(super) fn new(kind: StatementKind) -> Statement {
        Statement {
            kind,
            relations: Vec::new(),
            targets: Vec::new(),
            where_clause: None,
            join_conditions: Vec::new(),
            group_by: Vec::new(),
            having: None,
            order_by: Vec::new(),
            limit: None,
            offset: None,
            distinct: Distinct::None,
            insert_columns: Vec::new(),
            values: Vec::new(),
            insert_select: None,
            update_set: Vec::new(),
            returning: Vec::new(),
            set: None,
            max_param: 0,
            set_operation: false,
            union_all: false,
            with: false,
            cte_reads: Vec::new(),
            subqueries: Vec::new(),
            locking: false,
            on_conflict: false,
            outer_joins: Vec::new(),
            natural_joins: Vec::new(),
            using_joins: Vec::new(),
            location: 0,
            len: 0,
        }
    }

    /// Every function call (aggregates and windows included) in the targets, RETURNING, HAVING
    /// and ORDER BY, outside subqueries.
    pub fn functions(&self) -> Vec<&Func> {
        let mut out = Vec::new();
        for t in self.targets.iter().chain(&self.returning) {
            t.expr.functions(&mut out);
        }
        if let Some(h) = &self.having {
            h.functions(&mut out);
        }
        for k in &self.order_by {
            k.expr.functions(&mut out);
        }
        out
    }
}

/// A walk over a statement that may change it: `statement` is called on each statement (the
/// outer one, subqueries, INSERT ... SELECT, sublinks) before its parts, `expr` on each
/// expression after its children.
pub trait VisitMut {
    fn statement(&mut self, _st: &mut Statement) {}
    fn expr(&mut self, _e: &mut Expr) {}
}

impl Statement {
    /// Walks every statement and expression of this statement (see [`VisitMut`]).
    pub fn walk_mut(&mut self, v: &mut impl VisitMut) {
        v.statement(self);
        let Statement {
            targets,
            where_clause,
            join_conditions,
            group_by,
            having,
            order_by,
            limit,
            offset,
            distinct,
            values,
            insert_select,
            update_set,
            returning,
            subqueries,
            ..
        } = self;
        let distinct_on = match distinct {
            Distinct::On(list) => &mut list[..],
            Distinct::None | Distinct::All => &mut [],
        };
        let exprs = targets
            .iter_mut()
            .chain(update_set.iter_mut())
            .chain(returning.iter_mut())
            .map(|t| &mut t.expr)
            .chain(where_clause.iter_mut())
            .chain(join_conditions.iter_mut())
            .chain(group_by.iter_mut())
            .chain(having.iter_mut())
            .chain(order_by.iter_mut().map(|k| &mut k.expr))
            .chain(limit.iter_mut())
            .chain(offset.iter_mut())
            .chain(distinct_on.iter_mut())
            .chain(values.iter_mut().flatten());
        for e in exprs {
            e.walk_mut(v);
        }
        for st in insert_select.iter_mut().map(|b| &mut **b).chain(subqueries) {
            st.walk_mut(v);
        }
    }
}

impl Expr {
    /// Walks this expression, the expressions inside it and a sublink's statement.
    pub fn walk_mut(&mut self, v: &mut impl VisitMut) {
        match self {
            Expr::Cast { expr, .. } | Expr::Not(expr) | Expr::IsNull { expr, .. } => {
                expr.walk_mut(v)
            }
            Expr::Op { left, right, .. } => {
                for e in left.iter_mut().chain(right.iter_mut()) {
                    e.walk_mut(v);
                }
            }
            Expr::In { expr, list, .. } => {
                expr.walk_mut(v);
                list.iter_mut().for_each(|e| e.walk_mut(v));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                for e in [expr, low, high] {
                    e.walk_mut(v);
                }
            }
            Expr::And(list) | Expr::Or(list) | Expr::Row(list) | Expr::Array(list) => {
                list.iter_mut().for_each(|e| e.walk_mut(v))
            }
            Expr::Func(func) => func.args.iter_mut().for_each(|e| e.walk_mut(v)),
            Expr::SubLink(st) => st.walk_mut(v),
            Expr::Column { .. }
            | Expr::Star { .. }
            | Expr::Param(_)
            | Expr::Const(_)
            | Expr::Other(_) => {}
        }
        v.expr(self);
    }
}

impl Expr {
    /// Every function call in this expression (outside subqueries).
    pub fn functions<'a>(&'a self, out: &mut Vec<&'a Func>) {
        match self {
            Expr::Func(f) => {
                out.push(f);
                f.args.iter().for_each(|a| a.functions(out));
            }
            Expr::Cast { expr, .. } | Expr::Not(expr) | Expr::IsNull { expr, .. } => {
                expr.functions(out)
            }
            Expr::Op { left, right, .. } => {
                left.iter()
                    .chain(right.iter())
                    .for_each(|e| e.functions(out));
            }
            Expr::In { expr, list, .. } => {
                expr.functions(out);
                list.iter().for_each(|e| e.functions(out));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                for e in [expr, low, high] {
                    e.functions(out);
                }
            }
            Expr::And(v) | Expr::Or(v) | Expr::Row(v) | Expr::Array(v) => {
                v.iter().for_each(|e| e.functions(out))
            }
            _ => {}
        }
    }
}
