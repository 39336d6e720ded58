#!/usr/bin/env bash
# Regenerates benchmarks/results/parser.md: pg_query vs pg_query_raw, side by side in one run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
cargo run --release --locked -q -p pgdog-benchmarks --bin parser-bench -- --out benchmarks/results/parser.md "$@"
