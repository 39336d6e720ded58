//! UNION / INTERSECT / EXCEPT: where each branch's rows come from. A branch that reads no
//! sharded table answers the same on every shard (its rows are taken from one); a branch whose
//! keys pin it to one shard runs there (aggregates, LIMIT, DISTINCT allowed); any other branch
//! runs everywhere and must be a plain filter of its tables (or grouped by their key), so its
//! rows are the union of the shards'. The merger combines the branches (see `merge::setop`).
use super::keys::Params;
use super::route::Router;
use super::subquery::{passes_rows_through, Scope};
use super::RouterError;
use crate::merge::CrossShardPlan;
use pg_query_raw::router::Statement;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Which shards answer for a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Reads no sharded table: any one shard.
    Any,
    One(usize),
    All,
}

/// Where a set operation reads.
pub(super) enum SetOpShards {
    One(usize),
    /// Several shards, and where each branch's rows are among them (None: on every one).
    Several {
        shards: Vec<usize>,
        positions: Vec<Option<usize>>,
    },
}

/// The merge plan with the branches' positions (see `SetOpShards::Several`).
pub(super) fn with_branch_sources(
    plan: Arc<CrossShardPlan>,
    positions: Vec<Option<usize>>,
) -> Arc<CrossShardPlan> {
    if !positions.iter().any(Option::is_some) || plan.merge.set_op.is_none() {
        return plan;
    }
    let mut p = CrossShardPlan::clone(&plan);
    if let Some(so) = &mut p.merge.set_op {
        so.sources = positions;
    }
    Arc::new(p)
}

impl Router {
    /// Where a top-level set operation reads (its CTEs, then its two inputs, recursively).
    pub(super) fn set_operation(
        &self,
        stmt: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<SetOpShards, RouterError> {
        let mut branches = Vec::new();
        branches_of(stmt, &mut branches);
        let mut sources = Vec::with_capacity(branches.len());
        for b in &branches {
            sources.push(self.branch_source(b, params)?);
        }
        let pinned: BTreeSet<usize> = sources
            .iter()
            .filter_map(|s| match s {
                Source::One(s) => Some(*s),
                _ => None,
            })
            .collect();
        let everywhere = sources.contains(&Source::All);
        if !everywhere && pinned.len() <= 1 {
            let shard = pinned.first().copied().unwrap_or_else(|| self.any_shard());
            self.check_nested(stmt, Scope::One(shard), params)?;
            return Ok(SetOpShards::One(shard));
        }
        let ctes = &stmt.subqueries[..stmt.subqueries.len().saturating_sub(2)];
        if ctes.iter().any(|c| self.reads_sharded(c)) {
            return Err(RouterError::Unsupported(
                "a WITH query over sharded tables around a UNION, INTERSECT or EXCEPT across shards: move it into the branches".into(),
            ));
        }
        for (b, source) in branches.iter().zip(&sources) {
            match source {
                Source::Any => {}
                Source::One(s) => self.check_nested(b, Scope::One(*s), params)?,
                Source::All => {
                    if !(passes_rows_through(b) || self.grouped_by_key(b)) {
                        return Err(RouterError::Unsupported(format!(
                            "a branch of a UNION, INTERSECT or EXCEPT over several shards with aggregates, DISTINCT, LIMIT or a window ({}): each shard's answer is not part of the global one; restrict it to one shard with its sharding key",
                            b.relations.first().map_or("subquery", |r| r.name.as_str())
                        )));
                    }
                    self.check_colocated(b, &self.sharded_relations(b))?;
                    self.check_nested(b, Scope::All, params)?;
                }
            }
        }
        let shards: Vec<usize> = if everywhere {
            self.all()
        } else {
            pinned.into_iter().collect()
        };
        let positions: Vec<Option<usize>> = sources
            .iter()
            .map(|s| match s {
                Source::Any => Some(0),
                Source::One(s) => shards.iter().position(|x| x == s),
                Source::All => None,
            })
            .collect();
        Ok(SetOpShards::Several { shards, positions })
    }

    /// Where one branch's rows are.
    fn branch_source(
        &self,
        b: &Statement,
        params: Option<&Params<'_>>,
    ) -> Result<Source, RouterError> {
        if !self.reads_sharded(b) {
            return Ok(Source::Any);
        }
        let sharded = self.sharded_relations(b);
        let reads_tables = b.relations.iter().any(|r| self.reads_sharded_relation(r));
        Ok(match self.predicate_shards(b, sharded.clone(), params)? {
            // A contradiction: no rows on any shard (aggregates still answer once).
            Some(set) if set.is_empty() => Source::One(self.any_shard()),
            Some(set) if set.len() == 1 => set.first().copied().map_or(Source::All, Source::One),
            Some(_) => Source::All,
            None if sharded.is_empty() && !reads_tables => {
                match self.subqueries_shard(b, params)? {
                    Some(shard) => Source::One(shard),
                    None => Source::All,
                }
            }
            None => Source::All,
        })
    }
}

/// The branches of a set operation, left to right (its inputs are its last two subqueries).
fn branches_of<'a>(st: &'a Statement, out: &mut Vec<&'a Statement>) {
    if !st.set_operation {
        out.push(st);
        return;
    }
    let n = st.subqueries.len();
    for input in st.subqueries.iter().skip(n.saturating_sub(2)) {
        branches_of(input, out);
    }
}
