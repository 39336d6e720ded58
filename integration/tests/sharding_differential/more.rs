//! Tables sharded by other key types: varchar, uuid, integer, bigint ranges.
use super::*;

pub(crate) struct More {
    /// sku, qty, tags
    pub(crate) items: Vec<(String, Option<i32>, Option<String>)>,
    /// sid, user_id, n
    pub(crate) sessions: Vec<(String, i64, Option<i32>)>,
    /// id, n
    pub(crate) counters: Vec<(i32, Option<i64>)>,
    /// bucket, id, val
    pub(crate) metrics: Vec<(i64, i64, Option<i32>)>,
}

pub(crate) fn uuid_text(r: &mut Rng) -> String {
    let a = r.next();
    let b = r.next();
    let h = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

pub(crate) fn generate_more() -> More {
    let mut r = Rng(0x00c0_ffee);
    let tags = ["red", "green", "blue", "Red"];
    let mut items = Vec::new();
    for i in 0..600 {
        let sku = match i {
            0 => String::new(),
            1 => "ä-ß".into(),
            2 => "SKU-1".into(),
            3 => "sku-1".into(),
            4 => " padded ".into(),
            5 => "日本".into(),
            _ => format!("SKU-{}", r.below(1_000_000) * 1000 + i),
        };
        let qty = (!r.chance(10)).then(|| r.below(1000) as i32 - 100);
        let tag = (!r.chance(15)).then(|| r.pick(&tags).to_string());
        items.push((sku, qty, tag));
    }
    let mut sessions = Vec::new();
    for _ in 0..600 {
        let sid = uuid_text(&mut r);
        sessions.push((
            sid,
            r.below(5000) as i64,
            (!r.chance(10)).then(|| r.below(100) as i32),
        ));
    }
    let mut counters = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while counters.len() < 300 {
        let id = match counters.len() {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => 0,
            _ => r.below(100_000) as i32 - 50_000,
        };
        if seen.insert(id) {
            counters.push((id, (!r.chance(10)).then(|| r.next() as i64 >> 20)));
        }
    }
    let metrics = (0..600)
        .map(|i| {
            let bucket = match i {
                0 => -1,
                1 => 0,
                2 => 999,
                3 => 1000,
                4 => i64::MIN,
                5 => i64::MAX,
                _ => r.below(3000) as i64 - 500,
            };
            (
                bucket,
                i as i64,
                (!r.chance(10)).then(|| r.below(1000) as i32),
            )
        })
        .collect();
    More {
        items,
        sessions,
        counters,
        metrics,
    }
}

/// One step of loading the other-key tables.
enum Load {
    /// A multi-row INSERT into `table (columns)` of these row literals (simple protocol).
    Insert(&'static str, Vec<String>),
    /// A simple-protocol COPY of the data, in CopyData messages of this many bytes.
    Copy(&'static str, String, usize),
}

/// Runs one step: the row count of the INSERT's tag, the COPY's tag, or the error.
async fn run_load(client: &Client, rawc: &mut raw::Conn, step: Load) -> Result<String, String> {
    match step {
        Load::Insert(into, values) => {
            let sql = format!("INSERT INTO {into} VALUES {}", values.join(", "));
            run_simple(client, &sql)
                .await
                .map(|v| format!("{:?}", v.last().and_then(|s| s.tag_count)))
                .map_err(|e| err_text(&e))
        }
        Load::Copy(sql, data, chunk) => rawc.copy_in(sql, data.as_bytes(), chunk).await,
    }
}

/// A value as text, if any.
fn text<T: ToString>(v: &Option<T>) -> Option<String> {
    v.as_ref().map(T::to_string)
}

/// A value as an SQL literal: its text, or NULL.
fn num<T: ToString>(v: Option<T>) -> String {
    text(&v).unwrap_or("NULL".into())
}

/// items: half multi-row INSERT, half COPY CSV; sessions: COPY text, then multi-row INSERT with
/// upper-case and hyphen-less uuids.
fn items_and_sessions(m: &More) -> [(&'static str, Load); 4] {
    let items = m.items[..300]
        .iter()
        .map(|(sku, q, t)| format!("({}, {}, {})", lit(Some(sku)), num(*q), lit(t.as_deref())))
        .collect();
    let csv = m.items[300..]
        .iter()
        .map(|(sku, q, t)| {
            let fields = [
                copy_csv(text(q).as_deref()),
                copy_csv(Some(sku)),
                copy_csv(t.as_deref()),
            ];
            fields.join(",") + "\n"
        })
        .collect();
    let data = m.sessions[..300]
        .iter()
        .map(|(sid, u, n)| format!("{sid}\t{u}\t{}\n", copy_text(text(n).as_deref())))
        .collect();
    let sessions = m.sessions[300..]
        .iter()
        .enumerate()
        .map(|(i, (sid, u, n))| {
            let spelled = match i % 3 {
                0 => sid.to_uppercase(),
                1 => sid.replace('-', ""),
                _ => format!("{{{sid}}}"),
            };
            format!("('{spelled}', {u}, {})", num(*n))
        })
        .collect();
    [
        (
            "items INSERT",
            Load::Insert("items (sku, qty, tags)", items),
        ),
        (
            "items COPY csv",
            Load::Copy(
                "COPY items (qty, sku, tags) FROM STDIN (FORMAT csv)",
                csv,
                333,
            ),
        ),
        (
            "sessions COPY",
            Load::Copy("COPY sessions (sid, user_id, n) FROM STDIN", data, 500),
        ),
        (
            "sessions INSERT",
            Load::Insert("sessions (sid, user_id, n)", sessions),
        ),
    ]
}

/// counters (after 100 rows with parameters): multi-row INSERT; metrics (range mapping):
/// COPY, then multi-row INSERT.
fn counters_and_metrics(m: &More) -> [(&'static str, Load); 3] {
    let counters = m.counters[100..]
        .iter()
        .map(|(id, n)| format!("({id}, {})", num(*n)))
        .collect();
    let data = m.metrics[..400]
        .iter()
        .map(|(b, id, v)| format!("{id}\t{b}\t{}\n", copy_text(text(v).as_deref())))
        .collect();
    let metrics = m.metrics[400..]
        .iter()
        .map(|(b, id, v)| format!("({b}, {id}, {})", num(*v)))
        .collect();
    [
        (
            "counters INSERT",
            Load::Insert("counters (id, n)", counters),
        ),
        (
            "metrics COPY",
            Load::Copy("COPY metrics (id, bucket, val) FROM STDIN", data, 97),
        ),
        (
            "metrics INSERT",
            Load::Insert("metrics (bucket, id, val)", metrics),
        ),
    ]
}

/// Loads the other-key tables through `client` / `rawc` (the same way on both sides).
pub(crate) async fn load_more(
    client: &Client,
    rawc: &mut raw::Conn,
    m: &More,
) -> Vec<(String, Result<String, String>)> {
    let mut out = Vec::new();
    for (what, step) in items_and_sessions(m) {
        out.push((what.to_string(), run_load(client, rawc, step).await));
    }
    // counters: parameters (int4), then multi-row INSERT.
    match client
        .prepare("INSERT INTO counters (id, n) VALUES ($1, $2)")
        .await
    {
        Ok(st) => {
            for (id, n) in &m.counters[..100] {
                let r = client.execute(&st, &[id, n]).await;
                out.push((
                    format!("counters INSERT $ {id}"),
                    r.map(|n| n.to_string()).map_err(|e| err_text(&e)),
                ));
            }
        }
        Err(e) => out.push(("prepare counters".into(), Err(err_text(&e)))),
    }
    for (what, step) in counters_and_metrics(m) {
        out.push((what.to_string(), run_load(client, rawc, step).await));
    }
    out
}

pub(crate) fn more_reads(m: &More) -> Qs {
    use Order::*;
    use P::*;
    let mut q = Qs::default();
    let sku = &m.items[10].0;
    let sid = &m.sessions[7].0;
    let sid_b = &m.sessions[301].0;
    let cid = m.counters[17].0;
    // varchar keys
    q.e(format!("SELECT * FROM items WHERE sku = '{sku}'"));
    q.e("SELECT * FROM items WHERE sku = ''");
    q.e("SELECT * FROM items WHERE sku = 'ä-ß'");
    q.e("SELECT * FROM items WHERE sku = '日本'");
    q.e("SELECT * FROM items WHERE sku = ' padded '");
    q.e("SELECT * FROM items WHERE sku = 'SKU-1'");
    q.e("SELECT * FROM items WHERE sku IN ('SKU-1', 'sku-1', 'ä-ß', 'nope') ORDER BY sku");
    q.e(format!("SELECT * FROM items WHERE sku = '{sku}'::varchar"));
    q.e("SELECT * FROM items ORDER BY sku");
    q.e("SELECT sku, qty FROM items ORDER BY qty NULLS FIRST, sku DESC");
    q.e("SELECT count(*), sum(qty), min(sku), max(sku), avg(qty) FROM items");
    q.e("SELECT tags, count(*), sum(qty) FROM items GROUP BY tags ORDER BY tags NULLS FIRST");
    q.e("SELECT DISTINCT tags FROM items ORDER BY tags DESC NULLS LAST");
    q.p(
        "SELECT * FROM items WHERE sku = $1",
        vec![T(sku.clone())],
        Exact,
    );
    q.p(
        "SELECT * FROM items WHERE sku = $1",
        vec![T("ä-ß".into())],
        Exact,
    );
    q.p(
        "SELECT * FROM items WHERE sku = $1",
        vec![T(String::new())],
        Exact,
    );
    q.p(
        "SELECT sku FROM items WHERE sku IN ($1, $2) ORDER BY sku",
        vec![T("SKU-1".into()), T("sku-1".into())],
        Exact,
    );
    // uuid keys, in the spellings Postgres accepts
    q.e(format!("SELECT * FROM sessions WHERE sid = '{sid}'"));
    q.e(format!(
        "SELECT * FROM sessions WHERE sid = '{}'",
        sid.to_uppercase()
    ));
    q.e(format!(
        "SELECT * FROM sessions WHERE sid = '{}'",
        sid.replace('-', "")
    ));
    q.e(format!("SELECT * FROM sessions WHERE sid = '{{{sid}}}'"));
    q.e(format!(
        "SELECT * FROM sessions WHERE sid = '{sid_b}'::uuid"
    ));
    q.e(format!(
        "SELECT sid, n FROM sessions WHERE sid IN ('{sid}', '{sid_b}') ORDER BY sid"
    ));
    q.e("SELECT sid FROM sessions ORDER BY sid LIMIT 50");
    q.e("SELECT sid, n FROM sessions ORDER BY n DESC NULLS LAST, sid LIMIT 50");
    q.e("SELECT count(*), min(n), max(n), sum(user_id) FROM sessions");
    q.e("SELECT min(sid::text), max(sid::text) FROM sessions");
    q.p(
        "SELECT * FROM sessions WHERE sid = $1::text::uuid",
        vec![T(sid.clone())],
        Exact,
    )
    .bug("B5: a binary text parameter is decoded as a binary uuid because the key column is uuid");
    // integer keys
    q.e(format!("SELECT * FROM counters WHERE id = {cid}"));
    q.e("SELECT * FROM counters WHERE id = -2147483648");
    q.e("SELECT * FROM counters WHERE id = 2147483647");
    q.e("SELECT * FROM counters WHERE id = 3000000000")
        .bug("B3: a bigint constant out of the int key's range is read as an int key: 22003");
    q.e(format!("SELECT * FROM counters WHERE id = {cid}::bigint"));
    q.e("SELECT id, n FROM counters ORDER BY id");
    q.e("SELECT count(*), sum(n), min(n), max(n), sum(id), avg(id) FROM counters");
    q.p(
        "SELECT * FROM counters WHERE id = $1",
        vec![I32(cid)],
        Exact,
    );
    q.p(
        "SELECT * FROM counters WHERE id = $1",
        vec![I32(i32::MIN)],
        Exact,
    );
    q.p(
        "SELECT * FROM counters WHERE id = $1::int8",
        vec![I64(cid as i64)],
        Exact,
    );
    // range-mapped bigint keys
    for b in [-1i64, 0, 5, 999, 1000, 1500, i64::MIN, i64::MAX] {
        q.e(format!(
            "SELECT * FROM metrics WHERE bucket = {b} ORDER BY id"
        ));
    }
    q.e("SELECT * FROM metrics WHERE bucket IN (-1, 999, 1000) ORDER BY bucket, id");
    q.e("SELECT * FROM metrics WHERE bucket BETWEEN 990 AND 1010 ORDER BY bucket, id");
    q.e("SELECT count(*) FROM metrics WHERE bucket < 0");
    q.e("SELECT bucket, count(*), sum(val) FROM metrics GROUP BY bucket ORDER BY bucket LIMIT 30");
    q.e("SELECT count(*), sum(val), min(bucket), max(bucket) FROM metrics");
    q.p(
        "SELECT * FROM metrics WHERE bucket = $1 ORDER BY id",
        vec![I64(1000)],
        Exact,
    );
    q.p(
        "SELECT * FROM metrics WHERE bucket = $1 ORDER BY id",
        vec![I64(-1)],
        Exact,
    );
    q
}

/// Placement of the other-key tables: hash of text, uuid and int4 as Postgres partitions them,
/// bigint ranges by the configured mapping.
pub(crate) async fn check_more_placement(shards: &[Client], phase: &str, report: &mut Report) {
    for (k, shard) in shards.iter().enumerate() {
        for (what, sql) in [
            ("items by hash of sku", format!("SELECT count(*) FROM items WHERE NOT satisfies_hash_partition('text_hash_check'::regclass, {SHARDS}, {k}, sku)")),
            ("sessions by hash of sid", format!("SELECT count(*) FROM sessions WHERE NOT satisfies_hash_partition('uuid_hash_check'::regclass, {SHARDS}, {k}, sid)")),
            ("counters by hash of id", format!("SELECT count(*) FROM counters WHERE NOT satisfies_hash_partition('int_hash_check'::regclass, {SHARDS}, {k}, id)")),
            ("metrics by range of bucket", format!("SELECT count(*) FROM metrics WHERE NOT ({})", ["bucket < 0", "bucket >= 0 AND bucket < 1000", "bucket >= 1000"][k])),
        ] {
            let wrong = count(shard, &sql).await;
            if wrong != 0 {
                report.fail(format!(
                    "placement ({phase}): {wrong} rows of {what} misplaced on shard {k} ({sql})"
                ));
            }
        }
    }
}
