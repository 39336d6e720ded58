//! Merges past `merge_work_mem` spill to temporary files and still give the answer they give
//! in memory.
use super::*;

/// Pseudo-random rows `(k, v, w)` for 3 shards: `groups` distinct k values, v small integers.
fn data(rows: usize, groups: u64) -> Vec<Vec<Vec<Option<String>>>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut shards = vec![Vec::new(), Vec::new(), Vec::new()];
    for i in 0..rows {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = x % groups;
        let v = (x >> 20) % 50;
        let w = if i % 17 == 0 {
            None
        } else {
            Some(format!("w{}", (x >> 32) % 7))
        };
        shards[i % 3].push(vec![Some(k.to_string()), Some(v.to_string()), w]);
    }
    shards
}

fn borrowed(shards: &[Vec<Vec<Option<String>>>]) -> Vec<Vec<Vec<Option<&str>>>> {
    shards
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| r.iter().map(|v| v.as_deref()).collect())
                .collect()
        })
        .collect()
}

fn tiny() -> MemoryLimits {
    MemoryLimits {
        work_mem: 8 << 10,
        ..MemoryLimits::default()
    }
}

fn sorted(mut rows: Vec<Vec<Option<String>>>) -> Vec<Vec<Option<String>>> {
    rows.sort();
    rows
}

/// Each shard's rows sorted by the first column (as a shard answering ORDER BY would).
fn sorted_shards(shards: &[Vec<Vec<Option<String>>>], key: usize) -> Vec<Vec<Vec<Option<String>>>> {
    shards
        .iter()
        .map(|rows| {
            let mut rows = rows.clone();
            rows.sort_by_key(|r| r[key].as_deref().map(|v| v.parse::<i64>().unwrap_or(0)));
            rows
        })
        .collect()
}

/// Rows `(k, v, v, w)`: a group's key, partial count, partial sum and min/max.
fn partials(raw: &[Vec<Vec<Option<String>>>]) -> Vec<Vec<Vec<Option<String>>>> {
    raw.iter()
        .map(|rows| {
            rows.iter()
                .map(|r| vec![r[0].clone(), r[1].clone(), r[1].clone(), r[2].clone()])
                .collect()
        })
        .collect()
}

#[test]
fn spilled_merges_equal_in_memory_ones() {
    let aggs: &[(&str, i32)] = &[("k", 20), ("count", 20), ("sum", 1700), ("min", 25)];
    let kvc: &[(&str, i32)] = &[("k", 20), ("v", 20), ("count", 20)];
    let kv: &[(&str, i32)] = &[("k", 20), ("v", 20)];
    let kvw: &[(&str, i32)] = &[("k", 20), ("v", 20), ("w", 25)];
    let before = memory_stats().spill_files;
    let raw = data(6000, 2500);
    let groups = partials(&raw);
    let by_k = sorted_shards(&raw, 0);
    // (count partial, sum partial, hidden k) rows.
    let vk: &[(&str, i32)] = &[("count", 20), ("k", 20)];
    let vvk: &[(&str, i32)] = &[("count", 20), ("sum", 1700), ("k", 20)];
    let counts: Vec<Vec<Vec<Option<String>>>> = raw
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| vec![r[1].clone(), r[0].clone()])
                .collect()
        })
        .collect();
    let sums: Vec<Vec<Vec<Option<String>>>> = raw
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| vec![Some("1".into()), r[1].clone(), r[0].clone()])
                .collect()
        })
        .collect();
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, i32)],
        &'a Vec<Vec<Vec<Option<String>>>>,
        bool,
    );
    let cases: Vec<Case> =
        vec![
        // GROUP BY: partial counts, sums, min/max per group from each shard.
        (
            "SELECT k, count(*), sum(v), min(w) FROM t GROUP BY k",
            aggs,
            &groups,
            false,
        ),
        (
            "SELECT k, count(*), sum(v), max(w) FROM t GROUP BY k ORDER BY k DESC",
            aggs,
            &groups,
            true,
        ),
        (
            "SELECT k, count(*), sum(v), min(w) FROM t GROUP BY k ORDER BY k LIMIT 700 OFFSET 3",
            aggs,
            &groups,
            true,
        ),
        (
            "SELECT k, count(*), sum(v), min(w) FROM t GROUP BY k HAVING count(*) > 60",
            aggs,
            &groups,
            false,
        ),
        (
            "SELECT k, v, count(*) FROM t GROUP BY k, v",
            kvc,
            &groups,
            false,
        ),
        // DISTINCT over spilled groups: the values of both passes deduplicated together.
        ("SELECT DISTINCT count(*) FROM t GROUP BY k", vk, &counts, false),
        ("SELECT DISTINCT count(*), sum(v) FROM t GROUP BY k", vvk, &sums, false),
        // DISTINCT without and with ORDER BY (shards answer sorted).
        ("SELECT DISTINCT k, v FROM t", kv, &raw, false),
        ("SELECT DISTINCT k, v FROM t LIMIT 500", kv, &raw, false),
        (
            "SELECT DISTINCT k, v, w FROM t ORDER BY k",
            kvw,
            &by_k,
            false,
        ),
        (
            "SELECT DISTINCT ON (k) k, v, w FROM t ORDER BY k",
            kvw,
            &by_k,
            false,
        ),
    ];
    for (sql, columns, shards, ordered) in cases {
        let plan = plan(sql).unwrap().merge;
        let desc = rd(columns);
        let rows = borrowed(shards);
        let rows: Vec<_> = rows
            .into_iter()
            .map(|s| s.into_iter().map(|r| r[..columns.len()].to_vec()).collect())
            .collect();
        let want = run_limited(&plan, &desc, &rows, "ISO, MDY", MemoryLimits::default()).unwrap();
        let got = run_limited(&plan, &desc, &rows, "ISO, MDY", tiny()).unwrap();
        assert!(want.len() > 100, "{sql}: {} rows", want.len());
        if sql.contains("DISTINCT ON") {
            // Which row of a key comes first is not fixed: compare the keys.
            let keys =
                |r: &[Vec<Option<String>>]| r.iter().map(|r| r[0].clone()).collect::<Vec<_>>();
            assert_eq!(keys(&got), keys(&want), "{sql}");
        } else if sql.contains("LIMIT") && !ordered {
            assert_eq!(got.len(), want.len(), "{sql}");
        } else if ordered {
            assert_eq!(got, want, "{sql}");
        } else {
            assert_eq!(sorted(got), sorted(want), "{sql}");
        }
    }
    // Set operations over branch-tagged rows.
    let tagged: Vec<Vec<Vec<Option<String>>>> = raw
        .iter()
        .map(|rows| {
            rows.iter()
                .enumerate()
                .map(|(i, r)| vec![r[0].clone(), Some((i % 2).to_string())])
                .collect()
        })
        .collect();
    let rows = borrowed(&tagged);
    for op in [
        "UNION",
        "INTERSECT",
        "INTERSECT ALL",
        "EXCEPT",
        "EXCEPT ALL",
    ] {
        for order in ["", " ORDER BY 1"] {
            let sql = format!("SELECT k FROM t {op} SELECT k FROM u{order}");
            let plan = plan(&sql).unwrap().merge;
            let desc = rd(&[("k", 20), ("__pgdog_branch", 23)]);
            let want =
                run_limited(&plan, &desc, &rows, "ISO, MDY", MemoryLimits::default()).unwrap();
            let got = run_limited(&plan, &desc, &rows, "ISO, MDY", tiny()).unwrap();
            assert!(!want.is_empty(), "{sql}");
            if order.is_empty() {
                assert_eq!(sorted(got), sorted(want), "{sql}");
            } else {
                assert_eq!(got, want, "{sql}");
            }
        }
    }
    assert!(memory_stats().spill_files > before, "nothing spilled");
}

#[test]
fn growth_that_cannot_spill_is_refused_past_the_process_limit() {
    let plan = plan("SELECT DISTINCT k, v FROM t ORDER BY k")
        .unwrap()
        .merge;
    // One run of equal sort keys: every row has k = 1.
    let rows: Vec<Vec<Option<String>>> = (0..5000)
        .map(|i| vec![Some("1".to_string()), Some(i.to_string())])
        .collect();
    let rows = [rows];
    let shards = borrowed(&rows);
    let limits = MemoryLimits {
        work_mem: 8 << 10,
        process_limit: 64 << 10,
        ..MemoryLimits::default()
    };
    let e = run_limited(
        &plan,
        &rd(&[("k", 20), ("v", 20)]),
        &shards,
        "ISO, MDY",
        limits,
    )
    .unwrap_err();
    assert_eq!(e.code(), "53200", "{e}");
    assert!(e.to_string().contains("merge_memory_limit"), "{e}");
}

#[test]
fn a_groups_list_past_the_process_limit_is_refused() {
    let plan = plan("SELECT k, array_agg(v) FROM t GROUP BY k")
        .unwrap()
        .merge;
    let big: String = format!(
        "{{{}}}",
        (0..2000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let rows: Vec<Vec<Option<String>>> = (0..20)
        .map(|i| vec![Some((i % 2).to_string()), Some(big.clone())])
        .collect();
    let rows = [rows];
    let shards = borrowed(&rows);
    let limits = MemoryLimits {
        work_mem: 8 << 10,
        process_limit: 64 << 10,
        ..MemoryLimits::default()
    };
    let desc = rd(&[("k", 20), ("array_agg", 1016)]);
    let e = run_limited(&plan, &desc, &shards, "ISO, MDY", limits).unwrap_err();
    assert_eq!(e.code(), "53200", "{e}");
}
