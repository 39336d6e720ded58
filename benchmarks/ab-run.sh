#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See ab.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
bench_init ab
: "${DURATION:=6}" "${ROUNDS:=3}" "${RATE:=4000}" "${MODES:=simple extended prepared}" "${WORKERS:=1}"
"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1
toml_entry users name=postgres database=postgres > "$WORK/users.toml"
declare -A PORT PID
for side in A B; do
  PORT[$side]=$(free_port)
  {
    toml_section general host=127.0.0.1 port="${PORT[$side]}" default_pool_size=20 auth_type=trust workers="$WORKERS"
    toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres
  } > "$WORK/$side.toml"
  binary=$([ "$side" = A ] && echo "$1" || echo "$2")
  RUST_LOG=warn "$binary" --config "$WORK/$side.toml" --users "$WORK/users.toml" >> "$WORK/$side.log" 2>&1 &
  PID[$side]=$!
done
trap 'stop_pids "${PID[A]}" "${PID[B]}"' EXIT
wait_port "${PORT[A]}" "${PID[A]}"
wait_port "${PORT[B]}" "${PID[B]}"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
# one SIDE MODE [RATE]: "TPS CPU_US" of one run.
one() {
  local before after out tx rate=()
  [ -n "${3:-}" ] && rate=(-R "$3")
  before=$(cpu "${PID[$1]}")
  out=$("$PG_BIN/pgbench" -n -S -M "$2" -c 8 -j 2 -T "$DURATION" "${rate[@]}" -h 127.0.0.1 -p "${PORT[$1]}" -U postgres postgres 2>&1)
  after=$(cpu "${PID[$1]}")
  tx=$(tx_of <<<"$out")
  python3 -c "import sys; b,a,t,k=map(int,sys.argv[1:5]); print(sys.argv[5], f'{(a-b)*k/t:.1f}')" "$before" "$after" "$tx" "$TICK_US" "$(echo "$out" | tps_of)"
}
echo "| protocol | load | A TPS | B TPS | B / A | A CPU µs/tx | B CPU µs/tx | B / A |"
echo "|---|---|---|---|---|---|---|---|"
for mode in $MODES; do
  for load in saturated "$RATE/s"; do
    rate=$([ "$load" = saturated ] && echo "" || echo "$RATE")
    ta=() tb=() ca=() cb=()
    for _ in $(seq "$ROUNDS"); do
      read -r t c <<<"$(one A "$mode" "$rate")"; ta+=("$t"); ca+=("$c")
      read -r t c <<<"$(one B "$mode" "$rate")"; tb+=("$t"); cb+=("$c")
    done
    python3 - "$mode" "$load" "${ta[*]}" "${tb[*]}" "${ca[*]}" "${cb[*]}" <<'PY'
import sys, statistics as s
mode, load, ta, tb, ca, cb = sys.argv[1], sys.argv[2], *[[float(x) for x in a.split()] for a in sys.argv[3:7]]
m = lambda v: s.median(v)
print(f"| {mode} | {load} | {m(ta):.0f} | {m(tb):.0f} | {m(tb)/m(ta):.2f}x | {m(ca):.1f} | {m(cb):.1f} | {m(cb)/m(ca):.2f}x |")
PY
  done
done
echo
echo "Medians of $ROUNDS alternated runs of ${DURATION} s, pgbench -S -c 8 -j 2, pools of 20; A = $1, B = $2."
