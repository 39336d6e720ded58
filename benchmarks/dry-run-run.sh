#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See
# router.sh: the cost of `dry_run` on the hot path. pgbench -S (select-only, 8 clients, simple
# and prepared protocol) on one server through three pgdogs started side by side:
#   plain      the database as a team runs it before planning shards (no [[sharded_tables]])
#   planned    the same with pgbench's [[sharded_tables]] declared (served by sharded sessions
#              of one shard, as a one-server database declared shardable is), for reference
#   dry run    planned + dry_run = true, dry_run_shards = 4: one-server sessions again, every
#              statement also routed by the planned layout and counted by shape
# Rounds alternated (order rotated), medians. Then pgdog's own CPU time per transaction, plain
# and dry run, at a fixed rate (RATE, default 5000/s). Replaces the "Dry run" section of
# benchmarks/results/router.md. Target: dry run >= 0.90 x plain TPS at 8 clients.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${DURATION:=8}" "${ROUNDS:=3}" "${CLIENTS:=8}" "${POOL:=16}" "${SCALE:=2}"
bench_init router
PLAIN_PORT=$(free_port)
PLANNED_PORT=$(free_port)
DRY_PORT=$(free_port)
"$PG_BIN/pgbench" -q -i -s "$SCALE" -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1

config() { # port [extra general KEY=VALUE...] ; then the database entry
  local port=$1
  shift
  toml_section general host=127.0.0.1 port="$port" default_pool_size="$POOL" auth_type=trust admin_password=bench "$@"
  toml_entry databases name=bench host=127.0.0.1 port="$PG_PG_PORT" database_name=postgres user=postgres
}
config "$PLAIN_PORT" > "$WORK/plain.toml"
{ config "$PLANNED_PORT"; toml_pgbench_sharding bench; } > "$WORK/planned.toml"
{ config "$DRY_PORT" dry_run=true dry_run_shards=4; toml_pgbench_sharding bench; } > "$WORK/dry.toml"
toml_entry users name=postgres database=bench > "$WORK/users.toml"
start_pgdog P1 "$WORK/plain.toml" "$WORK/users.toml" "$WORK/plain.log"
start_pgdog P2 "$WORK/planned.toml" "$WORK/users.toml" "$WORK/planned.log"
start_pgdog P3 "$WORK/dry.toml" "$WORK/users.toml" "$WORK/dry.log"
trap 'stop_pids $P1 $P2 $P3' EXIT
wait_port "$PLAIN_PORT" "$P1"
wait_port "$PLANNED_PORT" "$P2"
wait_port "$DRY_PORT" "$P3"

tps() { # port protocol
  local out
  if out=$("$PG_BIN/pgbench" -n -S -M "$2" -c "$CLIENTS" -j 2 -T "$DURATION" -h 127.0.0.1 -p "$1" -U postgres bench 2>&1); then
    echo "$out" | tps_of
  else
    echo "$out" | grep -m1 -iE 'error|fatal' >&2
    echo 0
  fi
}
: > "$WORK/dry-run.tsv"
for mode in simple prepared; do
  for round in $(seq 1 "$ROUNDS"); do
    order=(plain planned dry)
    for _ in $(seq 2 "$round"); do order=("${order[@]:1}" "${order[0]}"); done
    for who in "${order[@]}"; do
      case $who in plain) p=$PLAIN_PORT ;; planned) p=$PLANNED_PORT ;; dry) p=$DRY_PORT ;; esac
      t=$(tps "$p" "$mode")
      printf '%s\t%s\t%s\n' "$mode" "$who" "$t" >> "$WORK/dry-run.tsv"
      echo "mode=$mode round=$round $who=$t" >&2
    done
  done
done
# The same cost isolated from the machine's saturation: pgdog's own CPU time per transaction
# (utime + stime from /proc) at a fixed rate every pgdog keeps up with.
: "${RATE:=5000}"
for mode in simple prepared; do
  for round in $(seq 1 "$ROUNDS"); do
    for who in plain dry; do
      case $who in plain) p=$PLAIN_PORT pid=$P1 ;; dry) p=$DRY_PORT pid=$P3 ;; esac
      before=$(cpu_ticks "$pid")
      out=$("$PG_BIN/pgbench" -n -S -M "$mode" -c "$CLIENTS" -j 2 -T "$DURATION" -R "$RATE" \
        -h 127.0.0.1 -p "$p" -U postgres bench 2>&1) || true
      ticks=$(( $(cpu_ticks "$pid") - before ))
      tx=$(tx_of <<<"$out")
      printf 'cpu\t%s\t%s\t%s\t%s\n' "$mode" "$who" "$ticks" "${tx:-0}" >> "$WORK/dry-run.tsv"
      echo "mode=$mode round=$round $who ticks=$ticks tx=${tx:-0}" >&2
    done
  done
done
routes=$(PGPASSWORD=bench "$PG_BIN/psql" -X -At -F' | ' -h 127.0.0.1 -p "$DRY_PORT" -U admin -d admin \
  -c "SHOW ROUTES" | cut -d'|' -f3,4,8 | head -5)

section=$(python3 - "$WORK/dry-run.tsv" "$CLIENTS" "$DURATION" "$ROUNDS" "$routes" "$RATE" "$(getconf CLK_TCK)" <<'PY'
import sys, statistics
lines = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
rows = [l for l in lines if l[0] != "cpu"]
cpu = [l[1:] for l in lines if l[0] == "cpu"]
clients, duration, rounds, routes, rate, hz = sys.argv[2:8]
med = {}
for mode in ("simple", "prepared"):
    for who in ("plain", "planned", "dry"):
        v = [int(t) for m, w, t in rows if m == mode and w == who]
        med[mode, who] = statistics.median(v) if v else 0
r = lambda a, b: f"{a / b:.2f}x" if b else "n/a"
out = ["## Dry run: cost on the hot path", "",
       f"pgbench -S at {clients} clients, {duration} s per run, {rounds} rounds alternated (medians), one",
       "PostgreSQL 18 through three pgdogs side by side: **plain** (no `[[sharded_tables]]`),",
       "**planned** (pgbench's tables declared: sharded sessions of one shard, for reference) and",
       "**dry run** (planned + `dry_run = true`, `dry_run_shards = 4`: one-server sessions, each",
       "statement also routed by the 4-shard layout and counted by fingerprint).", "",
       "| protocol | plain TPS | planned TPS | dry run TPS | dry run / plain | dry run / planned | target (>= 0.90x plain) |",
       "|---|---|---|---|---|---|---|"]
for mode in ("simple", "prepared"):
    p, pl, d = med[mode, "plain"], med[mode, "planned"], med[mode, "dry"]
    ok = "met" if p and d / p >= 0.90 else "**missed**"
    out.append(f"| {mode} | {p:.0f} | {pl:.0f} | {d:.0f} | {r(d, p)} | {r(d, pl)} | {ok} |")
def us_per_tx(mode, who):
    v = [int(t) * 1e6 / int(hz) / int(n) for m, w, t, n in cpu if m == mode and w == who and int(n)]
    return statistics.median(v) if v else 0
out += ["", f"pgdog's own CPU time per transaction (utime + stime) at a fixed {rate} transactions/s,",
        f"{rounds} rounds alternated (medians): the dry run's cost without the machine's saturation.", "",
        "| protocol | plain µs/tx | dry run µs/tx | dry run extra |", "|---|---|---|---|"]
for mode in ("simple", "prepared"):
    p, d = us_per_tx(mode, "plain"), us_per_tx(mode, "dry")
    out.append(f"| {mode} | {p:.1f} | {d:.1f} | {d - p:+.1f} µs ({r(d, p)}) |")
out += ["", "The dry run's SHOW ROUTES afterwards (query | calls | verdict):", "", "```", routes, "```", "",
        "Command: `DRY_ONLY=1 bash benchmarks/router.sh` (this section only).", ""]
print("\n".join(out))
PY
)
replace_section "$OUT" "Dry run" "$section"
echo "$section"
