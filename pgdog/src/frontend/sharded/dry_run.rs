//! `dry_run`: each statement the session runs is also routed by the database's planned layout
//! (`router::verdict`) and counted by shape in the routes report (`stats::routes`); the
//! request's time goes to the shapes it ran once its ReadyForQuery is sent. Nothing here
//! changes what the statement does or what the client sees.
use super::ShardedSession;
use crate::router::{Params, Parsed};
use crate::stats::routes::{self, RouteEntry};
use std::sync::Arc;
use std::time::Duration;

/// The shapes counted in the request in flight.
#[derive(Default)]
pub(super) struct Counted(Vec<Arc<RouteEntry>>);

impl Counted {
    /// The request ended after `took` (None: it ran no query): shared out among its shapes.
    pub(super) fn ended(&mut self, took: Option<Duration>) {
        if self.0.is_empty() {
            return;
        }
        let us = took.map_or(0, |t| t.as_micros() as u64);
        let share = us / self.0.len() as u64;
        self.0.drain(..).for_each(|e| e.add_time(share));
    }
}

impl ShardedSession {
    /// Counts statement `i` of `parsed` (its text `sql`) with the planned layout's verdict.
    /// An INSERT without a column list takes the column order the session's own router read
    /// (no server is asked here: that could begin the client's transaction on a shard).
    pub(super) fn count_route(
        &mut self,
        parsed: &Parsed,
        i: usize,
        sql: &str,
        params: Option<&Params<'_>>,
    ) {
        let router = self.router.clone();
        let Some(dry) = router.dry_run() else {
            return;
        };
        let Some(shape) = parsed.fingerprint(i, sql) else {
            return;
        };
        // The columns this session's router read (an INSERT without a column list), once.
        if let Some(table) = parsed.statements[i].relations.first().map(|r| &r.name) {
            if !dry.router.schema.columns.read().contains_key(table) {
                let known = router.schema.columns.read().get(table).cloned();
                if let Some(columns) = known {
                    let mut all = dry.router.schema.columns.write();
                    all.entry(table.clone()).or_insert(columns);
                }
            }
        }
        let verdict = dry.verdict_offline(parsed, i, sql, params);
        self.routes
            .0
            .push(routes::record(&dry.database, &shape, &verdict));
    }
}
