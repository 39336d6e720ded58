//! The literals of a plain text read in one pass over its bytes, for the hot path: Postgres'
//! scanner (`pg_query_raw::tokens`) costs a memory context, a flex scanner and its tables per
//! call, 2 to 3 µs of a pgbench SELECT's 10 µs of shape work at 6,000 transactions/s (perf,
//! `benchmarks/results/router.md`), this a tenth of a microsecond.
//!
//! It reads a subset of the grammar's tokens and gives up (`None`: the scanner decides) on
//! anything else, so that whenever it answers, its literals are the scanner's: identifiers
//! (read whole, so digits in a name are never a number), `"quoted"` identifiers, `--` and
//! nested `/* */` comments, decimal integers and `digits.digits` decimals, `'...'` strings with
//! doubled quotes, operators and punctuation. It gives up on `$` (parameters, dollar quotes),
//! a quote right after a name or `&` (E'', B'', X'', N'', U&''), a string followed by another
//! (continued over a newline), a backslash in a string, a number followed by a letter, `_`,
//! `.` or `$` (exponents, hex, octal, binary, `1_000`, trailing junk), `.5`, and NUL. Debug
//! builds compare every answer with the scanner's (`super::literals`); the tests compare them
//! over the parser corpus.
use super::{numeric, string, Literal};
use pg_query_raw::router::Const;

/// The literals of `sql`, or `None` when it holds a form this does not read.
pub(super) fn literals(sql: &str) -> Option<Vec<Literal>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        i = match CLASS[c as usize] {
            // Spaces, operators, punctuation: most bytes of a text that are not in a word.
            OTHER => i + 1,
            IDENT => {
                let end = ident_end(b, i);
                if matches!(b.get(end), Some(b'\'')) {
                    return None;
                }
                end
            }
            _ => special(sql, i, &mut out)?,
        };
    }
    Some(out)
}

/// What follows the byte at `i`, which is not a plain one (see [`CLASS`]), when it is read.
fn special(sql: &str, i: usize, out: &mut Vec<Literal>) -> Option<usize> {
    let b = sql.as_bytes();
    Some(match b[i] {
        b'-' if b.get(i + 1) == Some(&b'-') => line_comment(b, i),
        b'/' if b.get(i + 1) == Some(&b'*') => block_comment(b, i)?,
        b'"' => quoted_identifier(b, i)?,
        b'\'' => {
            let end = string_end(b, i)?;
            let value = Const::String(string(sql.get(i..end)?)?);
            out.push(Literal {
                start: i,
                end,
                value,
            });
            end
        }
        b'0'..=b'9' => {
            let (end, value) = number(sql, i)?;
            out.push(Literal {
                start: i,
                end,
                value,
            });
            end
        }
        b'$' | b'\0' | b'\\' => return None,
        b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => return None,
        b'&' if b.get(i + 1) == Some(&b'\'') => return None,
        _ => i + 1,
    })
}

/// Byte classes: a byte that starts a word, one [`special`] looks at, or any other.
const OTHER: u8 = 0;
const IDENT: u8 = 1;
const SPECIAL: u8 = 2;
static CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 {
            IDENT
        } else if b.is_ascii_digit()
            || matches!(
                b,
                b'-' | b'/' | b'"' | b'\'' | b'$' | b'\0' | b'\\' | b'.' | b'&'
            )
        {
            SPECIAL
        } else {
            OTHER
        };
        c += 1;
    }
    t
};

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn ident_cont(c: u8) -> bool {
    ident_start(c) || c.is_ascii_digit() || c == b'$'
}

fn ident_end(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|&c| ident_cont(c)) {
        i += 1;
    }
    i
}

/// After a `--` comment: its newline is whitespace.
fn line_comment(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(b.len(), |p| i + p)
}

/// After a `/* */` comment (they nest); `None` when it does not end.
fn block_comment(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// After a `"quoted"` identifier (`""` inside); `None` when empty or it does not end.
fn quoted_identifier(b: &[u8], i: usize) -> Option<usize> {
    let end = quoted_end(b, i, b'"')?;
    (end > i + 2).then_some(end)
}

/// After the string at `i`; `None` when it does not end or another string follows it (the
/// scanner joins strings continued over a newline).
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && ident_cont(b[i - 1]) {
        return None;
    }
    let end = quoted_end(b, i, b'\'')?;
    let mut next = end;
    loop {
        match b.get(next) {
            Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c') => next += 1,
            Some(b'-') if b.get(next + 1) == Some(&b'-') => next = line_comment(b, next),
            Some(b'\'') => return None,
            _ => return Some(end),
        }
    }
}

/// After the closing `quote` of the quoted text at `i` (the quote doubled inside stands for
/// itself).
fn quoted_end(b: &[u8], i: usize, quote: u8) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += b.get(j..)?.iter().position(|&c| c == quote)?;
        if b.get(j + 1) == Some(&quote) {
            j += 2;
        } else {
            return Some(j + 1);
        }
    }
}

/// The number at `i` (a digit): its end and constant, as the scanner makes it (an integer
/// that does not fit in 32 bits is numeric).
fn number(sql: &str, i: usize) -> Option<(usize, Const)> {
    let b = sql.as_bytes();
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut end = digits(i);
    let decimal = b.get(end) == Some(&b'.');
    if decimal {
        if !b.get(end + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        end = digits(end + 1);
    }
    if b.get(end).is_some_and(|&c| ident_cont(c) || c == b'.') {
        return None;
    }
    let raw = sql.get(i..end)?;
    let value = match raw.parse::<i32>() {
        Ok(v) if !decimal => Const::Integer(v.into()),
        _ => numeric(raw)?,
    };
    Some((end, value))
}

#[cfg(test)]
mod tests;
