//! Safety: many threads at once, NUL bytes, deep nesting on a normal 2 MiB thread, and
//! Postgres' own error messages and cursor positions.

/// Runs `f` on a thread with the default 2 MiB stack, as the proxy's worker threads have.
fn on_2mib_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("thread panicked")
}

/// Errors a too-deep statement may get: Postgres' stack check or parser stack ("memory
/// exhausted"), or our own depth cap.
fn clear_depth_error(e: &pg_query_raw::Error) -> bool {
    let m = e.message();
    m.contains("stack depth") || m.contains("nested too deeply") || m.contains("memory exhausted")
}

fn deep_cases(levels: usize) -> Vec<(&'static str, String)> {
    vec![
        ("1+1+...", format!("SELECT {}1", "1+".repeat(levels))),
        (
            "nested parentheses",
            format!("SELECT {}1{}", "(".repeat(levels), ")".repeat(levels)),
        ),
        (
            "nested subqueries",
            format!(
                "SELECT {}1{}",
                "(SELECT ".repeat(levels),
                ")".repeat(levels)
            ),
        ),
        (
            "nested function calls",
            format!("SELECT {}1{}", "abs(".repeat(levels), ")".repeat(levels)),
        ),
        (
            "AND chain",
            format!("SELECT 1 WHERE {}", vec!["a = 1"; levels].join(" AND ")),
        ),
        ("UNION chain", vec!["SELECT 1"; levels].join(" UNION ")),
    ]
}

#[test]
fn deep_nesting_gives_a_tree_or_a_clear_error_on_a_2mib_stack() {
    for levels in [100, 1_000, 3_000, 20_000] {
        for (what, sql) in deep_cases(levels) {
            let outcome = on_2mib_thread(move || {
                let parsed = pg_query_raw::parse_protobuf(&sql);
                let deparsed = parsed.as_ref().ok().map(pg_query_raw::deparse);
                let routed = pg_query_raw::router::parse(&sql).map(|s| s.len());
                (
                    parsed.map(|t| t.stmts.len()),
                    deparsed.map(|d| d.map(|s| s.len())),
                    routed,
                )
            });
            match &outcome.0 {
                Ok(n) => assert_eq!(*n, 1, "{what} x{levels}"),
                Err(e) => assert!(clear_depth_error(e), "{what} x{levels}: unclear error {e}"),
            }
            if let Some(Err(e)) = &outcome.1 {
                assert!(clear_depth_error(e), "{what} x{levels}: deparse error {e}");
            }
            if let Err(e) = &outcome.2 {
                assert!(clear_depth_error(e), "{what} x{levels}: router error {e}");
            }
            if levels <= 1_000 {
                assert!(
                    outcome.0.is_ok(),
                    "{what} x{levels} should parse: {:?}",
                    outcome.0.err()
                );
                assert!(
                    matches!(outcome.1, Some(Ok(_))),
                    "{what} x{levels} should deparse"
                );
                assert!(outcome.2.is_ok(), "{what} x{levels} should route");
            }
        }
    }
}

#[test]
fn interior_nul_is_an_error() {
    let err = pg_query_raw::parse("SELECT 1\0; DROP TABLE x").unwrap_err();
    assert_eq!(err, pg_query_raw::Error::InteriorNul(8));
    assert!(pg_query_raw::router::parse("\0").is_err());
    assert!(pg_query_raw::fingerprint("SELECT \0", 0).is_err());
}

#[test]
fn syntax_errors_carry_postgres_message_and_cursor() {
    for (sql, cursor) in [
        ("SELECT * FRM users", 10),
        ("SELEC 1", 1),
        ("SELECT 'unterminated", 8),
        ("INSERT INTO t VALUES (1,", 25),
    ] {
        let ours = pg_query_raw::parse(sql).unwrap_err();
        let pg_query::Error::Parse(theirs) = pg_query::parse(sql, 0).unwrap_err() else {
            panic!("{sql}")
        };
        assert_eq!(ours.message(), theirs, "{sql}");
        match ours {
            pg_query_raw::Error::Parse { cursorpos, .. } => assert_eq!(cursorpos, cursor, "{sql}"),
            other => panic!("{sql}: {other:?}"),
        }
    }
}

#[test]
fn many_threads_parse_concurrently_with_identical_results() {
    let queries: Vec<String> = (0..200)
        .map(|i| format!("SELECT a, count(*) FROM t{i} JOIN u ON u.id = t{i}.uid WHERE x = {i} GROUP BY a ORDER BY 2 DESC LIMIT {i}"))
        .collect();
    let expected: Vec<_> = queries
        .iter()
        .map(|q| pg_query::parse(q, 0).unwrap().protobuf)
        .collect();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let queries = queries.clone();
            let expected = expected.clone();
            std::thread::spawn(move || {
                for round in 0..20 {
                    for (i, q) in queries.iter().enumerate().skip((t + round) % 3) {
                        let tree = pg_query_raw::parse_protobuf(q).unwrap();
                        assert_eq!(tree, expected[i]);
                        assert_eq!(
                            pg_query_raw::deparse(&tree).unwrap().len(),
                            pg_query::deparse(&expected[i], Default::default())
                                .unwrap()
                                .len()
                        );
                        assert_eq!(pg_query_raw::router::parse(q).unwrap().len(), 1);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread panicked");
    }
}
