//! Client encodings by name, as Postgres reads them (`pg_char_to_encoding`: case and every
//! character that is not a letter or digit ignored, aliases such as `unicode` or `win932`), so
//! the `client_encoding` a client gives at login is reported back under Postgres' canonical
//! name (`utf-8` is `UTF8`, `euc-jp` is `EUC_JP`) and an unknown one is refused as Postgres
//! refuses it (22023).

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

#[cfg(test)]
mod tests {
    use super::canonical;

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
