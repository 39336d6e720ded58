//! Protocol messages: a [`Message`] is one framed message (tag, length and payload) held as
//! `Bytes`; builders make the messages pgdog sends, readers take apart the ones it inspects.
use super::encoding::Codec;
use super::error::ProtocolError;
use super::tag::{backend, field, frontend};
use bytes::{BufMut, Bytes, BytesMut};

/// One complete message, header included.
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    bytes: Bytes,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Message({:?}, {} bytes)",
            self.tag() as char,
            self.bytes.len()
        )
    }
}

impl Message {
    pub(crate) fn from_bytes(bytes: Bytes) -> Message {
        Message { bytes }
    }

    pub fn tag(&self) -> u8 {
        self.bytes[0]
    }

    /// The payload after tag and length.
    pub fn payload(&self) -> &[u8] {
        &self.bytes[5..]
    }

    /// The whole message as it goes on the wire.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.len() <= 5
    }

    /// A reader over the payload.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            data: self.payload(),
            what: What::Tag(self.tag()),
        }
    }
}

/// Builds a message with `tag` and a payload written by `f`.
pub fn build(tag: u8, f: impl FnOnce(&mut BytesMut)) -> Message {
    let mut b = BytesMut::with_capacity(64);
    b.put_u8(tag);
    b.put_i32(0);
    f(&mut b);
    let len = (b.len() - 1) as i32;
    b[1..5].copy_from_slice(&len.to_be_bytes());
    Message { bytes: b.freeze() }
}

/// A message with no payload (BindComplete, NoData, EmptyQueryResponse, CopyDone, ...).
pub fn empty(tag: u8) -> Message {
    build(tag, |_| {})
}

pub fn put_cstr(b: &mut BytesMut, s: &str) {
    b.put_slice(s.as_bytes());
    b.put_u8(0);
}

fn tag_name(tag: u8) -> &'static str {
    match tag {
        frontend::QUERY => "Query",
        frontend::PARSE => "Parse",
        frontend::BIND => "Bind",
        frontend::DESCRIBE => "Describe/DataRow",
        frontend::EXECUTE => "Execute/ErrorResponse",
        frontend::CLOSE => "Close/CommandComplete",
        frontend::SYNC => "Sync/ParameterStatus",
        backend::AUTHENTICATION => "Authentication",
        frontend::PASSWORD => "Password",
        backend::BACKEND_KEY_DATA => "BackendKeyData",
        backend::READY_FOR_QUERY => "ReadyForQuery",
        _ => "message",
    }
}

/// The first NUL among the first 16 bytes, two words at a time (a byte loop took 100
/// instructions for a query's text, callgrind); None: none there, or fewer bytes than 16.
#[inline]
fn nul_in_first_16(data: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let Some(head) = data.get(..16) else {
        return data.iter().position(|&b| b == 0);
    };
    for (i, word) in head.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().ok()?);
        // The lowest byte that is zero sets its high bit here (higher ones may be wrong).
        let zero = w.wrapping_sub(ONES) & !w & HIGHS;
        if zero != 0 {
            return Some(i * 8 + zero.trailing_zeros() as usize / 8);
        }
    }
    None
}

/// Reads fields of a payload, failing with a protocol error instead of panicking.
pub struct Reader<'a> {
    data: &'a [u8],
    what: What,
}

/// What a `Reader` reads, named only when it is malformed (naming each message's type up
/// front was 30 instructions a read, callgrind).
#[derive(Clone, Copy)]
enum What {
    Tag(u8),
    Named(&'static str),
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader {
            data,
            what: What::Named(what),
        }
    }

    #[cold]
    fn bad(&self) -> ProtocolError {
        ProtocolError::Malformed(match self.what {
            What::Tag(tag) => tag_name(tag),
            What::Named(what) => what,
        })
    }

    pub fn u8(&mut self) -> Result<u8, ProtocolError> {
        let (&b, rest) = self.data.split_first().ok_or_else(|| self.bad())?;
        self.data = rest;
        Ok(b)
    }

    pub fn i16(&mut self) -> Result<i16, ProtocolError> {
        let b = self.bytes(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    pub fn i32(&mut self) -> Result<i32, ProtocolError> {
        let b = self.bytes(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An Int16 count followed by that many items, each read by `item` (a negative count is
    /// malformed).
    pub fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, ProtocolError>,
    ) -> Result<Vec<T>, ProtocolError> {
        let n = usize::try_from(self.i16()?).map_err(|_| self.bad())?;
        // Sized up front (at most 32,767): collecting `Result`s would grow the vector instead,
        // and DataRow::parse runs per row of a merged answer.
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// An Int32 length followed by that many bytes; a negative length is NULL (`None`).
    pub fn nullable(&mut self) -> Result<Option<&'a [u8]>, ProtocolError> {
        match usize::try_from(self.i32()?) {
            Ok(len) => self.bytes(len).map(Some),
            Err(_) => Ok(None),
        }
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        if self.data.len() < n {
            return Err(self.bad());
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    /// The bytes up to the next NUL (consumed with it). `CStr` finds it with the standard
    /// library's memchr, several times faster than a byte loop on a query's text.
    fn until_nul(&mut self) -> Result<&'a [u8], ProtocolError> {
        let data = self.data;
        // Names are short, often empty: a look at the first bytes first (memchr's set-up was
        // 45 instructions a name, callgrind). Longer text goes to the memchr crate's search:
        // for pgbench -S's query 30 instructions where `CStr::from_bytes_until_nul` took 110.
        let end = match nul_in_first_16(data) {
            Some(end) => end,
            None => memchr::memchr(0, data).ok_or_else(|| self.bad())?,
        };
        self.data = &data[end + 1..];
        Ok(&data[..end])
    }

    /// A NUL-terminated string (UTF-8 checked).
    pub fn cstr(&mut self) -> Result<&'a str, ProtocolError> {
        let bytes = self.until_nul()?;
        std::str::from_utf8(bytes).map_err(|_| self.bad())
    }

    /// A statement or portal name in any encoding, as a key that tells every name apart: the
    /// name itself when it is UTF-8, else [`NAME_ESCAPE`] and each byte as the character of
    /// its number (a UTF-8 name starting with `NAME_ESCAPE` is escaped too, so no two names
    /// share a key).
    pub fn name(&mut self) -> Result<std::borrow::Cow<'a, str>, ProtocolError> {
        let bytes = self.until_nul()?;
        Ok(match std::str::from_utf8(bytes) {
            Ok(s) if !s.starts_with(NAME_ESCAPE) => std::borrow::Cow::Borrowed(s),
            _ => std::iter::once(NAME_ESCAPE)
                .chain(bytes.iter().map(|&b| char::from(b)))
                .collect::<String>()
                .into(),
        })
    }

    /// A NUL-terminated string in any encoding: as UTF-8 when it is, else a UTF-8 view with
    /// the other bytes replaced (U+FFFD).
    pub fn cstr_lossy(&mut self) -> Result<std::borrow::Cow<'a, str>, ProtocolError> {
        let bytes = self.until_nul()?;
        // The strict check first: it is much faster on valid UTF-8 (every query, nearly).
        Ok(match std::str::from_utf8(bytes) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(bytes),
        })
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    pub fn remaining(&self) -> usize {
        self.data.len()
    }
}

// ---- messages pgdog sends to clients ----

pub fn auth_ok() -> Message {
    build(b'R', |b| b.put_i32(0))
}

pub fn auth_cleartext() -> Message {
    build(b'R', |b| b.put_i32(3))
}

pub fn auth_md5(salt: [u8; 4]) -> Message {
    build(b'R', |b| {
        b.put_i32(5);
        b.put_slice(&salt);
    })
}

pub fn auth_sasl() -> Message {
    build(b'R', |b| {
        b.put_i32(10);
        put_cstr(b, "SCRAM-SHA-256");
        b.put_u8(0);
    })
}

pub fn auth_sasl_continue(data: &[u8]) -> Message {
    build(b'R', |b| {
        b.put_i32(11);
        b.put_slice(data);
    })
}

pub fn auth_sasl_final(data: &[u8]) -> Message {
    build(b'R', |b| {
        b.put_i32(12);
        b.put_slice(data);
    })
}

pub fn parameter_status(name: &str, value: &str) -> Message {
    build(b'S', |b| {
        put_cstr(b, name);
        put_cstr(b, value);
    })
}

pub fn backend_key_data(pid: i32, secret: &[u8]) -> Message {
    build(b'K', |b| {
        b.put_i32(pid);
        b.put_slice(secret);
    })
}

/// A message of fixed bytes: no allocation (the answers pgdog makes on every extended-protocol
/// transaction allocated and freed a buffer each, callgrind).
fn fixed(bytes: &'static [u8]) -> Message {
    Message::from_bytes(bytes::Bytes::from_static(bytes))
}

pub fn ready_for_query(status: super::TxStatus) -> Message {
    use super::TxStatus;
    fixed(match status {
        TxStatus::Idle => b"Z\0\0\0\x05I",
        TxStatus::InTransaction => b"Z\0\0\0\x05T",
        TxStatus::Failed => b"Z\0\0\0\x05E",
    })
}

pub fn command_complete(tag: &str) -> Message {
    build(b'C', |b| put_cstr(b, tag))
}

/// The row count a CommandComplete tag ends with (`INSERT 0 5`, `COPY 7`): 0 when it has none.
pub fn rows_in_tag(tag: &str) -> u64 {
    tag.rsplit(' ')
        .next()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0)
}

/// The row count of a CommandComplete message (see `rows_in_tag`).
pub fn rows_completed(m: &Message) -> u64 {
    m.reader().cstr().map_or(0, rows_in_tag)
}

pub fn parse_complete() -> Message {
    fixed(b"1\0\0\0\x04")
}

/// ParameterDescription with these type OIDs.
pub fn parameter_description(types: &[i32]) -> Message {
    build(b't', |b| {
        b.put_i16(types.len() as i16);
        for t in types {
            b.put_i32(*t);
        }
    })
}

pub fn close_complete() -> Message {
    fixed(b"3\0\0\0\x04")
}

/// NegotiateProtocolVersion: the newest minor version we support and options we do not.
pub fn negotiate_protocol_version(minor: i32, unsupported: &[String]) -> Message {
    build(b'v', |b| {
        b.put_i32(minor);
        b.put_i32(unsupported.len() as i32);
        for o in unsupported {
            put_cstr(b, o);
        }
    })
}

/// ErrorResponse (`E`) or NoticeResponse (`N`).
/// ERROR with the cursor position (1-based, in characters) of a syntax error.
pub fn error_at(code: &str, message: &str, position: usize) -> Message {
    build(b'E', |b| {
        for (field, value) in [
            (b'S', "ERROR"),
            (b'V', "ERROR"),
            (b'C', code),
            (b'M', message),
        ] {
            b.put_u8(field);
            put_cstr(b, value);
        }
        b.put_u8(b'P');
        put_cstr(b, &position.to_string());
        b.put_u8(0);
    })
}

pub fn error_response(severity: &str, code: &str, message: &str) -> Message {
    build(b'E', |b| {
        b.put_u8(b'S');
        put_cstr(b, severity);
        b.put_u8(b'V');
        put_cstr(b, severity);
        b.put_u8(b'C');
        put_cstr(b, code);
        b.put_u8(b'M');
        put_cstr(b, message);
        b.put_u8(0);
    })
}

/// An ERROR with this SQLSTATE.
pub fn error(code: &str, message: &str) -> Message {
    error_response("ERROR", code, message)
}

/// A FATAL error (the connection ends after it).
pub fn fatal(code: &str, message: &str) -> Message {
    error_response("FATAL", code, message)
}

// ---- messages pgdog sends to servers ----

pub fn startup(params: &[(&str, &str)]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i32(0);
    b.put_i32(196608);
    for (k, v) in params {
        put_cstr(&mut b, k);
        put_cstr(&mut b, v);
    }
    b.put_u8(0);
    let len = b.len() as i32;
    b[0..4].copy_from_slice(&len.to_be_bytes());
    b.freeze()
}

pub fn ssl_request() -> Bytes {
    let mut b = BytesMut::new();
    b.put_i32(8);
    b.put_i32(80877103);
    b.freeze()
}

pub fn cancel_request(pid: i32, secret: &[u8]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i32(12 + secret.len() as i32 - 4);
    b.put_i32(80877102);
    b.put_i32(pid);
    b.put_slice(secret);
    let len = b.len() as i32;
    b[0..4].copy_from_slice(&len.to_be_bytes());
    b.freeze()
}

pub fn password(data: &[u8]) -> Message {
    build(b'p', |b| b.put_slice(data))
}

pub fn sasl_initial_response(mechanism: &str, data: &[u8]) -> Message {
    build(b'p', |b| {
        put_cstr(b, mechanism);
        b.put_i32(data.len() as i32);
        b.put_slice(data);
    })
}

pub fn query(sql: &str) -> Message {
    query_bytes(sql.as_bytes())
}

/// Query of text in any encoding.
pub fn query_bytes(sql: &[u8]) -> Message {
    build(b'Q', |b| {
        b.put_slice(sql);
        b.put_u8(0);
    })
}

pub fn terminate() -> Message {
    build(b'X', |_| {})
}

pub fn sync() -> Message {
    fixed(b"S\0\0\0\x04")
}

/// Parse: statement name, query text, parameter type OIDs.
pub fn parse(name: &str, query: &str, param_types: &[i32]) -> Message {
    parse_bytes(name, query.as_bytes(), param_types)
}

/// Parse of query text in any encoding.
pub fn parse_bytes(name: &str, query: &[u8], param_types: &[i32]) -> Message {
    build(b'P', |b| {
        put_cstr(b, name);
        b.put_slice(query);
        b.put_u8(0);
        b.put_i16(param_types.len() as i16);
        for t in param_types {
            b.put_i32(*t);
        }
    })
}

/// Bind of the unnamed portal to the unnamed statement, parameters as text (`None`: NULL),
/// results as text.
pub fn bind_text(params: &[Option<&str>]) -> Message {
    build(b'B', |b| {
        put_cstr(b, "");
        put_cstr(b, "");
        b.put_i16(0);
        b.put_i16(params.len() as i16);
        for p in params {
            match p {
                Some(v) => {
                    b.put_i32(v.len() as i32);
                    b.extend_from_slice(v.as_bytes());
                }
                None => b.put_i32(-1),
            }
        }
        b.put_i16(0);
    })
}

/// Execute of the unnamed portal, every row.
pub fn execute_unnamed() -> Message {
    build(b'E', |b| {
        put_cstr(b, "");
        b.put_i32(0);
    })
}

// ---- readers ----

/// The fields of an ErrorResponse / NoticeResponse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorFields {
    pub severity: String,
    pub code: String,
    pub message: String,
}

pub fn read_error(m: &Message) -> Result<ErrorFields, ProtocolError> {
    let mut r = m.reader();
    let mut e = ErrorFields::default();
    loop {
        let kind = r.u8()?;
        if kind == 0 {
            break;
        }
        let value = r.cstr()?;
        match kind {
            field::SEVERITY => e.severity = value.to_string(),
            field::CODE => e.code = value.to_string(),
            field::MESSAGE => e.message = value.to_string(),
            _ => {}
        }
    }
    Ok(e)
}

/// The first character of a name key that is not the name itself (see [`Reader::name`]).
pub const NAME_ESCAPE: char = '\u{FFFF}';

/// A name key as text for messages: the name's bytes read as LATIN1 when it was escaped.
pub fn shown_name(key: &str) -> &str {
    key.strip_prefix(NAME_ESCAPE).unwrap_or(key)
}

/// A statement or portal name key (see [`Reader::name`]).
pub type Name<'a> = std::borrow::Cow<'a, str>;

/// A name key's bytes as the client sent them (see [`Reader::name`]).
pub fn name_bytes(key: &str) -> std::borrow::Cow<'_, [u8]> {
    match key.strip_prefix(NAME_ESCAPE) {
        Some(escaped) => escaped.chars().map(|c| c as u8).collect::<Vec<u8>>().into(),
        None => key.as_bytes().into(),
    }
}

/// Parse message fields.
pub struct ParseFields<'a> {
    pub name: std::borrow::Cow<'a, str>,
    /// The query text as the client sent it, in its encoding.
    pub text: &'a [u8],
    pub param_types: Vec<i32>,
}

impl<'a> ParseFields<'a> {
    /// The query text as UTF-8 (see [`Codec::decode`](crate::net::encoding::Codec)).
    pub fn query(&self, codec: Codec) -> Option<std::borrow::Cow<'a, str>> {
        codec.decode(self.text)
    }
}

pub fn read_parse(m: &Message) -> Result<ParseFields<'_>, ProtocolError> {
    let mut r = m.reader();
    let name = r.name()?;
    let text = r.until_nul()?;
    let param_types = r.list(Reader::i32)?;
    Ok(ParseFields {
        name,
        text,
        param_types,
    })
}

/// Bind: (portal, statement) names and the offset of what follows them.
pub fn read_bind_names(m: &Message) -> Result<(Name<'_>, Name<'_>, usize), ProtocolError> {
    let mut r = m.reader();
    let portal = r.name()?;
    let statement = r.name()?;
    let offset = m.payload().len() - r.remaining();
    Ok((portal, statement, offset))
}

/// Bind with another statement name, the rest copied (the portal's name as the client sent
/// it).
/// Written at the end of `out` (the bytes on their way to the server): no message of its own
/// to allocate.
/// `offset`: where the Bind's names end (`read_bind_names`).
pub fn rewrite_bind_into(
    m: &Message,
    offset: usize,
    statement: &str,
    out: &mut BytesMut,
) -> Result<(), ProtocolError> {
    let payload = m.payload();
    let portal_end = payload.iter().position(|&b| b == 0).unwrap_or(0);
    let rest = &payload[offset..];
    let len = 4 + portal_end + 1 + statement.len() + 1 + rest.len();
    let len = i32::try_from(len).map_err(|_| ProtocolError::TooLarge(len, i32::MAX as usize))?;
    out.put_u8(b'B');
    out.put_i32(len);
    out.put_slice(&payload[..=portal_end]);
    put_cstr(out, statement);
    out.put_slice(rest);
    Ok(())
}

/// Describe / Close: kind (`S` statement or `P` portal) and name.
pub fn read_target(m: &Message) -> Result<(u8, Name<'_>), ProtocolError> {
    let mut r = m.reader();
    let kind = r.u8()?;
    let name = r.name()?;
    if kind != b'S' && kind != b'P' {
        return Err(ProtocolError::Malformed("Describe/Close"));
    }
    Ok((kind, name))
}

/// Describe or Close of a statement under another name.
pub fn target(tag: u8, kind: u8, name: &str) -> Message {
    build(tag, |b| {
        b.put_u8(kind);
        put_cstr(b, name);
    })
}

/// The query text of a Query message.
pub fn read_query(m: &Message) -> Result<&str, ProtocolError> {
    m.reader().cstr()
}

/// A Query's text as the client sent it, in its encoding.
pub fn read_query_text(m: &Message) -> Result<&[u8], ProtocolError> {
    m.reader().until_nul()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_nul_is_found_in_any_place() {
        for len in 0..40 {
            for nul in 0..=len {
                for fill in [b'a', 0x80, 0xff, 0x01] {
                    let mut data = vec![fill; len];
                    if nul < len {
                        data[nul] = 0;
                        if nul + 1 < len {
                            data[len - 1] = 0;
                        }
                    }
                    let expected = data.iter().position(|&b| b == 0);
                    let found = nul_in_first_16(&data).or_else(|| memchr::memchr(0, &data));
                    assert_eq!(found, expected, "{data:?}");
                }
            }
        }
    }

    #[test]
    fn names_in_any_encoding_are_distinct_keys_and_read_back() {
        let names: [&[u8]; 4] = [
            b"caf\xe9",
            "café".as_bytes(),
            "\u{FFFF}x".as_bytes(),
            b"plain",
        ];
        let keys: Vec<String> = names
            .iter()
            .map(|n| {
                let m = build(b'P', |b| {
                    b.put_slice(n);
                    b.put_u8(0);
                    put_cstr(b, "SELECT 1");
                    b.put_i16(0);
                });
                read_parse(&m).unwrap().name.into_owned()
            })
            .collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(&*name_bytes(k), names[i]);
            assert!(keys.iter().filter(|o| *o == k).count() == 1, "{k:?}");
        }
        assert_eq!(keys[3], "plain");
    }

    #[test]
    fn builds_and_reads() {
        let p = parse("s1", "SELECT $1", &[23]);
        let f = read_parse(&p).unwrap();
        assert_eq!(
            (f.name.as_ref(), f.text, f.param_types),
            ("s1", &b"SELECT $1"[..], vec![23])
        );
        let e = error("42P01", "nope");
        let ef = read_error(&e).unwrap();
        assert_eq!((ef.code.as_str(), ef.message.as_str()), ("42P01", "nope"));
        let bind = build(b'B', |b| {
            put_cstr(b, "");
            put_cstr(b, "s1");
            b.put_i16(0);
            b.put_i16(0);
            b.put_i16(0);
        });
        let mut out = BytesMut::from(&b"S\0\0\0\x04"[..]);
        let offset = read_bind_names(&bind).unwrap().2;
        rewrite_bind_into(&bind, offset, "__pgdog_7", &mut out).unwrap();
        let re = Message::from_bytes(out.split_off(5).freeze());
        assert_eq!(re.len(), re.payload().len() + 5);
        assert_eq!(
            i32::from_be_bytes(re.bytes()[1..5].try_into().unwrap()) as usize,
            re.len() - 1
        );
        assert_eq!(read_bind_names(&re).unwrap().1, "__pgdog_7");
        assert_eq!(
            &re.payload()[read_bind_names(&re).unwrap().2..],
            &[0, 0, 0, 0, 0, 0]
        );
        assert!(read_parse(&build(b'P', |b| b.put_u8(b'x'))).is_err());
    }
}
