#!/usr/bin/env bash
# Fault and load suite with figures: runs the fault tests (integration/tests/faults.rs: 2,000
# clients on a pool of 20, a shard killed under load, killed clients, a frozen server, deep
# pipelining, a 1 MB statement, bad inputs), the two-phase commit crash tests and the
# session-state leak tests on real PostgreSQL 18, collects the figures they report and writes
# benchmarks/results/reliability.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
provision
cargo build --locked -q --workspace --all-targets --features pgdog/failpoints
REPORT="$(mktemp)"
trap 'rm -f "$REPORT"' EXIT
FAULTS_REPORT="$REPORT" cargo test --locked -q --features pgdog/failpoints -p pgdog-integration \
  --test e2e -- --test-threads 1 faults:: sharding_twophase:: pooler_leaks:: 2>/dev/null
python3 - "$REPORT" > benchmarks/results/reliability.md <<'PY'
import sys
f = dict(line.rstrip("\n").split("\t", 1) for line in open(sys.argv[1]) if "\t" in line)
g = lambda k: f.get(k, "missing")
print("# Reliability: faults and load\n")
print("One run on one machine (2 cores), real PostgreSQL 18, pgdog debug build with failpoints.\n")
print("Command: `bash benchmarks/faults.sh`\n")
print("| what | figure |\n|---|---|")
rows = [
    ("load held: concurrent clients on a pool of 20 (one transaction each)", g("clients_concurrent")),
    ("  committed / refused with 53300 within checkout_timeout", f'{g("clients_committed")} / {g("clients_refused_53300")} in {g("clients_seconds")} s'),
    ("load held: pipelined Bind/Execute written before reading", f'{g("pipelined_executes")} in {g("pipelined_seconds")} s'),
    ("load held: one statement of (bytes)", g("large_statement_bytes")),
    ("fault: shard killed under load, inserts acknowledged / failed", f'{g("shard_kill_inserts_acked")} / {g("shard_kill_inserts_failed")}'),
    ("  shard back: first write to it after restart (ms)", g("shard_kill_recovered_ms")),
    ("fault: frozen server (SIGSTOP), another client served in (ms)", g("frozen_server_other_client_ms")),
    ("fault: clients killed mid-transaction, mid-COPY, mid-pipeline, servers clean", g("killed_clients_recovered")),
    ("fault: pgdog killed at each two-phase commit step (and a lost PREPARE reply)", g("two_phase_crash_points_survived")),
    ("bad inputs tried (malformed protocol, bad SQL, wrong passwords)", g("bad_inputs_tried")),
    ("session state kinds checked for leaks", g("session_state_kinds_checked")),
    ("rows lost", g("shard_kill_rows_lost")),
    ("rows duplicated", g("shard_kill_rows_duplicated")),
    ("two-phase half-commits", g("two_phase_half_commits")),
    ("session state leaks", g("session_state_leaks")),
]
for k, v in rows:
    print(f"| {k} | {v} |")
PY
cat benchmarks/results/reliability.md
