#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See replication.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
ROWS="${ROWS:-1000000}"
bench_init replication
psql() { psql_at "$PG_PG_PORT" "$@"; }

psql -c "CREATE TABLE bench (id bigint PRIMARY KEY, email text, n int, at timestamptz)"
psql -c "CREATE PUBLICATION pub FOR TABLE bench"
# Identical slots: created back to back before any change, so each holds the same stream.
for s in drain1 pgdog1 recv1 drain2 pgdog2 recv2 drain3 pgdog3 recv3 captured; do
  psql -c "SELECT pg_create_logical_replication_slot('$s', 'pgoutput')" >/dev/null
done
BATCH=$((ROWS / 10))
for i in $(seq 0 9); do
  psql -c "INSERT INTO bench SELECT g, md5(g::text) || '@example.com', g % 1000, now() FROM generate_series($((i * BATCH + 1)), $(((i + 1) * BATCH))) g"
done
END=$(psql -c "SELECT pg_current_wal_insert_lsn()")
psql -c "SELECT encode(data, 'hex') FROM pg_logical_slot_get_binary_changes('captured', NULL, NULL, 'proto_version', '4', 'publication_names', 'pub')" > "$WORK/captured.hex"
CAPTURED=$(wc -l < "$WORK/captured.hex")

now() { date +%s.%N; }
rate() { python3 -c "import sys; print(f'{int(sys.argv[1]) / float(sys.argv[2]):,.0f}')" "$1" "$2"; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
pgdog_drain() {
  local t0 t1
  t0=$(now)
  "$ROOT/target/release/pgdog" logical-dump --url "postgres://postgres@127.0.0.1:$PG_PG_PORT/postgres" \
    --slot "$1" --publication pub --proto 4 --until-lsn "$END" > /dev/null 2> "$WORK/$1.log"
  t1=$(now)
  elapsed "$t0" "$t1"
}
recv_drain() {
  local t0 t1
  t0=$(now)
  "$PG_BIN/pg_recvlogical" -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres -d postgres --slot "$1" --start \
    -o proto_version=4 -o publication_names=pub -E "$END" -f /dev/null 2> "$WORK/$1.log"
  t1=$(now)
  elapsed "$t0" "$t1"
}
client_drain() {
  "$ROOT/target/release/replication-drain" "postgres://postgres@127.0.0.1:$PG_PG_PORT/postgres" "$1" pub "$END" > "$WORK/$1.out"
  awk '{print $2}' "$WORK/$1.out"
}
# Three rounds in rotating order, so no client always goes first.
d1=$(client_drain drain1); p1=$(pgdog_drain pgdog1); r1=$(recv_drain recv1)
r2=$(recv_drain recv2); d2=$(client_drain drain2); p2=$(pgdog_drain pgdog2)
p3=$(pgdog_drain pgdog3); r3=$(recv_drain recv3); d3=$(client_drain drain3)
EVENTS=$(awk '{print $1}' "$WORK/drain1.out")
best() { python3 -c "import sys; print(min(float(a) for a in sys.argv[1:]))" "$@"; }
pb=$(best "$p1" "$p2" "$p3"); rb=$(best "$r1" "$r2" "$r3"); db=$(best "$d1" "$d2" "$d3")
# Throughput ratios: pg_recvlogical's time over the client's.
ratio=$(ratio "$rb" "$pb")
dratio=$(ratio "$rb" "$db")
decode=$("$ROOT/target/release/pgoutput-bench" --captured "$WORK/captured.hex" | tail -1)
synthetic=$("$ROOT/target/release/pgoutput-bench" | tail -2)

cat > "$OUT" <<MD
# Replication benchmark

One run on one machine (2 cores shared by PostgreSQL 18, its walsender and the client: compare
ratios). A table \`bench (id bigint PRIMARY KEY, email text, n int, at timestamptz)\` published
with \`pgoutput\`; $ROWS rows inserted in 10 transactions after five identical slots were created,
so each slot holds the same $EVENTS messages (Begin, Insert, Commit, Relation; the captured copy
read with \`pg_logical_slot_get_binary_changes\` has $CAPTURED: it stops at the WAL flushed so far).

Command: \`bash benchmarks/replication.sh\`

## Decoding alone

| workload | events | MB | events/s | ns/event |
|---|---|---|---|---|
$decode
$synthetic

## End to end: draining a slot up to the same LSN

| client (output to /dev/null) | seconds (best of 3) | events/s |
|---|---|---|
| pgdog's replication client + decoder (\`replication-drain\`: decode every message, confirm at commits; what resharding uses) | $db ($d1, $d2, $d3) | $(rate "$EVENTS" "$db") |
| \`pgdog logical-dump\` (decode every message, print it as JSON, confirm) | $pb ($p1, $p2, $p3) | $(rate "$EVENTS" "$pb") |
| \`pg_recvlogical\` (raw messages) | $rb ($r1, $r2, $r3) | $(rate "$EVENTS" "$rb") |

Throughput against pg_recvlogical: replication client + decoder **$dratio**; logical-dump with
JSON output **$ratio**.

Targets: ≥ 2M events/s decoding alone; end to end ≥ 1.0x pg_recvlogical.
MD
cat "$OUT"
