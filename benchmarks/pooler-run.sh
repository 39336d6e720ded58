#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See pooler.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${DURATION:=8}" "${POOL:=20}"  # settings: each may be set in the environment
bench_init pooler
PGDOG_PORT=$(free_port)
BOUNCER_PORT=$(free_port)

psql_at "$PG_PG_PORT" -c "ALTER SYSTEM SET max_connections = 300" >/dev/null
"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1

{
  toml_section general host=127.0.0.1 port="$PGDOG_PORT" default_pool_size="$POOL" auth_type=trust workers="${WORKERS:-2}"
  toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres
} > "$WORK/pgdog.toml"
toml_entry users name=postgres database=postgres > "$WORK/users.toml"
start_pgdog PGDOG_PID "$WORK/pgdog.toml" "$WORK/users.toml" "$WORK/pgdog.log"

# The same database with the parser off (no reset query: the raw pooling baseline), and as a
# one-shard sharded database (the router parses every query).
NOPARSE_PORT=$(free_port)
ROUTER_PORT=$(free_port)
mkdir -p "$WORK/noparse" "$WORK/router"
sed -e "s/^port = $PGDOG_PORT/port = $NOPARSE_PORT/" -e 's/^workers = .*/&\nquery_parser = false\nserver_reset_query = ""/' "$WORK/pgdog.toml" > "$WORK/noparse/pgdog.toml"
{
  sed -e "s/^port = $PGDOG_PORT/port = $ROUTER_PORT/" "$WORK/pgdog.toml"
  toml_entry sharded_tables database=postgres name=pgbench_accounts column=aid
} > "$WORK/router/pgdog.toml"
start_pgdog NOPARSE_PID "$WORK/noparse/pgdog.toml" "$WORK/users.toml" "$WORK/noparse/pgdog.log"
start_pgdog ROUTER_PID "$WORK/router/pgdog.toml" "$WORK/users.toml" "$WORK/router/pgdog.log"

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
as_server pgbouncer -d "$WORK/pgbouncer.ini"
cleanup() {
  stop_pids "$PGDOG_PID" "$NOPARSE_PID" "$ROUTER_PID"
  [ -f "$WORK/pgbouncer.pid" ] && kill "$(cat "$WORK/pgbouncer.pid")" 2>/dev/null || true
}
trap cleanup EXIT
wait_port "$PGDOG_PORT" "$PGDOG_PID"
wait_port "$BOUNCER_PORT"
wait_port "$NOPARSE_PORT" "$NOPARSE_PID"
wait_port "$ROUTER_PORT" "$ROUTER_PID"
BOUNCER_PID=$(cat "$WORK/pgbouncer.pid")
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, clock ticks
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# run PORT MODE CLIENTS [PID]: sets TPS (or "failed: ..."), TX (transactions) and, with a
# proxy PID, CPU_US (the proxy's CPU per transaction in µs).
run() {
  local out before after
  before=$([ -n "${4:-}" ] && cpu "$4" || echo 0)
  if out=$("$PG_BIN/pgbench" -n -S -M "$2" -c "$3" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$1" -U postgres postgres 2>&1); then
    TPS=$(echo "$out" | tps_of)
    TX=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
  else
    TPS="failed: $(echo "$out" | grep -m1 -iE 'error|fatal' | cut -c1-60)"
    TX=0
  fi
  after=$([ -n "${4:-}" ] && cpu "$4" || echo 0)
  CPU_US=$(python3 -c "import sys; t=int(sys.argv[3]); print(f'{(int(sys.argv[2])-int(sys.argv[1]))*int(sys.argv[4])/t:.1f}' if t else 'n/a')" "$before" "$after" "$TX" "$TICK_US")
}

rows=""
for mode in simple extended prepared; do
  for c in 1 8 64; do
    run "$PG_PG_PORT" "$mode" "$c"; d=$TPS
    run "$PGDOG_PORT" "$mode" "$c" "$PGDOG_PID"; g=$TPS; gc=$CPU_US
    run "$BOUNCER_PORT" "$mode" "$c" "$BOUNCER_PID"; b=$TPS; bc=$CPU_US
    rows+="| -S $mode | $c | $d | $g | $b | $(ratio "$g" "$b") | $(ratio "$g" "$d") | $gc | $bc | $(ratio "$gc" "$bc") |"$'\n'
    echo "mode=$mode clients=$c direct=$d pgdog=$g pgbouncer=$b cpu_us pgdog=$gc pgbouncer=$bc" >&2
  done
done

# Syscalls per transaction: strace -c on the proxy during a fixed number of transactions.
syscalls() { # port pid -> calls per transaction
  local n=4000 log="$WORK/strace.$1"
  strace -f -c -p "$2" -o "$log" 2>/dev/null &
  local st=$!
  sleep 1
  "$PG_BIN/pgbench" -n -S -c 8 -j 2 -t $((n / 8)) -h 127.0.0.1 -p "$1" -U postgres postgres >/dev/null 2>&1 || true
  kill -INT "$st" 2>/dev/null || true
  wait "$st" 2>/dev/null || true
  awk -v n=$n '/ total$/ {printf "%.1f", $4 / n}' "$log"
}
if command -v strace >/dev/null; then
  sys_g=$(syscalls "$PGDOG_PORT" "$PGDOG_PID"); sys_b=$(syscalls "$BOUNCER_PORT" "$BOUNCER_PID")
else
  sys_g="n/a (no strace)"; sys_b="n/a"
fi

# Added latency at 1 client (simple): p50 and p99 per transaction from pgbench's log.
latency() { # port -> "p50 p99" in µs
  local prefix="$WORK/lat.$1"
  rm -f "$prefix".*
  "$PG_BIN/pgbench" -n -S -c 1 -T "$DURATION" -l --log-prefix="$prefix" -h 127.0.0.1 -p "$1" -U postgres postgres >/dev/null 2>&1
  cat "$prefix".* | python3 -c "import sys
v=sorted(int(l.split()[2]) for l in sys.stdin if l.strip())
print(v[len(v)//2], v[int(len(v)*0.99)])"
}
read -r lat_d50 lat_d99 <<<"$(latency "$PG_PG_PORT")"
read -r lat_g50 lat_g99 <<<"$(latency "$PGDOG_PORT")"
read -r lat_b50 lat_b99 <<<"$(latency "$BOUNCER_PORT")"

# Parsing every query: the one-shard sharded database (router) vs query_parser = false.
parse_rows=""
for mode in simple extended; do
  run "$NOPARSE_PORT" "$mode" 8; off=$TPS
  run "$ROUTER_PORT" "$mode" 8; on=$TPS
  parse_rows+="| $mode | 8 | $off | $on | $(ratio "$on" "$off") |"$'\n'
done

# RSS of pgdog at rest, with 1,000 and 10,000 idle clients (each ran one query, then holds its
# connection), and after they left.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
rss() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$PGDOG_PID/status"; }
rss_before=$(rss)
idle() { # n -> RSS with n idle clients
  coproc IDLE { "$ROOT/target/release/idle-clients" "host=127.0.0.1 port=$PGDOG_PORT user=postgres dbname=postgres" "$1"; }
  local ready
  read -r ready <&"${IDLE[0]}" || ready="failed"
  echo "$(rss) ($ready)"
  exec {IDLE[1]}>&-
  wait "$IDLE_PID" 2>/dev/null || true
}
rss_1k=$(idle 1000)
rss_10k=$(idle 10000)
for _ in $(seq 1 50); do [ "$(grep -c . /proc/$PGDOG_PID/net/tcp 2>/dev/null || echo 0)" -lt 200 ] && break; sleep 0.1; done
rss_after=$(rss)

cat > "$OUT" <<MD
# Pooler benchmark

One run on one machine (2 cores: pgbench, the pooler and PostgreSQL share them, so compare the
ratios). PostgreSQL 18.6, \`pgbench -i -s 10\`; each cell is \`pgbench -n -S -M <mode> -c <clients> -j 2 -T $DURATION\`
TPS. Poolers in transaction mode with $POOL server connections; PgBouncer is Debian's $(pgbouncer --version 2>/dev/null | head -1 | awk '{print $2}').
CPU: the proxy process' utime + stime over the run divided by the transactions, in µs.

Command: \`bash benchmarks/pooler.sh\`

| workload | clients | direct | pgdog | PgBouncer | pgdog / PgBouncer | pgdog / direct | pgdog CPU µs/tx | PgBouncer CPU µs/tx | CPU pgdog / PgBouncer |
|---|---|---|---|---|---|---|---|---|---|
$rows
Syscalls per transaction (\`strace -f -c\` on the proxy, 4,000 \`-S\` transactions at 8 clients):
pgdog $sys_g, PgBouncer $sys_b.

Latency at 1 client (\`-S\` simple, per transaction, µs): direct p50 $lat_d50 / p99 $lat_d99;
pgdog p50 $lat_g50 / p99 $lat_g99; PgBouncer p50 $lat_b50 / p99 $lat_b99.

Parsing every query (the same server as a one-shard sharded database, whose router parses each
query, vs \`query_parser = false\`), TPS at 8 clients:

| protocol | clients | parser off | router parses | ratio |
|---|---|---|---|---|
$parse_rows
pgdog RSS (MiB): $rss_before at rest, $rss_1k with 1,000 idle clients, $rss_10k with 10,000,
$rss_after after they left.

Targets: ≥ 1.2x PgBouncer's TPS at 1, 8 and 64 clients (simple); ≥ 0.6x direct for prepared at 8
clients; CPU per transaction ≤ 0.7x PgBouncer's; fewer syscalls per transaction than PgBouncer;
RSS ≤ 20 MB with 1,000 idle clients, ≤ 120 MB with 10,000, back within 2 MB of rest after; the
router parsing every query ≥ 0.95x of the parser off.
MD
cat "$OUT"
