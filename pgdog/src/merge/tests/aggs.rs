//! stddev / variance, count(DISTINCT key), array_agg and string_agg merges.
use super::*;

#[test]
fn stddev_and_variance_from_partial_sums() {
    let sql = "SELECT g, stddev(x), var_pop(x) FROM t GROUP BY g";
    assert_shard_sql(sql, "SELECT g, stddev(x), var_pop(x), count(x) AS __pgdog_0, sum(x::numeric) AS __pgdog_1, sum(x::numeric * x::numeric) AS __pgdog_2 FROM t GROUP BY g");
    let columns = [
        ("g", 25),
        ("stddev", 1700),
        ("var_pop", 1700),
        ("__pgdog_0", 20),
        ("__pgdog_1", 1700),
        ("__pgdog_2", 1700),
    ];
    // Group a: 1, 2 on shard 0 and 3, 4 on shard 1; group b: 5 alone; group c: no values.
    // Rows: g, the shard's own stddev and var_pop (unused, 0), count, sum, sum of squares.
    let shards = [
        shard(&[
            &["a", "0", "0", "2", "3", "5"],
            &["c", "0", "0", "0", "NULL", "NULL"],
        ]),
        shard(&[
            &["a", "0", "0", "2", "7", "25"],
            &["b", "0", "0", "1", "5", "25"],
        ]),
    ];
    // PostgreSQL 18 over all rows: stddev(1..4) 1.2909944487358056, var_pop 1.2500000000000000;
    // one value: stddev NULL, var_pop 0; none: both NULL.
    let expected: &[&[&str]] = &[
        &["a", "1.2909944487358056", "1.2500000000000000"],
        &["c", "NULL", "NULL"],
        &["b", "NULL", "0"],
    ];
    check(sql, &columns, &shards, expected);
    // Float inputs give double precision results: refused, not approximated.
    let desc = rd(&[
        ("g", 25),
        ("stddev", 701),
        ("var_pop", 701),
        ("__pgdog_0", 20),
        ("__pgdog_1", 1700),
        ("__pgdog_2", 1700),
    ]);
    let p = plan(sql).unwrap();
    let mut m = Merger::new(&p.merge, 2);
    let e = m.row_description(0, &desc).unwrap_err();
    assert_eq!(e.code(), "0A000");
    assert!(e.to_string().contains("integer and numeric"), "{e}");
}

#[test]
fn count_distinct_adds_the_shards_counts_and_names_its_column() {
    let p = plan("SELECT count(DISTINCT u.id) FROM users u").unwrap();
    assert_eq!(
        p.merge.distinct_keys,
        vec![KeyColumn {
            qualifier: Some("u".into()),
            name: "id".into()
        }]
    );
    let shards = [shard(&[&["3"]]), shard(&[&["4"]])];
    let out = run(&p.merge, &rd(&[("count", 20)]), &shards);
    assert_eq!(out, client_rows(&[&["7"]]));
    let p = plan("SELECT g FROM t GROUP BY g HAVING count(DISTINCT id) > 1").unwrap();
    assert_eq!(p.merge.distinct_keys.len(), 1);
}

#[test]
fn array_agg_and_string_agg_merge_in_order() {
    let sql = "SELECT g, array_agg(name ORDER BY id DESC), string_agg(name, '; ' ORDER BY id) FROM t GROUP BY g";
    assert_shard_sql(sql, "SELECT g, array_agg(name ORDER BY id DESC), string_agg(name, '; ' ORDER BY id), array_agg(id ORDER BY id DESC) AS __pgdog_0, array_agg(name ORDER BY id) AS __pgdog_1, array_agg(id ORDER BY id) AS __pgdog_2 FROM t GROUP BY g");
    let columns = [
        ("g", 25),
        ("array_agg", 1009),
        ("string_agg", 25),
        ("__pgdog_0", 1016),
        ("__pgdog_1", 1009),
        ("__pgdog_2", 1016),
    ];
    let shards = [
        shard(&[&[
            "a",
            r#"{"x y",NULL}"#,
            "x y",
            "{10,2}",
            r#"{NULL,"x y"}"#,
            "{2,10}",
        ]]),
        shard(&[&[
            "a",
            r#"{"q\"",b}"#,
            "b; q\"",
            "{7,3}",
            r#"{b,"q\""}"#,
            "{3,7}",
        ]]),
    ];
    // ids 10, 7, 3, 2 descending; names by id ascending skip the NULL.
    let expected: &[&[&str]] = &[&["a", r#"{"x y","q\"",b,NULL}"#, "b; q\"; x y"]];
    check(sql, &columns, &shards, expected);
}

#[test]
fn list_aggregates_without_order_concatenate() {
    let sql = "SELECT array_agg(id), string_agg(name, ',') FROM t";
    let columns = [("array_agg", 1016), ("string_agg", 25), ("__pgdog_0", 1009)];
    let shards = [
        shard(&[&["{1,2}", "a,b", "{a,b}"]]),
        shard(&[&["NULL", "NULL", "NULL"]]),
        shard(&[&["{3}", "c", "{c}"]]),
    ];
    check(sql, &columns, &shards, &[&["{1,2,3}", "a,b,c"]]);
    // Arrays of arrays are refused at merge time, not flattened.
    let shards = [shard(&[&["{{1,2}}", "a", "{a}"]])];
    assert!(merged_in(sql, &columns, &shards, "ISO, MDY").is_err());
    assert!(plan("SELECT string_agg(name, delim) FROM t").is_err());
    assert!(plan("SELECT array_agg(DISTINCT id) FROM t").is_err());
}
