#!/usr/bin/env bash
# Login benchmark (issue 29): how fast each proxy lets clients in, one PG18 server, SCRAM-SHA-256
# everywhere (pgbench -C: a new connection for every transaction, the cost of a connection
# storm). pgdog with the user in users.toml and with the user found by auth_query (pass-through
# SCRAM to the server), against PgBouncer 1.25 with the user in auth_file and with auth_query,
# and PostgreSQL directly. Per case: logins per second and each proxy's CPU µs per login.
# Writes benchmarks/results/auth.md.
# Knobs (environment):
#   DURATION=8     seconds per case
#   CLIENTS=4      pgbench -c (each connects, runs one SELECT, disconnects, again)
#   PGBOUNCER      the PgBouncer binary (default: ../shared/tools/build-pgbouncer.sh's)
#   SKIP_BUILD=1   reuse target/release as it is
# About 1 minute on 2 cores, without the builds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
[ "${SKIP_BUILD:-0}" = 1 ] || build_release -q -p pgdog-benchmarks
pgbouncer_anchor
exec target/release/pgdog-topology single -- bash benchmarks/auth-run.sh "$@"
