//! Running a query on both sides and judging the answers; placement and COPY checks.
use super::*;

/// How a statement was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Query message (tokio-postgres `simple_query`).
    Simple,
    /// tokio-postgres: Parse/Describe statement/Sync, then Bind/Execute/Sync, binary results.
    Extended,
    /// libpq's PQexecParams: Parse/Bind/Describe portal/Execute/Sync, text parameters and
    /// results.
    Libpq,
}

/// What failed: SQLSTATE (None for client-side errors) and text.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: Option<String>,
    pub(crate) text: String,
}

pub(crate) type Outcome = Result<Vec<StmtResult>, Failure>;

pub(crate) fn failure(e: tokio_postgres::Error) -> Failure {
    Failure {
        code: sqlstate(&e),
        text: err_text(&e),
    }
}

pub(crate) struct Side {
    pub(crate) client: Client,
    pub(crate) raw: raw::Conn,
}

pub(crate) async fn run(side: &mut Side, q: &Q, mode: Mode) -> Outcome {
    match mode {
        Mode::Simple => run_simple(&side.client, &q.sql).await.map_err(failure),
        Mode::Extended => run_extended(&side.client, &q.sql, &q.params)
            .await
            .map(|r| vec![r])
            .map_err(failure),
        Mode::Libpq => {
            let params: Vec<Option<String>> = q.params.iter().map(P::text).collect();
            side.raw
                .exec_params(&q.sql, &params)
                .await
                .map(|r| vec![r])
                .map_err(|(code, text)| Failure {
                    code: Some(code),
                    text,
                })
        }
    }
}

pub(crate) fn outcome_text(o: &Outcome) -> String {
    match o {
        Ok(v) => v
            .iter()
            .map(|r| preview(r, 6))
            .collect::<Vec<_>>()
            .join(" ; "),
        Err(e) => format!("ERROR {}", e.text),
    }
}

pub(crate) enum Verdict {
    Same,
    Refused(String),
    Differs(String),
}

pub(crate) fn judge(q: &Q, got: &Outcome, want: &Outcome) -> Verdict {
    match (got, want) {
        (Ok(g), Ok(w)) => {
            if g.len() != w.len() {
                return Verdict::Differs(format!(
                    "statement results: pgdog {}, reference {}",
                    g.len(),
                    w.len()
                ));
            }
            let why: Vec<String> = g
                .iter()
                .zip(w)
                .enumerate()
                .filter_map(|(i, (gi, wi))| {
                    compare(gi, wi, &q.order).map(|d| {
                        if g.len() > 1 {
                            format!("statement {}: {d}", i + 1)
                        } else {
                            d
                        }
                    })
                })
                .collect();
            if why.is_empty() {
                Verdict::Same
            } else {
                Verdict::Differs(why.join("\n      "))
            }
        }
        (Err(g), Err(w)) if g.code.is_some() && g.code == w.code => Verdict::Same,
        (Err(g), Ok(_)) if q.refuse_ok && g.code.as_deref() == Some("0A000") => {
            Verdict::Refused(g.text.clone())
        }
        _ => Verdict::Differs("outcomes differ".into()),
    }
}

pub(crate) struct Report {
    pub(crate) failures: Vec<String>,
    pub(crate) refused: Vec<String>,
    pub(crate) compared: usize,
}

impl Report {
    pub(crate) fn fail(&mut self, what: String) {
        self.failures.push(what);
    }
}

/// `SHARDING_DIFF_MODES=simple,libpq` (any of simple, extended, libpq) limits the read modes,
/// for investigating one protocol path; all by default.
pub(crate) fn mode_enabled(mode: Mode) -> bool {
    match std::env::var("SHARDING_DIFF_MODES") {
        Ok(list) => list
            .split(',')
            .any(|m| m.trim().eq_ignore_ascii_case(&format!("{mode:?}"))),
        Err(_) => true,
    }
}

/// Runs `q` on both sides in every mode it is meant for (`once`: only the first, for writes).
pub(crate) async fn differential(
    q: &Q,
    dog: &mut Side,
    pg: &mut Side,
    once: bool,
    report: &mut Report,
) {
    let modes: &[Mode] = match q.proto {
        Proto::Both => &[Mode::Simple, Mode::Extended, Mode::Libpq],
        Proto::Simple => &[Mode::Simple],
        Proto::Extended => &[Mode::Extended, Mode::Libpq],
    };
    let modes = if once { &modes[..1] } else { modes };
    for &mode in modes {
        if !mode_enabled(mode) && !once {
            continue;
        }
        let (got, want) = if once && q.refuse_ok {
            // A write pgdog may refuse: the reference runs it only if pgdog did, so both
            // stay alike.
            let got = run(dog, q, mode).await;
            if matches!(&got, Err(e) if e.code.as_deref() == Some("0A000")) {
                report.refused.push(format!(
                    "[{mode:?}] {}\n      {}",
                    q.sql,
                    outcome_text(&got)
                ));
                continue;
            }
            (got, run(pg, q, mode).await)
        } else {
            tokio::join!(run(dog, q, mode), run(pg, q, mode))
        };
        report.compared += 1;
        let label = format!(
            "[{mode:?}] {}{}{}",
            q.sql,
            if q.params.is_empty() {
                String::new()
            } else {
                format!("  params {:?}", q.params)
            },
            q.bug
                .map(|b| format!("  (known pgdog bug: {b})"))
                .unwrap_or_default()
        );
        match judge(q, &got, &want) {
            Verdict::Same => {}
            Verdict::Refused(e) => report.refused.push(format!("{label}\n      {e}")),
            Verdict::Differs(why) => report.fail(format!(
                "{label}\n      {why}\n      pgdog:     {}\n      reference: {}",
                outcome_text(&got),
                outcome_text(&want)
            )),
        }
    }
}

pub(crate) async fn count(c: &Client, sql: &str) -> i64 {
    run_simple(c, sql)
        .await
        .ok()
        .and_then(|r| r.first().and_then(|r| r.rows.first().cloned()))
        .and_then(|row| row[0].clone())
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(-1)
}

/// Placement: on shard k every users row satisfies Postgres' hash partitioning (modulus SHARDS,
/// remainder k) on id, every orders row on user_id; per-shard counts add up to the reference's;
/// every shard has all countries.
pub(crate) async fn check_placement(
    shards: &[Client],
    pg: &Client,
    phase: &str,
    report: &mut Report,
) {
    for (table, column) in [("users", "id"), ("orders", "user_id")] {
        let mut sum = 0;
        for (k, shard) in shards.iter().enumerate() {
            let sql = format!(
                "SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('users_hash_check'::regclass, {SHARDS}, {k}, {column})), count(*) FROM {table}"
            );
            match run_simple(shard, &sql).await {
                Ok(r) => {
                    let row = &r[0].rows[0];
                    let wrong: i64 = row[0].as_deref().unwrap_or("-1").parse().unwrap_or(-1);
                    let n: i64 = row[1].as_deref().unwrap_or("-1").parse().unwrap_or(-1);
                    sum += n;
                    if wrong != 0 {
                        report.fail(format!(
                            "placement ({phase}): {wrong} of {n} {table} rows on shard {k} do not belong there by hash of {column}"
                        ));
                    }
                    if n == 0 {
                        report.fail(format!(
                            "placement ({phase}): shard {k} has no {table} rows"
                        ));
                    }
                }
                Err(e) => report.fail(format!(
                    "placement ({phase}) on shard {k}: {}",
                    err_text(&e)
                )),
            }
        }
        let want = count(pg, &format!("SELECT count(*) FROM {table}")).await;
        if sum != want {
            report.fail(format!(
                "placement ({phase}): the shards hold {sum} {table} rows, the reference {want}"
            ));
        }
    }
    let want = run_simple(pg, "SELECT * FROM countries ORDER BY code")
        .await
        .ok();
    for (k, shard) in shards.iter().enumerate() {
        let got = run_simple(shard, "SELECT * FROM countries ORDER BY code")
            .await
            .ok();
        if got != want {
            report.fail(format!(
                "placement ({phase}): countries on shard {k} differ from the reference: {:?} vs {:?}",
                got.map(|r| r[0].rows.len()),
                want.as_ref().map(|r| r[0].rows.len())
            ));
        }
    }
}

/// COPY TO STDOUT (simple protocol) through pgdog and on the reference: same header line, same
/// row multiset, same tag.
pub(crate) async fn check_copy_out(
    dog: &mut raw::Conn,
    pg: &mut raw::Conn,
    sql: &str,
    header: bool,
    report: &mut Report,
) {
    let got = dog.copy_out(sql).await;
    let want = pg.copy_out(sql).await;
    report.compared += 1;
    compare_copy(sql, header, got, want, report);
}

pub(crate) fn compare_copy(
    sql: &str,
    header: bool,
    got: Result<(Vec<u8>, String), String>,
    want: Result<(Vec<u8>, String), String>,
    report: &mut Report,
) {
    match (got, want) {
        (Ok((g, gt)), Ok((w, wt))) => {
            let split = |s: &[u8]| -> (Option<String>, Vec<String>) {
                let s = String::from_utf8_lossy(s);
                let mut lines: Vec<String> = s.lines().map(str::to_string).collect();
                let head = (header && !lines.is_empty()).then(|| lines.remove(0));
                lines.sort();
                (head, lines)
            };
            let (gh, gl) = split(&g);
            let (wh, wl) = split(&w);
            if gh != wh || gl != wl || gt != wt {
                let extra: Vec<&String> = gl.iter().filter(|l| !wl.contains(l)).take(5).collect();
                let lost: Vec<&String> = wl.iter().filter(|l| !gl.contains(l)).take(5).collect();
                report.fail(format!(
                    "{sql}\n      tag pgdog {gt:?} reference {wt:?}; header pgdog {gh:?} reference {wh:?}; lines pgdog {} reference {}; only pgdog: {extra:?}; only reference: {lost:?}",
                    gl.len(),
                    wl.len()
                ));
            }
        }
        (Err(_), Err(_)) => {}
        (g, w) => {
            let t = |r: &Result<(Vec<u8>, String), String>| match r {
                Ok((d, tag)) => format!("{} bytes, {tag}", d.len()),
                Err(e) => format!("ERROR {e}"),
            };
            report.fail(format!(
                "{sql}\n      pgdog {}\n      reference {}",
                t(&g),
                t(&w)
            ));
        }
    }
}

/// tokio-postgres' `copy_in` / `copy_out` run COPY through the extended protocol
/// (Parse/Bind/Execute): they must work through pgdog as on Postgres.
pub(crate) async fn check_extended_copy(
    dog: &Client,
    pg: &Client,
    proxy: &Proxy,
    pg_port: u16,
    report: &mut Report,
) {
    let data: String = (0..300)
        .map(|i| format!("{}\t{}\tnote {i}\n", i * 37 - 4000, i))
        .collect();
    let sql = "COPY events (user_id, id, note) FROM STDIN";
    let (got, want) = tokio::join!(copy_in(dog, sql, &data), copy_in(pg, sql, &data));
    report.compared += 1;
    let t = |r: &Result<u64, tokio_postgres::Error>| match r {
        Ok(n) => format!("{n} rows"),
        Err(e) => format!("ERROR {}", err_text(e)),
    };
    if got.as_ref().ok() != want.as_ref().ok() {
        report.fail(format!(
            "[extended] tokio-postgres copy_in: {sql} (300 rows)\n      pgdog {}\n      reference {}  (known pgdog bug: COPY through the extended protocol is refused on sharded databases)",
            t(&got),
            t(&want)
        ));
    }
    // tokio-postgres cannot go on with a connection whose copy_in failed (not even against
    // Postgres): copy_out on fresh connections.
    let dog = &connect_proxy(proxy).await;
    let pg = &connect_port(pg_port).await;
    // (Rows in an order across shards would need a merge: refused, see pooler_copy.rs.)
    let sql = "COPY (SELECT * FROM events WHERE user_id > 0) TO STDOUT";
    let (got, want) = tokio::join!(copy_out(dog, sql), copy_out(pg, sql));
    report.compared += 1;
    let t = |r: &Result<String, tokio_postgres::Error>| match r {
        Ok(s) => format!("{} lines", s.lines().count()),
        Err(e) => format!("ERROR {}", err_text(e)),
    };
    let norm = |r: &Result<String, tokio_postgres::Error>| {
        r.as_ref().ok().map(|s| {
            let mut v: Vec<String> = s.lines().map(str::to_string).collect();
            v.sort();
            v
        })
    };
    if norm(&got) != norm(&want) {
        report.fail(format!(
            "[extended] tokio-postgres copy_out: {sql}\n      pgdog {}\n      reference {}  (known pgdog bug: COPY through the extended protocol is refused on sharded databases)",
            t(&got),
            t(&want)
        ));
    }
}

pub(crate) async fn check_refusals(dog: &mut Side, v: &Vars, report: &mut Report) {
    for q in refusals(v) {
        let sql = &q.sql;
        for mode in [Mode::Simple, Mode::Extended, Mode::Libpq] {
            report.compared += 1;
            match run(dog, &q, mode).await {
                Err(e) if e.code.as_deref() == Some("0A000") => {}
                Err(e) => report.fail(format!(
                    "[{mode:?}] {sql}\n      expected SQLSTATE 0A000, got {}",
                    e.text
                )),
                Ok(results) => report.fail(format!(
                    "[{mode:?}] {sql}\n      expected SQLSTATE 0A000, got an answer: {}",
                    results
                        .iter()
                        .map(|r| preview(r, 3))
                        .collect::<Vec<_>>()
                        .join(" ; ")
                )),
            }
            // The session still works after the refusal.
            if let Err(e) = dog.client.simple_query("SELECT 1").await {
                report.fail(format!(
                    "[{mode:?}] after refusing {sql}: SELECT 1 fails: {}",
                    err_text(&e)
                ));
            }
        }
    }
}
