#!/usr/bin/env bash
# HA benchmark: on a primary with two streaming standbys (PG18), pgbench -S reads at 8 clients
# through pgdog with the primary only vs primary + 1 replica vs primary + 2 replicas; errors
# pgbench sees when a replica is killed during a run; failover time (primary killed -> first
# successful write through the same pgdog, with role = "auto" and a standby promoted).
# Writes benchmarks/results/ha.md. DURATION=seconds per read run (default 8),
# INTERVAL=healthcheck_interval in ms for the failover run (default 1000).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
build_release -q
exec target/release/pgdog-topology replicas 2 -- bash benchmarks/ha-run.sh "$@"
