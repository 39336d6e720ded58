//! SCRAM-SHA-256: the RFC 7677 vectors, both sides against each other and against Postgres'
//! verifier format, and every malformed message a peer could send.
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
        BASE64.encode(hmac(&server.verifiers[0].server_key, b"x"))
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

#[test]
fn keys_from_a_clients_proof_log_in_to_a_server_with_the_same_verifier() {
    let mut pgdog = ScramServer::new(pg_verifier());
    assert!(pgdog.keys().is_none(), "no keys before the proof");
    exchange(&mut ScramClient::new("secret"), &mut pgdog).unwrap();
    let keys = pgdog.keys().expect("keys after the proof");
    // The Postgres server holds the same verifier: the keys alone log in, and the server's
    // signature is checked as with a password.
    let mut server = ScramServer::new(pg_verifier());
    exchange(&mut ScramClient::with_keys(keys.clone()), &mut server).unwrap();
    assert!(server.is_authenticated());
    // A server whose verifier for the same password has another salt: refused before any
    // proof is sent.
    let other = ScramVerifier::from_password("secret", b"another salt", 4096);
    let err = exchange(
        &mut ScramClient::with_keys(keys.clone()),
        &mut ScramServer::new(other),
    )
    .unwrap_err();
    assert_eq!(err, AuthError::OtherVerifier);
    // A wrong password reveals no keys.
    let mut pgdog = ScramServer::new(pg_verifier());
    assert!(exchange(&mut ScramClient::new("wrong"), &mut pgdog).is_err());
    assert!(pgdog.keys().is_none());
    assert!(!format!("{keys:?}").contains(&format!("{:?}", keys.client_key)));
}

#[test]
fn any_of_several_verifiers_sharing_a_salt_matches() {
    let salt = b"one salt for all";
    let verifiers = vec![
        ScramVerifier::from_password("old", salt, 4096),
        ScramVerifier::from_password("new", salt, 4096),
        // Another salt: never offered, so never matched.
        ScramVerifier::from_password("third", b"other salt", 4096),
    ];
    for (password, index) in [("old", 0), ("new", 1)] {
        let mut server = ScramServer::any_of(verifiers.clone());
        exchange(&mut ScramClient::new(password), &mut server).unwrap();
        assert_eq!(server.matched(), Some(index), "{password}");
    }
    for password in ["third", "neither"] {
        let mut server = ScramServer::any_of(verifiers.clone());
        let err = exchange(&mut ScramClient::new(password), &mut server).unwrap_err();
        assert_eq!(err, AuthError::WrongPassword, "{password}");
    }
    // No verifier at all (an unknown user): the exchange runs and fails the same way.
    let mut server = ScramServer::any_of(Vec::new());
    let err = exchange(&mut ScramClient::new("x"), &mut server).unwrap_err();
    assert_eq!(err, AuthError::WrongPassword);
}
