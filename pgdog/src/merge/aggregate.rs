//! GROUP BY and aggregates: shard rows folded into groups (a hash map on the typed key columns;
//! NULL keys group together), partial aggregates combined (count and sum added, min/max compared,
//! avg recomputed from sum and count), then HAVING applied to the merged groups.
use super::datetime::DateStyle;
use super::decimal::Decimal;
use super::error::MergeError;
use super::having::{Constant, HavingCond};
use super::key::{self, KeyMap};
use super::list::{self, ListAgg};
use super::memory::{row_bytes, Budget};
use super::plan::{AggFn, Grouping};
use super::value::{ColType, Kind, Number};
use crate::net::rows::DataRow;
use bytes::Bytes;

/// A merged row: one value per shard column (`None`: NULL).
pub type Row = Vec<Option<Bytes>>;

/// One column's running value within a group.
#[derive(Debug, Clone)]
enum Acc {
    First(Option<Bytes>),
    Count(i128),
    SumInt(Option<i128>),
    SumDec(Option<Decimal>),
    SumF64(Option<f64>),
    SumF32(Option<f32>),
    Min(Option<Bytes>),
    Max(Option<Bytes>),
    Bool(Option<bool>),
    /// bit_and / bit_or / bit_xor so far.
    Bits(Option<i128>),
    /// avg: Σ avg_i × count_i, used when the shards' sums are `real` (imprecise).
    Avg(f64),
    /// stddev / variance: computed from other columns' totals.
    Spread,
    /// array_agg / string_agg: every shard's elements.
    List(list::ListState),
    /// A helper column only other columns read.
    Ignored,
}

/// The groups of an aggregate query being merged.
#[derive(Debug)]
pub struct Groups {
    roles: Vec<AggFn>,
    lists: Vec<ListAgg>,
    types: Vec<ColType>,
    keys: Vec<usize>,
    having: Vec<HavingCond>,
    index: KeyMap<usize>,
    /// The key of the row being added.
    scratch: Vec<u8>,
    /// New groups spill from the first one that did until these groups are finished (a key
    /// is either in memory or in one partition, never both).
    spilling: bool,
    groups: Vec<(bool, Vec<Acc>)>,
    /// Accumulators of a fresh group.
    fresh: Vec<Acc>,
    /// Bytes charged to the statement's budget.
    charged: u64,
}

/// A value kept beyond its row: copied, so it does not hold the server's read buffer.
fn owned(row: &DataRow, i: usize) -> Option<Bytes> {
    row.get(i).map(Bytes::copy_from_slice)
}

fn unsupported(what: &str, ty: &ColType) -> MergeError {
    MergeError::unsupported(format!(
        "{what} on a column of type oid {}{}",
        ty.oid,
        if ty.binary { " in binary format" } else { "" }
    ))
}

impl Groups {
    /// Checks that every aggregate column has a type the merger can combine.
    pub fn new(g: &Grouping, types: &[ColType]) -> Result<Groups, MergeError> {
        if g.columns.len() != types.len() {
            return Err(MergeError::State(
                "aggregate columns and RowDescription differ",
            ));
        }
        let mut fresh = Vec::with_capacity(types.len());
        for (role, ty) in g.columns.iter().zip(types) {
            fresh.push(match role {
                AggFn::First => Acc::First(None),
                AggFn::Count | AggFn::CountDistinct if ty.numeric() => Acc::Count(0),
                AggFn::Sum | AggFn::Count | AggFn::CountDistinct => {
                    sum_acc(ty).ok_or_else(|| unsupported("sum", ty))?
                }
                &AggFn::Spread {
                    count, sum, sumsq, ..
                } => {
                    // Integer and numeric inputs give numeric; float inputs (double precision
                    // results) are not computed exactly by Postgres either: refused.
                    let numeric = |c: usize| types.get(c).is_some_and(|t| t.kind == Kind::Numeric);
                    let counted = types.get(count).is_some_and(|t| t.numeric());
                    if ty.kind != Kind::Numeric || !numeric(sum) || !numeric(sumsq) || !counted {
                        return Err(unsupported(
                            "stddev/variance (integer and numeric inputs only)",
                            ty,
                        ));
                    }
                    Acc::Spread
                }
                AggFn::List(l) => {
                    let i = fresh.len();
                    let list = g.lists.get(*l).ok_or(MergeError::State("list aggregate"))?;
                    list::check_types(list, i, types)?;
                    Acc::List(list::ListState::default())
                }
                AggFn::ListPart => Acc::Ignored,
                AggFn::Min if ty.ordered() => Acc::Min(None),
                AggFn::Max if ty.ordered() => Acc::Max(None),
                AggFn::Min | AggFn::Max => return Err(unsupported("min/max", ty)),
                AggFn::BoolAnd | AggFn::BoolOr if ty.kind == Kind::Bool => Acc::Bool(None),
                AggFn::BoolAnd | AggFn::BoolOr => return Err(unsupported("bool_and/bool_or", ty)),
                AggFn::BitAnd | AggFn::BitOr | AggFn::BitXor if ty.kind.is_int() => Acc::Bits(None),
                AggFn::BitAnd | AggFn::BitOr | AggFn::BitXor => {
                    return Err(unsupported("bit_and/bit_or/bit_xor", ty))
                }
                AggFn::Avg { sum, count } => {
                    let ok_avg = matches!(ty.kind, Kind::Numeric | Kind::Float8);
                    let sum_ty = types.get(*sum).ok_or(MergeError::State("avg sum column"))?;
                    let count_ty = types
                        .get(*count)
                        .ok_or(MergeError::State("avg count column"))?;
                    if !ok_avg || sum_acc(sum_ty).is_none() || !count_ty.numeric() {
                        return Err(unsupported("avg", ty));
                    }
                    Acc::Avg(0.0)
                }
            });
        }
        Ok(Groups {
            roles: g.columns.clone(),
            lists: g.lists.clone(),
            types: types.to_vec(),
            keys: g.keys.clone(),
            having: g.having.clone(),
            index: KeyMap::default(),
            scratch: Vec::new(),
            spilling: false,
            groups: Vec::new(),
            fresh,
            charged: 0,
        })
    }

    /// How the servers print dates and timestamps.
    pub fn set_date_style(&mut self, ds: DateStyle) {
        self.types.iter_mut().for_each(|t| t.dates = ds);
    }

    /// Folds one shard row into its group. A row of a new group while `budget` is full is
    /// not taken when `spill_depth` allows spilling: its key's hash at that depth is returned,
    /// and the row belongs in that spill partition.
    pub fn add(
        &mut self,
        row: &DataRow,
        budget: &mut Budget,
        spill_depth: Option<u32>,
    ) -> Result<Option<u64>, MergeError> {
        let types = &self.types;
        key::encode(
            &mut self.scratch,
            self.keys
                .iter()
                .map(|&k| row.get(k).map(|v| types[k].key(v))),
        );
        let g = match self.index.get(self.scratch.as_slice()) {
            Some(&g) => g,
            None => {
                if let Some(depth) = spill_depth.filter(|_| self.spilling || budget.full()) {
                    self.spilling = true;
                    return Ok(Some(key::partition_hash(&self.scratch, depth)));
                }
                let n = row_bytes((0..row.len()).map(|i| row.get(i)))
                    + key::stored_bytes(&self.scratch)
                    + std::mem::size_of::<Acc>() as u64 * self.fresh.len() as u64;
                budget.charge(n);
                self.charged += n;
                self.groups.push((false, self.fresh.clone()));
                self.index
                    .insert(self.scratch.as_slice().into(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let (seen, accs) = &mut self.groups[g];
        let first_row = !*seen;
        *seen = true;
        for (i, acc) in accs.iter_mut().enumerate() {
            let ty = &self.types[i];
            let v = row.get(i);
            let bad = || MergeError::BadValue {
                column: i,
                detail: format!("not a valid value of type oid {}", ty.oid),
            };
            match acc {
                Acc::First(slot) => {
                    if first_row {
                        *slot = owned(row, i);
                    }
                }
                Acc::Count(n) => {
                    if let Some(v) = v {
                        match ty.number(v).ok_or_else(bad)? {
                            Number::Int(x) => *n += x,
                            _ => return Err(bad()),
                        }
                    }
                }
                Acc::SumInt(s) => {
                    if let Some(Number::Int(x)) =
                        v.map(|v| ty.number(v).ok_or_else(bad)).transpose()?
                    {
                        *s = Some(s.unwrap_or(0) + x);
                    }
                }
                Acc::SumDec(s) => {
                    if let Some(n) = v.map(|v| ty.number(v).ok_or_else(bad)).transpose()? {
                        let Number::Dec(d) = n else { return Err(bad()) };
                        *s = Some(match s {
                            Some(t) => t.add(&d),
                            None => d,
                        });
                    }
                }
                Acc::SumF64(s) => {
                    if let Some(Number::Float(x)) =
                        v.map(|v| ty.number(v).ok_or_else(bad)).transpose()?
                    {
                        *s = Some(s.unwrap_or(0.0) + x);
                    }
                }
                Acc::SumF32(s) => {
                    if let Some(Number::Float(x)) =
                        v.map(|v| ty.number(v).ok_or_else(bad)).transpose()?
                    {
                        *s = Some(s.unwrap_or(0.0) + x as f32);
                    }
                }
                Acc::Min(m) | Acc::Max(m) => {
                    let want = if matches!(self.roles[i], AggFn::Min) {
                        std::cmp::Ordering::Less
                    } else {
                        std::cmp::Ordering::Greater
                    };
                    if let Some(v) = v {
                        let better = match m.as_deref() {
                            None => true,
                            Some(cur) => ty.compare_at(i, v, cur)? == want,
                        };
                        if better {
                            *m = owned(row, i);
                        }
                    }
                }
                Acc::Bool(b) => {
                    if let Some(v) = v {
                        let x = matches!(v, b"t" | [1]);
                        let and = matches!(self.roles[i], AggFn::BoolAnd);
                        *b = Some(match *b {
                            None => x,
                            Some(cur) if and => cur && x,
                            Some(cur) => cur || x,
                        });
                    }
                }
                Acc::Bits(b) => {
                    if let Some(Number::Int(x)) = v.and_then(|v| ty.number(v)) {
                        *b = Some(match (*b, self.roles[i]) {
                            (None, _) => x,
                            (Some(cur), AggFn::BitAnd) => cur & x,
                            (Some(cur), AggFn::BitOr) => cur | x,
                            (Some(cur), _) => cur ^ x,
                        });
                    }
                }
                Acc::Spread | Acc::Ignored => {}
                Acc::List(items) => {
                    if let AggFn::List(l) = self.roles[i] {
                        let list = self.lists.get(l).ok_or(MergeError::State("list"))?;
                        // A group's list cannot be split: it is counted against
                        // merge_memory_limit only.
                        let n = row_bytes((0..row.len()).map(|c| row.get(c)));
                        budget.charge_fixed(n)?;
                        self.charged += n;
                        list::add(list, i, row, &self.types, items)?;
                    }
                }
                Acc::Avg(w) => {
                    if let AggFn::Avg { count, .. } = self.roles[i] {
                        let avg = v.and_then(|v| ty.number(v));
                        let n = row.get(count).and_then(|c| self.types[count].number(c));
                        if let (Some(Number::Float(a)), Some(Number::Int(n))) = (avg, n) {
                            *w += a * n as f64;
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// Bytes charged to the budget for these groups.
    pub fn charged(&self) -> u64 {
        self.charged
    }

    /// The merged groups (in first-seen order) that pass HAVING, one at a time: each group's
    /// memory goes as its row is made, the key index at once.
    pub fn into_rows(mut self) -> GroupRows {
        self.index = KeyMap::default();
        let groups = std::mem::take(&mut self.groups).into_iter();
        GroupRows {
            groups,
            shell: self,
        }
    }

    fn value(&self, i: usize, acc: &Acc, accs: &[Acc]) -> Result<Option<Bytes>, MergeError> {
        let ty = &self.types[i];
        let enc = |n: Number| -> Result<Option<Bytes>, MergeError> {
            ty.encode(&n)
                .map(|v| Some(Bytes::from(v)))
                .ok_or(match ty.kind {
                    Kind::Int8 => MergeError::OutOfRange("bigint"),
                    _ => unsupported("this aggregate", ty),
                })
        };
        Ok(match acc {
            Acc::First(v) | Acc::Min(v) | Acc::Max(v) => v.clone(),
            Acc::Count(n) => enc(Number::Int(*n))?,
            Acc::SumInt(s) => match s {
                Some(s) => enc(Number::Int(*s))?,
                None => None,
            },
            Acc::SumDec(s) => match s {
                Some(d) => enc(Number::Dec(d.clone()))?,
                None => None,
            },
            Acc::SumF64(s) => s.map(|f| enc(Number::Float(f))).transpose()?.flatten(),
            Acc::SumF32(s) => s
                .map(|f| enc(Number::Float(f as f64)))
                .transpose()?
                .flatten(),
            Acc::Bool(b) => b.map(|b| {
                Bytes::from_static(match (b, ty.binary) {
                    (true, false) => b"t",
                    (false, false) => b"f",
                    (true, true) => &[1],
                    (false, true) => &[0],
                })
            }),
            Acc::Bits(b) => match b {
                Some(b) => enc(Number::Int(*b))?,
                None => None,
            },
            Acc::Ignored => None,
            Acc::List(items) => {
                let AggFn::List(l) = self.roles[i] else {
                    return Err(MergeError::State("list role"));
                };
                let list = self.lists.get(l).ok_or(MergeError::State("list"))?;
                list::finish(list, i, items, &self.types)?.map(Bytes::from)
            }
            Acc::Spread => {
                let AggFn::Spread {
                    kind,
                    count,
                    sum,
                    sumsq,
                } = self.roles[i]
                else {
                    return Err(MergeError::State("stddev/variance role"));
                };
                let n = match accs.get(count) {
                    Some(Acc::Count(n)) => *n,
                    _ => return Err(MergeError::State("stddev/variance count")),
                };
                let total = |c: usize| match accs.get(c) {
                    Some(Acc::SumDec(d)) => d.as_ref(),
                    _ => None,
                };
                match kind.finish(n, total(sum), total(sumsq)) {
                    Some(d) => enc(Number::Dec(d))?,
                    None => None,
                }
            }
            Acc::Avg(weighted) => {
                let AggFn::Avg { sum, count } = self.roles[i] else {
                    return Err(MergeError::State("avg role"));
                };
                let n = match accs.get(count) {
                    Some(Acc::Count(n)) => *n,
                    _ => return Err(MergeError::State("avg count")),
                };
                if n == 0 {
                    return Ok(None);
                }
                match accs.get(sum) {
                    Some(Acc::SumInt(Some(s))) => {
                        enc(Number::Dec(Decimal::from_i128(*s).div_count(n as i64)))?
                    }
                    Some(Acc::SumDec(Some(d))) => enc(Number::Dec(d.div_count(n as i64)))?,
                    Some(Acc::SumF64(Some(s))) => enc(Number::Float(s / n as f64))?,
                    Some(Acc::SumF32(Some(_))) => enc(Number::Float(weighted / n as f64))?,
                    _ => None,
                }
            }
        })
    }

    fn having_holds(&self, row: &Row) -> Result<bool, MergeError> {
        for c in &self.having {
            let Some(Some(v)) = row.get(c.column) else {
                return Ok(false);
            };
            let ty = &self.types[c.column];
            let bad = || MergeError::BadValue {
                column: c.column,
                detail: "cannot compare with the HAVING constant".into(),
            };
            let o = if ty.numeric() {
                let n = ty.number(v).ok_or_else(bad)?;
                let k = match &c.value {
                    Constant::Number(d) => Number::Dec(d.clone()),
                    Constant::Text(s) => Number::Dec(Decimal::parse(s).ok_or_else(bad)?),
                };
                n.cmp_value(&k)
            } else {
                let k = match &c.value {
                    Constant::Number(d) => d.to_string(),
                    Constant::Text(s) => s.clone(),
                };
                if ty.binary && !matches!(ty.kind, Kind::Text | Kind::Bpchar) {
                    return Err(unsupported("HAVING", ty));
                }
                ty.compare_at(c.column, v, k.as_bytes())?
            };
            if !c.op.holds(o) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// [`Groups::into_rows`].
#[derive(Debug)]
pub struct GroupRows {
    groups: std::vec::IntoIter<(bool, Vec<Acc>)>,
    /// The plan and types (no groups).
    shell: Groups,
}

impl GroupRows {
    /// The next group that passes HAVING.
    pub fn next_row(&mut self) -> Result<Option<Row>, MergeError> {
        for (_, accs) in self.groups.by_ref() {
            let mut row = Vec::with_capacity(accs.len());
            for (i, acc) in accs.iter().enumerate() {
                row.push(self.shell.value(i, acc, &accs)?);
            }
            if self.shell.having_holds(&row)? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

fn sum_acc(ty: &ColType) -> Option<Acc> {
    Some(match ty.kind {
        Kind::Int2 | Kind::Int4 | Kind::Int8 => Acc::SumInt(None),
        Kind::Numeric => Acc::SumDec(None),
        Kind::Float8 => Acc::SumF64(None),
        Kind::Float4 => Acc::SumF32(None),
        _ => return None,
    })
}
