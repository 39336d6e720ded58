//! Parser benchmark: µs per statement for pg_query vs pg_query_raw, measured side by side in one
//! run (batches interleaved), on (a) a point select, (b) the pgbench tpcb-like statements and
//! (c) a ~60-line analytic query. Writes benchmarks/results/parser.md.
//!
//! `cargo run --release -p pgdog-benchmarks --bin parser-bench [-- --quick] [--out FILE]`
use pgdog_benchmarks::{median, table, time_per_call};
use std::hint::black_box;
use std::time::Duration;

const POINT: &str = "SELECT * FROM users WHERE id = $1";

const TPCB: &[&str] = &[
    "BEGIN",
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
    "END",
];

const ANALYTIC: &str = "WITH monthly AS (
    SELECT date_trunc('month', o.created_at) AS month,
           c.region,
           c.id AS customer_id,
           sum(oi.quantity * oi.unit_price) AS revenue,
           count(DISTINCT o.id) AS orders
    FROM orders o
    JOIN customers c ON c.id = o.customer_id
    JOIN order_items oi ON oi.order_id = o.id
    LEFT JOIN refunds r ON r.order_id = o.id AND r.status = 'approved'
    WHERE o.created_at >= now() - interval '2 years'
      AND o.status IN ('paid', 'shipped', 'delivered')
      AND r.id IS NULL
    GROUP BY 1, 2, 3
),
ranked AS (
    SELECT m.*,
           rank() OVER (PARTITION BY m.month, m.region ORDER BY m.revenue DESC) AS region_rank,
           sum(m.revenue) OVER (PARTITION BY m.customer_id ORDER BY m.month
                                ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS rolling_revenue,
           lag(m.revenue) OVER (PARTITION BY m.customer_id ORDER BY m.month) AS prev_revenue
    FROM monthly m
),
regions AS (
    SELECT region,
           month,
           sum(revenue) AS region_revenue,
           avg(revenue) FILTER (WHERE orders > 1) AS repeat_avg,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY revenue) AS p90
    FROM monthly
    GROUP BY region, month
)
SELECT r.month,
       r.region,
       r.customer_id,
       cu.name,
       r.revenue,
       r.region_rank,
       r.rolling_revenue,
       CASE WHEN r.prev_revenue IS NULL THEN NULL
            WHEN r.prev_revenue = 0 THEN NULL
            ELSE round((r.revenue - r.prev_revenue) / r.prev_revenue * 100, 2) END AS growth_pct,
       g.region_revenue,
       g.repeat_avg,
       g.p90,
       coalesce(s.segment, 'unassigned') AS segment
FROM ranked r
JOIN regions g ON g.region = r.region AND g.month = r.month
JOIN customers cu ON cu.id = r.customer_id
LEFT JOIN LATERAL (
    SELECT cs.segment
    FROM customer_segments cs
    WHERE cs.customer_id = r.customer_id AND cs.valid_from <= r.month
    ORDER BY cs.valid_from DESC
    LIMIT 1
) s ON true
WHERE r.region_rank <= 10
  AND r.revenue > (SELECT avg(revenue) FROM monthly WHERE region = r.region)
ORDER BY r.month DESC, r.region, r.region_rank
LIMIT 500";

struct Op {
    name: &'static str,
    /// Runs the operation on a set of statements.
    run: Box<dyn Fn(&Case)>,
}

struct Case {
    label: &'static str,
    stmts: Vec<&'static str>,
    /// The statements with numbers in place of their `$n` (as a simple-protocol client sends
    /// them).
    literal: Vec<String>,
    trees: Vec<pg_query::protobuf::ParseResult>,
}

/// `sql` with `$n` replaced by the number `7000n` (highest first, so `$1` never eats `$10`).
fn with_literals(sql: &str) -> String {
    (1..=9).rev().fold(sql.to_string(), |s, n| {
        s.replace(&format!("${n}"), &format!("7000{n}"))
    })
}

/// The three workloads, each statement checked to parse the same as pg_query first.
fn cases() -> Vec<Case> {
    [
        ("(a) point select", vec![POINT]),
        ("(b) pgbench tpcb-like", TPCB.to_vec()),
        ("(c) analytic, 60 lines", vec![ANALYTIC]),
    ]
    .into_iter()
    .map(|(label, stmts)| {
        let trees = stmts
            .iter()
            .map(|s| pg_query::parse(s, 0).expect("parses").protobuf)
            .collect();
        for s in &stmts {
            assert_eq!(
                pg_query_raw::parse_protobuf(s).unwrap(),
                pg_query::parse(s, 0).unwrap().protobuf
            );
        }
        let literal = stmts.iter().map(|s| with_literals(s)).collect();
        Case {
            label,
            stmts,
            literal,
            trees,
        }
    })
    .collect()
}

/// An operation calling `f` on each statement of a case.
fn on_stmts<T>(name: &'static str, f: impl Fn(&'static str) -> T + 'static) -> Op {
    Op {
        name,
        run: Box::new(move |c| {
            c.stmts.iter().for_each(|s| {
                black_box(f(s));
            })
        }),
    }
}

/// An operation calling `f` on each parse tree of a case.
fn on_trees<T>(
    name: &'static str,
    f: impl Fn(&pg_query::protobuf::ParseResult) -> T + 'static,
) -> Op {
    Op {
        name,
        run: Box::new(move |c| {
            c.trees.iter().for_each(|t| {
                black_box(f(t));
            })
        }),
    }
}

/// The operations measured on every workload.
fn ops() -> Vec<Op> {
    vec![
        on_stmts("C raw parse alone (floor)", |s| {
            pg_query_raw::raw_parse_only(s).unwrap()
        }),
        on_stmts("pg_query::parse", |s| pg_query::parse(s, 0).unwrap()),
        on_stmts("pg_query_raw::parse (full, with summaries)", |s| {
            pg_query_raw::parse(s).unwrap()
        }),
        on_stmts("pg_query_raw::parse_protobuf (full tree)", |s| {
            pg_query_raw::parse_protobuf(s).unwrap()
        }),
        on_stmts("pg_query_raw::router::parse (fast path)", |s| {
            pg_query_raw::router::parse(s).unwrap()
        }),
        on_stmts("pg_query_raw::tokens (scanner: the literals)", |s| {
            pg_query_raw::tokens(s, pg_query_raw::token::is_literal_or_param).unwrap()
        }),
        Op {
            name: "pgdog shape cache hit (scan, key, literals put in)",
            run: Box::new(|c| {
                c.literal.iter().for_each(|s| {
                    black_box(pgdog::router::ShapeCache::global().get(s).unwrap());
                })
            }),
        },
        on_trees("pg_query::deparse", |t| {
            pg_query::deparse(t, Default::default()).unwrap()
        }),
        on_trees("pg_query_raw::deparse", |t| {
            pg_query_raw::deparse(t).unwrap()
        }),
        on_stmts("pg_query::fingerprint", |s| {
            pg_query::fingerprint(s, 0, 0).unwrap()
        }),
        on_stmts("pg_query_raw::fingerprint", |s| {
            pg_query_raw::fingerprint(s, 0).unwrap()
        }),
    ]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let (rounds, batch) = if quick {
        (3, Duration::from_millis(20))
    } else {
        (15, Duration::from_millis(60))
    };

    let cases = cases();
    let ops = ops();

    // samples[op][case]
    let mut samples = vec![vec![Vec::new(); cases.len()]; ops.len()];
    for round in 0..rounds {
        for (ci, case) in cases.iter().enumerate() {
            for (oi, op) in ops.iter().enumerate() {
                let per = time_per_call(batch, || (op.run)(case));
                samples[oi][ci].push(per / case.stmts.len() as u32);
            }
        }
        eprintln!("round {}/{rounds}", round + 1);
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let med: Vec<Vec<f64>> = samples
        .into_iter()
        .map(|per_case| per_case.into_iter().map(|s| us(median(s))).collect())
        .collect();
    let idx = |name: &str| ops.iter().position(|o| o.name == name).unwrap();
    let baseline_for = |name: &str| match name {
        n if n.starts_with("pg_query_raw::parse")
            || n.starts_with("pg_query_raw::router")
            || n.starts_with("C raw")
            || n.starts_with("pg_query_raw::tokens")
            || n.starts_with("pgdog shape") =>
        {
            Some(idx("pg_query::parse"))
        }
        "pg_query_raw::deparse" => Some(idx("pg_query::deparse")),
        "pg_query_raw::fingerprint" => Some(idx("pg_query::fingerprint")),
        _ => None,
    };

    let mut header = vec!["operation"];
    for c in &cases {
        header.push(c.label);
    }
    let rows: Vec<Vec<String>> = ops
        .iter()
        .enumerate()
        .map(|(oi, op)| {
            let mut row = vec![op.name.to_string()];
            for (ci, &v) in med[oi].iter().enumerate() {
                row.push(match baseline_for(op.name) {
                    Some(b) => format!("{v:.2} µs ({:.1}x)", med[b][ci] / v),
                    None => format!("{v:.2} µs"),
                });
            }
            row
        })
        .collect();
    let report = format!(
        "# Parser benchmark\n\nµs per statement (median of {rounds} interleaved batches; (b) is the mean over its {} statements); \
         in brackets the speed-up over the matching pg_query call (parse, deparse or fingerprint) measured in the same run. \
         Release build, one thread.\n\nCommand: `bash benchmarks/parser.sh`\n\n{}\nTargets: router fast path ≥ 6x and full tree ≥ 4x faster than \
         `pg_query::parse` on (a), (b) and (c); deparse ≥ 2.5x faster than `pg_query::deparse` on (c).\n\n\
         The scanner row is what pgdog's shape cache runs on every simple-protocol query (its \
         literals found by Postgres' own scanner); the shape cache row is a whole hit (scan, key, \
         LRU, the shape's statements with the literals put in), on the statements with numbers in \
         place of their `$n` (`BEGIN` and `END` have none: text cache hits): what replaces the \
         router's parse for a text whose shape was seen before.\n",
        TPCB.len(),
        table(&header, &rows)
    );
    print!("{report}");
    if let Some(path) = out {
        std::fs::write(&path, &report).expect("writing the results table");
        eprintln!("wrote {path}");
    }
}
