//! The queries compared, read from the data files in `queries/`, and the values they name.
//!
//! A query file holds one query a line; `#` starts a comment line, blank lines are skipped:
//!
//! - `e SQL`: rows in the same order (the query orders them totally), simple and extended
//!   protocol;
//! - `m SQL`: the same rows in any order, both protocols;
//! - `k COLS SQL`: rows in any order but the columns `COLS` (0-based, comma-separated, e.g.
//!   `0,1`: the ORDER BY keys, with ties) in the same order, both protocols;
//! - `p ORDER SQL`: extended protocol only (tokio-postgres and libpq), `ORDER` `exact` or
//!   `multiset`;
//! - `s ORDER SQL`: simple protocol only (multi-statement strings, SET).
//!
//! Indented lines under a query add to it:
//!
//! - `params TYPE:VALUE ...`: the parameters `$1`, `$2`, ... of a `p` query, one run of the
//!   query per `params` line, in order. `TYPE` is `i64` (`VALUE` `null`: a NULL bigint), `i32`,
//!   `text`, `bool` or `i64[]` (values comma-separated); a `VALUE` in single quotes may hold
//!   spaces (`''` for a quote);
//! - `refuse_ok`: pgdog may refuse it with 0A000 (a documented limitation), not answer wrongly;
//! - `bug TEXT`: the pgdog bug it reproduces (the check stays active).
//!
//! `{name}` in the SQL or a parameter stands for a value the test computes (see [`vars`]);
//! other braces are literal. A malformed line panics with its file and line.
use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    Both,
    Simple,
    Extended,
}

#[derive(Debug, Clone)]
pub(crate) struct Q {
    pub(crate) sql: String,
    pub(crate) params: Vec<P>,
    pub(crate) order: Order,
    pub(crate) proto: Proto,
    /// pgdog may refuse it with 0A000 (a documented limitation), but must not answer wrongly.
    pub(crate) refuse_ok: bool,
    /// A pgdog bug this query reproduces (found by this suite; the check stays active).
    pub(crate) bug: Option<&'static str>,
}

/// A query file: its path from the workspace root (for messages) and its text.
type File = (&'static str, &'static str);

macro_rules! query_file {
    ($name:literal) => {
        (
            concat!("integration/tests/sharding_differential/queries/", $name),
            include_str!(concat!("queries/", $name)),
        )
    };
}

/// Reads before the writes, in this order.
const READS: &[File] = &[
    query_file!("keys.txt"),
    query_file!("order_aggregates.txt"),
    query_file!("grouping_joins.txt"),
    query_file!("merge_sessions.txt"),
    query_file!("other_keys.txt"),
    query_file!("families.txt"),
];

pub(crate) fn reads(v: &Vars) -> Vec<Q> {
    READS.iter().flat_map(|f| parse(*f, v)).collect()
}

/// Writes, run once each, in this order, on both sides.
pub(crate) fn writes(v: &Vars) -> Vec<Q> {
    parse(query_file!("writes.txt"), v)
}

/// Reads after the writes.
pub(crate) fn after(v: &Vars) -> Vec<Q> {
    parse(query_file!("after.txt"), v)
}

/// Must fail through pgdog with 0A000 (the reference would answer).
pub(crate) fn refusals(v: &Vars) -> Vec<Q> {
    parse(query_file!("refusals.txt"), v)
}

/// The values the query files name as `{name}`.
pub(crate) struct Vars(HashMap<&'static str, String>);

impl Vars {
    pub(crate) fn get(&self, name: &str) -> &str {
        match self.0.get(name) {
            Some(v) => v,
            None => panic!("no value named {{{name}}}"),
        }
    }

    /// `text` with every `{name}` replaced by its value; `at` (file:line) names the place of a
    /// name without a value.
    fn substitute(&self, text: &str, at: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            rest = &rest[i..];
            let name_len = rest[1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len() - 1);
            if name_len > 0 && rest[1 + name_len..].starts_with('}') {
                let name = &rest[1..1 + name_len];
                match self.0.get(name) {
                    Some(v) => out.push_str(v),
                    None => panic!("{at}: no value named {{{name}}}"),
                }
                rest = &rest[name_len + 2..];
            } else {
                out.push('{');
                rest = &rest[1..];
            }
        }
        out.push_str(rest);
        out
    }
}

/// `a`, `b`, `c`, `neg`: users; `w`, `w2`: the users with the most orders, `w_order` an order
/// of `w`; `sku`, `sid`, `sid_b`, `cid`: keys of items, sessions and counters (`sid_upper` and
/// `sid_nohyphen`: `sid` spelled in upper case and without hyphens).
pub(crate) fn vars(d: &Data, m: &More) -> Vars {
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for o in &d.orders {
        *counts.entry(o.user_id).or_default() += 1;
    }
    let mut by: Vec<(i64, usize)> = d
        .users
        .iter()
        .filter(|u| u.id > 0 && u.id < 1_000_000)
        .map(|u| (u.id, counts.get(&u.id).copied().unwrap_or(0)))
        .collect();
    by.sort_by_key(|(id, n)| (std::cmp::Reverse(*n), *id));
    let w = by[0].0;
    let w_order = d
        .orders
        .iter()
        .find(|o| o.user_id == w)
        .expect("the user with the most orders has one")
        .id;
    let sid = &m.sessions[7].0;
    let values = [
        ("a", d.users[10].id.to_string()),
        ("b", d.users[21].id.to_string()),
        ("c", d.users[32].id.to_string()),
        ("neg", d.users[13].id.to_string()),
        ("w", w.to_string()),
        ("w2", by[1].0.to_string()),
        ("w_order", w_order.to_string()),
        ("sku", m.items[10].0.clone()),
        ("sid", sid.clone()),
        ("sid_upper", sid.to_uppercase()),
        ("sid_nohyphen", sid.replace('-', "")),
        ("sid_b", m.sessions[301].0.clone()),
        ("cid", m.counters[17].0.to_string()),
    ];
    Vars(values.into_iter().collect())
}

/// A query being read, until the next one starts.
struct Pending {
    at: String,
    sql: String,
    order: Order,
    proto: Proto,
    runs: Vec<Vec<P>>,
    refuse_ok: bool,
    bug: Option<&'static str>,
}

impl Pending {
    /// One query per `params` line (one without parameters if there is none).
    fn finish(self, out: &mut Vec<Q>) {
        let runs = if self.runs.is_empty() {
            vec![vec![]]
        } else {
            self.runs
        };
        for params in runs {
            out.push(Q {
                sql: self.sql.clone(),
                params,
                order: self.order.clone(),
                proto: self.proto,
                refuse_ok: self.refuse_ok,
                bug: self.bug,
            });
        }
    }
}

/// The queries of one file, in order.
fn parse((path, text): File, v: &Vars) -> Vec<Q> {
    let mut out = Vec::new();
    let mut pending: Option<Pending> = None;
    for (i, line) in text.lines().enumerate() {
        let at = format!("{path}:{}", i + 1);
        let line = line.trim_end();
        if line.is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            let Some(q) = pending.as_mut() else {
                panic!("{at}: an indented line before any query: {line:?}");
            };
            attribute(q, line.trim_start(), &at, v);
            continue;
        }
        if let Some(q) = pending.take() {
            q.finish(&mut out);
        }
        pending = Some(head(line, at, v));
    }
    if let Some(q) = pending {
        q.finish(&mut out);
    }
    out
}

/// A query line: kind, its options, the SQL.
fn head(line: &str, at: String, v: &Vars) -> Pending {
    fn word(s: &str) -> (&str, &str) {
        s.split_once(' ').unwrap_or((s, ""))
    }
    let (kind, rest) = word(line);
    let order = |w: &str| match w {
        "exact" => Order::Exact,
        "multiset" => Order::Multiset,
        _ => panic!("{at}: expected exact or multiset, found {w:?}"),
    };
    let (order, proto, sql) = match kind {
        "e" => (Order::Exact, Proto::Both, rest),
        "m" => (Order::Multiset, Proto::Both, rest),
        "k" => {
            let (cols, sql) = word(rest);
            let cols = cols
                .split(',')
                .map(|c| {
                    c.parse()
                        .unwrap_or_else(|_| panic!("{at}: bad column list {cols:?}"))
                })
                .collect();
            (Order::Keys(cols), Proto::Both, sql)
        }
        "p" | "s" => {
            let (o, sql) = word(rest);
            let proto = if kind == "p" {
                Proto::Extended
            } else {
                Proto::Simple
            };
            (order(o), proto, sql)
        }
        _ => panic!("{at}: unknown kind {kind:?} (e, m, k, p or s)"),
    };
    if sql.trim().is_empty() {
        panic!("{at}: no SQL");
    }
    Pending {
        sql: v.substitute(sql, &at),
        at,
        order,
        proto,
        runs: Vec::new(),
        refuse_ok: false,
        bug: None,
    }
}

/// An indented line: `params ...`, `refuse_ok` or `bug TEXT`.
fn attribute(q: &mut Pending, line: &'static str, at: &str, v: &Vars) {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    match word {
        "params" if q.proto == Proto::Extended => q.runs.push(params(rest, at, v)),
        "params" => panic!("{at}: parameters on a query that is not `p` ({})", q.at),
        "refuse_ok" if rest.is_empty() && !q.refuse_ok => q.refuse_ok = true,
        "bug" if !rest.trim().is_empty() && q.bug.is_none() => q.bug = Some(rest.trim()),
        _ => panic!("{at}: expected `params TYPE:VALUE ...`, `refuse_ok` or `bug TEXT` (once each), found {line:?}"),
    }
}

/// `TYPE:VALUE` words separated by spaces; a VALUE in single quotes may hold spaces.
fn params(text: &str, at: &str, v: &Vars) -> Vec<P> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for ch in text.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                word.push(ch);
            }
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if quoted {
        panic!("{at}: an unclosed quote in {text:?}");
    }
    if !word.is_empty() {
        words.push(word);
    }
    if words.is_empty() {
        panic!("{at}: `params` without parameters");
    }
    words.iter().map(|w| param(w, at, v)).collect()
}

/// One `TYPE:VALUE` word.
fn param(word: &str, at: &str, v: &Vars) -> P {
    let Some((ty, raw)) = word.split_once(':') else {
        panic!("{at}: expected TYPE:VALUE, found {word:?}");
    };
    let value = match raw.strip_prefix('\'') {
        Some(inner) => match inner.strip_suffix('\'') {
            Some(inner) => inner.replace("''", "'"),
            None => panic!("{at}: a badly quoted value in {word:?}"),
        },
        None => raw.to_string(),
    };
    let value = v.substitute(&value, at);
    fn num<T: std::str::FromStr>(s: &str, at: &str, word: &str) -> T {
        s.parse()
            .unwrap_or_else(|_| panic!("{at}: {s:?} is not a number of the type of {word:?}"))
    }
    match ty {
        "i64" if value == "null" => P::NullI64,
        "i64" => P::I64(num(&value, at, word)),
        "i32" => P::I32(num(&value, at, word)),
        "text" => P::T(value),
        "bool" => P::B(num(&value, at, word)),
        "i64[]" => P::I64s(value.split(',').map(|x| num(x, at, word)).collect()),
        _ => panic!("{at}: unknown type {ty:?} (i64, i32, text, bool, i64[]) in {word:?}"),
    }
}
