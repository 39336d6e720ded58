//! Sharding keys in predicates: which shards a WHERE clause (or a JOIN condition) can match.
//! `key = value`, `value = key`, `key IN (...)`, `key = ANY(ARRAY[...])`, AND (intersection),
//! OR (union, when every branch is known), ranges on range-mapped tables; values are constants,
//! casts of constants or `$n` parameters (text or binary).
use super::schema::TableSharding;
use super::RouterError;
use crate::config::DataType;
use crate::net::encoding::Codec;
use crate::sharding::{Key, ShardingError};
use pg_query_raw::router::{Const, Expr, Quantifier, Relation};
use std::collections::BTreeSet;

/// The values of a Bind: per parameter its bytes (`None`: NULL) and format code.
#[derive(Debug, Clone, Default)]
pub struct Params<'a> {
    pub values: Vec<Option<&'a [u8]>>,
    pub formats: Vec<i16>,
    /// Each parameter's type OID when known (0: unknown), to read binary values by their own
    /// type rather than the key column's.
    pub types: Vec<i32>,
    /// How text values read (the client's encoding): a value it cannot read proves no shard.
    pub codec: Codec,
}

impl<'a> Params<'a> {
    /// The type OID of parameter `$n` (0: unknown).
    pub fn type_of(&self, n: u32) -> i32 {
        (n as usize)
            .checked_sub(1)
            .and_then(|i| self.types.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Parameter `$n` (1-based) and whether it is in binary format.
    pub fn get(&self, n: u32) -> Option<(Option<&'a [u8]>, bool)> {
        let i = (n as usize).checked_sub(1)?;
        let value = *self.values.get(i)?;
        let binary = match self.formats.len() {
            0 => false,
            1 => self.formats[0] == 1,
            _ => self.formats.get(i).copied() == Some(1),
        };
        Some((value, binary))
    }
}

/// A constant a key column is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    /// A string literal or a text-format parameter.
    Text(String),
    /// A numeric literal (`42`, `71.0`, `1.5e3`): compared with an integer key as a number.
    Number(String),
    Binary(&'a [u8]),
}

/// The value of a constant expression: constants, casts of constants, `$n` with a value.
pub fn value_of<'a>(expr: &Expr, params: Option<&Params<'a>>) -> Option<Value<'a>> {
    match expr {
        Expr::Const(c) => Some(match c {
            Const::Null => Value::Null,
            Const::Bool(b) => Value::Text(b.to_string()),
            Const::Integer(i) => Value::Number(i.to_string()),
            Const::Numeric(n) => Value::Number(n.clone()),
            Const::String(s) | Const::Bits(s) => Value::Text(s.clone()),
        }),
        Expr::Cast { expr, type_name } => cast(value_of(expr, params)?, type_name),
        Expr::Param(n) => {
            let params = params?;
            let (value, binary) = params.get(*n)?;
            Some(match value {
                None => Value::Null,
                Some(v) if binary => match params.type_of(*n) {
                    // text, varchar, bpchar, name, unknown: the bytes are the text.
                    25 | 1043 | 1042 | 19 | 705 => {
                        Value::Text(params.codec.decode(v)?.into_owned())
                    }
                    _ => Value::Binary(v),
                },
                Some(v) => Value::Text(params.codec.decode(v)?.into_owned()),
            })
        }
        _ => None,
    }
}

/// `value::type_name` where the cast keeps what the value says about a key: a string or text
/// parameter read by the type's input function (as the column's would read it), a number as an
/// integer (rounded, as Postgres casts numeric to integers) or a numeric. `None` (unknown: every
/// shard) for casts that may change it: to text of a number (`1e3::text` is `'1000'`), to a
/// type with a modifier (`varchar(2)` cuts, `char` pads), to floats, and the rest.
fn cast<'a>(value: Value<'a>, type_name: &str) -> Option<Value<'a>> {
    let integer = matches!(type_name, "int2" | "int4" | "int8");
    match value {
        Value::Null => Some(Value::Null),
        Value::Text(t) if integer || matches!(type_name, "text" | "varchar" | "uuid") => {
            Some(Value::Text(t))
        }
        Value::Text(t) if type_name == "numeric" => Some(Value::Number(t)),
        Value::Number(n) if integer => Some(Value::Number(integral(&n, true)?.to_string())),
        Value::Number(n) if type_name == "numeric" => Some(Value::Number(n)),
        // A binary parameter's bytes are of the type the server inferred for it: the cast's.
        Value::Binary(b) => Some(Value::Binary(b)),
        _ => None,
    }
}

/// Whether a key column cast to `type_name` compares as the key itself: another integer type
/// or numeric for an integer key, text for a text key, uuid for a uuid key.
fn keeps_key(table: &TableSharding, type_name: &str) -> bool {
    match table.config.data_type {
        DataType::Bigint | DataType::Integer | DataType::Smallint => {
            matches!(type_name, "int2" | "int4" | "int8" | "numeric")
        }
        DataType::Varchar => matches!(type_name, "text" | "varchar"),
        DataType::Uuid => type_name == "uuid",
    }
}

fn is_integer(table: &TableSharding) -> bool {
    matches!(
        table.config.data_type,
        DataType::Bigint | DataType::Integer | DataType::Smallint
    )
}

/// The shard a row with this key value lives on (INSERT): a numeric literal for an integer key
/// is rounded as Postgres' assignment cast rounds it.
pub fn shard_of(table: &TableSharding, value: &Value<'_>) -> Result<usize, RouterError> {
    Ok(match value {
        Value::Null => table.shard_of_text(None)?,
        Value::Text(t) => table.shard_of_text(Some(t))?,
        Value::Number(n) if is_integer(table) => match integral(n, true) {
            Some(v) => table.shard_of_text(Some(&v.to_string()))?,
            None => table.shard_of_text(Some(n))?,
        },
        Value::Number(n) => table.shard_of_text(Some(n))?,
        Value::Binary(b) => table.shard_of_binary(b)?,
    })
}

/// The shard rows matching `key = value` live on; `None` when no row can match (NULL, a
/// fraction or an out-of-range number compared with an integer key).
pub(super) fn shard_matching(
    table: &TableSharding,
    value: &Value<'_>,
) -> Result<Option<usize>, RouterError> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) if is_integer(table) => {
            let Some(v) = integral(n, false) else {
                return Ok(None);
            };
            match table.shard_of_text(Some(&v.to_string())) {
                Ok(s) => Ok(Some(s)),
                Err(ShardingError::OutOfRange { .. } | ShardingError::ValueOutOfRange { .. }) => {
                    Ok(None)
                }
                Err(e) => Err(e.into()),
            }
        }
        other => shard_of(table, other).map(Some),
    }
}

/// A key for range comparisons: `Ok(None)` when no key exists (NULL), `Err(None)`-like unknowns
/// are reported as `Unknown`.
enum Bound {
    Null,
    Key(Key),
    Unknown,
}

fn key_of(value: &Value<'_>, table: &TableSharding) -> Result<Bound, RouterError> {
    Ok(match value {
        Value::Null => Bound::Null,
        Value::Text(t) => Bound::Key(Key::from_text(table.config.data_type, t)?),
        Value::Number(n) if is_integer(table) => match integral(n, false) {
            Some(v) => match Key::from_text(table.config.data_type, &v.to_string()) {
                Ok(k) => Bound::Key(k),
                Err(_) => Bound::Unknown,
            },
            None => Bound::Unknown,
        },
        Value::Number(n) => Bound::Key(Key::from_text(table.config.data_type, n)?),
        Value::Binary(b) => Bound::Key(Key::from_binary(table.config.data_type, b)?),
    })
}

/// The integer value of a numeric literal (`71`, `71.00`, `-1.5e3`); a fraction is `None`
/// unless `round` (half away from zero, as Postgres casts numeric to integers).
pub fn integral(n: &str, round: bool) -> Option<i128> {
    let n = n.trim();
    // The common case, a plain integer, without the decimal arithmetic below (at most 38
    // characters, as below: i128 holds some 39-digit values).
    if n.len() <= 38 {
        if let Ok(v) = n.parse::<i128>() {
            return Some(v);
        }
    }
    let (neg, n) = match n.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, n.strip_prefix('+').unwrap_or(n)),
    };
    let (mantissa, exp) = match n.find(['e', 'E']) {
        Some(i) => (&n[..i], n[i + 1..].parse::<i32>().ok()?),
        None => (n, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let digits: String = format!("{int}{frac}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // value = digits * 10^(exp - frac.len())
    let scale = exp - frac.len() as i32;
    let digits = digits.trim_start_matches('0');
    let (whole, rest): (String, String) = if scale >= 0 {
        if digits.len() + scale as usize > 38 {
            return None;
        }
        (
            format!("{digits}{}", "0".repeat(scale as usize)),
            String::new(),
        )
    } else {
        let cut = digits.len() as i64 + scale as i64;
        if cut <= 0 {
            (
                String::new(),
                format!("{}{digits}", "0".repeat((-cut) as usize)),
            )
        } else {
            let (w, r) = digits.split_at(cut as usize);
            (w.to_string(), r.to_string())
        }
    };
    if whole.len() > 38 {
        return None;
    }
    let mut v: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    if rest.bytes().any(|b| b != b'0') {
        if !round {
            return None;
        }
        if rest.as_bytes()[0] >= b'5' {
            v += 1;
        }
    }
    Some(if neg { -v } else { v })
}

/// The sharded relations of a statement and the parameters of this execution.
pub struct Predicates<'s, 'p> {
    /// Each sharded relation with how it is sharded.
    pub relations: Vec<(&'s Relation, &'s TableSharding)>,
    pub params: Option<&'s Params<'p>>,
}

/// A set of shards (`None` where the predicate says nothing about the key).
pub type ShardSet = Option<BTreeSet<usize>>;

impl<'s, 'p> Predicates<'s, 'p> {
    /// The sharded relation a column reference names, if it is that relation's key.
    /// A cast of the column counts only when it keeps the key's equality (`keeps_key`):
    /// `sid::int = 5` matches `'05'` too, rows of other shards.
    pub fn key_column(&self, expr: &Expr) -> Option<&'s TableSharding> {
        let Expr::Column { table, name } = strip_cast(expr) else {
            return None;
        };
        let ts = self.relations.iter().find_map(|(rel, ts)| {
            let matches_table = match table {
                None => true,
                Some(t) => match &rel.alias {
                    Some(a) => a == t,
                    None => &rel.name == t,
                },
            };
            (matches_table && ts.column() == name).then_some(*ts)
        })?;
        let mut e = expr;
        while let Expr::Cast { expr, type_name } = e {
            if !keeps_key(ts, type_name) {
                return None;
            }
            e = expr;
        }
        Some(ts)
    }

    /// The shards rows matching `expr` can be on.
    pub fn shards(&self, expr: &Expr) -> Result<ShardSet, RouterError> {
        Ok(match expr {
            Expr::And(items) => {
                let mut acc: ShardSet = None;
                for item in items {
                    if let Some(set) = self.shards(item)? {
                        acc = Some(match acc {
                            None => set,
                            Some(prev) => prev.intersection(&set).copied().collect(),
                        });
                    }
                }
                acc
            }
            Expr::Or(items) => {
                let mut acc = BTreeSet::new();
                for item in items {
                    match self.shards(item)? {
                        Some(set) => acc.extend(set),
                        None => return Ok(None),
                    }
                }
                Some(acc)
            }
            Expr::Op {
                op,
                left: Some(left),
                right: Some(right),
                quantifier,
            } => self.comparison(op, left, right, *quantifier)?,
            Expr::In {
                expr,
                list,
                negated: false,
            } => match self.key_column(expr) {
                Some(ts) => self.values_shards(ts, list)?,
                None => None,
            },
            Expr::Between {
                expr,
                low,
                high,
                negated: false,
                symmetric: false,
            } => match self.key_column(expr) {
                Some(ts) => {
                    match (value_of(low, self.params), value_of(high, self.params)) {
                        (Some(l), Some(h)) => {
                            let (l, h) = (key_of(&l, ts)?, key_of(&h, ts)?);
                            match (l, h) {
                                (Bound::Key(l), Bound::Key(h)) => ts
                                    .placement
                                    .shards_for_range(Some((&l, true)), Some((&h, true)))
                                    .map(|v| v.into_iter().collect()),
                                // NULL bound: matches nothing.
                                (Bound::Null, _) | (_, Bound::Null) => Some(BTreeSet::new()),
                                _ => None,
                            }
                        }
                        _ => None,
                    }
                }
                None => None,
            },
            _ => None,
        })
    }

    fn values_shards(&self, ts: &TableSharding, list: &[Expr]) -> Result<ShardSet, RouterError> {
        let mut acc = BTreeSet::new();
        for item in list {
            match value_of(item, self.params) {
                Some(v) => {
                    // `key IN (NULL)` matches nothing.
                    if let Some(shard) = shard_matching(ts, &v)? {
                        acc.insert(shard);
                    }
                }
                None => return Ok(None),
            }
        }
        Ok(Some(acc))
    }

    fn comparison(
        &self,
        op: &str,
        left: &Expr,
        right: &Expr,
        quantifier: Option<Quantifier>,
    ) -> Result<ShardSet, RouterError> {
        // key op value, or value op key (operator mirrored).
        let (ts, value_expr, op) = match (self.key_column(left), self.key_column(right)) {
            (Some(ts), _) => (ts, right, op.to_string()),
            (None, Some(ts)) => (ts, left, mirror(op).to_string()),
            _ => return Ok(None),
        };
        if quantifier == Some(Quantifier::Any) {
            if op != "=" {
                return Ok(None);
            }
            return match strip_cast(value_expr) {
                Expr::Array(items) => self.values_shards(ts, items),
                _ => Ok(None),
            };
        }
        if quantifier.is_some() {
            return Ok(None);
        }
        let Some(value) = value_of(value_expr, self.params) else {
            return Ok(None);
        };
        if op == "=" {
            return Ok(Some(shard_matching(ts, &value)?.into_iter().collect()));
        }
        let key = match key_of(&value, ts)? {
            Bound::Key(k) => k,
            Bound::Null => return Ok(Some(BTreeSet::new())),
            Bound::Unknown => return Ok(None),
        };
        let range = match op.as_str() {
            "<" => ts.placement.shards_for_range(None, Some((&key, false))),
            "<=" => ts.placement.shards_for_range(None, Some((&key, true))),
            ">" => ts.placement.shards_for_range(Some((&key, false)), None),
            ">=" => ts.placement.shards_for_range(Some((&key, true)), None),
            _ => None,
        };
        Ok(range.map(|v| v.into_iter().collect()))
    }
}

fn strip_cast(e: &Expr) -> &Expr {
    match e {
        Expr::Cast { expr, .. } => strip_cast(expr),
        other => other,
    }
}

fn mirror(op: &str) -> &str {
    match op {
        "<" => ">",
        ">" => "<",
        "<=" => ">=",
        ">=" => "<=",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::integral;

    #[test]
    fn casts_keep_or_drop_what_a_value_says() {
        use super::{cast, Value};
        let n = |v: &str| Value::Number(v.into());
        let t = |v: &str| Value::Text(v.into());
        // Postgres rounds numeric to integers: 7.5::bigint is 8.
        assert_eq!(cast(n("7.5"), "int8"), Some(n("8")));
        assert_eq!(cast(n("-7.5"), "int4"), Some(n("-8")));
        assert_eq!(cast(n("7"), "numeric"), Some(n("7")));
        assert_eq!(cast(t("5"), "int8"), Some(t("5")));
        assert_eq!(cast(t("7.5"), "numeric"), Some(n("7.5")));
        // 1e3::text is '1000'; varchar(n) and char(n) may cut or pad; floats round.
        assert_eq!(cast(n("1e3"), "text"), None);
        assert_eq!(cast(t("abc"), "varchar"), Some(t("abc")));
        assert_eq!(cast(t("abc"), "varchar()"), None);
        assert_eq!(cast(t("abc"), "bpchar()"), None);
        assert_eq!(cast(t("abc"), "bpchar"), None);
        assert_eq!(cast(t("5"), "int8[]"), None);
        assert_eq!(cast(n("1.5"), "float8"), None);
        assert_eq!(cast(Value::Null, "int8"), Some(Value::Null));
    }

    #[test]
    fn integral_values() {
        assert_eq!(integral("71", false), Some(71));
        assert_eq!(integral("71.000", false), Some(71));
        assert_eq!(integral("-1.5e3", false), Some(-1500));
        assert_eq!(integral("71.5", false), None);
        assert_eq!(integral("71.5", true), Some(72));
        assert_eq!(integral("-71.5", true), Some(-72));
        assert_eq!(integral("71.49", true), Some(71));
        assert_eq!(integral("0.5", true), Some(1));
        assert_eq!(integral("5e-1", false), None);
        assert_eq!(integral("3000000000", false), Some(3_000_000_000));
        assert_eq!(integral("abc", false), None);
        assert_eq!(integral("1e100", false), None);
    }
}
