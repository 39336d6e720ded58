#!/usr/bin/env bash
# Restart benchmark (issue 30): RESTARTS restarts in a row of each proxy on one port under client
# load, a new connection per transaction and persistent connections at once
# (benchmarks/restart_load.py), counting every failed connection and query:
#   - pgdog with so_reuseport = true (the successor takes the listening socket and the clients);
#   - a release build with test hooks where the old process keeps its socket LINGER ms without
#     accepting, then hands it over, and the same closing it instead (failpoints
#     `listener-linger`, `keep-listening-socket`: a plain SO_REUSEPORT restart), to measure
#     what that handover saves;
#   - PgBouncer 1.25 with so_reuseport = 1, the old one stopped with SIGINT (safe shutdown).
# Writes benchmarks/results/restart.md. Knobs (environment): RESTARTS=10, CONNECTORS=8,
# PERSISTENT=8, OVERLAP=1 (seconds both run before the old one is signalled), QUEUED=16 (logins
# started while the old process is frozen), LINGER=300 (ms), PGBOUNCER, SKIP_BUILD=1. About 4
# minutes without the builds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  build_release -q
  # A second release build with the test hooks compiled in, for the variant without the
  # handover of the listening socket.
  CARGO_TARGET_DIR="$ROOT/target/failpoints" cargo build --release --locked -q -p pgdog --features failpoints
fi
pgbouncer_anchor
exec target/release/pgdog-topology single -- bash benchmarks/restart-run.sh "$@"
