//! `x NOT IN (SELECT k FROM t ...)` across shards, where `k` is the sharding key of `t`,
//! sharded like `x`: the rows that match `x` live on `x`'s shard, so each shard can answer
//! for its own rows, except for NULLs. One NULL `k` anywhere makes `NOT IN` NULL (never true)
//! for every `x` it does not match, on every shard. So pgdog first asks every shard whether the
//! subquery gives a NULL (`NullGuard::probe`); when one does, the statement runs with a NULL
//! added to the subquery on every shard (`NullGuard::with_null`), and each shard then answers
//! as one database holding all the rows would.
use super::RouterError;
use crate::merge::NullGuard;

/// The guard of the one `NOT IN (SELECT ...)` of `sql` (the text the shards run).
pub(super) fn guard(sql: &str) -> Result<NullGuard, RouterError> {
    let refused = |why: &str| {
        RouterError::Unsupported(format!(
            "NOT IN (SELECT ...) across shards: {why}; run it on one shard with its sharding key"
        ))
    };
    let scanned = pg_query_raw::scan(sql).map_err(RouterError::Syntax)?;
    let text = |i: usize| {
        scanned
            .tokens
            .get(i)
            .and_then(|t| sql.get(t.start as usize..t.end as usize))
            .unwrap_or("")
    };
    let mut found = None;
    for i in 0..scanned.tokens.len() {
        let opens = text(i).eq_ignore_ascii_case("not")
            && text(i + 1).eq_ignore_ascii_case("in")
            && text(i + 2) == "(";
        if opens && found.replace(i + 2).is_some() {
            return Err(refused("more than one in a statement"));
        }
    }
    let open = found.ok_or_else(|| refused("its subquery was not found in the text"))?;
    let mut depth = 0usize;
    let mut close = None;
    for i in open..scanned.tokens.len() {
        match text(i) {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            t if t.starts_with('$') => return Err(refused("parameters in its subquery")),
            _ => {}
        }
    }
    let close = close.ok_or_else(|| refused("unbalanced parentheses"))?;
    let start = scanned.tokens[open].end as usize;
    let end = scanned.tokens[close].start as usize;
    let subquery = sql.get(start..end).ok_or_else(|| refused("bad offsets"))?;
    Ok(NullGuard {
        probe: format!(
            "SELECT EXISTS (SELECT 1 FROM ({subquery}) AS __pgdog_not_in (k) WHERE k IS NULL)"
        ),
        with_null: format!(
            "{}SELECT * FROM ({subquery}) AS __pgdog_not_in UNION ALL SELECT NULL{}",
            &sql[..start],
            &sql[end..]
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subquery_is_probed_and_given_a_null() {
        let g = guard("SELECT count(*) FROM users WHERE id NOT IN (SELECT user_id FROM orders WHERE note = ')')").unwrap();
        assert_eq!(
            g.probe,
            "SELECT EXISTS (SELECT 1 FROM (SELECT user_id FROM orders WHERE note = ')') AS __pgdog_not_in (k) WHERE k IS NULL)"
        );
        assert_eq!(
            g.with_null,
            "SELECT count(*) FROM users WHERE id NOT IN (SELECT * FROM (SELECT user_id FROM orders WHERE note = ')') AS __pgdog_not_in UNION ALL SELECT NULL)"
        );
        assert!(guard("SELECT 1 WHERE a NOT IN (SELECT 1) AND b NOT IN (SELECT 2)").is_err());
        assert!(guard("SELECT 1 WHERE a NOT IN (SELECT $1)").is_err());
    }
}
