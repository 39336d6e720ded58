#!/usr/bin/env bash
# Router benchmark: a pgbench custom script by key (point SELECT and UPDATE on pgbench_accounts,
# extended protocol) through pgdog over 2 shards vs through pgdog over 1 database with the query
# parser off, in one run on the same servers; plus the µs each query spends in parsing and
# routing and the query cache's hit ratio (router-bench, in-process).
# Then a GROUP BY with 5 million groups over 3 shards past merge_work_mem, next to one PostgreSQL
# (merge-run.sh; MERGE_ONLY=1 runs only that part). Then the cost of dry_run at 8 clients
# (dry-run-run.sh; DRY_ONLY=1 runs only that part).
# Writes benchmarks/results/router.md. DURATION=seconds per run (default 8).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
build_release -q -p pgdog-benchmarks
if [ -z "${MERGE_ONLY:-}${DRY_ONLY:-}" ]; then
  target/release/pgdog-topology shards 2 -- bash benchmarks/router-run.sh "$@"
fi
if [ -z "${DRY_ONLY:-}" ]; then
  target/release/pgdog-topology shards 3 -- bash benchmarks/merge-run.sh
fi
if [ -z "${MERGE_ONLY:-}" ]; then
  target/release/pgdog-topology single -- bash benchmarks/dry-run-run.sh
fi
