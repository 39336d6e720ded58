#!/usr/bin/env bash
# Adding one shard by moving buckets (issue 51), in one run on one machine: a pgbench database
# (scale SCALE) on 2 shards with 1,024 buckets grows to 3 while pgbench writes through pgdog
# (`pgdog reshard --cutover`, then `pgdog cleanup --delete`), against a rebuild of the same
# rows into 3 new shards with today's engine (`copy-data --slot`). Writes the section "Adding a
# shard by moving buckets" of benchmarks/results/reshard.md. Knobs: SCALE (20), CLIENTS (8),
# LOAD_SECONDS (60).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
build_release -q
exec target/release/pgdog-topology shards 6 -- bash benchmarks/buckets-run.sh "$@"
