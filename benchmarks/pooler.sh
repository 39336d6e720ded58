#!/usr/bin/env bash
# Pooler benchmark (issue 28): pgdog against PgBouncer 1.25 (the anchor), Debian's PgBouncer 1.18
# and PostgreSQL directly, all in one run on one PG18 server, both PgBouncers in transaction mode
# with pgdog's pool size. Writes benchmarks/results/pooler.md:
#   - saturated: pgbench -n -S -M {simple,extended,prepared} -c $CLIENTS -j 2 -T $DURATION, TPS
#     and each proxy's CPU per transaction; latency p50/p99 at 1 client (simple);
#   - fixed rate: pgbench -n -S -M MODE -R $RATE -c 8 -j 2 -T $FIXED_DURATION, $ROUNDS rounds with
#     the proxies alternated, medians of the CPU per transaction (user, kernel), context switches
#     per transaction; syscalls per transaction from a separate run under `strace -f -c`; pgdog
#     also with workers = 1 and workers = 2 (simple);
#   - the sharded session (2 shards on the same server, routed by key) against one database with
#     the parser off, pgdog's RSS with 1,000 and 10,000 idle clients, and the issue's
#     targets, each marked met or missed.
# The anchor is PgBouncer 1.25 from ../shared/tools/build-pgbouncer.sh (built once) when
# ../shared/tools exists, else Debian's pgbouncer, and the table says which.
# Knobs (environment):
#   DURATION=8          seconds per saturated run
#   FIXED_DURATION=10   seconds per fixed-rate run
#   RATE=4000           fixed rate, transactions per second
#   ROUNDS=3            fixed-rate rounds (medians reported)
#   CLIENTS="1 8 64 500"  client counts of the saturated runs (direct fails at 500: max_connections)
#   FIXED_MODES="simple extended prepared"   protocols at the fixed rate
#   STRACE_DURATION=5   seconds of each fixed-rate run under strace
#   POOL=10             server connections of every pooler
#   WORKERS             pgdog's workers for the main instance (unset: pgdog's default)
#   PGBOUNCER           the anchor PgBouncer binary (default: see above)
#   PGBOUNCER_OLD=/usr/sbin/pgbouncer   the second PgBouncer column (Debian's 1.18)
#   SKIP_BUILD=1        reuse target/release as it is (no cargo build)
#   OUT                 the results file (default benchmarks/results/pooler.md)
# About 10 minutes with the defaults on 2 cores (9 min 44 s measured, without the build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
[ "${SKIP_BUILD:-0}" = 1 ] || build_release -q -p pgdog-benchmarks
pgbouncer_anchor  # before the topology: a first build of PgBouncer 1.25 takes a while
exec target/release/pgdog-topology single -- bash benchmarks/pooler-run.sh "$@"
