//! The COPY FROM row splitter: finds row boundaries in the client's CopyData stream exactly as
//! Postgres' `CopyReadLine` / binary tuple reader do, reads the sharding key field, asks the
//! placement callback for its shard and appends the row's bytes, unchanged, to that shard's
//! buffer. Lines and tuples may span CopyData messages; an incomplete trailing row waits for
//! the next [`CopySplitter::feed`].

use std::borrow::Cow;
use std::mem;

use bytes::BytesMut;
use memchr::{memchr2, memchr3};

use super::fields::{self, FieldError};
use super::{CopyError, CopyFormat, CopyOptions, ForceColumns, KeyError, OnError};

/// The sharding key of one row, as the placement callback sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyField<'a> {
    /// SQL NULL (the NULL marker, or a binary field of length -1).
    Null,
    /// Text or CSV: the de-escaped / unquoted value (borrowed from the row when it needed no
    /// decoding).
    Text(Cow<'a, str>),
    /// Binary: the field's bytes, in the column type's binary send format.
    Binary(&'a [u8]),
}

/// The shard of a COPY row's key under `table`'s sharding (`None`: every row goes to output 0):
/// the one placement the proxy's COPY and the resharding copy share.
pub fn place_key(
    table: Option<&crate::router::schema::TableSharding>,
    field: KeyField<'_>,
) -> Result<usize, KeyError> {
    let Some(t) = table else {
        return Ok(0);
    };
    let r = match field {
        KeyField::Null => t.shard_of_text(None),
        KeyField::Text(s) => t.shard_of_text(Some(&s)),
        KeyField::Binary(b) => t.shard_of_binary(b),
    };
    r.map_err(|e| KeyError::new(e.code(), e.to_string()))
}

/// The placement callback: the shard of a key, or why the key cannot be placed.
pub type Place<'p> = dyn FnMut(KeyField<'_>) -> Result<usize, KeyError> + 'p;

/// Binary COPY file signature.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// Binary COPY file trailer: a field count of -1.
const TRAILER: [u8; 2] = [0xff, 0xff];
/// Signature, flags and header extension length.
const BINARY_HEADER: usize = 19;

/// Line ending style, fixed by the first line as in Postgres.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Unknown,
    Nl,
    Cr,
    CrNl,
}

/// Where a complete text/CSV row ends in the buffer being scanned.
struct RowEnd {
    /// Index just past the row's line ending.
    end: usize,
    /// Bytes of line ending at the end of the row (0 for a last row without one).
    eol_len: usize,
    /// Line endings inside CSV quotes (they count as lines in error messages).
    embedded: u64,
    /// Text: an unescaped `\.` was seen on this line.
    end_marker: bool,
}

/// Splits the data of one `COPY ... FROM STDIN` by shard.
///
/// Use one splitter per COPY: [`feed`](Self::feed) every CopyData payload, then
/// [`finish`](Self::finish) at CopyDone. Each complete row (text/CSV line, binary tuple) is
/// appended unchanged to `out[shard]`; the header line (text/CSV `HEADER`) and the binary file
/// header go to every shard, the binary trailer is added to every shard by `finish`, and the
/// text end marker `\.` (and anything after it) is dropped.
#[derive(Debug)]
pub struct CopySplitter {
    format: CopyFormat,
    delimiter: u8,
    null: Vec<u8>,
    quote: u8,
    escape: u8,
    /// Escape for line scanning: `None` when it is the quote character.
    line_escape: Option<u8>,
    header: bool,
    default: Option<Vec<u8>>,
    force_null_columns: ForceColumns,
    force_not_null_columns: ForceColumns,
    force_null: bool,
    force_not_null: bool,
    on_error_ignore: bool,
    reject_limit: Option<u64>,
    key_column: usize,
    key_name: Option<String>,
    table: Option<String>,
    shards: usize,

    /// Start of a row (or binary item) that did not end in the data fed so far.
    pending: Vec<u8>,
    /// Decoded key, reused from row to row.
    scratch: Vec<u8>,
    /// Lines (text/CSV) or tuples (binary) read so far.
    line: u64,
    rows: u64,
    skipped: u64,
    header_done: bool,
    /// Text end marker or binary trailer seen.
    done: bool,
    finished: bool,
    eol: Eol,
    // Line scanning state, kept across feeds.
    in_quote: bool,
    last_was_esc: bool,
    backslash: bool,
    cr: bool,
    end_marker: bool,
    embedded: u64,
    /// Binary: bytes of `pending` needed before the item can be parsed further.
    need: usize,
}

impl CopySplitter {
    /// A splitter for data in `options`' format whose sharding key is field `key_column`
    /// (0-based, in the COPY column list order, or the table's column order without a list),
    /// placing rows on `shards` shards.
    ///
    /// `FORCE_NULL *` / `FORCE_NOT_NULL *` apply to the key; for their column-list forms, call
    /// [`with_context`](Self::with_context) with the key column's name.
    pub fn new(options: &CopyOptions, key_column: usize, shards: usize) -> Self {
        CopySplitter {
            format: options.format,
            delimiter: options.delimiter,
            null: options.null.as_bytes().to_vec(),
            quote: options.quote,
            escape: options.escape,
            line_escape: (options.escape != options.quote).then_some(options.escape),
            header: options.header && options.format != CopyFormat::Binary,
            default: options.default.as_ref().map(|d| d.as_bytes().to_vec()),
            force_null: options.force_null == ForceColumns::All,
            force_not_null: options.force_not_null == ForceColumns::All,
            force_null_columns: options.force_null.clone(),
            force_not_null_columns: options.force_not_null.clone(),
            on_error_ignore: options.on_error == OnError::Ignore,
            reject_limit: options.reject_limit,
            key_column,
            key_name: None,
            table: None,
            shards,
            pending: Vec::new(),
            scratch: Vec::new(),
            line: 0,
            rows: 0,
            skipped: 0,
            header_done: false,
            done: false,
            finished: false,
            eol: Eol::Unknown,
            in_quote: false,
            last_was_esc: false,
            backslash: false,
            cr: false,
            end_marker: false,
            embedded: 0,
            need: 0,
        }
    }

    /// Names the table (for error messages: `COPY users, line 3: ...`) and the key column (for
    /// error messages and the column-list forms of `FORCE_NULL` / `FORCE_NOT_NULL`).
    pub fn with_context(mut self, table: &str, key_column_name: &str) -> Self {
        self.table = Some(table.to_string());
        self.force_null = self.force_null_columns.contains(key_column_name);
        self.force_not_null = self.force_not_null_columns.contains(key_column_name);
        self.key_name = Some(key_column_name.to_string());
        self
    }

    /// Rows placed on a shard so far (not counting the header, the trailer or skipped rows).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Rows dropped because of `ON_ERROR ignore` (their key did not convert).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Feeds one CopyData payload. Complete rows are appended to `out[shard]` (`out` has one
    /// buffer per shard); a trailing incomplete row is kept for the next call.
    pub fn feed(
        &mut self,
        data: &[u8],
        place: &mut Place<'_>,
        out: &mut [BytesMut],
    ) -> Result<(), CopyError> {
        self.check_call(out)?;
        match self.format {
            CopyFormat::Binary => self.feed_binary(data, place, out),
            _ => self.feed_lines(data, place, out),
        }
    }

    /// Ends the data at CopyDone: a last line without a line ending is still a row; the binary
    /// trailer is appended to every shard's buffer. Errors on a truncated binary file or an
    /// unterminated CSV quote, as Postgres does.
    pub fn finish(&mut self, place: &mut Place<'_>, out: &mut [BytesMut]) -> Result<(), CopyError> {
        self.check_call(out)?;
        self.finished = true;
        if self.format == CopyFormat::Binary {
            if !self.header_done {
                return Err(self.fail(0, "22P04", "COPY file signature not recognized"));
            }
            if !self.pending.is_empty() {
                return Err(self.fail(self.line + 1, "22P04", "unexpected EOF in COPY data"));
            }
            for buf in out.iter_mut() {
                buf.extend_from_slice(&TRAILER);
            }
            return Ok(());
        }
        if self.done || self.pending.is_empty() {
            return Ok(());
        }
        let eol_len = if self.cr {
            // A carriage return at the very end: Postgres sees the NUL pad after it.
            self.cr = false;
            if self.eol == Eol::CrNl {
                return Err(self.stray_cr());
            }
            self.eol = Eol::Cr;
            1
        } else {
            0
        };
        if self.in_quote {
            return Err(self.fail(
                self.line + 1 + self.embedded,
                "22P04",
                "unterminated CSV quoted field",
            ));
        }
        let end = RowEnd {
            end: 0,
            eol_len,
            embedded: mem::take(&mut self.embedded),
            end_marker: mem::take(&mut self.end_marker),
        };
        let row = mem::take(&mut self.pending);
        let result = self.complete_row(&row, &end, place, out);
        self.pending = row;
        self.pending.clear();
        result
    }

    fn check_call(&self, out: &[BytesMut]) -> Result<(), CopyError> {
        if self.finished {
            return Err(CopyError::Internal(
                "COPY splitter used after finish".into(),
            ));
        }
        if out.len() != self.shards {
            return Err(CopyError::Internal(format!(
                "COPY splitter got {} output buffers for {} shards",
                out.len(),
                self.shards
            )));
        }
        Ok(())
    }

    fn fail(&self, line: u64, code: &'static str, message: impl Into<String>) -> CopyError {
        CopyError::Row {
            table: self.table.clone(),
            line,
            code,
            message: message.into(),
        }
    }

    // ---------------------------------------------------------------- text and CSV

    fn feed_lines(
        &mut self,
        mut data: &[u8],
        place: &mut Place<'_>,
        out: &mut [BytesMut],
    ) -> Result<(), CopyError> {
        if self.done {
            return Ok(());
        }
        if !self.pending.is_empty() {
            let Some(end) = self.scan(data)? else {
                self.pending.extend_from_slice(data);
                return Ok(());
            };
            let mut row = mem::take(&mut self.pending);
            row.extend_from_slice(&data[..end.end]);
            let result = self.complete_row(&row, &end, place, out);
            row.clear();
            self.pending = row;
            result?;
            data = &data[end.end..];
        }
        while !data.is_empty() && !self.done {
            match self.scan(data)? {
                Some(end) => {
                    self.complete_row(&data[..end.end], &end, place, out)?;
                    data = &data[end.end..];
                }
                None => {
                    self.pending.extend_from_slice(data);
                    break;
                }
            }
        }
        Ok(())
    }

    /// Continues scanning the current row into `buf`; `None` when the row does not end in it.
    fn scan(&mut self, buf: &[u8]) -> Result<Option<RowEnd>, CopyError> {
        if self.cr {
            let Some(&next) = buf.first() else {
                return Ok(None);
            };
            self.cr = false;
            return if next == b'\n' {
                self.eol = Eol::CrNl;
                Ok(Some(self.row_end(1, 2)))
            } else if self.eol == Eol::CrNl {
                Err(self.stray_cr())
            } else {
                self.eol = Eol::Cr;
                Ok(Some(self.row_end(0, 1)))
            };
        }
        match self.format {
            CopyFormat::Csv => self.scan_csv(buf),
            _ => self.scan_text(buf),
        }
    }

    fn scan_text(&mut self, buf: &[u8]) -> Result<Option<RowEnd>, CopyError> {
        let mut i = 0;
        if self.backslash {
            let Some(&next) = buf.first() else {
                return Ok(None);
            };
            self.backslash = false;
            self.end_marker |= next == b'.';
            i = 1;
        }
        loop {
            let Some(off) = memchr3(b'\\', b'\n', b'\r', &buf[i..]) else {
                return Ok(None);
            };
            let p = i + off;
            match buf[p] {
                b'\\' => match buf.get(p + 1) {
                    None => {
                        self.backslash = true;
                        return Ok(None);
                    }
                    Some(&next) => {
                        // The escaped byte is data, even a newline; `\.` is the end marker.
                        self.end_marker |= next == b'.';
                        i = p + 2;
                    }
                },
                b'\n' => return self.newline(p),
                _ => return self.carriage_return(buf, p),
            }
        }
    }

    fn scan_csv(&mut self, buf: &[u8]) -> Result<Option<RowEnd>, CopyError> {
        let mut i = 0;
        loop {
            if self.in_quote {
                // Postgres counts this byte as a line inside quotes.
                let counted = if self.eol == Eol::Nl { b'\n' } else { b'\r' };
                let hit = match self.line_escape {
                    Some(escape) => memchr3(self.quote, escape, counted, &buf[i..]),
                    None => memchr2(self.quote, counted, &buf[i..]),
                };
                let Some(off) = hit else {
                    if i < buf.len() {
                        self.last_was_esc = false;
                    }
                    return Ok(None);
                };
                let p = i + off;
                let c = buf[p];
                if off > 0 {
                    self.last_was_esc = false;
                }
                if Some(c) == self.line_escape {
                    self.last_was_esc = !self.last_was_esc;
                }
                if c == self.quote && !self.last_was_esc {
                    self.in_quote = false;
                }
                if Some(c) != self.line_escape {
                    self.last_was_esc = false;
                }
                if self.in_quote && c == counted {
                    self.embedded += 1;
                }
                i = p + 1;
            } else {
                let Some(off) = memchr3(self.quote, b'\n', b'\r', &buf[i..]) else {
                    return Ok(None);
                };
                let p = i + off;
                match buf[p] {
                    b'\n' => return self.newline(p),
                    b'\r' => return self.carriage_return(buf, p),
                    _ => {
                        self.in_quote = true;
                        self.last_was_esc = false;
                        i = p + 1;
                    }
                }
            }
        }
    }

    fn newline(&mut self, p: usize) -> Result<Option<RowEnd>, CopyError> {
        if matches!(self.eol, Eol::Cr | Eol::CrNl) {
            let message = if self.format == CopyFormat::Csv {
                "unquoted newline found in data"
            } else {
                "literal newline found in data"
            };
            return Err(self.fail(self.line + 1 + self.embedded, "22P04", message));
        }
        self.eol = Eol::Nl;
        Ok(Some(self.row_end(p + 1, 1)))
    }

    fn carriage_return(&mut self, buf: &[u8], p: usize) -> Result<Option<RowEnd>, CopyError> {
        match self.eol {
            Eol::Nl => Err(self.stray_cr()),
            Eol::Cr => Ok(Some(self.row_end(p + 1, 1))),
            Eol::Unknown | Eol::CrNl => match buf.get(p + 1) {
                None => {
                    self.cr = true;
                    Ok(None)
                }
                Some(b'\n') => {
                    self.eol = Eol::CrNl;
                    Ok(Some(self.row_end(p + 2, 2)))
                }
                Some(_) if self.eol == Eol::CrNl => Err(self.stray_cr()),
                Some(_) => {
                    self.eol = Eol::Cr;
                    Ok(Some(self.row_end(p + 1, 1)))
                }
            },
        }
    }

    fn stray_cr(&self) -> CopyError {
        let message = if self.format == CopyFormat::Csv {
            "unquoted carriage return found in data"
        } else {
            "literal carriage return found in data"
        };
        self.fail(self.line + 1 + self.embedded, "22P04", message)
    }

    fn row_end(&mut self, end: usize, eol_len: usize) -> RowEnd {
        self.in_quote = false;
        self.last_was_esc = false;
        RowEnd {
            end,
            eol_len,
            embedded: mem::take(&mut self.embedded),
            end_marker: mem::take(&mut self.end_marker),
        }
    }

    /// Routes one complete line (`row` includes its line ending).
    fn complete_row(
        &mut self,
        row: &[u8],
        end: &RowEnd,
        place: &mut Place<'_>,
        out: &mut [BytesMut],
    ) -> Result<(), CopyError> {
        self.line += 1 + end.embedded;
        let line = &row[..row.len() - end.eol_len];
        if end.end_marker {
            if line == b"\\." && end.eol_len > 0 {
                self.done = true;
                return Ok(());
            }
            return Err(self.fail(
                self.line,
                "22P04",
                "end-of-copy marker is not alone on its line",
            ));
        }
        if self.header && !self.header_done {
            self.header_done = true;
            for buf in out.iter_mut() {
                buf.extend_from_slice(row);
            }
            return Ok(());
        }
        let mut scratch = mem::take(&mut self.scratch);
        let key = match self.format {
            CopyFormat::Csv => self.csv_key(line, &mut scratch),
            _ => self.text_key(line, &mut scratch),
        };
        let placed = match key {
            Ok(key) => place(key),
            Err(e) => {
                self.scratch = scratch;
                return Err(self.fail(self.line, e.code, e.message));
            }
        };
        self.scratch = scratch;
        self.route(placed, row, out)
    }

    /// Sends a row to the shard `placed` names, or skips / fails it.
    fn route(
        &mut self,
        placed: Result<usize, KeyError>,
        row: &[u8],
        out: &mut [BytesMut],
    ) -> Result<(), CopyError> {
        match placed {
            Ok(shard) if shard < self.shards => {
                out[shard].extend_from_slice(row);
                self.rows += 1;
                Ok(())
            }
            Ok(shard) => Err(self.fail(
                self.line,
                "XX000",
                format!(
                    "placement chose shard {shard}, but there are {} shards",
                    self.shards
                ),
            )),
            Err(e) if self.on_error_ignore && e.is_soft() => {
                self.skipped += 1;
                match self.reject_limit {
                    Some(limit) if self.skipped > limit => Err(self.fail(
                        self.line,
                        "22000",
                        format!(
                            "skipped more than REJECT_LIMIT ({limit}) rows due to data type \
                             incompatibility"
                        ),
                    )),
                    _ => Ok(()),
                }
            }
            Err(e) => Err(self.fail(self.line, e.code, e.message)),
        }
    }

    fn missing_key(&self) -> FieldError {
        let message = match &self.key_name {
            Some(name) => format!("missing data for column \"{name}\""),
            None => format!(
                "missing data for the sharding key column (field {})",
                self.key_column + 1
            ),
        };
        FieldError::new("22P04", message)
    }

    fn default_key(&self) -> FieldError {
        FieldError::new(
            "0A000",
            "the DEFAULT marker cannot be used for the sharding key column: the shard of a row \
             must be known before the default is computed",
        )
    }

    fn text_key<'a>(
        &self,
        line: &'a [u8],
        scratch: &'a mut Vec<u8>,
    ) -> Result<KeyField<'a>, FieldError> {
        let mut start = 0;
        for _ in 0..self.key_column {
            match fields::text_field(line, start, self.delimiter).next {
                Some(next) => start = next,
                None => return Err(self.missing_key()),
            }
        }
        let raw = &line[start..fields::text_field(line, start, self.delimiter).raw_end];
        if raw == self.null.as_slice() {
            return Ok(KeyField::Null);
        }
        if self.default.as_deref() == Some(raw) {
            return Err(self.default_key());
        }
        if memchr::memchr(b'\\', raw).is_none() {
            return Ok(KeyField::Text(Cow::Borrowed(fields::utf8(raw)?)));
        }
        fields::text_unescape(raw, scratch);
        Ok(KeyField::Text(Cow::Borrowed(fields::utf8(scratch)?)))
    }

    fn csv_key<'a>(
        &self,
        line: &'a [u8],
        scratch: &'a mut Vec<u8>,
    ) -> Result<KeyField<'a>, FieldError> {
        let (d, q, e) = (self.delimiter, self.quote, self.escape);
        let mut start = 0;
        for _ in 0..self.key_column {
            match fields::csv_field(line, start, d, q, e, None)?.next {
                Some(next) => start = next,
                None => return Err(self.missing_key()),
            }
        }
        scratch.clear();
        let field = fields::csv_field(line, start, d, q, e, Some(&mut *scratch))?;
        let raw = &line[start..field.raw_end];
        if !field.saw_quote && raw == self.null.as_slice() {
            if !self.force_not_null {
                return Ok(KeyField::Null);
            }
        } else if self.default.as_deref() == Some(raw) {
            return Err(self.default_key());
        }
        let value: &'a [u8] = if field.saw_quote { scratch } else { raw };
        if self.force_null && value == self.null.as_slice() {
            return Ok(KeyField::Null);
        }
        Ok(KeyField::Text(Cow::Borrowed(fields::utf8(value)?)))
    }

    // ---------------------------------------------------------------- binary

    fn feed_binary(
        &mut self,
        mut data: &[u8],
        place: &mut Place<'_>,
        out: &mut [BytesMut],
    ) -> Result<(), CopyError> {
        while !self.pending.is_empty() {
            let take = (self.need - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < self.need {
                return Ok(());
            }
            let mut item = mem::take(&mut self.pending);
            let result = self.binary_item(&item, place, out);
            match result {
                Ok(Some(_)) | Err(_) => item.clear(),
                Ok(None) => {}
            }
            self.pending = item;
            result?;
        }
        while !data.is_empty() {
            match self.binary_item(data, place, out)? {
                Some(used) => data = &data[used..],
                None => {
                    self.pending.extend_from_slice(data);
                    break;
                }
            }
        }
        Ok(())
    }

    /// Parses the binary item (file header or tuple) at the start of `buf` and routes it:
    /// `Some(length)`, or `None` with `self.need` set to the bytes needed to parse further.
    fn binary_item(
        &mut self,
        buf: &[u8],
        place: &mut Place<'_>,
        out: &mut [BytesMut],
    ) -> Result<Option<usize>, CopyError> {
        if self.done {
            return Err(self.fail(
                self.line + 1,
                "22P04",
                "received copy data after EOF marker",
            ));
        }
        if !self.header_done {
            return self.binary_header(buf, out);
        }
        let Some(count) = be_i16(buf, 0) else {
            self.need = 2;
            return Ok(None);
        };
        if count == -1 {
            self.done = true;
            return Ok(Some(2));
        }
        let line = self.line + 1;
        if count < 0 || count as usize <= self.key_column {
            return Err(self.fail(
                line,
                "22P04",
                format!(
                    "row field count is {count}, expected at least {}",
                    self.key_column + 1
                ),
            ));
        }
        let mut pos = 2;
        let mut key = None;
        for field in 0..count as usize {
            let Some(len) = be_i32(buf, pos) else {
                self.need = pos + 4;
                return Ok(None);
            };
            pos += 4;
            if len == -1 {
                if field == self.key_column {
                    key = Some(None);
                }
                continue;
            }
            if len < -1 {
                return Err(self.fail(line, "22P04", "invalid field size"));
            }
            let end = pos + len as usize;
            if buf.len() < end {
                self.need = end;
                return Ok(None);
            }
            if field == self.key_column {
                key = Some(Some(pos..end));
            }
            pos = end;
        }
        self.line = line;
        let key = match key {
            Some(Some(range)) => KeyField::Binary(&buf[range]),
            _ => KeyField::Null,
        };
        let placed = place(key);
        self.route(placed, &buf[..pos], out)?;
        Ok(Some(pos))
    }

    fn binary_header(
        &mut self,
        buf: &[u8],
        out: &mut [BytesMut],
    ) -> Result<Option<usize>, CopyError> {
        let n = buf.len().min(SIGNATURE.len());
        if buf[..n] != SIGNATURE[..n] {
            return Err(self.fail(0, "22P04", "COPY file signature not recognized"));
        }
        let (Some(flags), Some(extension)) = (be_i32(buf, 11), be_i32(buf, 15)) else {
            self.need = BINARY_HEADER;
            return Ok(None);
        };
        if flags & (1 << 16) != 0 {
            return Err(self.fail(0, "22P04", "invalid COPY file header (WITH OIDS)"));
        }
        if (flags & !(1 << 16)) >> 16 != 0 {
            return Err(self.fail(
                0,
                "22P04",
                "unrecognized critical flags in COPY file header",
            ));
        }
        if extension < 0 {
            return Err(self.fail(0, "22P04", "invalid COPY file header (wrong length)"));
        }
        let total = BINARY_HEADER + extension as usize;
        if buf.len() < total {
            self.need = total;
            return Ok(None);
        }
        for shard in out.iter_mut() {
            shard.extend_from_slice(&buf[..total]);
        }
        self.header_done = true;
        Ok(Some(total))
    }
}

fn be_i16(buf: &[u8], at: usize) -> Option<i16> {
    let bytes = buf.get(at..at + 2)?;
    Some(i16::from_be_bytes([bytes[0], bytes[1]]))
}

fn be_i32(buf: &[u8], at: usize) -> Option<i32> {
    let bytes = buf.get(at..at + 4)?;
    Some(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}
