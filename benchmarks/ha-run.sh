#!/usr/bin/env bash
# Runs inside `pgdog-topology replicas 2` (PG_PRIMARY_PORT, PG_REPLICA1_PORT, PG_REPLICA2_PORT,
# PG_BIN, PGDOG_TOPOLOGY_DIR). See ha.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${DURATION:=8}" "${INTERVAL:=1000}"  # settings: each may be set in the environment
bench_init ha
PORT=$(free_port)
now_ms() { date +%s%3N; }

"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$PG_PRIMARY_PORT" -U postgres postgres >/dev/null 2>&1
psql_at "$PG_PRIMARY_PORT" -c "CREATE TABLE failover (id bigserial PRIMARY KEY, at timestamptz DEFAULT now()); CHECKPOINT" >/dev/null
lsn=$(psql_at "$PG_PRIMARY_PORT" -c "SELECT pg_current_wal_insert_lsn()")
for p in "$PG_REPLICA1_PORT" "$PG_REPLICA2_PORT"; do
  until [ "$(psql_at "$p" -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ]; do sleep 0.05; done
done

# $1: role of the primary entry, then "port:role" for each other server.
write_config() {
  local primary_role=$1; shift
  local server
  {
    toml_section general host=127.0.0.1 port="$PORT" default_pool_size=20 auth_type=trust \
      healthcheck_interval="$INTERVAL" healthcheck_timeout=500 connect_timeout=1000
    toml_entry databases name=postgres port="$PG_PRIMARY_PORT" user=postgres role="$primary_role"
    for server in "$@"; do
      toml_entry databases name=postgres port="${server%%:*}" user=postgres role="${server##*:}"
    done
  } > "$WORK/pgdog.toml"
  toml_entry users name=postgres database=postgres > "$WORK/users.toml"
}
PGDOG_PID=""
# ha_pgdog: pgdog with that configuration, logging at info to $WORK/pgdog.log, listening.
ha_pgdog() {
  start_pgdog PGDOG_PID "$WORK/pgdog.toml" "$WORK/users.toml" "$WORK/pgdog.log" info
  wait_port "$PORT" "$PGDOG_PID" || { echo "pgdog did not start; see $WORK/pgdog.log" >&2; exit 1; }
}
stop_pgdog() { stop_pids "$PGDOG_PID"; }
trap stop_pgdog EXIT
bench() { "$PG_BIN/pgbench" -n -S -c 8 -j 2 -T "$DURATION" -h 127.0.0.1 -p "$PORT" -U postgres postgres 2>&1; }

# 1. Reads at 8 clients.
declare -A TPS
for setup in primary-only one-replica two-replicas; do
  case $setup in
    primary-only) write_config primary ;;
    one-replica) write_config primary "$PG_REPLICA1_PORT:replica" ;;
    two-replicas) write_config primary "$PG_REPLICA1_PORT:replica" "$PG_REPLICA2_PORT:replica" ;;
  esac
  ha_pgdog
  TPS[$setup]=$(bench | tps_of)
  stop_pgdog
  echo "$setup: ${TPS[$setup]} TPS" >&2
done
# The same reads straight to the servers, without pgdog: what a standby costs PostgreSQL itself.
direct() { "$PG_BIN/pgbench" -n -S -c 8 -j 2 -T "$DURATION" -h 127.0.0.1 -p "$1" -U postgres postgres 2>&1 | tps_of; }
DIRECT_PRIMARY=$(direct "$PG_PRIMARY_PORT")
DIRECT_REPLICA=$(direct "$PG_REPLICA1_PORT")
echo "direct: primary $DIRECT_PRIMARY, replica $DIRECT_REPLICA" >&2

# 2. A replica killed (pg_ctl stop -m immediate) 3 s into a pgbench -S run over 2 replicas.
write_config primary "$PG_REPLICA1_PORT:replica" "$PG_REPLICA2_PORT:replica"
ha_pgdog
bench > "$WORK/kill.txt" &
BENCH=$!
sleep 3
as_server "$PG_BIN/pg_ctl" -D "$PGDOG_TOPOLOGY_DIR/replica2/data" -m immediate -w stop >/dev/null
wait $BENCH || true
kill_tps=$(tps_of < "$WORK/kill.txt")
kill_failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/kill.txt")
kill_aborted=$(grep -c "aborted in command" "$WORK/kill.txt" || true)
kill_processed=$(tx_of < "$WORK/kill.txt")
stop_pgdog

# 3. Failover: every server "auto"; the primary is killed, replica1 promoted; time to the first
#    write that succeeds through the same pgdog.
write_config auto "$PG_REPLICA1_PORT:auto"
ha_pgdog
psql_at "$PORT" -c "INSERT INTO failover DEFAULT VALUES" >/dev/null
killed=$(now_ms)
as_server "$PG_BIN/pg_ctl" -D "$PGDOG_TOPOLOGY_DIR/primary/data" -m immediate -w stop >/dev/null
down_error=$(psql_at "$PORT" -c "INSERT INTO failover DEFAULT VALUES" 2>&1 | head -1 || true)
promote_start=$(now_ms)
as_server "$PG_BIN/pg_ctl" -D "$PGDOG_TOPOLOGY_DIR/replica1/data" -w promote >/dev/null
promoted=$(now_ms)
attempts=0
until psql_at "$PORT" -c "INSERT INTO failover DEFAULT VALUES" >/dev/null 2>&1; do
  attempts=$((attempts + 1))
  [ $attempts -gt 1000 ] && { echo "no write after failover; see $WORK/pgdog.log" >&2; exit 1; }
  sleep 0.02
done
first_write=$(now_ms)
stop_pgdog

cat > "$OUT" <<MD
# HA benchmark

One run on one machine (2 cores shared by pgbench, pgdog and three PostgreSQL 18.6 servers: the
primary and two streaming standbys). \`pgbench -i -s 10\`.

Command: \`bash benchmarks/ha.sh\`

## Reads at 8 clients (\`pgbench -n -S -c 8 -j 2 -T $DURATION\`, simple protocol, through pgdog)

| servers behind pgdog | TPS | vs primary only |
|---|---|---|
| primary only | ${TPS[primary-only]} | 1.00x |
| primary + 1 replica (reads on the replica) | ${TPS[one-replica]} | $(ratio "${TPS[one-replica]}" "${TPS[primary-only]}") |
| primary + 2 replicas (round robin) | ${TPS[two-replicas]} | $(ratio "${TPS[two-replicas]}" "${TPS[primary-only]}") |
| without pgdog: straight to the primary | $DIRECT_PRIMARY | |
| without pgdog: straight to replica1 | $DIRECT_REPLICA | $(ratio "$DIRECT_REPLICA" "$DIRECT_PRIMARY") (standby vs primary) |

On one 2-core machine the replicas take their CPU from the same cores, so moving reads there
cannot add throughput: compare the pgdog ratio with the standby-vs-primary ratio without pgdog
(what PostgreSQL itself pays for serving reads on a hot standby); the difference is pgdog's cost
for the split (a parse-cache lookup and the read/write check per query). On separate machines
reads scale with the replicas.

## A replica killed under load

\`pgbench -S -c 8\` over primary + 2 replicas; replica2 stopped with \`pg_ctl stop -m immediate\`
3 s into the $DURATION s run: $kill_processed transactions, $kill_tps TPS, failed transactions:
${kill_failed:-0}, clients aborted: $kill_aborted (pgbench aborts a client at its first error;
reads in flight on the killed replica are run again on the other one, and the killed one is
banned at its first failure).

## Failover (\`role = "auto"\`, \`healthcheck_interval = $INTERVAL\`)

| step | ms |
|---|---|
| primary killed -> first successful write through pgdog (includes \`pg_ctl promote\`) | $((first_write - killed)) |
| \`pg_ctl promote\` of replica1 (command took) | $((promoted - promote_start)) |
| promotion done -> first successful write | $((first_write - promoted)) ($attempts failed attempts before) |

A write while no primary was available: \`$down_error\`

Target: writes succeed again within 2 health-check intervals ($((2 * INTERVAL)) ms) of the
promotion, without a reload.
MD
cat "$OUT"
