//! Issue 13's families: set operations across shards (UNION, INTERSECT, EXCEPT, with and
//! without ALL, nested, with ORDER BY / LIMIT, branches pinned to one shard or reading only
//! omnisharded tables), NATURAL JOIN, and joins / subqueries on text (`items.sku`) and uuid
//! (`sessions.sid`) keys. The data spreads equal values over every shard (tenants, countries,
//! statuses, ages, tags), so a per-shard INTERSECT misses matches, a per-shard EXCEPT keeps
//! rows another shard removes and a per-shard UNION repeats rows: a wrong plan gives a
//! different answer.
use super::*;

pub(crate) fn reads(k: &Ids, m: &More) -> Qs {
    use Order::*;
    use P::*;
    let Ids { a, b, c, w, w2, .. } = *k;
    let mut q = Qs::default();
    // --- UNION / INTERSECT / EXCEPT over every shard
    q.e("SELECT tenant FROM users WHERE age > 60 UNION SELECT status FROM orders WHERE amount > 900 ORDER BY 1 NULLS FIRST");
    q.m("SELECT country FROM users WHERE age < 30 UNION SELECT country FROM users WHERE age > 85");
    q.e("SELECT country FROM users WHERE age < 30 INTERSECT SELECT country FROM users WHERE age > 85 ORDER BY country NULLS LAST");
    q.e("SELECT age FROM users WHERE tenant = 'globex' INTERSECT ALL SELECT age FROM users WHERE tenant = 'umbrella' ORDER BY 1");
    q.e("SELECT age FROM users WHERE tenant = 'globex' EXCEPT SELECT age FROM users WHERE tenant = 'umbrella' ORDER BY 1");
    q.e("SELECT age FROM users WHERE tenant = 'globex' EXCEPT ALL SELECT age FROM users WHERE tenant = 'umbrella' ORDER BY 1");
    q.m("SELECT status, user_id % 7 FROM orders WHERE amount > 800 EXCEPT SELECT status, user_id % 7 FROM orders WHERE amount < 100");
    q.e("SELECT tenant, country FROM users WHERE age > 50 INTERSECT SELECT tenant, country FROM users WHERE age < 20 ORDER BY 1, 2");
    q.e("SELECT count(*) FROM users WHERE age IN (SELECT age FROM users WHERE tenant = 'acme' INTERSECT SELECT age FROM users WHERE tenant = 'globex')").refuse_ok();
    // Nested: (a UNION ALL b) EXCEPT ALL c, a UNION (b INTERSECT c).
    q.e("(SELECT country FROM users WHERE age > 70 UNION ALL SELECT country FROM users WHERE age < 25) EXCEPT ALL SELECT country FROM users WHERE tenant = 'acme' ORDER BY 1");
    q.e("SELECT status FROM orders WHERE amount < 50 UNION (SELECT status FROM orders WHERE amount > 950 INTERSECT SELECT tenant FROM users) ORDER BY 1 NULLS FIRST");
    // UNION ALL merged like a SELECT: ORDER BY, LIMIT, OFFSET.
    q.e("SELECT id, age FROM users WHERE age > 85 UNION ALL SELECT user_id, 0 FROM orders WHERE amount > 990 ORDER BY 1 DESC, 2 LIMIT 7 OFFSET 2");
    q.e("SELECT id AS k FROM users WHERE age = 40 UNION ALL SELECT user_id FROM orders WHERE amount > 995 ORDER BY k");
    q.e("SELECT age FROM users WHERE age > 80 UNION SELECT age FROM users WHERE age < 22 ORDER BY age DESC LIMIT 4 OFFSET 1");
    q.p(
        "SELECT id FROM users WHERE age > $1 UNION ALL SELECT user_id FROM orders WHERE amount > $2::int ORDER BY 1 LIMIT $3",
        vec![I32(88), I32(990), I64(9)],
        Exact,
    );
    // Branches reading only omnisharded tables or constants: their rows once.
    q.m("SELECT code FROM countries UNION ALL SELECT country FROM users WHERE age > 88");
    q.m("SELECT 'none' UNION ALL SELECT tenant FROM users WHERE age = 40");
    q.e("SELECT code FROM countries EXCEPT SELECT country FROM users WHERE age > 30 ORDER BY 1");
    q.e("SELECT code FROM countries INTERSECT ALL SELECT country FROM users WHERE age = 44 ORDER BY 1");
    // Branches pinned to one shard by their key: aggregates, LIMIT and DISTINCT inside.
    q.m(format!("SELECT count(*) FROM orders WHERE user_id = {a} UNION ALL SELECT count(*) FROM orders WHERE user_id = {b} UNION ALL SELECT count(*) FROM orders WHERE user_id = {c}"));
    q.e(format!("(SELECT id FROM orders WHERE user_id = {w} ORDER BY amount DESC, id LIMIT 3) UNION (SELECT id FROM orders WHERE user_id = {w2} ORDER BY amount, id LIMIT 2) ORDER BY 1"));
    q.e(format!("SELECT DISTINCT status FROM orders WHERE user_id = {w} EXCEPT SELECT status FROM orders WHERE user_id = {w2} ORDER BY 1 NULLS FIRST"));
    q.m(format!("SELECT max(amount) FROM orders WHERE user_id = {w} UNION ALL SELECT amount FROM orders WHERE amount > 995"));
    q.p(
        "SELECT id FROM users WHERE id = $1 UNION SELECT user_id FROM orders WHERE user_id = $2 UNION SELECT id FROM users WHERE id = $3 ORDER BY 1",
        vec![I64(a), I64(b), I64(c)],
        Exact,
    );
    q.p(
        "SELECT count(*) FROM orders WHERE user_id = $1 UNION ALL SELECT count(*) FROM orders WHERE user_id = $2",
        vec![I64(w), I64(w2)],
        Multiset,
    );
    // NULLs and numerically equal values are one row.
    q.e("SELECT country FROM users WHERE age > 80 UNION SELECT NULL::text ORDER BY 1 NULLS FIRST");
    q.e("SELECT score FROM users WHERE age > 85 UNION SELECT amount FROM orders WHERE amount > 995 ORDER BY 1");
    q.e("SELECT 1.0::numeric UNION SELECT score / score FROM users WHERE score > 0 ORDER BY 1");

    // --- NATURAL JOIN (the key shares its name on both sides)
    q.e("SELECT count(*), sum(a.amount) FROM orders a NATURAL JOIN orders b");
    q.e("SELECT status, count(*) FROM orders NATURAL JOIN (SELECT user_id, id FROM orders WHERE amount > 500) x GROUP BY status ORDER BY 1 NULLS FIRST").refuse_ok();
    q.e("SELECT count(*) FROM items a NATURAL JOIN items b");

    // --- text keys
    let sku = &m.items[10].0;
    q.m("SELECT a.sku, a.qty FROM items a JOIN items b USING (sku) WHERE b.qty > 800");
    q.e("SELECT count(*), sum(a.qty) FROM items a JOIN items b ON (a.sku, a.tags) = (b.sku, b.tags)");
    q.m("SELECT sku FROM items i WHERE EXISTS (SELECT 1 FROM items j WHERE j.sku = i.sku AND j.qty > 850)");
    q.e("SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM items j WHERE j.sku = i.sku AND j.qty > 0)");
    q.m("SELECT sku FROM items WHERE sku IN (SELECT sku FROM items WHERE qty > 880)");
    q.e("SELECT count(*), max(n) FROM (SELECT sku, count(*) AS n FROM items GROUP BY sku) s");
    q.e("SELECT count(*) FROM (SELECT DISTINCT sku FROM items WHERE qty > 300) s");
    q.e("SELECT count(*) FILTER (WHERE qty > 500), sum(qty) FILTER (WHERE tags IS NULL), avg(qty) FILTER (WHERE tags = 'red') FROM items");
    q.e("SELECT tags FROM items WHERE qty > 800 UNION SELECT tags FROM items WHERE qty < -50 ORDER BY 1 NULLS FIRST");
    q.e("SELECT tags FROM items WHERE qty > 500 INTERSECT ALL SELECT tags FROM items WHERE qty < 0 ORDER BY 1 NULLS FIRST");
    q.e(format!("SELECT qty FROM items WHERE sku = '{sku}' UNION ALL SELECT count(*) FROM items WHERE sku = 'SKU-1' ORDER BY 1 NULLS FIRST"));
    q.p(
        "SELECT * FROM (SELECT sku, qty FROM items WHERE sku = $1 ORDER BY qty LIMIT 1) s",
        vec![T(sku.clone())],
        Exact,
    );

    // --- uuid keys
    let sid = &m.sessions[7].0;
    let sid_b = &m.sessions[301].0;
    q.e("SELECT count(*), sum(a.n) FROM sessions a JOIN sessions b USING (sid)");
    q.e("SELECT count(*) FROM sessions a NATURAL JOIN sessions b");
    q.m("SELECT sid FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM sessions t WHERE t.sid = s.sid AND t.n < 95)");
    q.e("SELECT max(c), count(*) FROM (SELECT sid, count(*) AS c FROM sessions GROUP BY sid) x");
    q.e("SELECT user_id FROM sessions WHERE n > 50 INTERSECT SELECT id FROM users WHERE age > 40 ORDER BY 1");
    q.e("SELECT sid FROM sessions WHERE n < 3 UNION SELECT sid FROM sessions WHERE n > 96 ORDER BY sid LIMIT 10");
    q.m(format!("SELECT n FROM sessions WHERE sid = '{sid}' UNION ALL SELECT n FROM sessions WHERE sid = '{sid_b}'"));
    q.m(format!("SELECT s.sid, x.c FROM sessions s, LATERAL (SELECT count(*) AS c FROM sessions t WHERE t.sid = s.sid) x WHERE s.sid IN ('{sid}', '{sid_b}')"));
    q
}

/// What must still be refused (0A000) in these families.
pub(crate) fn refusals() -> Vec<String> {
    [
        "SELECT count(*) FROM users UNION SELECT count(*) FROM orders",
        "SELECT tenant, count(*) FROM users GROUP BY tenant INTERSECT SELECT status, 1 FROM orders",
        "(SELECT id FROM users ORDER BY age LIMIT 3) UNION ALL SELECT 1",
        "WITH x AS (SELECT id FROM users) SELECT id FROM x UNION SELECT user_id FROM orders",
        "SELECT count(*) FROM users NATURAL JOIN orders",
        "SELECT a.sku FROM items a JOIN items b ON a.tags = b.tags",
        "SELECT count(*) FROM (SELECT DISTINCT tags FROM items) s",
        "SELECT sku FROM items WHERE qty > (SELECT avg(qty) FROM items)",
        "SELECT count(*) FROM (SELECT DISTINCT user_id FROM sessions) x",
        "SELECT sid FROM sessions WHERE n = (SELECT max(n) FROM sessions)",
        "SELECT sid FROM sessions s WHERE s.user_id IN (SELECT user_id FROM sessions ORDER BY n LIMIT 5)",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}
