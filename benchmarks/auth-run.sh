#!/usr/bin/env bash
# Runs inside `pgdog-topology single`; see auth.sh for what it measures and its knobs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${DURATION:=8}" "${CLIENTS:=4}"
bench_init auth
PW=bench-pw
"$PG_BIN/pgbench" -q -i -s 1 -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1
psql_at "$PG_PG_PORT" -c "SET password_encryption = 'scram-sha-256'" \
  -c "CREATE ROLE bench_user LOGIN PASSWORD '$PW'" -c "CREATE ROLE bench_query LOGIN PASSWORD '$PW'" \
  -c "CREATE ROLE bench_auth LOGIN SUPERUSER PASSWORD '$PW'" \
  -c "GRANT SELECT ON ALL TABLES IN SCHEMA public TO bench_user, bench_query" >/dev/null
# The server checks these roles' passwords itself.
HBA=$(psql_at "$PG_PG_PORT" -c "SHOW hba_file")
{ echo "host all bench_user,bench_query,bench_auth 127.0.0.1/32 scram-sha-256"; cat "$HBA"; } > "$WORK/hba"
cat "$WORK/hba" > "$HBA"
psql_at "$PG_PG_PORT" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 50); do
  PGPASSWORD=wrong "$PG_BIN/psql" -X -h 127.0.0.1 -p "$PG_PG_PORT" -U bench_user -d postgres -c "SELECT 1" >/dev/null 2>&1 || break
  sleep 0.1
done

declare -A PORT PID
STARTED=()
cleanup() {
  stop_pids "${STARTED[@]}"
  [ ! -f "$WORK/pgb/pgbouncer.pid" ] || kill "$(cat "$WORK/pgb/pgbouncer.pid")" 2>/dev/null || true
}
trap cleanup EXIT

# pgdog: bench_user in users.toml (the server login uses its password), bench_query not.
mkdir -p "$WORK/pgdog"
PORT[pgdog]=$(free_port)
{
  toml_section general host=127.0.0.1 port="${PORT[pgdog]}" default_pool_size=4 auth_user=bench_auth
  toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT"
} > "$WORK/pgdog/pgdog.toml"
{
  toml_entry users name=bench_user database=postgres password="$PW"
  toml_entry users name=bench_auth database=postgres password="$PW"
} > "$WORK/pgdog/users.toml"
start_pgdog "PID[pgdog]" "$WORK/pgdog/pgdog.toml" "$WORK/pgdog/users.toml" "$WORK/pgdog/pgdog.log"
STARTED+=("${PID[pgdog]}")

# PgBouncer: bench_user in auth_file, bench_query through auth_query as bench_auth.
mkdir -p "$WORK/pgb" && chmod 777 "$WORK/pgb"
PORT[pgb]=$(free_port)
printf '"bench_user" "%s"\n"bench_auth" "%s"\n' "$PW" "$PW" > "$WORK/pgb/userlist.txt"
cat > "$WORK/pgb/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$PG_PG_PORT dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${PORT[pgb]}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $WORK/pgb/userlist.txt
auth_user = bench_auth
pool_mode = transaction
default_pool_size = 4
max_client_conn = 2000
logfile = $WORK/pgb/pgbouncer.log
pidfile = $WORK/pgb/pgbouncer.pid
INI
chmod 644 "$WORK/pgb/pgbouncer.ini" "$WORK/pgb/userlist.txt"
as_server "$PGBOUNCER" -d "$WORK/pgb/pgbouncer.ini"
wait_port "${PORT[pgdog]}" "${PID[pgdog]}"
wait_port "${PORT[pgb]}"
PID[pgb]=$(cat "$WORK/pgb/pgbouncer.pid")
PORT[direct]=$PG_PG_PORT
PGB_VER=$("$PGBOUNCER" --version | awk 'NR == 1 {print $2}')

TICK_US=$((1000000 / $(getconf CLK_TCK)))
: > "$WORK/results.tsv"
# case NAME PROXY USER: one pgbench -C run; logins/s and the proxy's CPU per login.
case_run() {
  local name=$1 proxy=$2 user=$3 out c0 c1 tx tps cpu=n/a
  # A first login warms caches (auth_query's, pgdog's derived verifier, the pool).
  PGPASSWORD=$PW "$PG_BIN/psql" -X -h 127.0.0.1 -p "${PORT[$proxy]}" -U "$user" -d postgres -c "SELECT 1" >/dev/null
  [ "$proxy" = direct ] || c0=$(cpu_ticks "${PID[$proxy]}")
  out=$(PGPASSWORD=$PW "$PG_BIN/pgbench" -n -S -C -c "$CLIENTS" -j 2 -T "$DURATION" \
    -h 127.0.0.1 -p "${PORT[$proxy]}" -U "$user" postgres 2>&1)
  tps=$(tps_of <<<"$out")
  tx=$(tx_of <<<"$out")
  if [ "$proxy" != direct ]; then
    c1=$(cpu_ticks "${PID[$proxy]}")
    cpu=$(( (c1 - c0) * TICK_US / tx ))
  fi
  printf '%s\t%s\t%s\n' "$name" "$tps" "$cpu" >> "$WORK/results.tsv"
  echo "$name: $tps logins/s, proxy CPU $cpu µs/login" >&2
}
case_run "PostgreSQL directly (SCRAM)" direct bench_user
case_run "pgdog, user in users.toml" pgdog bench_user
case_run "pgdog, user from auth_query (pass-through SCRAM)" pgdog bench_query
case_run "PgBouncer $PGB_VER, user in auth_file" pgb bench_user
case_run "PgBouncer $PGB_VER, user from auth_query" pgb bench_query

python3 - "$WORK/results.tsv" "$OUT" "$DURATION" "$CLIENTS" "$PGB_VER" "$PGBOUNCER_NOTE" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
out, duration, clients, ver, note = sys.argv[2:]
by = {r[0]: r for r in rows}
def ratio(a, b):
    try: return f"{float(a) / float(b):.2f}x"
    except Exception: return "n/a"
lines = [
    "# Logins: pgdog vs PgBouncer",
    "",
    f"`bash benchmarks/auth.sh`: one PostgreSQL 18 server, SCRAM-SHA-256 between every client and proxy and "
    f"between each proxy and the server (the roles' pg_hba lines say scram-sha-256); `pgbench -n -S -C -c {clients} "
    f"-j 2 -T {duration}`: every transaction opens a new connection (the client computes SCRAM's 4096 PBKDF2 "
    f"rounds each time, on the same 2 cores). PgBouncer {ver} ({note}), transaction mode, pool 4 for both.",
    "",
    "| case | logins/s | proxy CPU µs per login |",
    "|---|---|---|",
]
lines += [f"| {r[0]} | {r[1]} | {r[2]} |" for r in rows]
names = [r[0] for r in rows]
pairs = [(names[1], names[3]), (names[2], names[4])]
lines += ["", "| pgdog / PgBouncer | logins/s | CPU per login |", "|---|---|---|"]
for a, b in pairs:
    lines.append(f"| {a.split(', ', 1)[1]} | {ratio(by[a][1], by[b][1])} | {ratio(by[a][2], by[b][2])} |")
lines += ["", "Lower CPU per login is better; logins/s is bounded by the client's own PBKDF2 on this machine."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
