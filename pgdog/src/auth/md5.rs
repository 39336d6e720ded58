//! PostgreSQL's MD5 password exchange (`AuthenticationMD5Password`).
//!
//! The server sends a 4-byte salt; the client answers with a `PasswordMessage` holding
//! `"md5" + md5hex(md5hex(password + user) + salt)`. PostgreSQL stores MD5 passwords as
//! `"md5" + md5hex(password + user)`, which is enough to compute (and check) the response,
//! so both a plaintext password and such a stored password can serve as the secret.

use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

/// Prefix of PostgreSQL's MD5 strings, both stored passwords and responses.
const MD5_PREFIX: &str = "md5";

/// Lowercase hex of the MD5 digest of the concatenation of `parts`.
fn md5_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Md5::new();
    for part in parts {
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The response a client sends for `user`/`password` and the server's 4-byte `salt`:
/// `"md5" + md5hex(md5hex(password + user) + salt)` (35 ASCII characters, no NUL).
pub fn md5_hash(user: &str, password: &str, salt: [u8; 4]) -> String {
    let inner = md5_hex(&[password.as_bytes(), user.as_bytes()]);
    salted(&inner, salt)
}

/// The secret PostgreSQL stores for an MD5 password: `"md5"` + md5hex(password + user).
pub fn md5_stored(user: &str, password: &str) -> String {
    format!(
        "{MD5_PREFIX}{}",
        md5_hex(&[password.as_bytes(), user.as_bytes()])
    )
}

/// Whether `s` is an MD5 secret as PostgreSQL stores it (`"md5"` + 32 hex digits).
pub fn is_md5_stored(s: &str) -> bool {
    s.strip_prefix(MD5_PREFIX)
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The response computed from a password stored the way PostgreSQL stores MD5 passwords
/// (`"md5"` + 32 hex digits = md5hex(password + user)). `None` if `stored` is not such a string.
pub fn md5_hash_from_stored(stored: &str, salt: [u8; 4]) -> Option<String> {
    let hex = stored.strip_prefix(MD5_PREFIX)?;
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(salted(&hex.to_ascii_lowercase(), salt))
}

/// `"md5" + md5hex(inner_hex + salt)`.
fn salted(inner_hex: &str, salt: [u8; 4]) -> String {
    format!("{MD5_PREFIX}{}", md5_hex(&[inner_hex.as_bytes(), &salt]))
}

/// Checks a client's `PasswordMessage` payload (`response`, with or without its trailing NUL)
/// against the plaintext `password` of `user`. Constant-time comparison.
pub fn md5_verify(user: &str, password: &str, salt: [u8; 4], response: &[u8]) -> bool {
    response_matches(&md5_hash(user, password, salt), response)
}

/// Like [`md5_verify`], with the secret given as a stored `md5...` password. `false` if
/// `stored` is not a valid stored MD5 password.
pub fn md5_verify_stored(stored: &str, salt: [u8; 4], response: &[u8]) -> bool {
    match md5_hash_from_stored(stored, salt) {
        Some(expected) => response_matches(&expected, response),
        None => false,
    }
}

/// Constant-time equality of the expected response and the client's, ignoring one trailing NUL.
fn response_matches(expected: &str, response: &[u8]) -> bool {
    let response = response.strip_suffix(&[0]).unwrap_or(response);
    expected.as_bytes().ct_eq(response).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored by PostgreSQL 18.6 for `SET password_encryption='md5';
    /// CREATE ROLE m LOGIN PASSWORD 'secret'` (md5hex("secret" + "m")).
    const PG_STORED_M_SECRET: &str = "md5b52328d7451bfeace80c4b8c338106f9";

    const SALT: [u8; 4] = [0x01, 0x02, 0x03, 0x04];

    /// Computed independently with python3:
    /// `i = hashlib.md5(b"secretm").hexdigest();
    ///  "md5" + hashlib.md5(i.encode() + bytes([1, 2, 3, 4])).hexdigest()`
    const PY_M_SECRET_SALT_1234: &str = "md5b441c8c79190ee049d2b529b74d69aa7";

    #[test]
    fn md5_hash_matches_python_hashlib() {
        assert_eq!(md5_hash("m", "secret", SALT), PY_M_SECRET_SALT_1234);
    }

    #[test]
    fn stored_password_from_postgres_gives_same_response() {
        assert_eq!(
            md5_hash_from_stored(PG_STORED_M_SECRET, SALT).as_deref(),
            Some(PY_M_SECRET_SALT_1234)
        );
        let upper = format!("md5{}", PG_STORED_M_SECRET[3..].to_ascii_uppercase());
        assert_eq!(
            md5_hash_from_stored(&upper, SALT).as_deref(),
            Some(PY_M_SECRET_SALT_1234)
        );
    }

    #[test]
    fn invalid_stored_passwords_are_rejected() {
        for bad in [
            "",
            "md5",
            "secret",
            "md5b52328d7451bfeace80c4b8c338106f",
            "md5zz2328d7451bfeace80c4b8c338106f9",
            "MD5b52328d7451bfeace80c4b8c338106f9",
            "md5b52328d7451bfeace80c4b8c338106f99",
        ] {
            assert_eq!(md5_hash_from_stored(bad, SALT), None, "{bad}");
            assert!(!md5_verify_stored(
                bad,
                SALT,
                PY_M_SECRET_SALT_1234.as_bytes()
            ));
        }
    }

    #[test]
    fn verify_accepts_with_and_without_nul() {
        let response = md5_hash("m", "secret", SALT);
        let mut with_nul = response.clone().into_bytes();
        with_nul.push(0);
        assert!(md5_verify("m", "secret", SALT, response.as_bytes()));
        assert!(md5_verify("m", "secret", SALT, &with_nul));
        assert!(md5_verify_stored(PG_STORED_M_SECRET, SALT, &with_nul));
    }

    #[test]
    fn verify_rejects_wrong_responses() {
        let response = md5_hash("m", "secret", SALT);
        assert!(!md5_verify("m", "wrong", SALT, response.as_bytes()));
        assert!(!md5_verify("other", "secret", SALT, response.as_bytes()));
        assert!(!md5_verify(
            "m",
            "secret",
            [0, 0, 0, 0],
            response.as_bytes()
        ));
        assert!(!md5_verify("m", "secret", SALT, b""));
        assert!(!md5_verify("m", "secret", SALT, &[0xff, 0xfe, 0x00]));
        let mut two_nuls = response.into_bytes();
        two_nuls.extend_from_slice(&[0, 0]);
        assert!(!md5_verify("m", "secret", SALT, &two_nuls));
        assert!(!md5_verify_stored(PG_STORED_M_SECRET, SALT, b"md5"));
    }
}
