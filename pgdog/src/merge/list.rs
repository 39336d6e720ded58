//! `array_agg` and `string_agg` across shards. Each shard returns its partial list; the merger
//! concatenates them. With `ORDER BY` inside the call, each shard also returns one array per
//! ORDER BY key (`array_agg(key ORDER BY ...)`, in the same order), and the merger sorts the
//! elements of all shards by those keys (a stable sort of already-sorted runs). `string_agg`
//! is rebuilt from `array_agg(value ORDER BY ...)` and its constant delimiter. Text result
//! format, one-dimensional arrays.
use super::error::MergeError;
use super::plan::{AggFn, Hidden, Planner};
use super::rewrite;
use super::value::{ColType, Kind};
use crate::net::rows::DataRow;
use pg_query_raw::protobuf::{self as pb, node::Node as N};
use std::cmp::Ordering;

/// One `array_agg` / `string_agg` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListAgg {
    /// The column of the shards' value arrays (`None`: the call's own column, for array_agg).
    pub values: Option<usize>,
    /// `string_agg`'s delimiter (`None`: array_agg).
    pub delimiter: Option<String>,
    /// The columns of the ORDER BY keys' arrays.
    pub keys: Vec<ListKey>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

impl Planner {
    /// Plans `array_agg(x [ORDER BY ...])` or `string_agg(x, 'delim' [ORDER BY ...])`; the
    /// role is `AggFn::List(i)` with `i` the entry in `self.lists`.
    pub(super) fn list_role(&mut self, e: &pb::Node) -> Result<Option<AggFn>, MergeError> {
        let Some(N::FuncCall(fc)) = e.node.as_ref() else {
            return Ok(None);
        };
        let name = rewrite::last_name(&fc.funcname);
        let string = match name.as_str() {
            "array_agg" => false,
            "string_agg" => true,
            _ => return Ok(None),
        };
        if fc.agg_distinct {
            return Err(MergeError::unsupported(format!("{name}(DISTINCT ...)")));
        }
        let array_of = |planner: &mut Planner, arg: pb::Node| -> Result<usize, MergeError> {
            let mut call = rewrite::func_call("array_agg", vec![arg], false);
            if let Some(N::FuncCall(f)) = call.node.as_mut() {
                f.agg_filter = fc.agg_filter.clone();
                f.agg_order = fc.agg_order.clone();
            }
            planner.helper_array(call)
        };
        let (values, delimiter) = match (string, fc.args.as_slice()) {
            (false, [_]) => (None, None),
            (true, [value, delim]) => {
                let delimiter = match delim.node.as_ref() {
                    Some(N::AConst(c)) if c.isnull => String::new(),
                    Some(N::AConst(pb::AConst {
                        val: Some(pb::a_const::Val::Sval(s)),
                        ..
                    })) => s.sval.clone(),
                    _ => {
                        return Err(MergeError::unsupported(
                            "string_agg with a delimiter that is not a string constant",
                        ))
                    }
                };
                (Some(array_of(self, value.clone())?), Some(delimiter))
            }
            _ => return Err(MergeError::unsupported(format!("this {name} call"))),
        };
        let mut keys = Vec::with_capacity(fc.agg_order.len());
        for s in &fc.agg_order {
            let Some(N::SortBy(sb)) = s.node.as_ref() else {
                return Err(MergeError::unsupported(format!("this ORDER BY in {name}")));
            };
            if sb.sortby_dir == pb::SortByDir::SortbyUsing as i32 {
                return Err(MergeError::unsupported("ORDER BY ... USING"));
            }
            let key = sb
                .node
                .as_deref()
                .cloned()
                .ok_or_else(|| MergeError::unsupported("an empty ORDER BY key"))?;
            let descending = sb.sortby_dir == pb::SortByDir::SortbyDesc as i32;
            let nulls_first = match sb.sortby_nulls {
                n if n == pb::SortByNulls::SortbyNullsFirst as i32 => true,
                n if n == pb::SortByNulls::SortbyNullsLast as i32 => false,
                _ => descending,
            };
            keys.push(ListKey {
                column: array_of(self, key)?,
                descending,
                nulls_first,
            });
        }
        self.lists.push(ListAgg {
            values,
            delimiter,
            keys,
        });
        Ok(Some(AggFn::List(self.lists.len() - 1)))
    }

    /// The column of a helper `array_agg(...)`: a target with that very expression, else a
    /// hidden column read only by the list it belongs to.
    fn helper_array(&mut self, call: pb::Node) -> Result<usize, MergeError> {
        let key = rewrite::expr_text(&call)?;
        if let Some(i) = self.targets.iter().position(|t| !t.star && t.key == key) {
            return Ok(i);
        }
        let j = match self.hidden.iter().position(|h| h.key == key) {
            Some(j) => j,
            None => {
                self.hidden.push(Hidden {
                    expr: call,
                    key,
                    role: AggFn::ListPart,
                });
                self.hidden.len() - 1
            }
        };
        Ok(self.targets.len() + j)
    }
}

/// One element: its ORDER BY key values (text: unquoted) and its value as the shard sent it
/// (text: the printed token, quotes kept; binary: the element's bytes).
#[derive(Debug, Clone)]
struct Item {
    keys: Vec<Option<Vec<u8>>>,
    value: Option<Vec<u8>>,
}

/// The elements gathered for one group.
#[derive(Debug, Clone, Default)]
pub struct ListState {
    items: Vec<Item>,
    /// The element type a binary array names.
    elem_oid: i32,
}

/// The element type of an array column (`None`: not one the merger can order).
fn element_kind(array_oid: i32) -> Option<Kind> {
    let elem = match array_oid {
        1005 => 21,
        1007 => 23,
        1016 => 20,
        1028 => 26,
        1021 => 700,
        1022 => 701,
        1231 => 1700,
        1000 => 16,
        1009 => 25,
        1015 => 1043,
        1014 => 1042,
        1182 => 1082,
        1183 => 1083,
        1115 => 1114,
        1185 => 1184,
        2951 => 2950,
        1001 => 17,
        _ => return None,
    };
    Some(Kind::from_oid(elem))
}

/// Checks the column types of one list aggregate (`column`: its own column).
pub fn check_types(list: &ListAgg, column: usize, types: &[ColType]) -> Result<(), MergeError> {
    let refuse = |what: &str| MergeError::unsupported(format!("array_agg/string_agg {what}"));
    let ty = |c: usize| types.get(c).ok_or(MergeError::State("list column"));
    let own = ty(column)?;
    if let Some(v) = list.values {
        ty(v)?;
    }
    if list.delimiter.is_some() && own.kind != Kind::Text {
        return Err(refuse("of bytea"));
    }
    for k in &list.keys {
        let t = ty(k.column)?;
        if element_kind(t.oid).is_none_or(|k| k == Kind::Other) {
            return Err(refuse(&format!("ORDER BY a key of type oid {}", t.oid)));
        }
    }
    Ok(())
}

/// An array's elements (`None`: NULL).
type Elements = Vec<Option<Vec<u8>>>;

/// The elements of an array value in the column's format: `(element type, elements)`.
fn parse(v: &[u8], ty: &ColType) -> Option<(i32, Elements)> {
    if !ty.binary {
        let s = std::str::from_utf8(v).ok()?;
        let tokens = elements(s)?;
        return Some((
            0,
            tokens
                .into_iter()
                .map(|t| t.map(String::into_bytes))
                .collect(),
        ));
    }
    let word = |at: usize| -> Option<i32> {
        Some(i32::from_be_bytes(v.get(at..at + 4)?.try_into().ok()?))
    };
    let (ndim, elem) = (word(0)?, word(8)?);
    if ndim == 0 {
        return Some((elem, Vec::new()));
    }
    if ndim != 1 {
        return None;
    }
    let n = usize::try_from(word(12)?).ok()?;
    let mut at = 20;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = word(at)?;
        at += 4;
        if len < 0 {
            out.push(None);
            continue;
        }
        let end = at.checked_add(len as usize)?;
        out.push(Some(v.get(at..end)?.to_vec()));
        at = end;
    }
    (at == v.len()).then_some((elem, out))
}

/// Adds one shard row's elements of list `list` (own column `column`) to `state`.
pub fn add(
    list: &ListAgg,
    column: usize,
    row: &DataRow,
    types: &[ColType],
    state: &mut ListState,
) -> Result<(), MergeError> {
    let bad = |c: usize, why: &str| MergeError::BadValue {
        column: c,
        detail: why.to_string(),
    };
    let read = |c: usize, v: &[u8]| -> Result<(i32, Elements), MergeError> {
        parse(v, &types[c]).ok_or_else(|| bad(c, "not a one-dimensional array"))
    };
    let vcol = list.values.unwrap_or(column);
    let Some(values) = row.get(vcol) else {
        return Ok(()); // no rows for this group on that shard
    };
    let (elem_oid, values) = read(vcol, values)?;
    state.elem_oid = elem_oid;
    let mut keys: Vec<Vec<Option<Vec<u8>>>> = Vec::with_capacity(list.keys.len());
    for k in &list.keys {
        let v = row
            .get(k.column)
            .ok_or_else(|| bad(k.column, "NULL key array"))?;
        let (_, ks) = read(k.column, v)?;
        if ks.len() != values.len() {
            return Err(bad(k.column, "key array length differs from the values'"));
        }
        let text = !types[k.column].binary;
        keys.push(
            ks.into_iter()
                .map(|t| t.map(|t| if text { unquote(&t) } else { t }))
                .collect(),
        );
    }
    for (i, value) in values.into_iter().enumerate() {
        state.items.push(Item {
            keys: keys.iter_mut().map(|k| k[i].take()).collect(),
            value,
        });
    }
    Ok(())
}

/// Orders the items by the list's keys (stable: each shard's run keeps its order on ties).
fn sort(list: &ListAgg, items: &mut [Item], types: &[ColType]) -> Result<(), MergeError> {
    let mut failed = None;
    items.sort_by(|a, b| {
        for (j, k) in list.keys.iter().enumerate() {
            let o = match (&a.keys[j], &b.keys[j]) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) if k.nulls_first => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) if k.nulls_first => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) => {
                    let mut ty = types[k.column];
                    ty.kind = element_kind(ty.oid).unwrap_or(Kind::Other);
                    let o = ty.compare_at(k.column, x, y).unwrap_or_else(|e| {
                        failed.get_or_insert(e);
                        Ordering::Equal
                    });
                    if k.descending {
                        o.reverse()
                    } else {
                        o
                    }
                }
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
    failed.map_or(Ok(()), Err)
}

/// The merged value (own column `column`): every shard's elements in ORDER BY order.
pub fn finish(
    list: &ListAgg,
    column: usize,
    state: &ListState,
    types: &[ColType],
) -> Result<Option<Vec<u8>>, MergeError> {
    let mut items = state.items.clone();
    if !list.keys.is_empty() {
        sort(list, &mut items, types)?;
    }
    let binary = types[column].binary;
    Ok(match &list.delimiter {
        _ if items.is_empty() => None,
        None if binary => {
            let word = |v: i32| v.to_be_bytes();
            let mut out = Vec::new();
            out.extend(word(1));
            out.extend(word(items.iter().any(|i| i.value.is_none()) as i32));
            out.extend(word(state.elem_oid));
            out.extend(word(items.len() as i32));
            out.extend(word(1));
            for i in &items {
                match &i.value {
                    Some(v) => {
                        out.extend(word(v.len() as i32));
                        out.extend(v);
                    }
                    None => out.extend(word(-1)),
                }
            }
            Some(out)
        }
        None => {
            let mut out = b"{".to_vec();
            for (n, i) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                out.extend(i.value.as_deref().unwrap_or(b"NULL"));
            }
            out.push(b'}');
            Some(out)
        }
        Some(delim) => {
            let text = list.values.is_some_and(|v| !types[v].binary);
            let values: Vec<Vec<u8>> = items
                .iter()
                .filter_map(|i| i.value.as_ref())
                .map(|v| if text { unquote(v) } else { v.clone() })
                .collect();
            (!values.is_empty()).then(|| values.join(delim.as_bytes()))
        }
    })
}

/// The elements of a one-dimensional text array (`{a,"b c",NULL}`), each as printed (quotes
/// kept); `None` for anything else (multi-dimensional, bounds decoration, malformed).
fn elements(s: &str) -> Option<Vec<Option<String>>> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    if inner.is_empty() {
        return Some(out);
    }
    let bytes = inner.as_bytes();
    let mut i = 0;
    loop {
        let start = i;
        if bytes.get(i) == Some(&b'"') {
            i += 1;
            loop {
                match bytes.get(i)? {
                    b'\\' => i += 2,
                    b'"' => break,
                    _ => i += 1,
                }
            }
            i += 1;
        } else {
            while i < bytes.len() && bytes[i] != b',' {
                if matches!(bytes[i], b'{' | b'}' | b'"') {
                    return None;
                }
                i += 1;
            }
        }
        let token = inner.get(start..i)?;
        out.push((token != "NULL").then(|| token.to_string()));
        match bytes.get(i) {
            None => return Some(out),
            Some(b',') => i += 1,
            Some(_) => return None,
        }
    }
}

/// An element's value: quotes removed and backslash escapes resolved.
fn unquote(token: &[u8]) -> Vec<u8> {
    let Some(inner) = token
        .strip_prefix(b"\"")
        .and_then(|t| t.strip_suffix(b"\""))
    else {
        return token.to_vec();
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter();
    while let Some(&c) = bytes.next() {
        if c == b'\\' {
            if let Some(&n) = bytes.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_elements() {
        let e = elements(r#"{1,NULL,"a b","x\"y\\z",""}"#).unwrap();
        assert_eq!(
            e,
            vec![
                Some("1".into()),
                None,
                Some("\"a b\"".into()),
                Some(r#""x\"y\\z""#.into()),
                Some("\"\"".into())
            ]
        );
        assert_eq!(unquote(br#""x\"y\\z""#), b"x\"y\\z");
        assert_eq!(elements("{}").unwrap(), Vec::<Option<String>>::new());
        assert!(elements("{{1,2},{3,4}}").is_none());
        assert!(elements("[0:1]={1,2}").is_none());
        assert!(elements("{\"unterminated}").is_none());
    }
}
