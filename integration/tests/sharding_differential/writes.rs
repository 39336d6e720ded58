//! Writes, reads after them, and what pgdog must refuse.
use super::*;
use Order::*;
use P::*;

/// Writes, run once each, in this order, on both sides.
pub(crate) fn writes(k: &Ids) -> Qs {
    let mut q = Qs::default();
    single_statement_writes(&mut q, k);
    atomicity_and_key_moves(&mut q, k);
    q
}

/// INSERT, UPDATE, DELETE one statement at a time, simple and extended protocol.
fn single_statement_writes(q: &mut Qs, k: &Ids) {
    let Ids {
        a,
        b,
        c,
        neg,
        w,
        w2,
        w_order,
    } = *k;
    let cols = "id, name, email, age, score, created_at, active, tenant, country";

    q.s(format!("INSERT INTO users ({cols}) VALUES (5000001, 'new1', 'n1@x', 33, 12.50, '2024-05-05 05:05:05+00', true, 'acme', 'FR') RETURNING *"), Exact);
    q.s(format!("INSERT INTO users ({cols}) VALUES (5000002, 'n2', NULL, 20, -1.00, '2024-05-05 05:05:05+00', false, 'acme', NULL), (5000003, 'n3', NULL, 21, 2.00, '2024-05-06 05:05:05+00', NULL, NULL, 'DE'), (5000004, NULL, 'x', NULL, NULL, '2024-05-07 05:05:05+00', true, 'globex', 'US'), (-5000005, 'n5', NULL, 90, 99.99, '2024-05-08 05:05:05+00', true, 'initech', 'JP'), (5000006, 'n6', NULL, 19, 0, '2024-05-09 05:05:05+00', false, NULL, NULL), (5000007, 'n7', 'e7', 44, 7.77, '2024-05-10 05:05:05+00', true, 'umbrella', 'ZZ') RETURNING id, name"), Multiset);
    q.p(
        format!("INSERT INTO users ({cols}) VALUES ($1, $2, NULL, $3, $4::text::numeric, $5::text::timestamptz, $6, $7, NULL) RETURNING id, tenant"),
        vec![I64(5000008), T("p8".into()), I32(50), T("8.80".into()), T("2024-06-01 00:00:00+00".into()), B(true), T("globex".into())],
        Exact,
    );
    q.p(
        format!("INSERT INTO users ({cols}) VALUES ($1, $2, NULL, $3, $4::text::numeric, $5::text::timestamptz, $6, $7, NULL), ($8, $9, NULL, NULL, NULL, $10::text::timestamptz, NULL, NULL, NULL) RETURNING id, name"),
        vec![I64(5000009), T("p9".into()), I32(51), T("9.90".into()), T("2024-06-02 00:00:00+00".into()), B(false), T("acme".into()), I64(-5000010), T("p10".into()), T("2024-06-03 00:00:00+00".into())],
        Multiset,
    );
    q.s(
        format!("INSERT INTO users (id, name, created_at) VALUES ({a}, 'dup', '2024-01-01+00')"),
        Exact,
    );
    q.s(format!("INSERT INTO users (id, name, created_at) VALUES ({a}, 'dup', '2024-01-01+00') ON CONFLICT (id) DO NOTHING"), Exact);
    q.s(format!("INSERT INTO users (id, name, created_at) VALUES ({a}, 'upserted', '2024-01-01+00') ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING id, name"), Exact);
    q.s(
        "INSERT INTO users (id, name, created_at) VALUES ('5000011', 'str key', '2024-01-01+00'), ('-5000012'::bigint, 'cast key', '2024-01-01+00') RETURNING id",
        Multiset,
    );
    q.s(
        format!("UPDATE users SET age = age + 1 WHERE id = {a} RETURNING id, age"),
        Exact,
    );
    q.s(
        "UPDATE users SET score = 0 WHERE tenant = 'initech' AND age > 70 RETURNING id",
        Multiset,
    );
    q.s(
        format!("UPDATE users SET active = NOT active WHERE id IN ({b}, {c}, {neg}) RETURNING id, active"),
        Multiset,
    );
    q.p(
        "UPDATE users SET name = $1 WHERE id = $2",
        vec![T("renamed".into()), I64(b)],
        Exact,
    );
    q.s("UPDATE users SET email = NULL WHERE age IS NULL", Exact);
    q.p(
        "UPDATE users SET age = NULL WHERE id = $1 RETURNING *",
        vec![I64(c)],
        Exact,
    );
    q.s(
        format!("DELETE FROM orders WHERE user_id = {w2} RETURNING id"),
        Multiset,
    );
    q.s(
        "DELETE FROM orders WHERE status = 'cancelled' AND amount < 50 RETURNING user_id, id",
        Multiset,
    );
    q.p(
        "DELETE FROM orders WHERE user_id = $1 AND id = $2",
        vec![I64(w), I64(w_order)],
        Exact,
    );
    q.s("DELETE FROM users WHERE id = 999999999999", Exact);
    q.s(
        "DELETE FROM users WHERE tenant IS NULL AND age > 85 RETURNING id, name",
        Multiset,
    );
    q.s("UPDATE orders SET status = 'refunded' WHERE user_id IN (SELECT id FROM users WHERE tenant = 'globex' AND age < 25)", Exact)
        .refuse_ok();
    q.s(
        "INSERT INTO countries (code, name, region) VALUES ('XX', 'Nowhere', NULL) RETURNING *",
        Exact,
    )
    .bug("B6: a write to an omnisharded table returns its RETURNING rows once per shard");
    q.s(
        "UPDATE countries SET name = 'France!' WHERE code = 'FR'",
        Exact,
    );
    q.s(
        "DELETE FROM countries WHERE code = 'XX' RETURNING code",
        Exact,
    )
    .bug("B6: a write to an omnisharded table returns its RETURNING rows once per shard");
    q.s("INSERT INTO orders (id, user_id, amount, status, created_at) VALUES (900001, 5000001, 1.00, 'new', NULL), (900002, 5000002, 2.00, 'new', NULL), (900003, 5000003, 3.00, NULL, NULL), (900004, -5000005, NULL, 'paid', '2024-01-01+00'), (900005, 5000001, 5.55, 'paid', NULL)", Exact);
    q.p(
        "INSERT INTO orders (id, user_id, amount, status) VALUES ($1, $2, $3::text::numeric, $4), ($5, $6, $7::text::numeric, $8) RETURNING id, user_id",
        vec![I64(900006), I64(5000006), T("6.60".into()), T("new".into()), I64(900007), I64(5000007), T("7.70".into()), T("paid".into())],
        Multiset,
    );
    q.s(format!("BEGIN; UPDATE users SET age = 1 WHERE id = {a}; UPDATE users SET age = 2 WHERE id = {b}; UPDATE users SET age = 3 WHERE id = {neg}; COMMIT"), Exact);
    q.s(format!("BEGIN; DELETE FROM users WHERE id = {c}; INSERT INTO users (id, name, created_at) VALUES (5000013, 'rolled back', '2024-01-01+00'); ROLLBACK"), Exact);
    q.s(
        format!("BEGIN; INSERT INTO users (id, name, created_at) VALUES (5000014, 'x', '2024-01-01+00'); INSERT INTO users (id, name, created_at) VALUES ({a}, 'dup', '2024-01-01+00'); COMMIT"),
        Exact,
    );
    q.s("ROLLBACK", Exact);
    q.s(
        "BEGIN; SELECT id FROM users WHERE tenant = 'acme' ORDER BY id LIMIT 3 FOR UPDATE; COMMIT",
        Exact,
    );
    q.s(
        "BEGIN; INSERT INTO users (id, name, created_at) VALUES (5000015, 'in tx', '2024-01-01+00'), (5000016, 'in tx', '2024-01-01+00'), (5000017, 'in tx', '2024-01-01+00'); SELECT count(*) FROM users WHERE name = 'in tx'; SELECT id FROM users WHERE name = 'in tx' ORDER BY id; ROLLBACK",
        Exact,
    );
    q.s("SELECT count(*) FROM users WHERE name = 'in tx'", Exact);
}

/// Statements on several shards are atomic; savepoints; INSERT ... SELECT; shard-key UPDATE.
fn atomicity_and_key_moves(q: &mut Qs, k: &Ids) {
    let Ids {
        a,
        b,
        c,
        neg,
        w,
        w2,
        ..
    } = *k;

    // Statements on several shards are atomic, as on one server: a duplicate key in one row,
    // a division by zero on one shard.
    q.s(
        format!("INSERT INTO users (id, name, created_at) VALUES (5000030, 'atomic', '2024-01-01+00'), (5000031, 'atomic', '2024-01-01+00'), (-5000032, 'atomic', '2024-01-01+00'), ({a}, 'atomic', '2024-01-01+00')"),
        Exact,
    );
    q.s("SELECT count(*) FROM users WHERE name = 'atomic'", Exact);
    q.s(
        format!("UPDATE users SET age = 10 / (id::numeric - {c})"),
        Exact,
    );
    q.s(
        format!("DELETE FROM orders WHERE 1 / (user_id::numeric - {w}) > 0"),
        Exact,
    );
    q.s("SELECT count(*), sum(age) FROM users", Exact);
    q.s("SELECT count(*) FROM orders", Exact);
    // A savepoint in a transaction on several shards (one statement per round trip).
    q.s("BEGIN", Exact);
    q.s("INSERT INTO users (id, name, created_at) VALUES (5000018, 'sp', '2024-01-01+00'), (5000019, 'sp', '2024-01-01+00')", Exact);
    q.s("SAVEPOINT s1", Exact).refuse_ok();
    q.s(
        format!("INSERT INTO users (id, name, created_at) VALUES (5000020, 'sp', '2024-01-01+00'), ({a}, 'dup', '2024-01-01+00')"),
        Exact,
    );
    q.s("ROLLBACK TO SAVEPOINT s1", Exact).refuse_ok();
    q.s("INSERT INTO users (id, name, created_at) VALUES (5000021, 'sp', '2024-01-01+00'), (5000022, 'sp', '2024-01-01+00')", Exact);
    q.s("COMMIT", Exact);
    q.s("SELECT id FROM users WHERE name = 'sp' ORDER BY id", Exact);
    // INSERT ... SELECT (issue 17): the SELECT routed like any query, its rows placed by key.
    q.s(
        format!("INSERT INTO orders (id, user_id, amount) SELECT id + 1000000, user_id, amount FROM orders WHERE user_id = {w}"),
        Exact,
    );
    q.s(
        "INSERT INTO users (id, name, created_at, tenant) SELECT id + 7000000, 'copy ' || name, created_at, tenant FROM users WHERE age > 80 RETURNING id, name",
        Multiset,
    );
    q.s(
        "INSERT INTO users (id, name, created_at) SELECT g, 'gen', '2024-01-01+00' FROM generate_series(8000000, 8000050) g",
        Exact,
    );
    q.s(
        "INSERT INTO users (id, name, created_at) SELECT id, 'conflict', created_at FROM users WHERE tenant = 'acme' AND age < 30 ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name || '!' RETURNING id, name",
        Multiset,
    );
    q.s(
        "INSERT INTO counters (id, n) SELECT age + 100000, count(*) FROM users WHERE age IS NOT NULL GROUP BY age",
        Exact,
    );
    q.s(
        "INSERT INTO users (id, name, created_at) SELECT id, name, created_at FROM users WHERE false RETURNING id",
        Exact,
    );
    q.s(
        format!("INSERT INTO users (id, name, created_at) SELECT id + 7100000, name, created_at FROM users WHERE tenant = 'globex' UNION ALL SELECT {a}, 'dup', '2024-01-01+00'::timestamptz"),
        Exact,
    );
    q.s(
        "SELECT count(*) FROM users WHERE id > 7100000 AND id < 7200000",
        Exact,
    );
    q.p(
        "INSERT INTO orders (id, user_id, amount) SELECT id + 2000000, user_id, amount FROM orders WHERE amount > 990",
        vec![],
        Exact,
    );
    q.s(
        "DELETE FROM orders o USING users u WHERE o.user_id = u.id AND u.tenant = 'umbrella' AND u.age > 88",
        Exact,
    )
    .refuse_ok();
    q.s(
        "UPDATE orders o SET status = 'vip' FROM users u WHERE o.user_id = u.id AND u.score > 99000",
        Exact,
    )
    .refuse_ok();
    q.s(
        format!("INSERT INTO users (id, name, created_at) VALUES ({a}, 'up a', '2024-01-01+00'), ({b}, 'up b', '2024-01-01+00'), (5000023, 'up new', '2024-01-01+00') ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING id, name"),
        Multiset,
    );
    // UPDATE of the sharding key (issue 17): rows move to the shard of their new key.
    q.s(
        format!("UPDATE users SET id = id + 10000000, name = name || ' moved' WHERE id = {a} RETURNING id, name, age"),
        Exact,
    );
    q.s(
        format!("UPDATE users SET id = -id WHERE id IN ({b}, {c}, 5000001, 5000002, 5000003) RETURNING *"),
        Multiset,
    );
    q.s(
        format!("UPDATE orders SET user_id = {w2} WHERE user_id = {w}"),
        Exact,
    );
    q.p(
        "UPDATE users SET id = $1, age = age + 1 WHERE id = $2",
        vec![I64(12345678), I64(5000004)],
        Exact,
    );
    q.s(
        format!("UPDATE users SET (id, name) = (5000001, 'taken') WHERE id = {neg}"),
        Exact,
    );
    q.s("UPDATE users SET id = 5000006 WHERE id = 5000007", Exact);
    q.s("SELECT count(*) FROM orders WHERE user_id = 0", Exact);
}

/// Reads after the writes: whole tables and totals.
pub(crate) fn after(k: &Ids) -> Qs {
    let mut q = Qs::default();
    q.e("SELECT * FROM users ORDER BY id");
    q.e("SELECT * FROM orders ORDER BY user_id, id");
    q.e("SELECT * FROM countries ORDER BY code");
    q.e("SELECT count(*), sum(score), sum(age), avg(age) FROM users");
    q.e("SELECT status, count(*), sum(amount) FROM orders GROUP BY status ORDER BY status NULLS FIRST");
    q.e(format!(
        "SELECT * FROM users WHERE id IN ({}, {}, {}, {}, 5000001, 5000008, -5000010) ORDER BY id",
        k.a, k.b, k.c, k.neg
    ));
    q.e("SELECT u.id, count(o.id) FROM users u LEFT JOIN orders o ON o.user_id = u.id WHERE u.id > 4999999 GROUP BY u.id ORDER BY u.id");
    q
}

/// Must fail through pgdog with 0A000 (the reference would answer).
pub(crate) fn refusals(k: &Ids) -> Vec<String> {
    let a = k.a;
    vec![
        "SELECT id, row_number() OVER (ORDER BY id) FROM users".into(),
        "SELECT id, sum(score) OVER (PARTITION BY tenant) FROM users".into(),
        "SELECT CASE WHEN true THEN rank() OVER (ORDER BY age) END FROM users".into(),
        "SELECT coalesce(string_agg(name, ','), '') FROM users".into(),
        "SELECT array_agg(DISTINCT tenant) FROM users".into(),
        "SELECT string_agg(name, tenant) FROM users".into(),
        "SELECT count(DISTINCT tenant) FROM users".into(),
        "SELECT count(DISTINCT user_id) FROM users u JOIN orders o ON o.user_id = u.id".into(),
        "SELECT count(DISTINCT o.id) FROM orders o".into(),
        "SELECT stddev(score::float8) FROM users".into(),
        "SELECT variance(DISTINCT age) FROM users".into(),
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age) FROM users".into(),
        "SELECT u.id, o.id FROM users u JOIN orders o ON u.name = o.status".into(),
        "SELECT u.id FROM users u JOIN orders o ON u.id = o.id".into(),
        "SELECT u.id FROM users u, orders o WHERE u.age = o.id".into(),
        "UPDATE orders SET user_id = 5 WHERE id = 7".into(),
        "UPDATE users SET id = id + 1 WHERE tenant = 'acme'".into(),
        "UPDATE users u SET id = u.id + 1 FROM orders o WHERE o.user_id = u.id AND u.id = 5".into(),
        "WITH x AS (SELECT 1) INSERT INTO users (id, name, created_at) SELECT id + 1, name, created_at FROM users".into(),
        // Subqueries each shard would answer with its own rows only (issue 13).
        "SELECT count(*) FROM (SELECT DISTINCT tenant FROM users) s".into(),
        "SELECT max(n) FROM (SELECT status, count(*) AS n FROM orders GROUP BY status) s".into(),
        "WITH t AS (SELECT tenant, count(*) AS n FROM users GROUP BY tenant) SELECT max(n) FROM t".into(),
        "SELECT id FROM users WHERE id IN (SELECT user_id FROM orders ORDER BY amount DESC LIMIT 5)".into(),
        "SELECT id FROM users WHERE id = ANY (SELECT user_id FROM orders ORDER BY amount LIMIT 3)".into(),
        "SELECT id FROM users WHERE score > (SELECT avg(score) * 1.5 FROM users)".into(),
        format!("SELECT id, (SELECT count(*) FROM users) FROM users WHERE id = {a}"),
        format!("SELECT o.id FROM orders o WHERE o.user_id = {a} AND o.amount > (SELECT avg(amount) FROM orders)"),
        "SELECT (SELECT count(*) FROM users)".into(),
        "SELECT code FROM countries c WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.country = c.code)".into(),
        "SELECT code FROM countries c WHERE EXISTS (SELECT 1 FROM users u WHERE u.country = c.code AND u.age > 80)".into(),
        "SELECT json_agg(c.code) FROM countries c WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.country = c.code)".into(),
        "SELECT c.code, u.id FROM countries c LEFT JOIN users u ON u.country = c.code".into(),
        "SELECT c.code, count(u.id) FROM users u RIGHT JOIN countries c ON u.country = c.code GROUP BY c.code".into(),
        "SELECT u.id FROM users u, LATERAL (SELECT count(*) AS n FROM orders o WHERE o.amount > 500) x WHERE x.n > 3".into(),
        "SELECT id, CASE WHEN age > (SELECT avg(age) FROM users) THEN 'old' END FROM users".into(),
        "SELECT count(*) FROM users WHERE id NOT IN (SELECT user_id FROM orders WHERE amount > 500)".into(),
        "SELECT count(*) FROM users UNION ALL SELECT count(*) FROM orders".into(),
        "SELECT tenant FROM users UNION ALL SELECT DISTINCT status FROM orders".into(),
        "SELECT u.id FROM users u JOIN orders o ON u.name = o.status UNION ALL SELECT 1".into(),
        "SELECT id FROM users WHERE id IN (SELECT user_id FROM orders ORDER BY amount LIMIT 10)".into(),
        "SELECT id FROM users WHERE age IN (SELECT user_id FROM orders WHERE amount > 990)".into(),
    ]
}
