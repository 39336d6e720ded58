#!/usr/bin/env bash
# A/B of two pgdog binaries on the pooler hot path, side by side in one run: `pgbench -S` in
# each protocol at 8 clients, saturated and at a fixed rate (-R, about a fifth of one core),
# runs of A and B alternated ROUNDS times; TPS and the proxy's CPU per transaction (utime +
# stime). Prints a table (no results file: a tool for comparing a change with its base).
#
#   usage: bash benchmarks/ab.sh PGDOG_A PGDOG_B     (e.g. a build of the base commit and HEAD)
#   knobs: DURATION=6 ROUNDS=3 RATE=4000 MODES="simple extended prepared" WORKERS=1
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
[ $# -eq 2 ] || { echo "usage: bash benchmarks/ab.sh PGDOG_A PGDOG_B" >&2; exit 2; }
A=$(realpath "$1") B=$(realpath "$2")
provision
build_release -q -p pgdog-integration
exec target/release/pgdog-topology single -- bash benchmarks/ab-run.sh "$A" "$B"
