//! Parse-tree helpers for the planner: canonical SQL of an expression (to compare expressions
//! written differently), node builders for the shard query (hidden targets, `sum`/`count`,
//! `$n::bigint + m`), and a token scan that finds function calls and window functions even inside
//! expressions the router's lean view does not descend into (CASE, COALESCE ...).
use super::error::MergeError;
use pg_query_raw::protobuf::{self as pb, node::Node as N, Token};

pub fn node(n: N) -> pb::Node {
    pb::Node { node: Some(n) }
}

fn string(s: &str) -> pb::Node {
    node(N::String(pb::String { sval: s.into() }))
}

/// A `SELECT` with only these targets and default options.
pub fn select(targets: Vec<pb::Node>) -> pb::SelectStmt {
    pb::SelectStmt {
        target_list: targets,
        limit_option: pb::LimitOption::Default as i32,
        op: pb::SetOperation::SetopNone as i32,
        ..Default::default()
    }
}

/// SQL text of a whole `SELECT`.
pub fn deparse_select(stmt: pb::SelectStmt) -> Result<String, MergeError> {
    let tree = pb::ParseResult {
        version: 0,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(node(N::SelectStmt(Box::new(stmt))))),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    pg_query_raw::deparse(&tree).map_err(|e| MergeError::Unsupported(format!("{e}")))
}

/// Canonical SQL of an expression: equal for `a+1` and `a + 1`.
pub fn expr_text(expr: &pb::Node) -> Result<String, MergeError> {
    let sql = deparse_select(select(vec![res_target(expr.clone(), "")]))?;
    Ok(sql.strip_prefix("SELECT ").unwrap_or(&sql).to_string())
}

pub fn res_target(val: pb::Node, name: &str) -> pb::Node {
    node(N::ResTarget(Box::new(pb::ResTarget {
        name: name.into(),
        indirection: Vec::new(),
        val: Some(Box::new(val)),
        location: -1,
    })))
}

/// `name(args)` or `name(*)`.
pub fn func_call(name: &str, args: Vec<pb::Node>, star: bool) -> pb::Node {
    node(N::FuncCall(Box::new(pb::FuncCall {
        funcname: vec![string(name)],
        args,
        agg_star: star,
        funcformat: pb::CoercionForm::CoerceExplicitCall as i32,
        location: -1,
        ..Default::default()
    })))
}

pub fn int_const(v: i64) -> pb::Node {
    let val = match i32::try_from(v) {
        Ok(i) => pb::a_const::Val::Ival(pb::Integer { ival: i }),
        Err(_) => pb::a_const::Val::Fval(pb::Float {
            fval: v.to_string(),
        }),
    };
    node(N::AConst(pb::AConst {
        isnull: false,
        location: -1,
        val: Some(val),
    }))
}

/// `$n::bigint`
pub fn bigint_param(n: u32) -> pb::Node {
    cast(
        node(N::ParamRef(pb::ParamRef {
            number: n as i32,
            location: -1,
        })),
        "int8",
    )
}

/// `arg::pg_catalog.<type_name>`
pub fn cast(arg: pb::Node, type_name: &str) -> pb::Node {
    node(N::TypeCast(Box::new(pb::TypeCast {
        arg: Some(Box::new(arg)),
        type_name: Some(pb::TypeName {
            names: vec![string("pg_catalog"), string(type_name)],
            typemod: -1,
            location: -1,
            ..Default::default()
        }),
        location: -1,
    })))
}

/// `a + b`
pub fn plus(a: pb::Node, b: pb::Node) -> pb::Node {
    op("+", a, b)
}

/// `a <op> b`
pub fn op(name: &str, a: pb::Node, b: pb::Node) -> pb::Node {
    node(N::AExpr(Box::new(pb::AExpr {
        kind: pb::AExprKind::AexprOp as i32,
        name: vec![string(name)],
        lexpr: Some(Box::new(a)),
        rexpr: Some(Box::new(b)),
        location: -1,
        ..Default::default()
    })))
}

/// The conjuncts joined with AND (one conjunct: itself).
pub fn and(mut conjuncts: Vec<pb::Node>) -> Option<pb::Node> {
    match conjuncts.len() {
        0 => None,
        1 => conjuncts.pop(),
        _ => Some(node(N::BoolExpr(Box::new(pb::BoolExpr {
            xpr: None,
            boolop: pb::BoolExprType::AndExpr as i32,
            args: conjuncts,
            location: -1,
        })))),
    }
}

/// An expression split at its top-level ANDs.
pub fn conjuncts(expr: pb::Node) -> Vec<pb::Node> {
    match expr.node {
        Some(N::BoolExpr(b)) if b.boolop == pb::BoolExprType::AndExpr as i32 => {
            b.args.into_iter().flat_map(conjuncts).collect()
        }
        _ => vec![expr],
    }
}

/// The last name part of a qualified name list.
pub fn last_name(names: &[pb::Node]) -> String {
    match names.last().and_then(|n| n.node.as_ref()) {
        Some(N::String(s)) => s.sval.clone(),
        _ => String::new(),
    }
}

/// Function calls found by scanning SQL text.
#[derive(Debug, Default)]
pub struct Calls {
    /// Lower-case names of calls outside subqueries (`count`, `coalesce` ...).
    pub names: Vec<String>,
    /// The first window function (`row_number`), subqueries included.
    pub window: Option<String>,
}

/// Scans `sql` for `name(` calls outside parenthesised subqueries and for `OVER`.
pub fn calls(sql: &str) -> Result<Calls, MergeError> {
    let scanned = pg_query_raw::scan(sql).map_err(|e| MergeError::Parse(e.to_string()))?;
    let tokens = &scanned.tokens;
    let text = |i: usize| -> &str {
        let t = &tokens[i];
        sql.get(t.start as usize..t.end as usize).unwrap_or("")
    };
    let is = |i: usize, tok: Token| tokens.get(i).is_some_and(|t| t.token == tok as i32);
    let mut out = Calls::default();
    let mut depth = 0usize;
    let mut skip_from: Option<usize> = None;
    for i in 0..tokens.len() {
        if is(i, Token::Ascii40) {
            depth += 1;
            if skip_from.is_none()
                && (is(i + 1, Token::Select) || is(i + 1, Token::With) || is(i + 1, Token::Values))
            {
                skip_from = Some(depth);
            }
        } else if is(i, Token::Ascii41) {
            if skip_from == Some(depth) {
                skip_from = None;
            }
            depth = depth.saturating_sub(1);
        } else if is(i, Token::Over) && out.window.is_none() {
            out.window = Some(window_name(tokens, i, &text));
        }
        if skip_from.is_none() && is(i + 1, Token::Ascii40) {
            let name = text(i);
            if !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                out.names.push(name.to_ascii_lowercase());
            }
        }
    }
    Ok(out)
}

/// The function name before `OVER` at `over`: the identifier before the `(` matching the `)`.
fn window_name<'a>(
    tokens: &[pb::ScanToken],
    over: usize,
    text: &impl Fn(usize) -> &'a str,
) -> String {
    let mut depth = 0i32;
    let mut i = over;
    while i > 0 {
        i -= 1;
        let t = tokens[i].token;
        if t == Token::Ascii41 as i32 {
            depth += 1;
        } else if t == Token::Ascii40 as i32 {
            depth -= 1;
            if depth == 0 {
                if i == 0 {
                    break;
                }
                let name = text(i - 1).to_ascii_lowercase();
                if name == "filter" {
                    // `f(x) FILTER (...) OVER`: keep going to the call itself.
                    i -= 1;
                    continue;
                }
                return name;
            }
        }
    }
    "OVER".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expression_text_is_canonical() {
        let tree = pg_query_raw::parse_protobuf("SELECT a+1, (a + 1), A + 1 FROM t").unwrap();
        let Some(N::SelectStmt(s)) = tree.stmts[0].stmt.as_ref().unwrap().node.as_ref() else {
            panic!()
        };
        let texts: Vec<String> = s
            .target_list
            .iter()
            .map(|t| match t.node.as_ref() {
                Some(N::ResTarget(r)) => expr_text(r.val.as_ref().unwrap()).unwrap(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(texts, vec!["a + 1"; 3]);
    }

    #[test]
    fn scans_calls_and_windows() {
        let c = calls("SELECT coalesce(sum(x), 0), (SELECT max(y) FROM u) FROM t").unwrap();
        assert_eq!(c.names, vec!["coalesce", "sum"]);
        assert_eq!(c.window, None);
        let c = calls("SELECT x FROM (SELECT row_number() OVER (ORDER BY a) FROM t) s").unwrap();
        assert_eq!(c.window.as_deref(), Some("row_number"));
        let c = calls("SELECT count(*) FILTER (WHERE a) OVER w FROM t").unwrap();
        assert_eq!(c.window.as_deref(), Some("count"));
        let c = calls("SELECT 'sum(' || x FROM t").unwrap();
        assert!(c.names.is_empty());
    }

    #[test]
    fn builds_limit_expression() {
        let mut s = select(vec![res_target(func_call("count", vec![], true), "n")]);
        s.limit_count = Some(Box::new(plus(bigint_param(1), int_const(5))));
        s.limit_option = pb::LimitOption::Count as i32;
        assert_eq!(
            deparse_select(s).unwrap(),
            "SELECT count(*) AS n LIMIT $1::bigint + 5"
        );
    }
}
