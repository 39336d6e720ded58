#!/usr/bin/env bash
# Runs every test: provisioning, rustfmt, the build with clippy, unit and integration tests against
# real PostgreSQL 18, the protocol fuzzer and the leak check. The README's test command, and what
# CI runs (.ci/run). Prints each step's time and, at the end, all of them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
start=$(date +%s)
last=$start
steps=()
step() {
  local now
  now=$(date +%s)
  [ ${#steps[@]} -gt 0 ] && steps[-1]+=" $((now - last)) s"
  last=$now
  steps+=("$*:")
  echo "==> $* ($((now - start))s)"
}

step provision
provision
# A fresh clone (CI) builds everything once: incremental compilation's caches only cost time.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
# Test builds carry the failpoints (fail crate) the crash tests drive through FAILPOINTS; release
# builds (scripts/run.sh) do not.
FEATURES=(--features pgdog/failpoints)

step "cargo fmt --check"
cargo fmt --all -- --check
step build
# What the tests run is built by rustc itself. (Built by clippy-driver as the workspace's rustc,
# which would lint in the same pass, binaries lose the debug build's misaligned- and
# null-pointer checks: measured on 1.95.)
cargo build --workspace --all-targets --locked "${FEATURES[@]}"
step "clippy, every target with the test features"
cargo clippy --workspace --all-targets --locked "${FEATURES[@]}" -- -D warnings
step "clippy of pgdog's library and binary without the test features (where code differs)"
cargo clippy -p pgdog --lib --bins --locked -- -D warnings
step "unit and integration tests"
# The integration tests are one binary (integration/tests/main.rs), its tests 3 at a time: they
# mostly wait on PostgreSQL (2 at a time: 185 s; 3: 164 s; 4: 137 s, 2 cores). At 4, one run in
# five lost a login through the TLS server test (server_tls) to a reset connection.
cargo test --workspace --locked "${FEATURES[@]}" -- --test-threads 3
step "session, pool, handover and two-phase suites again with workers = 2 (the multi-threaded runtime)"
# (--workspace as above: the same build, nothing compiled again; the filters pick the suites.)
PGDOG_TEST_WORKERS=2 cargo test --workspace --locked "${FEATURES[@]}" -- --test-threads 3 \
  pooler_pooling pooler_state pooler_prepared_clients pooler_unnamed pooler_handoff pooler_restart \
  pooler_caps sharding_sessions sharding_twophase sharding_writes
step "protocol fuzzer (30 s against pgdog in transaction mode and in session mode at once; replay a failure with the seed and case it prints)"
# At once: each waits on its pgdog and server, not on the cores (cases in 30 s, 2 cores: 3,625
# and 3,697 one after the other; 3,838 and 3,658 together).
target/debug/pgdog-topology single -- python3 integration/fuzz/protocol_fuzz.py --target pgdog --seconds 30 &
fuzz_transaction=$!
target/debug/pgdog-topology single -- python3 integration/fuzz/protocol_fuzz.py --target pgdog --mode session --seconds 30 &
fuzz_session=$!
fuzz_failed=
wait "$fuzz_transaction" || fuzz_failed="transaction mode"
wait "$fuzz_session" || fuzz_failed="${fuzz_failed:+$fuzz_failed and }session mode"
[ -z "$fuzz_failed" ] || { echo "protocol fuzzer failed in $fuzz_failed (see above)" >&2; exit 1; }
step "leak check (valgrind over the parser corpus, one part per core)"
bash scripts/leak-check.sh target/debug/examples/leak_check
step "all passed"
printf '  %s\n' "${steps[@]::${#steps[@]}-1}"
echo "  total: $(($(date +%s) - start)) s"
