//! Who the client is and whether it may in: protocol negotiation, the user and database, the
//! method (the first matching `auth_hba_file` rule, else `auth_type`), the user's secrets
//! (users.toml, else `auth_query`) and the exchange. Unknown users go through the same
//! exchange as known ones and get the same answer as a wrong password: no enumeration.
use super::secrets::{check_cleartext, check_md5, scram_exchange, Secret};
use super::{auth_query, Refusal, NEWEST_MINOR};
use crate::backend::server::PassThrough;
use crate::config::hba::{Connection, HbaMethod};
use crate::config::{AuthType, FALLBACK_DATABASE};
use crate::net::message::{self, Reader};
use crate::net::stream::Stream;
use crate::net::tag::frontend;
use crate::net::{Message, MessageReader, ProtocolError};
use crate::registry::{Credential, Registry};
use tokio::io::AsyncWriteExt;

/// A client that passed authentication.
pub struct Identity {
    pub user: String,
    pub database: String,
    pub admin: bool,
    /// A user found by `auth_query`: how pgdog logs in to the servers as that user.
    pub discovered: Option<Credential>,
}

/// The method of this login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Trust,
    Reject,
    Password,
    Md5,
    Scram,
    Cert,
}

/// What the client's answer matched: the secret's index, and for SCRAM and cleartext what
/// it revealed.
enum Matched {
    /// No exchange (trust, cert).
    Nothing,
    Cleartext(String),
    Md5(usize),
    Scram(usize, crate::auth::ScramKeys),
}

/// Protocol negotiation, user and database lookup and the password check.
pub async fn authenticate(
    stream: &mut Stream,
    reader: &mut MessageReader,
    minor: u16,
    params: &[(String, String)],
    registry: &Registry,
) -> Result<Identity, Refusal> {
    negotiate(stream, minor, params).await?;
    let get = |k: &str| {
        params
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let user = get("user").filter(|u| !u.is_empty()).ok_or(Refusal(
        "28000",
        "no PostgreSQL user name specified in startup packet".into(),
    ))?;
    let database = get("database")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| user.clone());
    if get("replication").is_some_and(|r| r != "false" && r != "0" && r != "off") {
        return Err(Refusal(
            "08P01",
            "pgdog does not accept replication connections".into(),
        ));
    }
    let settings = &registry.settings;
    let g = &settings.config.general;
    let admin = g.admin_password.is_some() && database == g.admin_database;
    let method = method(stream, registry, admin, &user, &database)?;
    // The secrets: the admin's password, users.toml's entry, else auth_query's answer.
    let mut fallback_password = None;
    let (secrets, made_at_login) = if admin {
        let known = user == g.admin_user;
        (
            known.then(|| vec![Secret::Plain(g.admin_password.clone().unwrap_or_default())]),
            false,
        )
    } else if let Some(entry) = settings.user(&user, &database) {
        (
            Some(Secret::of_user(entry)),
            settings.logs_in_as_client(entry),
        )
    } else if let Some(entry) = settings
        .user(&user, FALLBACK_DATABASE)
        .filter(|_| settings.served_by_fallback(&database))
    {
        // A users.toml user of the fallback database: pools made at login, like auth_query's.
        fallback_password = entry.password.clone();
        (Some(Secret::of_user(entry)), true)
    } else if matches!(method, Method::Reject) {
        (None, false)
    } else {
        (
            auth_query::secret(settings, &user, &database)
                .await?
                .map(|s| vec![s]),
            true,
        )
    };
    let unknown = secrets.is_none();
    // An unknown user's exchange runs as any other (no secret matches it).
    let secrets = secrets.unwrap_or_default();
    let failed = || {
        Refusal(
            "28P01",
            format!("password authentication failed for user \"{user}\""),
        )
    };
    let matched = match method {
        Method::Reject => {
            return Err(hba_refusal(
                stream,
                "pg_hba.conf rejects connection",
                &user,
                &database,
            ))
        }
        Method::Trust => Some(Matched::Nothing),
        Method::Cert => {
            check_certificate(stream, &user)?;
            Some(Matched::Nothing)
        }
        Method::Password => cleartext(stream, reader, &secrets, &user).await?,
        // Unknown users get MD5 too, as users with plain passwords do.
        Method::Md5 if unknown || secrets.iter().any(Secret::md5_usable) => {
            md5(stream, reader, &secrets, &user).await?
        }
        // A user with SCRAM secrets only gets a SCRAM exchange, as Postgres does.
        Method::Md5 | Method::Scram => scram(stream, reader, &secrets, &user).await?,
    };
    let matched = match matched {
        Some(m) => m,
        None => return Err(failed()),
    };
    if unknown {
        return Err(match method {
            Method::Trust | Method::Cert => Refusal(
                "28000",
                format!("user \"{user}\" may not connect to database \"{database}\" through pgdog"),
            ),
            _ => failed(),
        });
    }
    let discovered = made_at_login.then(|| match fallback_password {
        Some(password) => Credential::Password(password),
        None => credential(&secrets, matched),
    });
    Ok(Identity {
        user,
        database,
        admin,
        discovered,
    })
}

/// How pgdog logs in to the servers as a user found by `auth_query` after this login.
fn credential(secrets: &[Secret], matched: Matched) -> Credential {
    let index = match matched {
        Matched::Cleartext(password) => return Credential::Password(password),
        Matched::Scram(i, keys) if matches!(secrets[i], Secret::Scram(_)) => {
            return Credential::PassThrough(PassThrough::Scram(keys))
        }
        Matched::Scram(i, _) | Matched::Md5(i) => i,
        Matched::Nothing => 0,
    };
    match secrets.get(index) {
        Some(Secret::Md5(stored)) => Credential::PassThrough(PassThrough::Md5(stored.clone())),
        Some(Secret::Plain(p)) => Credential::Password(p.clone()),
        _ => Credential::Nothing,
    }
}

/// NegotiateProtocolVersion when the client asks for a newer minor version or `_pq_.`
/// options.
async fn negotiate(
    stream: &mut Stream,
    minor: u16,
    params: &[(String, String)],
) -> Result<(), Refusal> {
    let unsupported: Vec<String> = params
        .iter()
        .filter(|(k, _)| k.starts_with("_pq_."))
        .map(|(k, _)| k.clone())
        .collect();
    if minor > NEWEST_MINOR || !unsupported.is_empty() {
        let m = message::negotiate_protocol_version(
            i32::from(minor.min(NEWEST_MINOR)) | (3 << 16),
            &unsupported,
        );
        stream
            .write_all(m.bytes())
            .await
            .map_err(ProtocolError::Io)?;
    }
    Ok(())
}

/// The method: the first `auth_hba_file` rule matching the connection (none: refused, as
/// Postgres does), else `auth_type`. The admin database always checks a password.
fn method(
    stream: &Stream,
    registry: &Registry,
    admin: bool,
    user: &str,
    database: &str,
) -> Result<Method, Refusal> {
    let settings = &registry.settings;
    let method = match &settings.hba {
        Some(hba) => {
            let connection = Connection {
                tls: matches!(stream, Stream::Tls(_)),
                database,
                user,
                addr: stream.peer_ip(),
            };
            match hba.method(&connection) {
                Some((m, _)) => match m {
                    HbaMethod::Trust => Method::Trust,
                    HbaMethod::Reject => Method::Reject,
                    HbaMethod::Password => Method::Password,
                    HbaMethod::Md5 => Method::Md5,
                    HbaMethod::ScramSha256 => Method::Scram,
                    HbaMethod::Cert => Method::Cert,
                },
                None => return Err(hba_refusal(stream, "no pg_hba.conf entry", user, database)),
            }
        }
        None => match settings.config.general.auth_type {
            AuthType::Trust => Method::Trust,
            AuthType::Plain => Method::Password,
            AuthType::Md5 => Method::Md5,
            AuthType::Scram => Method::Scram,
        },
    };
    Ok(match (method, admin) {
        // The admin database always checks a password: trust and cert become SCRAM there.
        (Method::Trust | Method::Password | Method::Cert, true) => Method::Scram,
        (m, _) => m,
    })
}

/// Postgres' refusal of a connection by its rules (28000), word for word.
fn hba_refusal(stream: &Stream, what: &str, user: &str, database: &str) -> Refusal {
    let encryption = if matches!(stream, Stream::Tls(_)) {
        "SSL encryption"
    } else {
        "no encryption"
    };
    Refusal(
        "28000",
        format!(
            "{what} for host \"{}\", user \"{user}\", database \"{database}\", {encryption}",
            stream
                .peer_ip()
                .map_or_else(|| "[local]".to_string(), |ip| ip.to_string())
        ),
    )
}

/// The `cert` method: a client certificate that `tls_client_ca` verified, whose common name
/// is the user name (Postgres' messages).
fn check_certificate(stream: &Stream, user: &str) -> Result<(), Refusal> {
    let certificate = match stream {
        Stream::Tls(tls) => tls.get_ref().1.peer_certificates().and_then(|c| c.first()),
        _ => None,
    };
    let Some(certificate) = certificate else {
        return Err(Refusal(
            "28000",
            "connection requires a valid client certificate".into(),
        ));
    };
    let name = crate::net::stream::common_name(certificate.as_ref());
    if name.as_deref() != Some(user) {
        tracing::info!(
            "certificate authentication failed for user \"{user}\": the certificate's common name is {name:?}"
        );
        return Err(Refusal(
            "28000",
            format!("certificate authentication failed for user \"{user}\""),
        ));
    }
    Ok(())
}

async fn cleartext(
    stream: &mut Stream,
    reader: &mut MessageReader,
    secrets: &[Secret],
    user: &str,
) -> Result<Option<Matched>, Refusal> {
    send(stream, message::auth_cleartext()).await?;
    let m = password_message(stream, reader).await?;
    let given = m.payload().strip_suffix(&[0]).unwrap_or(m.payload());
    Ok(check_cleartext(secrets, user, given)
        .map(|_| Matched::Cleartext(String::from_utf8_lossy(given).into_owned())))
}

async fn md5(
    stream: &mut Stream,
    reader: &mut MessageReader,
    secrets: &[Secret],
    user: &str,
) -> Result<Option<Matched>, Refusal> {
    let salt: [u8; 4] = rand::random();
    send(stream, message::auth_md5(salt)).await?;
    let m = password_message(stream, reader).await?;
    Ok(check_md5(secrets, user, salt, m.payload()).map(Matched::Md5))
}

/// SCRAM-SHA-256 exchange; `Ok(None)` for a wrong password.
async fn scram(
    stream: &mut Stream,
    reader: &mut MessageReader,
    secrets: &[Secret],
    user: &str,
) -> Result<Option<Matched>, Refusal> {
    let (mut server, indexes) = scram_exchange(secrets, user);
    send(stream, message::auth_sasl()).await?;
    let m = password_message(stream, reader).await?;
    let mut r = Reader::new(m.payload(), "SASLInitialResponse");
    let mechanism = r.cstr()?;
    if mechanism != "SCRAM-SHA-256" {
        return Err(Refusal(
            "28000",
            format!("SASL authentication mechanism {mechanism} is not supported"),
        ));
    }
    let len = r.i32()?;
    let data = if len < 0 {
        &[][..]
    } else {
        r.bytes(len as usize)?
    };
    let first = server
        .client_first(data)
        .map_err(|e| Refusal("08P01", e.to_string()))?;
    send(stream, message::auth_sasl_continue(&first)).await?;
    let m = password_message(stream, reader).await?;
    let last = match server.client_final(m.payload()) {
        Ok(last) => last,
        Err(crate::auth::AuthError::WrongPassword) => return Ok(None),
        Err(e) => return Err(Refusal("08P01", e.to_string())),
    };
    send(stream, message::auth_sasl_final(&last)).await?;
    let (Some(i), Some(keys)) = (server.matched(), server.keys()) else {
        return Ok(None);
    };
    Ok(Some(Matched::Scram(indexes[i], keys)))
}

async fn send(stream: &mut Stream, m: Message) -> Result<(), Refusal> {
    stream
        .write_all(m.bytes())
        .await
        .map_err(|e| ProtocolError::Io(e).into())
}

async fn password_message(
    stream: &mut Stream,
    reader: &mut MessageReader,
) -> Result<Message, Refusal> {
    let m = reader.next(stream).await?;
    if m.tag() != frontend::PASSWORD {
        return Err(Refusal(
            "08P01",
            format!(
                "expected a password message, got message type {}",
                m.tag() as char
            ),
        ));
    }
    Ok(m)
}
