#!/usr/bin/env bash
# Compatibility: psycopg 3's own test suite (its authors' tests, tag 3.3.4) run directly against
# PostgreSQL 18 and through pgdog in transaction and in session mode, by the shared runner
# ../shared/tools/psycopg-suite/run.sh; then pgx v5 in each of its query exec modes through
# pgdog in transaction mode (benchmarks/compat/pgx, needs Go). Writes
# benchmarks/results/compat.md: the counts per run and every test that fails only through
# pgdog. Without the shared runner (a checkout outside this workspace) the psycopg part says so.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${OUT:=$ROOT/benchmarks/results/compat.md}"
SUITE="$ROOT/../shared/tools/psycopg-suite/run.sh"
provision
build_release -q
PGX=$(mktemp)
if command -v go > /dev/null; then
  target/release/pgdog-topology single -- bash benchmarks/compat-pgx-run.sh > "$PGX" 2>&1 || true
else
  echo "Go is not installed: the pgx check did not run" > "$PGX"
fi
if [ ! -f "$SUITE" ]; then
  echo "compat: no psycopg suite runner at $SUITE (it lives beside this workspace)" >&2
  { echo "# Compatibility"; echo; echo '```'; cat "$PGX"; echo '```'; } > "$OUT"
  exit 0
fi
EXPECTED_DIR=$(dirname "$SUITE")
# listed TEST FILE: whether FILE (one test id a line, '#' comments) lists TEST.
listed() { sed 's/#.*//; s/[[:space:]]*$//' "$2" | grep -Fxq -- "$1"; }
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS" "$PGX"' EXIT
started=$(date +%s)
rc=0
PGBIN="$PG_BIN" PSY_LOGS="$LOGS" PGDOG="$ROOT/target/release/pgdog" bash "$SUITE" || rc=$?
{
  echo "# Compatibility: psycopg 3's own test suite through pgdog"
  echo
  echo "\`bash benchmarks/compat.sh\` ($(date -u +%Y-%m-%d), $(( $(date +%s) - started )) s, runner exit $rc):"
  echo "psycopg 3.3.4's tests (\`-m 'not slow'\`) directly against PostgreSQL 18, then through pgdog"
  echo "in transaction and in session mode, on this machine. A test listed below fails through pgdog"
  echo "and passes directly. The runner's lists of failures expected of any pooler:"
  echo "\`../shared/tools/psycopg-suite/expected-pooler.txt\` and \`expected-transaction.txt\`."
  echo
  echo '```'
  sed -n '1,/^$/p' "$LOGS/summary.txt"
  grep -E '^(transaction|session):|^pgdog log|^VERDICT' "$LOGS/summary.txt" || true
  echo '```'
  echo
  echo "## pgx v5.12 through pgdog (transaction mode, pool of 3)"
  echo
  echo "Each query exec mode, 8 connections at once, 50 rounds of parameterised queries and a"
  echo "transaction each; every answer checked (\`benchmarks/compat/pgx\`):"
  echo
  echo '```'
  grep -E '^pgx |: client [0-9]+:|Go is not' "$PGX" || tail -5 "$PGX"
  echo '```'
  for run in transaction session; do
    f="$LOGS/pgdog-only-$run.txt"
    [ -f "$f" ] || continue
    echo
    echo "## Only through pgdog, $run mode ($(wc -l < "$f"))"
    echo
    echo "| test | result | expected of a pooler | message |"
    echo "|---|---|---|---|"
    while IFS=$'\t' read -r test state msg; do
      msg=${msg//|/\\|}
      expected=no
      if listed "$test" "$EXPECTED_DIR/expected-pooler.txt"; then expected="yes (any mode)"
      elif [ "$run" = transaction ] && listed "$test" "$EXPECTED_DIR/expected-transaction.txt"; then
        expected="yes (transaction mode)"
      fi
      echo "| \`$test\` | $state | $expected | ${msg:0:140} |"
    done < "$f"
  done
} > "$OUT"
echo "wrote $OUT"
