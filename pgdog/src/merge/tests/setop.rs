//! UNION / INTERSECT / EXCEPT: the shard query, branch sources and the merged counts.
use super::*;

fn shard_sql(sql: &str) -> String {
    plan(sql).unwrap().shard_sql.unwrap()
}

/// One shard's rows: each a list of text values (`None`: NULL).
type Rows = Vec<Vec<Option<&'static str>>>;

/// Rows `(value, branch)`.
fn tagged(rows: &[(&'static str, &'static str)]) -> Rows {
    rows.iter().map(|(v, b)| vec![Some(*v), Some(*b)]).collect()
}

fn values(rows: &[Vec<Option<String>>]) -> Vec<String> {
    col(rows, 0)
}

/// The shards' columns: an int4 value and the branch it came from.
const INT_AND_BRANCH: [(&str, i32); 2] = [("a", 23), ("__pgdog_branch", 23)];

/// Plans `sql`, merges `shards` of [`INT_AND_BRANCH`] rows and returns the values.
fn merged_values(sql: &str, shards: &[Vec<Vec<Option<&str>>>]) -> Vec<String> {
    values(&merged(sql, &INT_AND_BRANCH, shards))
}

#[test]
fn shard_query_is_a_tagged_union_all() {
    assert_eq!(
        shard_sql("SELECT a FROM t UNION SELECT b FROM u ORDER BY a LIMIT 3"),
        "SELECT a, 0 AS __pgdog_branch FROM t UNION ALL SELECT b, 1 AS __pgdog_branch FROM u ORDER BY a"
    );
    assert_eq!(
        shard_sql("SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY 1 LIMIT 3 OFFSET 2"),
        "SELECT a, 0 AS __pgdog_branch FROM t UNION ALL SELECT b, 1 AS __pgdog_branch FROM u ORDER BY 1 LIMIT 5"
    );
    let p = plan("SELECT a FROM t INTERSECT ALL (SELECT b FROM u EXCEPT SELECT c FROM v)").unwrap();
    let so = p.merge.set_op.unwrap();
    assert_eq!(so.sources, vec![None, None, None]);
    assert!(!so.streams());
    assert_eq!(p.merge.hidden, 1);
}

#[test]
fn set_operations_refused_across_shards() {
    for (sql, what) in [
        (
            "SELECT a FROM t UNION SELECT a FROM u ORDER BY a + 1",
            "result column",
        ),
        ("SELECT * FROM t UNION SELECT * FROM u ORDER BY a", "\"a\""),
        ("SELECT a FROM t UNION VALUES (1)", "VALUES"),
        (
            "(SELECT a FROM t UNION SELECT a FROM u LIMIT 2) UNION ALL SELECT a FROM v",
            "parenthesized",
        ),
        (
            "WITH w AS (SELECT 1) SELECT a FROM t UNION SELECT a FROM w",
            "WITH",
        ),
    ] {
        let e = plan(sql).unwrap_err();
        assert_eq!(e.code(), "0A000", "{sql}");
        assert!(e.to_string().contains(what), "{sql}: {e}");
    }
    // By position over `*`, and by name before it, are fine.
    assert!(plan("SELECT * FROM t UNION SELECT * FROM u ORDER BY 2").is_ok());
    assert!(plan("SELECT a AS x, * FROM t UNION SELECT 1, * FROM u ORDER BY x").is_ok());
}

#[test]
fn union_dedupes_and_union_all_streams_in_order() {
    let cases: [(&str, [Rows; 2], &[&str]); 2] = [
        // UNION: duplicates across shards and branches go.
        (
            "SELECT a FROM t UNION SELECT b FROM u ORDER BY a",
            [
                tagged(&[("1", "0"), ("3", "0"), ("3", "1")]),
                tagged(&[("2", "0"), ("3", "1"), ("1", "1")]),
            ],
            &["1", "2", "3"],
        ),
        // UNION ALL: every row, merged in order, with LIMIT and OFFSET.
        (
            "SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY a DESC LIMIT 3 OFFSET 1",
            [
                tagged(&[("9", "0"), ("5", "1"), ("1", "0")]),
                tagged(&[("8", "1"), ("5", "0"), ("2", "1")]),
            ],
            &["8", "5", "5"],
        ),
    ];
    for (sql, shards, expected) in cases {
        assert_eq!(merged_values(sql, &shards), expected, "{sql}");
    }
}

#[test]
fn intersect_and_except_count_rows() {
    // Branch 0 holds 1,1,1,2,3 (across shards), branch 1 holds 1,1,3,4.
    let shards = [
        tagged(&[("1", "0"), ("1", "0"), ("3", "1"), ("4", "1")]),
        tagged(&[("1", "0"), ("2", "0"), ("3", "0"), ("1", "1"), ("1", "1")]),
    ];
    let cases: [(&str, &[&str]); 5] = [
        ("INTERSECT", &["1", "3"]),
        ("INTERSECT ALL", &["1", "1", "3"]),
        ("EXCEPT", &["2"]),
        ("EXCEPT ALL", &["1", "2"]),
        ("UNION", &["1", "2", "3", "4"]),
    ];
    for (op, want) in cases {
        let sql = format!("SELECT a FROM t {op} SELECT a FROM u ORDER BY 1");
        assert_eq!(merged_values(&sql, &shards), want, "{op}");
    }
}

#[test]
fn nested_operations_follow_the_tree() {
    // (b0 EXCEPT b1) UNION ALL b2
    let sql = "(SELECT a FROM t EXCEPT SELECT a FROM u) UNION ALL SELECT a FROM v ORDER BY a";
    let shards = [
        tagged(&[("1", "0"), ("2", "0"), ("2", "2")]),
        tagged(&[("2", "1"), ("3", "0"), ("1", "2")]),
    ];
    assert_eq!(merged_values(sql, &shards), ["1", "1", "2", "3"]);
}

#[test]
fn branch_sources_keep_one_shards_rows() {
    let mut p = plan("SELECT a FROM t UNION ALL SELECT a FROM u").unwrap();
    // Branch 1 reads an omnisharded table: the same rows on both shards, kept once.
    p.merge.set_op.as_mut().unwrap().sources = vec![None, Some(0)];
    let shards = [
        tagged(&[("1", "0"), ("7", "1")]),
        tagged(&[("2", "0"), ("7", "1")]),
    ];
    let mut got = values(&run(&p.merge, &rd(&INT_AND_BRANCH), &shards));
    got.sort();
    assert_eq!(got, ["1", "2", "7"]);
}

#[test]
fn numerically_equal_values_are_one_row() {
    let shards = [tagged(&[("1.0", "0")]), tagged(&[("1.00", "1")])];
    let columns = [("a", 1700), ("__pgdog_branch", 23)];
    let out = merged("SELECT a FROM t UNION SELECT a FROM u", &columns, &shards);
    assert_eq!(out.len(), 1);
}
