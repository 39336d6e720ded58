//! ORDER BY: typed row comparison and the k-way merge of the shards' sorted row streams.
use super::error::MergeError;
use super::value::ColType;
use crate::net::rows::DataRow;
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::VecDeque;

/// Column access for the rows the merger handles (shard DataRows and merged groups).
pub trait Columns {
    /// Column `i` (`None`: NULL).
    fn column(&self, i: usize) -> Option<&[u8]>;
}

impl Columns for DataRow {
    fn column(&self, i: usize) -> Option<&[u8]> {
        self.get(i)
    }
}

impl Columns for Vec<Option<Bytes>> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        self.get(i).and_then(|c| c.as_deref())
    }
}

/// One ORDER BY key, resolved to a column of the shard rows.
#[derive(Debug, Clone, Copy)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
    pub ty: ColType,
}

/// Compares two rows by the keys (NULLs placed per `nulls_first`).
pub fn compare<R: Columns>(keys: &[SortKey], a: &R, b: &R) -> Result<Ordering, MergeError> {
    for k in keys {
        let o = match (a.column(k.column), b.column(k.column)) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => nulls(k.nulls_first),
            (Some(_), None) => nulls(k.nulls_first).reverse(),
            (Some(x), Some(y)) => {
                let o = k.ty.compare_at(k.column, x, y)?;
                if k.descending {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return Ok(o);
        }
    }
    Ok(Ordering::Equal)
}

fn nulls(first: bool) -> Ordering {
    if first {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Sorts rows in place (stable merge sort), failing on the first pair of values that cannot
/// be compared (the comparison may fail, so `slice::sort_by` with its total-order
/// requirement is not used).
pub fn sort_rows<R: Columns>(keys: &[SortKey], rows: &mut Vec<R>) -> Result<(), MergeError> {
    let n = rows.len();
    let mut idx: Vec<usize> = (0..n).collect();
    let mut buf = idx.clone();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut l, mut r) = (start, mid);
            for slot in &mut buf[start..end] {
                let take_right = l == mid
                    || (r < end && compare(keys, &rows[idx[r]], &rows[idx[l]])? == Ordering::Less);
                if take_right {
                    *slot = idx[r];
                    r += 1;
                } else {
                    *slot = idx[l];
                    l += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut idx, &mut buf);
        width *= 2;
    }
    let mut slots: Vec<Option<R>> = rows.drain(..).map(Some).collect();
    rows.extend(idx.iter().filter_map(|&i| slots[i].take()));
    Ok(())
}

/// Per-shard queues of sorted rows; a row comes out once every unfinished shard has one queued,
/// so nothing smaller can still arrive.
#[derive(Debug)]
pub struct KWay {
    queues: Vec<VecDeque<DataRow>>,
    done: Vec<bool>,
}

impl KWay {
    pub fn new(shards: usize) -> KWay {
        KWay {
            queues: (0..shards).map(|_| VecDeque::new()).collect(),
            done: vec![false; shards],
        }
    }

    pub fn push(&mut self, shard: usize, row: DataRow) {
        self.queues[shard].push_back(row);
    }

    pub fn shard_done(&mut self, shard: usize) {
        self.done[shard] = true;
    }

    pub fn finish(&mut self) {
        self.done.iter_mut().for_each(|d| *d = true);
    }

    pub fn queued(&self, shard: usize) -> usize {
        self.queues.get(shard).map_or(0, VecDeque::len)
    }

    /// Drops every queued row (the LIMIT is reached).
    pub fn clear(&mut self) {
        self.queues.iter_mut().for_each(VecDeque::clear);
    }

    /// The next row in order, if it can be known now. Ties go to the lower shard.
    pub fn pop(&mut self, keys: &[SortKey]) -> Result<Option<DataRow>, MergeError> {
        let mut best: Option<usize> = None;
        for s in 0..self.queues.len() {
            let Some(head) = self.queues[s].front() else {
                if !self.done[s] {
                    return Ok(None);
                }
                continue;
            };
            best = match best {
                Some(b) => {
                    let Some(current) = self.queues[b].front() else {
                        return Err(MergeError::State("k-way merge lost a row"));
                    };
                    if compare(keys, head, current)? == Ordering::Less {
                        Some(s)
                    } else {
                        Some(b)
                    }
                }
                None => Some(s),
            };
        }
        Ok(best.and_then(|b| self.queues[b].pop_front()))
    }
}
