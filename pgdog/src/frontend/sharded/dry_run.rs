//! `dry_run`: each statement the session runs is also routed by the database's planned layout
//! (`router::verdict`) and counted by shape in the routes report (`stats::routes`); the
//! request's time goes to the shapes it ran once its ReadyForQuery is sent. Nothing here
//! changes what the statement does or what the client sees.
use super::ShardedSession;
use crate::router::{Params, Parsed, RouterError};
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
    pub(super) async fn count_route(
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
        let planned = &dry.router;
        let mut verdict = planned.verdict(parsed, i, sql, params, &self.overrides);
        if let Err(RouterError::NeedColumns(table)) = &verdict {
            // An INSERT without a column list: the column order comes from the server.
            let schema = parsed.statements[i]
                .relations
                .first()
                .and_then(|r| r.schema.clone());
            if let Ok(columns) = self.table_columns(schema.as_deref(), table).await {
                if !columns.is_empty() {
                    let columns = Arc::new(columns);
                    planned
                        .schema
                        .columns
                        .write()
                        .insert(table.clone(), columns);
                    verdict = planned.verdict(parsed, i, sql, params, &self.overrides);
                }
            }
        }
        match verdict {
            Ok(v) => self
                .routes
                .0
                .push(routes::record(&dry.database, &shape, &v)),
            Err(e) => tracing::debug!("dry run: no verdict for {sql:?}: {e}"),
        }
    }
}
