"""Client load for benchmarks/restart-run.sh: raw protocol v3 clients (trust auth) against
127.0.0.1:PORT for SECONDS, printing one JSON line of counts at the end.

    restart_load.py PORT SECONDS CONNECTORS PERSISTENT
    restart_load.py queued PORT N     (N connections opened at once, each sends its startup
                                       packet and waits up to 20 s for ReadyForQuery: counts)

- CONNECTORS threads each loop: connect, log in, SELECT 1, Terminate, close (a new connection
  per transaction, like pgbench -C);
- PERSISTENT threads each keep one connection and run SELECT 1 on it in a loop; after a
  failure they connect again.

Every outcome is counted: ok, refused (ECONNREFUSED at connect), reset (ECONNRESET, EPIPE, or
the connection closed before ReadyForQuery), error (an ErrorResponse, e.g. FATAL 57P01), with
the first few messages kept for the report.
"""
import json
import socket
import struct
import sys
import threading
import time

QUEUED = sys.argv[1] == "queued"
if QUEUED:
    port, queued = int(sys.argv[2]), int(sys.argv[3])
else:
    port, seconds, connectors, persistent = (int(a) for a in sys.argv[1:5])
lock = threading.Lock()
counts = {"new_ok": 0, "new_refused": 0, "new_reset": 0, "new_error": 0,
          "persistent_ok": 0, "persistent_failed": 0}
samples = []


class Failure(Exception):
    def __init__(self, kind, text):
        super().__init__(text)
        self.kind = kind


def note(key, text=None):
    with lock:
        counts[key] += 1
        if text and len(samples) < 10:
            samples.append(f"{key}: {text}")


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise Failure("reset", "closed by the proxy")
        buf += chunk
    return buf


def until_ready(s):
    """Reads messages until ReadyForQuery; raises on ErrorResponse."""
    while True:
        tag = recv_exact(s, 1)
        (length,) = struct.unpack("!I", recv_exact(s, 4))
        body = recv_exact(s, length - 4)
        if tag == b"E":
            fields = dict((f[:1], f[1:]) for f in body.split(b"\0") if f)
            raise Failure("error", (fields.get(b"C", b"") + b" " + fields.get(b"M", b"")).decode())
        if tag == b"Z":
            return


def connect():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
    except ConnectionRefusedError as e:
        raise Failure("refused", str(e))
    except OSError as e:
        raise Failure("reset", str(e))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    params = b"user\0postgres\0database\0postgres\0\0"
    s.sendall(struct.pack("!II", 8 + len(params), 196608) + params)
    until_ready(s)
    return s


def select_one(s):
    q = b"SELECT 1\0"
    s.sendall(b"Q" + struct.pack("!I", 4 + len(q)) + q)
    until_ready(s)


def guarded(f, *args):
    try:
        return f(*args)
    except Failure:
        raise
    except (ConnectionResetError, BrokenPipeError, socket.timeout, OSError) as e:
        raise Failure("reset", str(e))


def connector(deadline):
    while time.time() < deadline:
        try:
            s = guarded(connect)
            guarded(select_one, s)
            s.sendall(b"X\0\0\0\4")
            s.close()
            note("new_ok")
        except Failure as e:
            note("new_" + e.kind, str(e))


def persistent_client(deadline):
    s = None
    while time.time() < deadline:
        try:
            if s is None:
                s = guarded(connect)
            guarded(select_one, s)
            note("persistent_ok")
        except Failure as e:
            note("persistent_failed", f"{e.kind}: {e}")
            s = None
            time.sleep(0.01)


def queued_main():
    """N logins started at once (the test stops the old process first, so some of them wait in
    its accept queue): how many get to ReadyForQuery."""
    result = {"ok": 0, "refused": 0, "reset": 0, "error": 0}
    samples_q = []

    def one():
        try:
            s = guarded(connect)
            s.close()
            kind = "ok"
        except Failure as e:
            kind = e.kind
            samples_q.append(f"{e.kind}: {e}")
        with lock:
            result[kind] += 1

    ts = [threading.Thread(target=one) for _ in range(queued)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({**result, "samples": samples_q[:5]}))


if QUEUED:
    queued_main()
    sys.exit(0)

deadline = time.time() + seconds
threads = [threading.Thread(target=connector, args=(deadline,)) for _ in range(connectors)]
threads += [threading.Thread(target=persistent_client, args=(deadline,)) for _ in range(persistent)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({**counts, "samples": samples}))
