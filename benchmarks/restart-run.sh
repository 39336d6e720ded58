#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See restart.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${RESTARTS:=10}" "${CONNECTORS:=8}" "${PERSISTENT:=8}" "${OVERLAP:=1}" "${QUEUED:=16}" "${LINGER:=300}"
bench_init restart
pgbouncer_anchor
FP_BIN="$ROOT/target/failpoints/release/pgdog"
[ -x "$FP_BIN" ] || { echo "missing $FP_BIN (run benchmarks/restart.sh)" >&2; exit 1; }
DURATION=$((4 + RESTARTS * (OVERLAP + 3)))

# stop_old NAME PID SIGNAL: the old process is frozen (SIGSTOP) while QUEUED logins start, so
# those the kernel gives its socket wait in its accept queue; then it gets SIGNAL and SIGCONT.
# The logins' outcome is appended to $WORK/NAME-queued.jsonl.
stop_old() {
  kill -STOP "$2"
  python3 "$ROOT/benchmarks/restart_load.py" queued "$PORT_NOW" "$QUEUED" >> "$WORK/$1-queued.jsonl" &
  local q=$!
  sleep 0.5
  kill "-$3" "$2"
  kill -CONT "$2"
  wait "$q"
}
toml_entry users name=postgres database=postgres > "$WORK/users.toml"
echo '"postgres" ""' > "$WORK/userlist.txt"
chmod 644 "$WORK/userlist.txt"
PIDS=()
cleanup() { stop_pids "${PIDS[@]}"; pkill -f "$WORK/pgb" 2>/dev/null || true; }
trap cleanup EXIT

# wait_gone PID: waits up to 60 s for a process (not necessarily our child) to exit.
wait_gone() {
  for _ in $(seq 1 600); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  echo "process $1 did not exit" >&2
  return 1
}

# pgdog_instance BIN CONFIG N [ENV...]: starts pgdog N in the background; prints its pid.
pgdog_instance() {
  local bin=$1 config=$2 n=$3
  shift 3
  env "$@" RUST_LOG=info "$bin" --config "$config" --users "$WORK/users.toml" >> "$WORK/$(basename "$config" .toml)-$n.log" 2>&1 &
  echo $!
}

# restart_pgdog NAME BIN [ENV...]: RESTARTS restarts of pgdog under the load; sets RESULT.
restart_pgdog() {
  local name=$1 bin=$2 port old new
  shift 2
  port=$(free_port)
  PORT_NOW=$port
  toml_section general host=127.0.0.1 port="$port" auth_type=trust so_reuseport=true handover_dir="$WORK" shutdown_timeout=20000 > "$WORK/$name.toml"
  toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres >> "$WORK/$name.toml"
  old=$(pgdog_instance "$bin" "$WORK/$name.toml" 0 "$@")
  PIDS+=("$old")
  wait_port "$port" "$old"
  python3 "$ROOT/benchmarks/restart_load.py" "$port" "$DURATION" "$CONNECTORS" "$PERSISTENT" > "$WORK/$name.json" &
  local load=$!
  sleep 2
  for i in $(seq 1 "$RESTARTS"); do
    new=$(pgdog_instance "$bin" "$WORK/$name.toml" "$i" "$@")
    PIDS+=("$new")
    until [ -S "$WORK/pgdog-127.0.0.1-$port.$new.handover" ]; do kill -0 "$new" || exit 1; sleep 0.05; done
    sleep "$OVERLAP"
    stop_old "$name" "$old" TERM
    wait_gone "$old"
    grep -q "shutdown complete" "$WORK/$name-$((i - 1)).log" || { echo "$name: pgdog $old did not shut down cleanly" >&2; exit 1; }
    old=$new
    sleep 1
  done
  wait "$load"
  RESULT=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
q = [json.loads(l) for l in open(sys.argv[2])]
for k in ("ok", "refused", "reset", "error"):
    r["queued_" + k] = sum(x[k] for x in q)
r["samples"] += [s for x in q for s in x["samples"]][:5]
print(json.dumps(r))' "$WORK/$name.json" "$WORK/$name-queued.jsonl")
}

# restart_pgbouncer NAME: the same with PgBouncer (so_reuseport = 1, SIGINT: safe shutdown).
restart_pgbouncer() {
  local name=$1 port old new dir="$WORK/$1"
  mkdir -p "$dir"
  chmod 777 "$dir"
  port=$(free_port)
  PORT_NOW=$port
  pgb_ini() {
    cat > "$dir/pgbouncer-$1.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$PG_PG_PORT dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
so_reuseport = 1
unix_socket_dir =
auth_type = trust
auth_file = $WORK/userlist.txt
pool_mode = transaction
max_client_conn = 2000
logfile = $dir/pgbouncer-$1.log
pidfile = $dir/pgbouncer-$1.pid
INI
    chmod 644 "$dir/pgbouncer-$1.ini"
    as_server "$PGBOUNCER" -d "$dir/pgbouncer-$1.ini"
    until [ -s "$dir/pgbouncer-$1.pid" ]; do sleep 0.05; done
    cat "$dir/pgbouncer-$1.pid"
  }
  old=$(pgb_ini 0)
  wait_port "$port"
  python3 "$ROOT/benchmarks/restart_load.py" "$port" "$DURATION" "$CONNECTORS" "$PERSISTENT" > "$WORK/$name.json" &
  local load=$!
  sleep 2
  for i in $(seq 1 "$RESTARTS"); do
    new=$(pgb_ini "$i")
    sleep "$OVERLAP"
    stop_old "$name" "$old" INT
    wait_gone "$old"
    old=$new
    sleep 1
  done
  wait "$load"
  kill -INT "$old" 2>/dev/null || true
  RESULT=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
q = [json.loads(l) for l in open(sys.argv[2])]
for k in ("ok", "refused", "reset", "error"):
    r["queued_" + k] = sum(x[k] for x in q)
r["samples"] += [s for x in q for s in x["samples"]][:5]
print(json.dumps(r))' "$WORK/$name.json" "$WORK/$name-queued.jsonl")
}

restart_pgdog pgdog "$ROOT/target/release/pgdog"
R_PGDOG=$RESULT
restart_pgdog pgdog_linger "$FP_BIN" "FAILPOINTS=listener-linger=return($LINGER)"
R_LINGER=$RESULT
restart_pgdog pgdog_keep "$FP_BIN" "FAILPOINTS=listener-linger=return($LINGER);keep-listening-socket=return"
R_KEEP=$RESULT
restart_pgbouncer pgb
R_PGB=$RESULT
ANCHOR_VER=$("$PGBOUNCER" --version | awk 'NR == 1 {print $2}')

python3 - "$OUT" "$RESTARTS" "$CONNECTORS" "$PERSISTENT" "$OVERLAP" "$DURATION" "$ANCHOR_VER" "$PGBOUNCER_NOTE" "$QUEUED" "$LINGER" "$R_PGDOG" "$R_LINGER" "$R_KEEP" "$R_PGB" <<'PY'
import json, sys
out, restarts, connectors, persistent, overlap, duration, ver, note, queued, linger = sys.argv[1:11]
results = [json.loads(a) for a in sys.argv[11:15]]
names = ["pgdog, `so_reuseport = true` (listening socket and clients handed over)",
         f"pgdog, old process keeps its socket {linger} ms without accepting, then hands it over",
         f"pgdog, old process keeps its socket {linger} ms without accepting, then closes it (no handover of the socket)",
         f"PgBouncer {ver}, `so_reuseport = 1`, SIGINT (safe shutdown)"]
rows = list(zip(names, results))
lines = [
    "# Restart under load",
    "",
    "Generated by `bash benchmarks/restart.sh` (issue 30). One PostgreSQL 18 server, one port; "
    f"{restarts} restarts in a row of each proxy: a second process starts on the port, both serve for "
    f"{overlap} s, the first is signalled (pgdog: SIGTERM; PgBouncer: SIGINT) and exits, 1 s later the next "
    f"restart. Load for {duration} s from `benchmarks/restart_load.py`: {connectors} threads opening a new "
    f"connection per `SELECT 1` (login, query, Terminate) and {persistent} threads each running `SELECT 1` in a "
    "loop on one connection (reconnecting after a failure). At each restart the old process is also "
    f"frozen (SIGSTOP) while {queued} logins start at once, so those the kernel gives its socket wait in its "
    "accept queue; it then gets its signal and SIGCONT (queued logins: how many reached ReadyForQuery). "
    f"The two middle rows use a release build with test hooks (failpoints `listener-linger`, "
    "`keep-listening-socket`) that widen the moment between the old process' last accept and the end "
    f"of its socket to {linger} ms: connections the kernel puts in its queue meanwhile are either handed "
    "over with the socket or reset when it closes. PgBouncer: " + note + ".",
    "",
    "| proxy | new connections ok | refused | reset | error | persistent queries ok | persistent failures | queued logins ok | queued logins failed |",
    "|---|---|---|---|---|---|---|---|---|",
]
for name, r in rows:
    lines.append(f"| {name} | {r['new_ok']} | {r['new_refused']} | {r['new_reset']} | {r['new_error']} | {r['persistent_ok']} | {r['persistent_failed']} | {r['queued_ok']} | {r['queued_refused'] + r['queued_reset'] + r['queued_error']} |")
lines += ["", "First failures seen (up to 10 per proxy):", ""]
for name, r in rows:
    lines.append(f"- {name}: " + ("; ".join(r["samples"]) if r["samples"] else "none"))
lines += ["", "Target (issue 30): 0 refused, reset or failed for pgdog, new and persistent connections alike."]
ok = all(rows[0][1][k] == 0 for k in ("new_refused", "new_reset", "new_error", "persistent_failed", "queued_refused", "queued_reset", "queued_error"))
lines.append(f"Result: {'met' if ok else 'missed'}.")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
