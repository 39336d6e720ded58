#!/usr/bin/env bash
# Shared helpers of the scripts in scripts/ and benchmarks/; source it, don't run it:
#   source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"   # from benchmarks/
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"              # from scripts/
# Sets ROOT (the repository, absolute) so callers work from any directory. The functions that
# talk to PostgreSQL expect the variables `pgdog-topology` exports (PG_BIN, PGDOG_TOPOLOGY_DIR).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# ---------------------------------------------------------------------------------------------
# Entry points: provisioning and building.

# provision: cd to the repository and install what is missing (scripts/provision.sh: Debian
# packages, PostgreSQL 18 in .venv; exports PGDOG_PG_BIN).
provision() {
  cd "$ROOT"
  source "$ROOT/scripts/provision.sh"
}

# build_release [CARGO_FLAGS...]: release build of pgdog and of the topology harness
# (pgdog-integration: target/release/pgdog-topology), plus whatever CARGO_FLAGS add (-q, -p ...).
build_release() {
  cargo build --release --locked -p pgdog -p pgdog-integration "$@"
}

# pgbouncer_anchor: sets PGBOUNCER (unless already set) to the PgBouncer the benchmarks compare
# with, and PGBOUNCER_NOTE to where it comes from; exports both. PgBouncer 1.25 from
# ../shared/tools/build-pgbouncer.sh (built once, then cached) when that folder exists, else
# Debian's `pgbouncer` (1.18 on Debian 12: no prepared statements in transaction mode).
pgbouncer_anchor() {
  local tools="$ROOT/../shared/tools" debian
  debian=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  if [ -n "${PGBOUNCER:-}" ]; then
    : "${PGBOUNCER_NOTE:=set by PGBOUNCER}"
  elif [ ! -d "$tools" ]; then
    PGBOUNCER=$debian PGBOUNCER_NOTE="Debian's: ../shared/tools not found"
  elif PGBOUNCER=$(bash "$tools/build-pgbouncer.sh" | tail -n 1) && [ -x "$PGBOUNCER" ]; then
    PGBOUNCER_NOTE="built by ../shared/tools/build-pgbouncer.sh"
  else
    echo "pgbouncer_anchor: build-pgbouncer.sh failed, falling back to $debian" >&2
    PGBOUNCER=$debian PGBOUNCER_NOTE="Debian's: ../shared/tools/build-pgbouncer.sh failed"
  fi
  export PGBOUNCER PGBOUNCER_NOTE
}

# ---------------------------------------------------------------------------------------------
# Inside a topology (`pgdog-topology ... -- bash SCRIPT`).

# pgbouncer_ini PORT POOL DIR: prints a PgBouncer configuration in transaction mode, pool POOL, on
# 127.0.0.1:PORT in front of the topology's server (database postgres, auth trust, users from
# $WORK/userlist.txt), logging to DIR/pgbouncer.log; the caller appends what else it needs.
pgbouncer_ini() {
  cat <<INI
[databases]
postgres = host=127.0.0.1 port=$PG_PG_PORT dbname=postgres user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $1
unix_socket_dir =
auth_type = trust
auth_file = $WORK/userlist.txt
pool_mode = transaction
default_pool_size = $2
max_client_conn = 2000
logfile = $3/pgbouncer.log
INI
}

# bench_init NAME: the common setup of benchmarks/NAME-run.sh: OUT, the results table it writes
# (unless set: benchmarks/results/NAME.md), and WORK, a scratch folder $PGDOG_TOPOLOGY_DIR/bench
# (removed with the topology), world-writable: as root the servers and PgBouncer run as another
# user and write there.
bench_init() {
  OUT="${OUT:-$ROOT/benchmarks/results/$1.md}"
  WORK="$PGDOG_TOPOLOGY_DIR/bench"
  mkdir -p "$WORK"
  chmod 777 "$WORK"
}

# free_port: prints a TCP port free on 127.0.0.1 right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT [PID]: waits up to 10 s for 127.0.0.1:PORT to accept connections; with PID,
# gives up as soon as that process has exited. Returns 1 (with a message) when it does not come up.
wait_port() {
  local port=$1 pid=${2:-}
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      echo "process $pid exited before port $port was up" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "port $port not up" >&2
  return 1
}

# start_pgdog PID_VAR CONFIG USERS LOG [RUST_LOG]: starts target/release/pgdog in the
# background, its output appended to LOG, logging at RUST_LOG (default warn); sets the variable
# named PID_VAR to its pid.
start_pgdog() {
  RUST_LOG="${5:-warn}" "$ROOT/target/release/pgdog" --config "$2" --users "$3" >> "$4" 2>&1 &
  printf -v "$1" '%s' "$!"
}

# stop_pids PID...: kills those processes (the empty ones and those already gone are skipped)
# and waits for them.
stop_pids() {
  local pids=() pid
  for pid in "$@"; do [ -z "$pid" ] || pids+=("$pid"); done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}

# as_server CMD...: runs CMD as the OS user the topology's servers run as (as root:
# $PGDOG_PG_USER, default postgres, like pgdog-topology; pg_ctl and PgBouncer refuse root).
as_server() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "${PGDOG_PG_USER:-postgres}" -- "$@"
  else
    "$@"
  fi
}

# psql_at PORT PSQL_ARGS...: psql as postgres to database postgres on 127.0.0.1:PORT: no psqlrc,
# quiet, unaligned tuples only, stopping at the first error.
psql_at() {
  local port=$1
  shift
  "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"
}

# tps_of: reads pgbench's output on stdin, prints its TPS as an integer.
tps_of() {
  sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
}

# tx_of: reads pgbench's output on stdin, prints the number of transactions it processed.
tx_of() {
  sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p'
}

# cpu_ticks PID: the process's CPU time so far (utime + stime), in clock ticks (getconf CLK_TCK).
cpu_ticks() {
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# ratio A B: prints A / B as "1.23x", or "n/a" when either is not a number.
ratio() {
  python3 -c "import sys
a,b=sys.argv[1],sys.argv[2]
try: print(f'{float(a)/float(b):.2f}x')
except Exception: print('n/a')" "$1" "$2"
}

# replace_section FILE HEADING SECTION: in the Markdown FILE, the section whose "## " title starts
# with HEADING (up to the next "## ") becomes SECTION, in place; appended when FILE has none.
# The other sections stay as they are.
replace_section() {
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
path, heading, section = sys.argv[1:4]
try:
    text = open(path).read()
except FileNotFoundError:
    text = ""
parts = [p for p in re.split(r"(?m)^(?=## )", text) if p.strip()]
at = next((i for i, p in enumerate(parts) if p.startswith("## " + heading)), None)
if at is None:
    parts.append(section)
else:
    parts[at] = section
open(path, "w").write("\n\n".join(p.strip("\n") for p in parts) + "\n")
PY
}

# ---------------------------------------------------------------------------------------------
# pgdog configuration (TOML), printed on stdout. Values: numbers, true, false and arrays
# ([...]) are written as they are, anything else as a quoted string.

_toml_pairs() {
  local pair key value
  for pair in "$@"; do
    key=${pair%%=*}
    value=${pair#*=}
    case $value in
      true | false | \[*) ;;
      "" | *[!0-9]*)
        value=${value//\\/\\\\}
        value="\"${value//\"/\\\"}\""
        ;;
    esac
    printf '%s = %s\n' "$key" "$value"
  done
}

# toml_section NAME KEY=VALUE...: a [NAME] table, e.g. toml_section general port=6432.
toml_section() {
  printf '[%s]\n' "$1"
  _toml_pairs "${@:2}"
}

# toml_entry NAME KEY=VALUE...: one [[NAME]] entry after a blank line, e.g.
#   toml_entry databases name=bench port="$PG_SHARD0_PORT" user=postgres shard=0
toml_entry() {
  printf '\n[[%s]]\n' "$1"
  _toml_pairs "${@:2}"
}

# toml_shard_databases NAME COUNT: database NAME as one [[databases]] entry per shard of the
# topology (`pgdog-topology shards COUNT`: PG_SHARD<i>_PORT, database postgres, user postgres).
toml_shard_databases() {
  local shard port_var
  for ((shard = 0; shard < $2; shard++)); do
    port_var="PG_SHARD${shard}_PORT"
    toml_entry databases name="$1" host=127.0.0.1 port="${!port_var}" database_name=postgres user=postgres shard="$shard"
  done
}

# toml_pgbench_sharding DATABASE [KEY=VALUE...]: pgbench's tables in a sharded DATABASE:
# pgbench_accounts and pgbench_history sharded by aid (each entry with the extra KEY=VALUEs,
# e.g. data_type=integer), pgbench_branches and pgbench_tellers on every shard.
toml_pgbench_sharding() {
  local db=$1 table
  shift
  for table in pgbench_accounts pgbench_history; do
    toml_entry sharded_tables database="$db" name="$table" column=aid "$@"
  done
  toml_entry omnisharded_tables database="$db" 'tables=["pgbench_branches", "pgbench_tellers"]'
}
