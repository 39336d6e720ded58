//! Fingerprint, normalize, scan and split: thin wrappers over libpg_query's C entry points (the
//! same ones `pg_query` calls), returning the same values without any Protobuf decoding.
use crate::bindings as c;
use crate::context::{c_string, cstr};
use crate::error::{Error, Result};
use pg_query::protobuf;

/// The fingerprint of `sql` with pg_query's fingerprint options (`pg_query::FingerprintOptions`
/// bits; 0 for the defaults), equal to `pg_query::fingerprint(sql, 0, options)`.
pub fn fingerprint(sql: &str, options: i32) -> Result<pg_query::Fingerprint> {
    let input = c_string(sql)?;
    // SAFETY: the C function catches Postgres errors; its result is freed below.
    unsafe {
        let r = c::pg_query_fingerprint_opts(input.as_ptr(), 0, options);
        let out = if r.error.is_null() {
            Ok(pg_query::Fingerprint {
                value: r.fingerprint,
                hex: cstr(r.fingerprint_str),
            })
        } else {
            Err(copy_error(r.error))
        };
        c::pg_query_free_fingerprint_result(r);
        out
    }
}

/// `sql` with constants replaced by `$n` parameters, equal to `pg_query::normalize`.
pub fn normalize(sql: &str) -> Result<String> {
    let input = c_string(sql)?;
    // SAFETY: as above.
    unsafe {
        let r = c::pg_query_normalize(input.as_ptr());
        let out = if r.error.is_null() {
            Ok(cstr(r.normalized_query))
        } else {
            Err(copy_error(r.error))
        };
        c::pg_query_free_normalize_result(r);
        out
    }
}

/// The scanner's tokens, equal to `pg_query::scan(sql)` (built from the C tokens directly).
pub fn scan(sql: &str) -> Result<protobuf::ScanResult> {
    let input = c_string(sql)?;
    // SAFETY: as above; the token array is read before it is freed.
    unsafe {
        let r = c::pg_query_scan_tokens(input.as_ptr());
        let out = if r.error.is_null() {
            let tokens = if r.tokens.is_null() || r.n_tokens <= 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(r.tokens, r.n_tokens as usize)
            };
            Ok(protobuf::ScanResult {
                version: c::PG_VERSION_NUM as i32,
                tokens: tokens
                    .iter()
                    .map(|t| protobuf::ScanToken {
                        start: t.start,
                        end: t.end,
                        token: t.token as i32,
                        keyword_kind: t.keyword_kind as i32,
                    })
                    .collect(),
            })
        } else {
            Err(copy_error(r.error))
        };
        c::pg_query_free_scan_tokens_result(r);
        out
    }
}

/// A token of Postgres' scanner: its byte range in the text and its grammar token number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub token: i32,
}

/// Grammar token numbers of the literal tokens (PostgreSQL 18's grammar).
pub mod token {
    use crate::bindings as c;
    pub const ICONST: i32 = c::PgQueryToken_PG_QUERY_TOKEN_ICONST as i32;
    pub const FCONST: i32 = c::PgQueryToken_PG_QUERY_TOKEN_FCONST as i32;
    pub const SCONST: i32 = c::PgQueryToken_PG_QUERY_TOKEN_SCONST as i32;
    pub const USCONST: i32 = c::PgQueryToken_PG_QUERY_TOKEN_USCONST as i32;
    pub const BCONST: i32 = c::PgQueryToken_PG_QUERY_TOKEN_BCONST as i32;
    pub const XCONST: i32 = c::PgQueryToken_PG_QUERY_TOKEN_XCONST as i32;
    pub const PARAM: i32 = c::PgQueryToken_PG_QUERY_TOKEN_PARAM as i32;

    /// A literal (number, string, bit string) or a `$n` parameter.
    pub fn is_literal_or_param(t: i32) -> bool {
        matches!(
            t,
            ICONST | FCONST | SCONST | USCONST | BCONST | XCONST | PARAM
        )
    }
}

/// The tokens of `sql` for which `keep` holds, in order, from Postgres' own scanner (the same
/// tokens [`scan`] reports, without building the Protobuf result).
pub fn tokens(sql: &str, keep: impl Fn(i32) -> bool) -> Result<Vec<Token>> {
    let input = c_string(sql)?;
    // SAFETY: as in `scan`; offsets are checked against `sql` before they are handed out.
    unsafe {
        let r = c::pg_query_scan_tokens(input.as_ptr());
        let out = if r.error.is_null() {
            let all = if r.tokens.is_null() || r.n_tokens <= 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(r.tokens, r.n_tokens as usize)
            };
            all.iter()
                .filter(|t| keep(t.token as i32))
                .map(|t| {
                    let (start, end) = (t.start as usize, t.end as usize);
                    if start <= end && end <= sql.len() {
                        Ok(Token {
                            start,
                            end,
                            token: t.token as i32,
                        })
                    } else {
                        Err(Error::Other(format!("scan: bad range {start}..{end}")))
                    }
                })
                .collect()
        } else {
            Err(copy_error(r.error))
        };
        c::pg_query_free_scan_tokens_result(r);
        out
    }
}

/// The statements of `sql`, split with the parser, equal to `pg_query::split_with_parser`.
pub fn split(sql: &str) -> Result<Vec<&str>> {
    let input = c_string(sql)?;
    // SAFETY: as above; locations are byte offsets into `sql`, checked before slicing.
    unsafe {
        let r = c::pg_query_split_with_parser(input.as_ptr());
        let out = if r.error.is_null() {
            let stmts = if r.stmts.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(r.stmts, r.n_stmts as usize)
            };
            stmts
                .iter()
                .map(|s| {
                    let (start, len) = ((**s).stmt_location as usize, (**s).stmt_len as usize);
                    sql.get(start..start + len)
                        .ok_or_else(|| Error::Other(format!("split: bad range {start}+{len}")))
                })
                .collect()
        } else {
            Err(copy_error(r.error))
        };
        c::pg_query_free_split_result(r);
        out
    }
}

/// Copies a result's error (the result's free function releases the original).
unsafe fn copy_error(err: *const c::PgQueryError) -> Error {
    Error::Parse {
        message: cstr((*err).message),
        cursorpos: (*err).cursorpos,
    }
}
