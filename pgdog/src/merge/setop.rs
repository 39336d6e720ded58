//! UNION, INTERSECT and EXCEPT across shards. Every shard runs all the branches joined by
//! UNION ALL, each branch tagged with its number in a hidden column; the merger keeps a
//! branch's rows from the shards that answer for it (all of them, or the one its key pins,
//! or one for a branch that reads no sharded table) and combines the branches as the query
//! says: UNION ALL streams (k-way merged when ordered), the others count rows per branch
//! (`INTERSECT ALL` keeps min(m, n) copies, `EXCEPT ALL` max(m - n, 0), the plain ones one).
use super::aggregate::Row;
use super::error::MergeError;
use super::key::{self, KeyMap};
use super::memory::{row_bytes, Budget};
use super::plan::{self, ColumnRef, MergePlan, OrderKey};
use super::rewrite;
use super::value::ColType;
use crate::net::rows::DataRow;
use bytes::Bytes;
use pg_query_raw::protobuf::{self as pb, node::Node as N};

/// How two inputs are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

/// The shape of the set operation; leaves are branch numbers, left to right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetTree {
    Branch(usize),
    Node {
        op: SetOp,
        all: bool,
        left: Box<SetTree>,
        right: Box<SetTree>,
    },
}

impl SetTree {
    /// Only UNION ALL: rows need no counting.
    fn streams(&self) -> bool {
        match self {
            SetTree::Branch(_) => true,
            SetTree::Node {
                op,
                all,
                left,
                right,
                ..
            } => *op == SetOp::Union && *all && left.streams() && right.streams(),
        }
    }
}

/// The merge side of a set operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetOpPlan {
    pub tree: SetTree,
    /// Per branch: `None` to keep its rows from every shard, `Some(i)` from the i-th shard of
    /// the route only (set by the router).
    pub sources: Vec<Option<usize>>,
}

impl SetOpPlan {
    /// Whether rows go out as they come (UNION ALL only).
    pub fn streams(&self) -> bool {
        self.tree.streams()
    }

    /// Whether the row of `branch` from the `shard`-th shard counts.
    pub(super) fn accepts(&self, branch: usize, shard: usize) -> Result<bool, MergeError> {
        match self.sources.get(branch) {
            Some(source) => Ok(source.is_none_or(|s| s == shard)),
            None => Err(MergeError::State("unknown set operation branch")),
        }
    }
}

/// Plans a top-level UNION / INTERSECT / EXCEPT: the shard query gets every set operation
/// turned into UNION ALL and each branch a trailing branch number.
pub(super) fn plan(select: &mut pb::SelectStmt) -> Result<MergePlan, MergeError> {
    if select.with_clause.is_some() {
        return Err(MergeError::unsupported(
            "WITH around a UNION, INTERSECT or EXCEPT across shards (move it into the branches)",
        ));
    }
    if select.limit_option == pb::LimitOption::WithTies as i32 {
        return Err(MergeError::unsupported("FETCH ... WITH TIES"));
    }
    let limit = plan::bound(select.limit_count.as_deref(), "LIMIT")?;
    let offset = plan::bound(select.limit_offset.as_deref(), "OFFSET")?;
    let names = output_names(select)?;
    let mut order_by = Vec::with_capacity(select.sort_clause.len());
    for s in &select.sort_clause {
        order_by.push(order_key(s, &names)?);
    }
    let mut branches = 0;
    let tree = tag_branches(select, &mut branches, false)?;
    let streams = tree.streams();
    if streams {
        plan::shard_limit(select, limit, offset);
    } else {
        // Counting needs every row of every branch.
        select.limit_count = None;
        select.limit_offset = None;
    }
    Ok(MergePlan {
        hidden: 1,
        order_by,
        limit,
        offset,
        set_op: Some(SetOpPlan {
            tree,
            sources: vec![None; branches],
        }),
        ..MergePlan::default()
    })
}

/// The result's column names (from the leftmost branch); `None` from a `*` on.
fn output_names(select: &pb::SelectStmt) -> Result<Vec<Option<String>>, MergeError> {
    let mut s = select;
    while s.op != pb::SetOperation::SetopNone as i32 {
        s = s
            .larg
            .as_deref()
            .ok_or(MergeError::State("set operation without branches"))?;
    }
    let mut names = Vec::with_capacity(s.target_list.len());
    for t in &s.target_list {
        let Some(N::ResTarget(rt)) = t.node.as_ref() else {
            return Err(MergeError::unsupported("this target list"));
        };
        let star = matches!(rt.val.as_deref().and_then(|e| e.node.as_ref()), Some(N::ColumnRef(c))
            if matches!(c.fields.last().and_then(|f| f.node.as_ref()), Some(N::AStar(_))));
        if star {
            names.push(None);
            break;
        }
        names.push(if rt.name.is_empty() {
            rt.val.as_deref().and_then(plan::figure_name)
        } else {
            Some(rt.name.clone())
        });
    }
    Ok(names)
}

/// ORDER BY of a set operation: a result column's position or name.
fn order_key(s: &pb::Node, names: &[Option<String>]) -> Result<OrderKey, MergeError> {
    let Some(N::SortBy(sb)) = s.node.as_ref() else {
        return Err(MergeError::unsupported("this ORDER BY"));
    };
    if sb.sortby_dir == pb::SortByDir::SortbyUsing as i32 {
        return Err(MergeError::unsupported("ORDER BY ... USING"));
    }
    let star = names.last().is_some_and(Option::is_none);
    let column = match sb.node.as_deref().and_then(|e| e.node.as_ref()) {
        Some(N::AConst(pb::AConst {
            val: Some(pb::a_const::Val::Ival(i)),
            ..
        })) if i.ival >= 1 && (star || i.ival as usize <= names.len()) => i.ival as usize - 1,
        Some(N::ColumnRef(c)) if c.fields.len() == 1 => {
            let name = rewrite::last_name(&c.fields);
            names
                .iter()
                .position(|n| n.as_deref() == Some(name.as_str()))
                .ok_or_else(|| {
                    MergeError::unsupported(format!(
                        "ORDER BY \"{name}\" of a UNION, INTERSECT or EXCEPT across shards: name a result column before any *, or use its position"
                    ))
                })?
        }
        _ => {
            return Err(MergeError::unsupported(
                "ORDER BY of a UNION, INTERSECT or EXCEPT across shards on anything but a result column's name or position",
            ))
        }
    };
    let descending = sb.sortby_dir == pb::SortByDir::SortbyDesc as i32;
    Ok(OrderKey {
        column: ColumnRef::Index(column),
        descending,
        nulls_first: match sb.sortby_nulls {
            n if n == pb::SortByNulls::SortbyNullsFirst as i32 => true,
            n if n == pb::SortByNulls::SortbyNullsLast as i32 => false,
            _ => descending,
        },
    })
}

/// Turns the set operations into UNION ALL and appends each branch's number to its targets.
fn tag_branches(
    s: &mut pb::SelectStmt,
    next: &mut usize,
    inner: bool,
) -> Result<SetTree, MergeError> {
    if s.op == pb::SetOperation::SetopNone as i32 {
        if !s.values_lists.is_empty() {
            return Err(MergeError::unsupported(
                "a VALUES branch of a UNION, INTERSECT or EXCEPT across shards (write SELECT ... UNION ALL SELECT ...)",
            ));
        }
        let branch = *next;
        *next += 1;
        s.target_list.push(rewrite::res_target(
            rewrite::int_const(branch as i64),
            "__pgdog_branch",
        ));
        return Ok(SetTree::Branch(branch));
    }
    if inner && (!s.sort_clause.is_empty() || s.limit_count.is_some() || s.limit_offset.is_some()) {
        return Err(MergeError::unsupported(
            "ORDER BY, LIMIT or OFFSET on a parenthesized UNION, INTERSECT or EXCEPT inside another across shards",
        ));
    }
    let op = match s.op {
        o if o == pb::SetOperation::SetopUnion as i32 => SetOp::Union,
        o if o == pb::SetOperation::SetopIntersect as i32 => SetOp::Intersect,
        _ => SetOp::Except,
    };
    let missing = || MergeError::State("set operation without branches");
    let left = tag_branches(s.larg.as_deref_mut().ok_or_else(missing)?, next, true)?;
    let right = tag_branches(s.rarg.as_deref_mut().ok_or_else(missing)?, next, true)?;
    let all = s.all;
    s.op = pb::SetOperation::SetopUnion as i32;
    s.all = true;
    Ok(SetTree::Node {
        op,
        all,
        left: Box::new(left),
        right: Box::new(right),
    })
}

/// The branch number in a row's last column (text or binary int4).
pub(super) fn branch_of(v: Option<&[u8]>, binary: bool) -> Result<usize, MergeError> {
    let bad = || MergeError::State("set operation branch number unreadable");
    let v = v.ok_or_else(bad)?;
    let n = if binary {
        i32::from_be_bytes(v.try_into().map_err(|_| bad())?) as i64
    } else {
        std::str::from_utf8(v)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(bad)?
    };
    usize::try_from(n).map_err(|_| bad())
}

type Key = Box<[u8]>;

/// A multiset of rows in first-seen order.
#[derive(Debug, Default)]
struct Bag {
    index: KeyMap<usize>,
    rows: Vec<(Row, u64)>,
    keys: Vec<Key>,
}

impl Bag {
    fn add(&mut self, key: Key, row: Row, n: u64) {
        if let Some(&i) = self.index.get(&key) {
            self.rows[i].1 += n;
            return;
        }
        self.index.insert(key.clone(), self.rows.len());
        self.keys.push(key);
        self.rows.push((row, n));
    }

    fn count(&self, key: &Key) -> u64 {
        self.index.get(key).map_or(0, |&i| self.rows[i].1)
    }

    /// Keeps each row with the count `f` gives it (dropped at 0).
    fn recount(self, f: impl Fn(&Key, u64) -> u64) -> Bag {
        let mut out = Bag::default();
        for (key, (row, n)) in self.keys.into_iter().zip(self.rows) {
            let n = f(&key, n);
            if n > 0 {
                out.add(key, row, n);
            }
        }
        out
    }
}

/// Rows of each branch, counted, for the set operations that are not UNION ALL.
#[derive(Debug)]
pub(super) struct Collector {
    bags: Vec<Bag>,
    types: Vec<ColType>,
    charged: u64,
    /// New keys spill from the first one that did (see `Groups`).
    spilling: bool,
}

impl Collector {
    pub(super) fn new(branches: usize, types: &[ColType]) -> Collector {
        Collector {
            bags: (0..branches).map(|_| Bag::default()).collect(),
            types: types.to_vec(),
            charged: 0,
            spilling: false,
        }
    }

    /// A visible row of `branch`. A row whose key no branch holds yet, while `budget` is
    /// full, is not taken when `spill_depth` allows spilling: its key's hash at that depth is
    /// returned, and the row belongs in that spill partition (every row of a key is counted in
    /// one place: memory or one partition).
    pub(super) fn add(
        &mut self,
        branch: usize,
        row: &DataRow,
        budget: &mut Budget,
        spill_depth: Option<u32>,
    ) -> Result<Option<u64>, MergeError> {
        let mut buf = Vec::new();
        key::encode(
            &mut buf,
            (0..self.types.len()).map(|i| row.get(i).map(|v| self.types[i].key(v))),
        );
        let known = self
            .bags
            .iter()
            .any(|b| b.index.contains_key(buf.as_slice()));
        if !known {
            if let Some(depth) = spill_depth.filter(|_| self.spilling || budget.full()) {
                self.spilling = true;
                return Ok(Some(key::partition_hash(&buf, depth)));
            }
        }
        let bag = self
            .bags
            .get_mut(branch)
            .ok_or(MergeError::State("unknown set operation branch"))?;
        if !bag.index.contains_key(buf.as_slice()) {
            let n =
                2 * key::stored_bytes(&buf) + row_bytes((0..self.types.len()).map(|i| row.get(i)));
            budget.charge(n);
            self.charged += n;
        }
        let key: Key = buf.into_boxed_slice();
        let values = (0..self.types.len())
            .map(|i| row.get(i).map(Bytes::copy_from_slice))
            .collect();
        bag.add(key, values, 1);
        Ok(None)
    }

    /// Bytes charged to the budget for these rows.
    pub(super) fn charged(&self) -> u64 {
        self.charged
    }

    /// The result rows (each as often as it counts).
    pub(super) fn finish(self, tree: &SetTree) -> Result<Vec<Row>, MergeError> {
        let mut bags: Vec<Option<Bag>> = self.bags.into_iter().map(Some).collect();
        let bag = evaluate(tree, &mut bags)?;
        let mut out = Vec::new();
        for (row, n) in bag.rows {
            for _ in 1..n {
                out.push(row.clone());
            }
            out.push(row);
        }
        Ok(out)
    }
}

fn evaluate(tree: &SetTree, bags: &mut [Option<Bag>]) -> Result<Bag, MergeError> {
    let (op, all, left, right) = match tree {
        SetTree::Branch(b) => {
            return bags
                .get_mut(*b)
                .and_then(Option::take)
                .ok_or(MergeError::State("set operation branch used twice"))
        }
        SetTree::Node {
            op,
            all,
            left,
            right,
        } => (*op, *all, left, right),
    };
    let mut left = evaluate(left, bags)?;
    let right = evaluate(right, bags)?;
    let distinct = |n: u64| u64::from(n > 0);
    Ok(match op {
        SetOp::Union => {
            for (key, (row, n)) in right.keys.into_iter().zip(right.rows) {
                left.add(key, row, n);
            }
            if all {
                left
            } else {
                left.recount(|_, n| distinct(n))
            }
        }
        SetOp::Intersect => left.recount(|k, n| {
            let m = right.count(k);
            if all {
                n.min(m)
            } else {
                distinct(n.min(m))
            }
        }),
        SetOp::Except => left.recount(|k, n| {
            let m = right.count(k);
            if all {
                n.saturating_sub(m)
            } else {
                u64::from(m == 0)
            }
        }),
    })
}
