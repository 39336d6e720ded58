#!/usr/bin/env bash
# Replication benchmark: pgoutput decoding alone on a stream captured from PostgreSQL 18 (and on
# a synthetic one), and end to end: `pgdog logical-dump` draining a slot that holds 1M row
# changes vs `pg_recvlogical` draining an identical slot, in the same run on the same server.
# Writes benchmarks/results/replication.md. ROWS=row changes (default 1000000).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
build_release -q -p pgdog-benchmarks
exec target/release/pgdog-topology single -- bash benchmarks/replication-run.sh "$@"
