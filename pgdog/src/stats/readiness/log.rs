//! `pgdog readiness --file`: statements from a log, routed by a database's planned layout and
//! counted as the dry run counts them. Two formats: Postgres' own log (`log_statement = 'all'`
//! or `log_min_duration_statement`: `LOG:  statement: ...`, `LOG:  execute <name>: ...` with its
//! `DETAIL:  Parameters: $1 = '...'`, `LOG:  duration: N ms  statement: ...`; a statement's
//! further lines follow without a prefix), or plain SQL, one query per line.
use crate::router::verdict::DryRun;
use crate::router::{Params, QueryCache};
use crate::stats::routes;

/// One logged statement: its text, its parameters (extended protocol), its duration if logged.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub sql: String,
    pub params: Vec<Option<String>>,
    pub duration_us: u64,
}

/// The markers of a log entry's message (after the line prefix).
const SEVERITIES: &[&str] = &[
    "LOG:  ",
    "ERROR:  ",
    "DETAIL:  ",
    "STATEMENT:  ",
    "HINT:  ",
    "WARNING:  ",
    "FATAL:  ",
    "CONTEXT:  ",
    "NOTICE:  ",
    "PANIC:  ",
    "INFO:  ",
    "DEBUG",
];

/// The message of a log line that starts an entry (`None`: a continuation line).
fn entry(line: &str) -> Option<(&'static str, &str)> {
    SEVERITIES
        .iter()
        .filter_map(|s| line.find(s).map(|at| (*s, at)))
        .min_by_key(|(_, at)| *at)
        .map(|(s, at)| (s, &line[at + s.len()..]))
}

/// `duration: 0.123 ms  statement: ...` -> (123, `statement: ...`).
fn duration(message: &str) -> (u64, &str) {
    let Some(rest) = message.strip_prefix("duration: ") else {
        return (0, message);
    };
    let Some((ms, rest)) = rest.split_once(" ms") else {
        return (0, message);
    };
    let us = ms
        .trim()
        .parse::<f64>()
        .map_or(0, |ms| (ms * 1000.0) as u64);
    (us, rest.trim_start())
}

/// The statement a LOG message gives, if any.
fn statement_of(message: &str) -> Option<&str> {
    if let Some(sql) = message.strip_prefix("statement: ") {
        return Some(sql);
    }
    let rest = message.strip_prefix("execute ")?;
    rest.split_once(": ").map(|(_, sql)| sql)
}

/// `$1 = '5', $2 = NULL, $3 = 'it''s'` -> the values in order.
pub fn parameters(list: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut rest = list.trim();
    while let Some(after) = rest.strip_prefix('$') {
        let Some((_, value)) = after.split_once(" = ") else {
            break;
        };
        if let Some(tail) = value.strip_prefix("NULL") {
            out.push(None);
            rest = tail;
        } else if let Some(quoted) = value.strip_prefix('\'') {
            let mut v = String::new();
            let mut chars = quoted.char_indices().peekable();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                if c == '\'' {
                    if chars.peek().is_some_and(|(_, c)| *c == '\'') {
                        chars.next();
                        v.push('\'');
                        continue;
                    }
                    end = i + 1;
                    break;
                }
                v.push(c);
            }
            out.push(Some(v));
            rest = &quoted[end.min(quoted.len())..];
        } else {
            break;
        }
        rest = rest.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

/// Whether `text` is a Postgres log (else plain SQL lines).
fn is_postgres_log(text: &str) -> bool {
    text.lines().any(|l| {
        entry(l).is_some_and(|(s, m)| s == "LOG:  " && statement_of(duration(m).1).is_some())
    })
}

/// The statements of a log, in order.
pub fn read(text: &str) -> Vec<Logged> {
    if !is_postgres_log(text) {
        return text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("--"))
            .map(|l| Logged {
                sql: l.to_string(),
                params: Vec::new(),
                duration_us: 0,
            })
            .collect();
    }
    let mut out: Vec<Logged> = Vec::new();
    // The statement whose further lines may follow.
    let mut open = false;
    for line in text.lines() {
        match entry(line) {
            None if open => {
                if let Some(last) = out.last_mut() {
                    last.sql.push('\n');
                    last.sql.push_str(line);
                }
            }
            None => {}
            Some((severity, message)) => {
                open = false;
                if severity == "DETAIL:  " {
                    if let (Some(list), Some(last)) =
                        (message.strip_prefix("Parameters: "), out.last_mut())
                    {
                        last.params = parameters(list);
                    }
                    continue;
                }
                if severity != "LOG:  " {
                    continue;
                }
                let (us, message) = duration(message);
                if message.is_empty() && us > 0 {
                    // `duration: N ms` alone (log_duration, or log_statement with
                    // log_min_duration_statement): the time of the statement logged before.
                    if let Some(last) = out.last_mut().filter(|l| l.duration_us == 0) {
                        last.duration_us = us;
                    }
                    continue;
                }
                if let Some(sql) = statement_of(message) {
                    out.push(Logged {
                        sql: sql.to_string(),
                        params: Vec::new(),
                        duration_us: us,
                    });
                    open = true;
                }
            }
        }
    }
    out
}

/// What routing a log found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Routed {
    pub statements: usize,
    /// Texts that do not parse (listed by the caller: they fail on Postgres too).
    pub unparsed: Vec<String>,
}

/// Routes every logged statement with `dry`'s planned router and counts it under its database.
pub fn route_log(dry: &DryRun, logged: &[Logged]) -> Routed {
    let database = &dry.database;
    let mut routed = Routed::default();
    for l in logged {
        let parsed = match QueryCache::global().get(&l.sql) {
            Ok(p) => p,
            Err(_) => {
                routed.unparsed.push(l.sql.clone());
                continue;
            }
        };
        let values: Vec<Option<&[u8]>> = l
            .params
            .iter()
            .map(|p| p.as_deref().map(str::as_bytes))
            .collect();
        let params = Params {
            values,
            formats: Vec::new(),
            types: Vec::new(),
            codec: Default::default(),
        };
        let params = (!l.params.is_empty()).then_some(&params);
        let n = parsed.statements.len().max(1) as u64;
        for i in 0..parsed.statements.len() {
            let text = parsed.statement_text(i, &l.sql);
            let Some(shape) = parsed.fingerprint(i, text) else {
                continue;
            };
            let verdict = dry.verdict_offline(&parsed, i, text, params);
            routes::record(database, &shape, &verdict).add_time(l.duration_us / n);
            routed.statements += 1;
        }
    }
    routed
}
