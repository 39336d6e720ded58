//! SCRAM-SHA-256 (RFC 5802 / RFC 7677) as PostgreSQL implements it, without channel binding.
//!
//! Message flow (payloads of the protocol messages, no framing):
//!
//! ```text
//! client                                          server
//! client-first   n,,n=,r=<cnonce>           --->  (SASLInitialResponse)
//!                r=<cnonce><snonce>,s=<salt>,i=<iter>  <---  (AuthenticationSASLContinue)
//! client-final   c=biws,r=<nonce>,p=<proof> --->  (SASLResponse)
//!                v=<server signature>       <---  (AuthenticationSASLFinal)
//! ```
//!
//! PostgreSQL specifics: the username in client-first (`n=`) is ignored (the startup packet
//! names the user) and is usually empty; the GS2 header may be `n,,` or `y,,`; `p=...`
//! (SCRAM-SHA-256-PLUS) and an authorization identity (`a=`) are refused; passwords are
//! normalized by [`crate::auth::saslprep`].
//!
//! [`ScramServer`] does no key derivation (the verifier holds the keys), so it is cheap.
//! [`ScramClient::server_first`], [`ScramVerifier::from_password`] and [`hash_password`] run
//! PBKDF2 with the iteration count (4096 by default, chosen by the server for the client side):
//! milliseconds of CPU, so async callers may want `spawn_blocking`.

use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::saslprep::prepare_password;
use super::AuthError;

/// SASL mechanism name to advertise in `AuthenticationSASL` and expect in `SASLInitialResponse`.
pub const SCRAM_SHA_256: &str = "SCRAM-SHA-256";

/// Iterations used by [`hash_password`] (PostgreSQL's default `scram_iterations`).
pub const DEFAULT_ITERATIONS: u32 = 4096;

/// Salt length used by [`hash_password`] (PostgreSQL's `SCRAM_DEFAULT_SALT_LEN`).
const DEFAULT_SALT_LEN: usize = 16;

/// Random bytes in a nonce, before base64 (PostgreSQL's `SCRAM_RAW_NONCE_LEN`).
const NONCE_LEN: usize = 18;

/// The GS2 header ScramClient sends: no channel binding, no authorization identity.
const GS2_NO_BINDING: &str = "n,,";

/// A SHA-256 sized key or signature.
type Key = [u8; 32];

// ---------------------------------------------------------------------------------------------
// Crypto helpers
// ---------------------------------------------------------------------------------------------

/// HMAC-SHA-256 of `message` under `key`.
fn hmac(key: &[u8], message: &[u8]) -> Key {
    // HMAC takes keys of any length, so this cannot fail; the keys here are our own anyway.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// SHA-256 of `data`.
fn sha256(data: &[u8]) -> Key {
    Sha256::digest(data).into()
}

/// Byte-wise XOR of two keys.
fn xor(a: &Key, b: &Key) -> Key {
    std::array::from_fn(|i| a[i] ^ b[i])
}

/// `SaltedPassword = Hi(SASLprep(password), salt, iterations)` (PBKDF2-HMAC-SHA-256).
fn salted_password(password: &str, salt: &[u8], iterations: u32) -> Key {
    let prepared = prepare_password(password);
    let mut out = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<Sha256>(prepared.as_bytes(), salt, iterations, &mut out);
    out
}

/// `ClientKey = HMAC(SaltedPassword, "Client Key")`.
fn client_key(salted: &Key) -> Key {
    hmac(salted, b"Client Key")
}

/// `ServerKey = HMAC(SaltedPassword, "Server Key")`.
fn server_key(salted: &Key) -> Key {
    hmac(salted, b"Server Key")
}

/// `n` random bytes from the OS generator.
fn random_bytes(n: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; n];
    OsRng.fill_bytes(&mut bytes);
    bytes
}

/// A fresh nonce: [`NONCE_LEN`] random bytes, base64 (printable, no commas).
fn random_nonce() -> String {
    BASE64.encode(random_bytes(NONCE_LEN))
}

// ---------------------------------------------------------------------------------------------
// Parsing helpers
// ---------------------------------------------------------------------------------------------

/// The message as UTF-8 text.
fn as_text(data: &[u8]) -> Result<&str, AuthError> {
    std::str::from_utf8(data).map_err(|_| AuthError::NotUtf8)
}

/// Value of `part` if it is the attribute `prefix` (e.g. `"r="`), else `Malformed(missing)`.
fn attribute<'a>(
    part: Option<&'a str>,
    prefix: &str,
    missing: &'static str,
) -> Result<&'a str, AuthError> {
    part.and_then(|p| p.strip_prefix(prefix))
        .ok_or(AuthError::Malformed(missing))
}

/// Base64 decode of a field, naming the field on error.
fn decode(value: &str, field: &'static str) -> Result<Vec<u8>, AuthError> {
    BASE64
        .decode(value)
        .map_err(|_| AuthError::InvalidBase64(field))
}

/// Base64 decode of a 32-byte key/signature field; `wrong_len` if it decodes to another size.
fn decode_key(value: &str, field: &'static str, wrong_len: AuthError) -> Result<Key, AuthError> {
    decode(value, field)?.try_into().map_err(|_| wrong_len)
}

/// A nonce is non-empty printable ASCII without commas (RFC 5802 `printable`).
fn check_nonce(nonce: &str) -> Result<(), AuthError> {
    let printable = |b: u8| (0x21..=0x7e).contains(&b) && b != b',';
    if nonce.is_empty() || !nonce.bytes().all(printable) {
        return Err(AuthError::Malformed("invalid nonce"));
    }
    Ok(())
}

/// Optional extensions (`x=value`) must at least look like attributes; `m=` is refused.
fn check_extensions<'a>(parts: impl Iterator<Item = &'a str>) -> Result<(), AuthError> {
    for part in parts {
        let bytes = part.as_bytes();
        if bytes.len() < 2 || !bytes[0].is_ascii_alphabetic() || bytes[1] != b'=' {
            return Err(AuthError::Malformed("invalid attribute"));
        }
        if bytes[0] == b'm' {
            return Err(AuthError::MandatoryExtension);
        }
    }
    Ok(())
}

/// RFC 5802 `saslname`: `,` and `=` escaped as `=2C` and `=3D`.
fn escape_username(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

// ---------------------------------------------------------------------------------------------
// Verifier
// ---------------------------------------------------------------------------------------------

/// A stored SCRAM-SHA-256 secret, as in `pg_authid.rolpassword`:
/// `SCRAM-SHA-256$<iterations>:<base64 salt>$<base64 StoredKey>:<base64 ServerKey>`.
///
/// It lets a server check a client's proof without knowing the password. `Debug` hides the keys.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramVerifier {
    /// PBKDF2 iteration count.
    pub iterations: u32,
    /// PBKDF2 salt.
    pub salt: Vec<u8>,
    /// `H(ClientKey)`.
    pub stored_key: [u8; 32],
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: [u8; 32],
}

impl ScramVerifier {
    /// Parses PostgreSQL's verifier format; errors name the part that is wrong.
    pub fn parse(s: &str) -> Result<Self, AuthError> {
        let invalid = AuthError::InvalidVerifier;
        let rest = s
            .strip_prefix(SCRAM_SHA_256)
            .and_then(|r| r.strip_prefix('$'))
            .ok_or(invalid("must start with SCRAM-SHA-256$"))?;
        let (params, keys) = rest
            .split_once('$')
            .ok_or(invalid("missing '$' before keys"))?;
        let (iterations, salt) = params
            .split_once(':')
            .ok_or(invalid("missing ':' after iterations"))?;
        let (stored_key, server_key) = keys
            .split_once(':')
            .ok_or(invalid("missing ':' between keys"))?;

        let iterations = match iterations.parse::<u32>() {
            Ok(n) if n > 0 && iterations.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(invalid("iteration count is not a positive integer")),
        };
        let salt = BASE64
            .decode(salt)
            .map_err(|_| invalid("salt is not valid base64"))?;
        if salt.is_empty() {
            return Err(invalid("salt is empty"));
        }
        let key = |k: &str, what| {
            BASE64
                .decode(k)
                .ok()
                .and_then(|v| v.try_into().ok())
                .ok_or(invalid(what))
        };
        Ok(Self {
            iterations,
            salt,
            stored_key: key(stored_key, "StoredKey is not 32 bytes of base64")?,
            server_key: key(server_key, "ServerKey is not 32 bytes of base64")?,
        })
    }

    /// The verifier PostgreSQL would store for `password` with this `salt` and `iterations`
    /// (password SASLprep'd first). Runs PBKDF2: cost grows with `iterations`.
    pub fn from_password(password: &str, salt: &[u8], iterations: u32) -> Self {
        let salted = salted_password(password, salt, iterations);
        Self {
            iterations,
            salt: salt.to_vec(),
            stored_key: sha256(&client_key(&salted)),
            server_key: server_key(&salted),
        }
    }

    /// A verifier for `password` with a random 16-byte salt and 4096 iterations, like
    /// PostgreSQL's defaults.
    pub fn generate(password: &str) -> Self {
        Self::from_password(
            password,
            &random_bytes(DEFAULT_SALT_LEN),
            DEFAULT_ITERATIONS,
        )
    }
}

impl fmt::Display for ScramVerifier {
    /// PostgreSQL's format, which [`ScramVerifier::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SCRAM_SHA_256}${}:{}${}:{}",
            self.iterations,
            BASE64.encode(&self.salt),
            BASE64.encode(self.stored_key),
            BASE64.encode(self.server_key)
        )
    }
}

impl fmt::Debug for ScramVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramVerifier")
            .field("iterations", &self.iterations)
            .field("salt", &BASE64.encode(&self.salt))
            .field("stored_key", &"<redacted>")
            .field("server_key", &"<redacted>")
            .finish()
    }
}

/// A PostgreSQL SCRAM-SHA-256 verifier string for `password` (random salt, 4096 iterations):
/// what `pgdog hash <password>` prints.
pub fn hash_password(password: &str) -> String {
    ScramVerifier::generate(password).to_string()
}

// ---------------------------------------------------------------------------------------------
// Server side
// ---------------------------------------------------------------------------------------------

/// Where a [`ScramServer`] is in the exchange.
enum ServerState {
    /// Waiting for client-first-message.
    Initial,
    /// server-first-message sent; waiting for client-final-message.
    SentFirst {
        gs2_header: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
    },
    /// Authenticated.
    Done,
    /// A step failed; the exchange cannot continue.
    Failed,
}

impl ServerState {
    fn name(&self) -> &'static str {
        match self {
            Self::Initial => "initial",
            Self::SentFirst { .. } => "sent server-first",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

/// pgdog's side of SCRAM when it authenticates a client against a stored verifier.
///
/// Call [`client_first`](Self::client_first) with the `SASLInitialResponse` data, send the
/// result in `AuthenticationSASLContinue`; call [`client_final`](Self::client_final) with the
/// `SASLResponse` data and send the result in `AuthenticationSASLFinal`. Any error ends the
/// exchange (later calls return [`AuthError::OutOfOrder`]).
pub struct ScramServer {
    verifier: ScramVerifier,
    server_nonce: String,
    state: ServerState,
}

/// The parts of client-first-message the server keeps.
struct ClientFirst<'a> {
    gs2_header: &'a str,
    bare: &'a str,
    nonce: &'a str,
}

impl ScramServer {
    /// Starts an exchange for a user whose secret is `verifier`.
    pub fn new(verifier: ScramVerifier) -> Self {
        Self::with_server_nonce(verifier, random_nonce())
    }

    fn with_server_nonce(verifier: ScramVerifier, server_nonce: String) -> Self {
        Self {
            verifier,
            server_nonce,
            state: ServerState::Initial,
        }
    }

    /// Test-only: a server whose nonce suffix is fixed, to check against known vectors.
    #[cfg(test)]
    pub(crate) fn with_nonce(verifier: ScramVerifier, server_nonce: &str) -> Self {
        Self::with_server_nonce(verifier, server_nonce.to_string())
    }

    /// True once [`client_final`](Self::client_final) has accepted the client's proof.
    pub fn is_authenticated(&self) -> bool {
        matches!(self.state, ServerState::Done)
    }

    /// Reads client-first-message and returns server-first-message
    /// (`r=<client nonce><server nonce>,s=<salt>,i=<iterations>`).
    pub fn client_first(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        if !matches!(self.state, ServerState::Initial) {
            return Err(AuthError::OutOfOrder(
                "client-first-message already received",
            ));
        }
        self.state = ServerState::Failed;
        let first = parse_client_first(as_text(data)?)?;
        let nonce = format!("{}{}", first.nonce, self.server_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&self.verifier.salt),
            self.verifier.iterations
        );
        self.state = ServerState::SentFirst {
            gs2_header: first.gs2_header.to_string(),
            client_first_bare: first.bare.to_string(),
            server_first: server_first.clone(),
            nonce,
        };
        Ok(server_first.into_bytes())
    }

    /// Reads client-final-message, checks channel binding, nonce and proof, and returns
    /// server-final-message (`v=<server signature>`). A wrong proof is
    /// [`AuthError::WrongPassword`].
    pub fn client_final(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let state = std::mem::replace(&mut self.state, ServerState::Failed);
        let ServerState::SentFirst {
            gs2_header,
            client_first_bare,
            server_first,
            nonce,
        } = state
        else {
            return Err(AuthError::OutOfOrder(match state {
                ServerState::Initial => "client-final-message before client-first-message",
                _ => "exchange already finished",
            }));
        };
        let message = as_text(data)?;
        let (without_proof, proof) = parse_client_final(message, &gs2_header, &nonce)?;
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        self.check_proof(&proof, auth_message.as_bytes())?;
        let signature = hmac(&self.verifier.server_key, auth_message.as_bytes());
        self.state = ServerState::Done;
        Ok(format!("v={}", BASE64.encode(signature)).into_bytes())
    }

    /// `H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey`, in constant time.
    fn check_proof(&self, proof: &Key, auth_message: &[u8]) -> Result<(), AuthError> {
        let client_signature = hmac(&self.verifier.stored_key, auth_message);
        let client_key = xor(proof, &client_signature);
        if bool::from(sha256(&client_key).ct_eq(&self.verifier.stored_key)) {
            Ok(())
        } else {
            Err(AuthError::WrongPassword)
        }
    }
}

impl fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramServer")
            .field("verifier", &self.verifier)
            .field("state", &self.state.name())
            .finish_non_exhaustive()
    }
}

/// Splits `gs2-header client-first-message-bare` and checks it as PostgreSQL does.
fn parse_client_first(message: &str) -> Result<ClientFirst<'_>, AuthError> {
    let (cbind_flag, rest) = message
        .split_once(',')
        .ok_or(AuthError::Malformed("missing GS2 header"))?;
    match cbind_flag {
        "n" | "y" => {}
        flag if flag.starts_with("p=") => return Err(AuthError::ChannelBindingNotSupported),
        _ => return Err(AuthError::Malformed("invalid channel binding flag")),
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or(AuthError::Malformed("missing GS2 header"))?;
    if authzid.starts_with("a=") {
        return Err(AuthError::AuthzidNotSupported);
    } else if !authzid.is_empty() {
        return Err(AuthError::Malformed("invalid authorization identity"));
    }
    let gs2_header = &message[..message.len() - bare.len()];

    let mut parts = bare.split(',');
    let user = parts.next();
    if user.is_some_and(|u| u.starts_with("m=")) {
        return Err(AuthError::MandatoryExtension);
    }
    attribute(user, "n=", "missing username (n=)")?; // ignored, like PostgreSQL
    let nonce = attribute(parts.next(), "r=", "missing nonce (r=)")?;
    check_nonce(nonce)?;
    check_extensions(parts)?;
    Ok(ClientFirst {
        gs2_header,
        bare,
        nonce,
    })
}

/// Checks client-final-message against the negotiated header and nonce; returns
/// client-final-message-without-proof and the decoded proof.
fn parse_client_final<'a>(
    message: &'a str,
    gs2_header: &str,
    nonce: &str,
) -> Result<(&'a str, Key), AuthError> {
    let (without_proof, proof) = message
        .rsplit_once(",p=")
        .ok_or(AuthError::Malformed("missing proof (p=)"))?;
    let mut parts = without_proof.split(',');
    let cbind = attribute(parts.next(), "c=", "missing channel binding (c=)")?;
    if decode(cbind, "channel binding (c=)")? != gs2_header.as_bytes() {
        return Err(AuthError::ChannelBindingMismatch);
    }
    let client_nonce = attribute(parts.next(), "r=", "missing nonce (r=)")?;
    if client_nonce != nonce {
        return Err(AuthError::NonceMismatch);
    }
    check_extensions(parts)?;
    let proof = decode_key(
        proof,
        "proof (p=)",
        AuthError::Malformed("proof is not 32 bytes"),
    )?;
    Ok((without_proof, proof))
}

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------

/// Where a [`ScramClient`] is in the exchange.
enum ClientState {
    /// client-first-message not produced yet.
    Initial,
    /// client-first-message sent; waiting for server-first-message.
    SentFirst { client_first_bare: String },
    /// client-final-message sent; the server must prove it knows the password.
    SentFinal { server_signature: Key },
    /// A step failed; the exchange cannot continue.
    Failed,
}

impl ClientState {
    fn name(&self) -> &'static str {
        match self {
            Self::Initial => "initial",
            Self::SentFirst { .. } => "sent client-first",
            Self::SentFinal { .. } => "sent client-final",
            Self::Failed => "failed",
        }
    }
}

/// pgdog's side of SCRAM when it logs in to a PostgreSQL server with a plaintext password.
///
/// Send [`client_first`](Self::client_first) in `SASLInitialResponse` (mechanism
/// [`SCRAM_SHA_256`]); pass the `AuthenticationSASLContinue` data to
/// [`server_first`](Self::server_first) and send the result in `SASLResponse`; pass the
/// `AuthenticationSASLFinal` data to [`server_final`](Self::server_final), which checks that the
/// server knew the password too. `Debug` hides the password.
/// Most PBKDF2 rounds pgdog computes for a server's SCRAM challenge (Postgres uses 4096).
pub const MAX_SERVER_ITERATIONS: u32 = 1_000_000;

pub struct ScramClient {
    password: String,
    user: String,
    nonce: String,
    state: ClientState,
}

impl ScramClient {
    /// Starts an exchange with `password` (SASLprep'd when the keys are derived).
    pub fn new(password: &str) -> Self {
        Self::with_user_and_nonce(password, "", random_nonce())
    }

    fn with_user_and_nonce(password: &str, user: &str, nonce: String) -> Self {
        Self {
            password: password.to_string(),
            user: user.to_string(),
            nonce,
            state: ClientState::Initial,
        }
    }

    /// Test-only: a client with a username in `n=` and a fixed nonce, to check known vectors.
    #[cfg(test)]
    pub(crate) fn with_nonce(password: &str, user: &str, nonce: &str) -> Self {
        Self::with_user_and_nonce(password, user, nonce.to_string())
    }

    /// client-first-message: `n,,n=,r=<nonce>`. Calling it again restarts the exchange.
    pub fn client_first(&mut self) -> Vec<u8> {
        let bare = format!("n={},r={}", escape_username(&self.user), self.nonce);
        let message = format!("{GS2_NO_BINDING}{bare}");
        self.state = ClientState::SentFirst {
            client_first_bare: bare,
        };
        message.into_bytes()
    }

    /// Reads server-first-message, derives the keys and returns client-final-message
    /// (`c=biws,r=<nonce>,p=<proof>`).
    pub fn server_first(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let state = std::mem::replace(&mut self.state, ClientState::Failed);
        let ClientState::SentFirst { client_first_bare } = state else {
            return Err(AuthError::OutOfOrder(match state {
                ClientState::Initial => "server-first-message before client-first-message",
                _ => "server-first-message already received",
            }));
        };
        let server_first = as_text(data)?;
        let (nonce, salt, iterations) = parse_server_first(server_first, &self.nonce)?;

        let salted = salted_password(&self.password, &salt, iterations);
        let client_key = client_key(&salted);
        let without_proof = format!("c={},r={nonce}", BASE64.encode(GS2_NO_BINDING));
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = hmac(&sha256(&client_key), auth_message.as_bytes());
        let proof = xor(&client_key, &client_signature);
        let server_signature = hmac(&server_key(&salted), auth_message.as_bytes());

        self.state = ClientState::SentFinal { server_signature };
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Reads server-final-message and checks the server signature (constant time). An `e=`
    /// answer is [`AuthError::ServerError`]; a wrong signature is
    /// [`AuthError::ServerSignatureMismatch`].
    pub fn server_final(&self, data: &[u8]) -> Result<(), AuthError> {
        let ClientState::SentFinal { server_signature } = &self.state else {
            return Err(AuthError::OutOfOrder(
                "server-final-message before client-final-message",
            ));
        };
        let message = as_text(data)?;
        if let Some(error) = message.strip_prefix("e=") {
            return Err(AuthError::ServerError(error.chars().take(256).collect()));
        }
        let mut parts = message.split(',');
        let verifier = attribute(parts.next(), "v=", "missing server signature (v=)")?;
        if parts.next().is_some() {
            return Err(AuthError::Malformed(
                "garbage at end of server-final-message",
            ));
        }
        let signature = decode_key(
            verifier,
            "server signature (v=)",
            AuthError::ServerSignatureMismatch,
        )?;
        if bool::from(signature.ct_eq(server_signature)) {
            Ok(())
        } else {
            Err(AuthError::ServerSignatureMismatch)
        }
    }
}

impl fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramClient")
            .field("state", &self.state.name())
            .finish_non_exhaustive()
    }
}

/// Parses `r=<nonce>,s=<salt>,i=<iterations>` (nothing after, as libpq requires) and checks
/// that the nonce extends ours.
fn parse_server_first<'a>(
    message: &'a str,
    client_nonce: &str,
) -> Result<(&'a str, Vec<u8>, u32), AuthError> {
    let mut parts = message.split(',');
    let first = parts.next();
    if first.is_some_and(|p| p.starts_with("m=")) {
        return Err(AuthError::MandatoryExtension);
    }
    let nonce = attribute(first, "r=", "missing nonce (r=)")?;
    check_nonce(nonce)?;
    if nonce.len() <= client_nonce.len() || !nonce.starts_with(client_nonce) {
        return Err(AuthError::NonceMismatch);
    }
    let salt = decode(
        attribute(parts.next(), "s=", "missing salt (s=)")?,
        "salt (s=)",
    )?;
    if salt.is_empty() {
        return Err(AuthError::Malformed("empty salt"));
    }
    let iterations = attribute(parts.next(), "i=", "missing iteration count (i=)")?;
    let iterations = match iterations.parse::<u32>() {
        Ok(n) if n > 0 && iterations.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => return Err(AuthError::Malformed("invalid iteration count")),
    };
    if iterations > MAX_SERVER_ITERATIONS {
        // A server (or a man in the middle) asking for billions of rounds would pin a core.
        return Err(AuthError::Malformed(
            "iteration count above 1,000,000 (the most pgdog computes for a server)",
        ));
    }
    if parts.next().is_some() {
        return Err(AuthError::Malformed(
            "garbage at end of server-first-message",
        ));
    }
    Ok((nonce, salt, iterations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    // RFC 7677 §3 test vector.
    const RFC_PASSWORD: &str = "pencil";
    const RFC_USER: &str = "user";
    const RFC_CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const RFC_SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const RFC_SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const RFC_CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const RFC_SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const RFC_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                    p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const RFC_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    /// `rolpassword` of `CREATE ROLE u LOGIN PASSWORD 'secret'` with
    /// `password_encryption='scram-sha-256'`, from PostgreSQL 18.6.
    const PG_VERIFIER_SECRET: &str = "SCRAM-SHA-256$4096:laijsndz/m+r5nBz2V/A4A==$\
        A4GDf5W6ZdyvvzJDo3/YUBwRGZR9SJgcIYOLhZP9Zn8=:TIKWt6jBw8TiuniOI0ZHujRpOb3qVzcnc22Dnsqi3lY=";

    fn rfc_verifier() -> ScramVerifier {
        let salt = BASE64.decode(RFC_SALT).unwrap();
        ScramVerifier::from_password(RFC_PASSWORD, &salt, 4096)
    }

    fn pg_verifier() -> ScramVerifier {
        ScramVerifier::parse(PG_VERIFIER_SECRET).unwrap()
    }

    /// Runs a whole exchange in memory; returns the first error of either side.
    fn exchange(client: &mut ScramClient, server: &mut ScramServer) -> Result<(), AuthError> {
        let server_first = server.client_first(&client.client_first())?;
        let server_final = server.client_final(&client.server_first(&server_first)?)?;
        client.server_final(&server_final)
    }

    /// A server (RFC 7677 verifier and nonce) that has answered the RFC client-first-message,
    /// plus the matching client-final-message. No PBKDF2 per call: the verifier is cached.
    fn server_awaiting_final() -> (ScramServer, String) {
        static VERIFIER: OnceLock<ScramVerifier> = OnceLock::new();
        let verifier = VERIFIER.get_or_init(rfc_verifier).clone();
        let mut server = ScramServer::with_nonce(verifier, RFC_SERVER_NONCE);
        server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        (server, RFC_CLIENT_FINAL.to_string())
    }

    /// Tiny deterministic PRNG for mutation tests.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn rfc7677_client_side() {
        let mut client = ScramClient::with_nonce(RFC_PASSWORD, RFC_USER, RFC_CLIENT_NONCE);
        assert_eq!(client.client_first(), RFC_CLIENT_FIRST.as_bytes());
        let client_final = client.server_first(RFC_SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(client_final).unwrap(), RFC_CLIENT_FINAL);
        client.server_final(RFC_SERVER_FINAL.as_bytes()).unwrap();
    }

    #[test]
    fn rfc7677_server_side() {
        let mut server = ScramServer::with_nonce(rfc_verifier(), RFC_SERVER_NONCE);
        let server_first = server.client_first(RFC_CLIENT_FIRST.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(server_first).unwrap(), RFC_SERVER_FIRST);
        assert!(!server.is_authenticated());
        let server_final = server.client_final(RFC_CLIENT_FINAL.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(server_final).unwrap(), RFC_SERVER_FINAL);
        assert!(server.is_authenticated());
    }

    #[test]
    fn postgres_verifier_parses_and_round_trips() {
        let verifier = pg_verifier();
        assert_eq!(verifier.iterations, 4096);
        assert_eq!(verifier.salt.len(), 16);
        assert_eq!(verifier.to_string(), PG_VERIFIER_SECRET);
        let again = ScramVerifier::from_password("secret", &verifier.salt, verifier.iterations);
        assert_eq!(again, verifier);
    }

    #[test]
    fn postgres_verifier_authenticates() {
        let mut server = ScramServer::new(pg_verifier());
        exchange(&mut ScramClient::new("secret"), &mut server).unwrap();
        assert!(server.is_authenticated());
    }

    #[test]
    fn postgres_verifier_rejects_wrong_password() {
        let mut server = ScramServer::new(pg_verifier());
        let err = exchange(&mut ScramClient::new("Secret"), &mut server).unwrap_err();
        assert_eq!(err, AuthError::WrongPassword);
        assert!(!server.is_authenticated());
        // The exchange is over after a failure.
        assert!(matches!(
            server.client_final(b"c=biws"),
            Err(AuthError::OutOfOrder(_))
        ));
    }

    #[test]
    fn hash_password_round_trip() {
        let hashed = hash_password("hunter2");
        let verifier = ScramVerifier::parse(&hashed).unwrap();
        assert!(hashed.starts_with("SCRAM-SHA-256$4096:"));
        assert_eq!(verifier.salt.len(), 16);
        assert_eq!(verifier.to_string(), hashed);
        assert_ne!(hash_password("hunter2"), hashed, "salt must be random");
        exchange(
            &mut ScramClient::new("hunter2"),
            &mut ScramServer::new(verifier.clone()),
        )
        .unwrap();
        assert_eq!(
            exchange(
                &mut ScramClient::new("hunter3"),
                &mut ScramServer::new(verifier)
            ),
            Err(AuthError::WrongPassword)
        );
    }

    #[test]
    fn saslprep_applies_on_both_sides() {
        // U+00A0 is mapped to a space, so both spellings are the same password.
        let verifier = ScramVerifier::generate("pass word");
        exchange(
            &mut ScramClient::new("pass\u{00A0}word"),
            &mut ScramServer::new(verifier),
        )
        .unwrap();
    }

    #[test]
    fn debug_hides_secrets() {
        let verifier = pg_verifier();
        let shown = format!(
            "{verifier:?} {:?} {:?}",
            ScramServer::new(verifier.clone()),
            ScramClient::new("topsecret")
        );
        assert!(!shown.contains(&BASE64.encode(verifier.stored_key)));
        assert!(!shown.contains(&BASE64.encode(verifier.server_key)));
        assert!(!shown.contains("topsecret"));
    }

    #[test]
    fn gs2_header_y_is_accepted() {
        let mut server = ScramServer::new(rfc_verifier());
        server.client_first(b"y,,n=,r=abc").unwrap();
        // "y,," must be echoed as c=eSws, not c=biws.
        let mut server2 = ScramServer::new(rfc_verifier());
        server2.client_first(b"y,,n=,r=abc").unwrap();
        let nonce = format!("abc{}", server2.server_nonce);
        let bad = format!("c=biws,r={nonce},p={}", BASE64.encode([0u8; 32]));
        assert_eq!(
            server2.client_final(bad.as_bytes()),
            Err(AuthError::ChannelBindingMismatch)
        );
        let nonce = format!("abc{}", server.server_nonce);
        let wrong_proof = format!("c=eSws,r={nonce},p={}", BASE64.encode([0u8; 32]));
        assert_eq!(
            server.client_final(wrong_proof.as_bytes()),
            Err(AuthError::WrongPassword)
        );
    }

    #[test]
    fn gs2_header_y_full_exchange() {
        // Build a y,, exchange by hand from the client-side math.
        let verifier = rfc_verifier();
        let mut server = ScramServer::with_nonce(verifier, RFC_SERVER_NONCE);
        let server_first = server
            .client_first(b"y,,n=user,r=rOprNGfwEbeRWgbNEkqO")
            .unwrap();
        let server_first = String::from_utf8(server_first).unwrap();
        let salted = salted_password(RFC_PASSWORD, &BASE64.decode(RFC_SALT).unwrap(), 4096);
        let without_proof = format!("c=eSws,r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE}");
        let auth = format!("n=user,r={RFC_CLIENT_NONCE},{server_first},{without_proof}");
        let ck = client_key(&salted);
        let proof = xor(&ck, &hmac(&sha256(&ck), auth.as_bytes()));
        let client_final = format!("{without_proof},p={}", BASE64.encode(proof));
        server.client_final(client_final.as_bytes()).unwrap();
        assert!(server.is_authenticated());
    }

    #[test]
    fn client_first_rejections() {
        let cases: &[(&[u8], AuthError)] = &[
            (
                b"p=tls-server-end-point,,n=,r=abc",
                AuthError::ChannelBindingNotSupported,
            ),
            (b"n,a=admin,n=,r=abc", AuthError::AuthzidNotSupported),
            (b"n,,m=ext,n=,r=abc", AuthError::MandatoryExtension),
            (b"n,,n=,r=abc,m=ext", AuthError::MandatoryExtension),
            (
                b"x,,n=,r=abc",
                AuthError::Malformed("invalid channel binding flag"),
            ),
            (b"", AuthError::Malformed("missing GS2 header")),
            (b"n", AuthError::Malformed("missing GS2 header")),
            (b"n,", AuthError::Malformed("missing GS2 header")),
            (
                b"n,x,n=,r=abc",
                AuthError::Malformed("invalid authorization identity"),
            ),
            (b"n,,", AuthError::Malformed("missing username (n=)")),
            (b"n,,r=abc", AuthError::Malformed("missing username (n=)")),
            (b"n,,n=", AuthError::Malformed("missing nonce (r=)")),
            (b"n,,n=,x=abc", AuthError::Malformed("missing nonce (r=)")),
            (b"n,,n=,r=", AuthError::Malformed("invalid nonce")),
            (b"n,,n=,r=a b", AuthError::Malformed("invalid nonce")),
            (b"n,,n=,r=abc,", AuthError::Malformed("invalid attribute")),
            (
                b"n,,n=,r=abc,garbage",
                AuthError::Malformed("invalid attribute"),
            ),
            (b"n,,n=,r=\xff\xfe", AuthError::NotUtf8),
            (
                b"\x00\x01\x02\x03",
                AuthError::Malformed("missing GS2 header"),
            ),
        ];
        for (data, expected) in cases {
            let mut server = ScramServer::new(pg_verifier());
            assert_eq!(
                &server.client_first(data).unwrap_err(),
                expected,
                "{:?}",
                data
            );
            // No second chance after an error.
            assert!(matches!(
                server.client_first(b"n,,n=,r=abc"),
                Err(AuthError::OutOfOrder(_))
            ));
        }
        // Extensions and a username are accepted (and the username ignored).
        ScramServer::new(pg_verifier())
            .client_first(b"n,,n=anyone,r=abc,x=ext")
            .unwrap();
    }

    #[test]
    fn client_final_rejections() {
        /// Builds a bad client-final from the good one's (without_proof, nonce, proof).
        type Mutation = fn(&str, &str, &str) -> Vec<u8>;
        let flip_proof: Mutation = |without_proof, _, proof| {
            let mut flipped = BASE64.decode(proof).unwrap();
            flipped[0] ^= 1;
            format!("{without_proof},p={}", BASE64.encode(flipped)).into()
        };
        let cases: Vec<(Mutation, AuthError)> = vec![
            (
                |_, n, p| format!("c=biws,r={n}X,p={p}").into(),
                AuthError::NonceMismatch,
            ),
            (
                |_, n, p| format!("c=biws,r={},p={p}", &n[..n.len() - 1]).into(),
                AuthError::NonceMismatch,
            ),
            (
                |_, n, p| format!("c=eSws,r={n},p={p}").into(),
                AuthError::ChannelBindingMismatch,
            ),
            (
                |_, n, p| format!("c=!!,r={n},p={p}").into(),
                AuthError::InvalidBase64("channel binding (c=)"),
            ),
            (
                |_, n, _| format!("c=biws,r={n},p={}", BASE64.encode([1u8; 31])).into(),
                AuthError::Malformed("proof is not 32 bytes"),
            ),
            (
                |_, n, _| format!("c=biws,r={n},p=%%%").into(),
                AuthError::InvalidBase64("proof (p=)"),
            ),
            (
                |_, n, p| format!("r={n},p={p}").into(),
                AuthError::Malformed("missing channel binding (c=)"),
            ),
            (
                |_, _, p| format!("c=biws,p={p}").into(),
                AuthError::Malformed("missing nonce (r=)"),
            ),
            (
                |_, n, p| format!("c=biws,r={n},zz,p={p}").into(),
                AuthError::Malformed("invalid attribute"),
            ),
            (
                |_, n, p| format!("c=biws,r={n},m=x,p={p}").into(),
                AuthError::MandatoryExtension,
            ),
            (
                |w, _, _| w.into(),
                AuthError::Malformed("missing proof (p=)"),
            ),
            (flip_proof, AuthError::WrongPassword),
            (
                |_, _, _| Vec::new(),
                AuthError::Malformed("missing proof (p=)"),
            ),
            (|_, _, _| b"\xc3\x28,p=".to_vec(), AuthError::NotUtf8),
        ];
        for (mutate, expected) in cases {
            let (mut server, good) = server_awaiting_final();
            let (without_proof, proof) = good.rsplit_once(",p=").unwrap();
            let nonce = without_proof.strip_prefix("c=biws,r=").unwrap();
            let data = mutate(without_proof, nonce, proof);
            let shown = String::from_utf8_lossy(&data).into_owned();
            assert_eq!(server.client_final(&data).unwrap_err(), expected, "{shown}");
            assert!(!server.is_authenticated());
        }
        // The untouched message works.
        let (mut server, good) = server_awaiting_final();
        server.client_final(good.as_bytes()).unwrap();
    }

    #[test]
    fn server_first_rejections() {
        let nonce = "clientnonce";
        let cases: &[(&str, AuthError)] = &[
            (
                "r=othernonceXYZ,s=c2FsdA==,i=4096",
                AuthError::NonceMismatch,
            ),
            ("r=clientnonce,s=c2FsdA==,i=4096", AuthError::NonceMismatch),
            ("r=clientnonc,s=c2FsdA==,i=4096", AuthError::NonceMismatch),
            (
                "m=x,r=clientnonceXYZ,s=c2FsdA==,i=4096",
                AuthError::MandatoryExtension,
            ),
            (
                "s=c2FsdA==,i=4096",
                AuthError::Malformed("missing nonce (r=)"),
            ),
            (
                "r=clientnonceXYZ,i=4096",
                AuthError::Malformed("missing salt (s=)"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==",
                AuthError::Malformed("missing iteration count (i=)"),
            ),
            (
                "r=clientnonceXYZ,s=***,i=4096",
                AuthError::InvalidBase64("salt (s=)"),
            ),
            (
                "r=clientnonceXYZ,s=,i=4096",
                AuthError::Malformed("empty salt"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==,i=0",
                AuthError::Malformed("invalid iteration count"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==,i=-1",
                AuthError::Malformed("invalid iteration count"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==,i=+1",
                AuthError::Malformed("invalid iteration count"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==,i=99999999999",
                AuthError::Malformed("invalid iteration count"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==,i=",
                AuthError::Malformed("invalid iteration count"),
            ),
            (
                "r=clientnonceXYZ,s=c2FsdA==,i=1,x=y",
                AuthError::Malformed("garbage at end of server-first-message"),
            ),
            (
                "r=clientnonce\u{e9},s=c2FsdA==,i=1",
                AuthError::Malformed("invalid nonce"),
            ),
            ("", AuthError::Malformed("missing nonce (r=)")),
        ];
        for (data, expected) in cases {
            let mut client = ScramClient::with_nonce("pw", "", nonce);
            client.client_first();
            assert_eq!(
                &client.server_first(data.as_bytes()).unwrap_err(),
                expected,
                "{data}"
            );
            assert!(matches!(
                client.server_final(b"v=x"),
                Err(AuthError::OutOfOrder(_))
            ));
        }
        let mut client = ScramClient::with_nonce("pw", "", nonce);
        client.client_first();
        assert_eq!(
            client.server_first(b"r=clientnonceXYZ\xff"),
            Err(AuthError::NotUtf8)
        );
    }

    #[test]
    fn server_final_rejections() {
        let ready = || {
            let mut client = ScramClient::with_nonce(RFC_PASSWORD, RFC_USER, RFC_CLIENT_NONCE);
            client.client_first();
            client.server_first(RFC_SERVER_FIRST.as_bytes()).unwrap();
            client
        };
        let mut wrong = BASE64.decode(&RFC_SERVER_FINAL[2..]).unwrap();
        wrong[31] ^= 0x80;
        let wrong = format!("v={}", BASE64.encode(wrong));
        let trailing = format!("{RFC_SERVER_FINAL},x=1");
        let cases: Vec<(&[u8], AuthError)> = vec![
            (wrong.as_bytes(), AuthError::ServerSignatureMismatch),
            (b"v=AAAA", AuthError::ServerSignatureMismatch),
            (b"v=@@@", AuthError::InvalidBase64("server signature (v=)")),
            (
                b"e=invalid-proof",
                AuthError::ServerError("invalid-proof".into()),
            ),
            (b"", AuthError::Malformed("missing server signature (v=)")),
            (
                b"x=1",
                AuthError::Malformed("missing server signature (v=)"),
            ),
            (
                trailing.as_bytes(),
                AuthError::Malformed("garbage at end of server-final-message"),
            ),
            (b"v=\xff", AuthError::NotUtf8),
        ];
        for (data, expected) in cases {
            assert_eq!(
                ready().server_final(data).unwrap_err(),
                expected,
                "{:?}",
                data
            );
        }
        ready().server_final(RFC_SERVER_FINAL.as_bytes()).unwrap();
    }

    #[test]
    fn server_from_other_verifier_is_detected_by_client() {
        // A server with a verifier for another password can't produce the right signature;
        // it would reject the proof first, so forge its final with its own server key.
        let mut client = ScramClient::new("secret");
        let mut server = ScramServer::new(ScramVerifier::generate("other"));
        let server_first = server.client_first(&client.client_first()).unwrap();
        client.server_first(&server_first).unwrap();
        let forged = format!(
            "v={}",
            BASE64.encode(hmac(&server.verifier.server_key, b"x"))
        );
        assert_eq!(
            client.server_final(forged.as_bytes()),
            Err(AuthError::ServerSignatureMismatch)
        );
    }

    #[test]
    fn out_of_order_calls() {
        let mut server = ScramServer::new(pg_verifier());
        assert!(matches!(
            server.client_final(RFC_CLIENT_FINAL.as_bytes()),
            Err(AuthError::OutOfOrder(_))
        ));
        let mut client = ScramClient::new("x");
        assert!(matches!(
            client.server_first(RFC_SERVER_FIRST.as_bytes()),
            Err(AuthError::OutOfOrder(_))
        ));
        assert!(matches!(
            client.server_final(RFC_SERVER_FINAL.as_bytes()),
            Err(AuthError::OutOfOrder(_))
        ));
        // After success, the server refuses more messages.
        let mut server = ScramServer::new(pg_verifier());
        exchange(&mut ScramClient::new("secret"), &mut server).unwrap();
        assert!(matches!(
            server.client_final(b"c=biws"),
            Err(AuthError::OutOfOrder(_))
        ));
        assert!(matches!(
            server.client_first(b"n,,n=,r=a"),
            Err(AuthError::OutOfOrder(_))
        ));
    }

    #[test]
    fn client_nonces_are_random_and_printable() {
        let a = ScramClient::new("x").client_first();
        let b = ScramClient::new("x").client_first();
        assert_ne!(a, b);
        let text = String::from_utf8(a).unwrap();
        let nonce = text.strip_prefix("n,,n=,r=").unwrap();
        assert_eq!(nonce.len(), 24);
        check_nonce(nonce).unwrap();
    }

    #[test]
    fn server_nonce_is_18_random_bytes_appended() {
        let mut server = ScramServer::new(pg_verifier());
        let first = String::from_utf8(server.client_first(b"n,,n=,r=abc").unwrap()).unwrap();
        let nonce = first
            .strip_prefix("r=abc")
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        assert_eq!(BASE64.decode(nonce).unwrap().len(), 18);
        assert!(first.ends_with(",s=laijsndz/m+r5nBz2V/A4A==,i=4096"));
    }

    #[test]
    fn verifier_parse_rejections() {
        let good = PG_VERIFIER_SECRET;
        let (head, keys) = good.rsplit_once('$').unwrap();
        let (stored, server) = keys.split_once(':').unwrap();
        let cases = [
            String::new(),
            "md5b52328d7451bfeace80c4b8c338106f9".into(),
            good.replacen("SCRAM-SHA-256", "SCRAM-SHA-1", 1),
            good.replacen("4096", "0", 1),
            good.replacen("4096", "-5", 1),
            good.replacen("4096", "+4096", 1),
            good.replacen("4096", "", 1),
            good.replacen("4096", "40x6", 1),
            good.replacen("4096:", "4096", 1),
            good.replacen("laijsndz/m+r5nBz2V/A4A==", "", 1),
            good.replacen("laijsndz/m+r5nBz2V/A4A==", "not base64!", 1),
            format!("{head}${stored}"),
            format!("{head}${stored}:{}", &server[..server.len() - 4]),
            format!("{head}${}:{server}", BASE64.encode([0u8; 31])),
            head.to_string(),
            "SCRAM-SHA-256$".into(),
            "SCRAM-SHA-256$4096:$:".into(),
        ];
        for bad in &cases {
            assert!(
                matches!(
                    ScramVerifier::parse(bad),
                    Err(AuthError::InvalidVerifier(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn mutated_messages_never_panic() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let (_, client_final) = server_awaiting_final();
        let seeds: [&[u8]; 4] = [
            RFC_CLIENT_FIRST.as_bytes(),
            RFC_SERVER_FIRST.as_bytes(),
            client_final.as_bytes(),
            RFC_SERVER_FINAL.as_bytes(),
        ];
        for round in 0..400 {
            let seed = seeds[round % seeds.len()];
            let mut data = seed.to_vec();
            for _ in 0..1 + xorshift(&mut rng) % 4 {
                let r = xorshift(&mut rng);
                match r % 4 {
                    0 if !data.is_empty() => data.truncate((r >> 8) as usize % data.len()),
                    1 if !data.is_empty() => {
                        let i = (r >> 8) as usize % data.len();
                        data[i] = (r >> 32) as u8;
                    }
                    2 => data.insert((r >> 8) as usize % (data.len() + 1), (r >> 32) as u8),
                    _ => data.extend_from_slice(b",p=,,=\xff"),
                }
            }
            // Every side and step sees the mutated bytes; only the result's absence of a panic,
            // and never a successful authentication, matter.
            let mut server = ScramServer::new(pg_verifier());
            let _ = server.client_first(&data);
            let (mut server, _) = server_awaiting_final();
            if data != client_final.as_bytes() {
                assert!(server.client_final(&data).is_err());
            }
            let mut client = ScramClient::with_nonce(RFC_PASSWORD, RFC_USER, RFC_CLIENT_NONCE);
            client.client_first();
            // Skip key derivation when a mutation made the iteration count huge (slow, not wrong).
            let parsed = std::str::from_utf8(&data)
                .ok()
                .and_then(|text| parse_server_first(text, RFC_CLIENT_NONCE).ok());
            let cheap = !matches!(parsed, Some((_, _, n)) if n > DEFAULT_ITERATIONS);
            if cheap && client.server_first(&data).is_ok() {
                let _ = client.server_final(&data);
            }
            let _ = ScramVerifier::parse(&String::from_utf8_lossy(&data));
        }
    }
}
