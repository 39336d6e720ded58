//! `dry_run` on a one-server database: the session serves every statement as usual and also
//! routes it by the database's planned layout (`router::verdict`), counting it by shape in the
//! routes report (`stats::routes`). It reads the client's messages only: Query texts, Parse
//! texts by statement name, Bind parameters by portal, and counts at Execute; the request's
//! time is shared among its statements at ReadyForQuery. Nothing here changes what is sent.
use crate::frontend::statements;
use crate::net::bind::read_bind;
use crate::net::message::{read_parse, read_query, read_target};
use crate::net::tag::{frontend, target};
use crate::net::Message;
use crate::router::verdict::DryRun;
use crate::router::{Params, Parsed, QueryCache, ShapeCache};
use crate::stats::routes::{self, RouteEntry};
use pg_query_raw::router::StatementKind;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A prepared statement: its text and declared parameter types.
struct Statement {
    sql: Arc<str>,
    types: Vec<i32>,
}

/// A bound portal: its statement and parameters (copied: the Bind goes on to the server).
struct Portal {
    statement: Arc<Statement>,
    values: Vec<Option<Vec<u8>>>,
    formats: Vec<i16>,
}

pub struct DryRunTap {
    dry: Arc<DryRun>,
    statements: HashMap<String, Arc<Statement>>,
    portals: HashMap<String, Portal>,
    counted: Vec<Arc<RouteEntry>>,
}

impl DryRunTap {
    pub fn new(dry: Arc<DryRun>) -> DryRunTap {
        DryRunTap {
            dry,
            statements: HashMap::new(),
            portals: HashMap::new(),
            counted: Vec::new(),
        }
    }

    /// A message from the client.
    pub fn message(&mut self, m: &Message) {
        match m.tag() {
            frontend::QUERY => {
                let Ok(sql) = read_query(m) else { return };
                let Ok(parsed) = ShapeCache::global().get(sql) else {
                    return;
                };
                for i in 0..parsed.statements.len() {
                    self.forget(&parsed, i, sql);
                    self.count(&parsed, i, sql, None);
                }
            }
            frontend::PARSE => {
                if let Ok(p) = read_parse(m) {
                    let st = Statement {
                        sql: Arc::from(String::from_utf8_lossy(p.text)),
                        types: p.param_types,
                    };
                    self.statements.insert(p.name.to_string(), Arc::new(st));
                }
            }
            frontend::BIND => {
                let Ok(b) = read_bind(m) else { return };
                let Some(statement) = self.statements.get(&*b.statement).cloned() else {
                    return;
                };
                let portal = Portal {
                    statement,
                    values: b.values.iter().map(|v| v.map(<[u8]>::to_vec)).collect(),
                    formats: b.param_formats.clone(),
                };
                self.portals.insert(b.portal.to_string(), portal);
            }
            frontend::EXECUTE => self.execute(m),
            frontend::CLOSE => {
                if let Ok((kind, name)) = read_target(m) {
                    if kind == target::STATEMENT {
                        self.statements.remove(&*name);
                    } else {
                        self.portals.remove(&*name);
                    }
                }
            }
            _ => {}
        }
    }

    fn execute(&mut self, m: &Message) {
        let Ok(name) = m.reader().name() else { return };
        let Some((name, portal)) = self.portals.remove_entry(&*name) else {
            return;
        };
        let st = portal.statement.clone();
        let Ok(parsed) = QueryCache::global().get(&st.sql) else {
            return;
        };
        let params = Params {
            values: portal.values.iter().map(|v| v.as_deref()).collect(),
            formats: portal.formats.clone(),
            types: st.types.clone(),
            codec: Default::default(),
        };
        if parsed.statements.len() == 1 {
            self.count(&parsed, 0, &st.sql, Some(&params));
        }
        drop(params);
        // A portal may be executed again (a row limit, or a named one).
        self.portals.insert(name, portal);
    }

    /// Counts statement `i` of `parsed` (whose text is `sql`).
    fn count(&mut self, parsed: &Parsed, i: usize, sql: &str, params: Option<&Params<'_>>) {
        let text = parsed.statement_text(i, sql);
        let Some(shape) = parsed.fingerprint(i, text) else {
            return;
        };
        let verdict = self.dry.verdict_offline(parsed, i, text, params);
        self.counted
            .push(routes::record(&self.dry.database, &shape, &verdict));
    }

    /// `DEALLOCATE` and `DISCARD ALL` (statement `i` of `parsed`, whose text is `sql`) drop
    /// prepared statements (Rails deallocates by SQL).
    fn forget(&mut self, parsed: &Parsed, i: usize, sql: &str) {
        let text = || parsed.statement_text(i, sql);
        match parsed.statements[i].kind {
            StatementKind::Deallocate => match statements::deallocate(text()) {
                Some(None) => self.statements.clear(),
                Some(Some(name)) => {
                    self.statements.remove(&name);
                }
                None => {}
            },
            StatementKind::Utility("DiscardStmt") if crate::router::discards_all(text()) => {
                self.statements.clear()
            }
            _ => {}
        }
    }

    /// A ReadyForQuery with `status`: the request took `took`, shared among the statements it
    /// ran; at the end of a transaction its portals are gone.
    pub fn ended(&mut self, took: Option<Duration>, status: crate::net::TxStatus) {
        if status == crate::net::TxStatus::Idle {
            self.portals.clear();
        }
        if self.counted.is_empty() {
            return;
        }
        let us = took.map_or(0, |t| t.as_micros() as u64) / self.counted.len() as u64;
        self.counted.drain(..).for_each(|e| e.add_time(us));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::message::{parse, query};
    use crate::router::{Router, Schema};

    #[test]
    fn deallocate_and_discard_all_forget_statements() {
        let dry = DryRun {
            router: Router::new(Schema {
                shards: 2,
                ..Default::default()
            }),
            database: Arc::from("dry_run_forget"),
        };
        let mut tap = DryRunTap::new(Arc::new(dry));
        let prepare = |tap: &mut DryRunTap| {
            for name in ["a", "b"] {
                tap.message(&parse(name, "SELECT 1", &[]));
            }
        };
        prepare(&mut tap);
        tap.message(&query("SELECT 1; DEALLOCATE a"));
        assert!(!tap.statements.contains_key("a") && tap.statements.contains_key("b"));
        tap.message(&query("DISCARD PLANS"));
        assert!(tap.statements.contains_key("b"));
        tap.message(&query("discard all;"));
        assert!(tap.statements.is_empty());
        prepare(&mut tap);
        tap.message(&query("DEALLOCATE ALL"));
        assert!(tap.statements.is_empty());
    }
}
