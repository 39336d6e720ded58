//! Plan + merger together, with RowDescription / DataRow messages built by hand.
use super::*;
use crate::net::rows::{self, DataRow, Field};
use crate::net::Message;

mod aggs;
mod datestyle;
mod setop;
mod spill;

/// Text-format fields `(name, type oid)`.
pub(super) fn rd(cols: &[(&str, i32)]) -> Message {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(n, oid)| Field::computed(n, *oid, -1))
        .collect();
    rows::row_description(&fields)
}

pub(super) fn row(vals: &[Option<&str>]) -> Message {
    rows::data_row(vals)
}

pub(super) fn text(m: &Message) -> Vec<Option<String>> {
    let r = DataRow::parse(m.clone()).unwrap();
    (0..r.len())
        .map(|i| r.get(i).map(|v| String::from_utf8_lossy(v).into_owned()))
        .collect()
}

pub(super) fn texts(ms: &[Message]) -> Vec<Vec<Option<String>>> {
    ms.iter().map(text).collect()
}

pub(super) fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Runs a merge: `shards[i]` are shard i's rows; returns the client's rows.
pub(super) fn run(
    plan: &MergePlan,
    desc: &Message,
    shards: &[Vec<Vec<Option<&str>>>],
) -> Vec<Vec<Option<String>>> {
    run_in(plan, desc, shards, "ISO, MDY").unwrap()
}

/// [`run`] with the servers' DateStyle; the merge's error, if any.
pub(super) fn run_in(
    plan: &MergePlan,
    desc: &Message,
    shards: &[Vec<Vec<Option<&str>>>],
    datestyle: &str,
) -> Result<Vec<Vec<Option<String>>>, MergeError> {
    run_limited(plan, desc, shards, datestyle, MemoryLimits::default())
}

/// [`run_in`] under memory `limits`.
pub(super) fn run_limited(
    plan: &MergePlan,
    desc: &Message,
    shards: &[Vec<Vec<Option<&str>>>],
    datestyle: &str,
    limits: MemoryLimits,
) -> Result<Vec<Vec<Option<String>>>, MergeError> {
    let mut m = Merger::with_limits(plan, shards.len(), limits);
    m.set_datestyle(datestyle);
    let mut out = Vec::new();
    for i in 0..shards.len() {
        let client = m.row_description(i, desc).unwrap();
        assert_eq!(client.is_some(), i == 0);
    }
    // Interleave the shards row by row, taking what is ready as we go.
    let longest = shards.iter().map(Vec::len).max().unwrap_or(0);
    for r in 0..=longest {
        for (i, rows) in shards.iter().enumerate() {
            match rows.get(r) {
                Some(vals) => m.row(i, row(vals))?,
                None if r == rows.len() => m.shard_done(i),
                None => {}
            }
            m.take_ready(&mut out);
        }
    }
    m.finish(&mut out)?;
    assert_eq!(m.rows_sent() as usize, out.len());
    Ok(texts(&out))
}

pub(super) fn one(v: &[&str]) -> Vec<Option<String>> {
    v.iter()
        .map(|x| if *x == "NULL" { None } else { s(x) })
        .collect()
}

/// Client rows from string cells, each row as [`one`] makes it.
pub(super) fn client_rows(rows: &[&[&str]]) -> Vec<Vec<Option<String>>> {
    rows.iter().map(|r| one(r)).collect()
}

/// One shard's text rows for [`run`] from string cells, `"NULL"` standing for a null.
pub(super) fn shard<'a>(rows: &[&[&'a str]]) -> Vec<Vec<Option<&'a str>>> {
    rows.iter()
        .map(|r| r.iter().map(|v| (*v != "NULL").then_some(*v)).collect())
        .collect()
}

/// Plans `sql` and merges `shards` under a text RowDescription of `columns`.
pub(super) fn merged(
    sql: &str,
    columns: &[(&str, i32)],
    shards: &[Vec<Vec<Option<&str>>>],
) -> Vec<Vec<Option<String>>> {
    run(&plan(sql).unwrap().merge, &rd(columns), shards)
}

/// [`merged`] in the servers' `datestyle`; the merge's error, if any.
pub(super) fn merged_in(
    sql: &str,
    columns: &[(&str, i32)],
    shards: &[Vec<Vec<Option<&str>>>],
    datestyle: &str,
) -> Result<Vec<Vec<Option<String>>>, MergeError> {
    run_in(&plan(sql).unwrap().merge, &rd(columns), shards, datestyle)
}

/// Checks that [`merged`] gives the client the `expected` rows (cells as in [`one`]).
#[track_caller]
pub(super) fn check(
    sql: &str,
    columns: &[(&str, i32)],
    shards: &[Vec<Vec<Option<&str>>>],
    expected: &[&[&str]],
) {
    assert_eq!(merged(sql, columns, shards), client_rows(expected), "{sql}");
}

/// The SQL the shards run instead of `sql` (`None`: the query itself).
pub(super) fn rewritten(sql: &str) -> Option<String> {
    plan(sql).unwrap().shard_sql
}

/// Asserts the query the shards run for `sql`.
pub(super) fn assert_shard_sql(sql: &str, expected: &str) {
    assert_eq!(
        rewritten(sql).as_deref(),
        Some(expected),
        "shards' SQL for {sql}"
    );
}

/// A RowDescription of binary-format columns `(name, type oid, type size)`.
pub(super) fn binary_rd(cols: &[(&str, i32, i16)]) -> Message {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(n, oid, len)| Field {
            format: 1,
            ..Field::computed(n, *oid, *len)
        })
        .collect();
    rows::row_description(&fields)
}

pub(super) fn col(rows: &[Vec<Option<String>>], i: usize) -> Vec<String> {
    rows.iter()
        .map(|r| r[i].clone().unwrap_or_else(|| "NULL".into()))
        .collect()
}

#[test]
fn plain_select_is_passthrough() {
    let p = plan("SELECT id, name FROM users WHERE active").unwrap();
    assert!(p.merge.is_passthrough());
    assert_eq!(p.shard_sql, None);
    let p = plan("SELECT * FROM users FOR UPDATE").unwrap();
    assert!(p.merge.is_passthrough());
    let p = plan("INSERT INTO t VALUES (1)").unwrap();
    assert!(p.merge.is_passthrough());
}

#[test]
fn kway_merge_with_several_keys() {
    let sql = "SELECT a, b FROM t ORDER BY a DESC, b NULLS FIRST";
    assert_eq!(rewritten(sql), None);
    let shards = [
        shard(&[&["NULL", "z"], &["10", "x"], &["9", "NULL"], &["9", "b"]]),
        shard(&[&["NULL", "a"], &["10", "NULL"], &["2", "q"]]),
        shard(&[]),
        shard(&[&["9", "a"]]),
    ];
    let expected: &[&[&str]] = &[
        &["NULL", "a"],
        &["NULL", "z"],
        &["10", "NULL"],
        &["10", "x"],
        &["9", "NULL"],
        &["9", "a"],
        &["9", "b"],
        &["2", "q"],
    ];
    check(sql, &[("a", 23), ("b", 25)], &shards, expected);
}

#[test]
fn kway_waits_for_every_unfinished_shard() {
    let p = plan("SELECT a FROM t ORDER BY a").unwrap();
    let desc = rd(&[("a", 23)]);
    let mut m = Merger::new(&p.merge, 2);
    m.row_description(0, &desc).unwrap();
    m.row_description(1, &desc).unwrap();
    let mut out = Vec::new();
    m.row(0, row(&[Some("1")])).unwrap();
    m.row(0, row(&[Some("5")])).unwrap();
    m.take_ready(&mut out);
    assert!(out.is_empty(), "shard 1 may still send a smaller row");
    m.row(1, row(&[Some("3")])).unwrap();
    m.take_ready(&mut out);
    assert_eq!(texts(&out), vec![one(&["1"]), one(&["3"])]);
    assert_eq!(m.queued(0), 1);
    m.shard_done(1);
    m.take_ready(&mut out);
    assert_eq!(out.len(), 3);
    m.shard_done(0);
    m.finish(&mut out).unwrap();
    assert_eq!(m.rows_sent(), 3);
}

#[test]
fn order_by_numeric_and_float_is_typed() {
    let shards = [
        shard(&[&["-10.5", "1"], &["2", "NaN"]]),
        shard(&[&["-9", "0"], &["10", "1e+15"], &["NaN", "NULL"]]),
    ];
    let out = merged(
        "SELECT n, f FROM t ORDER BY n, f DESC",
        &[("n", 1700), ("f", 701)],
        &shards,
    );
    assert_eq!(col(&out, 0), vec!["-10.5", "-9", "2", "10", "NaN"]);
}

#[test]
fn order_by_hidden_column_is_stripped() {
    let p = plan("SELECT name FROM users ORDER BY created_at DESC LIMIT 2").unwrap();
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT name, created_at AS __pgdog_0 FROM users ORDER BY created_at DESC LIMIT 2")
    );
    assert_eq!(p.merge.hidden_columns(), 1);
    let desc = rd(&[("name", 25), ("__pgdog_0", 1184)]);
    let mut m = Merger::new(&p.merge, 2);
    let client = m.row_description(0, &desc).unwrap().unwrap();
    let fields = rows::read_row_description(&client).unwrap();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0].name, "name");
    let shards = [
        shard(&[
            &["a", "2024-01-01 10:00:00+00"],
            &["b", "2023-01-01 00:00:00+00"],
        ]),
        shard(&[
            &["c", "2024-01-01 11:00:00+02"],
            &["d", "2020-01-01 00:00:00+00"],
        ]),
    ];
    // 11:00+02 is 09:00 UTC: before 10:00+00.
    assert_eq!(
        run(&p.merge, &desc, &shards),
        client_rows(&[&["a"], &["c"]])
    );
}

#[test]
fn order_by_resolution() {
    let p = plan("SELECT a AS x, b + 1 FROM t ORDER BY 2, x, b + 1, t.a").unwrap();
    let cols: Vec<ColumnRef> = p.merge.order_by.iter().map(|k| k.column).collect();
    assert_eq!(
        cols,
        vec![
            ColumnRef::Index(1),
            ColumnRef::Index(0),
            ColumnRef::Index(1),
            ColumnRef::Hidden(0)
        ]
    );
    let p = plan("SELECT * FROM t ORDER BY id").unwrap();
    assert_eq!(p.merge.order_by[0].column, ColumnRef::Hidden(0));
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT *, id AS __pgdog_0 FROM t ORDER BY id")
    );
    let p = plan("SELECT a FROM t ORDER BY a DESC NULLS LAST").unwrap();
    assert!(p.merge.order_by[0].descending && !p.merge.order_by[0].nulls_first);
    let p = plan("SELECT a FROM t ORDER BY a DESC").unwrap();
    assert!(p.merge.order_by[0].nulls_first);
}

#[test]
fn limit_offset_across_shards() {
    let sql = "SELECT a FROM t ORDER BY a LIMIT 3 OFFSET 2";
    assert_shard_sql(sql, "SELECT a FROM t ORDER BY a LIMIT 5");
    let shards = [
        shard(&[&["1"], &["4"], &["5"], &["8"]]),
        shard(&[&["2"], &["3"], &["6"], &["7"]]),
    ];
    let out = merged(sql, &[("a", 23)], &shards);
    assert_eq!(col(&out, 0), vec!["3", "4", "5"]);
    // Without ORDER BY: any rows, but the right number.
    let shards = [shard(&[&["1"], &["2"]]), shard(&[&["3"], &["4"]])];
    let sql = "SELECT a FROM t LIMIT 3";
    assert_eq!(rewritten(sql), None);
    assert_eq!(merged(sql, &[("a", 23)], &shards).len(), 3);
    let sql = "SELECT a FROM t OFFSET 3";
    assert_shard_sql(sql, "SELECT a FROM t");
    assert_eq!(merged(sql, &[("a", 23)], &shards).len(), 1);
    assert!(merged("SELECT a FROM t LIMIT 0", &[("a", 23)], &[shard(&[&["1"]])]).is_empty());
}

#[test]
fn limit_offset_parameters() {
    let p = plan("SELECT a FROM t ORDER BY a LIMIT $1 OFFSET $2").unwrap();
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT a FROM t ORDER BY a LIMIT $1::bigint + $2::bigint")
    );
    assert!(p.merge.needs_params());
    let mut m = Merger::new(&p.merge, 1);
    assert!(m.row_description(0, &rd(&[("a", 23)])).is_err());
    let bound = p
        .merge
        .bind(&[Some(b"2"), Some(&5i64.to_be_bytes())], &[0, 1])
        .unwrap();
    assert_eq!(bound.limit, Some(Bound::Const(2)));
    assert_eq!(bound.offset, Some(Bound::Const(5)));
    let ten: &[&[&str]] = &[
        &["1"],
        &["2"],
        &["3"],
        &["4"],
        &["5"],
        &["6"],
        &["7"],
        &["8"],
        &["9"],
        &["10"],
    ];
    let out = run(&bound, &rd(&[("a", 23)]), &[shard(ten)]);
    assert_eq!(col(&out, 0), vec!["6", "7"]);
    let nulls = p.merge.bind(&[None, None], &[]).unwrap();
    assert_eq!((nulls.limit, nulls.offset), (None, None));
    assert_eq!(
        p.merge.bind(&[Some(b"-1"), None], &[]).unwrap_err().code(),
        "2201W"
    );
    assert_eq!(
        p.merge.bind(&[Some(b"x"), None], &[]).unwrap_err().code(),
        "22P02"
    );
    assert_eq!(rewritten("SELECT a FROM t LIMIT $1"), None);
    assert_shard_sql(
        "SELECT a FROM t LIMIT 10 OFFSET $1",
        "SELECT a FROM t LIMIT 10 + $1::bigint",
    );
}

#[test]
fn count_sum_min_max_without_group_by() {
    let sql = "SELECT count(*), count(x), sum(x), min(x), max(x), sum(f), sum(n) FROM t";
    assert_eq!(rewritten(sql), None);
    let columns = [
        ("count", 20),
        ("count", 20),
        ("sum", 20),
        ("min", 23),
        ("max", 23),
        ("sum", 701),
        ("sum", 1700),
    ];
    let shards = [
        shard(&[&["3", "2", "7", "-1", "8", "0.1", "1.50"]]),
        shard(&[&["0", "0", "NULL", "NULL", "NULL", "NULL", "NULL"]]),
        shard(&[&["4", "4", "10", "2", "10", "0.2", "-0.125"]]),
    ];
    let expected: &[&[&str]] = &[&["7", "6", "17", "-1", "10", "0.30000000000000004", "1.375"]];
    check(sql, &columns, &shards, expected);
}

#[test]
fn sum_of_all_nulls_is_null_and_count_is_zero() {
    check(
        "SELECT count(x), sum(x), min(x) FROM t",
        &[("count", 20), ("sum", 1700), ("min", 25)],
        &[
            shard(&[&["0", "NULL", "NULL"]]),
            shard(&[&["0", "NULL", "NULL"]]),
        ],
        &[&["0", "NULL", "NULL"]],
    );
}

#[test]
fn bigint_sum_overflow_is_an_error() {
    let p = plan("SELECT sum(x) FROM t").unwrap();
    let desc = rd(&[("sum", 20)]);
    let mut m = Merger::new(&p.merge, 2);
    m.row_description(0, &desc).unwrap();
    m.row(0, row(&[Some("9223372036854775807")])).unwrap();
    m.row(1, row(&[Some("1")])).unwrap();
    let err = m.finish(&mut Vec::new()).unwrap_err();
    assert_eq!(err.code(), "22003");
}

#[test]
fn avg_is_recomputed_from_sum_and_count() {
    let sql = "SELECT g, avg(x) FROM t GROUP BY g ORDER BY g";
    assert_shard_sql(
        sql,
        "SELECT g, avg(x), sum(x) AS __pgdog_0, count(x) AS __pgdog_1 FROM t GROUP BY g ORDER BY g",
    );
    // avg(int4): sum is bigint, avg numeric.
    let columns = [
        ("g", 25),
        ("avg", 1700),
        ("__pgdog_0", 20),
        ("__pgdog_1", 20),
    ];
    let shards = [
        shard(&[&["a", "1.5", "3", "2"], &["b", "NULL", "NULL", "0"]]),
        shard(&[&["a", "3.5", "7", "2"], &["c", "1", "1", "3"]]),
    ];
    let expected: &[&[&str]] = &[
        &["a", "2.5000000000000000"],
        &["b", "NULL"],
        &["c", "0.33333333333333333333"],
    ];
    check(sql, &columns, &shards, expected);
    // avg(real): the shards' sums are real, so the avgs weighted by counts are used.
    let columns = [
        ("g", 25),
        ("avg", 701),
        ("__pgdog_0", 700),
        ("__pgdog_1", 20),
    ];
    let shards = [
        shard(&[&["a", "0.1", "0.1", "1"]]),
        shard(&[&["a", "0.2", "0.4", "2"]]),
    ];
    check(sql, &columns, &shards, &[&["a", "0.16666666666666666"]]);
}

#[test]
fn group_by_merges_groups_and_null_keys() {
    let shards = [
        shard(&[&["1.0", "2"], &["NULL", "1"], &["2", "5"]]),
        shard(&[&["1.00", "2"], &["NULL", "3"], &["3", "1"]]),
    ];
    let out = merged(
        "SELECT g, count(*) FROM t GROUP BY g ORDER BY count(*) DESC, g",
        &[("g", 1700), ("count", 20)],
        &shards,
    );
    assert_eq!(col(&out, 0), vec!["2", "1.0", "NULL", "3"]);
    assert_eq!(col(&out, 1), vec!["5", "4", "4", "1"]);
}

#[test]
fn group_by_key_not_in_targets_is_hidden() {
    let sql = "SELECT count(*) FROM t GROUP BY g ORDER BY 1 LIMIT 1 OFFSET 1";
    assert_shard_sql(
        sql,
        "SELECT count(*), g AS __pgdog_0 FROM t GROUP BY g ORDER BY 1",
    );
    let shards = [
        shard(&[&["1", "1"], &["1", "2"]]),
        shard(&[&["5", "1"], &["1", "3"]]),
    ];
    check(sql, &[("count", 20), ("__pgdog_0", 23)], &shards, &[&["1"]]);
}

#[test]
fn distinct_dedupes_across_shards() {
    let shards = [
        shard(&[&["1"], &["2.0"], &["NULL"]]),
        shard(&[&["1.0"], &["2"], &["3"], &["NULL"]]),
    ];
    let out = merged(
        "SELECT DISTINCT a FROM t ORDER BY a",
        &[("a", 1700)],
        &shards,
    );
    assert_eq!(col(&out, 0), vec!["1", "2.0", "3", "NULL"]);
    // DISTINCT ON keeps the first row of each key in ORDER BY order.
    let shards = [
        shard(&[&["1", "5"], &["2", "1"]]),
        shard(&[&["1", "7"], &["3", "0"]]),
    ];
    check(
        "SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b DESC",
        &[("a", 23), ("b", 23)],
        &shards,
        &[&["1", "7"], &["2", "1"], &["3", "0"]],
    );
}

#[test]
fn having_filters_merged_groups() {
    let sql = "SELECT g FROM t GROUP BY g HAVING count(*) > 2 AND g <> 'z' AND 10 >= sum(x)";
    assert_shard_sql(
        sql,
        "SELECT g, count(*) AS __pgdog_0, sum(x) AS __pgdog_1 FROM t GROUP BY g HAVING g <> 'z'",
    );
    let shards = [
        shard(&[&["a", "2", "4"], &["b", "2", "4"], &["c", "3", "11"]]),
        shard(&[&["a", "1", "6"], &["d", "5", "NULL"]]),
    ];
    let columns = [("g", 25), ("__pgdog_0", 20), ("__pgdog_1", 20)];
    check(sql, &columns, &shards, &[&["a"]]);
    let p = plan("SELECT g, avg(x) FROM t GROUP BY g HAVING avg(x) < -1.5").unwrap();
    assert_eq!(p.merge.grouping.as_ref().unwrap().having.len(), 1);
}

#[test]
fn unsupported_constructs() {
    let cases = [
        (
            "SELECT row_number() OVER () FROM t",
            "window functions (row_number)",
        ),
        (
            "SELECT x FROM (SELECT rank() OVER (ORDER BY a) AS x FROM t) s",
            "window functions (rank)",
        ),
        ("SELECT json_agg(a) FROM t", "json_agg"),
        ("SELECT array_agg(DISTINCT a) FROM t", "array_agg(DISTINCT"),
        (
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FROM t",
            "percentile_cont",
        ),
        ("SELECT sum(DISTINCT a) FROM t", "sum(DISTINCT"),
        ("SELECT count(DISTINCT a + 1) FROM t", "count(DISTINCT"),
        ("SELECT count(*) + 1 FROM t", "inside an expression"),
        ("SELECT coalesce(sum(a), 0) FROM t", "inside an expression"),
        ("SELECT a, count(*) FROM t GROUP BY ROLLUP (a)", "ROLLUP"),
        (
            "SELECT g FROM t GROUP BY g HAVING count(*) > 1 OR g = 1",
            "HAVING",
        ),
        (
            "SELECT a FROM t ORDER BY a FETCH FIRST 3 ROWS WITH TIES",
            "WITH TIES",
        ),
        ("SELECT stddev(DISTINCT a) FROM t", "stddev(DISTINCT"),
        ("SELECT corr(a, b) FROM t", "corr"),
        ("SELECT a FROM t LIMIT 1 + 1", "LIMIT with an expression"),
    ];
    for (sql, what) in cases {
        match plan(sql) {
            Err(e) => {
                assert_eq!(e.code(), "0A000", "{sql}: {e}");
                assert!(e.to_string().contains(what), "{sql}: {e}");
            }
            Ok(p) => panic!("{sql} should be refused, got {p:?}"),
        }
    }
    // Aggregates in correlated subqueries and min(DISTINCT) are fine.
    assert!(
        plan("SELECT id, (SELECT count(*) FROM o WHERE o.u = u.id) FROM u")
            .unwrap()
            .merge
            .is_passthrough()
    );
    assert!(plan("SELECT min(DISTINCT a) FROM t").is_ok());
    assert_eq!(plan("SELEC 1").unwrap_err().code(), "42601");
}

#[test]
fn row_descriptions_must_agree() {
    let p = plan("SELECT a, b FROM t ORDER BY a").unwrap();
    let mut m = Merger::new(&p.merge, 2);
    m.row_description(0, &rd(&[("a", 23), ("b", 25)])).unwrap();
    let e = m
        .row_description(1, &rd(&[("a", 23), ("b", 1043)]))
        .unwrap_err();
    assert_eq!(e.code(), "XX000");
    assert!(e.to_string().contains("column b"), "{e}");
    let e = m.row_description(1, &rd(&[("a", 23)])).unwrap_err();
    assert_eq!(e.code(), "XX000");
    let e = m
        .row_description(1, &rd(&[("a", 23), ("c", 25)]))
        .unwrap_err();
    assert!(e.to_string().contains("\"c\""), "{e}");
}

#[test]
fn unorderable_types_and_bad_values_are_errors() {
    let p = plan("SELECT a FROM t ORDER BY a").unwrap();
    let mut m = Merger::new(&p.merge, 1);
    assert_eq!(
        m.row_description(0, &rd(&[("a", 1186)]))
            .unwrap_err()
            .code(),
        "0A000"
    );
    let mut m = Merger::new(&p.merge, 2);
    m.row_description(0, &rd(&[("a", 23)])).unwrap();
    m.row(0, row(&[Some("1")])).unwrap();
    m.row(1, row(&[Some("x")])).unwrap();
    let mut out = Vec::new();
    m.take_ready(&mut out);
    m.shard_done(0);
    m.shard_done(1);
    assert_eq!(m.finish(&mut out).unwrap_err().code(), "XX000");
    assert!(Merger::new(&p.merge, 1).row(0, row(&[Some("1")])).is_err());
}

#[test]
fn binary_columns_merge() {
    let p = plan("SELECT a, count(*) FROM t GROUP BY a ORDER BY a DESC").unwrap();
    let desc = binary_rd(&[("a", 20, 8), ("count", 20, 8)]);
    let mut m = Merger::new(&p.merge, 2);
    m.row_description(0, &desc).unwrap();
    m.row_description(1, &desc).unwrap();
    let b = |v: i64| v.to_be_bytes().to_vec();
    m.row(0, rows::data_row(&[Some(b(1)), Some(b(2))])).unwrap();
    m.row(1, rows::data_row(&[Some(b(1)), Some(b(3))])).unwrap();
    m.row(1, rows::data_row(&[Some(b(7)), Some(b(1))])).unwrap();
    let mut out = Vec::new();
    m.finish(&mut out).unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> = out
        .iter()
        .map(|m| {
            let r = DataRow::parse(m.clone()).unwrap();
            (r.get(0).unwrap().to_vec(), r.get(1).unwrap().to_vec())
        })
        .collect();
    assert_eq!(got, vec![(b(7), b(1)), (b(1), b(5))]);
}

#[test]
fn group_by_output_alias_uses_the_target() {
    let p =
        plan("SELECT tenant AS t, count(*) AS n FROM users GROUP BY t ORDER BY n DESC, t").unwrap();
    // No hidden `t` column: the shard resolves the alias itself.
    assert_eq!(p.shard_sql, None);
    let g = p.merge.grouping.as_ref().unwrap();
    assert_eq!(g.keys, vec![0]);
    assert_eq!(g.columns, vec![AggFn::First, AggFn::Count]);
    let cols: Vec<ColumnRef> = p.merge.order_by.iter().map(|k| k.column).collect();
    assert_eq!(cols, vec![ColumnRef::Index(1), ColumnRef::Index(0)]);
    let shards = [
        shard(&[&["a", "2"], &["b", "1"]]),
        shard(&[&["b", "4"], &["c", "3"]]),
    ];
    let out = run(&p.merge, &rd(&[("t", 25), ("n", 20)]), &shards);
    assert_eq!(out, client_rows(&[&["b", "5"], &["c", "3"], &["a", "2"]]));

    // An alias of an expression, with a positional and an expression key beside it.
    let p =
        plan("SELECT lower(name) AS l, region, sum(x) FROM t GROUP BY l, 2 ORDER BY l").unwrap();
    assert_eq!(p.shard_sql, None);
    assert_eq!(p.merge.grouping.as_ref().unwrap().keys, vec![0, 1]);
    // A target with the very expression wins over an alias (Postgres prefers input columns).
    let p =
        plan("SELECT tenant AS region, region AS tenant, count(*) FROM t GROUP BY tenant").unwrap();
    assert_eq!(p.merge.grouping.as_ref().unwrap().keys, vec![0]);
    // A name that is no target's alias stays a hidden column.
    let p = plan("SELECT count(*) AS n FROM t GROUP BY g").unwrap();
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT count(*) AS n, g AS __pgdog_0 FROM t GROUP BY g")
    );
    // ORDER BY an alias in a plain query: the target's column.
    let p = plan("SELECT tenant AS t, id FROM users ORDER BY t DESC, id").unwrap();
    assert_eq!(p.shard_sql, None);
    assert_eq!(p.merge.order_by[0].column, ColumnRef::Index(0));
}

/// Binary numeric as Postgres 18 sends it (hex of `numeric_send`).
fn num_bin(s: &str) -> Vec<u8> {
    Decimal::parse(s).unwrap().to_binary()
}

#[test]
fn binary_sum_and_avg_merge_like_text() {
    // SELECT sum(score), avg(age), count(*), sum(n) FROM users: score numeric, age int4,
    // n int4; avg's hidden sum (bigint) and count come back binary too (one format code).
    let p = plan("SELECT sum(score), avg(age), count(*), sum(n) FROM users").unwrap();
    assert_eq!(p.merge.hidden_columns(), 2);
    let desc = binary_rd(&[
        ("sum", 1700, -1),
        ("avg", 1700, -1),
        ("count", 20, 8),
        ("sum", 20, 8),
        ("__pgdog_0", 20, 8),
        ("__pgdog_1", 20, 8),
    ]);
    let i8b = |v: i64| Some(v.to_be_bytes().to_vec());
    // Shard rows: (sum(score), avg(age), count, sum(n), sum(age), count(age)).
    let shard_rows = [
        vec![
            Some(num_bin("1.50")),
            Some(num_bin("1.5000000000000000")),
            i8b(2),
            i8b(3),
            i8b(3),
            i8b(2),
        ],
        vec![
            Some(num_bin("123456789.123456789")),
            Some(num_bin("4.0000000000000000")),
            i8b(1),
            i8b(-10),
            i8b(4),
            i8b(1),
        ],
        // An empty shard: NULL sums and avg, zero counts.
        vec![None, None, i8b(0), None, None, i8b(0)],
    ];
    let mut m = Merger::new(&p.merge, 3);
    for i in 0..3 {
        m.row_description(i, &desc).unwrap();
    }
    for (i, r) in shard_rows.iter().enumerate() {
        m.row(i, rows::data_row(r)).unwrap();
        m.shard_done(i);
    }
    let mut out = Vec::new();
    m.finish(&mut out).unwrap();
    assert_eq!(out.len(), 1);
    let r = DataRow::parse(out[0].clone()).unwrap();
    assert_eq!(r.len(), 4);
    // Postgres 18 over the whole table: sum 123456790.623456789 (dscale 9), avg(1, 2, 4)
    // = 2.3333333333333333 (dscale 16), count 3, sum(n) -7.
    let hex = |v: &[u8]| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(r.get(0).unwrap()), hex(&num_bin("123456790.623456789")));
    assert_eq!(
        hex(r.get(1).unwrap()),
        "000500000000001000020d050d050d050d05"
    );
    assert_eq!(r.get(2).unwrap(), 3i64.to_be_bytes());
    assert_eq!(r.get(3).unwrap(), (-7i64).to_be_bytes());

    // avg(numeric) and sum(bigint) in binary, every shard's avg NULL: NULL results.
    let p = plan("SELECT avg(x), sum(y) FROM t").unwrap();
    let desc = binary_rd(&[
        ("avg", 1700, -1),
        ("sum", 1700, -1),
        ("__pgdog_0", 1700, -1),
        ("__pgdog_1", 20, -1),
    ]);
    let mut m = Merger::new(&p.merge, 2);
    m.row_description(0, &desc).unwrap();
    m.row_description(1, &desc).unwrap();
    m.row(
        0,
        rows::data_row(&[None, Some(num_bin("99999999999999999999")), None, i8b(0)]),
    )
    .unwrap();
    m.row(
        1,
        rows::data_row(&[
            Some(num_bin("-0.50000000000000000000")),
            Some(num_bin("1")),
            Some(num_bin("-0.5")),
            i8b(1),
        ]),
    )
    .unwrap();
    let mut out = Vec::new();
    m.finish(&mut out).unwrap();
    let r = DataRow::parse(out[0].clone()).unwrap();
    assert_eq!(
        Decimal::from_binary(r.get(0).unwrap()).unwrap().to_string(),
        "-0.50000000000000000000"
    );
    assert_eq!(
        Decimal::from_binary(r.get(1).unwrap()).unwrap().to_string(),
        "100000000000000000000"
    );
}

#[test]
fn bit_aggregates_merge() {
    // Shard 0 saw 12 and 10, shard 1 saw 6 (and nothing on shard 2).
    let shards = [
        shard(&[&["8", "14", "6"]]),
        shard(&[&["6", "6", "6"]]),
        shard(&[&["NULL", "NULL", "NULL"]]),
    ];
    check(
        "SELECT bit_and(a), bit_or(a), bit_xor(a) FROM t",
        &[("bit_and", 23), ("bit_or", 23), ("bit_xor", 23)],
        &shards,
        &[&["0", "14", "0"]],
    );
    assert!(plan("SELECT bit_xor(DISTINCT a) FROM t").is_err());
    assert!(plan("SELECT bit_or(DISTINCT a) FROM t").is_ok());
}
