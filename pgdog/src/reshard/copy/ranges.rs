//! Key ranges of a large table: with a slot, a table larger than `copy_split_bytes` whose
//! primary key starts with an integer column (and is its replica identity, holding the
//! sharding key) is copied as several independent jobs, each a range `lo <= key < hi` of that
//! column under its own exported snapshot, on whichever replica of its source shard
//! [`plan`](super::plan) gives it. Each range commits on each destination shard with its own
//! watermark row, named by [`KeyRange::progress_name`], so:
//! - a finished range is never copied again after a crash, and an unfinished one has nothing
//!   on the destination (its transaction rolled back with its connection), so it is copied
//!   again whole, with no clearing needed;
//! - the replay skips a change on a shard when the range of its key there holds it: the rule
//!   of the per-table watermarks, sound because a key never leaves its range (a key UPDATE is
//!   a DELETE in the old range and an INSERT in the new one, each by its own watermark).
//!
//! The ranges are planned once per (table, source shard) and written to every destination
//! shard first, as progress rows with no watermark, so a rerun copies the same ranges. Without
//! a slot (no replay to reconcile ranges read at different moments) a large table is read in
//! CTID ranges under one snapshot instead, as are tables whose key is not an integer: the
//! replay must place a key in its range with Postgres' order, which only integers give outside
//! the server.
use super::*;

/// The most key ranges of one (table, source shard): each takes a temporary slot on its replica
/// while it is copied, and a snapshot export.
const MAX_RANGES: u64 = 64;

/// A range `lo <= column < hi` of a table's leading primary-key column (`None`: unbounded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyRange {
    /// The column's name (unquoted).
    pub(crate) column: String,
    pub(crate) lo: Option<i64>,
    pub(crate) hi: Option<i64>,
    /// How many ranges the table has (for the row estimate of one).
    pub(crate) of: usize,
}

impl KeyRange {
    /// The range's name in `pgdog_reshard_progress.table_name` and in the progress display:
    /// `schema.table [column lo..hi)` (an end left empty when unbounded).
    pub(crate) fn progress_name(&self, table: &str) -> String {
        let end = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        format!(
            "{table} [{} {}..{})",
            ident(&self.column),
            end(self.lo),
            end(self.hi)
        )
    }

    /// The range a progress name holds when it names one of `table`'s (None: another table's,
    /// or a whole table's name).
    pub(crate) fn parse(table: &str, name: &str) -> Option<KeyRange> {
        let inner = name
            .strip_prefix(table)?
            .strip_prefix(" [")?
            .strip_suffix(')')?;
        let (column, bounds) = inner.rsplit_once(' ')?;
        let (lo, hi) = bounds.split_once("..")?;
        let end = |s: &str| -> Option<Option<i64>> {
            if s.is_empty() {
                Some(None)
            } else {
                s.parse().ok().map(Some)
            }
        };
        let column = column.strip_prefix('"')?.strip_suffix('"')?;
        Some(KeyRange {
            column: column.replace("\"\"", "\""),
            lo: end(lo)?,
            hi: end(hi)?,
            of: 0,
        })
    }

    /// The SQL condition selecting the range's rows.
    pub(crate) fn condition(&self) -> String {
        let c = ident(&self.column);
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => format!("{c} >= {lo} AND {c} < {hi}"),
            (Some(lo), None) => format!("{c} >= {lo}"),
            (None, Some(hi)) => format!("{c} < {hi}"),
            (None, None) => "true".into(),
        }
    }

    /// The ranges cut at `bounds` (sorted, distinct): the first from no lower bound, the last
    /// to no upper one, so every key lands in exactly one.
    pub(crate) fn cut(column: &str, bounds: &[i64]) -> Vec<KeyRange> {
        let of = bounds.len() + 1;
        let mut ranges = Vec::with_capacity(of);
        let mut lo = None;
        for &b in bounds {
            ranges.push(KeyRange {
                column: column.to_string(),
                lo,
                hi: Some(b),
                of,
            });
            lo = Some(b);
        }
        ranges.push(KeyRange {
            column: column.to_string(),
            lo,
            hi: None,
            of,
        });
        ranges
    }
}

/// The leading primary-key column of a table that can be split by key: an integer column,
/// the primary key being the replica identity and holding the sharding key (when sharded by
/// one), so every change the replay sees carries it.
async fn split_column(
    server: &mut Server,
    addr: &str,
    job: &Job,
) -> Result<Option<String>, CopyDataError> {
    let holds_key = match &job.dest {
        Destination::ByKey(sharding, _) => format!(
            "EXISTS (SELECT 1 FROM pg_attribute k WHERE k.attrelid = i.indrelid \
                AND k.attnum = ANY (i.indkey) AND k.attname = {})",
            literal(sharding.column())
        ),
        _ => "true".into(),
    };
    let sql = format!(
        "SELECT a.attname::text FROM pg_index i \
           JOIN pg_class c ON c.oid = i.indrelid \
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
          WHERE i.indrelid = {}::regclass AND i.indisprimary AND c.relreplident = 'd' \
            AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) AND {holds_key}",
        literal(&job.sql_name())
    );
    let rows = server
        .query_rows(&sql)
        .await
        .map_err(server_err(addr, "reading the table's primary key"))?;
    Ok(rows.into_iter().next().and_then(|r| r.into_iter().next()?))
}

/// Up to `wanted - 1` distinct cut points of `column`, from a sample of the table's blocks
/// (its quantiles), else evenly between its smallest and largest key.
async fn sample_bounds(
    server: &mut Server,
    addr: &str,
    job: &Job,
    column: &str,
    wanted: usize,
) -> Result<Vec<i64>, CopyDataError> {
    let fractions: Vec<String> = (1..wanted)
        .map(|i| format!("{:.6}", i as f64 / wanted as f64))
        .collect();
    // About 200 blocks per range, at least 0.1 % of the table.
    let blocks = (job.size / 8192).max(1) as f64;
    let percent = (100.0 * 200.0 * wanted as f64 / blocks).clamp(0.1, 100.0);
    let c = ident(column);
    let sql = format!(
        "SELECT unnest(percentile_disc(ARRAY[{}]::float8[]) WITHIN GROUP (ORDER BY {c}::bigint))::text \
           FROM ONLY {} TABLESAMPLE SYSTEM ({percent:.3})",
        fractions.join(","),
        job.sql_name()
    );
    let rows = server
        .query_rows(&sql)
        .await
        .map_err(server_err(addr, "sampling the table's keys"))?;
    let mut bounds: Vec<i64> = rows
        .iter()
        .filter_map(|r| r.first()?.as_deref()?.parse().ok())
        .collect();
    if bounds.len() + 1 < wanted {
        let sql = format!(
            "SELECT min({c})::bigint::text, max({c})::bigint::text FROM ONLY {}",
            job.sql_name()
        );
        let rows = server
            .query_rows(&sql)
            .await
            .map_err(server_err(addr, "reading the table's key bounds"))?;
        let get = |i: usize| -> Option<i64> { rows.first()?.get(i)?.as_deref()?.parse().ok() };
        if let (Some(min), Some(max)) = (get(0), get(1)) {
            let span = (max as i128 - min as i128).max(1);
            bounds = (1..wanted as i128)
                .map(|i| (min as i128 + span * i / wanted as i128) as i64)
                .collect();
        }
    }
    bounds.sort_unstable();
    bounds.dedup();
    Ok(bounds)
}

/// Writes the ranges' rows (no watermark yet) to every destination shard.
async fn record_plan(
    dests: &[ServerTarget],
    key: &str,
    names: &[String],
) -> Result<(), CopyDataError> {
    let values: Vec<String> = names
        .iter()
        .map(|n| format!("({}, {}, NULL)", literal(key), literal(n)))
        .collect();
    let sql = format!(
        "INSERT INTO pgdog_reshard_progress (slot, table_name, watermark) VALUES {} \
         ON CONFLICT (slot, table_name) DO NOTHING",
        values.join(", ")
    );
    for t in dests {
        let mut server = connect(t).await?;
        server
            .execute(&sql)
            .await
            .map_err(server_err(&t.addr(), "recording the key ranges"))?;
        server.terminate().await;
    }
    Ok(())
}

/// Replaces each job with one job per key range: of the ranges an earlier run planned (whatever
/// the table's size and `split_bytes` now), else of new ones (recorded first) for a table larger
/// than `split_bytes` that can be split by key. A table an earlier run copied whole into some
/// destination shard stays whole.
pub(super) async fn split_by_key(
    jobs: Vec<Job>,
    sources: &[SourceShard],
    dests: &[ServerTarget],
    slot: &str,
    split_bytes: u64,
) -> Result<Vec<Job>, CopyDataError> {
    let mut progress: HashMap<usize, Vec<Vec<ProgressRow>>> = HashMap::new();
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let key = progress_key(slot, job.source_shard);
        let rows = match progress.entry(job.source_shard) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(progress_rows(dests, std::slice::from_ref(&key)).await?)
            }
        };
        let table = job.display();
        if rows.iter().flatten().any(|(_, name, _)| *name == table) {
            out.push(job);
            continue;
        }
        let mut planned: Vec<KeyRange> = rows
            .iter()
            .flatten()
            .filter_map(|(_, name, _)| KeyRange::parse(&table, name))
            .collect();
        planned.sort_by_key(|r| r.lo);
        planned.dedup();
        let large = split_bytes > 0 && job.size > split_bytes;
        if planned.is_empty() && !large {
            out.push(job);
            continue;
        }
        if planned.is_empty() {
            let Some(source) = sources.get(job.source_shard) else {
                out.push(job);
                continue;
            };
            let addr = source.primary.addr();
            let mut server = connect(&source.primary).await?;
            let Some(column) = split_column(&mut server, &addr, &job).await? else {
                server.terminate().await;
                out.push(job);
                continue;
            };
            let wanted = job.size.div_ceil(split_bytes).clamp(2, MAX_RANGES) as usize;
            let bounds = sample_bounds(&mut server, &addr, &job, &column, wanted).await?;
            server.terminate().await;
            planned = KeyRange::cut(&column, &bounds);
        }
        // On every destination shard (again: a kill may have left some shards without it).
        let names: Vec<String> = planned.iter().map(|r| r.progress_name(&table)).collect();
        record_plan(dests, &key, &names).await?;
        let of = planned.len();
        for mut range in planned {
            range.of = of;
            let mut part = job.clone();
            part.size = job.size / of as u64;
            part.range = Some(range);
            out.push(part);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (column, lo, hi) in [
            ("id", None, Some(100)),
            ("id", Some(-5), Some(7)),
            ("My \"Key\" col", Some(9), None),
            ("x", None, None),
        ] {
            let r = KeyRange {
                column: column.into(),
                lo,
                hi,
                of: 0,
            };
            let name = r.progress_name("public.weird [name]");
            let back = KeyRange::parse("public.weird [name]", &name).expect(&name);
            assert_eq!(back, r);
            assert!(KeyRange::parse("public.weird", &name).is_none());
        }
        assert!(KeyRange::parse("public.t", "public.t").is_none());
        assert!(KeyRange::parse("public.t", "public.t [\"id\" x..)").is_none());
        let r = KeyRange::cut("a [b", &[1])[0].clone();
        assert_eq!(
            KeyRange::parse("t", &r.progress_name("t")),
            Some(KeyRange { of: 0, ..r })
        );
    }

    #[test]
    fn cuts_cover_every_key_once() {
        let ranges = KeyRange::cut("id", &[10, 20]);
        assert_eq!(ranges.len(), 3);
        assert_eq!((ranges[0].lo, ranges[0].hi), (None, Some(10)));
        assert_eq!((ranges[1].lo, ranges[1].hi), (Some(10), Some(20)));
        assert_eq!((ranges[2].lo, ranges[2].hi), (Some(20), None));
        assert_eq!(ranges[1].condition(), "\"id\" >= 10 AND \"id\" < 20");
        assert_eq!(ranges[2].condition(), "\"id\" >= 20");
        assert!(ranges.iter().all(|r| r.of == 3));
    }
}
