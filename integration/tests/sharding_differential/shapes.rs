//! The shape family: pgdog parses a simple-protocol statement once per shape (its text with the
//! literals taken out) and serves later texts of that shape from the cached parse. Each template
//! below runs many times, simple protocol only, with fresh literals in every slot: keys of each
//! key type (as numbers, strings, numerics, negative numbers, typed literals), IN lists of
//! different lengths, ORDER BY / GROUP BY positions, LIMIT / OFFSET, type modifiers, strings
//! with quotes, several statements in one query. A wrong reuse of a shape (a key value of
//! another text, a position taken for a value) gives a different answer than the reference.
//! The debug build the tests run also checks each hit against a real parse
//! (`shape_mismatches` in SHOW QUERY_CACHE must stay 0).
use super::*;

/// The values a slot draws from.
pub(crate) struct Pools {
    users: Vec<i64>,
    skus: Vec<String>,
    sids: Vec<String>,
    counters: Vec<i32>,
    names: Vec<String>,
    tenants: Vec<String>,
}

pub(crate) fn pools(d: &Data, m: &More) -> Pools {
    let mut names: Vec<String> = d.users.iter().filter_map(|u| u.name.clone()).collect();
    names.sort();
    names.dedup();
    let mut tenants: Vec<String> = d.users.iter().filter_map(|u| u.tenant.clone()).collect();
    tenants.sort();
    tenants.dedup();
    Pools {
        users: d.users.iter().map(|u| u.id).collect(),
        skus: m.items.iter().map(|i| i.0.clone()).collect(),
        sids: m.sessions.iter().map(|s| s.0.clone()).collect(),
        counters: m.counters.iter().map(|c| c.0).collect(),
        names,
        tenants,
    }
}

/// SQL string literal contents (quotes doubled).
fn quoted(s: &str) -> String {
    s.replace('\'', "''")
}

impl Pools {
    /// A fresh value for slot `name`.
    fn slot(&self, name: &str, r: &mut Rng) -> String {
        let pick = |r: &mut Rng, n: usize| r.below(n as u64) as usize;
        match name {
            // A user id that exists (positive or negative), sometimes one that does not.
            "uid" => {
                if r.chance(15) {
                    (5_000_000 + r.below(1000)).to_string()
                } else {
                    self.users[pick(r, self.users.len())].to_string()
                }
            }
            "uids" => {
                let n = 1 + pick(r, 6);
                (0..n)
                    .map(|_| self.slot("uid", r))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
            // The absolute value of a negative user id.
            "negid" => {
                let neg: Vec<i64> = self
                    .users
                    .iter()
                    .filter(|&&u| u < 0)
                    .filter_map(|u| u.checked_neg())
                    .collect();
                neg[pick(r, neg.len())].to_string()
            }
            "pos12" => ["1, 2", "2, 1"][pick(r, 2)].to_string(),
            "age" => (15 + r.below(70)).to_string(),
            "pos2" => (1 + r.below(2)).to_string(),
            "lim" => r.below(12).to_string(),
            "off" => r.below(5).to_string(),
            "prec" => (4 + r.below(8)).to_string(),
            "scale" => r.below(4).to_string(),
            "len" => (1 + r.below(6)).to_string(),
            "amount" => format!("{}.{:02}", r.below(1000), r.below(100)),
            "sku" => quoted(&self.skus[pick(r, self.skus.len())]),
            "sid" => self.sids[pick(r, self.sids.len())].clone(),
            "cid" => self.counters[pick(r, self.counters.len())].to_string(),
            "bucket" => (r.below(3000) as i64 - 800).to_string(),
            "name" => quoted(&self.names[pick(r, self.names.len())]),
            "tenant" => quoted(&self.tenants[pick(r, self.tenants.len())]),
            "int" => r.below(100_000).to_string(),
            "days" => (1 + r.below(900)).to_string(),
            other => panic!("no slot {{{other}}}"),
        }
    }

    /// `template` with each `{slot}` replaced by a fresh value.
    fn fill(&self, template: &str, r: &mut Rng) -> String {
        let mut out = String::new();
        let mut rest = template;
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let end = rest[i..].find('}').expect("closing brace") + i;
            out.push_str(&self.slot(&rest[i + 1..end], r));
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// The admin password of the differential test's pgdog.
pub(crate) const ADMIN_PASSWORD: &str = "shapes-admin";

/// The templates; each orders its rows totally.
const TEMPLATES: &[&str] = &[
    "SELECT id, name, age FROM users WHERE id = {uid}",
    "SELECT id, name FROM users WHERE id = '{uid}'",
    "SELECT id FROM users WHERE id = {uid}.0",
    "SELECT id FROM users WHERE id = int8 '{uid}'",
    "SELECT id, age FROM users WHERE id = {uid}.4::bigint ORDER BY 1",
    "SELECT n FROM sessions WHERE sid::text = '{sid}' ORDER BY 1 NULLS FIRST",
    "SELECT id, age FROM users WHERE id = -{negid} OR id = - {uid} ORDER BY 1",
    "SELECT id FROM users WHERE id IN ({uids}) ORDER BY id",
    "SELECT id FROM users WHERE id = ANY(ARRAY[{uid}, {uid}, {uid}]) ORDER BY 1",
    "SELECT id, age FROM users WHERE id = {uid} OR id = {uid} ORDER BY 1",
    "SELECT id, age FROM users WHERE age > {age} ORDER BY {pos2} DESC, 1 LIMIT {lim} OFFSET {off}",
    "SELECT tenant, country, count(*) FROM users WHERE age BETWEEN {age} AND {age} GROUP BY {pos12} ORDER BY 1 NULLS FIRST, 2 NULLS FIRST",
    "SELECT country, sum(age), count(*) FROM users GROUP BY country ORDER BY 2 DESC, 1 LIMIT {lim}",
    "SELECT id, score::numeric({prec}, {scale}), name::varchar({len}) FROM users WHERE id IN ({uid}, {uid}) ORDER BY 1",
    "SELECT {int} + age, '{name}' || coalesce(name, '') FROM users WHERE id = {uid}",
    "SELECT count(*) FROM users WHERE name = '{name}' AND age < {age}",
    "SELECT count(*) FROM users WHERE created_at > timestamptz '2024-01-01' - interval '{days} days'",
    "SELECT id, amount FROM orders WHERE user_id = {uid} AND amount > {amount} ORDER BY id",
    "SELECT count(*), sum(amount) FROM orders WHERE user_id IN (SELECT id FROM users WHERE age = {age} AND tenant = '{tenant}')",
    "SELECT sku, qty FROM items WHERE sku = '{sku}'",
    "SELECT sku, qty FROM items WHERE sku = '{sku}'::varchar",
    "SELECT n FROM sessions WHERE sid = '{sid}'",
    "SELECT n FROM sessions WHERE sid = '{sid}'::uuid OR sid = '{sid}' ORDER BY 1 NULLS FIRST",
    "SELECT id, n FROM counters WHERE id = {cid}",
    "SELECT id, n FROM counters WHERE id IN ({cid}, 3000000000) ORDER BY 1",
    "SELECT count(*), min(val) FROM metrics WHERE bucket BETWEEN {bucket} AND {bucket}",
    "SELECT id, val FROM metrics WHERE bucket = {bucket} ORDER BY id",
    "SELECT id FROM users WHERE id = {uid}; SELECT count(*) FROM orders WHERE user_id = {uid}",
];

/// Runs per template.
const RUNS: usize = 10;

/// The family's queries: every template, `RUNS` times with fresh literals each.
pub(crate) fn shape_reads(p: &Pools) -> Vec<Q> {
    let mut r = Rng(0x5_4a9e);
    let mut out = Vec::new();
    for _ in 0..RUNS {
        for template in TEMPLATES {
            out.push(Q {
                sql: p.fill(template, &mut r),
                params: Vec::new(),
                order: Order::Exact,
                proto: Proto::Simple,
                refuse_ok: false,
                bug: None,
            });
        }
    }
    out
}

/// Writes of the family, run once each on both sides: literals in SET, WHERE and VALUES.
pub(crate) fn shape_writes(p: &Pools) -> Vec<Q> {
    let mut r = Rng(0x5_4a9f);
    let templates = [
        "UPDATE users SET age = {age} WHERE id = {uid}",
        "UPDATE counters SET n = coalesce(n, 0) + {int} WHERE id = {cid}",
        "INSERT INTO events (user_id, id, note) VALUES ({uid}, {int}, '{name}')",
        "DELETE FROM orders WHERE user_id = {uid} AND amount < {amount}",
    ];
    (0..RUNS)
        .flat_map(|_| templates.iter())
        .map(|t| Q {
            sql: p.fill(t, &mut r),
            params: Vec::new(),
            order: Order::Exact,
            proto: Proto::Simple,
            refuse_ok: false,
            bug: None,
        })
        .collect()
}

/// pgdog served the family from its shape cache, and every hit equalled a real parse.
pub(crate) async fn check_shape_cache(proxy: &Proxy, report: &mut Report) {
    let admin = connect_str(&proxy.conninfo("admin", ADMIN_PASSWORD, "admin")).await;
    let rows = admin
        .simple_query("SHOW QUERY_CACHE")
        .await
        .expect("SHOW QUERY_CACHE");
    let row = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
        _ => None,
    });
    let Some(row) = row else {
        report.fail("SHOW QUERY_CACHE returned no row".into());
        return;
    };
    let n = |c: &str| -> u64 { row.get(c).and_then(|v| v.parse().ok()).unwrap_or(0) };
    eprintln!(
        "shape cache: {} hits, {} misses, {} not cacheable, {} mismatches",
        n("shape_hits"),
        n("shape_misses"),
        n("shape_not_cacheable"),
        n("shape_mismatches")
    );
    if n("shape_mismatches") != 0 {
        report.fail(format!(
            "{} shape cache hits differed from a real parse (see pgdog's log)",
            n("shape_mismatches")
        ));
    }
    // Most of the family's texts are of a shape seen before.
    if n("shape_hits") < (RUNS as u64 - 2) * TEMPLATES.len() as u64 / 2 {
        report.fail(format!("too few shape cache hits: {}", n("shape_hits")));
    }
}
