#!/usr/bin/env bash
# Runs inside `pgdog-topology shards 2` (PG_SHARD0_PORT, PG_SHARD1_PORT, PG_BIN,
# PGDOG_TOPOLOGY_DIR). See router.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION="${DURATION:-8}"
POOL="${POOL:-16}"
SCALE="${SCALE:-2}"
OUT="${OUT:-$ROOT/benchmarks/results/router.md}"
WORK="$PGDOG_TOPOLOGY_DIR/bench"
mkdir -p "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SHARDED_PORT=$(free_port)
SINGLE_PORT=$(free_port)
psql0() { "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_SHARD0_PORT" -U postgres "$@"; }

# The single database: "single" on shard 0's server, loaded directly.
psql0 -c "CREATE DATABASE single" postgres >/dev/null
"$PG_BIN/pgbench" -q -i -s "$SCALE" -h 127.0.0.1 -p "$PG_SHARD0_PORT" -U postgres single >/dev/null 2>&1

cat > "$WORK/sharded.toml" <<TOML
[general]
host = "127.0.0.1"
port = $SHARDED_PORT
default_pool_size = $POOL
auth_type = "trust"

[[databases]]
name = "bench"
host = "127.0.0.1"
port = $PG_SHARD0_PORT
database_name = "postgres"
user = "postgres"
shard = 0

[[databases]]
name = "bench"
host = "127.0.0.1"
port = $PG_SHARD1_PORT
database_name = "postgres"
user = "postgres"
shard = 1

[[sharded_tables]]
database = "bench"
name = "pgbench_accounts"
column = "aid"

[[sharded_tables]]
database = "bench"
name = "pgbench_history"
column = "aid"

[[omnisharded_tables]]
database = "bench"
tables = ["pgbench_branches", "pgbench_tellers"]
TOML
cat > "$WORK/single.toml" <<TOML
[general]
host = "127.0.0.1"
port = $SINGLE_PORT
default_pool_size = $POOL
auth_type = "trust"
query_parser = false
# The raw pooling baseline: no reset between transactions either.
server_reset_query = ""

[[databases]]
name = "bench"
host = "127.0.0.1"
port = $PG_SHARD0_PORT
database_name = "single"
user = "postgres"
TOML
cat > "$WORK/users.toml" <<TOML
[[users]]
name = "postgres"
database = "bench"
TOML
RUST_LOG=warn "$ROOT/target/release/pgdog" --config "$WORK/sharded.toml" --users "$WORK/users.toml" > "$WORK/sharded.log" 2>&1 &
P1=$!
RUST_LOG=warn "$ROOT/target/release/pgdog" --config "$WORK/single.toml" --users "$WORK/users.toml" > "$WORK/single.log" 2>&1 &
P2=$!
trap 'kill $P1 $P2 2>/dev/null || true' EXIT
wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up" >&2; return 1; }
wait_port "$SHARDED_PORT"
wait_port "$SINGLE_PORT"

# The sharded copy, loaded through pgdog (DDL to both shards, accounts split by COPY).
"$PG_BIN/pgbench" -q -i -s "$SCALE" -h 127.0.0.1 -p "$SHARDED_PORT" -U postgres bench > "$WORK/init.log" 2>&1 \
  || { cat "$WORK/init.log" >&2; exit 1; }
a0=$(psql0 -tA -c "SELECT count(*) FROM pgbench_accounts" postgres)
a1=$("$PG_BIN/psql" -X -tA -h 127.0.0.1 -p "$PG_SHARD1_PORT" -U postgres -c "SELECT count(*) FROM pgbench_accounts" postgres)

ACCOUNTS=$((SCALE * 100000))
cat > "$WORK/select.sql" <<SQL
\set aid random(1, $ACCOUNTS)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SQL
cat > "$WORK/update.sql" <<SQL
\set aid random(1, $ACCOUNTS)
\set delta random(-5000, 5000)
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SQL
tps() { # port script clients -> TPS
  local out
  if out=$("$PG_BIN/pgbench" -n -f "$WORK/$2" -M extended -c "$3" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$1" -U postgres bench 2>&1); then
    echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
  else
    echo "failed: $(echo "$out" | grep -m1 -iE 'error|fatal' | cut -c1-80)"
  fi
}
ratio() { python3 -c "import sys
a,b=sys.argv[1],sys.argv[2]
try: print(f'{float(a)/float(b):.2f}x')
except Exception: print('n/a')" "$1" "$2"; }

rows=""
for script in select.sql update.sql; do
  for c in 1 8; do
    s=$(tps "$SINGLE_PORT" "$script" "$c")
    h=$(tps "$SHARDED_PORT" "$script" "$c")
    rows+="| ${script%.sql} | $c | $s | $h | $(ratio "$h" "$s") |"$'\n'
    echo "script=$script clients=$c single=$s sharded=$h" >&2
  done
done

micro=$("$ROOT/target/release/router-bench")

cat > "$OUT" <<MD
# Router benchmark

One run on one machine (2 cores shared by pgbench, pgdog and both PostgreSQL 18 servers: compare
the ratios). \`pgbench -i -s $SCALE\` loaded through pgdog into 2 shards (pgbench_accounts split
by aid: $a0 + $a1 rows) and directly into one database; each cell is
\`pgbench -n -f <script> -M extended -c <clients> -j 2 -T $DURATION\` TPS.
"single" is pgdog over that one database with \`query_parser = false\` (no parsing, no routing);
"sharded" is pgdog over the 2 shards, parsing and routing every query by aid.

Scripts: \`select\` is \`SELECT abalance FROM pgbench_accounts WHERE aid = :aid\`; \`update\` is
\`UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid\` then that SELECT.

Command: \`bash benchmarks/router.sh\`

| script | clients | single, parser off | sharded (2 shards) | sharded / single |
|---|---|---|---|---|
$rows
Parsing and routing in-process (\`router-bench\`: the pgbench statements with random keys, routed
as pgdog routes each Bind; query cache as in pgdog):

$micro

Target: ≤ 10% TPS lost to parsing and routing (sharded / single ≥ 0.90).
MD
cat "$OUT"
