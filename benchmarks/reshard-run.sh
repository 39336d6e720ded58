#!/usr/bin/env bash
# Runs inside `pgdog-topology replicated+shards 2` (PG_PRIMARY_PORT, PG_STANDBY_PORT,
# PG_SHARD0_PORT, PG_SHARD1_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See reshard.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${SIZE_MB:=1024}" "${RUNS:=2}" "${APPLY_SECONDS:=60}" "${CLIENTS:=8}" "${SCALE:=20}" "${VERIFY:=1}" "${BACKLOG_SECONDS:=30}"  # settings: each may be set in the environment
# PARTS: "all" (copy and apply) or "apply" (skip the copy part).
PARTS="${PARTS:-all}"
# PGDOG: the pgdog binary measured (e.g. an older build, to compare).
PGDOG="${PGDOG:-$ROOT/target/release/pgdog}"
# REPLAY_ARGS: extra flags of `pgdog replay` (e.g. --atomic).
REPLAY_ARGS="${REPLAY_ARGS:-}"
SLOT=reshard_bench
SHARDS=("$PG_SHARD0_PORT" "$PG_SHARD1_PORT")
export PGSSLMODE=disable PGCONNECT_TIMEOUT=10
bench_init reshard

die() { echo "reshard benchmark: $*" >&2; exit 1; }
say() { echo "reshard benchmark: $*" >&2; }
src() { psql_at "$PG_PRIMARY_PORT" -c "$1"; }
stb() { psql_at "$PG_STANDBY_PORT" -c "$1"; }
each_shard() { for p in "${SHARDS[@]}"; do psql_at "$p" -c "$1"; done; }
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }
pd() { "$PGDOG" "$1" --config "$WORK/pgdog.toml" --users "$WORK/users.toml" --pg-bin "$PG_BIN" "${@:2}"; }
# wait_for WHAT SECONDS CMD...: polls CMD until it prints "t", failing after SECONDS or as soon
# as CMD fails.
wait_for() {
  local what=$1 timeout=$2 end out
  shift 2
  end=$(($(date +%s) + timeout))
  while :; do
    out=$("$@") || die "waiting for $what: $* failed"
    [ "$out" != t ] || return 0
    [ "$(date +%s)" -lt "$end" ] || die "timed out after ${timeout}s waiting for $what"
    sleep 0.1
  done
}
standby_caught_up() {
  local lsn
  lsn=$(src "SELECT pg_current_wal_insert_lsn()")
  wait_for "the standby to replay up to $lsn" 900 stb "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn"
}

{
  echo "# Source: the primary and its streaming standby (copy-data reads from the replica)."
  toml_entry databases name=src port="$PG_PRIMARY_PORT" database_name=postgres user=postgres role=primary
  toml_entry databases name=src port="$PG_STANDBY_PORT" database_name=postgres user=postgres role=replica
  for shard in 0 1; do
    toml_entry databases name=dst shard="$shard" port="${SHARDS[$shard]}" database_name=postgres user=postgres
  done
  toml_entry sharded_tables database=dst name=big column=id data_type=bigint
  toml_pgbench_sharding dst data_type=integer
} > "$WORK/pgdog.toml"
for db in src dst; do
  toml_entry users name=app database="$db" password=secret
done > "$WORK/users.toml"

case "$PARTS" in
  all | apply) ;;
  *) die "PARTS=$PARTS: use all or apply" ;;
esac

PGDOG_T=()
PIPE_T=()
ORDER=()
ROWS=0 BYTES=0 HEAP=0 SPLIT= BYTES2=0
ONE_T=()
TWO_T=()
ORDER2=()
if [ "$PARTS" = all ]; then
# ---------------------------------------------------------------------------------------------
# 1. Copy: a table of >= SIZE_MB (pg_total_relation_size) on the primary, read from the standby.
say "loading a ${SIZE_MB} MB table"
src "CREATE TABLE big (id bigint PRIMARY KEY, account bigint NOT NULL, amount numeric(12,2),
       note text, created timestamptz)"
src "CREATE PUBLICATION pub_copy FOR TABLE big"
TARGET=$((SIZE_MB * 1024 * 1024))
next=1
batch=100000
while :; do
  size=$(src "SELECT pg_total_relation_size('big')")
  [ "$size" -lt "$TARGET" ] || break
  if [ "$next" -gt 1 ]; then
    # The rows still missing at the bytes per row so far (+2%), at most 1M per statement.
    batch=$(python3 -c "import sys; t, s, n = map(int, sys.argv[1:]); print(max(1000, min(1000000, int((t - s) / (s / n) * 1.02) + 1)))" \
      "$TARGET" "$size" "$((next - 1))")
  fi
  src "INSERT INTO big SELECT g, g % 100003, (g % 1000000) / 100.0,
         md5(g::text) || md5((g * 7)::text), timestamptz '2025-01-01' + g * interval '1 second'
       FROM generate_series($next, $((next + batch - 1))) g"
  next=$((next + batch))
done
src "VACUUM (FREEZE, ANALYZE) big"
src "CHECKPOINT"
standby_caught_up
ROWS=$(src "SELECT count(*) FROM big")
BYTES=$(src "SELECT pg_total_relation_size('big')")
HEAP=$(src "SELECT pg_relation_size('big')")
stb "SELECT count(*) FROM big" > /dev/null # the standby's page cache warm for both sides
say "$ROWS rows, $BYTES bytes"

pd schema-sync --from-database src --to-database dst --publication pub_copy --phase pre \
  > "$WORK/schema-sync-copy.log" 2>&1 || die "schema-sync (copy): $(cat "$WORK/schema-sync-copy.log")"

# Empty destinations, checkpointed, and no slot left from the previous run (copy-data without
# --slot creates only temporary slots on the standby, gone with their connections).
clear_dest() {
  each_shard "TRUNCATE big"
  each_shard "CHECKPOINT"
  wait_for "the temporary slots to go" 60 stb \
    "SELECT count(*) = 0 FROM pg_replication_slots WHERE slot_type = 'logical'"
  [ "$(src "SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'logical'")" = 0 ] ||
    die "a logical slot was left on the primary"
}
shard_rows() { psql_at "${SHARDS[$1]}" -c "SELECT count(*) FROM big"; }

run_pgdog() {
  local n=$1 t0 t1 r0 r1 log="$WORK/copy-$1.log"
  clear_dest
  say "run $n: pgdog copy-data"
  t0=$(now)
  pd copy-data --from-database src --to-database dst --publication pub_copy --parallel 2 \
    > "$log" 2>&1 || die "copy-data run $n: $(cat "$log")"
  t1=$(now)
  grep -q "table public.big: $ROWS rows" "$log" || die "copy-data run $n did not copy $ROWS rows: $(cat "$log")"
  grep -q "(read from 127.0.0.1:$PG_STANDBY_PORT)" "$log" || die "copy-data run $n did not read from the standby: $(cat "$log")"
  r0=$(shard_rows 0)
  r1=$(shard_rows 1)
  [ "$r0" -gt 0 ] && [ "$r1" -gt 0 ] && [ $((r0 + r1)) = "$ROWS" ] ||
    die "copy-data run $n: shards hold $r0 + $r1 rows, the source $ROWS"
  SPLIT="$r0 + $r1"
  PGDOG_T+=("$(elapsed "$t0" "$t1")")
}
run_pipe() {
  local n=$1 t0 t1 r0
  clear_dest
  say "run $n: COPY pipe"
  t0=$(now)
  psql_at "$PG_STANDBY_PORT" -c "COPY big (id, account, amount, note, created) TO STDOUT (FORMAT binary)" |
    psql_at "$PG_SHARD0_PORT" -c "COPY big (id, account, amount, note, created) FROM STDIN (FORMAT binary)" > /dev/null
  t1=$(now)
  r0=$(shard_rows 0)
  [ "$r0" = "$ROWS" ] || die "pipe run $n: shard 0 holds $r0 rows, the source $ROWS"
  PIPE_T+=("$(elapsed "$t0" "$t1")")
}
for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then
    run_pgdog "$i"
    run_pipe "$i"
    ORDER+=("pgdog, pipe")
  else
    run_pipe "$i"
    run_pgdog "$i"
    ORDER+=("pipe, pgdog")
  fi
done

# 1b. Two tables over one replica vs two: `big` and a copy of it, `big2`; a second standby
# (pg_basebackup of the primary) next to the topology's; `copy-data --parallel 2` with one
# replica configured, then with both (largest table first to the least-loaded replica).
say "a second standby and a second ${SIZE_MB} MB table"
src "CREATE TABLE big2 (LIKE big INCLUDING ALL)"
src "INSERT INTO big2 SELECT * FROM big"
src "VACUUM (FREEZE, ANALYZE) big2"
src "CREATE PUBLICATION pub_copy2 FOR TABLE big, big2"
src "CHECKPOINT"
STANDBY2_PORT=$(free_port)
STANDBY2="$WORK/standby2"
rm -rf "$STANDBY2"
as_server "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PRIMARY_PORT" -U postgres -R -X stream -C -S standby2 \
  -c fast --no-sync -D "$STANDBY2" > "$WORK/basebackup.log" 2>&1 ||
  die "pg_basebackup: $(cat "$WORK/basebackup.log")"
stop_standby2() { as_server "$PG_BIN/pg_ctl" -D "$STANDBY2" -m immediate stop > /dev/null 2>&1 || true; }
trap stop_standby2 EXIT
as_server "$PG_BIN/pg_ctl" -D "$STANDBY2" -o "-p $STANDBY2_PORT" -l "$WORK/standby2.log" -w start > /dev/null ||
  die "standby2: $(cat "$WORK/standby2.log")"
stb2() { psql_at "$STANDBY2_PORT" -c "$1"; }
wait_for "the second standby to stream" 60 stb2 "SELECT count(*) = 1 FROM pg_stat_wal_receiver WHERE status = 'streaming'"
standby_caught_up
lsn=$(src "SELECT pg_current_wal_insert_lsn()")
wait_for "the second standby to replay up to $lsn" 900 stb2 "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn"
stb "SELECT count(*) FROM big2" > /dev/null
stb2 "SELECT count(*) FROM big UNION ALL SELECT count(*) FROM big2" > /dev/null
BYTES2=$(src "SELECT pg_total_relation_size('big') + pg_total_relation_size('big2')")
toml_entry sharded_tables database=dst name=big2 column=id data_type=bigint >> "$WORK/pgdog.toml"
cp "$WORK/pgdog.toml" "$WORK/pgdog2.toml"
toml_entry databases name=src port="$STANDBY2_PORT" database_name=postgres user=postgres role=replica >> "$WORK/pgdog2.toml"
pd schema-sync --from-database src --to-database dst --publication pub_copy2 --phase pre \
  > "$WORK/schema-sync-copy2.log" 2>&1 || die "schema-sync (copy2): $(cat "$WORK/schema-sync-copy2.log")"
ONE_T=()
TWO_T=()
ORDER2=()
run_replicas() {
  local n=$1 replicas=$2 config=$WORK/pgdog.toml t0 t1 log="$WORK/copy2-$1-$2.log" rows
  [ "$replicas" = 1 ] || config=$WORK/pgdog2.toml
  each_shard "TRUNCATE big, big2"
  each_shard "CHECKPOINT"
  for check in stb stb2; do
    wait_for "the temporary slots to go" 60 "$check" \
      "SELECT count(*) = 0 FROM pg_replication_slots WHERE slot_type = 'logical'"
  done
  say "run $n: copy-data of 2 tables over $replicas replica(s)"
  t0=$(now)
  "$PGDOG" copy-data --config "$config" --users "$WORK/users.toml" --from-database src \
    --to-database dst --publication pub_copy2 --parallel 2 > "$log" 2>&1 ||
    die "copy-data ($replicas replicas) run $n: $(cat "$log")"
  t1=$(now)
  rows=$(($(shard_rows 0) + $(shard_rows 1)))
  [ "$rows" = "$ROWS" ] || die "copy-data ($replicas replicas) run $n: big has $rows rows, the source $ROWS"
  rows=$(($(psql_at "${SHARDS[0]}" -c "SELECT count(*) FROM big2") + $(psql_at "${SHARDS[1]}" -c "SELECT count(*) FROM big2")))
  [ "$rows" = "$ROWS" ] || die "copy-data ($replicas replicas) run $n: big2 has $rows rows, the source $ROWS"
  if [ "$replicas" = 2 ]; then
    grep -q "(read from 127.0.0.1:$STANDBY2_PORT)" "$log" && grep -q "(read from 127.0.0.1:$PG_STANDBY_PORT)" "$log" ||
      die "copy-data run $n did not read from both standbys: $(cat "$log")"
    TWO_T+=("$(elapsed "$t0" "$t1")")
  else
    ONE_T+=("$(elapsed "$t0" "$t1")")
  fi
}
for i in $(seq 1 "$RUNS"); do
  if [ $((i % 2)) = 1 ]; then
    run_replicas "$i" 1
    run_replicas "$i" 2
    ORDER2+=("one replica, two replicas")
  else
    run_replicas "$i" 2
    run_replicas "$i" 1
    ORDER2+=("two replicas, one replica")
  fi
done

# 1c. One large table vs the same rows as 4 tables, copied with a slot (then a table over
# copy_split_bytes, 64 MiB, is copied in key ranges: each range its own job, snapshot, replica
# and watermark), with 1, 2 and 4 readers per server and 1 and 2 replicas.
say "the rows of big as 4 tables"
quarter=$(((ROWS + 3) / 4))
for q in 1 2 3 4; do
  src "CREATE TABLE big_q$q (LIKE big INCLUDING ALL)"
  src "INSERT INTO big_q$q SELECT * FROM big WHERE id > $(((q - 1) * quarter)) AND id <= $((q * quarter))"
  src "VACUUM (FREEZE, ANALYZE) big_q$q"
  for config in "$WORK/pgdog.toml" "$WORK/pgdog2.toml"; do
    toml_entry sharded_tables database=dst name="big_q$q" column=id data_type=bigint >> "$config"
  done
done
QUARTERS="big_q1, big_q2, big_q3, big_q4"
src "CREATE PUBLICATION pub_split1 FOR TABLE big"
src "CREATE PUBLICATION pub_split4 FOR TABLE $QUARTERS"
src "CHECKPOINT"
standby_caught_up
lsn=$(src "SELECT pg_current_wal_insert_lsn()")
wait_for "the second standby to replay up to $lsn" 900 stb2 "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn"
for q in 1 2 3 4; do
  stb "SELECT count(*) FROM big_q$q" > /dev/null
  stb2 "SELECT count(*) FROM big_q$q" > /dev/null
done
pd schema-sync --from-database src --to-database dst --publication pub_split4 --phase pre \
  > "$WORK/schema-sync-split.log" 2>&1 || die "schema-sync (split): $(cat "$WORK/schema-sync-split.log")"
SPLIT_RUNS=()
run_split() {
  local readers=$1 replicas=$2 tables=$3 config=$WORK/pgdog.toml pub=pub_split1 t0 t1 rows=0 ranges servers
  local log="$WORK/split-$1-$2-$3.log"
  [ "$replicas" = 1 ] || config=$WORK/pgdog2.toml
  [ "$tables" = 1 ] || pub=pub_split4
  each_shard "TRUNCATE big, $QUARTERS; DROP TABLE IF EXISTS pgdog_reshard_progress, pgdog_reshard_position, pgdog_reshard_hold"
  each_shard "CHECKPOINT"
  for check in stb stb2; do
    wait_for "the temporary slots to go" 60 "$check" \
      "SELECT count(*) = 0 FROM pg_replication_slots WHERE slot_type = 'logical'"
  done
  say "copy-data of $tables table(s), $readers reader(s) per server, $replicas replica(s)"
  t0=$(now)
  "$PGDOG" copy-data --config "$config" --users "$WORK/users.toml" --from-database src \
    --to-database dst --publication "$pub" --slot bench_split --parallel "$readers" > "$log" 2>&1 ||
    die "copy-data ($tables tables, $readers readers, $replicas replicas): $(cat "$log")"
  t1=$(now)
  src "SELECT pg_drop_replication_slot('bench_split')" > /dev/null
  for p in "${SHARDS[@]}"; do
    rows=$((rows + $(psql_at "$p" -c "SELECT (SELECT count(*) FROM big) + (SELECT count(*) FROM big_q1) + (SELECT count(*) FROM big_q2) + (SELECT count(*) FROM big_q3) + (SELECT count(*) FROM big_q4)")))
  done
  [ "$rows" = "$ROWS" ] || die "copy-data ($tables tables, $readers readers): $rows rows, the source $ROWS"
  ranges=$(grep -c '^table public\.big.* \["id" ' "$log" || true)
  servers=$(grep -o '(read from 127\.0\.0\.1:[0-9]*)' "$log" | sort -u | wc -l)
  [ "$servers" = "$replicas" ] || die "copy-data read from $servers servers, not $replicas: $(cat "$log")"
  SPLIT_RUNS+=("$readers $replicas $tables $(elapsed "$t0" "$t1") $ranges")
}
for readers in 1 2 4; do
  for replicas in 1 2; do
    if [ $(((readers + replicas) % 2)) = 0 ]; then
      run_split "$readers" "$replicas" 1
      run_split "$readers" "$replicas" 4
    else
      run_split "$readers" "$replicas" 4
      run_split "$readers" "$replicas" 1
    fi
  done
done
each_shard "DROP TABLE IF EXISTS pgdog_reshard_progress, pgdog_reshard_position, pgdog_reshard_hold"
src "DROP PUBLICATION pub_split1; DROP PUBLICATION pub_split4; DROP TABLE $QUARTERS"
each_shard "DROP TABLE $QUARTERS"

stop_standby2
trap - EXIT
src "SELECT pg_drop_replication_slot('standby2')" > /dev/null
src "DROP PUBLICATION pub_copy2; DROP TABLE big2"
each_shard "DROP TABLE big2"
src "DROP PUBLICATION pub_copy; DROP TABLE big"
each_shard "DROP TABLE big"
src "CHECKPOINT"
each_shard "CHECKPOINT"
fi

# ---------------------------------------------------------------------------------------------
# 2. Apply: pgbench on the source primary while `pgdog replay` keeps the shards in step.
say "pgbench -i -s $SCALE"
"$PG_BIN/pgbench" -i -q -s "$SCALE" -h 127.0.0.1 -p "$PG_PRIMARY_PORT" -U postgres postgres \
  > "$WORK/pgbench-init.log" 2>&1 || die "pgbench -i: $(cat "$WORK/pgbench-init.log")"
src "ALTER TABLE pgbench_history REPLICA IDENTITY FULL"
src "CREATE PUBLICATION pub_bench FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history"
standby_caught_up
pd schema-sync --from-database src --to-database dst --publication pub_bench --phase pre \
  > "$WORK/schema-sync-bench.log" 2>&1 || die "schema-sync (pgbench): $(cat "$WORK/schema-sync-bench.log")"
say "copy-data --slot $SLOT"
t0=$(now)
pd copy-data --from-database src --to-database dst --publication pub_bench --slot "$SLOT" --parallel 2 \
  > "$WORK/copy-bench.log" 2>&1 || die "copy-data (pgbench): $(cat "$WORK/copy-bench.log")"
BENCH_COPY_S=$(elapsed "$t0" "$(now)")
BENCH_BYTES=$(src "SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['pgbench_accounts', 'pgbench_branches', 'pgbench_tellers', 'pgbench_history']::regclass[]) c")

"$PGDOG" replay --config "$WORK/pgdog.toml" --users "$WORK/users.toml" --from-database src \
  --to-database dst --publication pub_bench --slot "$SLOT" $REPLAY_ARGS > "$WORK/replay.log" 2>&1 &
REPLAY_PID=$!
SAMPLER_PID=
cleanup() {
  [ -z "$SAMPLER_PID" ] || kill "$SAMPLER_PID" 2> /dev/null || true
  kill -TERM "$REPLAY_PID" 2> /dev/null || true
}
trap cleanup EXIT
replay_alive() { kill -0 "$REPLAY_PID" 2> /dev/null || die "replay exited: $(cat "$WORK/replay.log")"; }
# applied_past LSN: whether the replay committed on shard 0 a source transaction ending after LSN.
applied_past() {
  replay_alive
  psql_at "$PG_SHARD0_PORT" -c "SELECT coalesce((SELECT lsn > '$1'::pg_lsn FROM pgdog_reshard_position WHERE slot = '$SLOT'), false)"
}
# A marker transaction touching an omnisharded table (so every shard): once it is applied, so is
# everything committed on the source before it.
marker() { src "UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1"; }
L=$(src "SELECT pg_current_wal_insert_lsn()")
marker
wait_for "replay to apply a first transaction" 60 applied_past "$L"

# One sample a second: time, source WAL position and history rows, each shard's applied
# position and history rows (every tpcb-like transaction inserts one history row).
SAMPLES="$WORK/samples"
: > "$SAMPLES"
rm -f "$WORK/stop-sampler"
sampler() {
  local start k=0 due wait s d0 d1
  start=$(date +%s%N)
  while [ ! -e "$WORK/stop-sampler" ]; do
    s=$(src "SELECT pg_current_wal_lsn(), (SELECT count(*) FROM pgbench_history)")
    d0=$(psql_at "$PG_SHARD0_PORT" -c "SELECT coalesce((SELECT lsn::text FROM pgdog_reshard_position WHERE slot = '$SLOT'), '0/0'), (SELECT count(*) FROM pgbench_history)")
    d1=$(psql_at "$PG_SHARD1_PORT" -c "SELECT coalesce((SELECT lsn::text FROM pgdog_reshard_position WHERE slot = '$SLOT'), '0/0'), (SELECT count(*) FROM pgbench_history)")
    echo "$(now)|$s|$d0|$d1" >> "$SAMPLES"
    k=$((k + 1))
    due=$((start + k * 1000000000))
    wait=$((due - $(date +%s%N)))
    [ "$wait" -le 0 ] || sleep "$(printf '%d.%09d' $((wait / 1000000000)) $((wait % 1000000000)))"
  done
}
dest_history() {
  local a b
  a=$(psql_at "$PG_SHARD0_PORT" -c "SELECT count(*) FROM pgbench_history")
  b=$(psql_at "$PG_SHARD1_PORT" -c "SELECT count(*) FROM pgbench_history")
  echo $((a + b))
}
H0=$(src "SELECT count(*) FROM pgbench_history")
D0=$(dest_history)
[ "$H0" = "$D0" ] || die "before pgbench: source has $H0 history rows, the shards $D0"
sampler &
SAMPLER_PID=$!
say "pgbench -c $CLIENTS -T $APPLY_SECONDS with replay running"
T0=$(now)
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$APPLY_SECONDS" -h 127.0.0.1 -p "$PG_PRIMARY_PORT" \
  -U postgres postgres > "$WORK/pgbench.log" 2>&1 || die "pgbench: $(cat "$WORK/pgbench.log")"
T1=$(now)
D1=$(dest_history)
H1=$(src "SELECT count(*) FROM pgbench_history")
L=$(src "SELECT pg_current_wal_insert_lsn()")
marker
wait_for "replay to catch up" 1800 applied_past "$L"
T2=$(now)
touch "$WORK/stop-sampler"
wait "$SAMPLER_PID" || die "the sampler failed (see the errors above)"
SAMPLER_PID=
D2=$(dest_history)
kill -TERM "$REPLAY_PID"
REPLAY_STATUS=0
wait "$REPLAY_PID" || REPLAY_STATUS=$?
trap - EXIT
[ "$REPLAY_STATUS" = 0 ] || die "replay failed after SIGTERM ($REPLAY_STATUS): $(cat "$WORK/replay.log")"
[ "$D2" = "$H1" ] || die "after catch-up: source has $H1 history rows, the shards $D2"
REPLAYED=$(grep -o "replayed .*" "$WORK/replay.log" | tail -1)

# 2b. A backlog: pgbench writes BACKLOG_SECONDS with the replay stopped; then the replay starts
# again (from its stored position) and the time until it applied everything is measured.
say "pgbench -c $CLIENTS -T $BACKLOG_SECONDS with the replay stopped"
B0=$(src "SELECT count(*) FROM pgbench_history")
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$BACKLOG_SECONDS" -h 127.0.0.1 -p "$PG_PRIMARY_PORT" \
  -U postgres postgres > "$WORK/pgbench-backlog.log" 2>&1 || die "pgbench: $(cat "$WORK/pgbench-backlog.log")"
B1=$(src "SELECT count(*) FROM pgbench_history")
L=$(src "SELECT pg_current_wal_insert_lsn()")
marker
TB0=$(now)
"$PGDOG" replay --config "$WORK/pgdog.toml" --users "$WORK/users.toml" --from-database src \
  --to-database dst --publication pub_bench --slot "$SLOT" $REPLAY_ARGS > "$WORK/replay-backlog.log" 2>&1 &
REPLAY_PID=$!
trap cleanup EXIT
wait_for "replay to apply the backlog" 1800 applied_past "$L"
TB1=$(now)
kill -TERM "$REPLAY_PID"
REPLAY_STATUS=0
wait "$REPLAY_PID" || REPLAY_STATUS=$?
trap - EXIT
[ "$REPLAY_STATUS" = 0 ] || die "replay failed after SIGTERM ($REPLAY_STATUS): $(cat "$WORK/replay-backlog.log")"
DB=$(dest_history)
[ "$DB" = "$B1" ] || die "after the backlog: source has $B1 history rows, the shards $DB"
PGBENCH_TPS=$(grep -o "tps = [0-9.]*" "$WORK/pgbench.log" | head -1 | awk '{print $3}')
VERIFIED="not run (VERIFY=0)"
if [ "$VERIFY" = 1 ]; then
  say "pgdog verify"
  pd verify --from-database src --to-database dst --table pgbench_accounts --table pgbench_branches \
    --table pgbench_tellers --table pgbench_history > "$WORK/verify.log" 2>&1 ||
    die "verify found differences: $(cat "$WORK/verify.log")"
  VERIFIED="\`pgdog verify\` found no difference on the 4 tables"
fi

# ---------------------------------------------------------------------------------------------
# 3. The results table.
PG_VERSION=$("$PG_BIN/postgres" --version | awk '{print $3}')
CPU=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
export PARTS REPLAY_ARGS SLOT SIZE_MB RUNS APPLY_SECONDS CLIENTS SCALE ROWS BYTES HEAP SPLIT BENCH_COPY_S BENCH_BYTES \
  H0 H1 D0 D1 T0 T1 T2 REPLAYED PGBENCH_TPS VERIFIED PG_VERSION CPU SAMPLES \
  BACKLOG_SECONDS B0 B1 TB0 TB1
export PGDOG_T_LIST="${PGDOG_T[*]}" PIPE_T_LIST="${PIPE_T[*]}" ORDER_LIST="$(IFS=';'; echo "${ORDER[*]}")"
export ONE_T_LIST="${ONE_T[*]}" TWO_T_LIST="${TWO_T[*]}" ORDER2_LIST="$(IFS=';'; echo "${ORDER2[*]}")" BYTES2
export SPLIT_LIST="$(IFS=';'; echo "${SPLIT_RUNS[*]}")"
case "$PGDOG_TOPOLOGY_DIR" in
  /dev/shm/*) STORAGE=tmpfs ;;
  *) STORAGE=disk ;;
esac
export STORAGE CORES="$(nproc)" MEM_GB="$(free -g | awk '/^Mem:/ {print $2}')"
python3 - > "$OUT.tmp" <<'PY'
import math
import os

e = os.environ


def lsn(s):
    hi, lo = s.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def f(n, d=0):
    return f"{n:,.{d}f}"


MIB = 1024 * 1024
copied = e["PARTS"] == "all"
rows, size = int(e["ROWS"]), int(e["BYTES"])
pg = [float(x) for x in e["PGDOG_T_LIST"].split()]
pipe = [float(x) for x in e["PIPE_T_LIST"].split()]
pg_best, pipe_best = (min(pg), min(pipe)) if copied else (1.0, 1.0)
copy_ratio = pipe_best / pg_best


def copy_row(name, best, runs):
    return (f"| {name} | {best:.2f} ({', '.join(f'{r:.2f}' for r in runs)}) | "
            f"{size / MIB / best:,.1f} | {f(rows / best)} |")


t0, t1, t2 = float(e["T0"]), float(e["T1"]), float(e["T2"])
dur, catchup = t1 - t0, t2 - t1
backlog_s, backlog = float(e["BACKLOG_SECONDS"]), int(e["B1"]) - int(e["B0"])
backlog_t = float(e["TB1"]) - float(e["TB0"])
src_txn = int(e["H1"]) - int(e["H0"])
applied_txn = int(e["D1"]) - int(e["D0"])
src_tps, applied_tps = src_txn / dur, applied_txn / dur
apply_ratio = applied_tps / src_tps if src_tps else 0.0

samples = []
with open(e["SAMPLES"]) as fh:
    for line in fh:
        t, slsn, shist, a_lsn, a_hist, b_lsn, b_hist = line.strip().split("|")
        applied = max(lsn(a_lsn), lsn(b_lsn))
        samples.append((float(t) - t0, lsn(slsn), int(shist), int(a_hist) + int(b_hist),
                        max(0, lsn(slsn) - applied), applied))
running = [s for s in samples if 0 <= s[0] <= dur]


def rate(field):
    if len(running) < 2 or running[-1][0] <= running[0][0]:
        return 0.0
    return (running[-1][field] - running[0][field]) / (running[-1][0] - running[0][0])


wal_rate, applied_wal_rate = rate(1), rate(5)
max_lag = max(samples, key=lambda s: s[4]) if samples else None
pgbench_tps = float(e["PGBENCH_TPS"] or "nan")
first = [s[4] for s in running if s[0] <= dur / 2]
second = [s[4] for s in running if s[0] > dur / 2]
first_max = max(first, default=0)
second_max = max(second, default=0)
bounded = second_max <= 1.5 * first_max or second_max < MIB
keeps_up = round(apply_ratio, 2) >= 1.0 and bounded

# The lag table: the sample nearest each multiple of 5 s, and the last one.
lag_rows = []
picked = set()
last_t = samples[-1][0] if samples else 0
for k in range(0, int(last_t) + 1, 5):
    i = min(range(len(samples)), key=lambda j: abs(samples[j][0] - k))
    picked.add(i)
if samples:
    picked.add(len(samples) - 1)
prev = None
for i in sorted(picked):
    t, _, shist, dhist, lag, _ = samples[i]
    if prev is None or t <= prev[0]:
        rates = "| | "
    else:
        span = t - prev[0]
        rates = f"| {f((shist - prev[2]) / span)} | {f((dhist - prev[3]) / span)} "
    phase = "pgbench" if t <= dur else "catch-up"
    lag_rows.append(f"| {t:.0f} | {phase} {rates}| {f(lag)} |")
    prev = samples[i]


one = [float(x) for x in e["ONE_T_LIST"].split()]
two = [float(x) for x in e["TWO_T_LIST"].split()]
bytes2 = int(e["BYTES2"])
pipe_mibs = size / MIB / pipe_best


def two_row(name, runs):
    best = min(runs)
    mibs = bytes2 / MIB / best
    return (f"| {name} | {best:.2f} ({', '.join(f'{r:.2f}' for r in runs)}) | "
            f"{mibs:,.1f} | {mibs / pipe_mibs:.2f}x |")


two_rows = ""
two_ratio = 0.0
order2_text = ""
if copied:
    two_rows = "\n".join([two_row("pgdog copy-data, 1 replica → 2 shards", one),
                          two_row("pgdog copy-data, 2 replicas → 2 shards", two)])
    two_ratio = min(one) / min(two)
    order2_text = "; ".join(f"{i + 1}: {o}" for i, o in enumerate(e["ORDER2_LIST"].split(";")))
split_rows = []
split_ok = True
if copied:
    runs = {}
    for item in filter(None, e["SPLIT_LIST"].split(";")):
        readers, replicas, tables, secs, ranges = item.split()
        runs[(int(readers), int(replicas), int(tables))] = (float(secs), int(ranges))
    for readers in (1, 2, 4):
        for replicas in (1, 2):
            one_t, one_n = runs[(readers, replicas, 1)]
            four_t, four_n = runs[(readers, replicas, 4)]
            vs_four, vs_pipe = one_t / four_t, (size / MIB / one_t) / pipe_mibs
            split_ok = split_ok and vs_four <= 1.1 and vs_pipe >= 1.5
            split_rows.append(
                f"| {readers} | {replicas} | {one_t:.2f} ({one_n} ranges) | {four_t:.2f} ({four_n} ranges) "
                f"| {vs_four:.2f}x {'✓' if vs_four <= 1.1 else '✗'} | {size / MIB / one_t:,.1f} "
                f"| {vs_pipe:.2f}x {'✓' if vs_pipe >= 1.5 else '✗'} |")
pg_row = copy_row("pgdog copy-data, standby → 2 shards", pg_best, pg)
pipe_row = copy_row("COPY TO \\| COPY FROM pipe, standby → 1 server", pipe_best, pipe)
order_text = "; ".join(f"{i + 1}: {o}" for i, o in enumerate(e["ORDER_LIST"].split(";")))
slot = e["SLOT"]
small = ""
if not copied:
    small = ("\n**The apply part only** (`PARTS=apply`): the copy part was not run.\n")
elif int(e["SIZE_MB"]) < 1024 or int(e["APPLY_SECONDS"]) < 60:
    small = ("\n**A reduced run** (smaller than the issue's ≥ 1 GB table and 60 s of pgbench): the "
             "full measurement is `bash benchmarks/reshard.sh` with the defaults.\n")


def met(ok):
    return "**met**" if ok else "**not met**"


copy_section = f"""## Copy: a {size / MIB:,.0f} MiB table from the standby

`big (id bigint PRIMARY KEY, account bigint, amount numeric(12,2), note text, created timestamptz)`:
{f(rows)} rows, {f(size)} bytes with its primary key index (`pg_total_relation_size`; heap
{f(int(e['HEAP']))}), vacuumed and frozen, the standby's cache warmed. Destinations hold the
table with its primary key (`pgdog schema-sync --phase pre`), truncated and checkpointed before
every run. pgdog split the rows {e['SPLIT']} over the 2 shards.

- pgdog: `pgdog copy-data --from-database src --to-database dst --publication pub_copy --parallel 2`
  (the standby is `src`'s replica: a temporary slot on it exports the snapshot, binary
  `COPY TO STDOUT` under it, rows split in flight into one binary `COPY FROM STDIN` per shard;
  the time includes connecting and creating that slot).
- pipe: `psql (standby) -c "COPY big TO STDOUT (FORMAT binary)" | psql (shard 0) -c "COPY big FROM STDIN (FORMAT binary)"`.

Runs in order: {order_text}.

| method | seconds, best (all runs) | MiB/s (best) | rows/s (best) |
|---|---|---|---|
{pg_row}
{pipe_row}

pgdog copy-data / pipe throughput: **{copy_ratio:.2f}x**. Target ≥ 2x: {met(copy_ratio >= 2.0)}.

## Copy: two tables over one replica vs two

`big` and `big2` (`CREATE TABLE big2 (LIKE big INCLUDING ALL)`, the same rows):
{f(int(e['BYTES2']))} bytes together. A second standby (`pg_basebackup` of the primary,
streaming) joins the topology's; `pgdog copy-data --publication pub_copy2 --parallel 2` runs with
one replica configured, then with both: the two tables then go one to each replica (largest
first to the least-loaded one), 2 reader connections per replica. The ratio to the pipe compares
MiB/s with the single `COPY` pipe above.

Runs in order: {order2_text}.

| method | seconds, best (all runs) | MiB/s (best) | × the pipe |
|---|---|---|---|
{two_rows}

Two replicas / one replica: **{two_ratio:.2f}x**. On these 2 cores the servers, pgdog and both
standbys share the same CPUs, so a second replica adds readers but no CPU; the ratio shows what
is left, not what a machine with a core per server would gain.

## Copy: one large table vs the same rows as 4 tables, in key ranges

`big` alone vs `big_q1` .. `big_q4` (`LIKE big INCLUDING ALL`, a quarter of its rows each, by
id), each copied with `pgdog copy-data --slot bench_split --parallel R` (R readers per server read
from) with one replica configured, then both standbys. With a slot, a table over
`copy_split_bytes` (64 MiB) is copied in key ranges of its bigint primary key: each range is a
job of its own, with its own temporary slot and snapshot on the replica it is given, and its own
watermark row. The destinations are truncated, their progress tables dropped and the permanent
slot dropped between runs; the time includes creating it. The ratio to the pipe compares MiB/s
with the single `COPY` pipe of the first table above.

| readers per server | replicas | 1 table: seconds | 4 tables: seconds | 1 table / 4 tables (≤ 1.1x) | 1 table: MiB/s | 1 table × the pipe (≥ 1.5x) |
|---|---|---|---|---|---|---|
""" + "\n".join(split_rows) + f"""

Targets, in every row: {met(split_ok)}.

""" if copied else ""

print(f"""# Resharding benchmark

One run on one machine ({e['CORES']} cores, {e['CPU']}, {e['MEM_GB']} GiB; PostgreSQL {e['PG_VERSION']}
on {e['STORAGE']} with the test settings: fsync off; the servers, pgdog, psql and pgbench share the cores,
so compare the ratios, not the absolute numbers). Source: a primary with a streaming standby;
destination: 2 shards. pgdog is the release build.

Command: `{'PARTS=apply ' if not copied else ''}SIZE_MB={e['SIZE_MB']} RUNS={e['RUNS']} APPLY_SECONDS={e['APPLY_SECONDS']} CLIENTS={e['CLIENTS']} SCALE={e['SCALE']} BACKLOG_SECONDS={e['BACKLOG_SECONDS']} bash benchmarks/reshard.sh`
{small}
{copy_section}## Apply: `pgdog replay` under pgbench tpcb-like, {e['CLIENTS']} clients, {dur:.0f} s

`pgbench -i -s {e['SCALE']}` on the source primary; publication of the 4 pgbench tables
(`pgbench_history` with `REPLICA IDENTITY FULL`); destination `pgbench_accounts` and
`pgbench_history` sharded by `aid`, branches and tellers on every shard; `schema-sync --phase pre`,
then `copy-data --slot {slot} --parallel 2` ({f(int(e['BENCH_BYTES']) / MIB, 1)} MiB in {float(e['BENCH_COPY_S']):.2f} s).
Then `pgbench -n -c {e['CLIENTS']} -j 2 -T {e['APPLY_SECONDS']}` straight at the primary while
`pgdog replay --slot {slot}{(' ' + e['REPLAY_ARGS']) if e['REPLAY_ARGS'] else ''}` runs. Transactions are counted as `pgbench_history` rows (one per
tpcb-like transaction) on the source and on the shards; lag is the source's `pg_current_wal_lsn()`
minus the newest `pgdog_reshard_position` on the shards, sampled every second. Catch-up: after
pgbench exits, a marker transaction on an omnisharded table is applied on the shards.
{e['VERIFIED']}; replay stopped with SIGTERM: "{e['REPLAYED']}".

| measure | value |
|---|---|
| source TPS (history rows / {dur:.1f} s; pgbench reports {pgbench_tps:,.0f}) | {f(src_tps)} |
| applied TPS on the shards over the same {dur:.1f} s | {f(applied_tps)} |
| applied / source | **{apply_ratio:.2f}x** |
| source WAL written / applied position advance, while pgbench ran | {wal_rate / MIB:,.2f} / {applied_wal_rate / MIB:,.2f} MiB/s |
| max lag | {f(max_lag[4]) if max_lag else 'n/a'} bytes (at {max_lag[0] if max_lag else 0:.0f} s) |
| max lag while pgbench ran, first half / second half | {f(first_max)} / {f(second_max)} bytes |
| catch-up after pgbench ended | {catchup:.2f} s |
| apply rate during the catch-up (source idle: {f(src_txn - applied_txn)} transactions behind) | {f((src_txn - applied_txn) / catchup) if catchup > 0 else 'n/a'} TPS |
| transactions applied overall / (run + catch-up) | {f(src_txn / (t2 - t0))} TPS |
| backlog: transactions written in {backlog_s:.0f} s with the replay stopped | {f(backlog)} |
| backlog: applied in (the replay started again, from its stored position) | {backlog_t:.2f} s |
| backlog: apply rate / the rate it was written at | **{backlog_s / backlog_t if backlog_t > 0 else 0:.1f}x** |


Lag over time (t from pgbench's start; rates over the interval since the previous row):

| t (s) | phase | source txn/s | applied txn/s | lag (bytes) |
|---|---|---|---|---|
""" + "\n".join(lag_rows) + f"""

Targets: apply keeps up — applied / source ≥ 1.0x (shown to 2 decimals) and the lag bounded
(the second half's max lag ≤ 1.5x the first half's, or under 1 MiB): {met(keeps_up)}.""")
PY
# The section benchmarks/buckets.sh writes stays as it was.
python3 - "$OUT" "$OUT.tmp" <<'PY'
import re, sys
old, new = sys.argv[1:3]
try:
    parts = re.split(r"(?m)^(?=## )", open(old).read())
except FileNotFoundError:
    parts = []
kept = [p for p in parts if p.startswith("## Adding a shard by moving buckets")]
if kept:
    with open(new, "a") as f:
        f.write("\n" + kept[0].strip("\n") + "\n")
PY
mv "$OUT.tmp" "$OUT"
cat "$OUT"
