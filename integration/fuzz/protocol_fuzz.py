#!/usr/bin/env python3
"""Protocol fuzzer for pgdog (and, as the reference, PostgreSQL itself). Python 3.11 stdlib only.

What it does
  Runs numbered cases, each from its own rng seeded with (seed, case index), over plain TCP:
  - startup packets: random bytes, mutated packets, bad/huge/negative lengths, truncations,
    bad protocol versions, SSLRequest/GSSENCRequest followed by garbage, missing user;
  - authentication: a login that is asked for a password (pgdog's admin database, or the
    password user under --auth md5/plain) answered wrongly, truncated or malformed;
  - after a valid login: random interleavings of Query/Parse/Bind/Describe/Execute/Close/Sync/
    Flush/FunctionCall/CopyData/CopyDone/CopyFail, mutated (bytes flipped, cut, duplicated,
    reordered, dropped, lengths too short/long/negative/huge, unknown types, junk inserted),
    COPY FROM STDIN (finished, failed, interrupted, abandoned, interleaved) and COPY TO,
    pipelines of extended batches without reading (Sync after each, at the end, none, Flush),
    CancelRequests (real or wrong key) during `SELECT pg_sleep(0.05)`, and abrupt closes
    (mid-message, mid-result, mid-COPY, mid-transaction, after BEGIN with writes).
  Workers (--workers) run cases in parallel; each case is followed by its canary.

Checks (a case FAILS when one does not hold)
  - Everything the target sends the fuzz client is well framed: known backend type byte,
    length >= 4, and a body consistent with its type (DataRow columns fill it exactly, ...).
    Any ErrorResponse or close is fine; the fuzz client reads at most ~300 ms, then closes.
  - After each case a canary logs in fresh and gets exactly the right answers to a simple
    `SELECT <random int>` and an extended `SELECT $1::int` within 2 s in total.
  - pgdog is still running after each case.
  - Every 200 cases and at the end, with no fuzz client connected: on PostgreSQL (as postgres)
    no backend of the proxy's server user is `active`, `idle in transaction` or `idle in
    transaction (aborted)`, there are at most pool_size x users of them (pgdog), and no row
    written only in an abandoned transaction or COPY is visible (polled up to 2 s).

Running
  In the test suite (60 s against pgdog, which the script starts with its own config):
    target/debug/pgdog-topology single -- python3 integration/fuzz/protocol_fuzz.py --target pgdog --seconds 60
  Longer by hand:  ... --target pgdog --mode session --seconds 600 --workers 3
  Reference run straight at PostgreSQL (must not fail):  ... --target direct --seconds 60
  Replay one case of a seed (the seed and case index are printed on every failure; the replay
  prints every byte the case sent):
    ... --target pgdog --seed 1234 --case 5678
  A leak check names a range of cases; find the case with
    ... --seed 1234 --first-case 5600 --leak-check-every 1 --workers 1
  --auth md5|plain makes pgdog ask every user for a password (auth_type is global in pgdog;
  under the default trust only the admin database asks). Exit code 1 on any failure.

Files: this one (cases, targets, checks, driver) and wire.py (message encoding, the framing
check of backend messages, login and the canary).
"""

import argparse
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Fuzz cases: each is a function (client factory, rng) that talks to the target and raises
# CaseFailure when the target answers in a way PostgreSQL never would.

QUIET = 0.04      # a fuzz read ends after this long without data (when no answer count is known)
READ_CAP = 0.3    # and in any case after this long
TABLE = "fuzz_t"
ABANDONED = "abandoned"   # rows only ever written in transactions/COPYs that must not commit


class CaseFailure(Exception):
    """The target answered a fuzz client in a way PostgreSQL never would."""


class FuzzClient:
    """One fuzz connection: records what it sends, checks the framing of everything it reads."""

    def __init__(self, target, record):
        self.target, self.record = target, record
        try:
            self.conn = wire.Conn(target.host, target.port)
        except OSError as e:
            raise CaseFailure(f"fuzz client cannot connect: {e}") from None

    def send(self, data):
        self.record.append(data)
        return self.conn.send(data)

    def read_byte(self):
        return self.conn.read_byte(time.monotonic() + READ_CAP)

    def drain(self, expect_ready=None, cap=READ_CAP):
        """Reads until `expect_ready` ReadyForQuery, EOF, a quiet spell or `cap`; returns
        (ReadyForQuery count, type bytes seen)."""
        hard = time.monotonic() + cap
        last, ready, seen = time.monotonic(), 0, bytearray()
        while True:
            deadline = hard if expect_ready else min(hard, last + QUIET)
            try:
                m = self.conn.next_message(deadline)
            except wire.Malformed as e:
                raise CaseFailure(f"malformed reply: {e}") from None
            if m is None:
                return ready, bytes(seen)
            last = time.monotonic()
            seen += m[0]
            if m[0] == b"Z":
                ready += 1
                if expect_ready and ready >= expect_ready:
                    return ready, bytes(seen)

    def read_one(self, wait):
        """At most one message within `wait` seconds (to close in the middle of an answer)."""
        try:
            return self.conn.next_message(time.monotonic() + wait)
        except wire.Malformed as e:
            raise CaseFailure(f"malformed reply: {e}") from None

    def login(self, user=None):
        """Logs in as the target's fuzz user (valid startup); returns (pid, key)."""
        t = self.target
        user = user or t.user
        self.record.append(b"<login>")
        try:
            return wire.login(self.conn, user, t.database, t.secrets.get(user, ""),
                              time.monotonic() + 2.0)
        except wire.Malformed as e:
            raise CaseFailure(f"malformed reply during login: {e}") from None
        except (wire.LoginFailed, OSError) as e:
            raise CaseFailure(f"valid fuzz login failed: {e}") from None

    def close(self, rng):
        self.conn.close(rng.choice(["close", "close", "terminate", "rst"]))

    def half_close_ends(self):
        """Stops writing; the target must then end the connection within HALF_CLOSE_CAP
        seconds (a session kept open after the client's EOF holds its server)."""
        try:
            self.conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return
        deadline = time.monotonic() + HALF_CLOSE_CAP
        while self.conn.next_message(deadline) is not None:
            pass
        if not self.conn.eof:
            raise CaseFailure(f"still open {HALF_CLOSE_CAP} s after the client's EOF")
        self.conn.close()


# ---------------------------------------------------------------------------------------------
# Mutations: deterministic from the rng, described for the failure report

# Seconds a target may keep a connection open after the client's half-close.
HALF_CLOSE_CAP = 3

WEIRD_LENGTHS = [0, 1, 3, -1, -4, 0x7FFFFFFF, 0x40000000, 0x10000000 + 7]


def weird_length(rng, real):
    return rng.choice(WEIRD_LENGTHS + [real + rng.randint(1, 64), max(real - rng.randint(1, 8), 0)])


def set_length(data, offset, value):
    return data[:offset] + struct.pack("!I", value & 0xFFFFFFFF) + data[offset + 4:]


def mutate(rng, messages, length_offset=1):
    """Applies 1-3 mutations to a list of encoded messages; returns (bytes, description)."""
    msgs, ops = list(messages), []
    for _ in range(rng.randint(1, 3)):
        msgs = [m for m in msgs if m]
        if not msgs:
            break
        op = rng.choice(["flip", "flip", "cut", "dup", "swap", "length", "drop", "unknown", "junk"])
        i = rng.randrange(len(msgs))
        if op == "flip":
            m = bytearray(msgs[i])
            pos = rng.randrange(len(m))
            m[pos] ^= rng.randint(1, 255)
            msgs[i] = bytes(m)
            op += f"@{i}:{pos}"
        elif op == "cut":
            msgs[i] = msgs[i][:rng.randrange(len(msgs[i]))]
            msgs = msgs[:i + 1]
            op += f"@{i}"
        elif op == "dup":
            msgs.insert(i, msgs[i])
        elif op == "swap" and len(msgs) > 1:
            j = rng.randrange(len(msgs))
            msgs[i], msgs[j] = msgs[j], msgs[i]
            op += f"{j}"
        elif op == "length" and len(msgs[i]) >= length_offset + 4:
            (real,) = struct.unpack_from("!i", msgs[i], length_offset)
            value = weird_length(rng, real)
            msgs[i] = set_length(msgs[i], length_offset, value)
            op += f"={value}"
        elif op == "drop" and len(msgs) > 1:
            del msgs[i]
        elif op == "unknown":
            msgs.insert(i, unknown_type_message(rng))
        elif op == "junk":
            msgs.insert(i, rng.randbytes(rng.randint(1, 16)))
        ops.append(f"{op}@{i}" if "@" not in op else op)
    return b"".join(msgs), ",".join(ops)


def unknown_type_message(rng):
    known = b"QPBDECSHFdcfpX"
    type_byte = rng.choice([t for t in range(256) if t not in known])
    return wire.message(bytes([type_byte]), rng.randbytes(rng.randint(0, 12)))


# ---------------------------------------------------------------------------------------------
# Valid messages to build sequences from

SIMPLE_SQL = [
    "SELECT 1", "SELECT 1/0", "SELECT pg_sleep(0.01)", "BEGIN", "COMMIT", "ROLLBACK",
    f"INSERT INTO {TABLE} VALUES (1, 'm')", "SELECT 1; SELECT 2", "SET application_name = 'fz'",
    "SELECT generate_series(1, 200)", "", "SELECT repeat('x', 9000)", "SHOW application_name",
    f"DELETE FROM {TABLE} WHERE v = 'm' AND id < 0",
]
EXTENDED_SQL = ["SELECT $1::int", "SELECT 1", "SELECT 1/0", "BEGIN", "COMMIT",
                f"INSERT INTO {TABLE} VALUES ($1::int, 'm')", "SELECT generate_series(1, 50)"]


def random_message(rng):
    kind = rng.choice("QQPBDECSSHFdcf")
    name = rng.choice(["", "", "s1", "s2"])
    if kind == "Q":
        return wire.query(rng.choice(SIMPLE_SQL))
    if kind == "P":
        sql = rng.choice(EXTENDED_SQL)
        return wire.parse(name, sql, [23] if "$1" in sql else [])
    if kind == "B":
        params = [str(rng.randint(-9, 9)).encode()] if rng.random() < 0.7 else []
        return wire.bind(rng.choice(["", "p1"]), name, params)
    if kind == "D":
        return wire.describe(rng.choice([b"S", b"P"]), name)
    if kind == "E":
        return wire.execute(rng.choice(["", "p1"]), rng.choice([0, 0, 1, 5]))
    if kind == "C":
        return wire.close(rng.choice([b"S", b"P"]), name)
    if kind == "S":
        return wire.sync()
    if kind == "H":
        return wire.flush()
    if kind == "F":
        return wire.function_call(rng.choice([1397, 1, 0, 2000000]), [wire.i32(-5)])
    if kind == "d":
        return wire.copy_data(b"1\tm\n")
    if kind == "c":
        return wire.copy_done()
    return wire.copy_fail("fuzz")


def extended_batch(rng, value, with_sync=True):
    msgs = [wire.parse("", "SELECT $1::int", [23]), wire.bind("", "", [str(value).encode()]),
            wire.execute("")]
    if rng.random() < 0.3:
        msgs.insert(2, wire.describe(b"P", ""))
    return msgs + ([wire.sync()] if with_sync else [])


def count_ready_expected(msgs):
    return sum(1 for m in msgs if m[:1] in (b"Q", b"S"))


# ---------------------------------------------------------------------------------------------
# Startup cases (nothing valid sent yet)

def valid_startup(target):
    return wire.startup({"user": target.user, "database": target.database})


def case_startup_garbage(new_client, rng):
    c = new_client()
    data = rng.randbytes(rng.randint(0, 40))
    c.send(data)
    finish_startup(c, rng)
    return f"startup garbage {len(data)} bytes"


def case_startup_mutated(new_client, rng):
    c = new_client()
    data, ops = mutate(rng, [valid_startup(c.target)], length_offset=0)
    c.send(data)
    finish_startup(c, rng)
    return f"mutated startup packet ({ops})"


BAD_VERSIONS = [0, 2 << 16, (3 << 16) | 1, (3 << 16) | 2, (3 << 16) | 99, 4 << 16, 1 << 16,
                (1234 << 16) | 5678, (1234 << 16) | 5681, -1, 0x7FFFFFFF]


def case_startup_bad_version(new_client, rng):
    c = new_client()
    version = rng.choice(BAD_VERSIONS + [rng.randint(-2**31, 2**31 - 1)])
    params = {"user": c.target.user, "database": c.target.database}
    if rng.random() < 0.3:
        params["_pq_.fuzz"] = "1"
    c.send(wire.startup(params, version))
    finish_startup(c, rng)
    return f"startup with protocol version {version >> 16}.{version & 0xFFFF} params {list(params)}"


def case_encryption_request_then(new_client, rng):
    c = new_client()
    request = rng.choice([wire.ssl_request(), wire.gssenc_request()])
    c.send(request)
    answer = c.read_byte()
    follow = rng.choice(["garbage", "startup", "again", "login", "cancel"])
    if answer is not None and answer not in b"SNGE":
        raise CaseFailure(f"answer {answer!r} to SSLRequest/GSSENCRequest")
    if answer == b"E":  # an ErrorResponse: the rest must be framed
        c.conn.buf[:0] = b"E"
        c.drain()
    elif answer == b"N":
        if follow == "garbage":
            c.send(rng.randbytes(rng.randint(1, 30)))
        elif follow == "startup":
            c.send(valid_startup(c.target)[:rng.randint(1, 40)])
        elif follow == "again":
            c.send(rng.choice([wire.ssl_request(), wire.gssenc_request()]))
            answer = c.read_byte()
            if answer is not None and answer not in b"SNGE":
                raise CaseFailure(f"answer {answer!r} to a second encryption request")
        elif follow == "cancel":
            c.send(wire.cancel_request(rng.randint(1, 99999), rng.randbytes(4)))
        if follow == "login":
            c.login()
            c.send(wire.query("SELECT 1"))
            c.drain(expect_ready=1)
        elif answer == b"N" and follow != "again":
            c.drain()
    c.close(rng)
    return f"{'SSL' if request == wire.ssl_request() else 'GSSENC'}Request, answer {answer}, then {follow}"


def case_startup_missing_user(new_client, rng):
    c = new_client()
    params = rng.choice([{"database": c.target.database}, {"user": "", "database": c.target.database},
                         {}, {"user": c.target.user, "database": c.target.database, "x": ""}])
    data = wire.startup(params)
    if rng.random() < 0.3:
        data = data[:-1]  # no final terminator
    data = set_length(data, 0, len(data))
    c.send(data)
    finish_startup(c, rng)
    return f"startup with params {params} ({len(data)} bytes)"


def case_startup_huge_or_truncated(new_client, rng):
    c = new_client()
    data = valid_startup(c.target)
    if rng.random() < 0.5:
        length = rng.choice(WEIRD_LENGTHS + [10001, 9999, 8, 4])
        data = set_length(data, 0, length) + rng.randbytes(rng.randint(0, 20))
        what = f"startup length {length}"
    else:
        data = data[:rng.randrange(len(data))]
        what = f"startup truncated to {len(data)} bytes"
    c.send(data)
    finish_startup(c, rng)
    return what


def finish_startup(c, rng):
    """Reads (and checks) whatever answer the startup bytes got, then closes."""
    try:
        c.drain()
    except CaseFailure:
        if not old_style_error(c):
            raise
    c.close(rng)


def old_style_error(c):
    """PostgreSQL answers a startup packet asking for protocol major version < 3 with a
    pre-v3 error: 'E', text, NUL, no length (the framing check stops at it)."""
    sent = b"".join(c.record)
    major = struct.unpack_from("!I", sent, 4)[0] >> 16 if len(sent) >= 8 else 3
    return major < 3 and c.conn.buf[:1] == b"E" and c.conn.buf[1:6] in (b"FATAL", b"ERROR")


def case_auth(new_client, rng):
    """A login that is asked for a password (admin database, or the password user) and gets a
    wrong, truncated or malformed answer."""
    c = new_client()
    t = c.target
    user, database = rng.choice(t.password_logins)
    c.send(wire.startup({"user": user, "database": database}))
    c.record.append(b"<auth request>")
    code = read_auth_request(c)
    answer = rng.choice(["wrong", "truncated", "badlength", "garbage", "empty", "other_type"])
    body = wire.cstr(rng.choice(["nope", "md5" + "0" * 32, "SCRAM-SHA-256", ""]))
    if code == 10 and rng.random() < 0.5:  # SASLInitialResponse-shaped
        body = wire.cstr(rng.choice(["SCRAM-SHA-256", "PLAIN", "X"])) + wire.i32(
            rng.choice([-1, 0, 5, 1000])) + rng.randbytes(rng.randint(0, 8))
    data = wire.message(b"p", body)
    if answer == "truncated":
        data = data[:rng.randint(1, len(data) - 1)]
    elif answer == "badlength":
        data = set_length(data, 1, weird_length(rng, len(data) - 1))
    elif answer == "garbage":
        data = rng.randbytes(rng.randint(1, 20))
    elif answer == "empty":
        data = wire.message(b"p")
    elif answer == "other_type":
        data = random_message(rng)
    c.send(data)
    c.drain()
    c.close(rng)
    return f"login {user}@{database}, auth request {code}, answered {answer}: {data[:24].hex()}"


def read_auth_request(c):
    deadline = time.monotonic() + 2.0
    while True:
        try:
            m = c.conn.next_message(deadline)
        except wire.Malformed as e:
            raise CaseFailure(f"malformed reply during login: {e}") from None
        if m is None:
            raise CaseFailure("no authentication request or ReadyForQuery")
        if m[0] == b"R":
            (code,) = struct.unpack_from("!i", m[1])
            if code != 0:
                return code
        if m[0] in (b"Z", b"E"):
            return 0


# ---------------------------------------------------------------------------------------------
# Cases after a valid login

def case_message_sequence(new_client, rng):
    c = new_client()
    c.login()
    msgs = [random_message(rng) for _ in range(rng.randint(1, 10))]
    if rng.random() < 0.6:
        msgs.append(wire.sync())
    if rng.random() < 0.6:
        data, ops = mutate(rng, msgs)
        expect = None
    else:
        data, ops, expect = b"".join(msgs), "unmutated", count_ready_expected(msgs)
    c.send(data)
    c.drain(expect_ready=expect)
    c.close(rng)
    kinds = b"".join(m[:1] for m in msgs).decode(errors="replace")
    return f"after login: messages {kinds} ({ops})"


def case_bad_length(new_client, rng):
    c = new_client()
    c.login()
    m = random_message(rng)
    value = weird_length(rng, len(m) - 1)
    data = set_length(m, 1, value)
    if rng.random() < 0.5:
        data += wire.query("SELECT 1")
    if rng.random() < 0.3:
        data = unknown_type_message(rng) + data
    c.send(data)
    c.drain()
    if rng.random() < 0.4:
        # The shape a fuzzer found holding session-mode connections open: a length claiming
        # more than the body, the next message, then the client's half-close.
        c.half_close_ends()
        return f"after login: {m[:1]!r} with length {value}, then EOF: {data[:24].hex()}"
    c.close(rng)
    return f"after login: {m[:1]!r} with length {value}: {data[:24].hex()}"


def case_copy_from(new_client, rng):
    c = new_client()
    c.login()
    ending = rng.choice(["done", "fail", "close", "abandon", "interleave", "mutate", "sync_in_copy"])
    marker = {"done": "ok", "interleave": "m", "mutate": "m", "sync_in_copy": "m"}.get(ending, ABANDONED)
    extended = rng.random() < 0.4
    sql = f"COPY {TABLE} FROM STDIN"
    start = ([wire.parse("", sql), wire.bind("", ""), wire.execute(""), wire.sync()]
             if extended else [wire.query(sql)])
    if extended and rng.random() < 0.5:
        start[-1] = wire.flush()
    rows = [wire.copy_data(f"{rng.randint(0, 999)}\t{marker}\n".encode())
            for _ in range(rng.randint(0, 5))]
    if rows and rng.random() < 0.3:  # a row split across two CopyData messages
        payload = rows[0][5:]
        cut = rng.randint(1, len(payload) - 1)
        rows = [wire.copy_data(payload[:cut]), wire.copy_data(payload[cut:])] + rows[1:]
    msgs = start + rows
    if ending == "done":
        msgs += [wire.copy_done()] + ([wire.sync()] if extended else [])
    elif ending == "fail":
        msgs += [wire.copy_fail("fuzz abort")] + ([wire.sync()] if extended else [])
    elif ending == "close":
        msgs[-1] = msgs[-1][:rng.randrange(len(msgs[-1]))]
    elif ending == "interleave":
        msgs += [random_message(rng) for _ in range(rng.randint(1, 4))]
    elif ending == "sync_in_copy":
        msgs += [wire.sync(), wire.copy_done(), wire.sync()]
    data, ops = mutate(rng, msgs) if ending == "mutate" else (b"".join(msgs), ending)
    c.send(data)
    if ending not in ("close",):
        c.drain()
    c.close(rng)
    return f"COPY FROM STDIN ({'extended' if extended else 'simple'}), {len(rows)} rows, {ops}"


def case_copy_to(new_client, rng):
    c = new_client()
    c.login()
    sql = rng.choice([f"COPY {TABLE} TO STDOUT", "COPY (SELECT generate_series(1, 20000)) TO STDOUT"])
    c.send(wire.query(sql))
    if rng.random() < 0.5:
        c.drain(expect_ready=1)
    else:
        c.read_one(0.1)
    c.close(rng)
    return f"{sql} then close"


def case_pipeline(new_client, rng):
    c = new_client()
    c.login()
    sync_mode = rng.choice(["each", "end", "none", "flush"])
    msgs = []
    for i in range(rng.randint(2, 40)):
        msgs += extended_batch(rng, i, with_sync=(sync_mode == "each"))
    msgs += {"end": [wire.sync()], "flush": [wire.flush()]}.get(sync_mode, [])
    data = b"".join(msgs)
    c.send(data)
    stop = rng.choice(["read", "close_early", "read_some"])
    if stop == "read":
        c.drain(expect_ready=count_ready_expected(msgs) or None)
    elif stop == "read_some":
        c.read_one(0.05)
    c.close(rng)
    return f"pipeline of {len(msgs)} messages (sync {sync_mode}), then {stop}"


def case_cancel(new_client, rng):
    c = new_client()
    pid, key = c.login()
    wrong = rng.choice(["real", "wrong_key", "wrong_pid", "short_key", "real"])
    if wrong == "wrong_key":
        key = bytes(b ^ 0xFF for b in key) or b"\0\0\0\0"
    elif wrong == "wrong_pid":
        pid ^= 0x5A5A
    elif wrong == "short_key":
        key = key[:2]
    how = rng.choice(["simple", "extended", "idle"])
    if how == "simple":
        c.send(wire.query("SELECT pg_sleep(0.05)"))
    elif how == "extended":
        c.send(wire.parse("", "SELECT pg_sleep(0.05)") + wire.bind("", "") + wire.execute("")
               + wire.sync())
    time.sleep(rng.choice([0, 0.005, 0.02]))
    send_cancel(c, pid, key)
    then = rng.choice(["read", "read", "close"])
    if then == "read":
        c.drain(expect_ready=None if how == "idle" else 1)
        c.send(wire.query("SELECT 1"))
        c.drain(expect_ready=1)
    c.close(rng)
    return f"{how} pg_sleep(0.05), CancelRequest with {wrong} key, then {then}"


def send_cancel(c, pid, key):
    try:
        cancel = wire.Conn(c.target.host, c.target.port)
    except OSError as e:
        raise CaseFailure(f"cancel connection refused: {e}") from None
    c.record.append(wire.cancel_request(pid, key))
    cancel.send(wire.cancel_request(pid, key))
    cancel.close()


def case_abrupt_close(new_client, rng):
    c = new_client()
    c.login()
    where = rng.choice(["mid_message", "mid_result", "mid_transaction", "after_begin_writes",
                        "extended_write_no_sync"])
    insert = f"INSERT INTO {TABLE} VALUES ({rng.randint(0, 999)}, '{ABANDONED}')"
    if where == "mid_message":
        m = rng.choice([wire.query("COMMIT"), wire.query("SELECT 1"), random_message(rng)])
        c.send(wire.query("BEGIN; " + insert) + m[:rng.randrange(len(m))])
    elif where == "mid_result":
        c.send(wire.query("SELECT generate_series(1, 100000)"))
        c.read_one(0.1)
    elif where == "mid_transaction":
        c.send(wire.query("BEGIN"))
        c.drain(expect_ready=1)
        c.send(wire.query(insert))
        if rng.random() < 0.5:
            c.drain(expect_ready=1)
    elif where == "after_begin_writes":
        c.send(wire.query(f"BEGIN; {insert}; {insert}"))
        c.drain(expect_ready=1)
        c.send(wire.query("SELECT pg_sleep(0.02)"))
    else:
        c.send(wire.query("BEGIN"))
        c.drain(expect_ready=1)
        c.send(wire.parse("", insert) + wire.bind("", "") + wire.execute("") + wire.flush())
        c.drain()
    c.close(rng)
    return f"abrupt close {where}"


CASES = [  # (weight, function)
    (6, case_startup_garbage), (6, case_startup_mutated), (4, case_startup_bad_version),
    (4, case_encryption_request_then), (3, case_startup_missing_user),
    (4, case_startup_huge_or_truncated), (6, case_auth),
    (20, case_message_sequence), (8, case_bad_length), (8, case_copy_from), (3, case_copy_to),
    (8, case_pipeline), (5, case_cancel), (8, case_abrupt_close),
]


def pick_case(rng):
    return rng.choices([f for _, f in CASES], weights=[w for w, _ in CASES])[0]



REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SERVER_USER = "fuzz"         # role the proxy (or the direct fuzz client) uses on PostgreSQL
POOL_SIZE = 4
ADMIN_PASSWORD = "fuzz-admin"
CANARY_BUDGET = 2.0
SETTLE_BUDGET = 2.0


@dataclass
class Target:
    host: str
    port: int
    user: str
    database: str
    secrets: dict
    password_logins: list        # (user, database) pairs that are asked for a password
    server_user_limit: int = 0   # most server backends allowed (0: no limit)
    process: subprocess.Popen = None
    log_path: str = ""

    def alive(self):
        return self.process is None or self.process.poll() is None

    def log_tail(self, lines=40):
        """The last lines of pgdog's log, WARN/ERROR lines first (INFO lines are mostly
        the expected protocol-violation disconnects)."""
        if not self.log_path:
            return ""
        with open(self.log_path, errors="replace") as f:
            all_lines = f.readlines()
        serious = [line for line in all_lines if " WARN " in line or " ERROR " in line]
        return "".join(serious[-lines // 2:] + ["       ...\n"] + all_lines[-lines // 2:])


@dataclass
class Results:
    seed: int
    cases_run: int = 0
    failures: list = field(default_factory=list)
    reported_pids: set = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, case, what, sent, target):
        line = f"FAIL seed={self.seed} case={case}: {what}\n     sent: {sent}"
        with self.lock:
            self.failures.append(line)
            print(line, flush=True)
            if target.log_path and len(self.failures) <= 3:
                print("     pgdog log tail:\n" + indent(target.log_tail(15)), flush=True)


def indent(text):
    return "".join("       " + line + "\n" for line in text.splitlines())


# ---------------------------------------------------------------------------------------------
# PostgreSQL (direct, as superuser) and pgdog

def pg_port():
    port = os.environ.get("PG_PG_PORT")
    if not port:
        sys.exit("PG_PG_PORT is not set (run under target/debug/pgdog-topology single -- ...)")
    return int(port)


def superuser_query(sql, deadline=None):
    conn = wire.Conn("127.0.0.1", pg_port())
    try:
        wire.login(conn, "postgres", "postgres", "", time.monotonic() + 5)
        return wire.simple_query(conn, sql, deadline or time.monotonic() + 10)
    finally:
        conn.close("terminate")


def prepare_database():
    superuser_query(
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{SERVER_USER}') "
        f"THEN CREATE ROLE {SERVER_USER} LOGIN; END IF; END $$; "
        f"DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} (id int, v text); "
        f"ALTER TABLE {TABLE} OWNER TO {SERVER_USER}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pgdog_config(port, mode, auth):
    return f"""[general]
host = "127.0.0.1"
port = {port}
pooler_mode = "{mode}"
auth_type = "{auth}"
default_pool_size = {POOL_SIZE}
min_pool_size = 1
checkout_timeout = 3000
server_tls = "disable"
admin_password = "{ADMIN_PASSWORD}"

[[databases]]
name = "app"
host = "127.0.0.1"
port = {pg_port()}
database_name = "postgres"
user = "{SERVER_USER}"
pool_size = {POOL_SIZE}
"""


PGDOG_USERS = """[[users]]
name = "app"
database = "app"
password = "secret"

[[users]]
name = "app_pw"
database = "app"
password = "pw-secret"
"""


def start_pgdog(binary, mode, auth):
    workdir = tempfile.mkdtemp(prefix="pgdog-fuzz-")
    port = free_port()
    paths = {name: os.path.join(workdir, name) for name in ("pgdog.toml", "users.toml", "pgdog.log")}
    with open(paths["pgdog.toml"], "w") as f:
        f.write(pgdog_config(port, mode, auth))
    with open(paths["users.toml"], "w") as f:
        f.write(PGDOG_USERS)
    log = open(paths["pgdog.log"], "w")
    proc = subprocess.Popen([binary, "--config", paths["pgdog.toml"], "--users", paths["users.toml"]],
                            stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                            env=dict(os.environ, NO_COLOR="1"))
    password_logins = [("admin", "admin")] + ([("app_pw", "app")] if auth != "trust" else [])
    target = Target("127.0.0.1", port, "app", "app",
                    {"app": "secret", "app_pw": "pw-secret", "admin": ADMIN_PASSWORD},
                    password_logins, server_user_limit=2 * POOL_SIZE, process=proc,
                    log_path=paths["pgdog.log"])
    wait_until_accepting(target)
    print(f"pgdog pid {proc.pid} on port {port} ({mode} mode, auth {auth}), files in {workdir}")
    return target


def wait_until_accepting(target, budget=15.0):
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if not target.alive():
            sys.exit("pgdog exited at start:\n" + target.log_tail())
        if wire.run_canary(target.host, target.port, target.user, target.database,
                           target.secrets[target.user], 1, 2, budget=1.0) is None:
            return
        time.sleep(0.1)
    sys.exit("pgdog did not accept a login in time:\n" + target.log_tail())


def stop_pgdog(target):
    if target.process and target.process.poll() is None:
        target.process.terminate()
        try:
            target.process.wait(5)
        except subprocess.TimeoutExpired:
            target.process.kill()


def direct_target():
    return Target("127.0.0.1", pg_port(), SERVER_USER, "postgres", {SERVER_USER: ""},
                  [(SERVER_USER, "postgres")])


# ---------------------------------------------------------------------------------------------
# One case and its canary

def run_case(target, seed, case, results, show_bytes=False):
    rng = random.Random(f"{seed}/{case}")
    record = []
    case_fn = pick_case(rng)
    described = case_fn.__name__
    try:
        described += ": " + case_fn(lambda: FuzzClient(target, record), rng)
        problem = None
    except CaseFailure as e:
        problem = str(e)
    except OSError as e:
        problem = f"fuzz client socket error: {e}"
    except Exception as e:  # a bug of the fuzzer itself: report it like a failure
        problem = f"fuzzer error {type(e).__name__}: {e}"
    if problem is None and not target.alive():
        problem = f"pgdog exited (code {target.process.returncode})"
    if problem is None:
        a, b = rng.randint(-2**31, 2**31 - 1), rng.randint(-2**31, 2**31 - 1)
        problem = wire.run_canary(target.host, target.port, target.user, target.database,
                                  target.secrets[target.user], a, b, CANARY_BUDGET)
    if show_bytes:
        print(f"case {case}: {described}\n  sent: {b''.join(record).hex()}\n  result: {problem or 'ok'}")
    if problem is not None:
        results.fail(case, problem, f"{described}; {describe_bytes(record)}", target)
    with results.lock:
        results.cases_run += 1
    return problem is None


def describe_bytes(record):
    data = b"".join(record)
    head = data[:64].hex()
    return f"{len(data)} bytes: {head}{'...' if len(data) > 64 else ''}"


# ---------------------------------------------------------------------------------------------
# Leak check

LEAK_SQL = f"""SELECT pid, coalesce(state, '?'), now() - state_change, left(query, 60)
FROM pg_stat_activity WHERE usename = '{SERVER_USER}' AND pid <> pg_backend_pid()"""
ABANDONED_SQL = f"SELECT count(*) FROM {TABLE} WHERE v = '{ABANDONED}'"
BAD_STATES = ("active", "idle in transaction", "idle in transaction (aborted)")


def leak_problems(target, known_pids):
    """(problems, pids of bad backends): backends in a bad state not reported before
    (`known_pids`), too many backends, visible abandoned rows."""
    rows = superuser_query(LEAK_SQL)
    bad = [(pid, f"pid {pid} {state} for {age}: {sql}") for pid, state, age, sql in rows
           if state in BAD_STATES]
    problems = [text for pid, text in bad if pid not in known_pids]
    if target.server_user_limit and len(rows) > target.server_user_limit:
        problems.append(f"{len(rows)} server backends > {target.server_user_limit}")
    abandoned = int(superuser_query(ABANDONED_SQL)[0][0])
    if abandoned:
        problems.append(f"{abandoned} rows from abandoned transactions/COPYs are visible")
    return problems, {pid for pid, _ in bad}


def check_leaks(target, results, first_case, last_case):
    """Polls PostgreSQL until nothing leaked (or SETTLE_BUDGET); a backend stuck in a bad
    state is reported once, not again at every later check."""
    deadline = time.monotonic() + SETTLE_BUDGET
    while True:
        problems, bad_pids = leak_problems(target, results.reported_pids)
        if not problems or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    results.reported_pids |= bad_pids
    if not problems:
        return True
    results.fail(f"{first_case}-{last_case}", "leak check: " + "; ".join(problems),
                 "(one of the cases of this range; find it with --first-case "
                 f"{first_case} --leak-check-every 1 --workers 1)", target)
    superuser_query(f"DELETE FROM {TABLE} WHERE v = '{ABANDONED}'")  # report rows once
    return False


# ---------------------------------------------------------------------------------------------
# Driver

def run(target, args, results):
    if args.case is not None:
        run_case(target, args.seed, args.case, results, show_bytes=True)
        check_leaks(target, results, args.case, args.case)
        return
    end = time.monotonic() + args.seconds
    next_case = args.first_case
    with ThreadPoolExecutor(args.workers) as pool:
        while time.monotonic() < end and len(results.failures) < args.max_failures:
            batch = range(next_case, next_case + args.leak_check_every)
            list(pool.map(lambda k: time.monotonic() < end and target.alive()
                          and run_case(target, args.seed, k, results), batch))
            next_case += args.leak_check_every
            if not target.alive():
                results.fail(next_case, "pgdog is not running", "-", target)
                return
            check_leaks(target, results, batch[0], batch[-1])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", choices=["pgdog", "direct"], default="pgdog")
    p.add_argument("--mode", choices=["transaction", "session"], default="transaction")
    p.add_argument("--auth", choices=["trust", "md5", "plain"], default="trust",
                   help="pgdog auth_type (admin database logins always ask for a password)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--case", type=int, default=None, help="replay only this case of --seed")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--max-failures", type=int, default=20)
    p.add_argument("--first-case", type=int, default=0, help="start at this case index")
    p.add_argument("--leak-check-every", type=int, default=200, help="cases between leak checks")
    p.add_argument("--pgdog-bin", default=os.path.join(REPO, "target", "debug", "pgdog"))
    return p.parse_args()


def main():
    args = parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**32)
    print(f"protocol_fuzz seed={args.seed} target={args.target} mode={args.mode} "
          f"auth={args.auth} workers={args.workers} seconds={args.seconds}"
          + (f" case={args.case}" if args.case is not None else ""), flush=True)
    prepare_database()
    target = (start_pgdog(args.pgdog_bin, args.mode, args.auth) if args.target == "pgdog"
              else direct_target())
    results = Results(args.seed)
    started = time.monotonic()
    try:
        run(target, args, results)
    finally:
        stop_pgdog(target)
    elapsed = time.monotonic() - started
    print(f"summary: seed={args.seed} target={args.target} mode={args.mode}: "
          f"{results.cases_run} cases in {elapsed:.1f}s, "
          f"{results.cases_run * 60 / max(elapsed, 1e-9):.0f} cases/min, "
          f"{len(results.failures)} failures", flush=True)
    if results.failures and target.log_path:
        print("pgdog log tail:\n" + indent(target.log_tail(40)))
    sys.exit(1 if results.failures else 0)


if __name__ == "__main__":
    main()
