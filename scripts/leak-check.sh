#!/usr/bin/env bash
# Leak check of pg_query_raw: every entry point over the whole corpus under valgrind memcheck.
# Fails on any definitely or indirectly lost block (still-reachable per-thread caches are fine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v valgrind >/dev/null 2>&1 || { source scripts/provision.sh; }
command -v valgrind >/dev/null 2>&1 || { echo "leak-check: valgrind is not installed" >&2; exit 1; }
cargo build --locked -q -p pg_query_raw --example leak_check
valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect --error-exitcode=1 \
  target/debug/examples/leak_check
echo "leak-check: no leaks"
