//! stddev / variance, count(DISTINCT key), array_agg and string_agg merges.
use super::*;

#[test]
fn stddev_and_variance_from_partial_sums() {
    let p = plan("SELECT g, stddev(x), var_pop(x) FROM t GROUP BY g").unwrap();
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT g, stddev(x), var_pop(x), count(x) AS __pgdog_0, sum(x::numeric) AS __pgdog_1, sum(x::numeric * x::numeric) AS __pgdog_2 FROM t GROUP BY g")
    );
    let desc = rd(&[
        ("g", 25),
        ("stddev", 1700),
        ("var_pop", 1700),
        ("__pgdog_0", 20),
        ("__pgdog_1", 1700),
        ("__pgdog_2", 1700),
    ]);
    // Group a: 1, 2 on shard 0 and 3, 4 on shard 1; group b: 5 alone; group c: no values.
    let r = |g: &'static str, n: &'static str, s: Option<&'static str>, q: Option<&'static str>| {
        vec![Some(g), Some("0"), Some("0"), Some(n), s, q]
    };
    let out = run(
        &p.merge,
        &desc,
        &[
            vec![r("a", "2", Some("3"), Some("5")), r("c", "0", None, None)],
            vec![
                r("a", "2", Some("7"), Some("25")),
                r("b", "1", Some("5"), Some("25")),
            ],
        ],
    );
    // PostgreSQL 18 over all rows: stddev(1..4) 1.2909944487358056, var_pop 1.2500000000000000;
    // one value: stddev NULL, var_pop 0; none: both NULL.
    assert_eq!(
        out,
        vec![
            one(&["a", "1.2909944487358056", "1.2500000000000000"]),
            one(&["c", "NULL", "NULL"]),
            one(&["b", "NULL", "0"]),
        ]
    );
    // Float inputs give double precision results: refused, not approximated.
    let desc = rd(&[
        ("g", 25),
        ("stddev", 701),
        ("var_pop", 701),
        ("__pgdog_0", 20),
        ("__pgdog_1", 1700),
        ("__pgdog_2", 1700),
    ]);
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
    let desc = rd(&[("count", 20)]);
    let out = run(
        &p.merge,
        &desc,
        &[vec![vec![Some("3")]], vec![vec![Some("4")]]],
    );
    assert_eq!(out, vec![one(&["7"])]);
    let p = plan("SELECT g FROM t GROUP BY g HAVING count(DISTINCT id) > 1").unwrap();
    assert_eq!(p.merge.distinct_keys.len(), 1);
}

#[test]
fn array_agg_and_string_agg_merge_in_order() {
    let p = plan(
        "SELECT g, array_agg(name ORDER BY id DESC), string_agg(name, '; ' ORDER BY id) FROM t GROUP BY g",
    )
    .unwrap();
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT g, array_agg(name ORDER BY id DESC), string_agg(name, '; ' ORDER BY id), array_agg(id ORDER BY id DESC) AS __pgdog_0, array_agg(name ORDER BY id) AS __pgdog_1, array_agg(id ORDER BY id) AS __pgdog_2 FROM t GROUP BY g")
    );
    let desc = rd(&[
        ("g", 25),
        ("array_agg", 1009),
        ("string_agg", 25),
        ("__pgdog_0", 1016),
        ("__pgdog_1", 1009),
        ("__pgdog_2", 1016),
    ]);
    let out = run(
        &p.merge,
        &desc,
        &[
            vec![vec![
                Some("a"),
                Some(r#"{"x y",NULL}"#),
                Some("x y"),
                Some("{10,2}"),
                Some(r#"{NULL,"x y"}"#),
                Some("{2,10}"),
            ]],
            vec![vec![
                Some("a"),
                Some(r#"{"q\"",b}"#),
                Some("b; q\""),
                Some("{7,3}"),
                Some(r#"{b,"q\""}"#),
                Some("{3,7}"),
            ]],
        ],
    );
    // ids 10, 7, 3, 2 descending; names by id ascending skip the NULL.
    assert_eq!(
        out,
        vec![one(&["a", r#"{"x y","q\"",b,NULL}"#, "b; q\"; x y"])]
    );
}

#[test]
fn list_aggregates_without_order_concatenate() {
    let p = plan("SELECT array_agg(id), string_agg(name, ',') FROM t").unwrap();
    let desc = rd(&[("array_agg", 1016), ("string_agg", 25), ("__pgdog_0", 1009)]);
    let out = run(
        &p.merge,
        &desc,
        &[
            vec![vec![Some("{1,2}"), Some("a,b"), Some("{a,b}")]],
            vec![vec![None, None, None]],
            vec![vec![Some("{3}"), Some("c"), Some("{c}")]],
        ],
    );
    assert_eq!(out, vec![one(&["{1,2,3}", "a,b,c"])]);
    // Arrays of arrays are refused at merge time, not flattened.
    let out = run_in(
        &p.merge,
        &desc,
        &[vec![vec![Some("{{1,2}}"), Some("a"), Some("{a}")]]],
        "ISO, MDY",
    );
    assert!(out.is_err());
    assert!(plan("SELECT string_agg(name, delim) FROM t").is_err());
    assert!(plan("SELECT array_agg(DISTINCT id) FROM t").is_err());
}
