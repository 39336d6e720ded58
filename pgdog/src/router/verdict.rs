//! What a statement would get on this router's shards, for the routes report (`dry_run`): one
//! shard, several, all (and why), or refused with the error the client would get. The verdict
//! is the routing decision itself (`Router::route`, `Router::key_update`); only the reason for
//! a fan-out is described here, from the same predicate analysis.
use super::cache::Parsed;
use super::keys::Params;
use super::route::{Overrides, Route, Router};
use super::RouterError;
use pg_query_raw::router::{Statement, StatementKind};

/// A database's dry run: the router of its planned layout (`dry_run_shards`) and the name its
/// routes are counted under.
#[derive(Debug)]
pub struct DryRun {
    pub router: Router,
    pub database: std::sync::Arc<str>,
}

impl DryRun {
    /// The verdict of statement `i`, with an INSERT's unknown column order answered by
    /// [`Verdict::columns_unknown`] (for callers that cannot ask a server).
    pub fn verdict_offline(
        &self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
        params: Option<&Params<'_>>,
    ) -> Verdict {
        match self
            .router
            .verdict(parsed, i, sql, params, &Overrides::default())
        {
            Ok(v) => v,
            Err(RouterError::NeedColumns(t)) => {
                let rows = parsed.statements.get(i).map_or(1, |s| s.values.len());
                Verdict::columns_unknown(&t, rows)
            }
            Err(e) => Verdict::refused(&e),
        }
    }
}

/// The kinds of verdict, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VerdictKind {
    /// Transaction control and session settings: pgdog runs them where the transaction runs.
    Session,
    OneShard,
    Several,
    AllShards,
    Refused,
}

impl VerdictKind {
    pub const ALL: [VerdictKind; 5] = [
        VerdictKind::Session,
        VerdictKind::OneShard,
        VerdictKind::Several,
        VerdictKind::AllShards,
        VerdictKind::Refused,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VerdictKind::Session => "session",
            VerdictKind::OneShard => "one shard",
            VerdictKind::Several => "several shards",
            VerdictKind::AllShards => "all shards",
            VerdictKind::Refused => "refused",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// One statement's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// Why it goes to more than one shard, or the refusal as `SQLSTATE: message`.
    pub reason: String,
}

impl Verdict {
    fn new(kind: VerdictKind, reason: impl Into<String>) -> Verdict {
        Verdict {
            kind,
            reason: reason.into(),
        }
    }

    pub fn refused(e: &RouterError) -> Verdict {
        Verdict::new(VerdictKind::Refused, format!("{}: {e}", e.code()))
    }

    /// An INSERT without a column list into `table` when the column order is not at hand (no
    /// server asked): each of its `rows` goes to the shard of its key.
    pub fn columns_unknown(table: &str, rows: usize) -> Verdict {
        let kind = if rows > 1 {
            VerdictKind::Several
        } else {
            VerdictKind::OneShard
        };
        let reason = format!(
            "INSERT into \"{table}\" without a column list: each row goes to the shard of its key"
        );
        Verdict::new(kind, reason)
    }
}

impl Router {
    /// The verdict for statement `i` of `parsed` (its text `sql`), as the sharded session
    /// would route it. `NeedColumns` is returned as is: the caller reads the table's columns
    /// into `schema.columns` and asks again.
    pub fn verdict(
        &self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
        params: Option<&Params<'_>>,
        overrides: &Overrides,
    ) -> Result<Verdict, RouterError> {
        let Some(stmt) = parsed.statements.get(i) else {
            return Err(RouterError::Invalid(format!("no statement {i}")));
        };
        match &stmt.kind {
            StatementKind::Transaction(_) | StatementKind::Set | StatementKind::Deallocate => {
                return Ok(Verdict::new(VerdictKind::Session, ""))
            }
            StatementKind::Utility("DiscardStmt") if super::discards_all(sql) => {
                return Ok(Verdict::new(VerdictKind::Session, ""))
            }
            _ => {}
        }
        // In the order the sharded session tries them.
        if self.shards() > 1 {
            match self.key_update(stmt, params) {
                Ok(Some((ts, shards))) => {
                    return Ok(self.fan_out(
                        shards.len(),
                        format!(
                            "UPDATE of sharding key \"{}\": pgdog moves the rows between shards",
                            ts.column()
                        ),
                    ))
                }
                Ok(None) => {}
                Err(e) => return Ok(Verdict::refused(&e)),
            }
            if let Some(v) = self.insert_select(stmt) {
                return Ok(v);
            }
        }
        match self.route(parsed, i, sql, params, overrides) {
            Ok(Route::Shard(_)) => Ok(Verdict::new(VerdictKind::OneShard, "")),
            Ok(Route::Split(parts)) => Ok(self.fan_out(
                parts.len(),
                "multi-row INSERT: each row goes to the shard of its key",
            )),
            Ok(Route::Multi { shards, .. }) => {
                Ok(self.fan_out(shards.len(), self.why(stmt, params)))
            }
            Err(e @ RouterError::NeedColumns(_)) => Err(e),
            Err(e) => Ok(Verdict::refused(&e)),
        }
    }

    fn fan_out(&self, shards: usize, reason: impl Into<String>) -> Verdict {
        let kind = match shards {
            _ if self.shards() < 2 => VerdictKind::OneShard,
            0 | 1 => VerdictKind::OneShard,
            n if n >= self.shards() => VerdictKind::AllShards,
            _ => VerdictKind::Several,
        };
        Verdict::new(kind, reason)
    }

    /// INSERT ... SELECT into a sharded table: the session reads the rows and inserts each on
    /// the shard of its key (see `frontend::sharded::insert_select`).
    fn insert_select(&self, stmt: &Statement) -> Option<Verdict> {
        let target = stmt.relations.first()?;
        if stmt.kind != StatementKind::Insert
            || !stmt.values.is_empty()
            || self.schema.table(&target.name).is_none()
        {
            return None;
        }
        if stmt.max_param > 0 {
            let e = RouterError::Unsupported(format!(
                "INSERT ... SELECT into sharded table \"{}\" with parameters (use a simple query, or INSERT ... VALUES)",
                target.name
            ));
            return Some(Verdict::refused(&e));
        }
        Some(Verdict::new(
            VerdictKind::AllShards,
            "INSERT ... SELECT into a sharded table: pgdog reads the rows and inserts each on the shard of its key",
        ))
    }

    /// Why a statement the router sent to several shards fans out.
    fn why(&self, stmt: &Statement, params: Option<&Params<'_>>) -> String {
        let write = matches!(stmt.kind, StatementKind::Update | StatementKind::Delete);
        match &stmt.kind {
            StatementKind::Copy { .. } => return "COPY: rows are split by key".into(),
            StatementKind::Insert => {
                return "INSERT into an omnisharded table: every shard gets the row".into()
            }
            StatementKind::Select | StatementKind::Update | StatementKind::Delete => {}
            StatementKind::Utility(name) => {
                return format!("{name}: DDL and utility statements run on every shard")
            }
            other => return format!("{other:?}: runs on every shard"),
        }
        if let Some(target) = stmt.relations.first().filter(|_| write) {
            if self.schema.is_omnisharded(&target.name) {
                return format!(
                    "write to omnisharded table \"{}\": every shard",
                    target.name
                );
            }
        }
        if stmt.set_operation {
            return "UNION / INTERSECT / EXCEPT whose branches read different shards".into();
        }
        if stmt.kind == StatementKind::Select && self.not_in_on_key(stmt) > 0 {
            return "NOT IN (SELECT sharding key ...): every shard is read for NULLs".into();
        }
        let sharded = self.sharded_relations(stmt);
        if sharded.is_empty() {
            return "a subquery reads a sharded table without a sharding key filter".into();
        }
        let keys: Vec<String> = sharded
            .iter()
            .map(|(r, ts)| format!("{}.{}", r.name, ts.column()))
            .collect();
        match self.predicate_shards(stmt, sharded.clone(), params) {
            Ok(Some(set)) if set.len() > 1 => format!(
                "the values of {} are on several shards (IN list, OR, ANY)",
                keys.join(", ")
            ),
            _ if sharded.len() > 1 => format!(
                "join on the sharding keys ({}) without a key filter",
                keys.join(", ")
            ),
            _ if write => format!("write without a filter on the sharding key ({})", keys[0]),
            _ => format!("no filter on the sharding key ({})", keys.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests;
