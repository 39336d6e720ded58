#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See floor.sh,
# whose header documents the knobs. Raw figures go to TSV files in $WORK; the Python at the end
# turns them into the "Floor" section of $OUT.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${RATE:=4000}" "${FIXED_DURATION:=10}" "${ROUNDS:=3}" "${DURATION:=8}"
: "${CG_SMALL:=400}" "${CG_LARGE:=2000}" "${POOL:=10}"
bench_init pooler  # OUT: results/pooler.md, whose "Floor" section this replaces
pgbouncer_anchor
ANCHOR_VER=$("$PGBOUNCER" --version | awk 'NR == 1 {print $2}')
RELAY="$ROOT/target/release/floor-relay"
"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1

PROXIES=(pgdog pgbouncer relay_select relay_poll relay_mio)
declare -A PORT PID
cleanup() { stop_pids "${PID[@]}"; }
trap cleanup EXIT

toml_entry users name=postgres database=postgres > "$WORK/users.toml"
echo '"postgres" ""' > "$WORK/userlist.txt"
chmod 644 "$WORK/userlist.txt"

# start NAME [WRAPPER...]: starts proxy NAME on a new port, under WRAPPER (valgrind) when given;
# sets PORT[NAME] and PID[NAME] (the proxy's own process: valgrind runs it in place).
start() {
  local name=$1 dir="$WORK/$1"
  shift
  mkdir -p "$dir"
  chmod 777 "$dir"
  PORT[$name]=$(free_port)
  case $name in
    pgdog)
      {
        toml_section general host=127.0.0.1 port="${PORT[$name]}" default_pool_size="$POOL" auth_type=trust workers=1
        toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres
      } > "$dir/pgdog.toml"
      RUST_LOG=warn "$@" "$ROOT/target/release/pgdog" --config "$dir/pgdog.toml" --users "$WORK/users.toml" \
        >> "$dir/log" 2>&1 &
      ;;
    pgbouncer)
      {
        pgbouncer_ini "${PORT[$name]}" "$POOL" "$dir"
        echo "max_prepared_statements = 200"
      } > "$dir/pgbouncer.ini"
      chmod 644 "$dir/pgbouncer.ini"
      # In the foreground (no -d), so that $! is PgBouncer itself (or valgrind running it).
      if [ "$(id -u)" = 0 ]; then
        (cd "$dir" && exec runuser -u "${PGDOG_PG_USER:-postgres}" -- "$@" "$PGBOUNCER" "$dir/pgbouncer.ini") >> "$dir/log" 2>&1 &
      else
        (cd "$dir" && exec "$@" "$PGBOUNCER" "$dir/pgbouncer.ini") >> "$dir/log" 2>&1 &
      fi
      ;;
    relay_*)
      "$@" "$RELAY" "${name#relay_}" "127.0.0.1:${PORT[$name]}" "127.0.0.1:$PG_PG_PORT" >> "$dir/log" 2>&1 &
      ;;
  esac
  PID[$name]=$!
  wait_port "${PORT[$name]}" "${PID[$name]}" || { cat "$dir/log" >&2; exit 1; }
}

# proc_pid NAME: the proxy's process (runuser's child when PgBouncer runs as the server user).
proc_pid() {
  local pid=${PID[$1]} child
  child=$(pgrep -P "$pid" | head -n 1 || true)
  if [ "$1" = pgbouncer ] && [ "$(id -u)" = 0 ] && [ -n "$child" ]; then echo "$child"; else echo "$pid"; fi
}

# pgb PORT PGBENCH_ARGS...: pgbench -n -S -M simple; sets TPS and TX.
pgb() {
  local port=$1 out
  shift
  out=$("$PG_BIN/pgbench" -n -S -M simple "$@" -h 127.0.0.1 -p "$port" -U postgres postgres 2>&1) ||
    { echo "pgbench failed: $out" >&2; exit 1; }
  TPS=$(tps_of <<<"$out")
  TX=$(tx_of <<<"$out")
}

ticks() { awk '{print $14, $15}' "/proc/$1/stat"; } # utime stime, clock ticks
TICK_US=$((1000000 / $(getconf CLK_TCK)))

for p in "${PROXIES[@]}"; do start "$p"; done
for p in "${PROXIES[@]}"; do pgb "${PORT[$p]}" -c 8 -j 2 -T 1; done # warm-up

printf 'round\tproxy\ttps\ttx\tuser\tsystem\n' > "$WORK/fixed.tsv"
for round in $(seq "$ROUNDS"); do
  for i in "${!PROXIES[@]}"; do
    p=${PROXIES[$(((i + round - 1) % ${#PROXIES[@]}))]}
    pid=$(proc_pid "$p")
    read -r u0 s0 < <(ticks "$pid")
    pgb "${PORT[$p]}" -R "$RATE" -c 8 -j 2 -T "$FIXED_DURATION"
    read -r u1 s1 < <(ticks "$pid")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$p" "$TPS" "$TX" "$((u1 - u0))" "$((s1 - s0))" >> "$WORK/fixed.tsv"
    echo "fixed round=$round $p: $TPS tps, user $((u1 - u0)) system $((s1 - s0)) ticks" >&2
  done
done

printf 'proxy\ttps\ttx\tuser\tsystem\n' > "$WORK/saturated.tsv"
for p in "${PROXIES[@]}"; do
  pid=$(proc_pid "$p")
  read -r u0 s0 < <(ticks "$pid")
  pgb "${PORT[$p]}" -c 8 -j 2 -T "$DURATION"
  read -r u1 s1 < <(ticks "$pid")
  printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$TPS" "$TX" "$((u1 - u0))" "$((s1 - s0))" >> "$WORK/saturated.tsv"
  echo "saturated $p: $TPS tps" >&2
done
for p in "${PROXIES[@]}"; do stop_pids "${PID[$p]}"; done
PID=()

# Under callgrind: one proxy at a time, two runs each.
printf 'proxy\ttx\tinstructions\tallocations\n' > "$WORK/callgrind.tsv"
for p in "${PROXIES[@]}"; do
  for n in "$CG_SMALL" "$CG_LARGE"; do
    out="$WORK/$p/callgrind.$n"
    rm -f "$out"
    start "$p" valgrind --tool=callgrind --callgrind-out-file="$out" --trace-children=no
    pgb "${PORT[$p]}" -c 8 -j 2 -t $((n / 8))
    # SIGINT: pgdog and PgBouncer shut down on it. The relays have no handler and run in the
    # background of a script, where SIGINT is ignored: SIGTERM ends them, and valgrind writes
    # the counts of a program a signal ends.
    sig=INT
    [[ $p != relay_* ]] || sig=TERM
    # Under runuser (PgBouncer as root), only its child: runuser kills its child 2 s after a
    # signal of its own, which could cut valgrind's writing short.
    kill -"$sig" "$(proc_pid "$p")" 2>/dev/null || true
    wait "${PID[$p]}" 2>/dev/null || true
    PID=()
    read -r ir allocs < <(python3 "$ROOT/benchmarks/callgrind.py" "$out")
    printf '%s\t%s\t%s\t%s\n' "$p" "$TX" "$ir" "$allocs" >> "$WORK/callgrind.tsv"
    echo "callgrind $p: $TX tx, $ir instructions, $allocs allocations" >&2
  done
done

export WORK OUT RATE FIXED_DURATION ROUNDS DURATION TICK_US ANCHOR_VER CG_SMALL CG_LARGE POOL
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no -- pgdog benchmarks/src 2>/dev/null)" ] || COMMIT="$COMMIT with uncommitted changes"
export COMMIT
SECTION=$(python3 - <<'PY'
import csv, os, statistics
e = os.environ
work, tick = e["WORK"], int(e["TICK_US"])
names = {
    "pgdog": "pgdog (workers = 1)",
    "pgbouncer": f"PgBouncer {e['ANCHOR_VER']}",
    "relay_select": "floor: tokio, `select!`",
    "relay_poll": "floor: tokio, one hand-written poll",
    "relay_mio": "floor: raw mio",
}
def rows(n):
    with open(f"{work}/{n}.tsv") as f:
        return list(csv.DictReader(f, delimiter="\t"))
fixed = {}
for r in rows("fixed"):
    tx = int(r["tx"]) or 1
    fixed.setdefault(r["proxy"], []).append((int(r["user"]) * tick / tx, int(r["system"]) * tick / tx))
sat = {r["proxy"]: r for r in rows("saturated")}
cg = {}
for r in rows("callgrind"):
    cg.setdefault(r["proxy"], []).append((int(r["tx"]), int(r["instructions"]), int(r["allocations"])))
def med(xs):
    return statistics.median(xs) if xs else None
anchor_total = None
if "pgbouncer" in fixed:
    anchor_total = med([u + s for u, s in fixed["pgbouncer"]])
anchor_tps = float(sat["pgbouncer"]["tps"]) if "pgbouncer" in sat else None
out = []
w = out.append
w("## Floor: bare relays next to PgBouncer and pgdog\n")
w(f"`bash benchmarks/floor.sh` (commit {e['COMMIT']}): `pgbench -S -M simple`, one PG18, pool {e['POOL']} for "
  "pgdog and PgBouncer (transaction mode); the relays give each client a server connection of its own "
  "and copy bytes, parsing nothing (`benchmarks/src/bin/floor-relay.rs`). What pgdog spends above "
  "them is its own work.\n")
w(f"| proxy | fixed {e['RATE']}/s: CPU µs per tx (user + kernel), median of {e['ROUNDS']} | / PgBouncer | "
  f"saturated, 8 clients: TPS | / PgBouncer | CPU µs per tx | instructions per tx | allocations per tx |")
w("|---|---|---|---|---|---|---|---|")
for p in names:
    f = fixed.get(p, [])
    u, s = med([x[0] for x in f]), med([x[1] for x in f])
    total = med([x[0] + x[1] for x in f])
    r = sat.get(p)
    tps = float(r["tps"]) if r else None
    satcpu = (int(r["user"]) + int(r["system"])) * tick / max(int(r["tx"]), 1) if r else None
    c = sorted(cg.get(p, []))
    ipt = apt = "n/a"
    if len(c) == 2 and c[1][0] > c[0][0]:
        d = c[1][0] - c[0][0]
        ipt = f"{(c[1][1] - c[0][1]) / d:,.0f}"
        apt = f"{max(0.0, (c[1][2] - c[0][2]) / d):.2f}"  # (-0.00: one allocation fewer in the longer run)
    fx = "n/a" if total is None else f"{total:.1f} ({u:.1f} + {s:.1f})"
    rt = f"{total / anchor_total:.2f}x" if total and anchor_total else "n/a"
    st = f"{tps / anchor_tps:.2f}x" if tps and anchor_tps else "n/a"
    sc = "n/a" if satcpu is None else f"{satcpu:.1f}"
    w(f"| {names[p]} | {fx} | {rt} | {'n/a' if tps is None else f'{tps:,.0f}'} | {st} | {sc} | {ipt} | {apt} |")
w("")
w(f"Instructions and allocations: user-space, under `valgrind --tool=callgrind`, the difference "
  f"between runs of {e['CG_SMALL']} and {e['CG_LARGE']} transactions at 8 clients divided by the "
  "difference in transactions (start-up and connections cancel out); allocations are calls of "
  "malloc, calloc, realloc and posix_memalign. Kernel time is most of every proxy's CPU at the "
  "fixed rate: the two reads and two writes per transaction and the wake-ups cost the same in all of them.\n")
print("\n".join(out))
PY
)
replace_section "$OUT" "Floor" "$SECTION"
echo "$SECTION"
