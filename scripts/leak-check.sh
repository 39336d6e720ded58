#!/usr/bin/env bash
# Leak check of pg_query_raw: every entry point over the whole corpus under valgrind memcheck.
# Fails on any definitely or indirectly lost block (still-reachable per-thread caches are fine).
# The corpus is cut in one part per core, each under its own valgrind (valgrind runs a program
# on one core). `bash scripts/leak-check.sh [BINARY]`: BINARY is a leak_check example already
# built (scripts/test.sh passes its own); without it, it is built here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v valgrind >/dev/null 2>&1 || { source scripts/provision.sh; }
command -v valgrind >/dev/null 2>&1 || { echo "leak-check: valgrind is not installed" >&2; exit 1; }
binary=${1:-}
if [ -z "$binary" ]; then
  cargo build --locked -q -p pg_query_raw --example leak_check
  binary=target/debug/examples/leak_check
fi
parts=$(nproc 2>/dev/null || echo 1)
[ "$parts" -gt 4 ] && parts=4
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for ((part = 0; part < parts; part++)); do
  valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --error-exitcode=1 \
    "$binary" "$part" "$parts" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
pids=()
if [ "$failed" -ne 0 ]; then
  echo "leak-check: valgrind found leaks or errors (above)" >&2
  exit 1
fi
echo "leak-check: no leaks"
