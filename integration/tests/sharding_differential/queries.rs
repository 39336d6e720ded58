//! The queries compared: reads of every shape the router and merger handle.
use super::*;
use Order::*;
use P::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    Both,
    Simple,
    Extended,
}

#[derive(Debug, Clone)]
pub(crate) struct Q {
    pub(crate) sql: String,
    pub(crate) params: Vec<P>,
    pub(crate) order: Order,
    pub(crate) proto: Proto,
    /// pgdog may refuse it with 0A000 (a documented limitation), but must not answer wrongly.
    pub(crate) refuse_ok: bool,
    /// A pgdog bug this query reproduces (found by this suite; the check stays active).
    pub(crate) bug: Option<&'static str>,
}

#[derive(Default)]
pub(crate) struct Qs(pub(crate) Vec<Q>);

impl Qs {
    pub(crate) fn add(
        &mut self,
        sql: String,
        params: Vec<P>,
        order: Order,
        proto: Proto,
    ) -> &mut Self {
        self.0.push(Q {
            sql,
            params,
            order,
            proto,
            refuse_ok: false,
            bug: None,
        });
        self
    }
    /// Totally ordered result, both protocols.
    pub(crate) fn e(&mut self, sql: impl Into<String>) -> &mut Self {
        self.add(sql.into(), vec![], Order::Exact, Proto::Both)
    }
    /// Unordered result, both protocols.
    pub(crate) fn m(&mut self, sql: impl Into<String>) -> &mut Self {
        self.add(sql.into(), vec![], Order::Multiset, Proto::Both)
    }
    /// Ordered by the given columns with ties, both protocols.
    pub(crate) fn k(&mut self, sql: impl Into<String>, cols: &[usize]) -> &mut Self {
        self.add(sql.into(), vec![], Order::Keys(cols.to_vec()), Proto::Both)
    }
    /// Extended protocol with parameters.
    pub(crate) fn p(&mut self, sql: impl Into<String>, params: Vec<P>, order: Order) -> &mut Self {
        self.add(sql.into(), params, order, Proto::Extended)
    }
    /// Simple protocol only (multi-statement strings).
    pub(crate) fn s(&mut self, sql: impl Into<String>, order: Order) -> &mut Self {
        self.add(sql.into(), vec![], order, Proto::Simple)
    }
    pub(crate) fn refuse_ok(&mut self) -> &mut Self {
        self.0.last_mut().unwrap().refuse_ok = true;
        self
    }
    pub(crate) fn bug(&mut self, what: &'static str) -> &mut Self {
        self.0.last_mut().unwrap().bug = Some(what);
        self
    }
}

/// Ids used by the queries.
pub(crate) struct Ids {
    pub(crate) a: i64,
    pub(crate) b: i64,
    pub(crate) c: i64,
    pub(crate) neg: i64,
    /// The users with the most orders.
    pub(crate) w: i64,
    pub(crate) w2: i64,
    /// An order of `w`.
    pub(crate) w_order: i64,
}

pub(crate) fn keys(d: &Data) -> Ids {
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for o in &d.orders {
        *counts.entry(o.user_id).or_default() += 1;
    }
    let mut by: Vec<(i64, usize)> = d
        .users
        .iter()
        .filter(|u| u.id > 0 && u.id < 1_000_000)
        .map(|u| (u.id, counts.get(&u.id).copied().unwrap_or(0)))
        .collect();
    by.sort_by_key(|(id, n)| (std::cmp::Reverse(*n), *id));
    let w = by[0].0;
    Ids {
        a: d.users[10].id,
        b: d.users[21].id,
        c: d.users[32].id,
        neg: d.users[13].id,
        w,
        w2: by[1].0,
        w_order: d.orders.iter().find(|o| o.user_id == w).unwrap().id,
    }
}

pub(crate) fn reads(k: &Ids) -> Qs {
    let mut q = Qs::default();
    keys_and_scans(&mut q, k);
    order_limit_aggregates(&mut q, k);
    grouping_joins_subqueries(&mut q, k);
    merge_edges_and_sessions(&mut q, k);
    q
}

/// Point lookups, IN lists, ranges and scans without a key.
fn keys_and_scans(q: &mut Qs, k: &Ids) {
    let Ids { a, b, c, neg, .. } = *k;

    // --- point lookups by the sharding key
    q.e(format!("SELECT * FROM users WHERE id = {a}"));
    q.e(format!("SELECT * FROM users WHERE {b} = id"));
    q.e(format!(
        "SELECT name, age FROM users WHERE id = '{c}'::bigint"
    ));
    q.e(format!(
        "SELECT name FROM users WHERE id = CAST('{a}' AS bigint)"
    ));
    q.e(format!("SELECT id, name FROM users WHERE id = '{b}'"));
    q.e(format!("SELECT * FROM users WHERE id = {neg}"));
    q.e("SELECT * FROM users WHERE id = -9223372036854775808");
    q.e("SELECT * FROM users WHERE id = 9223372036854775807");
    q.e("SELECT * FROM users WHERE id = 0");
    q.e("SELECT * FROM users WHERE id = 123456789012");
    q.e(format!(
        "SELECT u.id, u.email FROM users u WHERE u.id = {a}"
    ));
    q.e(format!("SELECT * FROM public.users WHERE id = {c}"));
    q.e(format!(
        "SELECT \"id\", \"name\" FROM \"users\" WHERE \"id\" = {a}"
    ));
    q.e(format!("SELECT * FROM users WHERE (id = {a})"));
    q.e(format!("SELECT * FROM users WHERE id = {a} AND id = {a}"));
    q.e(format!(
        "SELECT * FROM users WHERE id = {a} AND active IS NOT NULL"
    ));
    q.e(format!("SELECT * FROM users WHERE id = {a}.0"))
        .bug("B3: a numeric constant compared with the bigint key is read as a bigint key: 22P02");
    q.e(format!("SELECT * FROM users WHERE id = {a}.5"))
        .bug("B3: a numeric constant compared with the bigint key is read as a bigint key: 22P02");
    q.e(format!("SELECT * FROM users WHERE id + 0 = {b}"));
    q.e("SELECT * FROM users WHERE id IS NULL");
    q.e(format!("SELECT id FROM users WHERE id = {a} AND id = {b}"));
    q.e(format!("SELECT id FROM users WHERE id = {a}::int4"));
    q.e(format!("SELECT id FROM users WHERE id = {a}::numeric"));
    for id in [a, b, neg, i64::MIN, i64::MAX, 0, 424_242] {
        q.p("SELECT * FROM users WHERE id = $1", vec![I64(id)], Exact);
    }
    q.p("SELECT * FROM users WHERE id = $1", vec![NullI64], Exact);
    q.p(
        "SELECT name FROM users WHERE id = $1::bigint",
        vec![I64(c)],
        Exact,
    );
    q.p(
        "SELECT id, name, age FROM users WHERE id = $1 AND age > $2",
        vec![I64(a), I32(0)],
        Exact,
    );
    q.p(
        "SELECT id, name FROM users WHERE id = $1::text::bigint",
        vec![T(b.to_string())],
        Exact,
    )
    .bug("B5: a binary text parameter is decoded as a binary bigint because the key column is bigint");
    q.p(
        "SELECT id, name FROM users WHERE id = $1::text::bigint",
        vec![T(a.to_string())],
        Exact,
    )
    .bug("B5: a binary text parameter is decoded as a binary bigint because the key column is bigint");
    // Keys of 2 and 4 characters: as binary, a smallint and an integer (routed wrongly).
    for id in [29i64, 36, 43, 50, 1002, 1009, 1016, 1023] {
        q.p(
            "SELECT id, name FROM users WHERE id = $1::text::bigint",
            vec![T(id.to_string())],
            Exact,
        )
        .bug("B5: a binary text parameter is decoded as a binary bigint because the key column is bigint");
    }

    // --- IN lists, ANY, OR of key predicates
    q.e(format!(
        "SELECT * FROM users WHERE id IN ({a}, {b}, {c}, {neg}) ORDER BY id"
    ));
    q.e(format!("SELECT id FROM users WHERE id IN ({a})"));
    q.e(format!(
        "SELECT id, name FROM users WHERE id IN ({a}, 99999999999) ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id = {a} OR id = {b} ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE (id = {a} OR id = {b}) AND age > 30 ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id = {a} OR name = 'alice' ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id = ANY(ARRAY[{a}, {b}, {c}]) ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id = ANY('{{{a},{b}}}'::bigint[]) ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id NOT IN ({a}, {b}) ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE NOT (id = {a}) ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id IN ({a}, {b}) AND id IN ({b}, {c}) ORDER BY id"
    ));
    q.e(format!(
        "SELECT id FROM users WHERE id IN ({a}, {b}) AND id IN ({c}, {neg}) ORDER BY id"
    ));
    q.p(
        "SELECT id FROM users WHERE id = ANY($1) ORDER BY id",
        vec![I64s(vec![a, b, c, neg, 424_242])],
        Exact,
    );
    q.p(
        "SELECT id, name FROM users WHERE id IN ($1, $2, $3) ORDER BY id",
        vec![I64(a), I64(b), I64(neg)],
        Exact,
    );
    q.p(
        "SELECT id FROM users WHERE id = $1 OR id = $2 ORDER BY id",
        vec![I64(c), I64(i64::MIN)],
        Exact,
    );
    ranges_and_scans(q);
}

/// Ranges on the key and scans without one.
fn ranges_and_scans(q: &mut Qs) {
    // --- ranges on the key (hash sharding: every shard)
    q.e("SELECT id FROM users WHERE id < 100 ORDER BY id");
    q.e("SELECT id, age FROM users WHERE id BETWEEN -100 AND 100 ORDER BY id");
    q.e("SELECT id FROM users WHERE id > 13000 ORDER BY id DESC");
    q.e("SELECT id FROM users WHERE id >= 50 AND id < 120 ORDER BY id");
    q.e("SELECT count(*) FROM users WHERE id < 0");
    q.p(
        "SELECT id FROM users WHERE id BETWEEN $1 AND $2 ORDER BY id DESC",
        vec![I64(-500), I64(500)],
        Exact,
    );

    // --- scans without a key
    q.m("SELECT * FROM users");
    q.m("SELECT id, name FROM users WHERE age > 60");
    q.m("SELECT id FROM users WHERE name IS NULL");
    q.m("SELECT id, tenant FROM users WHERE tenant = 'acme' AND active");
    q.m("SELECT id, name FROM users WHERE name LIKE 'a%'");
    q.m("SELECT * FROM orders WHERE amount > 900");
    q.m("SELECT id, email FROM users WHERE email = 'shared@example.com'");
    q.m("SELECT 1 AS one FROM users WHERE age = 33");
    q.m("SELECT upper(name), age + 1 AS next_age FROM users WHERE score < 0");
    q.m("SELECT * FROM orders");
    q.p(
        "SELECT name FROM users WHERE name = $1",
        vec![T("Zoë".into())],
        Multiset,
    );
    q.p(
        "SELECT id FROM users WHERE active = $1 AND id < $2 ORDER BY id",
        vec![B(true), I64(100)],
        Exact,
    );
}

/// ORDER BY, LIMIT / OFFSET and every mergeable aggregate.
fn order_limit_aggregates(q: &mut Qs, k: &Ids) {
    // --- ORDER BY
    q.e("SELECT id, name FROM users ORDER BY id");
    q.e("SELECT id, name FROM users ORDER BY id DESC");
    q.e("SELECT id, name FROM users ORDER BY name NULLS FIRST, id");
    q.e("SELECT id, name FROM users ORDER BY name DESC NULLS LAST, id DESC");
    q.e("SELECT id, name FROM users ORDER BY name, id");
    q.e("SELECT id, name FROM users ORDER BY name DESC, id");
    q.e("SELECT id, age, score FROM users ORDER BY age ASC NULLS FIRST, score DESC NULLS LAST, id");
    q.e("SELECT name, id FROM users ORDER BY 1, 2");
    q.e("SELECT name, id FROM users ORDER BY 2 DESC");
    q.e("SELECT id, age FROM users ORDER BY age * 2 + 1 NULLS FIRST, id");
    q.e("SELECT id, name FROM users ORDER BY lower(name), id");
    q.e("SELECT id, created_at FROM users ORDER BY created_at DESC, id");
    q.e("SELECT id, score FROM users ORDER BY score, id");
    q.e("SELECT id, score FROM users ORDER BY score DESC NULLS LAST, id DESC");
    q.e("SELECT id, active FROM users ORDER BY active NULLS FIRST, id");
    q.e("SELECT id, email FROM users ORDER BY email NULLS FIRST, id");
    q.e("SELECT id, name AS n FROM users ORDER BY n, id");
    q.e("SELECT user_id, id, amount FROM orders ORDER BY amount DESC NULLS LAST, user_id, id");
    q.e("SELECT user_id, id FROM orders ORDER BY user_id, id");
    q.e("SELECT id, name FROM users ORDER BY name COLLATE \"C\", id");
    q.e("SELECT id, score::float8 AS f FROM users ORDER BY f NULLS FIRST, id");
    q.e("SELECT id, name FROM users ORDER BY length(name) DESC NULLS LAST, id");
    q.e("SELECT id FROM users ORDER BY tenant NULLS FIRST, age DESC, id");
    q.k("SELECT tenant, id FROM users ORDER BY tenant", &[0]);
    q.k(
        "SELECT age, name FROM users ORDER BY age DESC NULLS LAST",
        &[0],
    );
    q.k(
        "SELECT tenant, active, id FROM users ORDER BY tenant NULLS FIRST, active DESC",
        &[0, 1],
    );
    q.k(
        "SELECT status, amount FROM orders ORDER BY status, amount",
        &[0, 1],
    );

    // --- LIMIT / OFFSET
    q.e("SELECT id FROM users ORDER BY id LIMIT 10");
    q.e("SELECT id FROM users ORDER BY id LIMIT 10 OFFSET 25");
    q.e("SELECT id FROM users ORDER BY id OFFSET 1990");
    q.e("SELECT id FROM users ORDER BY id LIMIT 0");
    q.e("SELECT id FROM users ORDER BY id LIMIT ALL");
    q.e("SELECT id FROM users ORDER BY id FETCH FIRST 5 ROWS ONLY");
    q.e("SELECT id FROM users ORDER BY id OFFSET 5 ROWS FETCH NEXT 3 ROWS ONLY");
    q.e("SELECT id, name FROM users ORDER BY name NULLS FIRST, id LIMIT 7 OFFSET 3");
    q.e("SELECT id FROM users ORDER BY id DESC LIMIT 3 OFFSET 5000");
    q.e("SELECT id, score FROM users WHERE tenant = 'globex' ORDER BY score DESC NULLS LAST, id LIMIT 15");
    q.e("SELECT id, created_at FROM users ORDER BY created_at, id LIMIT 10");
    q.e("SELECT count(*) FROM (SELECT id FROM users ORDER BY id LIMIT 50) s")
        .refuse_ok();
    q.p(
        "SELECT id FROM users ORDER BY id LIMIT $1",
        vec![I64(25)],
        Exact,
    );
    q.p(
        "SELECT id, name FROM users WHERE tenant = $1 ORDER BY id LIMIT $2 OFFSET $3",
        vec![T("acme".into()), I64(15), I64(7)],
        Exact,
    );
    q.p(
        "SELECT id, score FROM users WHERE score > $1::text::numeric ORDER BY score DESC, id LIMIT 20",
        vec![T("5000.00".into())],
        Exact,
    );
    aggregates(q, k);
}

/// Every mergeable aggregate, FILTER, and aggregates over empty sets.
fn aggregates(q: &mut Qs, k: &Ids) {
    let Ids { a, w, w2, .. } = *k;

    // --- aggregates
    q.e("SELECT count(*) FROM users");
    q.e("SELECT count(*), count(name), count(age), count(score) FROM users");
    q.e("SELECT sum(age), min(age), max(age) FROM users");
    q.e("SELECT avg(age) FROM users");
    q.e("SELECT avg(score) FROM users");
    q.e("SELECT sum(score), min(score), max(score) FROM users");
    q.e("SELECT min(name), max(name) FROM users");
    q.e("SELECT min(created_at), max(created_at) FROM users");
    q.e("SELECT min(id), max(id), sum(id), count(id) FROM users");
    q.e("SELECT avg(id) FROM users");
    q.e("SELECT sum(age::smallint), sum(age::int8) FROM users");
    q.e("SELECT min(score::float8), max(age::float4) FROM users");
    q.e("SELECT count(1) FROM orders WHERE status = 'paid'");
    q.e("SELECT count(*) FROM orders WHERE created_at IS NULL");
    q.e("SELECT sum(amount), avg(amount), min(amount), max(amount), count(amount) FROM orders");
    q.e(format!(
        "SELECT count(*) FROM orders o WHERE o.user_id = {w}"
    ));
    q.e(format!(
        "SELECT sum(amount) FROM orders WHERE user_id IN ({w}, {w2}, {a})"
    ));
    q.e("SELECT count(*) FROM users WHERE tenant = 'acme' AND age IS NULL");
    q.e("SELECT count(*) AS \"Count\" FROM users");
    q.e("SELECT count(*) + 1 AS c FROM users").refuse_ok();
    q.e("SELECT sum(amount) / count(*) FROM orders").refuse_ok();
    q.e("SELECT max(age) - min(age) FROM users").refuse_ok();
    q.e("SELECT count(*) FILTER (WHERE active), count(*) FILTER (WHERE NOT active) FROM users");
    // bit_and / bit_or / bit_xor over integers (values differ per shard).
    q.e("SELECT bit_and(age), bit_or(age), bit_xor(age), bit_or(id) FROM users");
    q.e("SELECT tenant, bit_or(id), bit_and(age | 1), bit_xor(age::smallint) FROM users GROUP BY tenant ORDER BY 1 NULLS FIRST");
    q.e("SELECT bit_or(DISTINCT age), bit_and(DISTINCT age) FROM users WHERE age > 30");
    // stddev / variance exact from per-shard sums (issue 17): int, bigint, numeric inputs.
    q.e("SELECT stddev(age), variance(age), stddev_pop(score), var_pop(score), stddev_samp(id), var_samp(id) FROM users");
    q.e("SELECT tenant, stddev(score), variance(age), var_pop(age) FILTER (WHERE active) FROM users GROUP BY tenant ORDER BY 1 NULLS FIRST");
    q.e("SELECT status, var_samp(amount), stddev_pop(amount) FILTER (WHERE amount > 100) FROM orders GROUP BY status ORDER BY 1 NULLS FIRST");
    q.e("SELECT stddev(age) FROM users WHERE id < 0");
    q.e("SELECT tenant, avg(age) AS a, stddev(age) FROM users GROUP BY tenant HAVING stddev(age) > 10 ORDER BY 1 NULLS FIRST");
    // count(DISTINCT key): each value lives on one shard.
    q.e("SELECT count(DISTINCT id), count(*) FROM users");
    q.e("SELECT tenant, count(DISTINCT id) FROM users GROUP BY tenant ORDER BY 1 NULLS FIRST");
    q.e("SELECT count(DISTINCT o.user_id) FROM orders o WHERE o.amount > 500");
    q.e("SELECT count(DISTINCT u.id) FROM users u JOIN orders o ON o.user_id = u.id WHERE o.amount > 900");
    // array_agg / string_agg, ordered inside the call (the keys are unique, so the order is
    // total); every shard's elements merged.
    q.e("SELECT tenant, array_agg(id ORDER BY id) FROM users GROUP BY tenant ORDER BY 1 NULLS FIRST");
    q.e("SELECT string_agg(name, ',' ORDER BY id DESC) FROM users WHERE age > 60");
    q.e("SELECT tenant, string_agg(email, '|' ORDER BY created_at, id) FILTER (WHERE active), array_agg(score ORDER BY score DESC NULLS LAST, id) FROM users GROUP BY tenant ORDER BY 1 NULLS FIRST");
    q.e("SELECT status, array_agg(user_id ORDER BY amount, user_id, id), array_agg(created_at ORDER BY id, user_id) FROM orders GROUP BY status ORDER BY 1 NULLS FIRST");
    q.e("SELECT array_agg(name ORDER BY id), string_agg(name, NULL ORDER BY id) FROM users WHERE id < 0");
    q.e("SELECT count(*) FROM (SELECT 1) x, LATERAL (SELECT array_agg(id ORDER BY id) AS a FROM users) y WHERE cardinality(y.a) > 0").refuse_ok();
    // FILTER on every mergeable aggregate, with and without GROUP BY (issue 13).
    q.e("SELECT sum(score) FILTER (WHERE age > 40), min(age) FILTER (WHERE active), max(score) FILTER (WHERE tenant = 'globex'), avg(age) FILTER (WHERE score > 50) FROM users");
    q.e("SELECT tenant, count(*) FILTER (WHERE age < 30) AS young, avg(score) FILTER (WHERE active) AS a FROM users GROUP BY tenant ORDER BY tenant NULLS FIRST");
    q.e("SELECT status, sum(amount) FILTER (WHERE amount > 500), count(id) FILTER (WHERE amount < 100) FROM orders GROUP BY status HAVING count(*) FILTER (WHERE amount > 900) > 3 ORDER BY status NULLS FIRST");
    q.e("SELECT bool_and(active), bool_or(active) FROM users")
        .refuse_ok();
    q.e("SELECT stddev(age), variance(age) FROM users")
        .refuse_ok();
    q.e("SELECT avg(score)::numeric(10,2) FROM users")
        .refuse_ok();
    q.e("SELECT count(DISTINCT tenant) FROM users").refuse_ok();
    q.p(
        "SELECT count(*) FROM users WHERE age > $1",
        vec![I32(40)],
        Exact,
    );
    q.p(
        "SELECT sum(amount), count(*) FROM orders WHERE user_id = $1",
        vec![I64(w)],
        Exact,
    );

    // --- aggregates over empty sets
    q.e("SELECT count(*), sum(age), min(name), max(score), avg(age) FROM users WHERE age > 1000");
    q.e("SELECT tenant, count(*) FROM users WHERE age > 1000 GROUP BY tenant");
    q.e("SELECT count(*) FROM users WHERE false");
    q.e("SELECT max(id) FROM users WHERE id = 123456789012");
    q.e("SELECT sum(amount) FROM orders WHERE status = 'nope'");
    q.e("SELECT id FROM users WHERE age > 1000 ORDER BY id");
}

/// GROUP BY / HAVING, DISTINCT, joins, omnisharded tables, subqueries and what is refused across shards.
fn grouping_joins_subqueries(q: &mut Qs, k: &Ids) {
    // --- GROUP BY / HAVING
    q.e("SELECT tenant, count(*), sum(score), avg(age), min(name), max(created_at) FROM users GROUP BY tenant ORDER BY tenant NULLS FIRST");
    q.e("SELECT status, count(*), sum(amount), min(amount), max(amount), avg(amount) FROM orders GROUP BY status ORDER BY status NULLS FIRST");
    q.e("SELECT user_id, count(*), sum(amount) FROM orders GROUP BY user_id ORDER BY user_id LIMIT 20");
    q.e("SELECT user_id, sum(amount) AS total FROM orders GROUP BY user_id ORDER BY total DESC NULLS LAST, user_id LIMIT 10");
    q.e("SELECT tenant, count(*) FROM users GROUP BY tenant HAVING count(*) > 100 ORDER BY tenant NULLS FIRST");
    q.e("SELECT tenant, sum(score) FROM users GROUP BY tenant HAVING sum(score) > 100000 ORDER BY 1 NULLS FIRST");
    q.e("SELECT age, count(*) FROM users GROUP BY age HAVING avg(score) > 55000 ORDER BY age NULLS FIRST");
    q.e("SELECT country, count(*) FROM users GROUP BY country HAVING min(age) < 20 ORDER BY country NULLS FIRST");
    q.e("SELECT age / 10 AS decade, count(*) FROM users GROUP BY age / 10 ORDER BY decade NULLS LAST");
    q.m("SELECT count(*) FROM users GROUP BY tenant");
    q.m("SELECT tenant, active, count(*) FROM users GROUP BY tenant, active");
    q.e("SELECT tenant, active, count(*) FROM users GROUP BY tenant, active ORDER BY 1 NULLS FIRST, 2 NULLS FIRST");
    q.e("SELECT active, count(*), avg(score) FROM users GROUP BY active ORDER BY active NULLS FIRST");
    q.e("SELECT date_trunc('month', created_at) AS m, count(*) FROM users GROUP BY 1 ORDER BY 1");
    q.e("SELECT age, count(*) FROM users GROUP BY age ORDER BY count(*) DESC, age NULLS FIRST LIMIT 5");
    q.e("SELECT tenant AS t, count(*) AS n FROM users GROUP BY t ORDER BY n DESC, t")
        .bug(
            "B4: the shard query gets `t AS __pgdog_0`, an output alias in the target list: 42703",
        );
    q.e("SELECT tenant, min(created_at), max(score) FROM users GROUP BY 1 ORDER BY 1");
    q.e("SELECT tenant, max(age) - min(age) AS spread FROM users GROUP BY tenant ORDER BY tenant")
        .refuse_ok();
    q.p(
        "SELECT tenant, count(*) FROM users WHERE age BETWEEN $1 AND $2 GROUP BY tenant ORDER BY tenant NULLS FIRST",
        vec![I32(20), I32(40)],
        Exact,
    );
    q.p(
        "SELECT status, count(*) FROM orders GROUP BY status HAVING count(*) > $1 ORDER BY status NULLS FIRST",
        vec![I64(300)],
        Exact,
    )
    .refuse_ok();

    // --- DISTINCT
    q.m("SELECT DISTINCT tenant FROM users");
    q.e("SELECT DISTINCT tenant FROM users ORDER BY 1 NULLS FIRST");
    q.e(
        "SELECT DISTINCT tenant, active FROM users ORDER BY tenant NULLS FIRST, active NULLS FIRST",
    );
    q.e("SELECT DISTINCT age FROM users ORDER BY age DESC NULLS LAST LIMIT 10");
    q.m("SELECT DISTINCT status FROM orders");
    q.e("SELECT DISTINCT ON (tenant) tenant, id FROM users ORDER BY tenant, id")
        .refuse_ok();
    joins_and_subqueries(q, k);
}

/// Joins on the keys, omnisharded tables, subqueries and what is refused across shards.
fn joins_and_subqueries(q: &mut Qs, k: &Ids) {
    let Ids { a, w, w2, .. } = *k;

    // --- joins on the sharding keys
    q.e(format!("SELECT u.id, u.name, o.id AS order_id, o.amount FROM users u JOIN orders o ON u.id = o.user_id WHERE u.id = {w} ORDER BY o.id"));
    q.m("SELECT u.id, o.id, o.amount FROM users u JOIN orders o ON u.id = o.user_id");
    q.m("SELECT u.id, o.id FROM users u JOIN orders o ON o.user_id = u.id WHERE o.amount > 950");
    q.e(format!("SELECT u.id, o.id FROM users u JOIN orders o ON u.id = o.user_id WHERE u.id IN ({w}, {w2}) ORDER BY u.id, o.id"));
    q.e("SELECT u.id, count(o.id) AS n FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.id ORDER BY u.id");
    q.e("SELECT u.tenant, count(*), sum(o.amount) FROM users u JOIN orders o ON o.user_id = u.id GROUP BY u.tenant ORDER BY u.tenant NULLS FIRST");
    q.e(format!("SELECT o.id, u.name FROM orders o JOIN users u ON u.id = o.user_id WHERE o.user_id = {w} ORDER BY o.id"));
    q.e(format!("SELECT u.id, o.id FROM users u, orders o WHERE u.id = o.user_id AND u.id = {w} ORDER BY o.id"));
    q.m("SELECT u.id, o.id FROM users u, orders o WHERE u.id = o.user_id AND o.status = 'new'");
    q.m("SELECT o.id FROM orders o LEFT JOIN users u ON u.id = o.user_id WHERE u.id IS NULL");
    q.p(
        "SELECT u.id, o.id, o.amount FROM users u JOIN orders o ON o.user_id = u.id WHERE u.id = $1 ORDER BY o.id",
        vec![I64(w)],
        Exact,
    );

    // --- omnisharded countries
    q.e(format!(
        "SELECT u.id, c.name FROM users u JOIN countries c ON c.code = u.country WHERE u.id = {a}"
    ));
    q.e("SELECT c.name, count(*) FROM users u JOIN countries c ON c.code = u.country GROUP BY c.name ORDER BY c.name");
    q.m("SELECT u.id, c.code FROM users u LEFT JOIN countries c ON c.code = u.country WHERE u.age > 80");
    q.e("SELECT c.region, count(o.id), sum(o.amount) FROM orders o JOIN users u ON u.id = o.user_id JOIN countries c ON c.code = u.country GROUP BY c.region ORDER BY c.region NULLS FIRST");
    q.e("SELECT * FROM countries ORDER BY code");
    q.m("SELECT * FROM countries");
    q.e("SELECT count(*) FROM countries");
    q.e("SELECT code FROM countries WHERE region = 'Europe' ORDER BY code");
    q.p(
        "SELECT name FROM countries WHERE code = $1",
        vec![T("JP".into())],
        Exact,
    );

    // --- subqueries, CTEs, set operations (co-located: answerable shard by shard)
    q.m("SELECT u.id FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id AND o.amount > 990)");
    // Correlated on the key: each shard has the rows the subquery needs.
    q.m("SELECT u.id FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id) AND u.age > 70");
    q.m("SELECT u.id, (SELECT count(*) FROM orders o WHERE o.user_id = u.id) AS n FROM users u WHERE u.age > 80");
    q.e("SELECT sum((SELECT count(*) FROM orders o WHERE o.user_id = u.id AND o.status = 'paid')) FROM users u");
    // Restricted to the shard the query runs on.
    q.e(format!("SELECT id, (SELECT count(*) FROM orders o WHERE o.user_id = {a}) FROM users WHERE id = {a}"));
    // A plain filter in FROM; subqueries on omnisharded tables.
    q.e("SELECT count(*), max(age) FROM (SELECT * FROM users WHERE age > 50) s");
    // Derived tables grouped (or made DISTINCT) by the key: each group is on one shard.
    q.e("SELECT max(n), count(*) FROM (SELECT user_id, count(*) AS n FROM orders GROUP BY user_id) s");
    q.e("SELECT count(*) FROM (SELECT DISTINCT user_id FROM orders WHERE amount > 500) s");
    q.e("SELECT avg(t), min(t) FROM (SELECT user_id, sum(amount) AS t FROM orders GROUP BY user_id HAVING count(*) > 3) s");
    q.m("SELECT id FROM users WHERE country IN (SELECT code FROM countries WHERE region = 'Europe')");
    q.m("SELECT u.id, c.name FROM users u LEFT JOIN countries c ON c.code = u.country WHERE u.age > 85");
    // Joins on the key in other spellings (issue 13).
    q.e("SELECT count(*), sum(a.amount) FROM orders a JOIN orders b USING (user_id) WHERE a.amount > 900");
    q.e("SELECT a.status, count(*) FROM orders a JOIN orders b USING (user_id) GROUP BY a.status ORDER BY a.status NULLS FIRST");
    q.e("SELECT count(*) FROM orders a JOIN orders b ON (a.user_id, a.status) = (b.user_id, b.status)");
    q.e("SELECT count(*) FROM users u JOIN orders o ON (u.id, u.tenant) = (o.user_id, 'globex')");
    q.m("SELECT id FROM users WHERE id IN (SELECT user_id FROM orders WHERE status = 'cancelled' AND amount > 900)");
    q.m("SELECT u.id FROM users u WHERE u.id = ANY (SELECT o.user_id FROM orders o WHERE o.amount > 950)");
    // A FROM subquery pinned to one shard by its key (LIMIT inside is fine there), re-sorted.
    q.e(format!("SELECT * FROM (SELECT id, amount FROM orders WHERE user_id = {w} ORDER BY amount DESC, id LIMIT 3) s ORDER BY id"));
    q.e(format!("SELECT count(*), max(amount) FROM (SELECT amount FROM orders WHERE user_id = {w} ORDER BY amount LIMIT 5) s"));
    // LATERAL correlated on the key.
    q.m("SELECT u.id, x.n FROM users u, LATERAL (SELECT count(*) AS n FROM orders o WHERE o.user_id = u.id) x WHERE u.age > 85");
    q.e("SELECT sum(x.total) FROM users u CROSS JOIN LATERAL (SELECT sum(o.amount) AS total FROM orders o WHERE o.user_id = u.id AND o.status = 'paid') x");
    q.e("SELECT count(*), sum(age) FROM users WHERE id IN (SELECT DISTINCT user_id FROM orders WHERE status = 'paid')");
    q.e(format!(
        "WITH t AS (SELECT id, name FROM users WHERE id = {a}) SELECT * FROM t"
    ))
    .refuse_ok();
    q.m("SELECT id FROM users WHERE age = 20 UNION ALL SELECT id FROM users WHERE age = 21");
    q.m("SELECT u.id, o.amount FROM users u JOIN orders o ON o.user_id = u.id WHERE o.amount > 990 UNION ALL SELECT id, score FROM users WHERE age = 33");

    // --- what is refused across shards works on one shard
    q.e(format!(
        "SELECT id, row_number() OVER (ORDER BY id) FROM users WHERE id = {a}"
    ));
    q.e(format!(
        "SELECT string_agg(name, ',' ORDER BY name) FROM users WHERE id IN ({a})"
    ));
    q.e(format!("SELECT o.id, sum(o.amount) OVER (ORDER BY o.id) FROM orders o WHERE o.user_id = {w} ORDER BY o.id"));
    q.e(format!(
        "SELECT array_agg(id ORDER BY id) FROM orders WHERE user_id = {w2}"
    ));

    // --- errors both sides must report the same way
    q.e(format!("SELECT 1/0 FROM users WHERE id = {a}"));
    q.e("SELECT nosuchcolumn FROM users");
    q.e("SELECT * FROM nosuchtable");
    q.e("SELECT id::int2 FROM users ORDER BY id");
}

/// Merge edge cases, errors on one shard, session settings, multi-statement queries.
fn merge_edges_and_sessions(q: &mut Qs, k: &Ids) {
    let Ids { a, b, c, .. } = *k;

    // --- more merge edge cases: HAVING thresholds only the merged groups pass, sort keys of
    // other types, hidden sort and aggregate columns
    q.e("SELECT count(*) FROM users HAVING count(*) > 1000");
    q.e("SELECT count(*) FROM users HAVING count(*) > 100000");
    q.e("SELECT tenant, count(*) FROM users GROUP BY tenant HAVING count(*) > 200 ORDER BY tenant NULLS FIRST");
    q.e("SELECT tenant, sum(score) FROM users GROUP BY tenant HAVING sum(score) > 15000000 ORDER BY tenant NULLS FIRST");
    q.e("SELECT tenant FROM users GROUP BY tenant ORDER BY count(*) DESC, tenant");
    q.e("SELECT tenant, avg(score) FROM users GROUP BY tenant ORDER BY avg(score) DESC NULLS LAST");
    q.m("SELECT min(age), max(age) FROM users GROUP BY tenant");
    q.e("SELECT tenant, count(*) FROM users GROUP BY tenant ORDER BY tenant NULLS FIRST OFFSET 2");
    q.e("SELECT count(*) FROM users LIMIT 1");
    q.e("SELECT id AS x FROM users ORDER BY x DESC LIMIT 5");
    q.e("SELECT * FROM users ORDER BY id LIMIT 5");
    q.e("SELECT name FROM users ORDER BY id LIMIT 20");
    q.e("SELECT DISTINCT name FROM users ORDER BY name NULLS FIRST");
    q.e("SELECT id, created_at::date AS d FROM users ORDER BY d DESC, id LIMIT 30");
    q.e("SELECT id, created_at - '2023-01-01 00:00:00+00'::timestamptz AS age_of FROM users ORDER BY age_of, id LIMIT 30")
        .refuse_ok();
    q.e("SELECT id, md5(id::text)::uuid AS u FROM users ORDER BY u LIMIT 30");
    q.e(
        "SELECT id, decode(md5(coalesce(name, '')), 'hex') AS b FROM users ORDER BY b, id LIMIT 30",
    );
    q.e("SELECT id, amount / 3 AS third FROM orders ORDER BY third DESC NULLS LAST, id LIMIT 30");
    q.e("SELECT id, -age AS neg FROM users ORDER BY neg NULLS FIRST, id LIMIT 30");
    q.e("SELECT id, tenant FROM users ORDER BY tenant DESC NULLS FIRST, id");
    q.e("SELECT min(score * 1.5), max(amount / 7) FROM users, LATERAL (SELECT 1::numeric AS amount) x")
        .refuse_ok();
    q.e("SELECT id, jsonb_build_object('a', age) AS j FROM users ORDER BY j, id LIMIT 20")
        .refuse_ok();
    q.e("SELECT id, ARRAY[age, 1] AS arr FROM users ORDER BY arr, id LIMIT 20")
        .refuse_ok();
    q.e(format!("SELECT * FROM USERS WHERE ID = {a}"));
    q.e(format!("SELECT u.name FROM users AS u WHERE u.id = {b}"));
    q.e("SELECT * FROM \"Users\"");
    q.e(format!("SELECT id FROM users WHERE id IN (SELECT {a})"))
        .refuse_ok();
    q.e(format!("SELECT id FROM users WHERE id = (SELECT {a})"))
        .refuse_ok();
    q.p(
        "SELECT id, name FROM users WHERE id = $1::int4",
        vec![I32(a as i32)],
        Exact,
    );
    q.p(
        "SELECT id FROM users WHERE id = ANY($1::bigint[]) ORDER BY id",
        vec![I64s(vec![a, c])],
        Exact,
    );
    q.p(
        "SELECT id FROM users ORDER BY id LIMIT $1",
        vec![NullI64],
        Exact,
    );
    q.p(
        "SELECT id FROM users ORDER BY id DESC LIMIT $1 OFFSET $2",
        vec![I64(4), I64(1995)],
        Exact,
    );
    q.p(
        "SELECT tenant, count(*), sum(score) FROM users WHERE active = $1 GROUP BY tenant ORDER BY tenant NULLS FIRST",
        vec![B(false)],
        Exact,
    );

    // --- an error on one shard of several; the session goes on (numeric: no second, overflow
    // error whose order across shards would decide which error comes back)
    q.e(format!("SELECT id, 10 / (id::numeric - {a}) FROM users"));
    q.e(format!("SELECT sum(10 / (id::numeric - {b})) FROM users"));
    q.e("SELECT count(*) FROM users");

    // --- session settings that change how values print, which the merge must respect
    q.s("SET DateStyle = 'SQL, DMY'", Exact);
    q.e("SELECT id, created_at FROM users ORDER BY created_at DESC, id LIMIT 20")
        .bug("B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value");
    q.e("SELECT min(created_at), max(created_at) FROM users")
        .bug(
        "B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value",
    );
    q.e("SELECT tenant, max(created_at) FROM users GROUP BY tenant ORDER BY tenant NULLS FIRST")
        .bug("B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value");
    q.e("SELECT id, created_at::date AS d FROM users ORDER BY d, id LIMIT 20")
        .bug("B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value");
    q.s("SET TimeZone = 'Asia/Kathmandu'", Exact);
    q.e("SELECT id, created_at FROM users ORDER BY created_at, id LIMIT 20")
        .bug("B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value");
    q.e("SELECT date_trunc('day', created_at) AS day, count(*) FROM users GROUP BY 1 ORDER BY 1 LIMIT 20")
        .bug("B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value");
    q.s("SET DateStyle = 'German'", Exact);
    q.e("SELECT max(created_at), min(created_at::date) FROM users")
        .bug("B7: merging timestamptz/date text in a non-ISO DateStyle fails: XX000 cannot read value");
    q.s("SET bytea_output = 'escape'", Exact);
    q.e(
        "SELECT id, decode(md5(coalesce(name, '')), 'hex') AS b FROM users ORDER BY b, id LIMIT 30",
    );
    q.s("SET extra_float_digits = -3", Exact);
    q.e("SELECT id, score::float8 / 7 AS f FROM users ORDER BY f NULLS FIRST, id LIMIT 20");
    q.e("SELECT max(score::float8 / 7), min(age::float4 / 3) FROM users");
    q.s("RESET ALL", Exact);
    q.e("SELECT id, created_at FROM users ORDER BY created_at, id LIMIT 5");

    // --- misc
    q.e("SELECT 1 AS x, 'a' AS y");
    q.e(format!("SELECT id, created_at::date AS d, score::text AS s, age::float8 / 4 AS f FROM users WHERE id IN ({a}, {b}, {c}) ORDER BY id"));
    q.s("SELECT 1; SELECT 2", Exact);
    q.s(
        format!("SELECT count(*) FROM users; SELECT id, name FROM users WHERE id = {a}"),
        Exact,
    );
    q.s(
        "SELECT min(id) FROM users; SELECT max(user_id) FROM orders",
        Exact,
    );
}
