#!/usr/bin/env bash
# The floor of a transaction-mode proxy (issue 47): three bare relays (target/release/floor-relay:
# tokio with select!, tokio with one hand-written poll, raw mio; each client with a server
# connection of its own, bytes copied, nothing parsed) next to PgBouncer 1.25 and pgdog
# (workers = 1, pool 10), in one run on one PG18 server, pgbench -S -M simple. Replaces the
# "Floor" section of benchmarks/results/pooler.md:
#   - fixed rate: pgbench -R $RATE -c 8 -j 2 -T $FIXED_DURATION, $ROUNDS rounds with the proxies
#     rotated; medians of CPU µs per transaction, user and kernel (/proc/PID/stat);
#   - saturated: -c 8 -j 2 -T $DURATION, TPS and CPU µs per transaction;
#   - instructions and allocations per transaction: each proxy under valgrind --tool=callgrind
#     (user-space instructions; calls of malloc, calloc, realloc and posix_memalign), two runs
#     of $CG_SMALL and $CG_LARGE transactions at 8 clients, the difference divided by the
#     difference of transactions (connection set-up and start-up cancel out).
# Knobs (environment): RATE=4000 FIXED_DURATION=10 ROUNDS=3 DURATION=8 CG_SMALL=400 CG_LARGE=2000
# POOL=10 SKIP_BUILD=1 (reuse target/release), PGBOUNCER, OUT. About 6 minutes on 2 cores.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
command -v valgrind >/dev/null || { echo "floor.sh: valgrind is not installed" >&2; exit 1; }
[ "${SKIP_BUILD:-0}" = 1 ] || build_release -q -p pgdog-benchmarks
pgbouncer_anchor
exec target/release/pgdog-topology single -- bash benchmarks/floor-run.sh "$@"
