//! `auth_hba_file`: access rules in pg_hba.conf's format, read with the rest of the
//! configuration. Each line is `host`, `hostssl` or `hostnossl`, then databases, users, an
//! address (CIDR, address and mask, or `all`) and a method (`trust`, `reject`, `password`,
//! `md5`, `scram-sha-256`, `cert`). The first line matching a connection decides; `local`
//! lines (no address) are for clients on pgdog's Unix-domain socket. What pgdog cannot check (groups, `@file`,
//! host names, options) is an error naming the line, never a rule silently ignored.
use std::net::IpAddr;

/// A method of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HbaMethod {
    Trust,
    Reject,
    Password,
    Md5,
    ScramSha256,
    Cert,
}

/// Which connections a rule is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Local,
    Host,
    HostSsl,
    HostNoSsl,
}

/// A database or user field: `all`, or names (`sameuser` for databases: the user's name).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Names {
    All,
    List(Vec<Name>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    Exact(String),
    SameUser,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Address {
    All,
    Net { addr: IpAddr, bits: u8 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    line: usize,
    kind: Kind,
    databases: Names,
    users: Names,
    address: Address,
    method: HbaMethod,
}

/// The rules of one file, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hba {
    rules: Vec<Rule>,
}

/// A connection as the rules see it.
pub struct Connection<'a> {
    pub tls: bool,
    pub database: &'a str,
    pub user: &'a str,
    /// None: a client on the Unix-domain socket.
    pub addr: Option<IpAddr>,
}

impl Hba {
    /// Reads the file's text; an error names the line and what is wrong with it.
    pub fn parse(text: &str) -> Result<Hba, String> {
        let mut rules = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let fields = tokens(raw).map_err(|e| format!("line {line}: {e}"))?;
            if fields.is_empty() {
                continue;
            }
            rules.push(rule(line, &fields).map_err(|e| format!("line {line}: {e}"))?);
        }
        Ok(Hba { rules })
    }

    /// The line of the first `cert` rule, if any.
    pub fn first_cert_rule(&self) -> Option<usize> {
        self.rules
            .iter()
            .find(|r| r.method == HbaMethod::Cert)
            .map(|r| r.line)
    }

    /// The method of the first rule matching the connection (with its line); `None`: no rule
    /// matches and the connection is refused.
    pub fn method(&self, c: &Connection) -> Option<(HbaMethod, usize)> {
        self.rules
            .iter()
            .find(|r| r.matches(c))
            .map(|r| (r.method, r.line))
    }
}

impl Rule {
    fn matches(&self, c: &Connection) -> bool {
        let kind = match (self.kind, c.addr) {
            (Kind::Local, None) => true,
            (Kind::Local, Some(_)) | (_, None) => false,
            (Kind::Host, _) => true,
            (Kind::HostSsl, _) => c.tls,
            (Kind::HostNoSsl, _) => !c.tls,
        };
        kind && self.databases.matches(c.database, c.user)
            && self.users.matches(c.user, c.user)
            && c.addr.is_none_or(|addr| self.address.matches(addr))
    }
}

impl Names {
    fn matches(&self, name: &str, user: &str) -> bool {
        match self {
            Names::All => true,
            Names::List(list) => list.iter().any(|n| match n {
                Name::Exact(s) => s == name,
                Name::SameUser => name == user,
            }),
        }
    }
}

impl Address {
    fn matches(&self, addr: IpAddr) -> bool {
        let Address::Net { addr: net, bits } = self else {
            return true;
        };
        // An IPv4 client seen as an IPv4-mapped IPv6 address matches IPv4 rules.
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(addr),
            v4 => v4,
        };
        match (net, addr) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix(&n.octets(), &a.octets(), *bits),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix(&n.octets(), &a.octets(), *bits),
            _ => false,
        }
    }
}

/// Whether the first `bits` bits of `a` and `b` are equal.
fn prefix(a: &[u8], b: &[u8], bits: u8) -> bool {
    let full = usize::from(bits / 8);
    if a[..full] != b[..full] {
        return false;
    }
    let rest = bits % 8;
    rest == 0 || (a[full] ^ b[full]) >> (8 - rest) == 0
}

/// A field as read: its text and whether it was quoted (`"all"` is a name, not a keyword).
type Token = (String, bool);

/// The fields of a line (comments dropped); a field may be a comma-separated list, quoted
/// parts kept whole.
fn tokens(line: &str) -> Result<Vec<Vec<Token>>, String> {
    let mut fields: Vec<Vec<Token>> = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some('#') => return Ok(fields),
            _ => {}
        }
        let mut field = Vec::new();
        loop {
            let (mut text, mut quoted) = (String::new(), false);
            while let Some(&c) = chars.peek() {
                if c == '"' {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('"') if chars.peek() == Some(&'"') => {
                                chars.next();
                                text.push('"');
                            }
                            Some('"') => break,
                            Some(c) => text.push(c),
                            None => return Err("unterminated quoted name".into()),
                        }
                    }
                } else if c == ',' || c.is_whitespace() || c == '#' {
                    break;
                } else {
                    text.push(c);
                    chars.next();
                }
            }
            field.push((text, quoted));
            if chars.peek() == Some(&',') {
                chars.next();
                continue;
            }
            break;
        }
        fields.push(field);
    }
}

/// One line's rule.
fn rule(line: usize, fields: &[Vec<Token>]) -> Result<Rule, String> {
    let word = |i: usize| -> Result<&str, String> {
        match fields.get(i).map(|f| f.as_slice()) {
            Some([(t, _)]) => Ok(t.as_str()),
            Some(_) => Err(format!("field {} must be one word", i + 1)),
            None => Err("too few fields (type, database, user, address, method)".into()),
        }
    };
    let kind = match word(0)? {
        "local" => Kind::Local,
        "host" => Kind::Host,
        "hostssl" => Kind::HostSsl,
        "hostnossl" => Kind::HostNoSsl,
        other => {
            return Err(format!(
                "connection type \"{other}\" is not supported (host, hostssl, hostnossl, local)"
            ))
        }
    };
    let databases = names(fields.get(1), true)?;
    let users = names(fields.get(2), false)?;
    // A `local` line has no address: the method comes right after the users.
    let (address, next) = match kind {
        Kind::Local => (Address::All, 3),
        _ => address(word)?,
    };
    let method = match word(next)? {
        "trust" => HbaMethod::Trust,
        "reject" => HbaMethod::Reject,
        "password" => HbaMethod::Password,
        "md5" => HbaMethod::Md5,
        "scram-sha-256" => HbaMethod::ScramSha256,
        "cert" => HbaMethod::Cert,
        other => return Err(format!("method \"{other}\" is not supported (trust, reject, password, md5, scram-sha-256, cert)")),
    };
    if fields.len() > next + 1 {
        return Err(format!(
            "options after the method are not supported ({})",
            fields[next + 1..]
                .iter()
                .flatten()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(Rule {
        line,
        kind,
        databases,
        users,
        address,
        method,
    })
}

fn names(field: Option<&Vec<Token>>, database: bool) -> Result<Names, String> {
    let field = field.ok_or("too few fields (type, database, user, address, method)")?;
    let mut list = Vec::new();
    for (t, quoted) in field {
        if *quoted {
            list.push(Name::Exact(t.clone()));
            continue;
        }
        match t.as_str() {
            "all" => return Ok(Names::All),
            "sameuser" if database => list.push(Name::SameUser),
            "replication" if database => {} // pgdog takes no replication connections
            "samerole" | "samegroup" => {
                return Err(format!(
                    "\"{t}\" is not supported (pgdog does not know role membership)"
                ))
            }
            _ if t.starts_with('+') => {
                return Err(format!(
                    "group \"{t}\" is not supported (pgdog does not know role membership)"
                ))
            }
            _ if t.starts_with('@') => {
                return Err(format!("\"{t}\": included files are not supported"))
            }
            _ if t.starts_with('/') => {
                return Err(format!("\"{t}\": regular expressions are not supported"))
            }
            _ => list.push(Name::Exact(t.clone())),
        }
    }
    Ok(Names::List(list))
}

/// The address (CIDR, address and mask, or `all`) and the index of the method field.
fn address<'a>(
    word: impl Fn(usize) -> Result<&'a str, String>,
) -> Result<(Address, usize), String> {
    let text = word(3)?;
    if text == "all" {
        return Ok((Address::All, 4));
    }
    if matches!(text, "samehost" | "samenet") || text.starts_with('.') {
        return Err(format!(
            "address \"{text}\" is not supported (use CIDR or all)"
        ));
    }
    let bad = || {
        format!(
            "address \"{text}\" is not an IP address in CIDR form (host names are not supported)"
        )
    };
    if let Some((ip, bits)) = text.split_once('/') {
        let addr: IpAddr = ip.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits: u8 = bits.parse().ok().filter(|b| *b <= max).ok_or_else(bad)?;
        return Ok((Address::Net { addr, bits }, 4));
    }
    let addr: IpAddr = text.parse().map_err(|_| bad())?;
    let mask: IpAddr = word(4)?
        .parse()
        .map_err(|_| format!("address \"{text}\" needs a CIDR length or a mask"))?;
    let octets = match mask {
        IpAddr::V4(m) => m.octets().to_vec(),
        IpAddr::V6(m) => m.octets().to_vec(),
    };
    let bits = octets.iter().map(|o| o.count_ones()).sum::<u32>() as u8;
    if addr.is_ipv4() != mask.is_ipv4() || !prefix_mask(&octets, bits) {
        return Err(format!("mask \"{mask}\" is not a valid network mask"));
    }
    Ok((Address::Net { addr, bits }, 5))
}

/// Whether the mask is `bits` ones followed by zeros.
fn prefix_mask(octets: &[u8], bits: u8) -> bool {
    let ones = vec![0xffu8; octets.len()];
    prefix(octets, &ones, bits)
        && octets.iter().map(|o| o.count_ones()).sum::<u32>() == u32::from(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn<'a>(tls: bool, database: &'a str, user: &'a str, addr: &str) -> Connection<'a> {
        Connection {
            tls,
            database,
            user,
            addr: (addr != "local").then(|| addr.parse().unwrap()),
        }
    }

    #[test]
    fn first_match_wins_over_every_field() {
        let hba = Hba::parse(
            "# comment\nlocal all all trust\n\
             hostssl app app 10.0.0.0/8 cert\n\
             host app,\"all\" bad 0.0.0.0/0 reject   # inline comment\n\
             hostnossl sameuser all 127.0.0.1 255.255.255.255 md5\n\
             host all all ::1/128 scram-sha-256\n\
             host all all 192.168.1.0/24 password\n",
        )
        .unwrap();
        let m = |c: Connection| hba.method(&c).map(|(m, _)| m);
        assert_eq!(
            m(conn(true, "app", "app", "10.1.2.3")),
            Some(HbaMethod::Cert)
        );
        assert_eq!(m(conn(false, "app", "app", "10.1.2.3")), None);
        assert_eq!(
            m(conn(false, "all", "bad", "1.2.3.4")),
            Some(HbaMethod::Reject)
        );
        assert_eq!(m(conn(false, "other", "bad", "1.2.3.4")), None);
        assert_eq!(
            m(conn(false, "bob", "bob", "127.0.0.1")),
            Some(HbaMethod::Md5)
        );
        assert_eq!(m(conn(true, "bob", "bob", "127.0.0.1")), None);
        assert_eq!(m(conn(false, "db", "bob", "127.0.0.1")), None);
        assert_eq!(
            m(conn(false, "db", "x", "::1")),
            Some(HbaMethod::ScramSha256)
        );
        assert_eq!(
            m(conn(false, "db", "x", "192.168.1.77")),
            Some(HbaMethod::Password)
        );
        assert_eq!(
            m(conn(false, "db", "x", "::ffff:192.168.1.9")),
            Some(HbaMethod::Password)
        );
        assert_eq!(m(conn(false, "db", "x", "192.168.2.1")), None);
        assert_eq!(hba.method(&conn(false, "db", "x", "::1")).unwrap().1, 6);
        // A client of the Unix-domain socket: the `local` line, and only it.
        assert_eq!(
            m(conn(false, "any", "one", "local")),
            Some(HbaMethod::Trust)
        );
        let hosts_only = Hba::parse("host all all all trust\nlocal app all reject\n").unwrap();
        let local = |db| {
            hosts_only
                .method(&conn(false, db, "u", "local"))
                .map(|(m, _)| m)
        };
        assert_eq!(local("app"), Some(HbaMethod::Reject));
        assert_eq!(local("other"), None);
    }

    #[test]
    fn what_cannot_be_checked_is_an_error_with_its_line() {
        for (text, what) in [
            ("host all all 1.2.3.4/33 trust", "CIDR"),
            ("host all +admins all trust", "group"),
            ("host @dbs all all trust", "included files"),
            ("host all all example.com trust", "host names"),
            ("host all all all ident", "method \"ident\""),
            ("host all all all md5 clientcert=verify-full", "options"),
            ("hostgssenc all all all trust", "connection type"),
            ("host all all", "too few fields"),
            ("host all all 10.0.0.0 255.0.255.0 trust", "mask"),
        ] {
            let err = Hba::parse(&format!("\n{text}\n")).unwrap_err();
            assert!(
                err.starts_with("line 2:") && err.contains(what),
                "{text}: {err}"
            );
        }
    }
}
