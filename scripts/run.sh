#!/usr/bin/env bash
# The main job: a local 2-shard PostgreSQL 18 topology with pgdog in front of it on
# 127.0.0.1:6432, printing how to connect.
# Ctrl-C stops the servers and removes their data.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/provision.sh
cargo build --release --locked -p pgdog -p pgdog-integration
exec target/release/pgdog-topology shards 2 -- bash scripts/demo-session.sh
