//! Generates the C-tree <-> `pg_query::protobuf` converters from the mapping tables libpg_query
//! ships (the same tables its Protobuf path runs):
//! - `pg_query_outfuncs_defs.c`: one `_outX` per node, one `WRITE_<KIND>_FIELD` per field;
//! - `pg_query_outfuncs_conds.c`: node tag -> converter;
//! - `pg_query_readfuncs_defs.c` / `_conds.c`: the reverse direction;
//! - `pg_query_enum_defs.c`: C enumerator <-> Protobuf number.
//!
//! Every macro kind is handled explicitly; an unknown one fails the build, so a Postgres upgrade
//! means regenerating (and perhaps teaching this file a new kind), never silently dropped fields.
use heck::ToUpperCamelCase;
use std::fmt::Write;
use std::path::Path;

struct Field {
    kind: String,
    args: Vec<String>,
}

struct Func {
    /// Suffix of `_outX` / `_readX`.
    name: String,
    /// Protobuf message name (first `OUT_TYPE` argument).
    proto: String,
    /// C struct type.
    c_type: String,
    fields: Vec<Field>,
}

struct Cond {
    /// `T_X` tag (out direction only).
    tag: String,
    typename_c: String,
    cast: String,
    fldname: String,
}

struct EnumMap {
    name: String,
    /// (C enumerator, protobuf number)
    values: Vec<(String, i32)>,
}

pub struct Tables {
    out_funcs: Vec<Func>,
    read_funcs: Vec<Func>,
    out_conds: Vec<Cond>,
    read_conds: Vec<Cond>,
    enums: Vec<EnumMap>,
}

fn read(path: &Path) -> String {
    println!("cargo:rerun-if-changed={}", path.display());
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn between(s: &str, open: char, close: char) -> &str {
    let start = s.find(open).expect("open") + 1;
    let end = s.rfind(close).expect("close");
    &s[start..end]
}

fn split_args(s: &str) -> Vec<String> {
    s.split(',').map(|a| a.trim().to_string()).collect()
}

/// Parses the `_outX`/`_readX` definitions of a defs file.
fn parse_funcs(text: &str, prefix: &str) -> Vec<Func> {
    let mut funcs = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        // A definition (not a prototype): the name line is followed by "{".
        if line.starts_with(prefix) && lines.get(i + 1).map(|l| l.trim()) == Some("{") {
            let name = line[prefix.len()..line.find('(').expect("(")].to_string();
            let ot = &line[line.find("OUT_TYPE(").expect("OUT_TYPE") + 9..];
            let ot = &ot[..ot.find(')').expect(")")];
            let ot_args = split_args(ot);
            let c_type = line
                .rsplit_once("const ")
                .map(|(_, t)| t.split_whitespace().next().unwrap_or("").to_string())
                .unwrap_or_default();
            let mut fields = Vec::new();
            let mut read_c_type = None;
            i += 2;
            while lines[i].trim() != "}" {
                let l = lines[i].trim();
                if let Some(rest) = l.strip_prefix("WRITE_").or_else(|| l.strip_prefix("READ_")) {
                    let kind = rest[..rest.find('(').expect("(")].to_string();
                    fields.push(Field {
                        kind,
                        args: split_args(between(rest, '(', ')')),
                    });
                } else if l.contains("= makeNode(") {
                    read_c_type = Some(
                        between(l.split_once("makeNode").expect("makeNode").1, '(', ')')
                            .to_string(),
                    );
                } else if !(l.is_empty()
                    || l.starts_with("return node")
                    || l.starts_with("NodeSetTag"))
                {
                    panic!("{prefix}{name}: line the generator does not know: {l}");
                }
                i += 1;
            }
            let c_type = read_c_type.unwrap_or(c_type);
            funcs.push(Func {
                name,
                proto: ot_args[0].clone(),
                c_type,
                fields,
            });
        }
        i += 1;
    }
    funcs
}

fn parse_out_conds(text: &str) -> Vec<Cond> {
    let mut conds = Vec::new();
    let mut tag = None;
    for line in text.lines().map(str::trim) {
        if let Some(t) = line.strip_prefix("case ") {
            tag = Some(t.trim_end_matches(':').to_string());
        } else if let Some(rest) = line.strip_prefix("OUT_NODE(") {
            let a = split_args(rest.trim_end_matches(';').trim_end_matches(')'));
            conds.push(Cond {
                tag: tag.take().expect("case before OUT_NODE"),
                typename_c: a[1].clone(),
                cast: a[4].clone(),
                fldname: a[5].clone(),
            });
        }
    }
    conds
}

fn parse_read_conds(text: &str) -> Vec<Cond> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("READ_COND("))
        .map(|rest| {
            let a = split_args(rest.trim_end_matches(';').trim_end_matches(')'));
            Cond {
                tag: String::new(),
                typename_c: a[1].clone(),
                cast: a[4].clone(),
                fldname: a[5].clone(),
            }
        })
        .collect()
}

fn parse_enums(text: &str) -> Vec<EnumMap> {
    let mut enums = Vec::new();
    let mut current: Option<EnumMap> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("_enumToInt") {
            current = Some(EnumMap {
                name: rest[..rest.find('(').expect("(")].to_string(),
                values: Vec::new(),
            });
        } else if line.starts_with('}') {
            if let Some(e) = current.take() {
                enums.push(e);
            }
        } else if let Some(e) = current.as_mut() {
            let l = line.trim();
            if let Some(rest) = l.strip_prefix("case ") {
                let (name, num) = rest.split_once(": return ").expect("case X: return N;");
                let num: i32 = num.trim_end_matches(';').parse().expect("enum number");
                e.values.push((name.to_string(), num));
            }
        }
    }
    enums
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// A C field name as bindgen spells it.
fn c_field(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A protobuf field name as prost spells it.
fn pb_field(name: &str) -> String {
    if RUST_KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

fn pb_type(proto: &str) -> String {
    proto.to_upper_camel_case()
}

fn variant(fldname: &str) -> String {
    fldname.trim_end_matches('_').to_upper_camel_case()
}

impl Tables {
    pub fn read(dir: &Path) -> Tables {
        Tables {
            out_funcs: parse_funcs(&read(&dir.join("pg_query_outfuncs_defs.c")), "_out"),
            read_funcs: parse_funcs(&read(&dir.join("pg_query_readfuncs_defs.c")), "_read"),
            out_conds: parse_out_conds(&read(&dir.join("pg_query_outfuncs_conds.c"))),
            read_conds: parse_read_conds(&read(&dir.join("pg_query_readfuncs_conds.c"))),
            enums: parse_enums(&read(&dir.join("pg_query_enum_defs.c"))),
        }
    }

    /// C types bindgen must generate.
    pub fn c_types(&self) -> Vec<String> {
        let mut v: Vec<String> = self.out_funcs.iter().map(|f| f.c_type.clone()).collect();
        v.extend(self.out_conds.iter().map(|c| c.cast.clone()));
        v.extend(self.enums.iter().map(|e| e.name.clone()));
        v.sort();
        v.dedup();
        v
    }

    /// C tree -> protobuf.
    pub fn gen_out(&self) -> String {
        let mut s = String::from(
            "// Generated by build/codegen.rs from pg_query_outfuncs_defs.c; do not edit.\n\n",
        );
        for f in &self.out_funcs {
            let pb = pb_type(&f.proto);
            writeln!(
                s,
                "#[inline(never)]\nunsafe fn out_{}(n: &c::{}) -> Result<pb::{pb}> {{",
                f.name, f.c_type
            )
            .unwrap();
            writeln!(s, "    let mut o = pb::{pb}::default();").unwrap();
            for fld in &f.fields {
                let a = &fld.args;
                let line = match fld.kind.as_str() {
                    "INT_FIELD" | "UINT_FIELD" | "UINT64_FIELD" | "LONG_FIELD" | "FLOAT_FIELD"
                    | "BOOL_FIELD" => {
                        format!("o.{} = n.{} as _;", pb_field(&a[1]), c_field(&a[3]))
                    }
                    "CHAR_FIELD" => format!(
                        "o.{} = char_to_string(n.{});",
                        pb_field(&a[1]),
                        c_field(&a[3])
                    ),
                    "STRING_FIELD" => format!(
                        "o.{} = cstr_to_string(n.{});",
                        pb_field(&a[1]),
                        c_field(&a[3])
                    ),
                    "ENUM_FIELD" => {
                        format!(
                            "o.{} = enum_to_int_{}(n.{})?;",
                            pb_field(&a[2]),
                            a[1],
                            c_field(&a[4])
                        )
                    }
                    "LIST_FIELD" => {
                        format!("o.{} = out_list(n.{})?;", pb_field(&a[1]), c_field(&a[3]))
                    }
                    "BITMAPSET_FIELD" => format!(
                        "o.{} = out_bitmapset(n.{});",
                        pb_field(&a[1]),
                        c_field(&a[3])
                    ),
                    "NODE_PTR_FIELD" => format!(
                        "o.{} = out_node_boxed(n.{} as *const c::Node)?;",
                        pb_field(&a[1]),
                        c_field(&a[3])
                    ),
                    "SPECIFIC_NODE_PTR_FIELD" => format!(
                        "if !n.{f}.is_null() {{ o.{} = Some(descend(|| out_{}(&*n.{f}))?.into()); }}",
                        pb_field(&a[3]),
                        a[1],
                        f = c_field(&a[5])
                    ),
                    "SPECIFIC_NODE_FIELD" => {
                        format!(
                            "o.{} = Some(out_{}(&n.{})?.into());",
                            pb_field(&a[3]),
                            a[1],
                            c_field(&a[5])
                        )
                    }
                    other => panic!("_out{}: unknown field kind WRITE_{other}", f.name),
                };
                writeln!(s, "    {line}").unwrap();
            }
            s.push_str("    Ok(o)\n}\n\n");
        }
        // One small function per node kind keeps the dispatch frame small: a single match whose
        // arms build the variants inline needs tens of KB of stack per nesting level.
        for cnd in &self.out_conds {
            writeln!(
                s,
                "#[inline(never)]\nunsafe fn out_variant_{0}(p: *const c::Node, dst: &mut Option<pb::node::Node>) -> Result<()> {{\n    *dst = Some(pb::node::Node::{1}(out_{0}(&*(p as *const c::{2}))?.into()));\n    Ok(())\n}}\n",
                cnd.typename_c,
                variant(&cnd.fldname),
                cnd.cast
            )
            .unwrap();
        }
        s.push_str("/// Converts one node by its tag; unknown tags are errors.\n");
        s.push_str("#[inline(never)]\nunsafe fn out_node_by_tag(p: *const c::Node, dst: &mut Option<pb::node::Node>) -> Result<()> {\n");
        s.push_str("    match (*p).type_ {\n");
        for cnd in &self.out_conds {
            writeln!(
                s,
                "        c::NodeTag_{} => out_variant_{}(p, dst),",
                cnd.tag, cnd.typename_c
            )
            .unwrap();
        }
        s.push_str("        tag => Err(Error::UnknownNodeTag(tag as u32)),\n    }\n}\n\n");
        for e in &self.enums {
            writeln!(
                s,
                "fn enum_to_int_{}(v: c::{}) -> Result<i32> {{\n    Ok(match v {{",
                e.name, e.name
            )
            .unwrap();
            for (name, num) in &e.values {
                writeln!(s, "        c::{}_{name} => {num},", e.name).unwrap();
            }
            writeln!(
                s,
                "        _ => return Err(Error::UnknownEnum(\"{}\", v as i64)),\n    }})\n}}\n",
                e.name
            )
            .unwrap();
        }
        s
    }

    /// protobuf -> C tree (palloc'd in the current memory context).
    pub fn gen_read(&self) -> String {
        let mut s = String::from(
            "// Generated by build/codegen.rs from pg_query_readfuncs_defs.c; do not edit.\n\n",
        );
        for f in &self.read_funcs {
            let pb = pb_type(&f.proto);
            writeln!(
                s,
                "#[inline(never)]\nunsafe fn read_{}(m: &pb::{pb}) -> Result<*mut c::{}> {{",
                f.name, f.c_type
            )
            .unwrap();
            writeln!(
                s,
                "    let node = make_node::<c::{0}>(c::NodeTag_T_{0});\n    let n = &mut *node;",
                f.c_type
            )
            .unwrap();
            for fld in &f.fields {
                let a = &fld.args;
                let line = match fld.kind.as_str() {
                    "INT_FIELD" | "UINT_FIELD" | "UINT64_FIELD" | "LONG_FIELD" | "FLOAT_FIELD"
                    | "BOOL_FIELD" => {
                        format!("n.{} = m.{} as _;", c_field(&a[3]), pb_field(&a[1]))
                    }
                    "CHAR_FIELD" => format!(
                        "if let Some(b) = m.{}.as_bytes().first() {{ n.{} = *b as _; }}",
                        pb_field(&a[1]),
                        c_field(&a[3])
                    ),
                    "STRING_FIELD" => format!(
                        "if !m.{p}.is_empty() {{ n.{} = pstr(&m.{p}); }}",
                        c_field(&a[3]),
                        p = pb_field(&a[1])
                    ),
                    "ENUM_FIELD" => format!(
                        "n.{} = int_to_enum_{}(m.{});",
                        c_field(&a[4]),
                        a[1],
                        pb_field(&a[2])
                    ),
                    "LIST_FIELD" => {
                        format!("n.{} = read_list(&m.{})?;", c_field(&a[3]), pb_field(&a[1]))
                    }
                    // libpg_query does not read bitmapsets back either (they only occur in
                    // analyzed trees, never in raw parse trees).
                    "BITMAPSET_FIELD" => {
                        String::from("// bitmapset: not read back (as in libpg_query)")
                    }
                    "NODE_PTR_FIELD" | "ABSTRACT_PTR_FIELD" => format!(
                        "if let Some(x) = &m.{} {{ n.{} = read_node(x)? as _; }}",
                        pb_field(&a[1]),
                        c_field(&a[3])
                    ),
                    "SPECIFIC_NODE_PTR_FIELD" => format!(
                        "if let Some(x) = &m.{} {{ n.{} = grow(|| read_{}(x))?; }}",
                        pb_field(&a[3]),
                        c_field(&a[5]),
                        a[1]
                    ),
                    "SPECIFIC_NODE_FIELD" => format!(
                        "if let Some(x) = &m.{} {{ n.{} = *read_{}(x)?; }}",
                        pb_field(&a[3]),
                        c_field(&a[5]),
                        a[1]
                    ),
                    other => panic!("_read{}: unknown field kind READ_{other}", f.name),
                };
                writeln!(s, "    {line}").unwrap();
            }
            // An embedded base struct (CreateForeignTableStmt.base) overwrote the tag.
            writeln!(
                s,
                "    (*(node as *mut c::Node)).type_ = c::NodeTag_T_{};\n    Ok(node)\n}}\n",
                f.c_type
            )
            .unwrap();
        }
        s.push_str("/// Converts one node by its protobuf variant; the value nodes are handled by `read_value`.\n");
        s.push_str("#[inline(never)]\nunsafe fn read_node_variant(v: &pb::node::Node) -> Result<*mut c::Node> {\n");
        s.push_str("    Ok(match v {\n");
        for cnd in &self.read_conds {
            writeln!(
                s,
                "        pb::node::Node::{}(x) => read_{}(x)? as *mut c::Node,",
                variant(&cnd.fldname),
                cnd.typename_c
            )
            .unwrap();
        }
        s.push_str("        other => read_value(other)?,\n    })\n}\n\n");
        for e in &self.enums {
            let first = &e.values[0].0;
            writeln!(
                s,
                "fn int_to_enum_{0}(v: i32) -> c::{0} {{\n    match v {{",
                e.name
            )
            .unwrap();
            for (name, num) in &e.values {
                writeln!(s, "        {num} => c::{}_{name},", e.name).unwrap();
            }
            // As libpg_query: an unknown number reads as the first enumerator.
            writeln!(s, "        _ => c::{}_{first},\n    }}\n}}\n", e.name).unwrap();
        }
        s
    }
}
