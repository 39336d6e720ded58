#!/usr/bin/env bash
# Runs inside `pgdog-topology shards 2` (PG_SHARD0_PORT, PG_SHARD1_PORT, PG_BIN,
# PGDOG_TOPOLOGY_DIR). See router.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${DURATION:=8}" "${POOL:=16}" "${SCALE:=2}"  # settings: each may be set in the environment
bench_init router
SHARDED_PORT=$(free_port)
SINGLE_PORT=$(free_port)
NOSHAPES_PORT=$(free_port)

# The single database: "single" on shard 0's server, loaded directly.
psql_at "$PG_SHARD0_PORT" -c "CREATE DATABASE single" >/dev/null
"$PG_BIN/pgbench" -q -i -s "$SCALE" -h 127.0.0.1 -p "$PG_SHARD0_PORT" -U postgres single >/dev/null 2>&1

# general ARGS...: the [general] section both pgdogs share.
general() { toml_section general host=127.0.0.1 default_pool_size="$POOL" auth_type=trust "$@"; }
{
  general port="$SHARDED_PORT"
  toml_shard_databases bench 2
  toml_pgbench_sharding bench
} > "$WORK/sharded.toml"
{
  # The raw pooling baseline: no parsing, no reset between transactions either.
  general port="$SINGLE_PORT" query_parser=false server_reset_query=
  toml_entry databases name=bench host=127.0.0.1 port="$PG_SHARD0_PORT" database_name=single user=postgres
} > "$WORK/single.toml"
# The sharded pgdog as it was before the shape cache: simple queries parsed every time.
sed -e "s/^port = $SHARDED_PORT\$/port = $NOSHAPES_PORT\nquery_shape_cache_limit = 0/" "$WORK/sharded.toml" > "$WORK/noshapes.toml"
grep -q '^query_shape_cache_limit = 0$' "$WORK/noshapes.toml"
toml_entry users name=postgres database=bench > "$WORK/users.toml"
start_pgdog P1 "$WORK/sharded.toml" "$WORK/users.toml" "$WORK/sharded.log"
start_pgdog P2 "$WORK/single.toml" "$WORK/users.toml" "$WORK/single.log"
start_pgdog P3 "$WORK/noshapes.toml" "$WORK/users.toml" "$WORK/noshapes.log"
trap 'stop_pids $P1 $P2 $P3' EXIT
wait_port "$SHARDED_PORT" "$P1"
wait_port "$SINGLE_PORT" "$P2"
wait_port "$NOSHAPES_PORT" "$P3"

# The sharded copy, loaded through pgdog (DDL to both shards, accounts split by COPY).
"$PG_BIN/pgbench" -q -i -s "$SCALE" -h 127.0.0.1 -p "$SHARDED_PORT" -U postgres bench > "$WORK/init.log" 2>&1 \
  || { cat "$WORK/init.log" >&2; exit 1; }
a0=$(psql_at "$PG_SHARD0_PORT" -c "SELECT count(*) FROM pgbench_accounts")
a1=$(psql_at "$PG_SHARD1_PORT" -c "SELECT count(*) FROM pgbench_accounts")

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
tps() { # port script clients [protocol] -> TPS
  local out
  if out=$("$PG_BIN/pgbench" -n -f "$WORK/$2" -M "${4:-extended}" -c "$3" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$1" -U postgres bench 2>&1); then
    echo "$out" | tps_of
  else
    echo "failed: $(echo "$out" | grep -m1 -iE 'error|fatal' | cut -c1-80)"
  fi
}

rows=""
for script in select.sql update.sql; do
  for c in 1 8; do
    s=$(tps "$SINGLE_PORT" "$script" "$c")
    h=$(tps "$SHARDED_PORT" "$script" "$c")
    rows+="| ${script%.sql} | $c | $s | $h | $(ratio "$h" "$s") |"$'\n'
    echo "script=$script clients=$c single=$s sharded=$h" >&2
  done
done

# The simple protocol: every query text differs (its aid), so the router parses each one
# unless its shape is cached.
simple_rows=""
for c in 1 8; do
  s=$(tps "$SINGLE_PORT" select.sql "$c" simple)
  b=$(tps "$NOSHAPES_PORT" select.sql "$c" simple)
  h=$(tps "$SHARDED_PORT" select.sql "$c" simple)
  simple_rows+="| select | $c | $s | $b | $h | $(ratio "$b" "$s") | $(ratio "$h" "$s") | $(ratio "$h" "$b") |"$'\n'
  echo "simple clients=$c single=$s before=$b after=$h" >&2
done

# The same configuration as the sharded pgdog.
micro=$("$ROOT/target/release/router-bench" "$WORK/sharded.toml" "$WORK/users.toml")

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
The simple protocol (\`-M simple\`: the aid is a literal, every text differs), the same
\`select\` script. "before": the sharded pgdog with \`query_shape_cache_limit = 0\`, parsing every
text as pgdog did before the shape cache; "after": the default, where a text whose shape (its
text without the literals) was seen before reuses that parse:

| script | clients | single, parser off | sharded, before | sharded, after | before / single | after / single | after / before |
|---|---|---|---|---|---|---|---|
$simple_rows
Parsing and routing in-process (\`router-bench\`: the pgbench statements with random keys, routed
as pgdog routes each Bind; query cache as in pgdog):

$micro

Target: ≤ 10% TPS lost to parsing and routing (sharded / single ≥ 0.90).
MD
cat "$OUT"
