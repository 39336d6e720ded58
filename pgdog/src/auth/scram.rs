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

/// `Ok` when the two keys are equal (compared in constant time), else `otherwise`.
fn same_key(a: &Key, b: &Key, otherwise: AuthError) -> Result<(), AuthError> {
    if bool::from(a.ct_eq(b)) {
        Ok(())
    } else {
        Err(otherwise)
    }
}

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
    /// Equality in constant time (keys compared whole, whatever differs first).
    pub fn same_as(&self, other: &ScramVerifier) -> bool {
        let keys =
            self.stored_key.ct_eq(&other.stored_key) & self.server_key.ct_eq(&other.server_key);
        bool::from(keys) && self.salt == other.salt && self.iterations == other.iterations
    }

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
    /// The verifiers a proof may match; the first one's salt and iterations are offered.
    verifiers: Vec<ScramVerifier>,
    server_nonce: String,
    state: ServerState,
    /// After a proof matched: which verifier, and the client key it revealed.
    matched: Option<(usize, Key)>,
    /// The salt offered when there is no verifier ([`ScramServer::mock`]).
    mock_salt: Option<Vec<u8>>,
}

/// What a client's SCRAM proof reveals once it matched a verifier: its client key, with the
/// verifier's server key, salt and iterations. It logs in to a server holding the same
/// verifier as that user (pass-through) without the password. `Debug` hides the keys.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ScramKeys {
    pub client_key: [u8; 32],
    pub server_key: [u8; 32],
    pub salt: Vec<u8>,
    pub iterations: u32,
}

impl fmt::Debug for ScramKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramKeys")
            .field("iterations", &self.iterations)
            .field("salt", &BASE64.encode(&self.salt))
            .finish_non_exhaustive()
    }
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
        Self::with_server_nonce(vec![verifier], random_nonce())
    }

    /// An exchange where the proof may match any of `verifiers` (password rotation). The
    /// client derives its proof from the salt and iterations offered, those of the first
    /// verifier: only the verifiers sharing them can match. Empty: no proof matches.
    pub fn any_of(verifiers: Vec<ScramVerifier>) -> Self {
        Self::with_server_nonce(verifiers, random_nonce())
    }

    fn with_server_nonce(verifiers: Vec<ScramVerifier>, server_nonce: String) -> Self {
        Self {
            verifiers,
            server_nonce,
            state: ServerState::Initial,
            matched: None,
            mock_salt: None,
        }
    }

    /// Test-only: a server whose nonce suffix is fixed, to check against known vectors.
    #[cfg(test)]
    pub(crate) fn with_nonce(verifier: ScramVerifier, server_nonce: &str) -> Self {
        Self::with_server_nonce(vec![verifier], server_nonce.to_string())
    }

    /// After a successful exchange: the index of the verifier the proof matched.
    pub fn matched(&self) -> Option<usize> {
        self.matched.map(|(i, _)| i)
    }

    /// After a successful exchange: the client's keys for logging in to a server that holds
    /// the matched verifier.
    pub fn keys(&self) -> Option<ScramKeys> {
        let (i, client_key) = self.matched?;
        let v = &self.verifiers[i];
        Some(ScramKeys {
            client_key,
            server_key: v.server_key,
            salt: v.salt.clone(),
            iterations: v.iterations,
        })
    }

    /// An exchange no proof passes, offering `salt` (an unknown user's: the caller makes it
    /// the same at every attempt, as Postgres' mock salt, so it does not give the user away).
    pub fn mock(salt: Vec<u8>) -> Self {
        let mut server = Self::with_server_nonce(Vec::new(), random_nonce());
        server.mock_salt = Some(salt);
        server
    }

    /// The salt and iterations offered: the first verifier's, else the mock salt (or a random
    /// one) with the default iterations.
    fn offered(&self) -> (Vec<u8>, u32) {
        match (self.verifiers.first(), &self.mock_salt) {
            (Some(v), _) => (v.salt.clone(), v.iterations),
            (None, Some(salt)) => (salt.clone(), DEFAULT_ITERATIONS),
            (None, None) => (random_bytes(DEFAULT_SALT_LEN), DEFAULT_ITERATIONS),
        }
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
        let (salt, iterations) = self.offered();
        let server_first = format!("r={nonce},s={},i={iterations}", BASE64.encode(&salt));
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
        let (index, client_key) = self.check_proof(&proof, &auth_message)?;
        let signature = hmac(&self.verifiers[index].server_key, auth_message.as_bytes());
        self.matched = Some((index, client_key));
        self.state = ServerState::Done;
        Ok(format!("v={}", BASE64.encode(signature)).into_bytes())
    }

    /// The first verifier (of those sharing the offered salt and iterations) for which
    /// `H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey`, compared in constant time;
    /// with the client key the proof revealed.
    fn check_proof(&self, proof: &Key, auth_message: &str) -> Result<(usize, Key), AuthError> {
        let (salt, iterations) = self.offered();
        for (i, v) in self.verifiers.iter().enumerate() {
            if v.salt != salt || v.iterations != iterations {
                continue;
            }
            let client_signature = hmac(&v.stored_key, auth_message.as_bytes());
            let client_key = xor(proof, &client_signature);
            if same_key(
                &sha256(&client_key),
                &v.stored_key,
                AuthError::WrongPassword,
            )
            .is_ok()
            {
                return Ok((i, client_key));
            }
        }
        Err(AuthError::WrongPassword)
    }
}

impl fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramServer")
            .field("verifiers", &self.verifiers)
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
    secret: ClientSecret,
    user: String,
    nonce: String,
    state: ClientState,
}

impl ScramClient {
    /// Starts an exchange with `password` (SASLprep'd when the keys are derived).
    pub fn new(password: &str) -> Self {
        Self::with_user_and_nonce(password, "", random_nonce())
    }

    /// Starts an exchange with the keys a client revealed to pgdog ([`ScramServer::keys`]):
    /// the server must offer the same salt and iterations (it holds the same verifier).
    pub fn with_keys(keys: ScramKeys) -> Self {
        Self {
            secret: ClientSecret::Keys(keys),
            user: String::new(),
            nonce: random_nonce(),
            state: ClientState::Initial,
        }
    }

    fn with_user_and_nonce(password: &str, user: &str, nonce: String) -> Self {
        Self {
            secret: ClientSecret::Password(password.to_string()),
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

        let (client_key, server_key) = match &self.secret {
            ClientSecret::Password(password) => {
                let salted = salted_password(password, &salt, iterations);
                (client_key(&salted), server_key(&salted))
            }
            ClientSecret::Keys(k) if k.salt == salt && k.iterations == iterations => {
                (k.client_key, k.server_key)
            }
            ClientSecret::Keys(_) => return Err(AuthError::OtherVerifier),
        };
        let without_proof = format!("c={},r={nonce}", BASE64.encode(GS2_NO_BINDING));
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = hmac(&sha256(&client_key), auth_message.as_bytes());
        let proof = xor(&client_key, &client_signature);
        let server_signature = hmac(&server_key, auth_message.as_bytes());

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
        same_key(
            &signature,
            server_signature,
            AuthError::ServerSignatureMismatch,
        )
    }
}

/// What a [`ScramClient`] proves it knows.
enum ClientSecret {
    Password(String),
    Keys(ScramKeys),
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
#[path = "scram_tests.rs"]
mod tests;
