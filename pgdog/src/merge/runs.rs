//! ORDER BY over more rows than `merge_work_mem` holds: rows are sorted in memory until the
//! budget is full, then written out as a sorted run; the runs are merged back in order. Without
//! a full budget nothing touches the disk.
use super::aggregate::Row;
use super::error::MergeError;
use super::memory::{row_bytes, Budget};
use super::sort::{self, SortKey};
use super::spill::{SpillFile, SpillReader};
use crate::net::rows::{data_row, DataRow};
use std::cmp::Ordering;
use std::path::PathBuf;

/// Rows being collected for sorting.
#[derive(Debug)]
pub struct Sorter {
    keys: Vec<SortKey>,
    buf: Vec<Row>,
    /// Bytes of `buf` charged to the budget.
    bytes: u64,
    runs: Vec<SpillFile>,
    dir: PathBuf,
}

impl Sorter {
    pub fn new(keys: &[SortKey], budget: &Budget) -> Sorter {
        Sorter {
            keys: keys.to_vec(),
            buf: Vec::new(),
            bytes: 0,
            runs: Vec::new(),
            dir: budget.limits.temp_dir.clone(),
        }
    }

    pub fn push(&mut self, row: Row, budget: &mut Budget) -> Result<(), MergeError> {
        let n = row_bytes(row.iter().map(|v| v.as_deref()));
        budget.charge(n);
        self.bytes += n;
        self.buf.push(row);
        // A run holds at least a quarter of merge_work_mem: no flood of tiny runs (and open
        // files) when memory is short across the process.
        if budget.full() && self.bytes >= budget.limits.work_mem / 4 {
            self.write_run(budget)?;
        }
        Ok(())
    }

    fn write_run(&mut self, budget: &mut Budget) -> Result<(), MergeError> {
        sort::sort_rows(&self.keys, &mut self.buf)?;
        let mut file = SpillFile::create(&self.dir)?;
        for row in self.buf.drain(..) {
            file.write(0, &data_row(&row))?;
        }
        self.buf.shrink_to(1024);
        self.runs.push(file);
        budget.release(self.bytes);
        self.bytes = 0;
        Ok(())
    }

    /// The rows in order.
    pub fn finish(mut self) -> Result<Sorted, MergeError> {
        sort::sort_rows(&self.keys, &mut self.buf)?;
        if self.runs.is_empty() {
            return Ok(Sorted::Memory(self.buf.into_iter()));
        }
        let mut readers = Vec::with_capacity(self.runs.len());
        for run in self.runs {
            readers.push(run.reader()?);
        }
        let mut merge = Merge {
            keys: self.keys,
            heads: Vec::with_capacity(readers.len() + 1),
            readers,
            memory: self.buf.into_iter(),
        };
        for i in 0..=merge.readers.len() {
            let head = merge.read(i)?;
            merge.heads.push(head);
        }
        Ok(Sorted::Runs(merge))
    }
}

/// Sorted rows, from memory or merged from runs on disk.
#[derive(Debug)]
pub enum Sorted {
    Memory(std::vec::IntoIter<Row>),
    Runs(Merge),
}

impl Sorted {
    pub fn next(&mut self) -> Result<Option<Row>, MergeError> {
        match self {
            Sorted::Memory(rows) => Ok(rows.next()),
            Sorted::Runs(m) => m.next(),
        }
    }
}

/// The runs' heads; the last source is the rows still in memory.
#[derive(Debug)]
pub struct Merge {
    keys: Vec<SortKey>,
    heads: Vec<Option<Row>>,
    readers: Vec<SpillReader>,
    memory: std::vec::IntoIter<Row>,
}

impl Merge {
    fn read(&mut self, source: usize) -> Result<Option<Row>, MergeError> {
        let Some(reader) = self.readers.get_mut(source) else {
            return Ok(self.memory.next());
        };
        let Some((_, m)) = reader.read()? else {
            return Ok(None);
        };
        let row = DataRow::parse(m)?;
        Ok(Some((0..row.len()).map(|i| row.get_bytes(i)).collect()))
    }

    fn next(&mut self) -> Result<Option<Row>, MergeError> {
        let mut best: Option<usize> = None;
        for (i, head) in self.heads.iter().enumerate() {
            let Some(row) = head else { continue };
            best = match best {
                Some(b) => match &self.heads[b] {
                    Some(cur) if sort::compare(&self.keys, row, cur)? == Ordering::Less => Some(i),
                    _ => Some(b),
                },
                None => Some(i),
            };
        }
        let Some(b) = best else { return Ok(None) };
        let next = self.read(b)?;
        Ok(std::mem::replace(&mut self.heads[b], next))
    }
}
