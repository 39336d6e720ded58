//! Reading one field of a complete text or CSV row the way Postgres' `CopyReadAttributesText`
//! and `CopyReadAttributesCSV` read it: the raw bytes (for the NULL and DEFAULT marker checks)
//! and the de-escaped / unquoted value. Only the sharding key is decoded; the fields before it
//! are skipped with `memchr`.

use memchr::{memchr, memchr2};

/// A field that could not be read, before the row context is added.
pub(super) struct FieldError {
    pub code: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            code,
            message: message.into(),
        }
    }
}

/// Where a field ends.
pub(super) struct FieldEnd {
    /// End of the raw field (exclusive): the delimiter, or the end of the line.
    pub raw_end: usize,
    /// Start of the next field when a delimiter ended this one.
    pub next: Option<usize>,
    /// CSV: the field had a quoted part (so it is never NULL by the marker).
    pub saw_quote: bool,
}

/// Text format: finds the end of the field starting at `start`. A backslash makes the next byte
/// data (an escaped delimiter does not end the field); a lone backslash at the end of the line
/// is not part of the raw field, as in Postgres.
pub(super) fn text_field(line: &[u8], start: usize, delimiter: u8) -> FieldEnd {
    let mut pos = start;
    loop {
        let Some(off) = memchr2(delimiter, b'\\', &line[pos..]) else {
            return FieldEnd {
                raw_end: line.len(),
                next: None,
                saw_quote: false,
            };
        };
        let p = pos + off;
        if line[p] == delimiter {
            return FieldEnd {
                raw_end: p,
                next: Some(p + 1),
                saw_quote: false,
            };
        }
        if p + 1 >= line.len() {
            return FieldEnd {
                raw_end: p,
                next: None,
                saw_quote: false,
            };
        }
        pos = p + 2;
    }
}

fn octal(b: u8) -> Option<u8> {
    (b'0'..=b'7').contains(&b).then(|| b - b'0')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Text format: decodes the backslash escapes of a raw field (`\t`, `\n`, `\\`, octal `\123`,
/// hex `\x1F`, any other escaped byte literally) into `out`.
pub(super) fn text_unescape(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut pos = 0;
    while pos < raw.len() {
        let Some(off) = memchr(b'\\', &raw[pos..]) else {
            out.extend_from_slice(&raw[pos..]);
            return;
        };
        let p = pos + off;
        out.extend_from_slice(&raw[pos..p]);
        let Some(&c) = raw.get(p + 1) else {
            return;
        };
        pos = p + 2;
        let byte = match c {
            b'0'..=b'7' => {
                let mut val = c - b'0';
                for _ in 0..2 {
                    match raw.get(pos).copied().and_then(octal) {
                        Some(d) => {
                            val = (val << 3).wrapping_add(d);
                            pos += 1;
                        }
                        None => break,
                    }
                }
                val
            }
            b'x' => match raw.get(pos).copied().and_then(hex) {
                Some(d) => {
                    let mut val = d;
                    pos += 1;
                    if let Some(d2) = raw.get(pos).copied().and_then(hex) {
                        val = (val << 4) | d2;
                        pos += 1;
                    }
                    val
                }
                None => b'x',
            },
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            other => other,
        };
        out.push(byte);
    }
}

/// CSV: reads the field starting at `start`, appending its unquoted value to `out` when given.
/// Quotes may open and close anywhere in the field; inside quotes the escape character makes a
/// following quote or escape character data.
pub(super) fn csv_field(
    line: &[u8],
    start: usize,
    delimiter: u8,
    quote: u8,
    escape: u8,
    mut out: Option<&mut Vec<u8>>,
) -> Result<FieldEnd, FieldError> {
    let mut push = |bytes: &[u8]| {
        if let Some(out) = out.as_mut() {
            out.extend_from_slice(bytes);
        }
    };
    let mut cur = start;
    let mut saw_quote = false;
    loop {
        // Outside quotes: up to a delimiter or a quote.
        let Some(off) = memchr2(delimiter, quote, &line[cur..]) else {
            push(&line[cur..]);
            return Ok(FieldEnd {
                raw_end: line.len(),
                next: None,
                saw_quote,
            });
        };
        let p = cur + off;
        push(&line[cur..p]);
        if line[p] == delimiter {
            return Ok(FieldEnd {
                raw_end: p,
                next: Some(p + 1),
                saw_quote,
            });
        }
        saw_quote = true;
        cur = p + 1;
        // Inside quotes: up to the closing quote.
        loop {
            let hit = if escape == quote {
                memchr(quote, &line[cur..])
            } else {
                memchr2(quote, escape, &line[cur..])
            };
            let Some(off) = hit else {
                return Err(FieldError::new("22P04", "unterminated CSV quoted field"));
            };
            let p = cur + off;
            push(&line[cur..p]);
            let c = line[p];
            if c == escape {
                if let Some(&next) = line.get(p + 1) {
                    if next == escape || next == quote {
                        push(&[next]);
                        cur = p + 2;
                        continue;
                    }
                }
            }
            cur = p + 1;
            if c == quote {
                break;
            }
            push(&[c]);
        }
    }
}

/// The key value as UTF-8, or Postgres' invalid-byte-sequence error (22021). NUL bytes are
/// refused like Postgres refuses them in text.
pub(super) fn utf8(bytes: &[u8]) -> Result<&str, FieldError> {
    let bad = |at: usize, len: usize| {
        let shown: Vec<String> = bytes[at..(at + len.max(1)).min(bytes.len())]
            .iter()
            .map(|b| format!("0x{b:02x}"))
            .collect();
        FieldError::new(
            "22021",
            format!(
                "invalid byte sequence for encoding \"UTF8\": {}",
                shown.join(" ")
            ),
        )
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        bad(at, e.error_len().unwrap_or(bytes.len() - at))
    })?;
    if let Some(at) = memchr(0, bytes) {
        return Err(bad(at, 1));
    }
    Ok(text)
}
