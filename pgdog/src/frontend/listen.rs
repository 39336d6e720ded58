//! LISTEN and UNLISTEN as pgdog answers them in transaction mode (see `backend::listener`):
//! a query that is exactly one such command, with the channel as Postgres reads it (a bare name
//! folded to lower case, a quoted one as written). Anything else (comments, several statements,
//! a name Postgres would truncate) goes to the server as before, which pins the client to it.

/// A LISTEN or UNLISTEN pgdog answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Command {
    Listen(String),
    Unlisten(String),
    UnlistenAll,
}

/// Postgres' longest identifier (NAMEDATALEN - 1): longer names are truncated by the server.
const MAX_NAME: usize = 63;

pub fn parse(sql: &str) -> Option<Command> {
    let text = sql.trim();
    let text = text.strip_suffix(';').unwrap_or(text).trim_end();
    let (verb, rest) = text.split_once(|c: char| c.is_ascii_whitespace())?;
    let rest = rest.trim();
    if verb.eq_ignore_ascii_case("unlisten") {
        if rest == "*" {
            return Some(Command::UnlistenAll);
        }
        return identifier(rest).map(Command::Unlisten);
    }
    if verb.eq_ignore_ascii_case("listen") {
        return identifier(rest).map(Command::Listen);
    }
    None
}

/// A channel name: `"quoted"` (`""` for a quote) as written, or a bare identifier in lower case.
fn identifier(s: &str) -> Option<String> {
    let name = match s.strip_prefix('"') {
        Some(quoted) => {
            let inner = quoted.strip_suffix('"')?;
            let mut out = String::new();
            let mut chars = inner.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '"' {
                    // Only a doubled quote may stand inside.
                    if chars.next() != Some('"') {
                        return None;
                    }
                }
                out.push(c);
            }
            out
        }
        None => {
            let mut chars = s.chars();
            let first = chars.next()?;
            let starts = first.is_ascii_alphabetic() || first == '_' || !first.is_ascii();
            let rest_ok =
                chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii());
            if !starts || !rest_ok {
                return None;
            }
            s.to_ascii_lowercase()
        }
    };
    (!name.is_empty() && name.len() <= MAX_NAME).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_postgres_would_run_as_one_command() {
        let listen = |c: &str| Some(Command::Listen(c.to_string()));
        assert_eq!(parse("LISTEN Jobs"), listen("jobs"));
        assert_eq!(parse("  listen jobs_2$ ;"), listen("jobs_2$"));
        assert_eq!(parse("LISTEN \"Jobs \"\"x\"\"\""), listen("Jobs \"x\""));
        assert_eq!(parse("LISTEN \"a;\";"), listen("a;"));
        assert_eq!(
            parse("unlisten JOBS"),
            Some(Command::Unlisten("jobs".into()))
        );
        assert_eq!(parse("UNLISTEN *;"), Some(Command::UnlistenAll));
        for other in [
            "LISTEN",
            "LISTEN *",
            "LISTEN a b",
            "LISTEN a; SELECT 1",
            "LISTEN /* c */ a",
            "LISTEN \"a\"b\"",
            "LISTEN \"\"",
            "LISTEN 1a",
            "SELECT 'LISTEN a'",
            "NOTIFY a",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
        assert_eq!(parse(&format!("LISTEN {}", "a".repeat(64))), None);
    }
}
