//! EXPLAIN through a sharded database: the statement inside is routed by the same router as
//! when it runs, and the answer shows the route first (the shards, how pgdog merges their rows,
//! the query the shards run when pgdog rewrites it), then each shard's own plan under a line
//! naming the shard. EXPLAIN ANALYZE runs the statement on each of its shards, one after
//! another, with each shard's timings; for a write on several shards that needs the client's
//! transaction (`BEGIN ... ROLLBACK`), else it is refused (0A000) rather than committed shard by
//! shard.
use super::insert_select::deparse_one;
use super::{exec, ClientError, ShardedSession};
use crate::merge::{Bound, CrossShardPlan, DistinctPlan, MergePlan};
use crate::net::message;
use crate::net::rows::{self, DataRow, Field};
use crate::net::tag::backend;
use crate::net::TxStatus;
use crate::router::{Parsed, Route, RouterError};
use pg_query_raw::protobuf::{self as pb, node::Node as N};
use pg_query_raw::router::{Statement as Parsed1, StatementKind};

impl ShardedSession {
    /// Answers `sql` if it is an EXPLAIN (`Ok(true)`). `describe`: for the extended protocol,
    /// whether the portal was described (its RowDescription is sent first); `None` for a
    /// simple query.
    pub(super) async fn explain(
        &mut self,
        st: &Parsed1,
        sql: &str,
        describe: Option<bool>,
    ) -> Result<bool, ClientError> {
        if st.kind != StatementKind::Explain {
            return Ok(false);
        }
        if st.max_param > 0 && describe.is_some() {
            // The shards run the EXPLAIN as a simple query, where `$n` has no value.
            return Err(RouterError::Unsupported(
                "EXPLAIN with parameters through a sharded database: write the values into the query"
                    .into(),
            )
            .into());
        }
        let mut tree = pg_query_raw::parse_protobuf(sql).map_err(RouterError::Syntax)?;
        let version = tree.version;
        let Some(N::ExplainStmt(ex)) = pg_query_raw::first_statement_mut(&mut tree) else {
            return Ok(false);
        };
        let Some(inner) = ex.query.take() else {
            return Ok(false);
        };
        let inner_sql = deparse_one(version, *inner)?;
        let parsed = Parsed::new(&inner_sql)?;
        let route = self.route(&parsed, 0, &inner_sql, None).await?;
        let analyze = ex.options.iter().any(is_analyze);
        let writes = !matches!(
            parsed.statements.first().map(|s| &s.kind),
            Some(StatementKind::Select)
        );
        let targets = targets(&route, &inner_sql);
        if analyze && writes && targets.len() > 1 && self.status != TxStatus::InTransaction {
            return Err(RouterError::Unsupported(
                "EXPLAIN ANALYZE of a write on several shards runs it on each of them: do it inside BEGIN ... ROLLBACK"
                    .into(),
            )
            .into());
        }
        let mut lines = route_lines(&route, &inner_sql);
        for (shard, shard_sql) in &targets {
            let explain = explain_sql(version, ex, shard_sql)?;
            let answer = self
                .capture(&Route::Shard(*shard), exec::Request::Simple(&explain))
                .await?;
            lines.push(format!("shard {shard}:"));
            for m in answer {
                if m.tag() == backend::DATA_ROW {
                    let row =
                        DataRow::parse(m).map_err(|e| ClientError::new("08P01", e.to_string()))?;
                    let text = row.get(0).map(String::from_utf8_lossy).unwrap_or_default();
                    lines.push(format!("  {text}"));
                }
            }
        }
        if describe != Some(false) {
            let plan = Field::computed("QUERY PLAN", 25, -1);
            self.send(&rows::row_description(&[plan]));
        }
        for line in &lines {
            self.send(&rows::data_row(&[Some(line.as_bytes())]));
        }
        self.send(&message::command_complete("EXPLAIN"));
        Ok(true)
    }
}

/// `ANALYZE` (or `ANALYZE true/on/1`) among EXPLAIN's options.
fn is_analyze(option: &pb::Node) -> bool {
    let Some(N::DefElem(d)) = option.node.as_ref() else {
        return false;
    };
    if !d.defname.eq_ignore_ascii_case("analyze") {
        return false;
    }
    match d.arg.as_deref().and_then(|a| a.node.as_ref()) {
        None => true,
        Some(N::Boolean(b)) => b.boolval,
        Some(N::String(s)) => {
            !matches!(s.sval.to_ascii_lowercase().as_str(), "false" | "off" | "0")
        }
        Some(N::Integer(i)) => i.ival != 0,
        Some(_) => true,
    }
}

/// Each shard the route sends to, with the text it runs there.
fn targets(route: &Route, sql: &str) -> Vec<(usize, String)> {
    match route {
        Route::Shard(s) => vec![(*s, sql.to_string())],
        Route::Multi { shards, plan, .. } => {
            let text = plan
                .as_ref()
                .and_then(|p| p.shard_sql.clone())
                .unwrap_or_else(|| sql.to_string());
            shards.iter().map(|s| (*s, text.clone())).collect()
        }
        Route::Split(parts) => parts.iter().map(|p| (p.shard, p.sql.clone())).collect(),
    }
}

/// The EXPLAIN with its options around `shard_sql`.
fn explain_sql(version: i32, ex: &pb::ExplainStmt, shard_sql: &str) -> Result<String, ClientError> {
    let mut tree = pg_query_raw::parse_protobuf(shard_sql).map_err(RouterError::Syntax)?;
    let stmt = tree
        .stmts
        .first_mut()
        .and_then(|s| s.stmt.take())
        .ok_or_else(|| ClientError::new("XX000", "EXPLAIN of an empty statement"))?;
    let explain = pb::ExplainStmt {
        query: Some(stmt),
        options: ex.options.clone(),
    };
    deparse_one(
        version,
        pb::Node {
            node: Some(N::ExplainStmt(Box::new(explain))),
        },
    )
}

/// The route section: where the statement goes and what pgdog does with the answers.
fn route_lines(route: &Route, sql: &str) -> Vec<String> {
    let shards = route.shards();
    let list = shards
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut lines = vec![match route {
        Route::Shard(s) => format!("pgdog route: shard {s}"),
        Route::Multi { .. } => format!("pgdog route: {} shards ({list})", shards.len()),
        Route::Split(_) => format!(
            "pgdog route: split by key over {} shards ({list})",
            shards.len()
        ),
    }];
    if let Route::Multi { plan, atomic, .. } = route {
        match plan.as_deref() {
            Some(p) => lines.extend(plan_lines(p, sql)),
            None if *atomic => lines.push(
                "pgdog merge: command tags added up; one transaction across the shards".into(),
            ),
            None => lines.push("pgdog merge: rows passed through as they come".into()),
        }
    }
    lines
}

fn plan_lines(p: &CrossShardPlan, sql: &str) -> Vec<String> {
    let mut lines = vec![format!("pgdog merge: {}", merge_steps(&p.merge))];
    if let Some(shard_sql) = p.shard_sql.as_deref().filter(|s| *s != sql) {
        lines.push(format!("pgdog shard query: {shard_sql}"));
    }
    if let Some(guard) = &p.null_guard {
        lines.push(format!("pgdog NOT IN check first: {}", guard.probe));
    }
    lines
}

/// The merge's steps in the order pgdog runs them.
fn merge_steps(m: &MergePlan) -> String {
    let mut steps = Vec::new();
    if let Some(so) = &m.set_op {
        steps.push(if so.streams() {
            "UNION ALL of the branches".to_string()
        } else {
            "set operation counted per row (UNION / INTERSECT / EXCEPT)".to_string()
        });
    }
    if let Some(g) = &m.grouping {
        steps.push(format!(
            "groups merged by {} key column(s), partial aggregates combined",
            g.keys.len()
        ));
        if !g.having.is_empty() {
            steps.push("HAVING on the merged groups".into());
        }
    }
    match &m.distinct {
        DistinctPlan::None => {}
        DistinctPlan::All => steps.push("DISTINCT".into()),
        DistinctPlan::On(cols) => steps.push(format!("DISTINCT ON {} column(s)", cols.len())),
    }
    if !m.order_by.is_empty() {
        let how = if m.grouping.is_some() || m.set_op.as_ref().is_some_and(|s| !s.streams()) {
            "sort of the merged rows"
        } else {
            "k-way merge of the shards' sorted rows"
        };
        steps.push(format!("ORDER BY {} key(s): {how}", m.order_by.len()));
    }
    let bound = |b: Bound| match b {
        Bound::Const(v) => v.to_string(),
        Bound::Param(n) => format!("${n}"),
    };
    if let Some(b) = m.offset {
        steps.push(format!("OFFSET {}", bound(b)));
    }
    if let Some(b) = m.limit {
        steps.push(format!("LIMIT {}", bound(b)));
    }
    if m.hidden > 0 {
        steps.push(format!("{} helper column(s) removed", m.hidden));
    }
    if steps.is_empty() {
        "rows passed through as they come".into()
    } else {
        steps.join("; ")
    }
}
