#!/usr/bin/env bash
# Runs every test: provisioning, build, rustfmt, clippy, unit and integration tests against real
# PostgreSQL 18. The README's test command, and what CI runs (.ci/run).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
start=$(date +%s)
step() { echo "==> $* ($(( $(date +%s) - start ))s)"; }

step provision
provision
# Test builds carry the failpoints (fail crate) the crash tests drive through FAILPOINTS; release
# builds (scripts/run.sh) do not.
FEATURES=(--features pgdog/failpoints)
step build
cargo build --workspace --all-targets --locked "${FEATURES[@]}"
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
# Every target with the test features; the library and binary also as release builds see them
# (without failpoints), which is where code differs. (All targets twice cost CI ~100 s.)
cargo clippy --workspace --all-targets --locked "${FEATURES[@]}" -- -D warnings
cargo clippy -p pgdog --lib --bins --locked -- -D warnings
step "unit and integration tests"
cargo test --workspace --locked "${FEATURES[@]}"
step "protocol fuzzer (30 s against pgdog; replay a failure with the seed and case it prints)"
target/debug/pgdog-topology single -- python3 integration/fuzz/protocol_fuzz.py --target pgdog --seconds 30
step "leak check (valgrind over the parser corpus)"
bash scripts/leak-check.sh
step "all passed"
