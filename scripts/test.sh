#!/usr/bin/env bash
# Runs every test: provisioning, build, rustfmt, clippy, unit and integration tests against real
# PostgreSQL 18. The README's test command, and what CI runs (.ci/run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)
step() { echo "==> $* ($(( $(date +%s) - start ))s)"; }

step provision
source scripts/provision.sh
step build
cargo build --workspace --all-targets --locked
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "unit and integration tests"
cargo test --workspace --locked
step "leak check (valgrind over the parser corpus)"
bash scripts/leak-check.sh
step "all passed"
