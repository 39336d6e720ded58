//! `COPY` statements: the table, columns, direction and data format options, read from the full
//! Postgres parse tree and checked the way Postgres' `ProcessCopyOptions` checks them.

use pg_query_raw::protobuf::{node::Node, CopyStmt, DefElem};

use super::CopyError;

/// A parsed `COPY` statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyStatement {
    /// Schema of the table, when qualified.
    pub schema: Option<String>,
    /// Table name; empty for `COPY (query) TO ...`.
    pub table: String,
    /// The column list, in order; empty when the statement has none (all columns, table order).
    pub columns: Vec<String>,
    /// `COPY ... FROM` (true) or `COPY ... TO` (false).
    pub from: bool,
    /// `STDIN`/`STDOUT` (true) or a server-side file or `PROGRAM` (false).
    pub stdio: bool,
    /// `COPY (query) TO ...`: `table`, `schema` and `columns` are empty.
    pub query: bool,
    /// `COPY ... FROM ... WHERE cond`: shards filter the rows they receive.
    pub where_clause: bool,
    /// The data format options, with Postgres' defaults filled in.
    pub options: CopyOptions,
}

/// COPY data format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyFormat {
    /// Tab-separated text with backslash escapes (the default).
    #[default]
    Text,
    /// Comma-separated values with quoting.
    Csv,
    /// Postgres' binary COPY format.
    Binary,
}

/// Columns named by `FORCE_NULL` / `FORCE_NOT_NULL` (CSV only).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ForceColumns {
    /// The option is not given.
    #[default]
    None,
    /// `*`: every column.
    All,
    /// These columns.
    List(Vec<String>),
}

impl ForceColumns {
    /// Whether the option applies to the column `name`.
    pub fn contains(&self, name: &str) -> bool {
        match self {
            ForceColumns::None => false,
            ForceColumns::All => true,
            ForceColumns::List(list) => list.iter().any(|c| c == name),
        }
    }

    fn is_set(&self) -> bool {
        !matches!(self, ForceColumns::None)
    }
}

/// What to do with a row whose value does not convert to its column's type (`ON_ERROR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Fail the COPY (the default).
    #[default]
    Stop,
    /// Skip the row.
    Ignore,
}

/// The data format options of a COPY, with Postgres' defaults for the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    /// Data format.
    pub format: CopyFormat,
    /// Field delimiter: tab in text, `,` in CSV.
    pub delimiter: u8,
    /// NULL marker, compared against the raw (not de-escaped, not unquoted) field: `\N` in text,
    /// the empty string in CSV.
    pub null: String,
    /// CSV quote character (`"`).
    pub quote: u8,
    /// CSV escape character (defaults to the quote character).
    pub escape: u8,
    /// A header line is present (`HEADER true` or `HEADER MATCH`).
    pub header: bool,
    /// `DEFAULT 'marker'`: a field equal to it takes the column default.
    pub default: Option<String>,
    /// `FORCE_NULL`: a quoted field equal to the NULL marker is NULL too (CSV).
    pub force_null: ForceColumns,
    /// `FORCE_NOT_NULL`: a field equal to the NULL marker is not NULL (CSV).
    pub force_not_null: ForceColumns,
    /// `ON_ERROR`.
    pub on_error: OnError,
    /// `REJECT_LIMIT`: with `ON_ERROR ignore`, the most rows that may be skipped.
    pub reject_limit: Option<u64>,
    /// `ENCODING`, as written.
    pub encoding: Option<String>,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions::for_format(CopyFormat::Text)
    }
}

impl CopyOptions {
    /// Postgres' defaults for `format`.
    pub fn for_format(format: CopyFormat) -> Self {
        let csv = format == CopyFormat::Csv;
        CopyOptions {
            format,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { String::new() } else { "\\N".into() },
            quote: b'"',
            escape: b'"',
            header: false,
            default: None,
            force_null: ForceColumns::None,
            force_not_null: ForceColumns::None,
            on_error: OnError::Stop,
            reject_limit: None,
            encoding: None,
        }
    }
}

/// Parses one `COPY` statement with the full Postgres parser and reads its options (new
/// `WITH (FORMAT csv, ...)` syntax and the legacy `WITH CSV HEADER`, `BINARY`, `DELIMITER AS`
/// spellings), refusing the option combinations Postgres refuses.
///
/// Also refuses client encodings whose multibyte characters may contain ASCII bytes (SJIS, BIG5,
/// GBK, UHC, GB18030, JOHAB): their rows cannot be split byte by byte.
pub fn parse_copy(sql: &str) -> Result<CopyStatement, CopyError> {
    let tree = pg_query_raw::parse_protobuf(sql).map_err(|e| CopyError::Syntax(e.message()))?;
    let mut stmts = tree.stmts.into_iter();
    let (Some(raw), None) = (stmts.next(), stmts.next()) else {
        return Err(CopyError::NotCopy(
            "expected exactly one COPY statement".into(),
        ));
    };
    let copy = match raw.stmt.and_then(|n| n.node) {
        Some(Node::CopyStmt(copy)) => copy,
        _ => return Err(CopyError::NotCopy("not a COPY statement".into())),
    };
    statement(*copy)
}

fn statement(copy: CopyStmt) -> Result<CopyStatement, CopyError> {
    let (schema, table) = match &copy.relation {
        Some(rel) => (
            (!rel.schemaname.is_empty()).then(|| rel.schemaname.clone()),
            rel.relname.clone(),
        ),
        None => (None, String::new()),
    };
    let mut columns = Vec::with_capacity(copy.attlist.len());
    for item in &copy.attlist {
        match &item.node {
            Some(Node::String(s)) => columns.push(s.sval.clone()),
            _ => return Err(CopyError::Syntax("unexpected COPY column list item".into())),
        }
    }
    let options = options(&copy.options, copy.is_from)?;
    Ok(CopyStatement {
        schema,
        table,
        columns,
        from: copy.is_from,
        stdio: copy.filename.is_empty() && !copy.is_program,
        query: copy.query.is_some(),
        where_clause: copy.where_clause.is_some(),
        options,
    })
}

/// Options as written, before defaults.
#[derive(Default)]
struct Given {
    format: Option<CopyFormat>,
    delimiter: Option<String>,
    null: Option<String>,
    default: Option<String>,
    header: Option<bool>,
    header_match: bool,
    quote: Option<String>,
    escape: Option<String>,
    force_quote: bool,
    force_null: Option<ForceColumns>,
    force_not_null: Option<ForceColumns>,
    freeze: Option<bool>,
    on_error: Option<OnError>,
    reject_limit: Option<u64>,
    encoding: Option<String>,
    log_verbosity: bool,
    /// Every option's name as written (lower case), in order.
    names: Vec<String>,
}

impl Given {
    /// The first of `options` given, upper case (as Postgres names it in errors).
    fn first_of(&self, options: &[&str]) -> Option<String> {
        let given = options
            .iter()
            .find(|o| self.names.iter().any(|n| n == *o))?;
        Some(given.to_ascii_uppercase())
    }
}

fn redundant() -> CopyError {
    CopyError::option("42601", "conflicting or redundant options")
}

fn set<T>(slot: &mut Option<T>, value: T) -> Result<(), CopyError> {
    if slot.is_some() {
        return Err(redundant());
    }
    *slot = Some(value);
    Ok(())
}

fn options(list: &[pg_query_raw::protobuf::Node], from: bool) -> Result<CopyOptions, CopyError> {
    let mut g = Given::default();
    for item in list {
        let Some(Node::DefElem(def)) = &item.node else {
            return Err(CopyError::Syntax("unexpected COPY option".into()));
        };
        let def: &DefElem = def;
        g.names.push(def.defname.clone());
        match def.defname.as_str() {
            "format" => {
                let formats = [
                    ("text", CopyFormat::Text),
                    ("csv", CopyFormat::Csv),
                    ("binary", CopyFormat::Binary),
                ];
                set(&mut g.format, keyword_arg(def, "format", formats)?)?;
            }
            "freeze" => set(&mut g.freeze, bool_arg(def)?)?,
            "delimiter" => set(&mut g.delimiter, string_arg(def)?)?,
            "null" => set(&mut g.null, string_arg(def)?)?,
            "default" => set(&mut g.default, string_arg(def)?)?,
            "header" => {
                let (header, matching) = header_arg(def)?;
                set(&mut g.header, header)?;
                g.header_match = matching;
            }
            "quote" => set(&mut g.quote, string_arg(def)?)?,
            "escape" => set(&mut g.escape, string_arg(def)?)?,
            "force_quote" => {
                if g.force_quote {
                    return Err(redundant());
                }
                columns_arg(def)?;
                g.force_quote = true;
            }
            "force_not_null" => set(&mut g.force_not_null, columns_arg(def)?)?,
            "force_null" => set(&mut g.force_null, columns_arg(def)?)?,
            "convert_selectively" => {}
            "encoding" => set(&mut g.encoding, string_arg(def)?)?,
            "on_error" => {
                let choices = [("stop", OnError::Stop), ("ignore", OnError::Ignore)];
                set(&mut g.on_error, keyword_arg(def, "ON_ERROR", choices)?)?;
            }
            "reject_limit" => {
                let limit = int_arg(def)?;
                if limit <= 0 {
                    return Err(CopyError::option(
                        "22023",
                        format!("REJECT_LIMIT ({limit}) must be greater than zero"),
                    ));
                }
                set(&mut g.reject_limit, limit as u64)?;
            }
            "log_verbosity" => {
                if g.log_verbosity {
                    return Err(redundant());
                }
                string_arg(def)?;
                g.log_verbosity = true;
            }
            other => {
                return Err(CopyError::option(
                    "42601",
                    format!("option \"{other}\" not recognized"),
                ))
            }
        }
    }
    check(g, from)
}

fn one_byte(value: &str, what: &str) -> Result<u8, CopyError> {
    match value.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(CopyError::option(
            "0A000",
            format!("COPY {what} must be a single one-byte character"),
        )),
    }
}

fn invalid(message: impl Into<String>) -> CopyError {
    CopyError::option("22023", message)
}

/// What the options are checked against: the format and the direction.
#[derive(Clone, Copy)]
struct Mode {
    csv: bool,
    binary: bool,
    from: bool,
}

/// Delimiter, NULL and DEFAULT strings, and HEADER: set and checked.
fn check_delimiters(g: &Given, o: &mut CopyOptions, mode: Mode) -> Result<(), CopyError> {
    let Mode { csv, binary, from } = mode;
    if binary {
        let text_only = ["delimiter", "null", "default", "header"];
        refuse_any(g, &text_only, "42601", |n| {
            format!("cannot specify {n} in BINARY mode")
        })?;
    }
    if let Some(d) = &g.delimiter {
        o.delimiter = one_byte(d, "delimiter")?;
    }
    if o.delimiter == b'\n' || o.delimiter == b'\r' {
        return Err(invalid(
            "COPY delimiter cannot be newline or carriage return",
        ));
    }
    if let Some(null) = &g.null {
        o.null = null.clone();
    }
    if o.null.contains(['\n', '\r']) {
        return Err(invalid(
            "COPY null representation cannot use newline or carriage return",
        ));
    }
    if let Some(default) = &g.default {
        if default.contains(['\n', '\r']) {
            return Err(invalid(
                "COPY default representation cannot use newline or carriage return",
            ));
        }
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&o.delimiter) {
        return Err(invalid(format!(
            "COPY delimiter cannot be \"{}\"",
            o.delimiter as char
        )));
    }
    if g.header_match && !from {
        return Err(CopyError::option(
            "0A000",
            "cannot use \"match\" with HEADER in COPY TO",
        ));
    }
    o.header = g.header.unwrap_or(false);
    Ok(())
}

/// The CSV-only options (QUOTE, ESCAPE, FORCE_*) and DEFAULT against the others.
fn check_quoting(g: &Given, o: &mut CopyOptions, mode: Mode) -> Result<(), CopyError> {
    let Mode { csv, binary, from } = mode;
    if !csv {
        let csv_only = [
            "quote",
            "escape",
            "force_quote",
            "force_not_null",
            "force_null",
        ];
        refuse_any(g, &csv_only, "0A000", |n| {
            format!("COPY {n} requires CSV mode")
        })?;
    }
    if let Some(q) = &g.quote {
        o.quote = one_byte(q, "quote")?;
    }
    o.escape = match &g.escape {
        Some(e) => one_byte(e, "escape")?,
        None => o.quote,
    };
    if csv {
        if [o.quote, o.escape]
            .iter()
            .any(|&b| b == b'\n' || b == b'\r')
        {
            return Err(CopyError::option(
                "0A000",
                "COPY quote and escape cannot be newline or carriage return here",
            ));
        }
        if o.delimiter == o.quote {
            return Err(invalid("COPY delimiter and quote must be different"));
        }
        if o.null.as_bytes().contains(&o.quote) {
            return Err(invalid(
                "CSV quote character must not appear in the NULL specification",
            ));
        }
    }
    if g.force_quote && from {
        return Err(CopyError::option(
            "42601",
            "COPY FORCE_QUOTE cannot be used with COPY FROM",
        ));
    }
    if !from {
        let from_only = ["force_not_null", "force_null"];
        let why = |n: &str| format!("COPY {n} cannot be used with COPY TO");
        refuse_any(g, &from_only, "42601", why)?;
    }
    if !binary && o.null.as_bytes().contains(&o.delimiter) {
        return Err(invalid(
            "COPY delimiter character must not appear in the NULL specification",
        ));
    }
    if let Some(default) = &g.default {
        if !from {
            return Err(CopyError::option(
                "0A000",
                "COPY DEFAULT cannot be used with COPY TO",
            ));
        }
        if default.as_bytes().contains(&o.delimiter) {
            return Err(invalid(
                "COPY delimiter character must not appear in the DEFAULT specification",
            ));
        }
        if csv && default.as_bytes().contains(&o.quote) {
            return Err(invalid(
                "CSV quote character must not appear in the DEFAULT specification",
            ));
        }
        if *default == o.null {
            return Err(invalid(
                "NULL specification and DEFAULT specification cannot be the same",
            ));
        }
    }
    Ok(())
}

/// ON_ERROR, REJECT_LIMIT and ENCODING.
fn check_error_handling(g: &Given, o: &mut CopyOptions, mode: Mode) -> Result<(), CopyError> {
    let Mode { binary, from, .. } = mode;
    o.on_error = g.on_error.unwrap_or_default();
    if o.on_error == OnError::Ignore && binary {
        return Err(CopyError::option(
            "0A000",
            "only ON_ERROR STOP is allowed in BINARY mode",
        ));
    }
    if o.on_error == OnError::Ignore && !from {
        return Err(CopyError::option(
            "0A000",
            "COPY ON_ERROR cannot be used with COPY TO",
        ));
    }
    if g.reject_limit.is_some() && o.on_error != OnError::Ignore {
        return Err(CopyError::option(
            "22023",
            "COPY REJECT_LIMIT requires ON_ERROR to be set to IGNORE",
        ));
    }
    o.reject_limit = g.reject_limit;
    if let Some(encoding) = &g.encoding {
        if !ascii_safe_encoding(encoding) {
            return Err(CopyError::option(
                "0A000",
                format!(
                    "COPY ENCODING \"{encoding}\" is not supported by the sharding router: \
                     use an encoding whose multibyte characters contain no ASCII bytes \
                     (UTF8, LATIN1, EUC_JP, ...)"
                ),
            ));
        }
    }
    Ok(())
}

/// Fills in the defaults and applies `ProcessCopyOptions`' cross-checks.
fn check(g: Given, from: bool) -> Result<CopyOptions, CopyError> {
    let format = g.format.unwrap_or_default();
    let csv = format == CopyFormat::Csv;
    let binary = format == CopyFormat::Binary;
    let mut o = CopyOptions::for_format(format);
    let mode = Mode { csv, binary, from };
    check_delimiters(&g, &mut o, mode)?;
    check_quoting(&g, &mut o, mode)?;
    o.default = g.default.clone();
    o.force_null = g.force_null.clone().unwrap_or_default();
    o.force_not_null = g.force_not_null.clone().unwrap_or_default();
    debug_assert!(csv || !(o.force_null.is_set() || o.force_not_null.is_set()));
    check_error_handling(&g, &mut o, mode)?;
    o.encoding = g.encoding;
    Ok(o)
}

/// False for the client-only encodings whose multibyte characters can embed ASCII bytes
/// (backslash, quote, delimiter): rows in them cannot be scanned byte by byte.
fn ascii_safe_encoding(name: &str) -> bool {
    let clean: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    !matches!(
        clean.as_str(),
        "sjis"
            | "shiftjis"
            | "mskanji"
            | "win932"
            | "windows932"
            | "shiftjis2004"
            | "big5"
            | "win950"
            | "windows950"
            | "gbk"
            | "win936"
            | "windows936"
            | "cp936"
            | "uhc"
            | "win949"
            | "windows949"
            | "gb18030"
            | "johab"
    )
}

/// Postgres' error `code` with `message(OPTION)` for the first of `options` given.
fn refuse_any(
    g: &Given,
    options: &[&str],
    code: &'static str,
    message: impl Fn(&str) -> String,
) -> Result<(), CopyError> {
    match g.first_of(options) {
        Some(name) => Err(CopyError::option(code, message(&name))),
        None => Ok(()),
    }
}

/// A keyword argument among `choices` (any case), else Postgres' 22023
/// `COPY <what> "<value>" not recognized`.
fn keyword_arg<T, const N: usize>(
    def: &DefElem,
    what: &str,
    choices: [(&str, T); N],
) -> Result<T, CopyError> {
    let value = string_arg(def)?;
    let wanted = value.to_ascii_lowercase();
    choices
        .into_iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, choice)| choice)
        .ok_or_else(|| {
            CopyError::option("22023", format!("COPY {what} \"{value}\" not recognized"))
        })
}

/// `defGetString`: strings, numbers and bare words all read as text.
fn string_arg(def: &DefElem) -> Result<String, CopyError> {
    let required = || CopyError::option("42601", format!("{} requires a parameter", def.defname));
    match def.arg.as_deref().and_then(|n| n.node.as_ref()) {
        Some(Node::String(s)) => Ok(s.sval.clone()),
        Some(Node::Integer(i)) => Ok(i.ival.to_string()),
        Some(Node::Float(f)) => Ok(f.fval.clone()),
        Some(Node::Boolean(b)) => Ok(if b.boolval { "true" } else { "false" }.into()),
        Some(Node::AStar(_)) => Ok("*".into()),
        None => Err(required()),
        Some(_) => Err(invalid(format!(
            "argument to option \"{}\" must be a string",
            def.defname
        ))),
    }
}

/// `defGetInt64`.
fn int_arg(def: &DefElem) -> Result<i64, CopyError> {
    match def.arg.as_deref().and_then(|n| n.node.as_ref()) {
        Some(Node::Integer(i)) => Ok(i64::from(i.ival)),
        Some(Node::Float(f)) => f
            .fval
            .parse()
            .map_err(|_| invalid(format!("{} requires a numeric value", def.defname))),
        None => Err(CopyError::option(
            "42601",
            format!("{} requires a numeric value", def.defname),
        )),
        Some(_) => Err(invalid(format!("{} requires a numeric value", def.defname))),
    }
}

/// Postgres' `parse_bool`: unique prefixes of true/false/yes/no, on/off, 1/0.
fn parse_bool(value: &str) -> Option<bool> {
    let v = value.to_ascii_lowercase();
    let prefix_of = |word: &str| !v.is_empty() && word.starts_with(v.as_str());
    match v.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        "on" => Some(true),
        "off" | "of" => Some(false),
        _ if prefix_of("true") || prefix_of("yes") => Some(true),
        _ if prefix_of("false") || prefix_of("no") => Some(false),
        _ => None,
    }
}

/// `defGetBoolean`.
fn bool_arg(def: &DefElem) -> Result<bool, CopyError> {
    let bad = || invalid(format!("{} requires a Boolean value", def.defname));
    match def.arg.as_deref().and_then(|n| n.node.as_ref()) {
        None => Ok(true),
        Some(Node::Boolean(b)) => Ok(b.boolval),
        Some(Node::Integer(i)) => match i.ival {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad()),
        },
        Some(_) => parse_bool(&string_arg(def)?).ok_or_else(bad),
    }
}

/// `defGetCopyHeaderChoice`: a Boolean or `match`; returns (header, match).
fn header_arg(def: &DefElem) -> Result<(bool, bool), CopyError> {
    if let Some(Node::String(s)) = def.arg.as_deref().and_then(|n| n.node.as_ref()) {
        if s.sval.eq_ignore_ascii_case("match") {
            return Ok((true, true));
        }
    }
    bool_arg(def).map(|b| (b, false)).map_err(|_| {
        invalid(format!(
            "{} requires a Boolean value or \"match\"",
            def.defname
        ))
    })
}

/// A column list or `*`.
fn columns_arg(def: &DefElem) -> Result<ForceColumns, CopyError> {
    match def.arg.as_deref().and_then(|n| n.node.as_ref()) {
        Some(Node::AStar(_)) => Ok(ForceColumns::All),
        Some(Node::List(list)) => list
            .items
            .iter()
            .map(|item| match &item.node {
                Some(Node::String(s)) => Ok(s.sval.clone()),
                _ => Err(invalid(format!(
                    "argument to option \"{}\" must be a list of column names",
                    def.defname
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ForceColumns::List),
        _ => Err(invalid(format!(
            "argument to option \"{}\" must be a list of column names",
            def.defname
        ))),
    }
}
