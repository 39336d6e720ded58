//! TLS: with a certificate configured, pgdog answers SSLRequest with `S`, completes a TLS
//! handshake (rustls) and serves the session over it; without one it answers `N`.
use crate::common;
use std::process::Command;

/// A Python client speaking the protocol by hand over TLS: SSLRequest, handshake, startup
/// (trust auth), `SELECT 40 + 2`; prints the SSL answer byte, the TLS version and the value.
const CLIENT: &str = r#"
import socket, ssl, struct, sys
port, user, db = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(struct.pack("!ii", 8, 80877103))
answer = s.recv(1)
print("answer", answer.decode())
if answer == b"S":
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(s)
    print("tls", s.version())
params = b"user\0" + user.encode() + b"\0database\0" + db.encode() + b"\0\0"
s.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
def read_msg():
    head = b""
    while len(head) < 5:
        head += s.recv(5 - len(head))
    tag, length = head[:1], struct.unpack("!i", head[1:])[0]
    body = b""
    while len(body) < length - 4:
        body += s.recv(length - 4 - len(body))
    return tag, body
while True:
    tag, body = read_msg()
    if tag == b"E":
        print("error", body); sys.exit(1)
    if tag == b"Z":
        break
q = b"SELECT 40 + 2\0"
s.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)
while True:
    tag, body = read_msg()
    if tag == b"D":
        n = struct.unpack("!i", body[2:6])[0]
        print("value", body[6:6 + n].decode())
    if tag == b"Z":
        break
"#;

fn run_client(port: u16) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(CLIENT)
        .arg(port.to_string())
        .args([common::USER, common::DB])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "client failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tls_session_when_configured_and_plain_otherwise() {
    let dir = std::env::temp_dir().join(format!("pgdog-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    common::self_signed(&dir, "server", "/CN=localhost", 1);
    let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));

    let topo = topology::Topology::single().unwrap();
    let general = format!(
        "auth_type = \"trust\"\ntls_certificate = \"{}\"\ntls_private_key = \"{}\"",
        cert.display(),
        key.display()
    );
    let proxy = common::start(&topo, &general, 2);
    let out = run_client(proxy.port);
    assert!(out.contains("answer S"), "{out}");
    assert!(
        out.contains("tls TLSv1.3") || out.contains("tls TLSv1.2"),
        "{out}"
    );
    assert!(out.contains("value 42"), "{out}");
    drop(proxy);

    // tls_mode = "required": TLS clients in, plaintext ones refused with 28000.
    let required = common::start(&topo, &format!("{general}\ntls_mode = \"required\""), 2);
    assert!(run_client(required.port).contains("value 42"));
    let plain_client = required
        .psql_command(common::USER, "", common::DB)
        .env("PGSSLMODE", "disable")
        .args(["-c", "SELECT 1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&plain_client.stderr);
    assert!(!plain_client.status.success(), "plaintext accepted");
    assert!(err.contains("TLS connections only"), "{err}");
    drop(required);

    let plain = common::start(&topo, "auth_type = \"trust\"", 2);
    let out = run_client(plain.port);
    assert!(
        out.contains("answer N") && out.contains("value 42"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
