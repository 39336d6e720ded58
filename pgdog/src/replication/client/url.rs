//! Connection URLs: `postgres://user[:password]@host[:port]/database` (also `postgresql://`,
//! percent-encoded user and password, query parameters ignored) to a [`ServerTarget`].
use super::{ReplicationError, Result};
use crate::backend::ServerTarget;

/// Parses a connection URL.
pub fn parse_url(url: &str) -> Result<ServerTarget> {
    let bad = |reason| ReplicationError::Url {
        url: redact(url),
        reason,
    };
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
        .ok_or_else(|| bad("the scheme must be postgres:// or postgresql://"))?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, database) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = authority
        .rsplit_once('@')
        .ok_or_else(|| bad("a user is needed"))?;
    let (user, password) = match userinfo.split_once(':') {
        Some((u, p)) => (u, Some(decode(p).ok_or_else(|| bad("bad %-escape"))?)),
        None => (userinfo, None),
    };
    let user = decode(user).ok_or_else(|| bad("bad %-escape"))?;
    if user.is_empty() {
        return Err(bad("a user is needed"));
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().map_err(|_| bad("the port is not a number"))?),
        None => (hostport, 5432),
    };
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    let database = decode(database).ok_or_else(|| bad("bad %-escape"))?;
    Ok(ServerTarget {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
        database: if database.is_empty() {
            user.clone()
        } else {
            database
        },
        user,
        password,
        pass_through: None,
    })
}

/// The URL with its password hidden, for error messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
            None => url.to_string(),
        },
        _ => url.to_string(),
    }
}

/// Percent-decoding.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("postgres://app:p%40ss@db.local:6000/shop?sslmode=disable").unwrap();
        assert_eq!(
            (
                t.user.as_str(),
                t.password.as_deref(),
                t.host.as_str(),
                t.port
            ),
            ("app", Some("p@ss"), "db.local", 6000)
        );
        assert_eq!(t.database, "shop");
        let t = parse_url("postgresql://postgres@127.0.0.1/").unwrap();
        assert_eq!(
            (t.port, t.database.as_str(), t.password),
            (5432, "postgres", None)
        );
        assert!(parse_url("mysql://a@b/c").is_err());
        assert!(parse_url("postgres://host/db").is_err());
        let e = parse_url("postgres://u:secret@h:x/db")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret") && e.contains("port"), "{e}");
    }
}
