//! The push-based merger: the session feeds it each shard's RowDescription, DataRows and
//! completion, and takes the client's rows as soon as they are known.
//!
//! - no ORDER BY, no aggregates: rows pass straight through (then DISTINCT, OFFSET, LIMIT);
//! - ORDER BY: k-way merge of the shards' sorted streams, streamed;
//! - aggregates / GROUP BY: rows folded into groups, emitted by [`Merger::finish`], sorted.
//!
//! Past `merge_work_mem` ([`MemoryLimits`]) the blocking parts spill (see `drain`): rows of
//! new groups, new set-operation rows and new DISTINCT keys go to hash partitions on disk,
//! merged one part at a time when the shards are done; ORDER BY of merged rows sorts in runs.
use super::aggregate::{Groups, Row};
use super::datetime::DateStyle;
use super::drain::Output;
use super::error::MergeError;
use super::key::{self, KeySet};
use super::memory::{Budget, MemoryLimits};
use super::plan::{Bound, ColumnRef, DistinctPlan, MergePlan};
use super::setop::{self, Collector};
use super::sort::{self, Columns, KWay, SortKey};
use super::spill::{self, Partitions};
use super::value::{ColType, Kind};
use crate::net::rows::{self, DataRow, Field};
use crate::net::Message;
use bytes::Bytes;
use std::cmp::Ordering;

/// Merges the rows of one cross-shard query.
#[derive(Debug)]
pub struct Merger {
    pub(super) plan: MergePlan,
    shards: usize,
    fields: Option<Vec<Field>>,
    pub(super) types: Vec<ColType>,
    /// Columns the client sees.
    visible: usize,
    pub(super) order: Vec<SortKey>,
    /// DISTINCT key columns.
    distinct: Option<Vec<usize>>,
    pub(super) seen: KeySet,
    /// The DISTINCT key of the row being admitted.
    scratch: Vec<u8>,
    /// Bytes of `seen` charged to the budget.
    seen_bytes: u64,
    /// Ordered DISTINCT: the sort keys `seen` holds rows of (rows with other keys can no
    /// longer repeat one seen, so `seen` starts again when the keys change).
    seen_run: Option<Row>,
    /// Leading ORDER BY keys equal for rows DISTINCT calls equal.
    distinct_prefix: usize,
    /// Unordered DISTINCT past the budget: rows of keys not in `seen`, deduplicated after.
    pub(super) distinct_spill: Option<Partitions>,
    /// Depth of the DISTINCT partitions being read (0: the shards' rows).
    pub(super) distinct_depth: u32,
    /// New DISTINCT keys spill from the first one that did until the next partition starts.
    pub(super) distinct_spilling: bool,
    /// The ordered-DISTINCT reset applies: the leading sort keys compare as the servers do
    /// whatever their collation (no text).
    resets: bool,
    kway: Option<KWay>,
    pub(super) groups: Option<Groups>,
    done: Vec<bool>,
    pub(super) ready: Vec<Message>,
    offset: u64,
    limit: Option<u64>,
    skipped: u64,
    sent: u64,
    pub(super) finished: bool,
    error: Option<MergeError>,
    /// A row failed (its error went to the session): the rest are dropped.
    failed: bool,
    /// The servers' DateStyle (text dates and timestamps are read in it).
    pub(super) dates: DateStyle,
    /// The client's encoding does not order text as its bytes (see `set_text_unordered`).
    text_unordered: bool,
    /// INTERSECT / EXCEPT / UNION: each branch's rows, counted.
    pub(super) set_rows: Option<Collector>,
    /// The set operation's branch number comes in binary.
    branch_binary: bool,
    pub(super) budget: Budget,
    /// Shard rows of groups or set-operation keys that did not fit, by key hash.
    pub(super) input_spill: Option<Partitions>,
    /// After [`Merger::finish`] starts: what is left to send.
    pub(super) output: Option<Output>,
}

impl Merger {
    /// A merger for `shards` shards with the default memory limits. LIMIT/OFFSET parameters
    /// must be bound first ([`MergePlan::bind`]).
    pub fn new(plan: &MergePlan, shards: usize) -> Merger {
        Merger::with_limits(plan, shards, MemoryLimits::default())
    }

    /// A merger that spills past `limits`.
    pub fn with_limits(plan: &MergePlan, shards: usize, limits: MemoryLimits) -> Merger {
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
            seen: KeySet::default(),
            scratch: Vec::new(),
            seen_bytes: 0,
            seen_run: None,
            distinct_prefix: 0,
            distinct_spill: None,
            distinct_depth: 0,
            distinct_spilling: false,
            resets: false,
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
            failed: false,
            dates: DateStyle::default(),
            text_unordered: false,
            set_rows: None,
            branch_binary: false,
            budget: Budget::new(limits),
            input_spill: None,
            output: None,
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

    /// Text reaches the client in an encoding whose byte order is not the servers' order
    /// (anything but UTF8, SQL_ASCII and LATIN1): text columns are then compared for equality
    /// only, and ORDER BY or min/max on them across shards is refused. Call before the rows
    /// arrive.
    pub fn set_text_unordered(&mut self) {
        self.text_unordered = true;
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
                unordered_text: self.text_unordered,
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
        // Postgres: ORDER BY of a DISTINCT names output columns, and DISTINCT ON's
        // expressions lead the ORDER BY.
        self.distinct_prefix = match &self.plan.distinct {
            DistinctPlan::On(cols) => cols.len().min(self.order.len()),
            _ => self.order.len(),
        };
        self.resets = self.distinct_prefix > 0
            && self.order[..self.distinct_prefix]
                .iter()
                .all(|k| !matches!(k.ty.kind, Kind::Text | Kind::Bpchar));
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

    /// A DataRow from a shard. After an error (returned once) the merge is over: its memory
    /// and files go at once, and the rest of the shards' rows are dropped.
    pub fn row(&mut self, shard: usize, m: Message) -> Result<(), MergeError> {
        if self.error.is_some() || self.failed {
            return Ok(());
        }
        let result = self.take_row(shard, m);
        if result.is_err() {
            self.failed = true;
            self.groups = None;
            self.set_rows = None;
            self.kway = None;
            self.input_spill = None;
            self.distinct_spill = None;
            self.ready.clear();
            self.forget_seen();
        }
        result
    }

    fn take_row(&mut self, shard: usize, m: Message) -> Result<(), MergeError> {
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
        if self.groups.is_some() || self.set_rows.is_some() {
            if self.plan.set_op.is_some() && !self.accepted(shard, &row)? {
                return Ok(());
            }
            if let Some(hash) = self.fold(shard, &row, Some(0))? {
                let dir = self.budget.limits.temp_dir.clone();
                self.input_spill
                    .get_or_insert_with(|| Partitions::new(&dir, 1))
                    .write(hash, shard, row.message())?;
            }
            return Ok(());
        }
        if self.plan.set_op.is_some() && !self.accepted(shard, &row)? {
            return Ok(());
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

    /// Whether a set operation keeps this row of `shard` (its branch reads that shard).
    pub(super) fn accepted(&self, shard: usize, row: &DataRow) -> Result<bool, MergeError> {
        let Some(so) = &self.plan.set_op else {
            return Ok(true);
        };
        let branch = setop::branch_of(row.get(self.types.len() - 1), self.branch_binary)?;
        so.accepts(branch, shard)
    }

    /// Folds a shard row into the groups or the set operation's counts; the key hash of a row
    /// to spill instead (`spill_depth`: the partition depth, `None`: never spill).
    pub(super) fn fold(
        &mut self,
        _shard: usize,
        row: &DataRow,
        spill_depth: Option<u32>,
    ) -> Result<Option<u64>, MergeError> {
        let depth = spill_depth.filter(|d| *d < spill::MAX_DEPTH);
        if let Some(groups) = &mut self.groups {
            return groups.add(row, &mut self.budget, depth);
        }
        if let Some(rows) = &mut self.set_rows {
            let branch = setop::branch_of(row.get(self.types.len() - 1), self.branch_binary)?;
            return rows.add(branch, row, &mut self.budget, depth);
        }
        Err(MergeError::State("fold without groups"))
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

    /// Whether a row passes DISTINCT, OFFSET and LIMIT (counted when it does); or the key hash
    /// of a row to dedupe later (unordered DISTINCT past the budget).
    fn admit<R: Columns>(&mut self, row: &R) -> Result<Admit, MergeError> {
        if self.limit_reached() {
            return Ok(Admit::No);
        }
        if let Some(cols) = &self.distinct {
            let types = &self.types;
            key::encode(
                &mut self.scratch,
                cols.iter().map(|&c| row.column(c).map(|v| types[c].key(v))),
            );
            if self.seen.contains(self.scratch.as_slice()) {
                return Ok(Admit::No);
            }
            let n = key::stored_bytes(&self.scratch);
            if !self.order.is_empty() {
                if self.resets {
                    self.new_run(row)?;
                }
                // Rows come sorted: a run of equal sort keys (all rows, for text keys, whose
                // order may follow the servers' collation) cannot be split.
                self.budget.charge_fixed(n)?;
            } else if self.distinct_depth < spill::MAX_DEPTH
                && (self.distinct_spilling || self.budget.full())
            {
                self.distinct_spilling = true;
                return Ok(Admit::Spill(key::partition_hash(
                    &self.scratch,
                    self.distinct_depth,
                )));
            } else {
                self.budget.charge(n);
            }
            self.seen_bytes += n;
            self.seen.insert(self.scratch.as_slice().into());
        }
        if self.skipped < self.offset {
            self.skipped += 1;
            return Ok(Admit::No);
        }
        self.sent += 1;
        Ok(Admit::Yes)
    }

    /// Ordered DISTINCT: forgets the seen keys when the row's leading sort keys differ from
    /// those of the rows seen so far (rows arrive sorted, so no earlier key comes back).
    fn new_run<R: Columns>(&mut self, row: &R) -> Result<(), MergeError> {
        let keys = &self.order[..self.distinct_prefix];
        let current: Row = (0..self.types.len())
            .map(|i| {
                keys.iter()
                    .any(|k| k.column == i)
                    .then(|| row.column(i).map(Bytes::copy_from_slice))
                    .flatten()
            })
            .collect();
        let same = match &self.seen_run {
            Some(prev) => sort::compare(keys, prev, &current)? == Ordering::Equal,
            None => false,
        };
        if !same {
            self.forget_seen();
            self.seen_run = Some(current);
        }
        Ok(())
    }

    /// Empties the DISTINCT keys (and gives their memory back).
    pub(super) fn forget_seen(&mut self) {
        self.seen.clear();
        self.budget.release(self.seen_bytes);
        self.seen_bytes = 0;
    }

    pub(super) fn emit(&mut self, row: DataRow) -> Result<(), MergeError> {
        match self.admit(&row)? {
            Admit::Yes => {
                let m = if self.plan.hidden == 0 {
                    row.into_message()
                } else {
                    row.truncated(self.visible)
                };
                self.ready.push(m);
            }
            Admit::No => {}
            Admit::Spill(hash) => self.spill_distinct(hash, row.message())?,
        }
        Ok(())
    }

    pub(super) fn emit_merged(&mut self, row: Row) -> Result<(), MergeError> {
        match self.admit(&row)? {
            Admit::Yes => self
                .ready
                .push(rows::data_row(&row[..self.visible.min(row.len())])),
            Admit::No => {}
            Admit::Spill(hash) => self.spill_distinct(hash, &rows::data_row(&row))?,
        }
        Ok(())
    }

    fn spill_distinct(&mut self, hash: u64, m: &Message) -> Result<(), MergeError> {
        let (dir, depth) = (self.budget.limits.temp_dir.clone(), self.distinct_depth + 1);
        self.distinct_spill
            .get_or_insert_with(|| Partitions::new(&dir, depth))
            .write(hash, 0, m)
    }

    /// Stops the merge with `e` (returned by [`Merger::finish`]).
    pub(super) fn take_error(&mut self) -> Option<MergeError> {
        self.error.take()
    }

    pub(super) fn visible_types(&self) -> Vec<ColType> {
        self.types[..self.visible].to_vec()
    }

    pub(super) fn finish_kway(&mut self) {
        if let Some(kway) = &mut self.kway {
            kway.finish();
        }
    }
}

/// What DISTINCT, OFFSET and LIMIT do with a row.
enum Admit {
    Yes,
    No,
    Spill(u64),
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
