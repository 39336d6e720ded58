#!/usr/bin/env bash
# Runs inside `pgdog-topology shards 2` (which exports PG_SHARD<N>_PORT, PG_BIN, ...): prints how to
# connect and waits until Ctrl-C. pgdog itself is not in front yet: the proxy lands with the
# pooler issue and this script will start it on 127.0.0.1:6432.
set -euo pipefail
cat <<MSG
PostgreSQL 18 shards are up (user postgres, trust auth, sslmode=disable):
  shard 0: $PG_BIN/psql -h 127.0.0.1 -p $PG_SHARD0_PORT -U postgres postgres
  shard 1: $PG_BIN/psql -h 127.0.0.1 -p $PG_SHARD1_PORT -U postgres postgres
Data: $PGDOG_TOPOLOGY_DIR (removed on exit). Press Ctrl-C to stop.
MSG
sleep infinity &
trap 'kill $! 2>/dev/null; exit 0' INT TERM
wait
