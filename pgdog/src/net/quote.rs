//! SQL text pgdog writes itself: string literals and identifiers, quoted the way Postgres reads
//! them with `standard_conforming_strings` on (the default since PostgreSQL 9.1).

/// `'text'` as an SQL string literal (single quotes doubled).
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `"name"` as an SQL identifier (double quotes doubled); also an exact pg_dump pattern.
pub fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }
}
