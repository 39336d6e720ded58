use super::*;

fn values(sql: &str) -> Option<Vec<Const>> {
    literals(sql).map(|l| l.into_iter().map(|l| l.value).collect())
}

#[test]
fn literals_taken_out() {
    assert_eq!(
        values("SELECT 'a''b', 12, 1.5, .5e3, 2147483648 FROM t WHERE x = '' -- 7\n"),
        Some(vec![
            Const::String("a'b".into()),
            Const::Integer(12),
            Const::Numeric("1.5".into()),
            Const::Numeric(".5e3".into()),
            Const::Numeric("2147483648".into()),
            Const::String(String::new()),
        ])
    );
    let sql = "SELECT x FROM t WHERE y = 'abc' AND z = 42";
    let lits = literals(sql).unwrap();
    assert_eq!(&sql[lits[0].start..lits[0].end], "'abc'");
    assert_eq!(&sql[lits[1].start..lits[1].end], "42");
    assert_eq!(values("SELECT 1 /* 2 */"), Some(vec![Const::Integer(1)]));
    assert_eq!(values("SELECT now()"), Some(vec![]));
}

#[test]
fn other_literal_forms_are_left_alone() {
    for sql in [
        "SELECT E'a'",
        "SELECT 'a\\b'",
        "SELECT $1",
        "SELECT 0x10",
        "SELECT 1_000",
        "SELECT B'01'",
        "SELECT X'1F'",
        "SELECT $$a$$",
        "SELECT U&'a'",
        "SELECT 'a'\n'b'",
        "SELECT 'unterminated",
    ] {
        assert_eq!(values(sql), None, "{sql}");
    }
}

/// Every text through one cache: each answer equals the text's own parse.
fn check_all(cache: &ShapeCache, texts: &[String]) {
    for sql in texts {
        let got = cache.get(sql).unwrap();
        let real = Parsed::new(sql).unwrap();
        assert_eq!(got.statements, real.statements, "{sql}");
        assert_eq!(got.shard_comment, real.shard_comment, "{sql}");
        assert_eq!(got.key_comment, real.key_comment, "{sql}");
    }
    assert_eq!(cache.stats().mismatches, 0);
}

#[test]
fn one_shape_serves_its_texts() {
    let cache = ShapeCache::new(16);
    let texts: Vec<String> = (0..20)
        .map(|i| {
            format!(
                "SELECT abalance FROM pgbench_accounts WHERE aid = {}",
                i * 7919
            )
        })
        .collect();
    check_all(&cache, &texts);
    let s = cache.stats();
    assert_eq!(
        (s.entries, s.misses, s.hits, s.not_cacheable),
        (1, 1, 19, 0)
    );
}

#[test]
fn statement_locations_follow_the_literals() {
    let cache = ShapeCache::new(16);
    let texts: Vec<String> = ["1", "123456", "'x'", "'a longer string'"]
        .iter()
        .flat_map(|v| {
            [
                format!("SELECT {v}; SELECT * FROM t WHERE id = {v};  UPDATE t SET a = {v}"),
                format!("/* pgdog_shard: 1 */ SELECT {v}; SELECT 2"),
            ]
        })
        .collect();
    check_all(&cache, &texts);
    let got = cache.get("SELECT 'abc'; SELECT 7").unwrap();
    let second = &got.statements[1];
    assert_eq!(
        &"SELECT 'abc'; SELECT 7"[second.location..second.location + second.len],
        "SELECT 7"
    );
}

#[test]
fn kinds_and_lengths_are_part_of_the_key() {
    let cache = ShapeCache::new(64);
    let texts: Vec<String> = [
        "SELECT * FROM t WHERE id = 5",
        "SELECT * FROM t WHERE id = '5'",
        "SELECT * FROM t WHERE id = 5.0",
        "SELECT * FROM t WHERE id = 5000000000",
        "SELECT * FROM t WHERE id IN (1, 2)",
        "SELECT * FROM t WHERE id IN (1, 2, 3)",
        "SELECT * FROM t WHERE id = 6",
        "SELECT * FROM t WHERE id = 'six'",
        "SELECT * FROM t WHERE id IN (4, 5, 6)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    check_all(&cache, &texts);
    let s = cache.stats();
    // 5.0 and 5000000000 are both numeric literals: one shape.
    assert_eq!((s.misses, s.hits), (5, 4));
}

#[test]
fn value_dependent_shapes_are_parsed_every_time() {
    let cache = ShapeCache::new(64);
    // Folded into one constant, literals the grammar wants as literals.
    let texts: Vec<String> = ["-5", "-7"]
        .iter()
        .map(|v| format!("SELECT * FROM t WHERE id = {v}"))
        .chain(
            [
                "SELECT 1::float(3)",
                "SELECT 1::float(30)",
                "COMMIT PREPARED 'a'",
                "COMMIT PREPARED 'b'",
                "SET work_mem = '64MB'",
                "SET work_mem = '4MB'",
            ]
            .iter()
            .map(|s| s.to_string()),
        )
        .collect();
    check_all(&cache, &texts);
    assert_eq!(cache.stats().hits, 0);
    assert_eq!(cache.stats().not_cacheable, 8);
    // Typed literals take a parameter too (`int $1`): the same tree, served from their shape.
    let texts = ["int '5'", "int '6'", "interval '1' day", "interval '2' day"]
        .map(|v| format!("SELECT * FROM t WHERE id = {v}"));
    check_all(&cache, &texts);
    assert_eq!(cache.stats().hits, 2);
}

#[test]
fn order_by_limit_and_subqueries() {
    let cache = ShapeCache::new(64);
    let mut texts = Vec::new();
    for (a, b, c) in [(1, 10, "x"), (2, 0, "y"), (1, 3, "it''s")] {
        texts.push(format!(
            "SELECT id, count(*) FROM t WHERE v = '{c}' GROUP BY {a} ORDER BY {a} DESC LIMIT {b} OFFSET {b}"
        ));
        texts.push(format!(
            "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE w = {b}) AND EXISTS (SELECT 1 FROM v WHERE v.k = '{c}')"
        ));
        texts.push(format!(
            "INSERT INTO t (id, v) SELECT id, '{c}' FROM u WHERE id = {b} RETURNING {a}"
        ));
        texts.push(format!(
            "WITH w AS (SELECT {a} AS k) SELECT * FROM t JOIN w ON t.id = w.k WHERE t.v = ANY(ARRAY[{a}, {b}])"
        ));
        texts.push(format!(
            "INSERT INTO t (id, v) VALUES ({a}, '{c}'), ({b}, '{c}') ON CONFLICT (id) DO UPDATE SET v = '{c}'"
        ));
    }
    check_all(&cache, &texts);
    assert!(cache.stats().hits >= 10, "{:?}", cache.stats());
}

#[test]
fn errors_are_the_parsers() {
    let cache = ShapeCache::new(16);
    cache.get("SELECT * FROM t WHERE id = 1").unwrap();
    let e = cache.get("SELECT * FROM t WHERE id = 1 AND").unwrap_err();
    assert_eq!(e.code(), "42601");
    let e = cache.get("SELEC 1").unwrap_err();
    assert_eq!(e.code(), "42601");
}

#[test]
fn off_goes_to_the_text_cache() {
    let cache = ShapeCache::new(0);
    check_all(&cache, &["SELECT 1".to_string(), "SELECT 2".to_string()]);
    assert_eq!(cache.stats(), ShapeStats::default());
    cache.resize(4);
    check_all(&cache, &["SELECT 1".to_string(), "SELECT 2".to_string()]);
    assert_eq!((cache.stats().misses, cache.stats().hits), (1, 1));
    cache.resize(0);
    assert_eq!(cache.stats().entries, 0);
}

#[test]
fn repeated_values_are_checked_with_distinct_ones() {
    let cache = ShapeCache::new(16);
    let texts: Vec<String> = [(1, 1), (2, 3), (5, 4), (7, 7)]
        .iter()
        .map(|(a, b)| format!("SELECT * FROM t WHERE a = {a} AND b = {b} AND c = 'x' AND d = 'x'"))
        .collect();
    check_all(&cache, &texts);
    assert_eq!((cache.stats().misses, cache.stats().hits), (1, 3));
}

#[test]
fn a_repeated_text_reuses_its_parse() {
    let cache = ShapeCache::new(16);
    let a = cache.get("SELECT * FROM t WHERE id = 1").unwrap();
    let b = cache.get("SELECT * FROM t WHERE id = 1").unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    let c = cache.get("SELECT * FROM t WHERE id = 2").unwrap();
    assert!(!Arc::ptr_eq(&a, &c));
    assert!(Arc::ptr_eq(
        &c,
        &cache.get("SELECT * FROM t WHERE id = 2").unwrap()
    ));
}

#[test]
fn many_statements_one_pass() {
    let cache = ShapeCache::new(16);
    let texts: Vec<String> = (0..3)
        .map(|r| {
            (0..2000)
                .map(|i| format!("INSERT INTO t VALUES ({}, 'v{}')", i * (r + 1), i + r))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect();
    check_all(&cache, &texts);
    assert_eq!(cache.stats().hits, 2);
}

#[test]
fn calls_are_per_statement() {
    let sql = "SELECT now() WHERE 1 = 1; SELECT my_fn(2)";
    let cache = ShapeCache::new(16);
    for _ in 0..2 {
        let p = cache.get(sql).unwrap();
        assert_eq!(p.calls(0, p.statement_text(0, sql)), ["now"]);
        assert_eq!(p.calls(1, p.statement_text(1, sql)), ["my_fn"]);
    }
}

#[test]
fn the_last_parse_is_refilled_only_when_nobody_holds_it() {
    let cache = ShapeCache::new(16);
    let text = |id: u32| format!("SELECT a FROM t WHERE id = {id} ORDER BY a LIMIT {id}");
    let real = |id: u32| Parsed::new(&text(id)).unwrap().statements;
    let one = cache.get(&text(1)).unwrap();
    let two = cache.get(&text(2)).unwrap();
    // Held: `one` keeps its own statements, `two` is a copy.
    assert_eq!(one.statements, real(1));
    assert_eq!(two.statements, real(2));
    assert!(!Arc::ptr_eq(&one, &two));
    let plan = two.plan(0, &text(2)).unwrap();
    let at = Arc::as_ptr(&two);
    drop((one, two));
    // Nobody holds the last parse: the next text of the shape is filled into it, and its
    // merge plan is made again from its own text.
    let three = cache.get(&text(3)).unwrap();
    assert_eq!(Arc::as_ptr(&three), at);
    assert_eq!(three.statements, real(3));
    let again = three.plan(0, &text(3)).unwrap();
    assert_ne!(*again, *plan);
    assert_eq!(
        *again,
        *Parsed::new(&text(3)).unwrap().plan(0, &text(3)).unwrap()
    );
    assert_eq!(cache.stats().mismatches, 0);
}

#[test]
fn a_refilled_parse_reads_its_own_comments() {
    // `pgdog_shard` is read from the text, literals included: the last text's must not stay.
    let cache = ShapeCache::new(16);
    let texts = [
        "INSERT INTO t (id, note) VALUES (1, '/* pgdog_shard: 1 */')",
        "INSERT INTO t (id, note) VALUES (7, 'x')",
        "SELECT * FROM t WHERE n = 'pgdog_shard' /* pgdog_shard: 2 */",
        "SELECT * FROM t WHERE n = 'bob' /* pgdog_shard: 2 */",
    ];
    for sql in texts {
        let got = cache.get(sql).unwrap();
        let real = Parsed::new(sql).unwrap();
        assert_eq!(got.shard_comment, real.shard_comment, "{sql}");
    }
    assert_eq!(cache.get(texts[1]).unwrap().shard_comment, None);
    assert_eq!(cache.stats().mismatches, 0);
}
