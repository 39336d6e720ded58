#!/usr/bin/env bash
# The main job: a local PostgreSQL 18 topology of 6 servers, pgdog in front of it on
# 127.0.0.1:6432 serving database "pgdog" from 2 of them (the other 4 are the destination of the
# resharding walkthrough: scripts/reshard-demo.sh), printing how to connect.
# Ctrl-C stops the servers and removes their data.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/provision.sh
cargo build --release --locked -p pgdog -p pgdog-integration
exec target/release/pgdog-topology shards 6 -- bash scripts/demo-session.sh
