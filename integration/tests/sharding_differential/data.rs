//! The users/orders/countries data set and its loading through pgdog.
use super::*;

#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) id: i64,
    pub(crate) name: Option<String>,
    pub(crate) email: Option<String>,
    pub(crate) age: Option<i32>,
    pub(crate) score: Option<String>,
    pub(crate) created_at: String,
    pub(crate) active: Option<bool>,
    pub(crate) tenant: Option<String>,
    pub(crate) country: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct OrderRow {
    pub(crate) id: i64,
    pub(crate) user_id: i64,
    pub(crate) amount: Option<String>,
    pub(crate) status: Option<String>,
    pub(crate) created_at: Option<String>,
}

pub(crate) struct Data {
    pub(crate) users: Vec<User>,
    pub(crate) orders: Vec<OrderRow>,
    pub(crate) countries: Vec<(&'static str, &'static str, Option<&'static str>)>,
}

pub(crate) fn cents(c: i64) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", c.abs() / 100, c.abs() % 100)
}

pub(crate) fn timestamp(r: &mut Rng) -> String {
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}+00",
        2023 + r.below(2),
        1 + r.below(12),
        1 + r.below(28),
        r.below(24),
        r.below(60),
        r.below(60)
    )
}

pub(crate) fn generate() -> Data {
    let mut r = Rng(0x0005_eed0_fd06);
    const NAMES: &[&str] = &[
        "alice", "Bob", "carol", "dave", "Eve", "frank", "grace", "heidi", "ivan", "judy",
        "mallory", "oscar", "peggy", "trent", "victor", "walter", "bob", "ALICE",
    ];
    const ODD_NAMES: &[&str] = &[
        "Zoë",
        "Ängel",
        "o'brien",
        "Smith, \"Jr\"",
        "tab\there",
        "back\\slash",
        "multi\nline",
        "",
        " padded ",
        "\\N",
    ];
    const TENANTS: &[&str] = &["acme", "globex", "initech", "umbrella"];
    const CODES: &[&str] = &[
        "FR", "DE", "US", "JP", "BR", "IN", "NG", "AU", "CA", "MX", "ES", "IT", "ZZ",
    ];
    let shared_times: Vec<String> = (0..5).map(|_| timestamp(&mut r)).collect();
    let mut users = Vec::with_capacity(USERS);
    for i in 0..USERS {
        let id = match i {
            0 => i64::MIN,
            1 => i64::MAX,
            2 => 0,
            _ if i % 10 == 3 => -(i as i64) * 13,
            _ => i as i64 * 7 + 1,
        };
        let name = if r.chance(6) {
            None
        } else if r.chance(3) {
            Some(r.pick(ODD_NAMES).to_string())
        } else {
            Some(r.pick(NAMES).to_string())
        };
        let email = if r.chance(8) {
            None
        } else if r.chance(5) {
            Some("shared@example.com".to_string())
        } else {
            Some(format!("u{i}@example.com"))
        };
        let age = (!r.chance(10)).then(|| 18 + r.below(73) as i32);
        let score = (!r.chance(8)).then(|| cents(r.below(10_100_000) as i64 - 100_000));
        let created_at = if r.chance(5) {
            r.pick(&shared_times).clone()
        } else {
            timestamp(&mut r)
        };
        let active = if r.chance(10) {
            None
        } else {
            Some(r.chance(50))
        };
        let tenant = (!r.chance(10)).then(|| r.pick(TENANTS).to_string());
        let country = (!r.chance(7)).then(|| r.pick(CODES).to_string());
        users.push(User {
            id,
            name,
            email,
            age,
            score,
            created_at,
            active,
            tenant,
            country,
        });
    }
    let statuses = ["new", "paid", "shipped", "cancelled"];
    let mut orders = Vec::with_capacity(ORDERS);
    for i in 0..ORDERS {
        let user_id = if r.chance(3) {
            10_000_000 + r.below(50) as i64
        } else {
            // Skewed: the first 100 users get many orders.
            let idx = if r.chance(30) {
                r.below(100)
            } else {
                r.below(USERS as u64)
            };
            users[idx as usize].id
        };
        let amount = if r.chance(3) {
            None
        } else if r.chance(4) {
            Some(cents(-(r.below(5000) as i64)))
        } else {
            Some(cents(r.below(100_000) as i64))
        };
        let status = (!r.chance(5)).then(|| r.pick(&statuses).to_string());
        let created_at = (!r.chance(4)).then(|| timestamp(&mut r));
        orders.push(OrderRow {
            id: i as i64 + 1,
            user_id,
            amount,
            status,
            created_at,
        });
    }
    let countries = vec![
        ("FR", "France", Some("Europe")),
        ("DE", "Germany", Some("Europe")),
        ("ES", "Spain", Some("Europe")),
        ("IT", "Italy", Some("Europe")),
        ("US", "United States", Some("Americas")),
        ("CA", "Canada", Some("Americas")),
        ("MX", "Mexico", Some("Americas")),
        ("BR", "Brazil", Some("Americas")),
        ("JP", "Japan", Some("Asia")),
        ("IN", "India", Some("Asia")),
        ("NG", "Nigeria", None),
        ("AU", "Australia", None),
    ];
    Data {
        users,
        orders,
        countries,
    }
}

pub(crate) fn user_values(u: &User) -> String {
    format!(
        "({}, {}, {}, {}, {}, '{}', {}, {}, {})",
        u.id,
        lit(u.name.as_deref()),
        lit(u.email.as_deref()),
        u.age.map(|a| a.to_string()).unwrap_or("NULL".into()),
        u.score.clone().unwrap_or("NULL".into()),
        u.created_at,
        u.active.map(|a| a.to_string()).unwrap_or("NULL".into()),
        lit(u.tenant.as_deref()),
        lit(u.country.as_deref()),
    )
}

pub(crate) fn order_values(o: &OrderRow) -> String {
    format!(
        "({}, {}, {}, {}, {})",
        o.id,
        o.user_id,
        o.amount.clone().unwrap_or("NULL".into()),
        lit(o.status.as_deref()),
        lit(o.created_at.as_deref()),
    )
}

pub(crate) fn b2s(b: Option<bool>) -> Option<&'static str> {
    b.map(|b| if b { "t" } else { "f" })
}

/// COPY data: `header`, then one line a row of `rows`, its `fields` joined by `sep`.
fn copy_data<T>(rows: &[T], header: &str, sep: &str, fields: impl Fn(&T) -> Vec<String>) -> String {
    let mut data = String::from(header);
    for r in rows {
        data.push_str(&fields(r).join(sep));
        data.push('\n');
    }
    data
}

/// The rows loaded by COPY: users 900..2000 (text with the key third, CSV with a header) and
/// orders 2200..6000 (text with the key second, CSV with a header and the key first).
fn copy_loads(d: &Data) -> Vec<(&'static str, &'static str, String)> {
    // users 900..1450: COPY text, key in third position.
    let users_text = copy_data(&d.users[900..1450], "", "\t", |u| {
        let age = u.age.map(|a| a.to_string());
        vec![
            copy_text(u.name.as_deref()),
            copy_text(u.email.as_deref()),
            u.id.to_string(),
            copy_text(age.as_deref()),
            copy_text(u.score.as_deref()),
            copy_text(Some(&u.created_at)),
            copy_text(b2s(u.active)),
            copy_text(u.tenant.as_deref()),
            copy_text(u.country.as_deref()),
        ]
    });
    // users 1450..2000: COPY CSV with HEADER.
    let header = "id,name,email,age,score,created_at,active,tenant,country\n";
    let users_csv = copy_data(&d.users[1450..], header, ",", |u| {
        let age = u.age.map(|a| a.to_string());
        vec![
            u.id.to_string(),
            copy_csv(u.name.as_deref()),
            copy_csv(u.email.as_deref()),
            copy_csv(age.as_deref()),
            copy_csv(u.score.as_deref()),
            copy_csv(Some(&u.created_at)),
            copy_csv(b2s(u.active)),
            copy_csv(u.tenant.as_deref()),
            copy_csv(u.country.as_deref()),
        ]
    });
    // orders 2200..4000: COPY text, key second.
    let orders_text = copy_data(&d.orders[2200..4000], "", "\t", |o| {
        vec![
            o.id.to_string(),
            o.user_id.to_string(),
            copy_text(o.amount.as_deref()),
            copy_text(o.status.as_deref()),
            copy_text(o.created_at.as_deref()),
        ]
    });
    // orders 4000..6000: COPY CSV HEADER, key first.
    let header = "user_id,id,amount,status,created_at\n";
    let orders_csv = copy_data(&d.orders[4000..], header, ",", |o| {
        vec![
            o.user_id.to_string(),
            o.id.to_string(),
            copy_csv(o.amount.as_deref()),
            copy_csv(o.status.as_deref()),
            copy_csv(o.created_at.as_deref()),
        ]
    });
    vec![
        ("COPY users text", "COPY users (name, email, id, age, score, created_at, active, tenant, country) FROM STDIN", users_text),
        ("COPY users csv", "COPY users (id, name, email, age, score, created_at, active, tenant, country) FROM STDIN WITH (FORMAT csv, HEADER)", users_csv),
        ("COPY orders text", "COPY orders (id, user_id, amount, status, created_at) FROM STDIN", orders_text),
        ("COPY orders csv", "COPY orders (user_id, id, amount, status, created_at) FROM STDIN (FORMAT csv, HEADER true)", orders_csv),
    ]
}

type Step = Result<u64, tokio_postgres::Error>;

/// `INSERT INTO {into} VALUES ...` of `values` (row literals), `per` rows a statement, simple
/// protocol: each statement's row count.
async fn multi_row_inserts(
    client: &Client,
    into: &str,
    values: &[String],
    per: usize,
) -> Vec<Step> {
    let mut out = Vec::new();
    for chunk in values.chunks(per) {
        let sql = format!("INSERT INTO {into} VALUES {}", chunk.join(", "));
        let r = run_simple(client, &sql)
            .await
            .map(|v| v.last().and_then(|s| s.tag_count).unwrap_or(0));
        out.push(r);
    }
    out
}

/// `ins` prepared once, then executed with each `(label, parameters)` of `binds`: each
/// execution's row count, or the failed prepare (`prepare {what}`).
async fn prepared_inserts(
    client: &Client,
    ins: &str,
    what: &str,
    binds: Vec<(String, Vec<P>)>,
) -> Vec<(String, Step)> {
    let st = match client.prepare(ins).await {
        Ok(st) => st,
        Err(e) => return vec![(format!("prepare {what}"), Err(e))],
    };
    let mut out = Vec::new();
    for (label, params) in binds {
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(P::as_sql).collect();
        out.push((label, client.execute(&st, &refs).await));
    }
    out
}

/// Loads everything through `client` (pgdog or the reference, same statements); what each step
/// reported, for comparing the two.
pub(crate) async fn load(
    client: &Client,
    rawc: &mut raw::Conn,
    d: &Data,
) -> Vec<(String, Result<String, String>)> {
    let mut out = Vec::new();
    let mut step = |what: String, r: Result<u64, tokio_postgres::Error>| {
        out.push((what, r.map(|n| n.to_string()).map_err(|e| err_text(&e))));
    };
    for ddl in SCHEMA {
        step(ddl.to_string(), client.batch_execute(ddl).await.map(|_| 0));
    }
    // countries: one multi-row INSERT (omnisharded: every shard).
    let values: Vec<String> = d
        .countries
        .iter()
        .map(|(c, n, r)| format!("('{c}', '{n}', {})", lit(*r)))
        .collect();
    let sql = format!(
        "INSERT INTO countries (code, name, region) VALUES {}",
        values.join(", ")
    );
    step(sql.clone(), client.execute(sql.as_str(), &[]).await);

    // users 0..700: multi-row INSERTs, simple protocol, 50 rows each.
    let values: Vec<String> = d.users[..700].iter().map(user_values).collect();
    let into = "users (id, name, email, age, score, created_at, active, tenant, country)";
    for r in multi_row_inserts(client, into, &values, 50).await {
        step("users multi-row INSERT".into(), r);
    }
    // users 700..900: one prepared single-row INSERT, key in second position, bound 200 times.
    let ins = "INSERT INTO users (name, id, email, age, score, created_at, active, tenant, country) VALUES ($1, $2, $3, $4, $5::text::numeric, $6::text::timestamptz, $7, $8, $9)";
    let binds = d.users[700..900].iter().map(|u| {
        let params = vec![
            P::OT(u.name.clone()),
            P::I64(u.id),
            P::OT(u.email.clone()),
            P::OI32(u.age),
            P::OT(u.score.clone()),
            P::T(u.created_at.clone()),
            P::OB(u.active),
            P::OT(u.tenant.clone()),
            P::OT(u.country.clone()),
        ];
        (format!("users INSERT $ id {}", u.id), params)
    });
    for (what, r) in prepared_inserts(client, ins, "users INSERT", binds.collect()).await {
        step(what, r);
    }
    // orders 0..2000: multi-row INSERTs of 100 rows.
    let values: Vec<String> = d.orders[..2000].iter().map(order_values).collect();
    let into = "orders (id, user_id, amount, status, created_at)";
    for r in multi_row_inserts(client, into, &values, 100).await {
        step("orders multi-row INSERT".into(), r);
    }
    // orders 2000..2200: prepared single-row INSERT, key fourth.
    let ins = "INSERT INTO orders (amount, status, id, user_id, created_at) VALUES ($1::text::numeric, $2, $3, $4, $5::text::timestamptz)";
    let binds = d.orders[2000..2200].iter().map(|o| {
        let params = vec![
            P::OT(o.amount.clone()),
            P::OT(o.status.clone()),
            P::I64(o.id),
            P::I64(o.user_id),
            P::OT(o.created_at.clone()),
        ];
        (format!("orders INSERT $ id {}", o.id), params)
    });
    for (what, r) in prepared_inserts(client, ins, "orders INSERT", binds.collect()).await {
        step(what, r);
    }
    for (what, sql, data) in copy_loads(d) {
        // A simple-protocol COPY, data in CopyData messages that cut rows at odd places.
        out.push((
            what.to_string(),
            rawc.copy_in(sql, data.as_bytes(), 997).await,
        ));
    }
    out
}
