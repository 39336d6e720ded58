//! The push-based merger: the session feeds it each shard's RowDescription, DataRows and
//! completion, and takes the client's rows as soon as they are known.
//!
//! - no ORDER BY, no aggregates: rows pass straight through (then DISTINCT, OFFSET, LIMIT);
//! - ORDER BY: k-way merge of the shards' sorted streams, streamed;
//! - aggregates / GROUP BY: rows folded into groups, emitted by [`Merger::finish`], sorted.
use super::aggregate::{Groups, Row};
use super::datetime::DateStyle;
use super::error::MergeError;
use super::plan::{Bound, ColumnRef, DistinctPlan, MergePlan};
use super::setop::{self, Collector};
use super::sort::{self, Columns, KWay, SortKey};
use super::value::ColType;
use crate::net::rows::{self, DataRow, Field};
use crate::net::Message;
use std::collections::HashSet;

/// Merges the rows of one cross-shard query.
#[derive(Debug)]
pub struct Merger {
    plan: MergePlan,
    shards: usize,
    fields: Option<Vec<Field>>,
    types: Vec<ColType>,
    /// Columns the client sees.
    visible: usize,
    order: Vec<SortKey>,
    /// DISTINCT key columns.
    distinct: Option<Vec<usize>>,
    seen: HashSet<Vec<Option<Vec<u8>>>>,
    kway: Option<KWay>,
    groups: Option<Groups>,
    done: Vec<bool>,
    ready: Vec<Message>,
    offset: u64,
    limit: Option<u64>,
    skipped: u64,
    sent: u64,
    finished: bool,
    error: Option<MergeError>,
    /// The servers' DateStyle (text dates and timestamps are read in it).
    dates: DateStyle,
    /// INTERSECT / EXCEPT / UNION: each branch's rows, counted.
    set_rows: Option<Collector>,
    /// The set operation's branch number comes in binary.
    branch_binary: bool,
}

impl Merger {
    /// A merger for `shards` shards. LIMIT/OFFSET parameters must be bound first
    /// ([`MergePlan::bind`]).
    pub fn new(plan: &MergePlan, shards: usize) -> Merger {
        let count = |b: Option<Bound>| match b {
            Some(Bound::Const(v)) => Some(v.max(0) as u64),
            _ => None,
        };
        Merger {
            plan: plan.clone(),
            shards,
            fields: None,
            types: Vec::new(),
            visible: 0,
            order: Vec::new(),
            distinct: None,
            seen: HashSet::new(),
            kway: None,
            groups: None,
            done: vec![false; shards],
            ready: Vec::new(),
            offset: count(plan.offset).unwrap_or(0),
            limit: count(plan.limit),
            skipped: 0,
            sent: 0,
            finished: false,
            error: None,
            dates: DateStyle::default(),
            set_rows: None,
            branch_binary: false,
        }
    }

    /// The servers' DateStyle, as the server reports it in ParameterStatus (`ISO, MDY`,
    /// `SQL, DMY`, `German, DMY`, `Postgres, MDY` ...). Text-format `date`, `timestamp` and
    /// `timestamptz` values are read in it to be compared (ORDER BY, min/max); they reach the
    /// client unchanged. Call before the rows arrive; the default is `ISO, MDY`.
    pub fn set_datestyle(&mut self, datestyle: &str) {
        self.dates = DateStyle::parse(datestyle);
        let ds = self.dates;
        self.types.iter_mut().for_each(|t| t.dates = ds);
        self.order.iter_mut().for_each(|k| k.ty.dates = ds);
        if let Some(groups) = &mut self.groups {
            groups.set_date_style(ds);
        }
    }

    /// A shard's RowDescription. Returns the client's (hidden columns stripped) for the first
    /// one; later ones must agree on names, types and formats.
    pub fn row_description(
        &mut self,
        shard: usize,
        m: &Message,
    ) -> Result<Option<Message>, MergeError> {
        self.check_shard(shard)?;
        let fields = rows::read_row_description(m)?;
        if let Some(first) = &self.fields {
            check_same(first, &fields)?;
            return Ok(None);
        }
        if self.plan.needs_params() {
            return Err(MergeError::State("LIMIT/OFFSET parameters are not bound"));
        }
        let total = fields.len();
        if total < self.plan.hidden {
            return Err(MergeError::State("fewer columns than hidden columns"));
        }
        self.visible = total - self.plan.hidden;
        let dates = self.dates;
        self.types = fields
            .iter()
            .map(|f| ColType {
                dates,
                ..ColType::of(f)
            })
            .collect();
        let absolute = |c: ColumnRef| -> Result<usize, MergeError> {
            let i = match c {
                ColumnRef::Index(i) => i,
                ColumnRef::Hidden(j) => total - self.plan.hidden + j,
            };
            if i < total {
                Ok(i)
            } else {
                Err(MergeError::State("ORDER BY column out of range"))
            }
        };
        for k in &self.plan.order_by {
            let column = absolute(k.column)?;
            let ty = self.types[column];
            if !ty.ordered() {
                return Err(MergeError::unsupported(format!(
                    "ORDER BY on column \"{}\" (type oid {})",
                    fields[column].name, ty.oid
                )));
            }
            self.order.push(SortKey {
                column,
                descending: k.descending,
                nulls_first: k.nulls_first,
                ty,
            });
        }
        self.distinct = match &self.plan.distinct {
            DistinctPlan::None => None,
            DistinctPlan::All => Some((0..self.visible).collect()),
            DistinctPlan::On(cols) => Some(
                cols.iter()
                    .map(|&c| absolute(c))
                    .collect::<Result<_, _>>()?,
            ),
        };
        if let Some(so) = &self.plan.set_op {
            self.branch_binary = fields.last().is_some_and(|f| f.format == 1);
            if !so.streams() {
                self.set_rows = Some(Collector::new(
                    so.sources.len(),
                    &self.types[..self.visible],
                ));
            }
        }
        if let Some(g) = &self.plan.grouping {
            self.groups = Some(Groups::new(g, &self.types)?);
        } else if !self.order.is_empty() && self.set_rows.is_none() {
            self.kway = Some(KWay::new(self.shards));
        }
        let client = if self.plan.hidden == 0 {
            m.clone()
        } else {
            rows::row_description(&fields[..self.visible])
        };
        self.fields = Some(fields);
        Ok(Some(client))
    }

    /// A DataRow from a shard.
    pub fn row(&mut self, shard: usize, m: Message) -> Result<(), MergeError> {
        self.check_shard(shard)?;
        if self.fields.is_none() {
            return Err(MergeError::State("DataRow before RowDescription"));
        }
        let row = DataRow::parse(m)?;
        if row.len() != self.types.len() {
            return Err(MergeError::State(
                "DataRow and RowDescription differ in column count",
            ));
        }
        if let Some(groups) = &mut self.groups {
            return groups.add(&row);
        }
        if let Some(so) = &self.plan.set_op {
            let branch = setop::branch_of(row.get(self.types.len() - 1), self.branch_binary)?;
            if !so.accepts(branch, shard)? {
                return Ok(());
            }
            if let Some(rows) = &mut self.set_rows {
                return rows.add(
                    branch,
                    (0..self.visible).map(|i| row.get_bytes(i)).collect(),
                );
            }
        }
        let full = self.limit_reached();
        if let Some(kway) = &mut self.kway {
            if !full {
                kway.push(shard, row);
            }
            return Ok(());
        }
        self.emit(row)
    }

    /// The shard's CommandComplete arrived: it sends no more rows.
    pub fn shard_done(&mut self, shard: usize) {
        if let Some(d) = self.done.get_mut(shard) {
            *d = true;
        }
        if let Some(kway) = &mut self.kway {
            kway.shard_done(shard);
        }
    }

    /// Moves the rows that can be sent to the client now into `out`. An error (a value that
    /// cannot be compared) stops the merge and is returned by [`Merger::finish`].
    pub fn take_ready(&mut self, out: &mut Vec<Message>) {
        if self.kway.is_some() && self.error.is_none() {
            if let Err(e) = self.drain_kway() {
                self.error = Some(e);
                if let Some(k) = &mut self.kway {
                    k.clear();
                }
            }
        }
        out.append(&mut self.ready);
    }

    /// All shards are done: the remaining rows into `out`.
    pub fn finish(&mut self, out: &mut Vec<Message>) -> Result<(), MergeError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if let Some(kway) = &mut self.kway {
            kway.finish();
        }
        self.take_ready(out);
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(groups) = self.groups.take() {
            let mut merged = groups.finish()?;
            sort::sort_rows(&self.order, &mut merged)?;
            for row in merged {
                self.emit_merged(row);
            }
            out.append(&mut self.ready);
        }
        if let (Some(rows), Some(so)) = (self.set_rows.take(), &self.plan.set_op) {
            let mut merged = rows.finish(&so.tree)?;
            sort::sort_rows(&self.order, &mut merged)?;
            for row in merged {
                self.emit_merged(row);
            }
            out.append(&mut self.ready);
        }
        Ok(())
    }

    /// Rows sent to the client so far (for the `SELECT n` tag).
    pub fn rows_sent(&self) -> u64 {
        self.sent
    }

    /// Rows waiting on a shard for the k-way merge (for back-pressure).
    pub fn queued(&self, shard: usize) -> usize {
        self.kway.as_ref().map_or(0, |k| k.queued(shard))
    }

    /// The LIMIT is reached: further rows are dropped, the shards need not be read for rows.
    pub fn limit_reached(&self) -> bool {
        self.limit.is_some_and(|l| self.sent >= l)
    }

    fn check_shard(&self, shard: usize) -> Result<(), MergeError> {
        if shard >= self.shards {
            return Err(MergeError::State("unknown shard"));
        }
        Ok(())
    }

    fn drain_kway(&mut self) -> Result<(), MergeError> {
        while !self.limit_reached() {
            let Some(kway) = &mut self.kway else { break };
            match kway.pop(&self.order)? {
                Some(row) => self.emit(row)?,
                None => return Ok(()),
            }
        }
        if let Some(kway) = &mut self.kway {
            kway.clear();
        }
        Ok(())
    }

    /// Whether a row passes DISTINCT, OFFSET and LIMIT (counted when it does).
    fn admit<R: Columns>(&mut self, row: &R) -> bool {
        if self.limit_reached() {
            return false;
        }
        if let Some(cols) = &self.distinct {
            let key = cols
                .iter()
                .map(|&c| row.column(c).map(|v| self.types[c].key(v).into_owned()))
                .collect();
            if !self.seen.insert(key) {
                return false;
            }
        }
        if self.skipped < self.offset {
            self.skipped += 1;
            return false;
        }
        self.sent += 1;
        true
    }

    fn emit(&mut self, row: DataRow) -> Result<(), MergeError> {
        if self.admit(&row) {
            let m = if self.plan.hidden == 0 {
                row.into_message()
            } else {
                row.truncated(self.visible)
            };
            self.ready.push(m);
        }
        Ok(())
    }

    fn emit_merged(&mut self, row: Row) {
        if self.admit(&row) {
            self.ready
                .push(rows::data_row(&row[..self.visible.min(row.len())]));
        }
    }
}

/// Shards must describe the same columns.
fn check_same(first: &[Field], other: &[Field]) -> Result<(), MergeError> {
    if first.len() != other.len() {
        return Err(MergeError::Mismatch {
            column: first
                .get(other.len())
                .or(other.get(first.len()))
                .map_or(String::new(), |f| f.name.clone()),
            detail: format!(
                "{} columns on one shard, {} on another",
                first.len(),
                other.len()
            ),
        });
    }
    for (a, b) in first.iter().zip(other) {
        let detail = if a.name != b.name {
            format!("named \"{}\" on another shard", b.name)
        } else if a.type_oid != b.type_oid {
            format!(
                "type oid {} on one shard, {} on another",
                a.type_oid, b.type_oid
            )
        } else if a.format != b.format {
            "different formats".to_string()
        } else {
            continue;
        };
        return Err(MergeError::Mismatch {
            column: a.name.clone(),
            detail,
        });
    }
    Ok(())
}
