//! The router's fast path: a lean, owned view of each statement with only what query routing
//! needs, read straight from the C tree without building the full `pg_query` tree.
//!
//! It keeps: the statement kind; relations with schema and alias (FROM, joins, subqueries, DML
//! targets); WHERE, HAVING and JOIN conditions as [`Expr`] trees; `$n` parameters; the target
//! list; ORDER BY / LIMIT / OFFSET / GROUP BY / DISTINCT; aggregates and function calls; INSERT
//! columns and VALUES rows; UPDATE SET; RETURNING; SET / RESET; transaction control. Anything
//! else inside an expression is kept as [`Expr::Other`] with its node name, so a consumer can tell
//! "something I do not understand" from "nothing".
use crate::bindings as c;
use crate::context::{cstr, with_raw_parse};
use crate::convert::list_items;
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::ffi::{c_char, CStr};

/// Operators common enough to be worth not allocating for.
const COMMON_OPS: &[&str] = &[
    "=", "<>", "<", ">", "<=", ">=", "!=", "+", "-", "*", "/", "%", "||", "~~", "~~*", "!~~",
    "!~~*", "~", "~*", "@>", "<@", "->", "->>", "#>", "#>>", "?", "&&",
];

/// An operator name, borrowed from [`COMMON_OPS`] when it is one of them.
unsafe fn op_name(p: *const c::Node) -> Cow<'static, str> {
    if p.is_null() || tag(p) != c::NodeTag_T_String || cast::<c::String>(p).sval.is_null() {
        return Cow::Borrowed("");
    }
    let bytes = CStr::from_ptr(cast::<c::String>(p).sval).to_bytes();
    match COMMON_OPS.iter().find(|op| op.as_bytes() == bytes) {
        Some(op) => Cow::Borrowed(op),
        None => Cow::Owned(String::from_utf8_lossy(bytes).into_owned()),
    }
}

mod types;
pub use types::*;

/// Parses `sql` and returns the router's view of each statement.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    // SAFETY: the tree is valid while the closure runs, and everything read is copied into owned
    // Rust values.
    with_raw_parse(sql, |tree, _| unsafe {
        let mut out = Vec::with_capacity(1);
        for cell in list_items(tree) {
            let raw_stmt = &*(cell.ptr_value as *const c::RawStmt);
            let mut stmt = Reader::default().statement(raw_stmt.stmt)?;
            stmt.location = raw_stmt.stmt_location.max(0) as usize;
            stmt.len = if raw_stmt.stmt_len == 0 {
                sql.len() - stmt.location
            } else {
                raw_stmt.stmt_len as usize
            };
            out.push(stmt);
        }
        Ok(out)
    })
}

#[derive(Default)]
struct Reader {
    max_param: u32,
    depth: u32,
    /// The WITH query names in scope (innermost last) and how often each is read so far.
    ctes: Vec<(String, usize)>,
}

unsafe fn s(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(cstr(p))
    }
}

unsafe fn tag(p: *const c::Node) -> c::NodeTag {
    (*p).type_
}

unsafe fn cast<'a, T>(p: *const c::Node) -> &'a T {
    &*(p as *const T)
}

/// The `sval` of a String node list element.
unsafe fn str_node(p: *const c::Node) -> Option<String> {
    if !p.is_null() && tag(p) == c::NodeTag_T_String {
        s(cast::<c::String>(p).sval)
    } else {
        None
    }
}

unsafe fn node_name(p: *const c::Node) -> &'static str {
    // Names of node kinds a router meets; the rest are reported by number-free name "Node".
    match tag(p) {
        c::NodeTag_T_CaseExpr => "CaseExpr",
        c::NodeTag_T_CoalesceExpr => "CoalesceExpr",
        c::NodeTag_T_MinMaxExpr => "MinMaxExpr",
        c::NodeTag_T_SQLValueFunction => "SQLValueFunction",
        c::NodeTag_T_A_Indirection => "A_Indirection",
        c::NodeTag_T_CollateClause => "CollateClause",
        c::NodeTag_T_BooleanTest => "BooleanTest",
        c::NodeTag_T_GroupingFunc => "GroupingFunc",
        c::NodeTag_T_GroupingSet => "GroupingSet",
        c::NodeTag_T_SetToDefault => "SetToDefault",
        c::NodeTag_T_MultiAssignRef => "MultiAssignRef",
        c::NodeTag_T_XmlExpr => "XmlExpr",
        c::NodeTag_T_JsonFuncExpr => "JsonFuncExpr",
        c::NodeTag_T_JsonObjectConstructor => "JsonObjectConstructor",
        c::NodeTag_T_JsonArrayConstructor => "JsonArrayConstructor",
        c::NodeTag_T_JsonIsPredicate => "JsonIsPredicate",
        _ => "Node",
    }
}

impl Reader {
    unsafe fn statement(&mut self, p: *const c::Node) -> Result<Statement> {
        self.descend(|r| r.statement_inner(p))
    }

    unsafe fn statement_inner(&mut self, p: *const c::Node) -> Result<Statement> {
        if p.is_null() {
            return Ok(Statement::new(StatementKind::Utility("Empty")));
        }
        let mut st = match tag(p) {
            c::NodeTag_T_SelectStmt => self.select(cast(p))?,
            c::NodeTag_T_InsertStmt => self.insert(cast(p))?,
            c::NodeTag_T_UpdateStmt => self.update(cast(p))?,
            c::NodeTag_T_DeleteStmt => self.delete(cast(p))?,
            c::NodeTag_T_MergeStmt => {
                let m: &c::MergeStmt = cast(p);
                let mut st = Statement::new(StatementKind::Merge);
                self.range_var(m.relation, &mut st);
                self.read_from_item(m.sourceRelation, &mut st)?;
                st.join_conditions.push(self.expr(m.joinCondition)?);
                st.with = !m.withClause.is_null();
                st
            }
            c::NodeTag_T_CopyStmt => {
                let cp: &c::CopyStmt = cast(p);
                let mut st = Statement::new(StatementKind::Copy { from: cp.is_from });
                self.range_var(cp.relation, &mut st);
                for col in list_items(cp.attlist) {
                    st.insert_columns
                        .extend(str_node(col.ptr_value as *const c::Node));
                }
                if !cp.query.is_null() {
                    st.subqueries.push(self.statement(cp.query)?);
                }
                if !cp.whereClause.is_null() {
                    st.where_clause = Some(self.expr(cp.whereClause)?);
                }
                st
            }
            c::NodeTag_T_VariableSetStmt => {
                let v: &c::VariableSetStmt = cast(p);
                let mut st = Statement::new(StatementKind::Set);
                st.set = Some(self.set(v)?);
                st
            }
            c::NodeTag_T_VariableShowStmt => Statement::new(StatementKind::Show),
            c::NodeTag_T_TransactionStmt => {
                let t: &c::TransactionStmt = cast(p);
                let name = || s(t.savepoint_name).unwrap_or_default();
                let gid = || s(t.gid).unwrap_or_default();
                let kind = match t.kind {
                    c::TransactionStmtKind_TRANS_STMT_BEGIN
                    | c::TransactionStmtKind_TRANS_STMT_START => Transaction::Begin,
                    c::TransactionStmtKind_TRANS_STMT_COMMIT => Transaction::Commit,
                    c::TransactionStmtKind_TRANS_STMT_ROLLBACK => Transaction::Rollback,
                    c::TransactionStmtKind_TRANS_STMT_SAVEPOINT => Transaction::Savepoint(name()),
                    c::TransactionStmtKind_TRANS_STMT_RELEASE => Transaction::Release(name()),
                    c::TransactionStmtKind_TRANS_STMT_ROLLBACK_TO => {
                        Transaction::RollbackTo(name())
                    }
                    c::TransactionStmtKind_TRANS_STMT_PREPARE => Transaction::Prepare(gid()),
                    c::TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED => {
                        Transaction::CommitPrepared(gid())
                    }
                    c::TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED => {
                        Transaction::RollbackPrepared(gid())
                    }
                    other => return Err(Error::UnknownEnum("TransactionStmtKind", other as i64)),
                };
                Statement::new(StatementKind::Transaction(kind))
            }
            c::NodeTag_T_PrepareStmt => {
                let pr: &c::PrepareStmt = cast(p);
                let mut st = Statement::new(StatementKind::Prepare);
                st.subqueries.push(self.statement(pr.query)?);
                st
            }
            c::NodeTag_T_ExecuteStmt => Statement::new(StatementKind::Execute),
            c::NodeTag_T_DeallocateStmt => Statement::new(StatementKind::Deallocate),
            c::NodeTag_T_ExplainStmt => {
                let ex: &c::ExplainStmt = cast(p);
                let mut st = Statement::new(StatementKind::Explain);
                st.subqueries.push(self.statement(ex.query)?);
                st
            }
            _ => Statement::new(StatementKind::Utility(utility_name(p))),
        };
        st.max_param = self.max_param;
        Ok(st)
    }

    unsafe fn set(&mut self, v: &c::VariableSetStmt) -> Result<SetStatement> {
        let mut values = Vec::new();
        for a in list_items(v.args) {
            let e = self.expr(a.ptr_value as *const c::Node)?;
            match e {
                Expr::Const(k) => values.push(k),
                Expr::Cast { expr, .. } => {
                    if let Expr::Const(k) = *expr {
                        values.push(k)
                    }
                }
                _ => {}
            }
        }
        Ok(SetStatement {
            name: s(v.name),
            values,
            local: v.is_local,
            reset: matches!(
                v.kind,
                c::VariableSetKind_VAR_RESET
                    | c::VariableSetKind_VAR_RESET_ALL
                    | c::VariableSetKind_VAR_SET_DEFAULT
            ),
            multi: v.kind == c::VariableSetKind_VAR_SET_MULTI,
        })
    }

    unsafe fn select(&mut self, sel: &c::SelectStmt) -> Result<Statement> {
        let mut st = Statement::new(StatementKind::Select);
        st.with = !sel.withClause.is_null();
        let scope = self.ctes.len();
        if st.with {
            let ctes = list_items((*sel.withClause).ctes);
            // Every name is in scope in the body, in later WITH queries and (WITH RECURSIVE)
            // in its own.
            for cte in ctes {
                let cte: &c::CommonTableExpr = cast(cte.ptr_value as *const c::Node);
                self.ctes.push((s(cte.ctename).unwrap_or_default(), 0));
            }
            for cte in ctes {
                let cte: &c::CommonTableExpr = cast(cte.ptr_value as *const c::Node);
                st.subqueries.push(self.statement(cte.ctequery)?);
            }
        }
        let result = self.select_body(sel, &mut st);
        st.cte_reads = self.ctes.drain(scope..).map(|(_, n)| n).collect();
        result.map(|()| st)
    }

    unsafe fn select_body(&mut self, sel: &c::SelectStmt, st: &mut Statement) -> Result<()> {
        if sel.op != c::SetOperation_SETOP_NONE {
            st.set_operation = true;
            st.union_all = sel.op == c::SetOperation_SETOP_UNION && sel.all;
            st.subqueries
                .push(self.statement(sel.larg as *const c::Node)?);
            st.subqueries
                .push(self.statement(sel.rarg as *const c::Node)?);
        }
        for row in list_items(sel.valuesLists) {
            st.values.push(self.exprs(row.ptr_value as *const c::List)?);
        }
        st.targets = self.targets(sel.targetList)?;
        for item in list_items(sel.fromClause) {
            self.read_from_item(item.ptr_value as *const c::Node, st)?;
        }
        if !sel.whereClause.is_null() {
            st.where_clause = Some(self.expr(sel.whereClause)?);
        }
        st.group_by = self.exprs(sel.groupClause)?;
        if !sel.havingClause.is_null() {
            st.having = Some(self.expr(sel.havingClause)?);
        }
        for sb in list_items(sel.sortClause) {
            let sb: &c::SortBy = cast(sb.ptr_value as *const c::Node);
            st.order_by.push(SortKey {
                expr: self.expr(sb.node)?,
                descending: sb.sortby_dir == c::SortByDir_SORTBY_DESC,
                nulls_first: match sb.sortby_nulls {
                    c::SortByNulls_SORTBY_NULLS_FIRST => Some(true),
                    c::SortByNulls_SORTBY_NULLS_LAST => Some(false),
                    _ => None,
                },
                using: sb.sortby_dir == c::SortByDir_SORTBY_USING,
            });
        }
        if !sel.limitCount.is_null() {
            st.limit = Some(self.expr(sel.limitCount)?);
        }
        if !sel.limitOffset.is_null() {
            st.offset = Some(self.expr(sel.limitOffset)?);
        }
        let distinct = list_items(sel.distinctClause);
        if !sel.distinctClause.is_null() {
            // `DISTINCT` is a list holding one NULL; `DISTINCT ON (a, b)` lists the expressions.
            st.distinct = if distinct.len() == 1 && distinct[0].ptr_value.is_null() {
                Distinct::All
            } else {
                Distinct::On(self.exprs(sel.distinctClause)?)
            };
        }
        st.locking = !sel.lockingClause.is_null();
        Ok(())
    }

    unsafe fn insert(&mut self, ins: &c::InsertStmt) -> Result<Statement> {
        let mut st = Statement::new(StatementKind::Insert);
        self.range_var(ins.relation, &mut st);
        for col in list_items(ins.cols) {
            let rt: &c::ResTarget = cast(col.ptr_value as *const c::Node);
            st.insert_columns.push(s(rt.name).unwrap_or_default());
        }
        if !ins.selectStmt.is_null() {
            let sel: &c::SelectStmt = cast(ins.selectStmt);
            if !sel.valuesLists.is_null() && sel.op == c::SetOperation_SETOP_NONE {
                for row in list_items(sel.valuesLists) {
                    st.values.push(self.exprs(row.ptr_value as *const c::List)?);
                }
            } else {
                st.insert_select = Some(Box::new(self.select(sel)?));
            }
        }
        st.on_conflict = !ins.onConflictClause.is_null();
        st.with = !ins.withClause.is_null();
        st.returning = self.returning(ins.returningClause)?;
        Ok(st)
    }

    unsafe fn update(&mut self, up: &c::UpdateStmt) -> Result<Statement> {
        let mut st = Statement::new(StatementKind::Update);
        self.range_var(up.relation, &mut st);
        st.update_set = self.targets(up.targetList)?;
        self.write_clauses(
            &mut st,
            up.fromClause,
            up.whereClause,
            up.withClause,
            up.returningClause,
        )?;
        Ok(st)
    }

    /// What UPDATE and DELETE share after their target: the FROM / USING items, WHERE, WITH
    /// and RETURNING.
    unsafe fn write_clauses(
        &mut self,
        st: &mut Statement,
        from: *mut c::List,
        where_clause: *mut c::Node,
        with: *mut c::WithClause,
        returning: *mut c::ReturningClause,
    ) -> Result<()> {
        for item in list_items(from) {
            self.read_from_item(item.ptr_value as *const c::Node, st)?;
        }
        if !where_clause.is_null() {
            st.where_clause = Some(self.expr(where_clause)?);
        }
        st.with = !with.is_null();
        st.returning = self.returning(returning)?;
        Ok(())
    }

    unsafe fn delete(&mut self, del: &c::DeleteStmt) -> Result<Statement> {
        let mut st = Statement::new(StatementKind::Delete);
        self.range_var(del.relation, &mut st);
        self.write_clauses(
            &mut st,
            del.usingClause,
            del.whereClause,
            del.withClause,
            del.returningClause,
        )?;
        Ok(st)
    }

    unsafe fn returning(&mut self, r: *const c::ReturningClause) -> Result<Vec<Target>> {
        if r.is_null() {
            Ok(Vec::new())
        } else {
            self.targets((*r).exprs)
        }
    }

    unsafe fn range_var(&mut self, rv: *const c::RangeVar, st: &mut Statement) {
        if rv.is_null() {
            return;
        }
        let rv = &*rv;
        if rv.schemaname.is_null() {
            let name = s(rv.relname).unwrap_or_default();
            if let Some(cte) = self.ctes.iter_mut().rev().find(|(n, _)| *n == name) {
                // A WITH query of an enclosing SELECT, not a table.
                cte.1 += 1;
                return;
            }
        }
        st.relations.push(Relation {
            schema: s(rv.schemaname),
            name: s(rv.relname).unwrap_or_default(),
            alias: if rv.alias.is_null() {
                None
            } else {
                s((*rv.alias).aliasname)
            },
        });
    }

    unsafe fn read_from_item(&mut self, p: *const c::Node, st: &mut Statement) -> Result<()> {
        if p.is_null() {
            return Ok(());
        }
        match tag(p) {
            c::NodeTag_T_RangeVar => self.range_var(p as *const c::RangeVar, st),
            c::NodeTag_T_JoinExpr => {
                let j: &c::JoinExpr = cast(p);
                let start = st.relations.len();
                self.read_from_item(j.larg, st)?;
                let middle = st.relations.len();
                self.read_from_item(j.rarg, st)?;
                let names = |r: &[Relation]| -> Vec<String> {
                    r.iter()
                        .map(|r| r.alias.clone().unwrap_or_else(|| r.name.clone()))
                        .collect()
                };
                let left = names(&st.relations[start..middle]);
                let right = names(&st.relations[middle..]);
                let using: Vec<String> = list_items(j.usingClause)
                    .iter()
                    .filter_map(|cell| str_node(cell.ptr_value as *const c::Node))
                    .collect();
                // `JOIN ... USING (k, ...)` between two tables: the conditions `l.k = r.k`.
                if let ([l], [r]) = (left.as_slice(), right.as_slice()) {
                    if j.isNatural {
                        st.natural_joins.push((l.clone(), r.clone()));
                    }
                    for column in using {
                        let side = |t: &String| {
                            Some(Box::new(Expr::Column {
                                table: Some(t.clone()),
                                name: column.clone(),
                            }))
                        };
                        st.join_conditions.push(Expr::Op {
                            op: Cow::Borrowed("="),
                            left: side(l),
                            right: side(r),
                            quantifier: None,
                        });
                    }
                } else if !using.is_empty() {
                    // A side that is itself a join: which of its tables has the column is for
                    // the router to tell (it knows the sharding keys).
                    st.using_joins.push(UsingJoin {
                        left: left.clone(),
                        right: right.clone(),
                        columns: using,
                    });
                }
                let join = match j.jointype {
                    c::JoinType_JOIN_LEFT => Some((left, right)),
                    c::JoinType_JOIN_RIGHT => Some((right, left)),
                    c::JoinType_JOIN_FULL => {
                        let both: Vec<String> = left.into_iter().chain(right).collect();
                        Some((both.clone(), both))
                    }
                    _ => None,
                };
                if let Some((preserved, nullable)) = join {
                    st.outer_joins.push(OuterJoin {
                        preserved,
                        nullable,
                    });
                }
                if !j.quals.is_null() {
                    st.join_conditions.push(self.expr(j.quals)?);
                }
            }
            c::NodeTag_T_RangeSubselect => {
                let rs: &c::RangeSubselect = cast(p);
                st.subqueries.push(self.statement(rs.subquery)?);
            }
            _ => {}
        }
        Ok(())
    }

    unsafe fn targets(&mut self, l: *const c::List) -> Result<Vec<Target>> {
        let mut out = Vec::with_capacity(list_items(l).len());
        for cell in list_items(l) {
            let rt: &c::ResTarget = cast(cell.ptr_value as *const c::Node);
            out.push(Target {
                expr: self.expr(rt.val)?,
                name: s(rt.name),
            });
        }
        Ok(out)
    }

    unsafe fn exprs(&mut self, l: *const c::List) -> Result<Vec<Expr>> {
        let mut out = Vec::with_capacity(list_items(l).len());
        for cell in list_items(l) {
            out.push(self.expr(cell.ptr_value as *const c::Node)?);
        }
        Ok(out)
    }

    unsafe fn boxed(&mut self, p: *const c::Node) -> Result<Box<Expr>> {
        self.expr(p).map(Box::new)
    }

    unsafe fn expr(&mut self, p: *const c::Node) -> Result<Expr> {
        self.descend(|r| r.expr_inner(p))
    }

    /// One level deeper: grows the stack when needed and refuses trees deeper than
    /// [`crate::convert::MAX_DEPTH`] (dropping them would overflow the stack).
    fn descend<T>(&mut self, f: impl FnOnce(&mut Reader) -> Result<T>) -> Result<T> {
        self.depth += 1;
        let out = if self.depth > crate::convert::MAX_DEPTH {
            Err(Error::TooDeep(crate::convert::MAX_DEPTH))
        } else {
            stacker::maybe_grow(crate::convert::RED_ZONE, crate::convert::NEW_STACK, || {
                f(self)
            })
        };
        self.depth -= 1;
        out
    }

    unsafe fn expr_inner(&mut self, p: *const c::Node) -> Result<Expr> {
        if p.is_null() {
            return Ok(Expr::Const(Const::Null));
        }
        Ok(match tag(p) {
            c::NodeTag_T_ColumnRef => {
                let cr: &c::ColumnRef = cast(p);
                let fields = list_items(cr.fields);
                let last = fields.last().map(|f| f.ptr_value as *const c::Node);
                let table = if fields.len() >= 2 {
                    str_node(fields[fields.len() - 2].ptr_value as *const c::Node)
                } else {
                    None
                };
                match last {
                    Some(l) if tag(l) == c::NodeTag_T_A_Star => Expr::Star { table },
                    Some(l) => Expr::Column {
                        table,
                        name: str_node(l).unwrap_or_default(),
                    },
                    None => Expr::Other("ColumnRef"),
                }
            }
            c::NodeTag_T_ParamRef => {
                let n = cast::<c::ParamRef>(p).number.max(0) as u32;
                self.max_param = self.max_param.max(n);
                Expr::Param(n)
            }
            c::NodeTag_T_A_Const => Expr::Const(a_const(cast(p))),
            c::NodeTag_T_TypeCast => {
                let tc: &c::TypeCast = cast(p);
                let type_name = if tc.typeName.is_null() {
                    String::new()
                } else {
                    let tn = &*tc.typeName;
                    let mut name: String = list_items(tn.names)
                        .last()
                        .and_then(|n| str_node(n.ptr_value as *const c::Node))
                        .unwrap_or_default();
                    // A modifier (`varchar(2)` cuts, `char` is `char(1)`) or array bounds
                    // change what the cast makes: marked, so no one reads it as the bare type.
                    if !tn.typmods.is_null() {
                        name.push_str("()");
                    }
                    if !tn.arrayBounds.is_null() {
                        name.push_str("[]");
                    }
                    name
                };
                Expr::Cast {
                    expr: self.boxed(tc.arg)?,
                    type_name,
                }
            }
            c::NodeTag_T_A_Expr => self.a_expr(cast(p))?,
            c::NodeTag_T_BoolExpr => {
                let b: &c::BoolExpr = cast(p);
                let args = self.exprs(b.args)?;
                match b.boolop {
                    c::BoolExprType_AND_EXPR => Expr::And(args),
                    c::BoolExprType_OR_EXPR => Expr::Or(args),
                    _ => Expr::Not(Box::new(
                        args.into_iter().next().unwrap_or(Expr::Const(Const::Null)),
                    )),
                }
            }
            c::NodeTag_T_NullTest => {
                let n: &c::NullTest = cast(p);
                Expr::IsNull {
                    expr: self.boxed(n.arg as *const c::Node)?,
                    negated: n.nulltesttype == c::NullTestType_IS_NOT_NULL,
                }
            }
            c::NodeTag_T_FuncCall => {
                let f: &c::FuncCall = cast(p);
                let names = list_items(f.funcname);
                let name = names
                    .last()
                    .and_then(|n| str_node(n.ptr_value as *const c::Node))
                    .unwrap_or_default();
                let schema = if names.len() >= 2 {
                    str_node(names[names.len() - 2].ptr_value as *const c::Node)
                } else {
                    None
                };
                Expr::Func(Box::new(Func {
                    name,
                    schema,
                    args: self.exprs(f.args)?,
                    star: f.agg_star,
                    distinct: f.agg_distinct,
                    window: !f.over.is_null(),
                    filter: !f.agg_filter.is_null(),
                    within_group: f.agg_within_group,
                    ordered: !f.agg_order.is_null(),
                }))
            }
            c::NodeTag_T_RowExpr => Expr::Row(self.exprs(cast::<c::RowExpr>(p).args)?),
            c::NodeTag_T_A_ArrayExpr => {
                Expr::Array(self.exprs(cast::<c::A_ArrayExpr>(p).elements)?)
            }
            c::NodeTag_T_List => Expr::Row(self.exprs(p as *const c::List)?),
            c::NodeTag_T_SubLink => {
                let sl: &c::SubLink = cast(p);
                // The WITH names in scope are the enclosing statement's (and their reads count).
                let mut sub = Reader {
                    max_param: 0,
                    depth: self.depth,
                    ctes: std::mem::take(&mut self.ctes),
                };
                let st = sub.statement(sl.subselect);
                self.ctes = std::mem::take(&mut sub.ctes);
                let st = st?;
                self.max_param = self.max_param.max(sub.max_param);
                let quantifier = match sl.subLinkType {
                    c::SubLinkType_ANY_SUBLINK => Some(Quantifier::Any),
                    c::SubLinkType_ALL_SUBLINK => Some(Quantifier::All),
                    _ => None,
                };
                match quantifier {
                    // `x IN (SELECT ...)` / `x op ANY|ALL (SELECT ...)`: kept as the comparison
                    // (`=` for IN), so a consumer sees what the subquery is compared with.
                    Some(q) if !sl.testexpr.is_null() => {
                        let op = list_items(sl.operName)
                            .last()
                            .map(|cell| op_name(cell.ptr_value as *const c::Node))
                            .filter(|o| !o.is_empty())
                            .unwrap_or(Cow::Borrowed("="));
                        Expr::Op {
                            op,
                            left: Some(self.boxed(sl.testexpr)?),
                            right: Some(Box::new(Expr::SubLink(Box::new(st)))),
                            quantifier: Some(q),
                        }
                    }
                    _ => Expr::SubLink(Box::new(st)),
                }
            }
            _ => Expr::Other(node_name(p)),
        })
    }

    unsafe fn a_expr(&mut self, a: &c::A_Expr) -> Result<Expr> {
        let op = || {
            list_items(a.name)
                .last()
                .map(|n| op_name(n.ptr_value as *const c::Node))
                .unwrap_or_default()
        };
        let side = |r: &mut Reader, p: *const c::Node| -> Result<Option<Box<Expr>>> {
            if p.is_null() {
                Ok(None)
            } else {
                r.boxed(p).map(Some)
            }
        };
        Ok(match a.kind {
            c::A_Expr_Kind_AEXPR_IN => {
                let list = if !a.rexpr.is_null() && tag(a.rexpr) == c::NodeTag_T_List {
                    self.exprs(a.rexpr as *const c::List)?
                } else {
                    vec![self.expr(a.rexpr)?]
                };
                Expr::In {
                    expr: self.boxed(a.lexpr)?,
                    list,
                    negated: op() == "<>",
                }
            }
            k @ (c::A_Expr_Kind_AEXPR_BETWEEN
            | c::A_Expr_Kind_AEXPR_NOT_BETWEEN
            | c::A_Expr_Kind_AEXPR_BETWEEN_SYM
            | c::A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM) => {
                let bounds = self.exprs(a.rexpr as *const c::List)?;
                let mut it = bounds.into_iter();
                let low = it.next().unwrap_or(Expr::Const(Const::Null));
                let high = it.next().unwrap_or(Expr::Const(Const::Null));
                Expr::Between {
                    expr: self.boxed(a.lexpr)?,
                    low: Box::new(low),
                    high: Box::new(high),
                    negated: matches!(
                        k,
                        c::A_Expr_Kind_AEXPR_NOT_BETWEEN | c::A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM
                    ),
                    symmetric: matches!(
                        k,
                        c::A_Expr_Kind_AEXPR_BETWEEN_SYM | c::A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM
                    ),
                }
            }
            k => {
                let quantifier = match k {
                    c::A_Expr_Kind_AEXPR_OP_ANY => Some(Quantifier::Any),
                    c::A_Expr_Kind_AEXPR_OP_ALL => Some(Quantifier::All),
                    _ => None,
                };
                let op = match k {
                    c::A_Expr_Kind_AEXPR_DISTINCT => Cow::Borrowed("IS DISTINCT FROM"),
                    c::A_Expr_Kind_AEXPR_NOT_DISTINCT => Cow::Borrowed("IS NOT DISTINCT FROM"),
                    c::A_Expr_Kind_AEXPR_NULLIF => Cow::Borrowed("NULLIF"),
                    _ => op(),
                };
                Expr::Op {
                    op,
                    left: side(self, a.lexpr)?,
                    right: side(self, a.rexpr)?,
                    quantifier,
                }
            }
        })
    }
}

unsafe fn a_const(k: &c::A_Const) -> Const {
    if k.isnull {
        return Const::Null;
    }
    match k.val.node.type_ {
        c::NodeTag_T_Integer => Const::Integer(k.val.ival.ival as i64),
        c::NodeTag_T_Float => Const::Numeric(cstr(k.val.fval.fval)),
        c::NodeTag_T_Boolean => Const::Bool(k.val.boolval.boolval),
        c::NodeTag_T_String => Const::String(cstr(k.val.sval.sval)),
        c::NodeTag_T_BitString => Const::Bits(cstr(k.val.bsval.bsval)),
        _ => Const::Null,
    }
}

unsafe fn utility_name(p: *const c::Node) -> &'static str {
    match tag(p) {
        c::NodeTag_T_CreateStmt => "CreateStmt",
        c::NodeTag_T_AlterTableStmt => "AlterTableStmt",
        c::NodeTag_T_DropStmt => "DropStmt",
        c::NodeTag_T_IndexStmt => "IndexStmt",
        c::NodeTag_T_TruncateStmt => "TruncateStmt",
        c::NodeTag_T_ViewStmt => "ViewStmt",
        c::NodeTag_T_CreateSeqStmt => "CreateSeqStmt",
        c::NodeTag_T_ListenStmt => "ListenStmt",
        c::NodeTag_T_NotifyStmt => "NotifyStmt",
        c::NodeTag_T_UnlistenStmt => "UnlistenStmt",
        c::NodeTag_T_DiscardStmt => "DiscardStmt",
        c::NodeTag_T_LockStmt => "LockStmt",
        c::NodeTag_T_DeclareCursorStmt => "DeclareCursorStmt",
        c::NodeTag_T_FetchStmt => "FetchStmt",
        c::NodeTag_T_ClosePortalStmt => "ClosePortalStmt",
        c::NodeTag_T_VacuumStmt => "VacuumStmt",
        c::NodeTag_T_DoStmt => "DoStmt",
        c::NodeTag_T_CallStmt => "CallStmt",
        c::NodeTag_T_CreateTableAsStmt => "CreateTableAsStmt",
        c::NodeTag_T_RenameStmt => "RenameStmt",
        c::NodeTag_T_AlterSeqStmt => "AlterSeqStmt",
        c::NodeTag_T_CreateEnumStmt => "CreateEnumStmt",
        c::NodeTag_T_AlterEnumStmt => "AlterEnumStmt",
        c::NodeTag_T_CompositeTypeStmt => "CompositeTypeStmt",
        c::NodeTag_T_CreateDomainStmt => "CreateDomainStmt",
        c::NodeTag_T_AlterDomainStmt => "AlterDomainStmt",
        c::NodeTag_T_CreateFunctionStmt => "CreateFunctionStmt",
        c::NodeTag_T_CreateTrigStmt => "CreateTrigStmt",
        c::NodeTag_T_RuleStmt => "RuleStmt",
        c::NodeTag_T_CreateSchemaStmt => "CreateSchemaStmt",
        c::NodeTag_T_AlterObjectSchemaStmt => "AlterObjectSchemaStmt",
        _ => "Utility",
    }
}
