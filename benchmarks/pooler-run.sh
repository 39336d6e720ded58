#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See pooler.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION="${DURATION:-8}"
POOL="${POOL:-20}"
OUT="${OUT:-$ROOT/benchmarks/results/pooler.md}"
WORK="$PGDOG_TOPOLOGY_DIR/bench"
mkdir -p "$WORK"
chmod 777 "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGDOG_PORT=$(free_port)
BOUNCER_PORT=$(free_port)

"$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres -c "ALTER SYSTEM SET max_connections = 300" postgres >/dev/null
"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1

cat > "$WORK/pgdog.toml" <<TOML
[general]
host = "127.0.0.1"
port = $PGDOG_PORT
default_pool_size = $POOL
auth_type = "trust"
workers = ${WORKERS:-2}

[[databases]]
name = "postgres"
host = "127.0.0.1"
port = $PG_PG_PORT
user = "postgres"
TOML
cat > "$WORK/users.toml" <<TOML
[[users]]
name = "postgres"
database = "postgres"
TOML
RUST_LOG=warn "$ROOT/target/release/pgdog" --config "$WORK/pgdog.toml" --users "$WORK/users.toml" > "$WORK/pgdog.log" 2>&1 &
PGDOG_PID=$!

cat > "$WORK/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$PG_PG_PORT dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $WORK/userlist.txt
pool_mode = transaction
default_pool_size = $POOL
max_client_conn = 2000
logfile = $WORK/pgbouncer.log
pidfile = $WORK/pgbouncer.pid
INI
echo '"postgres" ""' > "$WORK/userlist.txt"
chmod 644 "$WORK"/pgbouncer.ini "$WORK/userlist.txt"
if [ "$(id -u)" = 0 ]; then
  runuser -u postgres -- pgbouncer -d "$WORK/pgbouncer.ini"
else
  pgbouncer -d "$WORK/pgbouncer.ini"
fi
cleanup() {
  kill "$PGDOG_PID" 2>/dev/null || true
  [ -f "$WORK/pgbouncer.pid" ] && kill "$(cat "$WORK/pgbouncer.pid")" 2>/dev/null || true
}
trap cleanup EXIT
wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up" >&2; return 1; }
wait_port "$PGDOG_PORT"
wait_port "$BOUNCER_PORT"

tps() { # port mode clients -> TPS (or "failed")
  local out
  if out=$("$PG_BIN/pgbench" -n -S -M "$2" -c "$3" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$1" -U postgres postgres 2>&1); then
    echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
  else
    echo "failed: $(echo "$out" | grep -m1 -iE 'error|fatal' | cut -c1-60)"
  fi
}
ratio() { python3 -c "import sys
a,b=sys.argv[1],sys.argv[2]
try: print(f'{float(a)/float(b):.2f}x')
except Exception: print('n/a')" "$1" "$2"; }

rows=""
for mode in simple prepared; do
  for c in 1 8 64; do
    d=$(tps "$PG_PG_PORT" "$mode" "$c")
    g=$(tps "$PGDOG_PORT" "$mode" "$c")
    b=$(tps "$BOUNCER_PORT" "$mode" "$c")
    rows+="| -S $mode | $c | $d | $g | $b | $(ratio "$g" "$b") | $(ratio "$g" "$d") |"$'\n'
    echo "mode=$mode clients=$c direct=$d pgdog=$g pgbouncer=$b" >&2
  done
done

# RSS of pgdog with 1,000 idle clients (each ran one query, then holds its connection).
rss_before=$(awk '/VmRSS/ {print $2}' /proc/$PGDOG_PID/status)
coproc IDLE { "$ROOT/target/release/idle-clients" "host=127.0.0.1 port=$PGDOG_PORT user=postgres dbname=postgres" 1000; }
read -r ready <&"${IDLE[0]}" || ready="failed"
rss_idle=$(awk '/VmRSS/ {print $2}' /proc/$PGDOG_PID/status)
exec {IDLE[1]}>&-
wait "$IDLE_PID" 2>/dev/null || true

cat > "$OUT" <<MD
# Pooler benchmark

One run on one machine (2 cores: pgbench, the pooler and PostgreSQL share them, so compare the
ratios). PostgreSQL 18.6, \`pgbench -i -s 10\`; each cell is \`pgbench -n -S -M <mode> -c <clients> -j 2 -T $DURATION\`
TPS. Poolers in transaction mode with $POOL server connections; PgBouncer is Debian's $(pgbouncer --version 2>/dev/null | head -1 | awk '{print $2}').

Command: \`bash benchmarks/pooler.sh\`

| workload | clients | direct | pgdog | PgBouncer | pgdog / PgBouncer | pgdog / direct |
|---|---|---|---|---|---|---|
$rows
pgdog RSS: $((rss_before / 1024)) MiB at rest, $((rss_idle / 1024)) MiB with 1,000 idle clients connected ($ready).

Targets: ≥ 1.2x PgBouncer's TPS at 8 and 64 clients; prepared mode works (PgBouncer 1.18 fails it);
≤ 50 MB RSS for 1,000 idle clients.
MD
cat "$OUT"
