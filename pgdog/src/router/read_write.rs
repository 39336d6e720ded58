//! Read or write: whether a replica may answer a query. A read is what the parse tree proves
//! read-only: a SELECT without a locking clause (FOR UPDATE/SHARE/...), without INTO, whose
//! subqueries and CTEs are such SELECTs too, and (with `read_write_strategy = "conservative"`,
//! the default) that calls only functions known not to write. `BEGIN READ ONLY` / `START
//! TRANSACTION READ ONLY` / `SET TRANSACTION READ ONLY` are reads as well, so a read-only
//! transaction runs on a replica. Everything else, and anything not understood, is a write.
//! A client can also say where it wants to go: `SET pgdog.role = 'primary' | 'replica'` or a
//! `/* pgdog_role: primary */` comment.
use crate::config::ReadWriteStrategy;
use pg_query_raw::router::{Statement, StatementKind, Transaction};

/// Where a client asked its statements to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleHint {
    Primary,
    Replica,
}

impl RoleHint {
    pub fn parse(value: &str) -> Option<RoleHint> {
        match value
            .trim()
            .trim_matches('\'')
            .to_ascii_lowercase()
            .as_str()
        {
            "primary" => Some(RoleHint::Primary),
            "replica" => Some(RoleHint::Replica),
            _ => None,
        }
    }
}

/// A `pgdog_role: primary|replica` comment in `sql`.
pub fn comment_hint(sql: &str) -> Option<RoleHint> {
    let at = memchr::memmem::find(sql.as_bytes(), b"pgdog_role")?;
    let rest = sql[at + "pgdog_role".len()..].trim_start();
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
    let word: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    RoleHint::parse(&word)
}

/// `SET pgdog.role = ...` / `RESET pgdog.role`: Some(new hint, or the bad value) when `sql` is
/// one of them.
pub fn set_role(sql: &str) -> Option<Result<Option<RoleHint>, String>> {
    let text = sql.trim().trim_end_matches(';').trim();
    // Cheap filter first: called for every query of a session.
    let head = text.as_bytes().get(..5)?;
    if !(head[..4].eq_ignore_ascii_case(b"set ") || head.eq_ignore_ascii_case(b"reset")) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("reset") {
        return (rest.trim() == "pgdog.role").then_some(Ok(None));
    }
    let rest = lower.strip_prefix("set")?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("session").unwrap_or(rest).trim_start();
    let rest = rest.strip_prefix("pgdog.role")?.trim_start();
    let rest = rest
        .strip_prefix('=')
        .or_else(|| rest.strip_prefix("to"))?
        .trim();
    if rest == "default" {
        return Some(Ok(None));
    }
    Some(
        RoleHint::parse(rest)
            .map(Some)
            .ok_or_else(|| rest.to_string()),
    )
}

/// Whether every statement of a query is a read.
pub fn is_read(statements: &[Statement], sql: &str, strategy: ReadWriteStrategy) -> bool {
    let text = |st: &Statement| sql.get(st.location..st.location + st.len).unwrap_or(sql);
    // `BEGIN; SET TRANSACTION READ ONLY; ...` in one query: the BEGIN opens a read-only one.
    let read_only_tx = statements
        .iter()
        .any(|st| matches!(st.kind, StatementKind::Set) && sets_read_only(text(st)));
    !statements.is_empty()
        && statements.iter().all(|st| match &st.kind {
            StatementKind::Transaction(Transaction::Begin) => {
                read_only_tx || read_only_clause(text(st))
            }
            _ => statement_is_read(st, text(st), strategy),
        })
}

/// Whether one statement (not a BEGIN), whose text is `text`, is a read.
pub fn statement_is_read(st: &Statement, text: &str, strategy: ReadWriteStrategy) -> bool {
    match &st.kind {
        StatementKind::Select => {
            select_is_read(st)
                && !has_word(text, "into")
                && (strategy == ReadWriteStrategy::Aggressive || calls_only_read_functions(text))
        }
        StatementKind::Set => sets_read_only(text),
        _ => false,
    }
}

/// `SET TRANSACTION ... READ ONLY`
fn sets_read_only(text: &str) -> bool {
    text.to_ascii_lowercase().contains("transaction") && read_only_clause(text)
}

/// Whether a BEGIN / START TRANSACTION / SET TRANSACTION text asks for a read-only transaction.
pub fn begins_read_only(sql: &str) -> bool {
    read_only_clause(sql)
}

fn select_is_read(st: &Statement) -> bool {
    matches!(st.kind, StatementKind::Select)
        && !st.locking
        && st.subqueries.iter().all(select_is_read)
}

/// `READ ONLY` (and not `READ WRITE`) in a transaction mode list.
fn read_only_clause(text: &str) -> bool {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    words.windows(2).any(|w| w[0] == "read" && w[1] == "only")
        && !words.windows(2).any(|w| w[0] == "read" && w[1] == "write")
}

fn has_word(text: &str, word: &str) -> bool {
    words_outside_literals(text, |w, _| w.eq_ignore_ascii_case(word))
}

/// SQL words that may stand before `(` without being a function call, and functions that do
/// not write (`nextval`, `setval`, advisory locks and anything unknown are not here).
const READ_ONLY_CALLS: &[&str] = &[
    // keywords and type names
    "in",
    "exists",
    "any",
    "all",
    "some",
    "values",
    "as",
    "over",
    "filter",
    "within",
    "cast",
    "row",
    "array",
    "not",
    "and",
    "or",
    "select",
    "from",
    "where",
    "on",
    "using",
    "join",
    "lateral",
    "case",
    "when",
    "then",
    "else",
    "grouping",
    "rollup",
    "cube",
    "sets",
    "partition",
    "by",
    "order",
    "limit",
    "offset",
    "fetch",
    "between",
    "like",
    "ilike",
    "similar",
    "is",
    "distinct",
    "union",
    "intersect",
    "except",
    "with",
    "recursive",
    "materialized",
    "interval",
    "numeric",
    "decimal",
    "varchar",
    "char",
    "character",
    "varying",
    "timestamp",
    "timestamptz",
    "time",
    "bit",
    "float",
    "precision",
    "int",
    "integer",
    "bigint",
    "smallint",
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "extract",
    "overlay",
    "position",
    "substring",
    "trim",
    "ordinality",
    // other aggregates and window functions (the rest: `merge::is_builtin_aggregate`)
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "row_number",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    // scalar functions
    "now",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "date_trunc",
    "date_part",
    "to_char",
    "to_date",
    "to_timestamp",
    "to_number",
    "age",
    "make_date",
    "make_interval",
    "make_timestamp",
    "make_timestamptz",
    "lower",
    "upper",
    "length",
    "char_length",
    "octet_length",
    "substr",
    "left",
    "right",
    "concat",
    "concat_ws",
    "replace",
    "split_part",
    "strpos",
    "btrim",
    "ltrim",
    "rtrim",
    "lpad",
    "rpad",
    "repeat",
    "reverse",
    "initcap",
    "format",
    "md5",
    "encode",
    "decode",
    "regexp_replace",
    "regexp_match",
    "regexp_matches",
    "regexp_split_to_array",
    "regexp_split_to_table",
    "string_to_array",
    "array_to_string",
    "array_length",
    "array_position",
    "array_positions",
    "array_append",
    "array_prepend",
    "array_cat",
    "array_remove",
    "array_upper",
    "array_lower",
    "cardinality",
    "unnest",
    "generate_series",
    "abs",
    "ceil",
    "ceiling",
    "floor",
    "round",
    "trunc",
    "mod",
    "power",
    "sqrt",
    "exp",
    "ln",
    "log",
    "sign",
    "random",
    "div",
    "width_bucket",
    "json_build_object",
    "jsonb_build_object",
    "json_build_array",
    "jsonb_build_array",
    "to_json",
    "to_jsonb",
    "row_to_json",
    "array_to_json",
    "jsonb_set",
    "jsonb_insert",
    "json_extract_path",
    "jsonb_extract_path",
    "json_extract_path_text",
    "jsonb_extract_path_text",
    "jsonb_array_elements",
    "json_array_elements",
    "jsonb_each",
    "json_each",
    "jsonb_typeof",
    "json_typeof",
    "jsonb_array_length",
    "json_array_length",
    "jsonb_strip_nulls",
    "jsonb_path_query",
    "jsonb_path_exists",
    "inet_server_port",
    "inet_server_addr",
    "inet_client_addr",
    "pg_is_in_recovery",
    "pg_last_wal_replay_lsn",
    "pg_last_wal_receive_lsn",
    "pg_last_xact_replay_timestamp",
    "version",
    "current_setting",
    "current_database",
    "current_schema",
    "pg_backend_pid",
    "pg_sleep",
    "pg_typeof",
    "gen_random_uuid",
    "to_tsvector",
    "to_tsquery",
    "plainto_tsquery",
    "websearch_to_tsquery",
    "ts_rank",
    "ts_headline",
];

/// A built-in function known not to write or leave session state.
pub(crate) fn is_known_function(name: &str) -> bool {
    READ_ONLY_CALLS.contains(&name) || crate::merge::is_builtin_aggregate(name)
}

/// Every `name(` in the text (outside literals and comments) is a known read-only call.
fn calls_only_read_functions(text: &str) -> bool {
    !words_outside_literals(text, |word, before_paren| {
        if !before_paren {
            return false;
        }
        let name = word.rsplit('.').next().unwrap_or(word).to_ascii_lowercase();
        !is_known_function(&name)
    })
}

/// Calls `found(word, followed_by_paren)` for each word outside string literals, quoted
/// identifiers and comments; true as soon as it returns true. A quoted identifier followed by
/// `(` (a function with a quoted name) counts as the unknown word `"`.
pub(crate) fn words_outside_literals(
    text: &str,
    mut found: impl FnMut(&str, bool) -> bool,
) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    let paren_after = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j < b.len() && b[j] == b'('
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            i += 1;
            while i < b.len() && !(b[i] == b'\'' && b.get(i + 1) != Some(&b'\'')) {
                i += if b[i] == b'\'' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'"' {
            let end = memchr::memchr(b'"', &b[i + 1..]).map_or(b.len(), |p| i + 1 + p);
            if paren_after(end + 1) && found("\"", true) {
                return true;
            }
            i = end + 1;
        } else if c == b'-' && b.get(i + 1) == Some(&b'-') {
            i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |p| i + p);
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = memchr::memmem::find(&b[i + 2..], b"*/").map_or(b.len(), |p| i + 2 + p + 2);
        } else if c == b'$' {
            // $tag$ ... $tag$ or $$ ... $$ (but $1 is a parameter).
            let mut e = i + 1;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                e += 1;
            }
            let parameter = e > i + 1 && b[i + 1].is_ascii_digit();
            if e < b.len() && b[e] == b'$' && !parameter {
                let tag = &b[i..=e];
                let body = e + 1;
                i = memchr::memmem::find(&b[body..], tag).map_or(b.len(), |p| body + p + tag.len());
            } else {
                i = e;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b'$'))
            {
                i += 1;
            }
            if found(&text[start..i], paren_after(i)) {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReadWriteStrategy::{Aggressive, Conservative};

    fn read(sql: &str, strategy: ReadWriteStrategy) -> bool {
        let parsed = pg_query_raw::router::parse(sql).unwrap();
        is_read(&parsed, sql, strategy)
    }

    #[test]
    fn reads_and_writes() {
        for sql in [
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            "SELECT inet_server_port()",
            "SELECT count(*), max(x) FROM t WHERE y IN (SELECT y FROM u)",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "SELECT 'nextval(' || x FROM t",
            "SELECT $$ setval( $$",
            "BEGIN READ ONLY",
            "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
            "BEGIN; SET TRANSACTION READ ONLY; SELECT 1",
            "SELECT pg_catalog.now() -- nextval(\n",
            "SELECT CAST(x AS numeric(10, 2)) FROM t",
        ] {
            assert!(read(sql, Conservative), "{sql}");
        }
        for sql in [
            "INSERT INTO t VALUES (1)",
            "SELECT * FROM t FOR UPDATE",
            "SELECT * FROM t FOR NO KEY UPDATE",
            "SELECT * FROM t FOR KEY SHARE",
            "SELECT * FROM (SELECT * FROM t FOR SHARE) s",
            "SELECT nextval('s')",
            "SELECT setval('s', 1)",
            "SELECT pg_advisory_lock(1)",
            "SELECT my_function(1)",
            "SELECT \"MyFunc\"(1)",
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            "SELECT * INTO new_table FROM t",
            "BEGIN",
            "BEGIN READ WRITE",
            "SELECT 1; INSERT INTO t VALUES (1)",
            "SHOW work_mem",
            "",
        ] {
            let parsed = pg_query_raw::router::parse(sql).unwrap_or_default();
            assert!(!is_read(&parsed, sql, Conservative), "{sql}");
        }
        assert!(read("SELECT my_function(1)", Aggressive));
        assert!(!read("SELECT * FROM t FOR UPDATE", Aggressive));
    }

    #[test]
    fn hints() {
        assert_eq!(
            comment_hint("/* pgdog_role: primary */ SELECT 1"),
            Some(RoleHint::Primary)
        );
        assert_eq!(
            comment_hint("SELECT 1 -- pgdog_role:replica"),
            Some(RoleHint::Replica)
        );
        assert_eq!(comment_hint("SELECT 1"), None);
        assert_eq!(
            set_role("SET pgdog.role = 'primary'"),
            Some(Ok(Some(RoleHint::Primary)))
        );
        assert_eq!(
            set_role("set pgdog.role to replica;"),
            Some(Ok(Some(RoleHint::Replica)))
        );
        assert_eq!(set_role("RESET pgdog.role"), Some(Ok(None)));
        assert_eq!(set_role("SET pgdog.role = default"), Some(Ok(None)));
        assert_eq!(set_role("SET work_mem = '1MB'"), None);
        assert!(matches!(
            set_role("SET pgdog.role = 'elsewhere'"),
            Some(Err(_))
        ));
    }
}
