//! pg_query_raw: libpg_query's C parse tree converted straight into Rust, without Protobuf.
//!
//! The crates.io `pg_query` crate serialises the C tree to Protobuf bytes and decodes them again;
//! that round trip is most of its parse time. This crate links the very same libpg_query (the one
//! `pg_query` ships, so there is one copy in the binary) and converts the C tree directly:
//!
//! - [`parse`] / [`parse_protobuf`]: the full tree as `pg_query::protobuf` types, identical to
//!   `pg_query::parse`;
//! - [`deparse`]: a `pg_query::protobuf` tree back to SQL, building the C tree directly;
//! - [`fingerprint`], [`normalize`], [`scan`], [`split`]: the same results as `pg_query`'s;
//!   [`tokens`]: the scanner's tokens without the Protobuf result;
//! - [`router`]: a lean view with only what query routing needs, built without the full tree.
//!
//! The converters are generated at build time from libpg_query's mapping tables, so they cover
//! every node type of the grammar; an unknown node tag is an error, never a dropped subtree.
//! Postgres errors (longjmp) are caught in C (libpg_query's own entry points or our shim) and
//! never cross a Rust frame. Deep trees grow the stack on demand instead of overflowing it.

mod bindings;
mod context;
mod convert;
pub mod error;
pub mod router;
mod utility;

pub use error::{Error, Result};
pub use pg_query::protobuf;
pub use utility::{fingerprint, normalize, scan, split, token, tokens, Token};

use bindings as c;
use context::{cstr, take_error, with_raw_parse, Context};
use std::ffi::c_char;

/// Parses `sql` into the full `pg_query` tree (statements, plus pg_query's table, function and
/// filter-column summaries), identical to `pg_query::parse(sql, 0)`.
pub fn parse(sql: &str) -> Result<pg_query::ParseResult> {
    let (tree, stderr) = parse_with_stderr(sql)?;
    Ok(pg_query::ParseResult::new(tree, stderr))
}

/// Parses `sql` into the Protobuf-typed tree only (`pg_query::parse(sql, 0)?.protobuf`), without
/// pg_query's summaries.
pub fn parse_protobuf(sql: &str) -> Result<protobuf::ParseResult> {
    parse_with_stderr(sql).map(|(tree, _)| tree)
}

/// The node of the tree's first statement, to rewrite it in place.
pub fn first_statement_mut(tree: &mut protobuf::ParseResult) -> Option<&mut protobuf::node::Node> {
    tree.stmts.first_mut()?.stmt.as_mut()?.node.as_mut()
}

fn parse_with_stderr(sql: &str) -> Result<(protobuf::ParseResult, String)> {
    // SAFETY: the tree and the stderr buffer are valid while the closure runs; the conversion
    // copies everything into owned values.
    with_raw_parse(sql, |tree, stderr| unsafe {
        Ok((convert::out_parse_result(tree)?, cstr(stderr)))
    })
}

/// Refuses trees libpg_query's deparser cannot print: it would abort on an assertion (debug
/// builds) or print wrong SQL (release builds). Today: `GRANT`/`REVOKE` on object kinds its
/// deparser has no case for (`ON PARAMETER`, ...).
fn check_deparsable(tree: &protobuf::ParseResult) -> Result<()> {
    use protobuf::{node::Node, GrantTargetType, ObjectType};
    const SUPPORTED: &[ObjectType] = &[
        ObjectType::ObjectTable,
        ObjectType::ObjectSequence,
        ObjectType::ObjectFdw,
        ObjectType::ObjectForeignServer,
        ObjectType::ObjectFunction,
        ObjectType::ObjectProcedure,
        ObjectType::ObjectRoutine,
        ObjectType::ObjectDatabase,
        ObjectType::ObjectDomain,
        ObjectType::ObjectLanguage,
        ObjectType::ObjectLargeobject,
        ObjectType::ObjectSchema,
        ObjectType::ObjectTablespace,
        ObjectType::ObjectType,
    ];
    for stmt in &tree.stmts {
        if let Some(Node::GrantStmt(g)) = stmt.stmt.as_ref().and_then(|n| n.node.as_ref()) {
            if g.targtype == GrantTargetType::AclTargetObject as i32
                && !SUPPORTED.iter().any(|t| *t as i32 == g.objtype)
            {
                let kind = ObjectType::try_from(g.objtype)
                    .map(|t| t.as_str_name())
                    .unwrap_or("UNKNOWN");
                return Err(Error::Deparse(format!(
                    "GRANT/REVOKE on {kind} cannot be deparsed"
                )));
            }
        }
    }
    Ok(())
}

/// Runs only the C raw parser (no conversion) and returns the number of statements: the floor
/// any conversion adds to, for benchmarks.
#[doc(hidden)]
pub fn raw_parse_only(sql: &str) -> Result<usize> {
    // SAFETY: as in `parse_with_stderr`.
    with_raw_parse(sql, |tree, _| unsafe {
        Ok(convert::list_items(tree).len())
    })
}

/// Turns a tree back into SQL, identical to `pg_query::deparse(tree, Default::default())`.
pub fn deparse(tree: &protobuf::ParseResult) -> Result<String> {
    check_deparsable(tree)?;
    let _ctx = Context::enter();
    // SAFETY: the C tree is built in `_ctx`; pgqr_deparse catches Postgres errors (PG_TRY) and
    // returns malloc'd results that we free.
    unsafe {
        let list = convert::read_parse_result(tree)?;
        let mut out: *mut c_char = std::ptr::null_mut();
        let mut err: *mut c::PgQueryError = std::ptr::null_mut();
        c::pgqr_deparse(list, &mut out, &mut err);
        if !err.is_null() {
            libc::free(out as *mut libc::c_void);
            return Err(Error::Deparse(take_error(err).message()));
        }
        let sql = cstr(out);
        libc::free(out as *mut libc::c_void);
        Ok(sql)
    }
}
