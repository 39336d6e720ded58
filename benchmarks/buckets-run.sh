#!/usr/bin/env bash
# Runs inside `pgdog-topology shards 6` (PG_SHARD0_PORT .. PG_SHARD5_PORT, PG_BIN,
# PGDOG_TOPOLOGY_DIR): shards 0 and 1 are the database, 2 the shard added, 3 to 5 the rebuild's
# new shards. See buckets.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${SCALE:=20}" "${CLIENTS:=8}" "${LOAD_SECONDS:=60}"
PGDOG="$ROOT/target/release/pgdog"
export PGSSLMODE=disable PGCONNECT_TIMEOUT=10
OUT="${OUT:-$ROOT/benchmarks/results/reshard.md}"
WORK="$PGDOG_TOPOLOGY_DIR/bench"
mkdir -p "$WORK" && chmod 777 "$WORK"
die() { echo "buckets benchmark: $*" >&2; exit 1; }
say() { echo "buckets benchmark: $*" >&2; }
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
port_of() { local v="PG_SHARD$1_PORT"; echo "${!v}"; }
on() { psql_at "$(port_of "$1")" -c "$2"; }
pd() { "$PGDOG" "$1" --config "$WORK/pgdog.toml" --users "$WORK/users.toml" --pg-bin "$PG_BIN" "${@:2}"; }
PORT=$(free_port)
ADMIN="postgres://admin:admin@127.0.0.1:$PORT/admin"

db() { # name shard server
  toml_entry databases name="$1" shard="$2" port="$(port_of "$3")" database_name=postgres user=postgres
}
{
  toml_section general host=127.0.0.1 port="$PORT" admin_password=admin
  db app 0 0; db app 1 1
  db app_new 0 0; db app_new 1 1; db app_new 2 2
  db app_rebuild 0 3; db app_rebuild 1 4; db app_rebuild 2 5
  for d in app app_new app_rebuild; do toml_pgbench_sharding "$d" data_type=integer; done
  toml_entry bucket_maps database=app buckets=1024
} > "$WORK/pgdog.toml"
for d in app app_new app_rebuild; do toml_entry users name=app database="$d" password=secret; done > "$WORK/users.toml"
# The new map: printed by `pgdog buckets` from app's.
pd buckets --database app --shards 3 > "$WORK/map.txt" || die "pgdog buckets: $(cat "$WORK/map.txt")"
grep -v '^#' "$WORK/map.txt" | sed 's/database = "app"/database = "app_new"/' >> "$WORK/pgdog.toml"
MOVES=$(head -1 "$WORK/map.txt")

RUST_LOG=info "$PGDOG" --config "$WORK/pgdog.toml" --users "$WORK/users.toml" > "$WORK/pgdog.log" 2>&1 &
PGDOG_PID=$!
trap 'stop_pids "$PGDOG_PID"' EXIT
wait_port "$PORT" "$PGDOG_PID" || die "pgdog: $(cat "$WORK/pgdog.log")"
url() { echo "postgres://app:secret@127.0.0.1:$PORT/$1"; }

say "pgbench -i -s $SCALE through pgdog"
"$PG_BIN/pgbench" -i -q -s "$SCALE" "$(url app)" > "$WORK/init.log" 2>&1 || die "pgbench -i: $(cat "$WORK/init.log")"
"$PG_BIN/psql" "$(url app)" -X -q -c "ALTER TABLE pgbench_history REPLICA IDENTITY FULL" || die "replica identity"
for s in 0 1; do
  on "$s" "CREATE PUBLICATION pub FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history"
done
ACCOUNTS=$(( $(on 0 "SELECT count(*) FROM pgbench_accounts") + $(on 1 "SELECT count(*) FROM pgbench_accounts") ))
[ "$ACCOUNTS" = $((SCALE * 100000)) ] || die "$ACCOUNTS accounts"

say "the rebuild: every row into 3 new shards (copy-data --slot)"
pd schema-sync --from-database app --to-database app_rebuild --publication pub --phase pre > "$WORK/rebuild-schema.log" 2>&1 ||
  die "schema-sync: $(cat "$WORK/rebuild-schema.log")"
t0=$(now)
pd copy-data --from-database app --to-database app_rebuild --publication pub --slot rebuild > "$WORK/rebuild.log" 2>&1 ||
  die "rebuild copy: $(cat "$WORK/rebuild.log")"
REBUILD_S=$(elapsed "$t0" "$(now)")
REBUILD_ROWS=0
for s in 3 4 5; do REBUILD_ROWS=$((REBUILD_ROWS + $(on "$s" "SELECT count(*) FROM pgbench_accounts"))); done
for s in 0 1; do on "$s" "SELECT pg_drop_replication_slot('rebuild')" > /dev/null; done

say "the move under pgbench: $CLIENTS clients, $LOAD_SECONDS s"
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$LOAD_SECONDS" "$(url app)" > "$WORK/pgbench.log" 2>&1 &
BENCH_PID=$!
sleep 5
t0=$(now)
pd reshard --from-database app --to-database app_new --publication pub --slot grow --cutover --admin-url "$ADMIN" \
  > "$WORK/reshard.log" 2>&1 || die "reshard: $(tail -30 "$WORK/reshard.log")"
MOVE_S=$(elapsed "$t0" "$(now)")
NEW_ACCOUNTS=$(on 2 "SELECT count(*) FROM pgbench_accounts")
NEW_HISTORY=$(on 2 "SELECT count(*) FROM pgbench_history")
wait "$BENCH_PID" || die "pgbench: $(cat "$WORK/pgbench.log")"
TPS=$(grep -oP 'tps = \K[0-9.]+' "$WORK/pgbench.log" | head -1)
FAILED=$(grep -oP 'number of failed transactions: \K[0-9]+' "$WORK/pgbench.log" || echo 0)
PAUSE=$(python3 - "$WORK/pgdog.log" <<'PY'
import re, sys, datetime
t = {}
for line in open(sys.argv[1]):
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)
    m = re.match(r"(\S+Z)\s+INFO\s+\S+ (paused|resumed) app", line)
    if m:
        t.setdefault(m.group(2), datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")))
print(f"{(t['resumed'] - t['paused']).total_seconds() * 1000:.0f}" if len(t) == 2 else "n/a")
PY
)

say "cleanup of the moved rows (app is the 3-shard layout now)"
t0=$(now)
pd cleanup --database app --delete --pause-ms 0 > "$WORK/cleanup.log" 2>&1 || die "cleanup: $(cat "$WORK/cleanup.log")"
CLEANUP_S=$(elapsed "$t0" "$(now)")
DELETED=$(grep -oP '\K[0-9]+(?= deleted$)' "$WORK/cleanup.log" | tail -1)
pd cleanup --database app > "$WORK/check.log" 2>&1 || die "check: $(cat "$WORK/check.log")"
grep -q "^0 rows placed on another shard" "$WORK/check.log" || die "rows left misplaced: $(cat "$WORK/check.log")"
FINAL=0
for s in 0 1 2; do FINAL=$((FINAL + $(on "$s" "SELECT count(*) FROM pgbench_accounts"))); done
[ "$FINAL" = "$ACCOUNTS" ] || die "$FINAL accounts after the move, $ACCOUNTS before"
HISTORY=0
for s in 0 1 2; do HISTORY=$((HISTORY + $(on "$s" "SELECT count(*) FROM pgbench_history"))); done

export SCALE CLIENTS LOAD_SECONDS MOVES ACCOUNTS REBUILD_S REBUILD_ROWS MOVE_S NEW_ACCOUNTS NEW_HISTORY TPS FAILED PAUSE CLEANUP_S DELETED FINAL HISTORY
SECTION=$(python3 <<'PY'
import os
e = os.environ
acc, new_acc = int(e["ACCOUNTS"]), int(e["NEW_ACCOUNTS"])
share = new_acc / acc
print(f"""## Adding a shard by moving buckets

`bash benchmarks/buckets.sh` (SCALE={e['SCALE']}, CLIENTS={e['CLIENTS']}, LOAD_SECONDS={e['LOAD_SECONDS']}): a pgbench database on 2 shards with 1,024
buckets (the default map) grows to 3. The new map is `pgdog buckets --database app --shards 3`'s
({e['MOVES'].lstrip('# ')}). `pgdog reshard --cutover` moves it while `pgbench -c {e['CLIENTS']} -j 2 -T {e['LOAD_SECONDS']}` writes
through pgdog, then `pgdog cleanup --delete` removes the moved rows from the old shards. The
rebuild: the same rows copied into 3 new shards with today's engine (`copy-data --slot`, no load).
The move's time covers schema sync, the copy (it reads every row of the source shards, as the
rebuild does, and writes only the moving buckets' third), the replay under load and the
cutover; the rebuild's is its copy alone, without load: the two are not the same work.

| measure | value |
|---|---|
| pgbench_accounts rows | {acc:,} |
| accounts on the new shard after the move | {new_acc:,} ({share:.1%} of the rows; target ≤ {1.1 / 3:.1%}: {'**met**' if share <= 1.1 / 3 else '**not met**'}) |
| history rows on the new shard after the move | {int(e['NEW_HISTORY']):,} |
| the move: `pgdog reshard --cutover`, start to exit | {float(e['MOVE_S']):.2f} s |
| the rebuild's copy: {int(e['REBUILD_ROWS']):,} accounts into 3 new shards | {float(e['REBUILD_S']):.2f} s |
| cutover pause (pgdog's `paused app` to `resumed app`) | {e['PAUSE']} ms |
| pgbench through pgdog: TPS, failed transactions | {float(e['TPS'] or 0):,.0f}, {e['FAILED']} (target 0: {'**met**' if e['FAILED'] == '0' else '**not met**'}) |
| cleanup: rows deleted from the old shards, time | {int(e['DELETED'] or 0):,} in {float(e['CLEANUP_S']):.2f} s |
| after: rows placed on another shard (`pgdog cleanup` count) / accounts | 0 / {int(e['FINAL']):,} (each once) |
""")
PY
)
replace_section "$OUT" "Adding a shard by moving buckets" "$SECTION"
echo "$SECTION"
