#!/usr/bin/env bash
# Where pgdog's instructions per transaction go (issue 47): pgdog (workers = 1) under
# `valgrind --tool=callgrind`, `pgbench -S` at 8 clients through
#   - a plain database, pool 10, for each protocol (simple, extended, prepared);
#   - a database of 2 shards (pgbench_accounts split by aid), pool 5 each, simple protocol (the
#     key is a literal: every text differs), the SELECT of `pgbench -S` from a script.
# Each is run twice ($CG_SMALL and $CG_LARGE transactions) and differenced, so start-up and
# connections cancel out. Writes benchmarks/results/profile.md: user-space instructions and
# allocations (malloc, calloc, realloc, posix_memalign calls) per transaction, and for each
# workload pgdog's own functions by instructions per transaction, inclusive of what they call.
# Knobs (environment): CG_SMALL=2000 CG_LARGE=6000 TOP=25 SKIP_BUILD=1 (reuse target/release),
# OUT. About 5 minutes on 2 cores.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
command -v valgrind >/dev/null || { echo "profile.sh: valgrind is not installed" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "profile.sh: callgrind_annotate is missing" >&2; exit 1; }
[ "${SKIP_BUILD:-0}" = 1 ] || build_release -q -p pgdog-benchmarks
exec target/release/pgdog-topology shards 2 -- bash benchmarks/profile-run.sh "$@"
