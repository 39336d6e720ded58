#!/usr/bin/env bash
# Runs inside `pgdog-topology shards+replicas 6 2` (which exports PG_SHARD<N>_PORT,
# PG_SHARD<N>_REPLICA_PORT, PG_BIN, ...): writes a pgdog configuration (database "pgdog" on
# shards 0-1, each with its streaming standby as a read replica; "pgdog_new" on the empty shards 2-5, the
# destination of the resharding walkthrough in README.md), starts pgdog on 127.0.0.1:6432 with
# its admin database and prints how to connect.
# Ctrl-C stops pgdog; the topology then stops the servers.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PORT="${PGDOG_PORT:-6432}"
METRICS_PORT="${PGDOG_METRICS_PORT:-9930}"
CONF="$PGDOG_TOPOLOGY_DIR/pgdog"
mkdir -p "$CONF"
# sharded_tables DATABASE: users by id and pgbench's tables (toml_pgbench_sharding) in DATABASE.
sharded_tables() {
  toml_entry sharded_tables database="$1" name=users column=id
  toml_pgbench_sharding "$1"
}
{
  cat <<TOML
[general]
host = "127.0.0.1"
port = $PORT
default_pool_size = 10
# The admin database: psql -h 127.0.0.1 -p $PORT -U admin admin (SHOW POOLS, PAUSE, RESHARD, ...).
admin_password = "admin"
# OpenMetrics and health: curl http://127.0.0.1:$METRICS_PORT/metrics (and /health).
openmetrics_port = $METRICS_PORT

# One database "pgdog" over both shards, each a primary (writes, transactions) and a streaming
# replica (reads: SELECTs the parser proves read-only; see SHOW POOLS for roles and bans).
# Tables are sharded by their key column exactly as
# Postgres' PARTITION BY HASH would place them; pgbench's branches and tellers are copied on
# every shard.
TOML
  for shard in 0 1; do
    primary="PG_SHARD${shard}_PORT" replica="PG_SHARD${shard}_REPLICA_PORT"
    toml_entry databases name=pgdog host=127.0.0.1 port="${!primary}" database_name=postgres user=postgres \
      shard="$shard" role=primary
    toml_entry databases name=pgdog host=127.0.0.1 port="${!replica}" database_name=postgres user=postgres \
      shard="$shard" role=replica
  done
  sharded_tables pgdog
  echo
  echo "# The resharding destination: 4 empty shards, the same tables sharded the same way."
  for i in 2 3 4 5; do
    port_var="PG_SHARD${i}_PORT"
    toml_entry databases name=pgdog_new host=127.0.0.1 port="${!port_var}" database_name=postgres user=postgres \
      shard=$((i - 2))
  done
  sharded_tables pgdog_new
  echo
  echo "# The resharding engine's pg_dump (the admin database's RESHARD runs it in this process)."
  toml_section resharding pg_bin="$PG_BIN"
} > "$CONF/pgdog.toml"
for db in pgdog pgdog_new; do
  toml_entry users name=pgdog database="$db" password=pgdog
done > "$CONF/users.toml"
"$ROOT/target/release/pgdog" --config "$CONF/pgdog.toml" --users "$CONF/users.toml" &
PGDOG_PID=$!
trap 'kill $PGDOG_PID 2>/dev/null; wait $PGDOG_PID 2>/dev/null; exit 0' INT TERM
wait_port "$PORT" "$PGDOG_PID" || { echo "pgdog did not start; see the messages above" >&2; exit 1; }
cat <<MSG

pgdog is listening on 127.0.0.1:$PORT (user pgdog, password pgdog, database pgdog, sharded
over 2 shards: users by id, pgbench_accounts and pgbench_history by aid):
  PGPASSWORD=pgdog $PG_BIN/psql -h 127.0.0.1 -p $PORT -U pgdog pgdog
  PGPASSWORD=pgdog $PG_BIN/pgbench -h 127.0.0.1 -p $PORT -U pgdog -i pgdog
  PGPASSWORD=pgdog $PG_BIN/pgbench -h 127.0.0.1 -p $PORT -U pgdog -c 8 -T 10 -M extended pgdog
  PGPASSWORD=pgdog $ROOT/target/release/pgdog route --config $CONF/pgdog.toml --users $CONF/users.toml --database pgdog "SELECT * FROM users WHERE id = 42"
  PGPASSWORD=admin $PG_BIN/psql -h 127.0.0.1 -p $PORT -U admin admin -c "SHOW POOLS" -c "SHOW STATS" -c "SHOW CLIENTS"
  curl -s http://127.0.0.1:$METRICS_PORT/metrics ; curl -s http://127.0.0.1:$METRICS_PORT/health
PostgreSQL 18 shards behind it (user postgres, trust auth, sslmode=disable):
  shard 0: $PG_BIN/psql -h 127.0.0.1 -p $PG_SHARD0_PORT -U postgres postgres
  shard 1: $PG_BIN/psql -h 127.0.0.1 -p $PG_SHARD1_PORT -U postgres postgres
  their read replicas (streaming standbys): ports $PG_SHARD0_REPLICA_PORT $PG_SHARD1_REPLICA_PORT
  shards 2-5 (empty, database pgdog_new: the resharding destination): ports $PG_SHARD2_PORT $PG_SHARD3_PORT $PG_SHARD4_PORT $PG_SHARD5_PORT
Reads go to the replicas, writes and transactions to the primaries (SHOW POOLS: roles, bans, lag):
  PGPASSWORD=pgdog $PG_BIN/psql -h 127.0.0.1 -p $PORT -U pgdog pgdog -c "SELECT inet_server_port()"
Reshard pgdog from 2 to 4 shards under load (see README.md, "Resharding"):
  bash $ROOT/scripts/reshard-demo.sh $CONF
Configuration: $CONF (removed on exit). Press Ctrl-C to stop.
MSG
wait $PGDOG_PID
