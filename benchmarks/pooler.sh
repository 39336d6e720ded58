#!/usr/bin/env bash
# Pooler benchmark: pgbench -S (select-only), simple and -M prepared protocol, at 1, 8 and 64
# clients, against PostgreSQL directly, through pgdog and through PgBouncer (Debian's, transaction
# mode), all in one run on one PG18 server; then pgdog's RSS with 1,000 idle clients.
# Writes benchmarks/results/pooler.md. DURATION=seconds per run (default 8).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
build_release -q -p pgdog-benchmarks
exec target/release/pgdog-topology single -- bash benchmarks/pooler-run.sh "$@"
