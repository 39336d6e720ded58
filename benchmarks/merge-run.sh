#!/usr/bin/env bash
# Runs inside `pgdog-topology shards 3` (PG_SHARD{0,1,2}_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See
# router.sh: a GROUP BY with NGROUPS groups over 3 shards through pgdog (default settings:
# merge_work_mem = 64MB), next to one PostgreSQL holding every row running the same query.
# Replaces the "Cross-shard GROUP BY" section of benchmarks/results/router.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${NGROUPS:=5000000}" "${PER_GROUP:=2}"  # settings: each may be set in the environment
bench_init router
PORT=$(free_port)
ROWS=$((NGROUPS * PER_GROUP))

# Rows (id, user_id, amount): user_id = id % NGROUPS, so each group has PER_GROUP rows, spread
# over the shards by id % 3 (placement does not matter to a GROUP BY over every shard).
SCHEMA="CREATE TABLE events (id bigint, user_id bigint, amount int)"
load() { # port [shard]
  local where=""
  [ -z "${2:-}" ] || where="WHERE id % 3 = $2"
  psql_at "$1" -c "$SCHEMA" -c "INSERT INTO events SELECT id, id % $NGROUPS, (id * 7919) % 1000 FROM generate_series(1::bigint, $ROWS) id $where" -c "VACUUM ANALYZE events"
}
psql_at "$PG_SHARD0_PORT" -c "CREATE DATABASE single" >/dev/null
load "$PG_SHARD0_PORT" 0 & l0=$!
load "$PG_SHARD1_PORT" 1 & l1=$!
load "$PG_SHARD2_PORT" 2 & l2=$!
wait $l0 $l1 $l2
"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_SHARD0_PORT" -U postgres -d single \
  -c "$SCHEMA" -c "INSERT INTO events SELECT id, id % $NGROUPS, (id * 7919) % 1000 FROM generate_series(1::bigint, $ROWS) id" \
  -c "VACUUM ANALYZE events" >/dev/null

{
  toml_section general host=127.0.0.1 port="$PORT" auth_type=trust admin_password=bench
  toml_shard_databases bench 3
  toml_entry sharded_tables database=bench name=events column=id data_type=bigint
} > "$WORK/merge.toml"
toml_entry users name=postgres database=bench > "$WORK/merge-users.toml"
start_pgdog P1 "$WORK/merge.toml" "$WORK/merge-users.toml" "$WORK/merge.log"
trap 'stop_pids $P1' EXIT
wait_port "$PORT" "$P1"

QUERY="SELECT user_id, count(*), sum(amount) FROM events GROUP BY user_id"
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$P1/status"; }
# seconds PORT DB: runs QUERY through psql, prints "seconds rows" (rows to a checksum file).
run_query() {
  local start end
  start=$(date +%s.%N)
  "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d "$2" -c "$QUERY" \
    | awk -F'|' '{n++; c+=$2; s+=$3} END {printf "%d %d %d\n", n, c, s}' > "$WORK/merge-$2.sum"
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.1f}')"
}
# Warm the servers' caches (the shards directly: pgdog's RSS at rest is that of a fresh start).
run_query "$PG_SHARD0_PORT" single >/dev/null
t_single=$(run_query "$PG_SHARD0_PORT" single)
for port in "$PG_SHARD0_PORT" "$PG_SHARD1_PORT" "$PG_SHARD2_PORT"; do
  psql_at "$port" -c "SELECT count(*), sum(amount) FROM events" >/dev/null
done
rest=$(kb VmRSS)
echo 5 > "/proc/$P1/clear_refs"  # VmHWM (peak RSS) from here
t_dog=$(run_query "$PORT" bench)
peak=$(kb VmHWM)
cmp -s "$WORK/merge-single.sum" "$WORK/merge-bench.sum" \
  || { echo "pgdog's answer differs: $(cat "$WORK/merge-bench.sum") vs $(cat "$WORK/merge-single.sum")" >&2; exit 1; }
read -r groups _ < "$WORK/merge-bench.sum"
stats=$(PGPASSWORD=bench "$PG_BIN/psql" -X -At -F' ' -h 127.0.0.1 -p "$PORT" -U admin -d admin -c "SHOW MERGE")
read -r _ _ spilled files _ <<< "$stats"
target_kb=$((2 * 64 * 1024 + rest))
verdict=$([ "$peak" -lt "$target_kb" ] && echo met || echo missed)

section=$(cat <<MD
## Cross-shard GROUP BY past merge_work_mem

\`$QUERY\` over $ROWS rows in $groups groups ($PER_GROUP rows per group, spread over 3 shards
by id % 3), through pgdog with the default settings (\`merge_work_mem = "64MB"\`), next to one
PostgreSQL 18 holding every row (database \`single\` on shard 0's server) running the same query;
psql reads the whole answer, both answers checksummed equal. pgdog's RSS at rest before the
query (a fresh start) and its peak during it (\`VmHWM\`).

| | seconds | pgdog RSS at rest | pgdog peak RSS | spilled | spill files |
|---|---|---|---|---|---|
| one PostgreSQL | $t_single | | | | |
| pgdog, 3 shards | $t_dog | $((rest / 1024)) MB | $((peak / 1024)) MB | $((spilled / 1048576)) MB | $files |

pgdog / PostgreSQL time: $(ratio "$t_dog" "$t_single"). Target: peak RSS < 2 × merge_work_mem +
RSS at rest = $((target_kb / 1024)) MB: **$verdict**.

Command: \`MERGE_ONLY=1 bash benchmarks/router.sh\` (this section only; \`bash benchmarks/router.sh\`
runs it after the tables above). NGROUPS and PER_GROUP set the size.
MD
)
replace_section "$OUT" "Cross-shard GROUP BY past merge_work_mem" "$section"
echo "$section"
