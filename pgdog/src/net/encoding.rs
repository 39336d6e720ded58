//! Client encodings by name, as Postgres reads them (`pg_char_to_encoding`: case and every
//! character that is not a letter or digit ignored, aliases such as `unicode` or `win932`), so
//! the `client_encoding` a client gives at login is reported back under Postgres' canonical
//! name (`utf-8` is `UTF8`, `euc-jp` is `EUC_JP`) and an unknown one is refused as Postgres
//! refuses it (22023).
//!
//! [`Codec`] reads text in a client's encoding for pgdog's own use (the router, statement
//! classification, the shared prepared statements): the client's bytes are always what reaches
//! the server; pgdog only converts text it writes itself (a sharded query it rewrote) back.
use std::borrow::Cow;

/// Postgres' encoding names, each a valid client encoding.
const CANONICAL: &[&str] = &[
    "SQL_ASCII",
    "EUC_JP",
    "EUC_CN",
    "EUC_KR",
    "EUC_TW",
    "EUC_JIS_2004",
    "UTF8",
    "MULE_INTERNAL",
    "LATIN1",
    "LATIN2",
    "LATIN3",
    "LATIN4",
    "LATIN5",
    "LATIN6",
    "LATIN7",
    "LATIN8",
    "LATIN9",
    "LATIN10",
    "WIN1256",
    "WIN1258",
    "WIN866",
    "WIN874",
    "KOI8R",
    "WIN1251",
    "WIN1252",
    "ISO_8859_5",
    "ISO_8859_6",
    "ISO_8859_7",
    "ISO_8859_8",
    "WIN1250",
    "WIN1253",
    "WIN1254",
    "WIN1255",
    "WIN1257",
    "KOI8U",
    "SJIS",
    "BIG5",
    "GBK",
    "UHC",
    "GB18030",
    "JOHAB",
    "SHIFT_JIS_2004",
];

/// Other spellings Postgres accepts (already cleaned: lower case, letters and digits), with
/// the encoding they name.
const ALIASES: &[(&str, &str)] = &[
    ("abc", "WIN1258"),
    ("alt", "WIN866"),
    ("iso88591", "LATIN1"),
    ("iso88592", "LATIN2"),
    ("iso88593", "LATIN3"),
    ("iso88594", "LATIN4"),
    ("iso88599", "LATIN5"),
    ("iso885910", "LATIN6"),
    ("iso885913", "LATIN7"),
    ("iso885914", "LATIN8"),
    ("iso885915", "LATIN9"),
    ("iso885916", "LATIN10"),
    ("koi8", "KOI8R"),
    ("mskanji", "SJIS"),
    ("shiftjis", "SJIS"),
    ("tcvn", "WIN1258"),
    ("tcvn5712", "WIN1258"),
    ("unicode", "UTF8"),
    ("vscii", "WIN1258"),
    ("win", "WIN1251"),
    ("win932", "SJIS"),
    ("win936", "GBK"),
    ("win949", "UHC"),
    ("win950", "BIG5"),
    ("windows932", "SJIS"),
    ("windows936", "GBK"),
    ("windows949", "UHC"),
    ("windows950", "BIG5"),
];

/// The name as Postgres compares it: lower case, letters and digits only.
fn clean(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Postgres' name for the encoding `name` stands for; None when Postgres knows no such
/// encoding.
pub fn canonical(name: &str) -> Option<&'static str> {
    let wanted = clean(name);
    if let Some(found) = CANONICAL.iter().find(|c| clean(c) == wanted) {
        return Some(found);
    }
    if let Some(rest) = wanted.strip_prefix("windows") {
        // windows1250 ... windows1258, windows866, windows874: WIN + the number.
        let win = format!("win{rest}");
        return CANONICAL.iter().copied().find(|c| clean(c) == win);
    }
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == wanted)
        .map(|(_, c)| *c)
}

/// How pgdog reads text in one client encoding (`client_encoding`, Postgres' name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// UTF8, and SQL_ASCII (whose bytes reach a UTF8 server unconverted and are checked as
    /// UTF-8 there).
    #[default]
    Utf8,
    /// LATIN1: every byte is the code point of the same number.
    Latin1,
    /// An ISO 8859 encoding WHATWG reads as its Windows superset (LATIN5 as windows-1254):
    /// bytes 0x80-0x9F are C1 controls here, as in Postgres.
    IsoViaWindows(&'static encoding_rs::Encoding),
    /// An encoding `encoding_rs` reads as Postgres does.
    Whatwg(&'static encoding_rs::Encoding),
    /// An encoding pgdog cannot read (EUC_TW, JOHAB, MULE_INTERNAL, EUC_JIS_2004,
    /// SHIFT_JIS_2004).
    Unreadable(&'static str),
}

impl Codec {
    /// The codec for `client_encoding = name` (any spelling Postgres accepts).
    pub fn of(name: &str) -> Codec {
        use encoding_rs as e;
        let Some(name) = canonical(name) else {
            return Codec::Utf8;
        };
        let whatwg = match name {
            "UTF8" | "SQL_ASCII" => return Codec::Utf8,
            "LATIN1" => return Codec::Latin1,
            "LATIN5" => return Codec::IsoViaWindows(e::WINDOWS_1254),
            "LATIN2" => e::ISO_8859_2,
            "LATIN3" => e::ISO_8859_3,
            "LATIN4" => e::ISO_8859_4,
            "LATIN6" => e::ISO_8859_10,
            "LATIN7" => e::ISO_8859_13,
            "LATIN8" => e::ISO_8859_14,
            "LATIN9" => e::ISO_8859_15,
            "LATIN10" => e::ISO_8859_16,
            "ISO_8859_5" => e::ISO_8859_5,
            "ISO_8859_6" => e::ISO_8859_6,
            "ISO_8859_7" => e::ISO_8859_7,
            "ISO_8859_8" => e::ISO_8859_8,
            "WIN866" => e::IBM866,
            "WIN874" => e::WINDOWS_874,
            "WIN1250" => e::WINDOWS_1250,
            "WIN1251" => e::WINDOWS_1251,
            "WIN1252" => e::WINDOWS_1252,
            "WIN1253" => e::WINDOWS_1253,
            "WIN1254" => e::WINDOWS_1254,
            "WIN1255" => e::WINDOWS_1255,
            "WIN1256" => e::WINDOWS_1256,
            "WIN1257" => e::WINDOWS_1257,
            "WIN1258" => e::WINDOWS_1258,
            "KOI8R" => e::KOI8_R,
            "KOI8U" => e::KOI8_U,
            "EUC_JP" => e::EUC_JP,
            "SJIS" => e::SHIFT_JIS,
            "EUC_KR" | "UHC" => e::EUC_KR,
            "EUC_CN" | "GBK" => e::GBK,
            "GB18030" => e::GB18030,
            "BIG5" => e::BIG5,
            other => return Codec::Unreadable(other),
        };
        Codec::Whatwg(whatwg)
    }

    pub fn is_utf8(&self) -> bool {
        matches!(self, Codec::Utf8)
    }

    /// Whether text in this encoding sorts as its bytes do in UTF-8 (by code point): UTF8 and
    /// LATIN1 (whose bytes are code points).
    pub fn orders_text_as_bytes(&self) -> bool {
        matches!(self, Codec::Utf8 | Codec::Latin1)
    }

    /// `bytes` as UTF-8 text; None when they are not valid in this encoding as pgdog reads it,
    /// or when writing the text back would not give the same bytes (so text pgdog rewrites
    /// says exactly what the client's did).
    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Option<Cow<'a, str>> {
        if bytes.is_ascii() {
            // Safety: ASCII is UTF-8. (`is_ascii` reads a word a step: about 20 instructions
            // for `pgbench -S`'s query where `from_utf8` took 100, callgrind.)
            return Some(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(bytes)
            }));
        }
        if let Ok(ascii) = std::str::from_utf8(bytes) {
            // ASCII reads the same in every encoding pgdog reads (none of them reuses bytes
            // below 0x80 inside another character without a byte above it first).
            if self.is_utf8() || ascii.is_ascii() {
                return Some(Cow::Borrowed(ascii));
            }
        }
        let text: String = match self {
            Codec::Utf8 | Codec::Unreadable(_) => return None,
            Codec::Latin1 => bytes.iter().map(|&b| b as char).collect(),
            Codec::IsoViaWindows(e) => iso_decode(e, bytes)?,
            Codec::Whatwg(e) => e
                .decode_without_bom_handling_and_without_replacement(bytes)?
                .into_owned(),
        };
        (self.encode(&text).as_deref() == Some(bytes)).then_some(Cow::Owned(text))
    }

    /// `text` in this encoding; None when a character has no place in it.
    pub fn encode<'a>(&self, text: &'a str) -> Option<Cow<'a, [u8]>> {
        if self.is_utf8() || text.is_ascii() {
            return Some(Cow::Borrowed(text.as_bytes()));
        }
        let bytes: Vec<u8> = match self {
            Codec::Utf8 => unreachable!("handled above"),
            Codec::Unreadable(_) => return None,
            Codec::Latin1 => text
                .chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect::<Option<_>>()?,
            Codec::IsoViaWindows(e) => {
                let mut out = Vec::with_capacity(text.len());
                for c in text.chars() {
                    if u8::try_from(u32::from(c)).is_ok_and(is_c1) {
                        out.push(c as u8);
                    } else {
                        out.extend_from_slice(
                            &Codec::Whatwg(e).encode(c.encode_utf8(&mut [0; 4]))?,
                        );
                    }
                }
                out
            }
            Codec::Whatwg(e) => {
                let (bytes, _, unmappable) = e.encode(text);
                if unmappable {
                    return None;
                }
                bytes.into_owned()
            }
        };
        Some(Cow::Owned(bytes))
    }

    /// What pgdog says when it cannot read a client's text.
    pub fn unreadable(&self) -> String {
        match self {
            Codec::Unreadable(name) => format!(
                "pgdog cannot read query text in client_encoding {name}; \
                 use another client_encoding (UTF8, LATIN1-10, WIN125x, EUC_JP, SJIS, GBK, ...)"
            ),
            _ => "query text is not valid in the client's encoding as pgdog reads it".into(),
        }
    }
}

fn is_c1(b: u8) -> bool {
    (0x80..0xa0).contains(&b)
}

/// An ISO 8859 reading through its Windows superset: C1 controls (0x80-0x9F) byte for byte.
fn iso_decode(e: &'static encoding_rs::Encoding, bytes: &[u8]) -> Option<String> {
    let mut text = String::with_capacity(bytes.len() * 2);
    for chunk in bytes.split_inclusive(|b| is_c1(*b)) {
        let (head, c1) = match chunk.split_last() {
            Some((last, head)) if is_c1(*last) => (head, Some(*last)),
            _ => (chunk, None),
        };
        text.push_str(&e.decode_without_bom_handling_and_without_replacement(head)?);
        text.extend(c1.map(char::from));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::{canonical, Codec};

    #[test]
    fn text_in_each_encoding_reads_and_writes_back() {
        for (encoding, bytes, text) in [
            ("LATIN1", &b"caf\xe9"[..], "café"),
            ("LATIN9", b"\xa4uro", "€uro"),
            ("LATIN5", b"\xfe\x85", "ş\u{85}"),
            ("WIN1252", b"\x80", "€"),
            ("EUC_JP", b"\xc6\xfc\xcb\xdc", "日本"),
            ("SJIS", b"\x83\x5c", "ソ"),
            ("KOI8R", b"\xd2\xd5\xd3", "рус"),
            ("UTF8", "é".as_bytes(), "é"),
        ] {
            let codec = Codec::of(encoding);
            assert_eq!(codec.decode(bytes).as_deref(), Some(text), "{encoding}");
            assert_eq!(codec.encode(text).as_deref(), Some(bytes), "{encoding}");
        }
        assert_eq!(Codec::of("UTF8").decode(b"caf\xe9"), None);
        assert_eq!(Codec::of("EUC_JP").decode(b"\xc6"), None);
        assert_eq!(Codec::of("LATIN1").encode("日本"), None);
        assert_eq!(Codec::of("MULE_INTERNAL").decode(b"\x81"), None);
        assert_eq!(
            Codec::of("MULE_INTERNAL").decode(b"ascii").as_deref(),
            Some("ascii")
        );
    }

    #[test]
    fn names_as_postgres_reads_them() {
        for (given, expected) in [
            ("utf-8", Some("UTF8")),
            ("UTF8", Some("UTF8")),
            ("unicode", Some("UTF8")),
            ("euc-jp", Some("EUC_JP")),
            ("latin9", Some("LATIN9")),
            ("ISO-8859-15", Some("LATIN9")),
            ("iso_8859_5", Some("ISO_8859_5")),
            ("Windows-1252", Some("WIN1252")),
            ("win932", Some("SJIS")),
            ("Shift_JIS", Some("SJIS")),
            ("sql_ascii", Some("SQL_ASCII")),
            ("klingon", None),
            ("windows-9999", None),
            ("", None),
        ] {
            assert_eq!(canonical(given), expected, "{given}");
        }
    }
}
