//! The copy watermarks of a table copied in key ranges (`copy/ranges.rs`): one per range and
//! destination shard. A change is skipped on a shard when the range of its key holds it
//! there; a key UPDATE across ranges is a DELETE by the old range's watermark and an upsert by
//! the new one's (`Applier::update`); a TRUNCATE empties only the ranges older than it.
use super::*;
use crate::reshard::copy::KeyRange;

/// A table's key ranges, each with its watermark per destination shard.
pub(super) struct RangeMarks {
    /// The range column's index among the relation's columns.
    column: usize,
    /// Sorted by lower bound, covering every key once.
    ranges: Vec<(KeyRange, Arc<[u64]>)>,
}

impl RangeMarks {
    /// The ranges of table `name` among the progress rows (None: copied whole), checked: they
    /// cover every key once and every one is copied on every destination shard.
    pub(super) fn load(
        name: &str,
        columns: &[String],
        watermarks: &HashMap<String, Vec<Option<u64>>>,
        key: &str,
    ) -> Result<Option<RangeMarks>, ReplayError> {
        let mut found: Vec<(KeyRange, &Vec<Option<u64>>)> = watermarks
            .iter()
            .filter_map(|(n, marks)| KeyRange::parse(name, n).map(|range| (range, marks)))
            .collect();
        if found.is_empty() {
            return Ok(None);
        }
        if watermarks.contains_key(name) {
            return Err(other(format!(
                "table {name} has both a whole-table copy and key ranges for {key} on the \
                 destination: copy it again"
            )));
        }
        found.sort_by_key(|(r, _)| r.lo);
        let column_name = found[0].0.column.clone();
        let column = columns
            .iter()
            .position(|c| *c == column_name)
            .ok_or_else(|| {
                other(format!(
                    "table {name} was copied in ranges of column \"{column_name}\", which it \
                     no longer has"
                ))
            })?;
        let covered = found.first().is_some_and(|(r, _)| r.lo.is_none())
            && found.last().is_some_and(|(r, _)| r.hi.is_none())
            && found
                .windows(2)
                .all(|w| w[0].0.hi.is_some() && w[0].0.hi == w[1].0.lo)
            && found.iter().all(|(r, _)| r.column == column_name);
        if !covered {
            return Err(other(format!(
                "table {name}: the key ranges recorded for {key} on the destination do not \
                 cover every key once"
            )));
        }
        let mut ranges = Vec::with_capacity(found.len());
        for (range, marks) in found {
            let all: Option<Vec<u64>> = marks.iter().copied().collect();
            let all = all.ok_or_else(|| {
                other(format!(
                    "{} has no copy watermark for {key} on every destination shard: finish \
                     the copy with `pgdog copy-data --slot` first",
                    range.progress_name(name)
                ))
            })?;
            ranges.push((range, all.into()));
        }
        Ok(Some(RangeMarks { column, ranges }))
    }

    /// The watermarks of the range holding `tuple`'s key.
    pub(super) fn of(&self, table: &str, tuple: &TupleData) -> Result<Arc<[u64]>, ReplayError> {
        let value = match tuple.columns.get(self.column) {
            Some(ColumnValue::Text(b)) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<i64>().ok()),
            _ => None,
        };
        let value = value.ok_or_else(|| {
            other(format!(
                "table {table}: a change without an integer value of its range column"
            ))
        })?;
        let at = self
            .ranges
            .partition_point(|(r, _)| r.lo.is_none_or(|lo| lo <= value));
        // The first range has no lower bound, so `at` >= 1.
        Ok(self.ranges[at.saturating_sub(1)].1.clone())
    }

    /// Every range with its watermarks.
    pub(super) fn all(&self) -> &[(KeyRange, Arc<[u64]>)] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks() -> HashMap<String, Vec<Option<u64>>> {
        let mut m = HashMap::new();
        for (r, wm) in KeyRange::cut("id", &[10, 20]).iter().zip([100, 200, 300]) {
            m.insert(r.progress_name("public.t"), vec![Some(wm), Some(wm + 1)]);
        }
        m
    }

    fn row(id: &str) -> TupleData {
        TupleData {
            columns: vec![
                ColumnValue::Null,
                ColumnValue::Text(Bytes::from(id.to_string())),
            ],
        }
    }

    #[test]
    fn a_key_finds_its_range() {
        let cols = vec!["v".to_string(), "id".to_string()];
        let r = RangeMarks::load("public.t", &cols, &marks(), "s")
            .unwrap()
            .unwrap();
        for (id, wm) in [
            ("-9", 100),
            ("9", 100),
            ("10", 200),
            ("19", 200),
            ("20", 300),
        ] {
            assert_eq!(&*r.of("public.t", &row(id)).unwrap(), &[wm, wm + 1], "{id}");
        }
        assert!(r.of("public.t", &row("x")).is_err());
        assert!(RangeMarks::load("public.u", &cols, &marks(), "s")
            .unwrap()
            .is_none());
    }

    #[test]
    fn gaps_missing_copies_and_whole_copies_are_refused() {
        let cols = vec!["id".to_string()];
        let mut m = marks();
        m.remove(&KeyRange::cut("id", &[10, 20])[1].progress_name("public.t"));
        assert!(RangeMarks::load("public.t", &cols, &m, "s").is_err());
        let mut m = marks();
        m.insert(
            KeyRange::cut("id", &[10, 20])[1].progress_name("public.t"),
            vec![Some(1), None],
        );
        assert!(RangeMarks::load("public.t", &cols, &m, "s").is_err());
        let mut m = marks();
        m.insert("public.t".into(), vec![Some(1), Some(1)]);
        assert!(RangeMarks::load("public.t", &cols, &m, "s").is_err());
        assert!(RangeMarks::load("public.t", &["other".to_string()], &marks(), "s").is_err());
    }
}
