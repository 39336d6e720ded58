//! Multi-row INSERT split by shard: one statement per shard carrying only that shard's VALUES
//! rows, rebuilt from the full parse tree (so quoting, casts and expressions survive exactly).
//! With `$n` parameters, each shard's statement is renumbered `$1..$k` and comes with the list
//! of the client's parameters it takes, in order.
use super::RouterError;
use pg_query_raw::protobuf::{node::Node, ParseResult, RawStmt, Token};

/// One shard's part of a split INSERT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertPart {
    pub shard: usize,
    pub sql: String,
    /// For each `$i` of `sql` (1-based, in order), the client's parameter number.
    pub params: Vec<u32>,
}

/// Splits statement `index` of `sql` (an INSERT ... VALUES) into one statement per group of
/// rows: `groups` holds, per shard, the indexes of the VALUES rows it receives.
pub fn split(
    sql: &str,
    index: usize,
    groups: &[(usize, Vec<usize>)],
) -> Result<Vec<InsertPart>, RouterError> {
    let tree = pg_query_raw::parse_protobuf(sql).map_err(RouterError::Syntax)?;
    let Some(raw) = tree.stmts.get(index) else {
        return Err(RouterError::Invalid(format!(
            "no statement {index} in query"
        )));
    };
    let mut parts = Vec::with_capacity(groups.len());
    for (shard, rows) in groups {
        let mut stmt: RawStmt = raw.clone();
        stmt.stmt_location = 0;
        stmt.stmt_len = 0;
        let values = values_lists(&mut stmt)
            .ok_or_else(|| RouterError::Invalid("INSERT without VALUES cannot be split".into()))?;
        let all = std::mem::take(values);
        *values = all
            .into_iter()
            .enumerate()
            .filter(|(i, _)| rows.contains(i))
            .map(|(_, row)| row)
            .collect();
        let one = ParseResult {
            version: tree.version,
            stmts: vec![stmt],
        };
        let text = pg_query_raw::deparse(&one).map_err(RouterError::Syntax)?;
        let (sql, params) = renumber(&text)?;
        parts.push(InsertPart {
            shard: *shard,
            sql,
            params,
        });
    }
    Ok(parts)
}

/// The INSERT of a parsed statement, if it is one.
pub fn insert_of(stmt: &mut RawStmt) -> Option<&mut pg_query_raw::protobuf::InsertStmt> {
    match stmt.stmt.as_mut()?.node.as_mut()? {
        Node::InsertStmt(insert) => Some(insert),
        _ => None,
    }
}

fn values_lists(stmt: &mut RawStmt) -> Option<&mut Vec<pg_query_raw::protobuf::Node>> {
    let insert = insert_of(stmt)?;
    let Some(Node::SelectStmt(select)) = insert.select_stmt.as_mut()?.node.as_mut() else {
        return None;
    };
    Some(&mut select.values_lists)
}

/// Renumbers the `$n` of `sql` as `$1..$k` in ascending order of `n`; returns the new text and
/// the original number of each new parameter.
fn renumber(sql: &str) -> Result<(String, Vec<u32>), RouterError> {
    if !sql.contains('$') {
        return Ok((sql.to_string(), Vec::new()));
    }
    let scanned = pg_query_raw::scan(sql).map_err(RouterError::Syntax)?;
    let mut spans = Vec::new();
    for t in &scanned.tokens {
        if t.token == Token::Param as i32 {
            let (start, end) = (t.start as usize, t.end as usize);
            let n: u32 = sql
                .get(start + 1..end)
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| RouterError::Invalid(format!("bad parameter in {sql}")))?;
            spans.push((start, end, n));
        }
    }
    let mut used: Vec<u32> = spans.iter().map(|s| s.2).collect();
    used.sort_unstable();
    used.dedup();
    let mut out = String::with_capacity(sql.len());
    let mut last = 0;
    for (start, end, n) in spans {
        out.push_str(&sql[last..start]);
        let new = used.iter().position(|u| *u == n).unwrap_or(0) + 1;
        out.push('$');
        out.push_str(&new.to_string());
        last = end;
    }
    out.push_str(&sql[last..]);
    Ok((out, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_rows_by_group() {
        let sql = "INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b''c'), (3, now()) RETURNING id";
        let parts = split(sql, 0, &[(0, vec![0, 2]), (1, vec![1])]).unwrap();
        assert_eq!(
            parts[0].sql,
            "INSERT INTO t (id, v) VALUES (1, 'a'), (3, now()) RETURNING id"
        );
        assert_eq!(
            parts[1].sql,
            "INSERT INTO t (id, v) VALUES (2, 'b''c') RETURNING id"
        );
        assert!(parts[0].params.is_empty());
    }

    #[test]
    fn renumbers_parameters() {
        let sql = "INSERT INTO t (id, v) VALUES ($1, $2), ($3, $4), ($5, $2)";
        let parts = split(sql, 0, &[(1, vec![1]), (0, vec![0, 2])]).unwrap();
        assert_eq!(parts[0].sql, "INSERT INTO t (id, v) VALUES ($1, $2)");
        assert_eq!(parts[0].params, vec![3, 4]);
        assert_eq!(
            parts[1].sql,
            "INSERT INTO t (id, v) VALUES ($1, $2), ($3, $2)"
        );
        assert_eq!(parts[1].params, vec![1, 2, 5]);
    }
}
