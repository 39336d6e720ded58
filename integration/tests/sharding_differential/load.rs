//! Loading the data set through one side (pgdog or the reference, the same statements in the
//! same order): multi-row INSERTs, prepared single-row INSERTs and COPY text/CSV, every row
//! written from one list of its column values, in the column order each statement names.
use super::*;

/// A column value, written as an SQL literal, a parameter or a COPY field.
#[derive(Debug, Clone)]
pub(crate) enum Val {
    /// A bigint that is never NULL (keys).
    I64(i64),
    /// A bigint or NULL.
    OptI64(Option<i64>),
    /// An int or NULL.
    I32(Option<i32>),
    /// A numeric's text (an unquoted literal) or NULL, sent as a text parameter.
    Numeric(Option<String>),
    /// A text or NULL.
    Text(Option<String>),
    /// A timestamptz's text, never NULL.
    Stamp(String),
    /// A bool or NULL.
    Bool(Option<bool>),
}

impl Val {
    /// The value as text (what COPY carries), None for NULL.
    fn text(&self) -> Option<String> {
        match self {
            Val::I64(v) => Some(v.to_string()),
            Val::OptI64(v) => v.map(|v| v.to_string()),
            Val::I32(v) => v.map(|v| v.to_string()),
            Val::Numeric(v) | Val::Text(v) => v.clone(),
            Val::Stamp(v) => Some(v.clone()),
            Val::Bool(v) => v.map(|b| (if b { "t" } else { "f" }).to_string()),
        }
    }

    /// The value as an SQL literal.
    fn literal(&self) -> String {
        match self {
            Val::Text(v) => lit(v.as_deref()),
            Val::Stamp(v) => lit(Some(v)),
            Val::Bool(v) => v.map(|b| b.to_string()).unwrap_or("NULL".into()),
            _ => self.text().unwrap_or("NULL".into()),
        }
    }

    /// The value as a parameter of a prepared statement.
    fn param(&self) -> P {
        match self {
            Val::I64(v) => P::I64(*v),
            Val::OptI64(Some(v)) => P::I64(*v),
            Val::OptI64(None) => P::NullI64,
            Val::I32(v) => P::OI32(*v),
            Val::Numeric(v) | Val::Text(v) => P::OT(v.clone()),
            Val::Stamp(v) => P::T(v.clone()),
            Val::Bool(v) => P::OB(*v),
        }
    }
}

/// A row: its values by column name.
pub(crate) type Row = Vec<(&'static str, Val)>;

/// A row of `values` for the columns `cols` (`"a, b, c"`).
pub(crate) fn row(cols: &'static str, values: Vec<Val>) -> Row {
    let names: Vec<&'static str> = cols.split(',').map(str::trim).collect();
    assert_eq!(names.len(), values.len(), "one value per column of {cols}");
    names.into_iter().zip(values).collect()
}

/// All the rows in one INSERT.
const ALL: usize = usize::MAX;

/// The columns a statement names in its first parentheses (`INSERT INTO t (a, b) ...`,
/// `COPY t (a, b) FROM STDIN`, `t (a, b)`).
fn columns(sql: &str) -> Vec<&str> {
    let open = sql.find('(').expect("a column list in the statement");
    let close = open + sql[open..].find(')').expect("a closed column list");
    sql[open + 1..close].split(',').map(str::trim).collect()
}

/// The values of `row` in the order of `cols`.
fn pick<'r>(row: &'r Row, cols: &[&str]) -> Vec<&'r Val> {
    cols.iter()
        .map(|c| match row.iter().find(|(name, _)| name == c) {
            Some((_, v)) => v,
            None => panic!("no column {c} in the row {row:?}"),
        })
        .collect()
}

/// `(literal, ...)` of each row, in the column order of `into` (`table (a, b, ...)`).
fn values(rows: &[Row], into: &str) -> Vec<String> {
    let cols = columns(into);
    rows.iter()
        .map(|r| {
            let v: Vec<String> = pick(r, &cols).iter().map(|v| v.literal()).collect();
            format!("({})", v.join(", "))
        })
        .collect()
}

/// The parameters of `sql` for each row, in its column order, labelled `{label}{id}`.
fn binds(rows: &[Row], sql: &str, label: &str) -> Vec<(String, Vec<P>)> {
    let cols = columns(sql);
    rows.iter()
        .map(|r| {
            let id = pick(r, &["id"])[0].literal();
            let params = pick(r, &cols).iter().map(|v| v.param()).collect();
            (format!("{label}{id}"), params)
        })
        .collect()
}

/// The COPY data of `rows` for `sql` (its columns, text or CSV format, with a header line
/// when `header`).
fn copy_data(rows: &[Row], sql: &str, csv: bool, header: bool) -> String {
    let cols = columns(sql);
    let mut data = if header {
        cols.join(",") + "\n"
    } else {
        String::new()
    };
    for r in rows {
        let fields: Vec<String> = pick(r, &cols)
            .iter()
            .map(|v| {
                let t = v.text();
                if csv {
                    copy_csv(t.as_deref())
                } else {
                    copy_text(t.as_deref())
                }
            })
            .collect();
        data.push_str(&fields.join(if csv { "," } else { "\t" }));
        data.push('\n');
    }
    data
}

/// Runs the loading statements on one side and keeps what each reported.
pub(crate) struct Loader<'a> {
    client: &'a Client,
    rawc: &'a mut raw::Conn,
    /// Each step: what it was, and its row count, tag or error.
    pub(crate) out: Vec<(String, Result<String, String>)>,
}

impl<'a> Loader<'a> {
    pub(crate) fn new(client: &'a Client, rawc: &'a mut raw::Conn) -> Self {
        Loader {
            client,
            rawc,
            out: Vec::new(),
        }
    }

    fn record(&mut self, what: String, r: Result<u64, tokio_postgres::Error>) {
        let r = r.map(|n| n.to_string()).map_err(|e| err_text(&e));
        self.out.push((what, r));
    }

    /// DDL, one step each.
    async fn batch(&mut self, statements: &[&str]) {
        for sql in statements {
            let r = self.client.batch_execute(sql).await.map(|_| 0);
            self.record(sql.to_string(), r);
        }
    }

    /// One statement through the extended protocol, without parameters.
    async fn execute(&mut self, sql: String) {
        let r = self.client.execute(sql.as_str(), &[]).await;
        self.record(sql, r);
    }

    /// `INSERT INTO {into} VALUES` of `rows`, `per` rows a statement ([`ALL`]: one statement),
    /// simple protocol: each statement's row count, as `what`.
    async fn inserts(&mut self, what: &str, into: &str, rows: &[Row], per: usize) {
        for chunk in values(rows, into).chunks(per) {
            let sql = format!("INSERT INTO {into} VALUES {}", chunk.join(", "));
            let r = run_simple(self.client, &sql)
                .await
                .map(|v| format!("{:?}", v.last().and_then(|s| s.tag_count)))
                .map_err(|e| err_text(&e));
            self.out.push((what.to_string(), r));
        }
    }

    /// `sql` prepared once, then executed with each `(label, parameters)` of `binds`; a failed
    /// prepare is the step `prepare {what}`.
    async fn prepared(&mut self, sql: &str, what: &str, binds: Vec<(String, Vec<P>)>) {
        let st = match self.client.prepare(sql).await {
            Ok(st) => st,
            Err(e) => return self.record(format!("prepare {what}"), Err(e)),
        };
        for (label, params) in binds {
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(P::as_sql).collect();
            let r = self.client.execute(&st, &refs).await;
            self.record(label, r);
        }
    }

    /// A simple-protocol COPY FROM STDIN of `data`, in CopyData messages of `chunk` bytes (that
    /// cut rows at odd places).
    async fn copy(&mut self, what: &str, sql: &str, data: String, chunk: usize) {
        let r = self.rawc.copy_in(sql, data.as_bytes(), chunk).await;
        self.out.push((what.to_string(), r));
    }
}

/// Loads the users/orders/countries data set.
pub(crate) async fn load(l: &mut Loader<'_>, d: &Data) {
    l.batch(SCHEMA).await;
    // countries: one multi-row INSERT (omnisharded: every shard).
    let countries: Vec<Row> = d.countries.iter().map(country_row).collect();
    let into = "countries (code, name, region)";
    let sql = format!(
        "INSERT INTO {into} VALUES {}",
        values(&countries, into).join(", ")
    );
    l.execute(sql).await;

    let users: Vec<Row> = d.users.iter().map(User::row).collect();
    let orders: Vec<Row> = d.orders.iter().map(OrderRow::row).collect();
    // users 0..700: multi-row INSERTs, simple protocol, 50 rows each; 700..900: one prepared
    // single-row INSERT, key in second position, bound 200 times. orders 0..2000: multi-row
    // INSERTs of 100 rows; 2000..2200: prepared single-row INSERT, key fourth.
    let inserts = [
        ("users", &users, 700, 50, "users (id, name, email, age, score, created_at, active, tenant, country)",
         "INSERT INTO users (name, id, email, age, score, created_at, active, tenant, country) VALUES ($1, $2, $3, $4, $5::text::numeric, $6::text::timestamptz, $7, $8, $9)"),
        ("orders", &orders, 2000, 100, "orders (id, user_id, amount, status, created_at)",
         "INSERT INTO orders (amount, status, id, user_id, created_at) VALUES ($1::text::numeric, $2, $3, $4, $5::text::timestamptz)"),
    ];
    for (table, rows, split, per, into, ins) in inserts {
        let what = format!("{table} multi-row INSERT");
        l.inserts(&what, into, &rows[..split], per).await;
        let binds = binds(
            &rows[split..split + 200],
            ins,
            &format!("{table} INSERT $ id "),
        );
        l.prepared(ins, &format!("{table} INSERT"), binds).await;
    }
    // users 900..1450: COPY text, key in third position; 1450..2000: COPY CSV with HEADER.
    // orders 2200..4000: COPY text, key second; 4000..6000: COPY CSV HEADER, key first.
    let copies = [
        ("COPY users text", "COPY users (name, email, id, age, score, created_at, active, tenant, country) FROM STDIN", &users[900..1450], false),
        ("COPY users csv", "COPY users (id, name, email, age, score, created_at, active, tenant, country) FROM STDIN WITH (FORMAT csv, HEADER)", &users[1450..], true),
        ("COPY orders text", "COPY orders (id, user_id, amount, status, created_at) FROM STDIN", &orders[2200..4000], false),
        ("COPY orders csv", "COPY orders (user_id, id, amount, status, created_at) FROM STDIN (FORMAT csv, HEADER true)", &orders[4000..], true),
    ];
    for (what, sql, rows, csv) in copies {
        l.copy(what, sql, copy_data(rows, sql, csv, csv), 997).await;
    }
}

fn country_row(&(code, name, region): &(&str, &str, Option<&str>)) -> Row {
    let values = vec![
        Val::Text(Some(code.into())),
        Val::Text(Some(name.into())),
        Val::Text(region.map(str::to_string)),
    ];
    row("code, name, region", values)
}

/// Loads the tables sharded by other key types.
pub(crate) async fn load_more(l: &mut Loader<'_>, m: &More) {
    // items: half one multi-row INSERT, half COPY CSV.
    let items: Vec<Row> = m
        .items
        .iter()
        .map(|(sku, qty, tags)| {
            let values = vec![
                Val::Text(Some(sku.clone())),
                Val::I32(*qty),
                Val::Text(tags.clone()),
            ];
            row("sku, qty, tags", values)
        })
        .collect();
    l.inserts("items INSERT", "items (sku, qty, tags)", &items[..300], ALL)
        .await;
    let sql = "COPY items (qty, sku, tags) FROM STDIN (FORMAT csv)";
    l.copy(
        "items COPY csv",
        sql,
        copy_data(&items[300..], sql, true, false),
        333,
    )
    .await;

    // sessions: COPY text, then one multi-row INSERT with upper-case, hyphen-less and braced
    // uuids.
    let session = |sid: String, user_id: i64, n: Option<i32>| {
        let values = vec![Val::Text(Some(sid)), Val::I64(user_id), Val::I32(n)];
        row("sid, user_id, n", values)
    };
    let copied: Vec<Row> = m.sessions[..300]
        .iter()
        .map(|(sid, u, n)| session(sid.clone(), *u, *n))
        .collect();
    let sql = "COPY sessions (sid, user_id, n) FROM STDIN";
    l.copy(
        "sessions COPY",
        sql,
        copy_data(&copied, sql, false, false),
        500,
    )
    .await;
    let spelled: Vec<Row> = m.sessions[300..]
        .iter()
        .enumerate()
        .map(|(i, (sid, u, n))| {
            let sid = match i % 3 {
                0 => sid.to_uppercase(),
                1 => sid.replace('-', ""),
                _ => format!("{{{sid}}}"),
            };
            session(sid, *u, *n)
        })
        .collect();
    l.inserts(
        "sessions INSERT",
        "sessions (sid, user_id, n)",
        &spelled,
        ALL,
    )
    .await;

    // counters: 100 rows with parameters (int4, int8), then one multi-row INSERT.
    let counters: Vec<Row> = m
        .counters
        .iter()
        .map(|(id, n)| row("id, n", vec![Val::I32(Some(*id)), Val::OptI64(*n)]))
        .collect();
    let ins = "INSERT INTO counters (id, n) VALUES ($1, $2)";
    let binds = binds(&counters[..100], ins, "counters INSERT $ ");
    l.prepared(ins, "counters", binds).await;
    l.inserts("counters INSERT", "counters (id, n)", &counters[100..], ALL)
        .await;

    // metrics (range mapping): COPY, then one multi-row INSERT.
    let metrics: Vec<Row> = m
        .metrics
        .iter()
        .map(|(bucket, id, val)| {
            let values = vec![Val::I64(*bucket), Val::I64(*id), Val::I32(*val)];
            row("bucket, id, val", values)
        })
        .collect();
    let sql = "COPY metrics (id, bucket, val) FROM STDIN";
    let data = copy_data(&metrics[..400], sql, false, false);
    l.copy("metrics COPY", sql, data, 97).await;
    l.inserts(
        "metrics INSERT",
        "metrics (bucket, id, val)",
        &metrics[400..],
        ALL,
    )
    .await;
}
