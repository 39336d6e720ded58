#!/usr/bin/env bash
# Resharding benchmark, in one run on one machine:
#   1. copy: `pgdog copy-data --parallel 2` of a >= SIZE_MB table from a streaming standby into
#      2 shards vs one `psql COPY TO STDOUT | psql COPY FROM STDIN` pipe (binary) from the same
#      standby, each RUNS times in alternating order (MB/s, rows/s, ratio);
#   1b. two tables (big and a copy) with one replica configured vs two (a second standby made
#      with pg_basebackup): copy-data MiB/s, ratio two / one and to the pipe;
#   1c. one table (big) vs the same rows as 4 tables, copied with a slot (key ranges), with 1, 2
#      and 4 readers per server and 1 and 2 replicas: seconds, ratio one / four, ratio to the pipe;
#   2. apply: `pgdog replay` keeping 2 shards in step with the source primary while pgbench
#      (tpcb-like, CLIENTS clients, APPLY_SECONDS seconds, scale SCALE) writes to it: source vs
#      applied transactions/s, replication lag over time, catch-up time.
# Writes benchmarks/results/reshard.md. Knobs: SIZE_MB (1024), RUNS (2), APPLY_SECONDS (60),
# CLIENTS (8), SCALE (20), OUT (the results file), PARTS (all; apply: skip the copy part),
# PGDOG (the pgdog binary measured; target/release/pgdog, built here), REPLAY_ARGS (extra
# `pgdog replay` flags, e.g. --atomic).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
build_release -q
exec target/release/pgdog-topology replicated+shards 2 -- bash benchmarks/reshard-run.sh "$@"
