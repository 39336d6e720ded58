//! Sharding keys in predicates: which shards a WHERE clause (or a JOIN condition) can match.
//! `key = value`, `value = key`, `key IN (...)`, `key = ANY(ARRAY[...])`, AND (intersection),
//! OR (union, when every branch is known), ranges on range-mapped tables; values are constants,
//! casts of constants or `$n` parameters (text or binary).
use super::schema::TableSharding;
use super::RouterError;
use crate::sharding::Key;
use pg_query_raw::router::{Const, Expr, Quantifier, Relation};
use std::collections::BTreeSet;

/// The values of a Bind: per parameter its bytes (`None`: NULL) and format code.
#[derive(Debug, Clone, Default)]
pub struct Params<'a> {
    pub values: Vec<Option<&'a [u8]>>,
    pub formats: Vec<i16>,
}

impl<'a> Params<'a> {
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
    Text(String),
    Binary(&'a [u8]),
}

/// The value of a constant expression: constants, casts of constants, `$n` with a value.
pub fn value_of<'a>(expr: &Expr, params: Option<&Params<'a>>) -> Option<Value<'a>> {
    match expr {
        Expr::Const(c) => Some(match c {
            Const::Null => Value::Null,
            Const::Bool(b) => Value::Text(b.to_string()),
            Const::Integer(i) => Value::Text(i.to_string()),
            Const::Numeric(n) => Value::Text(n.clone()),
            Const::String(s) | Const::Bits(s) => Value::Text(s.clone()),
        }),
        Expr::Cast { expr, .. } => value_of(expr, params),
        Expr::Param(n) => {
            let (value, binary) = params?.get(*n)?;
            Some(match value {
                None => Value::Null,
                Some(v) if binary => Value::Binary(v),
                Some(v) => Value::Text(String::from_utf8_lossy(v).into_owned()),
            })
        }
        _ => None,
    }
}

/// The shard of one key value.
pub fn shard_of(table: &TableSharding, value: &Value<'_>) -> Result<usize, RouterError> {
    Ok(match value {
        Value::Null => table.shard_of_text(None)?,
        Value::Text(t) => table.shard_of_text(Some(t))?,
        Value::Binary(b) => table.shard_of_binary(b)?,
    })
}

fn key_of(value: &Value<'_>, table: &TableSharding) -> Result<Option<Key>, RouterError> {
    Ok(match value {
        Value::Null => None,
        Value::Text(t) => Some(Key::from_text(table.config.data_type, t)?),
        Value::Binary(b) => Some(Key::from_binary(table.config.data_type, b)?),
    })
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
    pub fn key_column(&self, expr: &Expr) -> Option<&'s TableSharding> {
        let Expr::Column { table, name } = strip_cast(expr) else {
            return None;
        };
        self.relations.iter().find_map(|(rel, ts)| {
            let matches_table = match table {
                None => true,
                Some(t) => match &rel.alias {
                    Some(a) => a == t,
                    None => &rel.name == t,
                },
            };
            (matches_table && ts.column() == name).then_some(*ts)
        })
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
                                (Some(l), Some(h)) => ts
                                    .placement
                                    .shards_for_range(Some((&l, true)), Some((&h, true)))
                                    .map(|v| v.into_iter().collect()),
                                // NULL bound: matches nothing.
                                _ => Some(BTreeSet::new()),
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
                // `key IN (NULL)` matches nothing.
                Some(Value::Null) => {}
                Some(v) => {
                    acc.insert(shard_of(ts, &v)?);
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
            if value == Value::Null {
                // `key = NULL` is never true.
                return Ok(Some(BTreeSet::new()));
            }
            return Ok(Some([shard_of(ts, &value)?].into()));
        }
        let Some(key) = key_of(&value, ts)? else {
            return Ok(Some(BTreeSet::new()));
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
