//! A user's login secrets and the checks of a client's answer against them: the users.toml
//! entry's `password`, `password_hash` and `passwords` (rotation: any of them logs in), or
//! the one secret `auth_query` found. Which secret matched tells how pgdog may log in to the
//! servers as a user it found by `auth_query` (its password, its SCRAM keys, its MD5 hash).
use crate::auth::md5::{is_md5_stored, md5_stored, md5_verify, md5_verify_stored};
use crate::auth::scram::{ScramServer, ScramVerifier, DEFAULT_ITERATIONS};
use crate::config::User;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// One secret a user may log in with.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    Plain(String),
    Scram(ScramVerifier),
    /// `"md5"` + md5hex(password + user), as PostgreSQL stores it.
    Md5(String),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Secret::Plain(_) => "Plain(<redacted>)",
            Secret::Scram(_) => "Scram(<redacted>)",
            Secret::Md5(_) => "Md5(<redacted>)",
        })
    }
}

impl Secret {
    /// A stored secret by its form: a SCRAM verifier, an MD5 hash, else a plain password.
    pub fn parse(s: &str) -> Secret {
        if s.starts_with("SCRAM-SHA-256$") {
            if let Ok(v) = ScramVerifier::parse(s) {
                return Secret::Scram(v);
            }
        }
        if is_md5_stored(s) {
            return Secret::Md5(s.to_ascii_lowercase());
        }
        Secret::Plain(s.to_string())
    }

    /// The secrets of a users.toml entry, in order: `password`, `password_hash`, `passwords`.
    pub fn of_user(u: &User) -> Vec<Secret> {
        let mut all: Vec<Secret> = u.password.iter().cloned().map(Secret::Plain).collect();
        all.extend(u.password_hash.iter().map(|h| Secret::parse(h)));
        all.extend(u.passwords.iter().map(|p| Secret::parse(p)));
        all
    }

    /// Whether an MD5 exchange can check it (a plain password or an MD5 hash).
    pub fn md5_usable(&self) -> bool {
        !matches!(self, Secret::Scram(_))
    }
}

/// The index of the secret a cleartext password matches (constant-time comparisons; a SCRAM
/// verifier is derived again with its own salt).
pub fn check_cleartext(secrets: &[Secret], user: &str, given: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(given).ok().filter(|t| !t.is_empty());
    secrets.iter().position(|s| match (s, text) {
        (Secret::Plain(p), Some(t)) if !p.is_empty() => {
            constant_time_eq(p.as_bytes(), t.as_bytes())
        }
        (Secret::Md5(stored), Some(t)) => {
            constant_time_eq(md5_stored(user, t).as_bytes(), stored.as_bytes())
        }
        (Secret::Scram(v), Some(t)) => {
            ScramVerifier::from_password(t, &v.salt, v.iterations).same_as(v)
        }
        _ => false,
    })
}

/// The index of the secret an MD5 response matches.
pub fn check_md5(secrets: &[Secret], user: &str, salt: [u8; 4], response: &[u8]) -> Option<usize> {
    secrets.iter().position(|s| match s {
        Secret::Plain(p) => !p.is_empty() && md5_verify(user, p, salt, response),
        Secret::Md5(stored) => md5_verify_stored(stored, salt, response),
        Secret::Scram(_) => false,
    })
}

/// A SCRAM exchange over every secret SCRAM can check, with the index of the secret each
/// verifier stands for. Plain passwords get verifiers with the salt and iterations of the
/// first SCRAM verifier (else the user's salt, [`user_salt`]): the client's proof, made with
/// the salt offered, can then match any of them. MD5 hashes and empty passwords cannot take
/// part. Without any verifier (an unknown user) no PBKDF2 runs and the user's salt is offered.
pub fn scram_exchange(secrets: &[Secret], user: &str) -> (ScramServer, Vec<usize>) {
    let first = secrets.iter().find_map(|s| match s {
        Secret::Scram(v) => Some((v.salt.clone(), v.iterations)),
        _ => None,
    });
    let (salt, iterations) = first.unwrap_or_else(|| (user_salt(user), DEFAULT_ITERATIONS));
    let mut verifiers = Vec::new();
    let mut indexes = Vec::new();
    for (i, s) in secrets.iter().enumerate() {
        let v = match s {
            Secret::Scram(v) => v.clone(),
            Secret::Plain(p) if !p.is_empty() => derived(p, &salt, iterations),
            Secret::Plain(_) | Secret::Md5(_) => continue,
        };
        verifiers.push(v);
        indexes.push(i);
    }
    // The verifier whose salt is offered goes first.
    if let Some(pos) = verifiers
        .iter()
        .position(|v| v.salt == salt && v.iterations == iterations)
    {
        verifiers.swap(0, pos);
        indexes.swap(0, pos);
    }
    if verifiers.is_empty() {
        return (ScramServer::mock(salt), indexes);
    }
    (ScramServer::any_of(verifiers), indexes)
}

/// A user's salt for verifiers derived from plain passwords and for unknown users alike:
/// HMAC(a key of this process, user name), the same at every attempt, so the salt offered
/// tells neither whether the user exists nor that it has a plain password.
pub fn user_salt(user: &str) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    static KEY: LazyLock<[u8; 32]> = LazyLock::new(rand::random);
    let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(KEY.as_slice()) else {
        return KEY[..16].to_vec();
    };
    mac.update(user.as_bytes());
    mac.finalize().into_bytes()[..16].to_vec()
}

/// A plain password's verifier for `salt` and `iterations`, derived once (PBKDF2 is slow).
fn derived(password: &str, salt: &[u8], iterations: u32) -> ScramVerifier {
    type Key = (String, Vec<u8>, u32);
    static DERIVED: LazyLock<Mutex<HashMap<Key, ScramVerifier>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let key = (password.to_string(), salt.to_vec(), iterations);
    if let Some(v) = DERIVED.lock().get(&key) {
        return v.clone();
    }
    let v = ScramVerifier::from_password(password, salt, iterations);
    let mut cache = DERIVED.lock();
    // Bounded: a reload with many changed passwords does not grow it for ever.
    if cache.len() >= 10_000 {
        cache.clear();
    }
    cache.insert(key, v.clone());
    v
}

/// Equality in constant time, also of the lengths (both sides are hashed first).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    use subtle::ConstantTimeEq;
    Sha256::digest(a).ct_eq(&Sha256::digest(b)).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::scram::ScramClient;

    fn exchange(server: &mut ScramServer, password: &str) -> bool {
        let mut client = ScramClient::new(password);
        let first = server.client_first(&client.client_first()).unwrap();
        let last = client.server_first(&first).unwrap();
        server.client_final(&last).is_ok()
    }

    #[test]
    fn forms_and_every_method_with_rotation() {
        let user = "app";
        let secrets = vec![
            Secret::parse("old"),
            Secret::parse(&crate::auth::hash_password("new")),
            Secret::parse(&md5_stored(user, "md5pw")),
        ];
        assert!(matches!(secrets[0], Secret::Plain(_)));
        assert!(matches!(secrets[1], Secret::Scram(_)));
        assert!(matches!(secrets[2], Secret::Md5(_)));
        // Cleartext: each form.
        for (pw, index) in [
            ("old", Some(0)),
            ("new", Some(1)),
            ("md5pw", Some(2)),
            ("x", None),
        ] {
            assert_eq!(
                check_cleartext(&secrets, user, pw.as_bytes()),
                index,
                "{pw}"
            );
        }
        // MD5: the plain password and the hash, not the SCRAM verifier.
        let salt = [1, 2, 3, 4];
        for (pw, index) in [("old", Some(0)), ("md5pw", Some(2)), ("new", None)] {
            let response = crate::auth::md5_hash(user, pw, salt);
            assert_eq!(
                check_md5(&secrets, user, salt, response.as_bytes()),
                index,
                "{pw}"
            );
        }
        // SCRAM: the verifier and the plain password (derived with the verifier's salt).
        for (pw, index) in [("old", Some(0)), ("new", Some(1)), ("md5pw", None)] {
            let (mut server, indexes) = scram_exchange(&secrets, user);
            let ok = exchange(&mut server, pw);
            assert_eq!(
                ok.then(|| indexes[server.matched().unwrap()]),
                index,
                "{pw}"
            );
        }
        assert!(!format!("{secrets:?}").contains("old"));
    }

    #[test]
    fn unknown_and_plain_users_offer_a_salt_of_their_own_every_time() {
        let first = |secrets: &[Secret], user: &str| {
            let (mut server, _) = scram_exchange(secrets, user);
            let reply = server.client_first(b"n,,n=,r=abcdefghijklmnop").unwrap();
            let text = String::from_utf8(reply).unwrap();
            text.split(',').nth(1).unwrap().to_string()
        };
        let plain = [Secret::Plain("pw".into())];
        // The same salt at each attempt, per user, whether it exists (plain password) or not.
        assert_eq!(first(&[], "ghost"), first(&[], "ghost"));
        assert_eq!(first(&plain, "app"), first(&[], "app"));
        assert_ne!(first(&[], "ghost"), first(&[], "app"));
        // No proof passes an unknown user's exchange; empty passwords never match.
        let (mut server, _) = scram_exchange(&[], "ghost");
        assert!(!exchange(&mut server, ""));
        let empty = [Secret::Plain(String::new())];
        assert_eq!(check_cleartext(&empty, "app", b""), None);
        let salt = [1, 2, 3, 4];
        let response = crate::auth::md5_hash("app", "", salt);
        assert_eq!(check_md5(&empty, "app", salt, response.as_bytes()), None);
    }
}
