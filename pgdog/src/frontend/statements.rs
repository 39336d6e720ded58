//! What the pooler must know about a client's statements: session-level SET/RESET to track and
//! replay on other server connections, and statements that create session state (temporary
//! objects, `SELECT ... INTO TEMP`, objects in `pg_temp`, LISTEN, session advisory locks, SQL
//! PREPARE, WITH HOLD cursors, SET SESSION CHARACTERISTICS, DO blocks, and with
//! `unknown_functions = "pin"` calls of functions pgdog does not know) which pin the client to
//! its server connection until it disconnects, so that state never reaches another client.
use super::mentions::Mentions;
use crate::backend::builtins::Builtins;
use crate::router::discards_all;
use crate::router::{Parsed, QueryCache, ShapeCache};
use pg_query_raw::router::{self, Const, Expr, StatementKind};

/// A change to a session parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetChange {
    /// `SET name TO value`; the value as SQL text.
    Set(String, String),
    /// `set_config(name, value, false)`: the value as the raw string (a list parameter such as
    /// `search_path` reads it as a list, where `SET ... TO 'a, b'` is one element).
    Config(String, String),
    /// `RESET name` / `SET name TO DEFAULT`
    Reset(String),
    /// `RESET ALL` / `DISCARD ALL`
    ResetAll,
}

/// What one Query (or Parse) means for the pooler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classified {
    pub changes: Vec<SetChange>,
    /// Why this statement pins the session to its server, if it does.
    pub pin: Option<&'static str>,
    /// `DISCARD ALL`: server-side prepared statements are gone afterwards.
    pub discard_all: bool,
    /// Number of statements in the query string.
    pub statements: usize,
}

/// Built-in functions that leave session state: they are never "harmless" because the
/// catalog says they are built in (session advisory locks and `set_config` are classified on
/// their own; `nextval`/`setval` set the session's `currval`/`lastval`; replication origins
/// and temporary replication slots live as long as the session). `pg_terminate_backend` may
/// end the client's own server session (`pg_backend_pid()`): pinned, the server's FATAL then
/// ends the client's connection as it would directly.
const SESSION_STATE_BUILTINS: &[&str] = &[
    "pg_terminate_backend",
    "nextval",
    "setval",
    "pg_replication_origin_session_setup",
    "pg_create_logical_replication_slot",
    "pg_create_physical_replication_slot",
];

/// A call pgdog cannot prove leaves no session state (a user function may SET, create
/// temporary tables or take advisory locks), when the policy is to pin for it. A function is
/// known when it is on the fixed read-only list, or is built into the server (`builtins`, read
/// from its catalog, see `backend::builtins`) and leaves no session state; a schema-qualified
/// call is known only in `pg_catalog`.
pub fn unknown_call(
    parsed: &Parsed,
    sql: &str,
    builtins: Option<&Builtins>,
) -> Option<&'static str> {
    (0..parsed.statements.len())
        .find_map(|i| unknown_call_in(parsed, i, parsed.statement_text(i, sql), builtins))
}

/// The same for statement `i` of `parsed`, whose text is `sql`.
pub fn unknown_call_in(
    parsed: &Parsed,
    i: usize,
    sql: &str,
    builtins: Option<&Builtins>,
) -> Option<&'static str> {
    if !crate::config::pin_unknown_functions() || !sql.contains('(') {
        return None;
    }
    let known = |f: &String| {
        let (schema, name) = match f.rsplit_once('.') {
            Some((schema, name)) => (Some(schema), name),
            None => (None, f.as_str()),
        };
        if schema.is_some_and(|s| s != "pg_catalog") {
            return false;
        }
        crate::router::read_write::is_known_function(name)
            || SESSION_ADVISORY.contains(&name)
            || matches!(
                name,
                "set_config" | "pg_advisory_xact_lock" | "pg_advisory_xact_lock_shared"
            )
            || (builtins.is_some_and(|b| b.contains(name))
                && !SESSION_STATE_BUILTINS.contains(&name))
    };
    (!parsed.calls(i, sql).iter().all(known)).then_some(
        "a function call pgdog cannot prove leaves no session state (unknown_functions = \"pin\")",
    )
}

fn contains_word(sql: &str, word: &str) -> bool {
    sql.to_ascii_lowercase().contains(word)
}

/// Renders SET values as SQL.
fn render(values: &[Const]) -> String {
    values
        .iter()
        .map(|v| match v {
            Const::String(s) | Const::Bits(s) => format!("'{}'", s.replace('\'', "''")),
            Const::Integer(i) => i.to_string(),
            Const::Numeric(n) => n.clone(),
            Const::Bool(b) => b.to_string(),
            Const::Null => "NULL".into(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const SESSION_ADVISORY: &[&str] = &[
    "pg_advisory_lock",
    "pg_advisory_lock_shared",
    "pg_try_advisory_lock",
    "pg_try_advisory_lock_shared",
];

/// Whether `sql` may change the catalog: one of its statements starts with CREATE, ALTER or
/// DROP (a semicolon inside a literal only errs on the safe side). Shared prepared statements
/// are then retired (`prepared::retire_all`) so the next Parse plans against the new catalog.
pub fn may_change_catalog(sql: &str) -> bool {
    sql.split(';').any(|statement| {
        let start = statement.trim_start().as_bytes();
        ["create", "alter", "drop"].iter().any(|word| {
            start.len() > word.len()
                && start[..word.len()].eq_ignore_ascii_case(word.as_bytes())
                && !start[word.len()].is_ascii_alphanumeric()
        })
    })
}

/// Classifies the statements of `sql`. SQL that does not parse is left to the server (which
/// reports the error) and classifies as nothing.
pub fn classify(sql: &str, builtins: Option<&Builtins>) -> Classified {
    classify_mentioning(sql, Mentions::of(sql), builtins, false)
}

/// The same, with what the text mentions already found; `simple`: a simple-protocol query,
/// parsed through the shape cache (its literals differ from call to call).
pub fn classify_mentioning(
    sql: &str,
    mentions: Mentions,
    builtins: Option<&Builtins>,
    simple: bool,
) -> Classified {
    let calls = mentions.paren() && crate::config::pin_unknown_functions();
    if !mentions.session_word() && !calls {
        return Classified::default();
    }
    let parsed = if simple {
        ShapeCache::global().get(sql)
    } else {
        QueryCache::global().get(sql)
    };
    let Ok(parsed) = parsed else {
        return Classified::default();
    };
    let mut out = classify_parsed(sql, &parsed.statements);
    if let Some(reason) = unknown_call(&parsed, sql, builtins) {
        out.pin = out.pin.or(Some(reason));
    }
    out
}

/// The same for statements already parsed (the sharded session has them from its query cache):
/// no second parse.
pub fn classify_parsed(sql: &str, statements: &[router::Statement]) -> Classified {
    let mut out = Classified::default();
    if !Mentions::of(sql).session_word() {
        return out;
    }
    out.statements = statements.len();
    for st in statements {
        set_config_calls(st, &mut out);
        match &st.kind {
            StatementKind::Set => {
                let Some(set) = &st.set else { continue };
                if set.multi
                    && set
                        .name
                        .as_deref()
                        .is_some_and(|n| n.eq_ignore_ascii_case("session characteristics"))
                {
                    // default_transaction_isolation / _read_only / _deferrable of the session.
                    out.pin = Some("SET SESSION CHARACTERISTICS");
                    continue;
                }
                if set.local || set.multi {
                    continue;
                }
                match (&set.name, set.reset) {
                    (None, _) => out.changes.push(SetChange::ResetAll),
                    (Some(name), true) => out.changes.push(SetChange::Reset(name.clone())),
                    (Some(name), false) => out
                        .changes
                        .push(SetChange::Set(name.clone(), render(&set.values))),
                }
            }
            StatementKind::Utility("DiscardStmt") => {
                if discards_all(sql) {
                    out.discard_all = true;
                    out.changes.push(SetChange::ResetAll);
                } else if contains_word(sql, "temp") {
                    // DISCARD TEMP drops temporary objects: nothing to pin or track.
                }
            }
            StatementKind::Utility(
                "CreateStmt" | "CreateTableAsStmt" | "ViewStmt" | "CreateSeqStmt",
            ) if contains_word(sql, "temp") => {
                out.pin = Some("temporary objects");
            }
            StatementKind::Select if contains_word(sql, "into") && contains_word(sql, "temp") => {
                out.pin = Some("temporary objects");
            }
            _ if contains_word(sql, "pg_temp") => out.pin = Some("temporary objects"),
            StatementKind::Utility("DoStmt") => out.pin = Some("DO block"),
            StatementKind::Utility("ListenStmt") => out.pin = Some("LISTEN"),
            StatementKind::Utility("DeclareCursorStmt") if contains_word(sql, "hold") => {
                out.pin = Some("WITH HOLD cursors")
            }
            StatementKind::Prepare => out.pin = Some("SQL-level PREPARE"),
            _ => {}
        }
        if st
            .functions()
            .iter()
            .any(|f| SESSION_ADVISORY.contains(&f.name.as_str()))
        {
            out.pin = Some("session advisory locks");
        }
        for sub in &st.subqueries {
            if sub
                .functions()
                .iter()
                .any(|f| SESSION_ADVISORY.contains(&f.name.as_str()))
            {
                out.pin = Some("session advisory locks");
            }
        }
    }
    out
}

/// `set_config(name, value, false)` changes a session parameter like SET does: tracked when its
/// arguments are constants, pinning the session when they are not.
fn set_config_calls(st: &router::Statement, out: &mut Classified) {
    let mut calls = st.functions();
    for sub in &st.subqueries {
        calls.extend(sub.functions());
    }
    for f in calls.into_iter().filter(|f| f.name == "set_config") {
        let text = |e: &Expr| match e {
            Expr::Const(Const::String(s)) => Some(s.clone()),
            Expr::Cast { expr, .. } => match expr.as_ref() {
                Expr::Const(Const::String(s)) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        };
        let local = match f.args.get(2) {
            Some(Expr::Const(Const::Bool(b))) => Some(*b),
            Some(Expr::Cast { expr, .. }) => match expr.as_ref() {
                Expr::Const(Const::Bool(b)) => Some(*b),
                Expr::Const(Const::String(s)) => {
                    Some(matches!(s.as_str(), "t" | "true" | "on" | "1"))
                }
                _ => None,
            },
            _ => None,
        };
        match (
            f.args.first().and_then(text),
            f.args.get(1).and_then(text),
            local,
        ) {
            (_, _, Some(true)) => {}
            (Some(name), Some(value), Some(false)) => out
                .changes
                .push(SetChange::Config(name.to_ascii_lowercase(), value)),
            _ => out.pin = Some("set_config with computed arguments"),
        }
    }
}

/// `DEALLOCATE [PREPARE] name | ALL`: `Some(None)` for ALL, `Some(Some(name))` for a name.
pub fn deallocate(sql: &str) -> Option<Option<String>> {
    let mut words = sql.trim().trim_end_matches(';').split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("deallocate") {
        return None;
    }
    let mut name = words.next()?;
    if name.eq_ignore_ascii_case("prepare") {
        name = words.next()?;
    }
    if words.next().is_some() {
        return None;
    }
    if name.eq_ignore_ascii_case("all") {
        Some(None)
    } else {
        Some(Some(name.trim_matches('"').to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(sql: &str) -> Classified {
        super::classify(sql, None)
    }

    #[test]
    fn built_in_functions_per_the_servers_catalog_do_not_pin() {
        let builtins = Builtins::new(
            [
                "txid_current",
                "hashtext",
                "date_bin",
                "nextval",
                "pg_advisory_unlock_all",
            ]
            .map(String::from),
        );
        let with = |sql: &str| super::classify(sql, Some(&builtins)).pin;
        assert_eq!(with("SELECT txid_current(), hashtext('a')"), None);
        assert_eq!(with("SELECT pg_catalog.date_bin('1h', now(), now())"), None);
        assert_eq!(with("SELECT pg_advisory_unlock_all()"), None);
        // Without the catalog, the same calls pin.
        assert!(classify("SELECT txid_current()").pin.is_some());
        // Built in but leaving session state; qualified by another schema; not built in.
        assert!(with("SELECT nextval('s')").is_some());
        assert!(with("SELECT public.hashtext('a')").is_some());
        assert!(with("SELECT my_setter()").is_some());
        assert_eq!(
            with("SELECT pg_advisory_lock(1)"),
            Some("session advisory locks")
        );
    }

    #[test]
    fn statements_that_may_change_the_catalog() {
        for (sql, ddl) in [
            ("CREATE TYPE t AS ENUM ('a')", true),
            ("  drop table x", true),
            ("BEGIN; ALTER TABLE t ADD COLUMN c int", true),
            ("alter\ttable t rename to u", true),
            ("SELECT 1", false),
            ("SELECT created FROM t", false),
            ("createdb", false),
            // A semicolon in a literal: retired for nothing, which is only a little slower.
            ("INSERT INTO t VALUES ('x; drop')", true),
            ("INSERT INTO t VALUES ('x; dropped')", false),
        ] {
            assert_eq!(may_change_catalog(sql), ddl, "{sql}");
        }
    }

    #[test]
    fn tracks_session_sets_and_pins_session_state() {
        let c = classify("SET search_path TO a, b; SET LOCAL x = 1; RESET lock_timeout; SET application_name = 'it''s'");
        assert_eq!(
            c.changes,
            vec![
                SetChange::Set("search_path".into(), "'a', 'b'".into()),
                SetChange::Reset("lock_timeout".into()),
                SetChange::Set("application_name".into(), "'it''s'".into()),
            ]
        );
        assert_eq!(
            classify("SET statement_timeout = 5000").changes,
            vec![SetChange::Set("statement_timeout".into(), "5000".into())]
        );
        assert_eq!(classify("RESET ALL").changes, vec![SetChange::ResetAll]);
        assert_eq!(
            classify("SET TIME ZONE 'UTC'").changes,
            vec![SetChange::Set("timezone".into(), "'UTC'".into())]
        );
        assert_eq!(
            classify("CREATE TEMP TABLE t (id int)").pin,
            Some("temporary objects")
        );
        assert_eq!(classify("CREATE TABLE t (id int)").pin, None);
        assert_eq!(classify("LISTEN chan").pin, Some("LISTEN"));
        assert_eq!(
            classify("SELECT pg_advisory_lock(1)").pin,
            Some("session advisory locks")
        );
        assert_eq!(classify("SELECT pg_advisory_xact_lock(1)").pin, None);
        assert_eq!(
            classify("PREPARE p AS SELECT 1").pin,
            Some("SQL-level PREPARE")
        );
        assert!(classify("DISCARD ALL").discard_all);
        assert_eq!(
            classify("SELECT set_config('statement_timeout', '999ms', false)").changes,
            vec![SetChange::Config(
                "statement_timeout".into(),
                "999ms".into()
            )]
        );
        assert!(classify("SELECT set_config('x.y', '1', true)")
            .changes
            .is_empty());
        assert_eq!(
            classify("SELECT set_config(name, v, false) FROM t").pin,
            Some("set_config with computed arguments")
        );
        assert_eq!(classify("SET a = 1; SET b = 2").statements, 2);
        assert_eq!(
            classify("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE").pin,
            Some("SET SESSION CHARACTERISTICS")
        );
        assert_eq!(
            classify("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE").pin,
            None
        );
        assert_eq!(
            classify("SELECT 1 AS x INTO TEMP t9").pin,
            Some("temporary objects")
        );
        assert_eq!(
            classify("CREATE FUNCTION pg_temp.f() RETURNS int AS 'SELECT 1' LANGUAGE sql").pin,
            Some("temporary objects")
        );
        assert_eq!(classify("DO $$ BEGIN NULL; END $$").pin, Some("DO block"));
        assert!(classify("SELECT my_setter()").pin.is_some());
        assert!(classify("SELECT * FROM my_srf()").pin.is_some());
        assert!(classify("INSERT INTO t (a) VALUES (my_fn(1))")
            .pin
            .is_some());
        assert!(classify("CALL my_proc()").pin.is_some());
        assert_eq!(classify("INSERT INTO t (a, b) VALUES (1, now())").pin, None);
        assert_eq!(
            classify("SELECT count(*), lower(name) FROM t WHERE id IN (1, 2)").pin,
            None
        );

        assert_eq!(classify("SELECT 1"), Classified::default());
        assert_eq!(deallocate("DEALLOCATE ALL"), Some(None));
        assert_eq!(
            deallocate("deallocate prepare s1;"),
            Some(Some("s1".into()))
        );
        assert_eq!(deallocate("SELECT 1"), None);
    }
}
