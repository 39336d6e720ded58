//! The end of a merge: once every shard is done, the merged rows go out in batches, so a result
//! larger than memory never sits whole in pgdog. In order:
//! 1. the groups (or set-operation rows) held in memory;
//! 2. each spilled input partition, merged on its own (what does not fit spills again, one
//!    level deeper, with another hash);
//! 3. with ORDER BY, all of the above went into a [`Sorter`] instead, and come out sorted;
//! 4. unordered DISTINCT rows that were spilled, each partition deduplicated on its own.
use super::aggregate::{GroupRows, Groups, Row};
use super::error::MergeError;
use super::merger::Merger;
use super::runs::{Sorted, Sorter};
use super::setop::Collector;
use super::spill::{Partitions, SpillFile, SpillReader};
use crate::net::rows::DataRow;
use crate::net::Message;

/// What is left to send after the shards are done.
#[derive(Debug, Default)]
pub struct Output {
    /// Merged rows not yet through DISTINCT / OFFSET / LIMIT (one part at a time).
    pending: std::vec::IntoIter<Row>,
    /// Groups not yet made into rows (one part at a time, without ORDER BY).
    pending_groups: Option<GroupRows>,
    /// Their bytes in the budget.
    pending_charge: u64,
    /// Input partitions still to merge, with the depth to read them at.
    parts: Vec<(SpillFile, u32)>,
    /// ORDER BY: merged rows collect here first.
    sorter: Option<Sorter>,
    sorted: Option<Sorted>,
    /// Spilled DISTINCT partitions still to read, with their depth.
    distinct_parts: Vec<(SpillFile, u32)>,
    /// The DISTINCT partition being read.
    distinct_reader: Option<SpillReader>,
}

impl Merger {
    /// All shards are done: every remaining row into `out`.
    pub fn finish(&mut self, out: &mut Vec<Message>) -> Result<(), MergeError> {
        while self.finish_some(out, usize::MAX)? {}
        Ok(())
    }

    /// All shards are done: the remaining rows into `out`, up to about `max` of them at a time;
    /// whether there are more (call again after sending these).
    pub fn finish_some(&mut self, out: &mut Vec<Message>, max: usize) -> Result<bool, MergeError> {
        if !self.finished {
            self.finished = true;
            self.finish_kway();
            self.take_ready(out);
            if let Some(e) = self.take_error() {
                return Err(e);
            }
            self.start_output()?;
        }
        let result = self.fill(out, max);
        if result.is_err() {
            // Removes the temporary files now.
            self.output = None;
        }
        result
    }

    /// Moves the groups or set-operation rows held in memory and the spilled parts into the
    /// output.
    fn start_output(&mut self) -> Result<(), MergeError> {
        let mut output = Output::default();
        if self.groups.is_some() || self.set_rows.is_some() {
            if !self.order.is_empty() {
                output.sorter = Some(Sorter::new(&self.order, &self.budget));
            }
            if let Some(parts) = self.input_spill.take() {
                queue(&mut output.parts, parts);
            }
            self.output = Some(output);
            self.finish_blocking()?;
        } else {
            self.output = Some(output);
        }
        Ok(())
    }

    /// The in-memory groups or set-operation rows, merged (their memory given back), to the
    /// sorter (ORDER BY) or to be sent. Without ORDER BY, groups become rows as they are sent.
    fn finish_blocking(&mut self) -> Result<(), MergeError> {
        if let Some(groups) = self.groups.take() {
            let charged = groups.charged();
            let mut rows = groups.into_rows();
            let output = self.output.as_mut().ok_or(MergeError::State("output"))?;
            match output.sorter.as_mut() {
                Some(sorter) => {
                    // The sorter charges what it keeps: the groups' charge goes first.
                    self.budget.release(charged);
                    while let Some(row) = rows.next_row()? {
                        sorter.push(row, &mut self.budget)?;
                    }
                }
                None => {
                    // Released once they are sent.
                    output.pending_groups = Some(rows);
                    output.pending_charge = charged;
                }
            }
            return Ok(());
        }
        if let (Some(rows), Some(so)) = (self.set_rows.take(), &self.plan.set_op) {
            let charged = rows.charged();
            let merged = rows.finish(&so.tree);
            self.budget.release(charged);
            let output = self.output.as_mut().ok_or(MergeError::State("output"))?;
            match output.sorter.as_mut() {
                Some(sorter) => {
                    for row in merged? {
                        sorter.push(row, &mut self.budget)?;
                    }
                }
                None => output.pending = merged?.into_iter(),
            }
        }
        Ok(())
    }

    fn fill(&mut self, out: &mut Vec<Message>, max: usize) -> Result<bool, MergeError> {
        loop {
            out.append(&mut self.ready);
            if self.limit_reached() {
                self.output = None;
                return Ok(false);
            }
            if out.len() >= max {
                return Ok(true);
            }
            let Some(output) = self.output.as_mut() else {
                return Ok(false);
            };
            if let Some(row) = output.pending.next() {
                self.emit_merged(row)?;
            } else if let Some(groups) = output.pending_groups.as_mut() {
                match groups.next_row()? {
                    Some(row) => self.emit_merged(row)?,
                    None => {
                        output.pending_groups = None;
                        let charged = std::mem::take(&mut output.pending_charge);
                        self.budget.release(charged);
                    }
                }
            } else if let Some((part, depth)) = output.parts.pop() {
                self.merge_part(part, depth)?;
            } else if let Some(sorter) = output.sorter.take() {
                output.sorted = Some(sorter.finish()?);
            } else if let Some(sorted) = output.sorted.as_mut() {
                match sorted.next()? {
                    Some(row) => self.emit_merged(row)?,
                    None => output.sorted = None,
                }
            } else if !self.next_distinct_row()? {
                self.output = None;
                out.append(&mut self.ready);
                return Ok(false);
            }
        }
    }

    /// Merges one spilled input partition: its rows folded into fresh groups (or counts), what
    /// does not fit spilled one level deeper.
    fn merge_part(&mut self, part: SpillFile, depth: u32) -> Result<(), MergeError> {
        let mut reader = part.reader()?;
        if let Some(g) = &self.plan.grouping {
            let mut groups = Groups::new(g, &self.types)?;
            groups.set_date_style(self.dates);
            self.groups = Some(groups);
        } else if let Some(so) = &self.plan.set_op {
            self.set_rows = Some(Collector::new(so.sources.len(), &self.visible_types()));
        }
        let mut deeper = Partitions::new(&self.budget.limits.temp_dir, depth + 1);
        while let Some((shard, m)) = reader.read()? {
            let row = DataRow::parse(m)?;
            if let Some(hash) = self.fold(shard, &row, Some(depth))? {
                deeper.write(hash, shard, row.message())?;
            }
        }
        drop(reader);
        self.finish_blocking()?;
        if let Some(output) = self.output.as_mut() {
            queue(&mut output.parts, deeper);
        }
        Ok(())
    }

    /// One row of the spilled DISTINCT partitions through DISTINCT / OFFSET / LIMIT; false when
    /// none are left.
    fn next_distinct_row(&mut self) -> Result<bool, MergeError> {
        loop {
            let Some(output) = self.output.as_mut() else {
                return Ok(false);
            };
            if let Some(reader) = output.distinct_reader.as_mut() {
                if let Some((_, m)) = reader.read()? {
                    self.emit(DataRow::parse(m)?)?;
                    return Ok(true);
                }
                output.distinct_reader = None;
            }
            if let Some(parts) = self.distinct_spill.take() {
                queue(&mut output.distinct_parts, parts);
            }
            let Some((part, depth)) = output.distinct_parts.pop() else {
                return Ok(false);
            };
            // Keys of one partition never appear in another: start afresh.
            output.distinct_reader = Some(part.reader()?);
            self.distinct_depth = depth;
            self.distinct_spilling = false;
            self.forget_seen();
        }
    }
}

fn queue(into: &mut Vec<(SpillFile, u32)>, parts: Partitions) {
    let depth = parts.depth;
    into.extend(parts.into_parts().into_iter().map(|p| (p, depth)));
}
