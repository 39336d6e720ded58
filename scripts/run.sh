#!/usr/bin/env bash
# The main job: a local PostgreSQL 18 topology of 6 servers plus a streaming standby for each of
# the first 2, pgdog in front of it on 127.0.0.1:6432 serving database "pgdog" from those 2
# (writes on the primaries, reads on the standbys) (the other 4 are the destination of the
# resharding walkthrough: scripts/reshard-demo.sh), printing how to connect.
# Ctrl-C stops the servers and removes their data.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
provision
build_release
exec target/release/pgdog-topology shards+replicas 6 2 -- bash scripts/demo-session.sh
