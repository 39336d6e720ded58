"""PostgreSQL v3 wire protocol for protocol_fuzz.py: frontend message encoding, a strict
framing checker for everything a server sends back, logins and the canary client."""

import hashlib
import socket
import struct
import time

PROTOCOL_30 = 3 << 16
SSL_REQUEST_CODE = 80877103
GSSENC_REQUEST_CODE = 80877104
CANCEL_REQUEST_CODE = 80877102
MAX_BACKEND_MESSAGE = 1 << 30


class Malformed(Exception):
    """The server sent something that is not a well-framed backend message."""


class LoginFailed(Exception):
    """A login that should have worked did not."""


# ---------------------------------------------------------------------------------------------
# Encoding (frontend messages)

def i16(n):
    return struct.pack("!h", n)


def i32(n):
    return struct.pack("!i", n)


def cstr(s):
    return (s.encode() if isinstance(s, str) else s) + b"\0"


def message(type_byte, body=b""):
    return type_byte + i32(len(body) + 4) + body


def startup(params, version=PROTOCOL_30):
    body = i32(version) + b"".join(cstr(k) + cstr(v) for k, v in params.items()) + b"\0"
    return i32(len(body) + 4) + body


def ssl_request():
    return i32(8) + i32(SSL_REQUEST_CODE)


def gssenc_request():
    return i32(8) + i32(GSSENC_REQUEST_CODE)


def cancel_request(pid, key):
    return i32(8 + 4 + len(key)) + i32(CANCEL_REQUEST_CODE) + i32(pid) + key


def query(sql):
    return message(b"Q", cstr(sql))


def parse(name, sql, param_oids=()):
    oids = b"".join(i32(o) for o in param_oids)
    return message(b"P", cstr(name) + cstr(sql) + i16(len(param_oids)) + oids)


def bind(portal, statement, params=(), result_formats=()):
    body = cstr(portal) + cstr(statement) + i16(0) + i16(len(params))
    for p in params:
        body += i32(-1) if p is None else i32(len(p)) + p
    body += i16(len(result_formats)) + b"".join(i16(f) for f in result_formats)
    return message(b"B", body)


def describe(kind, name):
    return message(b"D", kind + cstr(name))


def execute(portal, max_rows=0):
    return message(b"E", cstr(portal) + i32(max_rows))


def close(kind, name):
    return message(b"C", kind + cstr(name))


def sync():
    return message(b"S")


def flush():
    return message(b"H")


def terminate():
    return message(b"X")


def function_call(oid, args):
    body = i32(oid) + i16(0) + i16(len(args))
    body += b"".join(i32(len(a)) + a for a in args) + i16(0)
    return message(b"F", body)


def copy_data(data):
    return message(b"d", data)


def copy_done():
    return message(b"c")


def copy_fail(reason):
    return message(b"f", cstr(reason))


def password(text):
    return message(b"p", cstr(text))


def md5_password(user, secret, salt):
    inner = hashlib.md5((secret + user).encode()).hexdigest().encode()
    return "md5" + hashlib.md5(inner + salt).hexdigest()


# ---------------------------------------------------------------------------------------------
# Framing check (backend messages)

def _take_cstr(body, pos):
    end = body.find(b"\0", pos)
    if end < 0:
        raise Malformed("unterminated string")
    return body[pos:end], end + 1


def _check_fields(body):  # ErrorResponse / NoticeResponse
    pos = 0
    while pos < len(body) and body[pos] != 0:
        _, pos = _take_cstr(body, pos + 1)
    if pos != len(body) - 1:
        raise Malformed("fields not terminated exactly at the end")


def _check_data_row(body):
    (n,), pos = struct.unpack_from("!h", body), 2
    for _ in range(n):
        (size,) = struct.unpack_from("!i", body, pos)
        pos += 4 + max(size, 0)
        if size < -1:
            raise Malformed("negative column length")
    if pos != len(body):
        raise Malformed("DataRow columns do not fill the message")


def _check_row_description(body):
    (n,), pos = struct.unpack_from("!h", body), 2
    for _ in range(n):
        _, pos = _take_cstr(body, pos)
        pos += 18
    if pos != len(body):
        raise Malformed("RowDescription fields do not fill the message")


def _check_int16_list(body, start):
    (n,) = struct.unpack_from("!h", body, start)
    if start + 2 + 2 * n != len(body):
        raise Malformed("format list does not fill the message")


def _check_strings(body, count):
    pos = 0
    for _ in range(count):
        _, pos = _take_cstr(body, pos)
    if pos != len(body):
        raise Malformed(f"expected exactly {count} strings")


def _check_negotiate(body):
    (n,) = struct.unpack_from("!i", body, 4)
    pos = 8
    for _ in range(n):
        _, pos = _take_cstr(body, pos)
    if pos != len(body):
        raise Malformed("NegotiateProtocolVersion options do not fill the message")


def _check_empty(body):
    if body:
        raise Malformed("message must be empty")


BODY_CHECKS = {
    b"Z": lambda b: None if len(b) == 1 and b in (b"I", b"T", b"E") else _fail("ReadyForQuery"),
    b"1": _check_empty, b"2": _check_empty, b"3": _check_empty, b"n": _check_empty,
    b"I": _check_empty, b"c": _check_empty, b"s": _check_empty,
    b"K": lambda b: None if 8 <= len(b) <= 260 else _fail("BackendKeyData length"),
    b"R": lambda b: None if len(b) >= 4 else _fail("Authentication length"),
    b"S": lambda b: _check_strings(b, 2),
    b"C": lambda b: _check_strings(b, 1),
    b"E": _check_fields, b"N": _check_fields,
    b"D": _check_data_row,
    b"T": _check_row_description,
    b"t": lambda b: None if len(b) >= 2 and len(b) == 2 + 4 * struct.unpack_from("!h", b)[0]
    else _fail("ParameterDescription"),
    b"G": lambda b: _check_int16_list(b, 1), b"H": lambda b: _check_int16_list(b, 1),
    b"W": lambda b: _check_int16_list(b, 1),
    b"d": lambda b: None,
    b"A": lambda b: _check_strings(b[4:], 2),
    b"v": _check_negotiate,
    b"V": lambda b: None,
}


def _fail(what):
    raise Malformed(f"bad {what}")


def check_body(type_byte, body):
    try:
        BODY_CHECKS[type_byte](body)
    except struct.error as e:
        raise Malformed(f"{type_byte!r} body too short: {e}") from None
    except Malformed as e:
        raise Malformed(f"{type_byte!r} ({len(body)} bytes): {e}") from None


# ---------------------------------------------------------------------------------------------
# A connection that reads checked backend messages

class Conn:
    def __init__(self, host, port, timeout=2.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.eof = False

    def send(self, data):
        """Sends; False when the server already closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def _fill(self, deadline):
        wait = deadline - time.monotonic()
        if wait <= 0 or self.eof:
            return False
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def read_byte(self, deadline):
        """One unframed byte (the answer to SSLRequest/GSSENCRequest); None on EOF/timeout."""
        while not self.buf and self._fill(deadline):
            pass
        if not self.buf:
            return None
        b = bytes(self.buf[:1])
        del self.buf[:1]
        return b

    def _take_message(self):
        if len(self.buf) < 5:
            return None
        type_byte = bytes(self.buf[:1])
        (length,) = struct.unpack_from("!i", self.buf, 1)
        if type_byte not in BODY_CHECKS:
            raise Malformed(f"unknown backend message type {type_byte!r}")
        if length < 4 or length > MAX_BACKEND_MESSAGE:
            raise Malformed(f"{type_byte!r} with length {length}")
        if len(self.buf) < 1 + length:
            return None
        body = bytes(self.buf[5:1 + length])
        del self.buf[:1 + length]
        check_body(type_byte, body)
        return type_byte, body

    def next_message(self, deadline):
        """The next checked message; None on timeout or a clean EOF (Malformed mid-message)."""
        while True:
            m = self._take_message()
            if m is not None:
                return m
            if not self._fill(deadline):
                if self.eof and self.buf:
                    raise Malformed(f"connection closed mid-message ({len(self.buf)} bytes left)")
                return None

    def close(self, how="close"):
        try:
            if how == "terminate":
                self.sock.sendall(terminate())
            elif how == "rst":
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.sock.close()


def error_text(body):
    fields = {}
    pos = 0
    while pos < len(body) and body[pos] != 0:
        value, nxt = _take_cstr(body, pos + 1)
        fields[chr(body[pos])] = value.decode(errors="replace")
        pos = nxt
    return f"{fields.get('C', '?')} {fields.get('M', '')}"


def answer_auth(conn, code, body, user, secret):
    """Answers an authentication request with the right password; False if it is SASL."""
    if code == 3:
        conn.send(password(secret))
    elif code == 5:
        conn.send(password(md5_password(user, secret, body[4:8])))
    else:
        return False
    return True


def login(conn, user, database, secret, deadline):
    """Logs in; returns (pid, key) from BackendKeyData. Raises LoginFailed."""
    conn.send(startup({"user": user, "database": database}))
    key = (0, b"")
    while True:
        m = conn.next_message(deadline)
        if m is None:
            raise LoginFailed("no ReadyForQuery (timeout or closed)")
        t, body = m
        if t == b"R":
            (code,) = struct.unpack_from("!i", body)
            if code != 0 and not answer_auth(conn, code, body, user, secret):
                raise LoginFailed(f"unsupported authentication request {code}")
        elif t == b"E":
            raise LoginFailed(error_text(body))
        elif t == b"K":
            key = (struct.unpack_from("!i", body)[0], body[4:])
        elif t == b"Z":
            return key


def simple_query(conn, sql, deadline):
    """Rows (lists of text or None) of a simple-protocol query; raises on error."""
    conn.send(query(sql))
    rows, error = [], None
    while True:
        m = conn.next_message(deadline)
        if m is None:
            raise LoginFailed(f"no answer to {sql!r}")
        t, body = m
        if t == b"D":
            rows.append(decode_row(body))
        elif t == b"E":
            error = error_text(body)
        elif t == b"Z":
            if error:
                raise LoginFailed(f"{sql!r}: {error}")
            return rows


def decode_row(body):
    (n,), pos, row = struct.unpack_from("!h", body), 2, []
    for _ in range(n):
        (size,) = struct.unpack_from("!i", body, pos)
        pos += 4
        row.append(None if size < 0 else body[pos:pos + size].decode())
        pos += max(size, 0)
    return row


def collect_until_ready(conn, deadline):
    """The messages up to and including ReadyForQuery (type bytes and bodies)."""
    out = []
    while True:
        m = conn.next_message(deadline)
        if m is None:
            raise LoginFailed(f"no ReadyForQuery; got {[t for t, _ in out]}")
        out.append(m)
        if m[0] == b"Z":
            return out


def expect_one_int(messages, value, what):
    rows = [decode_row(b) for t, b in messages if t == b"D"]
    errors = [error_text(b) for t, b in messages if t == b"E"]
    if errors or rows != [[str(value)]]:
        kinds = b"".join(t for t, _ in messages).decode(errors="replace")
        raise LoginFailed(f"{what}: wanted [[{value}]], got rows {rows} errors {errors} "
                          f"(messages {kinds})")


def run_canary(host, port, user, database, secret, a, b, budget=2.0):
    """Fresh login, `SELECT a` (simple) and `SELECT $1::int` with b (extended): None when both
    answers are exactly right within `budget` seconds, else what went wrong."""
    deadline = time.monotonic() + budget
    try:
        conn = Conn(host, port, timeout=budget)
    except OSError as e:
        return f"canary cannot connect: {e}"
    try:
        login(conn, user, database, secret, deadline)
        conn.send(query(f"SELECT {a}"))
        expect_one_int(collect_until_ready(conn, deadline), a, f"simple SELECT {a}")
        conn.send(parse("", "SELECT $1::int", [23]) + bind("", "", [str(b).encode()])
                  + execute("") + sync())
        expect_one_int(collect_until_ready(conn, deadline), b, f"extended SELECT $1::int ({b})")
        return None
    except (LoginFailed, Malformed, OSError) as e:
        return f"canary: {e} after {budget - (deadline - time.monotonic()):.2f}s"
    finally:
        conn.close("terminate")
