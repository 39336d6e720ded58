#!/usr/bin/env bash
# Runs inside `pgdog-topology single` (PG_PG_PORT, PG_BIN, PGDOG_TOPOLOGY_DIR). See pooler.sh,
# whose header documents the knobs. Raw figures go to TSV files in $WORK; the Python at the end
# turns them into $OUT.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${DURATION:=8}" "${FIXED_DURATION:=10}" "${RATE:=4000}" "${ROUNDS:=3}" "${POOL:=10}"
: "${CLIENTS:=1 8 64 500}" "${FIXED_MODES:=simple extended prepared}" "${STRACE_DURATION:=5}" "${PGBOUNCER_OLD:=/usr/sbin/pgbouncer}"
bench_init pooler
pgbouncer_anchor
for bin in "$PGBOUNCER" "$PGBOUNCER_OLD"; do
  as_server "$bin" --version >/dev/null || { echo "the server user cannot run $bin" >&2; exit 1; }
done
ANCHOR_VER=$("$PGBOUNCER" --version | awk 'NR == 1 {print $2}')
OLD_VER=$("$PGBOUNCER_OLD" --version | awk 'NR == 1 {print $2}')

"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$PG_PG_PORT" -U postgres postgres >/dev/null 2>&1

# The proxies, by name: PORT, PID (PgBouncer's after it is up) and the processes to stop.
declare -A PORT PID
PORT[direct]=$PG_PG_PORT
STARTED=()
cleanup() {
  stop_pids "${STARTED[@]}"
  local f
  for f in "$WORK"/*/pgbouncer.pid; do
    if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
}
trap cleanup EXIT

# run_pgdog NAME [KEY=VALUE...]: starts a pgdog in $WORK/NAME, [general] with these extra keys. The
# admin database (password bench) answers SHOW CONFIG.
toml_entry users name=postgres database=postgres > "$WORK/users.toml"
run_pgdog() {
  local name=$1 dir="$WORK/$1"
  shift
  mkdir -p "$dir"
  PORT[$name]=$(free_port)
  {
    toml_section general host=127.0.0.1 port="${PORT[$name]}" default_pool_size="$POOL" auth_type=trust admin_password=bench "$@"
    if [ "$name" = sharded ]; then
      # Two shards on this server, half the pool each, pgbench's tables split by aid.
      for shard in 0 1; do
        toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres \
          database_name="shard_$shard" shard="$shard" pool_size="$((POOL / 2))"
      done
      toml_pgbench_sharding postgres
    else
      toml_entry databases name=postgres host=127.0.0.1 port="$PG_PG_PORT" user=postgres
    fi
  } > "$dir/pgdog.toml"
  local pid
  start_pgdog pid "$dir/pgdog.toml" "$WORK/users.toml" "$dir/pgdog.log"
  PID[$name]=$pid
  STARTED+=("$pid")
}
workers=()
[ -z "${WORKERS:-}" ] || workers=(workers="$WORKERS")
run_pgdog pgdog "${workers[@]}"
run_pgdog pgdog_w1 workers=1
run_pgdog pgdog_w2 workers=2
# The same database with the parser off (no reset query: the raw pooling baseline), and the
# same rows in 2 shards on this server (databases shard_0 and shard_1, loaded through pgdog
# below): its router reads each query's key.
run_pgdog noparse "${workers[@]}" query_parser=false server_reset_query=""
for shard in 0 1; do psql_at "$PG_PG_PORT" -c "CREATE DATABASE shard_$shard" >/dev/null; done
run_pgdog sharded "${workers[@]}"

# run_pgbouncer NAME BINARY: starts that PgBouncer in transaction mode with pgdog's pool size
# (with max_prepared_statements = 200 where the version has it: 1.21 and later).
echo '"postgres" ""' > "$WORK/userlist.txt"
run_pgbouncer() {
  local name=$1 bin=$2 dir="$WORK/$1" version
  mkdir -p "$dir"
  chmod 777 "$dir"
  PORT[$name]=$(free_port)
  version=$("$bin" --version | awk 'NR == 1 {print $2}')
  {
    pgbouncer_ini "${PORT[$name]}" "$POOL" "$dir"
    echo "pidfile = $dir/pgbouncer.pid"
  } > "$dir/pgbouncer.ini"
  if python3 -c "import sys; sys.exit(tuple(map(int, sys.argv[1].split('.')[:2])) < (1, 21))" "$version"; then
    echo "max_prepared_statements = 200" >> "$dir/pgbouncer.ini"
  fi
  chmod 644 "$dir/pgbouncer.ini" "$WORK/userlist.txt"
  as_server "$bin" -d "$dir/pgbouncer.ini"
}
run_pgbouncer pgb "$PGBOUNCER"
run_pgbouncer pgb_old "$PGBOUNCER_OLD"

for name in pgdog pgdog_w1 pgdog_w2 noparse sharded; do wait_port "${PORT[$name]}" "${PID[$name]}"; done
"$PG_BIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "${PORT[sharded]}" -U postgres postgres > "$WORK/sharded.init.log" 2>&1 \
  || { cat "$WORK/sharded.init.log" >&2; exit 1; }
for name in pgb pgb_old; do
  wait_port "${PORT[$name]}"
  PID[$name]=$(cat "$WORK/$name/pgbouncer.pid")
done
# The main pgdog's effective workers (its default unless WORKERS is set).
PGDOG_WORKERS=$(PGPASSWORD=bench "$PG_BIN/psql" -X -At -h 127.0.0.1 -p "${PORT[pgdog]}" -U admin -d admin \
  -c "SHOW CONFIG" 2>/dev/null | awk -F'|' '$1 == "workers" {print $2}') || true

TICK_US=$((1000000 / $(getconf CLK_TCK)))
cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; } # utime stime of all threads, clock ticks
ctxsw() { # voluntary + nonvoluntary context switches summed over the live threads
  { cat "/proc/$1/task/"*/status 2>/dev/null || true; } |
    awk '/^(non)?voluntary_ctxt_switches:/ {s += $2} END {print s + 0}'
}
tids() { find "/proc/$1/task" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort; }

# pgb PORT PGBENCH_ARGS...: pgbench -n -S against 127.0.0.1:PORT. Sets TPS, TX (transactions),
# LAT (average latency, ms) or, when it fails, TPS=failed and ERR (its first error, short).
pgb() {
  local port=$1 out
  shift
  ERR=""
  if out=$("$PG_BIN/pgbench" -n -S "$@" -h 127.0.0.1 -p "$port" -U postgres postgres 2>&1); then
    TPS=$(tps_of <<<"$out")
    TX=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
    LAT=$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' <<<"$out")
  else
    TPS=failed TX=0 LAT=""
    ERR=$(grep -m1 -oE '(ERROR|FATAL): .*' <<<"$out" || grep -m1 -iE 'error|fatal' <<<"$out" || echo "exit status $?")
    ERR=$(sed -E 's/^(ERROR|FATAL): +//; s/[|\t]/ /g' <<<"$ERR" | cut -c1-60)
  fi
}

# 1. Saturated: every protocol and client count through each target; the 1-client simple runs
# also log each transaction's latency (pgbench -l).
printf 'mode\tclients\ttarget\ttps\ttx\tticks\terror\n' > "$WORK/saturated.tsv"
for mode in simple extended prepared; do
  for c in $CLIENTS; do
    for t in direct pgdog pgb pgb_old; do
      log=()
      [ "$mode/$c" != simple/1 ] || log=(-l --log-prefix="$WORK/latency.$t")
      pid=${PID[$t]:-}
      before=$([ -z "$pid" ] || awk '{print $14 + $15}' "/proc/$pid/stat")
      pgb "${PORT[$t]}" -M "$mode" -c "$c" -j 2 -T "$DURATION" "${log[@]}"
      after=$([ -z "$pid" ] || awk '{print $14 + $15}' "/proc/$pid/stat")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$c" "$t" "$TPS" "$TX" "$((${after:-0} - ${before:-0}))" "$ERR" >> "$WORK/saturated.tsv"
      echo "saturated mode=$mode clients=$c $t: $TPS tps $ERR" >&2
    done
  done
done

# 2. Fixed rate: ROUNDS rounds, the proxies alternated (the order rotated each round); then one
# run per proxy under strace for the syscalls.
proxies() { # MODE -> the proxies measured at the fixed rate in that protocol
  case $1 in
    simple) echo pgdog pgb pgb_old pgdog_w1 pgdog_w2 ;;
    *) echo pgdog pgb ;;
  esac
}
for mode in $FIXED_MODES; do # warm-up: server connections and prepared statements in place
  for p in $(proxies "$mode"); do pgb "${PORT[$p]}" -M "$mode" -c 8 -j 2 -T 1; done
done
printf 'round\tmode\tproxy\ttps\ttx\tuser\tsystem\tcs\tthreads_gone\tthreads_new\tlatency\terror\n' > "$WORK/fixed.tsv"
for round in $(seq "$ROUNDS"); do
  for mode in $FIXED_MODES; do
    read -ra ps <<<"$(proxies "$mode")"
    for i in "${!ps[@]}"; do
      p=${ps[$(((i + round - 1) % ${#ps[@]}))]}
      pid=${PID[$p]}
      read -r u0 s0 < <(cpu_ticks "$pid")
      cs0=$(ctxsw "$pid")
      t0=$(tids "$pid")
      pgb "${PORT[$p]}" -M "$mode" -R "$RATE" -c 8 -j 2 -T "$FIXED_DURATION"
      read -r u1 s1 < <(cpu_ticks "$pid")
      cs1=$(ctxsw "$pid")
      t1=$(tids "$pid")
      gone=$(comm -23 <(echo "$t0") <(echo "$t1") | wc -l)
      new=$(comm -13 <(echo "$t0") <(echo "$t1") | wc -l)
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$mode" "$p" "$TPS" "$TX" \
        "$((u1 - u0))" "$((s1 - s0))" "$((cs1 - cs0))" "$gone" "$new" "$LAT" "$ERR" >> "$WORK/fixed.tsv"
      echo "fixed round=$round mode=$mode $p: $TPS tps, user $((u1 - u0)) system $((s1 - s0)) ticks, $((cs1 - cs0)) cs, $TX tx $ERR" >&2
    done
  done
done
printf 'mode\tproxy\ttps\ttx\tlog\n' > "$WORK/strace.tsv"
if command -v strace >/dev/null; then
  for mode in $FIXED_MODES; do
    for p in $(proxies "$mode"); do
      slog="$WORK/strace.$mode.$p"
      strace -f -c -p "${PID[$p]}" -o "$slog" 2>/dev/null &
      st=$!
      sleep 1
      pgb "${PORT[$p]}" -M "$mode" -R "$RATE" -c 8 -j 2 -T "$STRACE_DURATION"
      kill -INT "$st" 2>/dev/null || true
      wait "$st" 2>/dev/null || true
      printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$p" "$TPS" "$TX" "$slog" >> "$WORK/strace.tsv"
      echo "strace mode=$mode $p: $TPS tps" >&2
    done
  done
fi

# 3. The sharded session: the 2-shard database routing `pgbench -S` by its key vs the same
# rows in one database with query_parser = false, at 8 clients, ROUNDS rounds alternated (the
# order swapped each round), with each pgdog's CPU per transaction.
printf 'round\tmode\ttarget\ttps\ttx\tticks\n' > "$WORK/sharded.tsv"
for round in $(seq "$ROUNDS"); do
  for mode in simple extended; do
    order="noparse sharded"
    [ $((round % 2)) = 1 ] || order="sharded noparse"
    for t in $order; do
      before=$(awk '{print $14 + $15}' "/proc/${PID[$t]}/stat")
      pgb "${PORT[$t]}" -M "$mode" -c 8 -j 2 -T "$DURATION"
      after=$(awk '{print $14 + $15}' "/proc/${PID[$t]}/stat")
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$mode" "$t" "$TPS" "$TX" "$((after - before))" >> "$WORK/sharded.tsv"
      echo "sharded round=$round mode=$mode $t: $TPS tps $ERR" >&2
    done
  done
done

# 4. RSS of pgdog at rest, with 1,000 and 10,000 idle clients (each ran one query, then holds
# its connection), and after they left; in kB.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
rss() { awk '/VmRSS/ {print $2}' "/proc/${PID[pgdog]}/status"; }
RSS_REST=$(rss)
idle() { # N: sets IDLE_RSS (kB) and IDLE_READY (what idle-clients printed once all were connected)
  coproc IDLE { "$ROOT/target/release/idle-clients" "host=127.0.0.1 port=${PORT[pgdog]} user=postgres dbname=postgres" "$1"; }
  read -r IDLE_READY <&"${IDLE[0]}" || IDLE_READY="failed"
  IDLE_RSS=$(rss)
  local in=${IDLE[1]}
  exec {in}>&- # idle-clients exits at the end of its input
  wait "$IDLE_PID" 2>/dev/null || true
}
idle 1000
RSS_1K=$IDLE_RSS READY_1K=$IDLE_READY
idle 10000
RSS_10K=$IDLE_RSS READY_10K=$IDLE_READY
for _ in $(seq 1 50); do [ "$(grep -c . "/proc/${PID[pgdog]}/net/tcp" 2>/dev/null || echo 0)" -lt 200 ] && break; sleep 0.1; done
RSS_AFTER=$(rss)

export WORK OUT DURATION FIXED_DURATION RATE ROUNDS POOL CLIENTS FIXED_MODES STRACE_DURATION TICK_US
export ANCHOR_VER OLD_VER PGBOUNCER PGBOUNCER_OLD PGDOG_WORKERS RSS_REST RSS_1K RSS_10K RSS_AFTER READY_1K READY_10K
PG_VERSION=$(psql_at "$PG_PG_PORT" -c "SHOW server_version") COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
# A run of uncommitted code says so (the table is then not that commit's).
[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no -- pgdog 2>/dev/null)" ] || COMMIT="$COMMIT with uncommitted changes"
PGDOG_BIN=$(readlink -f "$ROOT/target/release/pgdog")
export PG_VERSION COMMIT PGDOG_BIN
python3 - <<'PY'
import csv, glob, os, re, statistics

e = os.environ
work, tick = e["WORK"], int(e["TICK_US"])
rate, rounds = int(e["RATE"]), int(e["ROUNDS"])
anchor, old = f"PgBouncer {e['ANCHOR_VER']}", f"PgBouncer {e['OLD_VER']}"
anchor_is_125 = e["ANCHOR_VER"].startswith("1.25")
workers = e.get("PGDOG_WORKERS") or "?"
pgdog = f"pgdog (workers = {workers}, {'set by WORKERS' if e.get('WORKERS') else 'the default'})"

def rows(name):
    with open(f"{work}/{name}.tsv") as f:
        return list(csv.DictReader(f, delimiter="\t"))

def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None

def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"

def fmt(v, d=1):
    return "n/a" if v is None else f"{v:.{d}f}"

binary = ""
if e.get("SKIP_BUILD") == "1":
    import datetime
    built = datetime.datetime.fromtimestamp(os.path.getmtime(e["PGDOG_BIN"]), datetime.timezone.utc)
    binary = f" (SKIP_BUILD=1: the binary as found, built {built:%Y-%m-%d %H:%M} UTC)"
out = []
w = out.append
w("# Pooler benchmark\n")
if anchor_is_125:
    anchor_line = f"The anchor is **{anchor}** ({e['PGBOUNCER']}, {os.environ.get('PGBOUNCER_NOTE', '')})"
else:
    anchor_line = (f"**The anchor is {anchor}, not PgBouncer 1.25** ({e['PGBOUNCER']}, "
                   f"{os.environ.get('PGBOUNCER_NOTE', '')}): the targets are meant against 1.25")
w(f"""One run on one machine (2 cores: pgbench, the poolers and PostgreSQL share them, so compare the
ratios), PostgreSQL {e['PG_VERSION']}, `pgbench -i -s 10`, pgdog at commit {e['COMMIT']}{binary}, {pgdog}.
{anchor_line}; {old} ({e['PGBOUNCER_OLD']}, Debian's) is a second comparison. Both PgBouncers in
transaction mode{', ' + anchor + ' with `max_prepared_statements = 200`' if anchor_is_125 else ''}; every pooler has {e['POOL']} server connections.

Command: `bash benchmarks/pooler.sh` (knobs in its header; this run: DURATION={e['DURATION']},
FIXED_DURATION={e['FIXED_DURATION']}, RATE={rate}, ROUNDS={rounds}, STRACE_DURATION={e['STRACE_DURATION']}).
""")

# Saturated.
sat = {(r["mode"], int(r["clients"]), r["target"]): r for r in rows("saturated")}
def tps(r):
    return num(r["tps"]) if r["tps"] != "failed" else None
def tps_cell(r):
    return r["tps"] if r["tps"] != "failed" else f"failed: {r['error']}"
def cpu(r):
    tx = num(r["tx"])
    return int(r["ticks"]) * tick / tx if tx else None
w(f"""## Saturated

Each cell is `pgbench -n -S -M <mode> -c <clients> -j 2 -T {e['DURATION']}` TPS. CPU: the proxy
process' utime + stime (all threads, /proc/PID/stat) over the run divided by its transactions, µs.

| workload | clients | direct | pgdog | {anchor} | {old} | pgdog / {anchor} | pgdog / direct | pgdog CPU µs/tx | {anchor} CPU µs/tx | CPU pgdog / {anchor} |
|---|---|---|---|---|---|---|---|---|---|---|""")
sat_ratio = {}
clients = [int(c) for c in e["CLIENTS"].split()]
for mode in ("simple", "extended", "prepared"):
    for c in clients:
        d, g, b, o = (sat[(mode, c, t)] for t in ("direct", "pgdog", "pgb", "pgb_old"))
        sat_ratio[(mode, c)] = (tps(g) / tps(b)) if tps(g) is not None and tps(b) else None
        w(f"| -S {mode} | {c} | {tps_cell(d)} | {tps_cell(g)} | {tps_cell(b)} | {tps_cell(o)} | "
          f"{ratio(tps(g), tps(b))} | {ratio(tps(g), tps(d))} | {fmt(cpu(g))} | {fmt(cpu(b))} | {ratio(cpu(g), cpu(b))} |")

def latency(t):
    v = []
    for path in glob.glob(f"{work}/latency.{t}.*"):
        with open(path) as f:
            v += [int(l.split()[2]) for l in f if l.strip()]
    v.sort()
    return f"p50 {v[len(v) // 2]} / p99 {v[int(len(v) * 0.99)]}" if v else "n/a"
w(f"""
Latency at 1 client (the `-S simple -c 1` runs above, `pgbench -l`, per transaction, µs): direct
{latency('direct')}; pgdog {latency('pgdog')}; {anchor} {latency('pgb')}; {old} {latency('pgb_old')}.
""")

# Fixed rate.
fixed = rows("fixed")
calls = {}
for r in rows("strace"):
    counts = {}
    try:
        with open(r["log"]) as f:
            for line in f:
                p = line.split()
                if len(p) >= 5 and re.match(r"^[0-9.]+$", p[0]) and p[-1] != "total":
                    counts[p[-1]] = counts.get(p[-1], 0) + int(p[3])
    except OSError:
        pass
    tx = num(r["tx"])
    calls[(r["mode"], r["proxy"])] = (counts, tx, r["tps"])
names = {"pgdog": pgdog, "pgb": anchor, "pgb_old": old, "pgdog_w1": "pgdog workers = 1",
         "pgdog_w2": "pgdog workers = 2"}
med = statistics.median
fixed_total = {}
churn = 0
w(f"""## Fixed rate

`pgbench -n -S -M <mode> -R {rate} -c 8 -j 2 -T {e['FIXED_DURATION']}`: the proxies do the same work at
the same pace, so the CPU they spend per transaction is their own cost. {rounds} round{'s' if rounds != 1 else ''}, the proxies
alternated (order rotated each round); each column is the median over the rounds (the range of the
total in parentheses). CPU: the process' utime (user) and stime (kernel) from /proc/PID/stat
(all threads), per transaction. Context switches: voluntary + nonvoluntary summed over
/proc/PID/task/*/status, per transaction. Syscalls: a separate {e['STRACE_DURATION']} s run at the
same rate under `strace -f -c -p PID` (strace slows the proxy: counts only), calls per
transaction; epoll_wait includes epoll_pwait.

| protocol | proxy | TPS | user µs/tx | kernel µs/tx | total µs/tx (range) | total / {anchor} | ctx switches/tx | syscalls/tx | recvfrom | sendto | epoll_wait | futex |
|---|---|---|---|---|---|---|---|---|---|---|---|---|""")
modes = e["FIXED_MODES"].split()
stats = {}  # (mode, proxy) -> medians, or None when every run failed
for r in fixed:
    tx = num(r["tx"])
    runs = stats.setdefault((r["mode"], r["proxy"]), [])
    if not tx:
        runs.append(None)
        continue
    churn += int(r["threads_gone"]) + int(r["threads_new"])
    u, s = int(r["user"]) * tick / tx, int(r["system"]) * tick / tx
    runs.append((num(r["tps"]), u, s, u + s, int(r["cs"]) / tx))
for key, runs in stats.items():
    ok = [x for x in runs if x is not None]
    if ok:
        fixed_total[key] = med([x[3] for x in ok])
for mode in modes:
    for p in ("pgdog", "pgb", "pgb_old", "pgdog_w1", "pgdog_w2"):
        runs = stats.get((mode, p))
        if runs is None:
            continue
        ok = [x for x in runs if x is not None]
        if not ok:
            w(f"| {mode} | {names[p]} | failed | | | | | | | | | | |")
            continue
        t, u, s, tot, cs = (med([x[i] for x in ok]) for i in range(5))
        lo, hi = min(x[3] for x in ok), max(x[3] for x in ok)
        held = "" if t >= 0.95 * rate else " (rate not held)"
        failed = f", {len(runs) - len(ok)} of {len(runs)} runs failed" if len(ok) < len(runs) else ""
        cnt, stx, _ = calls.get((mode, p), ({}, None, None))
        def per_tx(*syscalls):
            return fmt(sum(cnt.get(n, 0) for n in syscalls) / stx, 2) if stx and cnt else "n/a"
        total_calls = fmt(sum(cnt.values()) / stx, 2) if stx and cnt else "n/a"
        w(f"| {mode} | {names[p]} | {t:.0f}{held}{failed} | {u:.1f} | {s:.1f} | {tot:.1f} ({lo:.1f}–{hi:.1f}) | "
          f"{ratio(tot, fixed_total.get((mode, 'pgb')))} | {cs:.2f} | {total_calls} | {per_tx('recvfrom')} | "
          f"{per_tx('sendto')} | {per_tx('epoll_wait', 'epoll_pwait', 'epoll_pwait2')} | {per_tx('futex')} |")
w("")
if calls:
    w(f"TPS of the runs under strace (target {rate}): " + "; ".join(
        f"{m}: " + ", ".join(f"{names[p]} {calls[(m, p)][2]}" for p in names if (m, p) in calls) for m in modes) + ".\n")
if churn:
    w(f"Threads came or went during the fixed-rate runs ({churn} in all): the context switches of a "
      "thread that exited before the end of a run are missing from its figure.\n")
w1, w2 = fixed_total.get(("simple", "pgdog_w1")), fixed_total.get(("simple", "pgdog_w2"))
if w1 and w2:
    best = 1 if w1 < w2 else 2
    w(f"Workers, at {rate} tx/s simple: pgdog costs {w1:.1f} µs/tx with `workers = 1` and {w2:.1f} with "
      f"`workers = 2` (the main instance, workers = {workers}: {fixed_total.get(('simple', 'pgdog'), 0):.1f}); "
      f"the lower CPU per transaction is `workers = {best}` ({ratio(min(w1, w2), max(w1, w2))} of the other).\n")

# The sharded session.
sharded = {}
for r in rows("sharded"):
    t, tx = num(r["tps"]), num(r["tx"])
    cpu = int(r["ticks"]) * tick / tx if tx else None
    sharded.setdefault((r["mode"], r["target"]), []).append((t, cpu))
def sharded_med(mode, target, i):
    vals = [x[i] for x in sharded.get((mode, target), []) if x[i] is not None]
    return med(vals) if vals else None
w(f"""## Sharded session

`pgbench -n -S -M <mode> -c 8 -j 2 -T {e['DURATION']}` through pgdog over 2 shards on this server
(databases shard_0 and shard_1, pool {int(e['POOL']) // 2} each, pgbench_accounts split by aid, loaded
through pgdog; the router reads each query's key, in simple mode a literal) and through pgdog
over the same rows in one database with `query_parser = false` (pool {e['POOL']}). {rounds} rounds,
the two alternated; medians (TPS, and each pgdog's CPU per transaction in µs).

| protocol | parser off | 2 shards, routed | ratio | CPU µs/tx parser off | CPU µs/tx 2 shards |
|---|---|---|---|---|---|""")
sharded_ratio = {}
for mode in ("simple", "extended"):
    off, on = sharded_med(mode, "noparse", 0), sharded_med(mode, "sharded", 0)
    sharded_ratio[mode] = on / off if on and off else None
    w(f"| {mode} | {fmt(off, 0)} | {fmt(on, 0)} | {ratio(on, off)} | "
      f"{fmt(sharded_med(mode, 'noparse', 1))} | {fmt(sharded_med(mode, 'sharded', 1))} |")

# RSS.
mib = lambda kb: f"{int(kb) / 1024:.0f}"
rss_1k_mb = int(e["RSS_1K"]) * 1024 / 1e6
w(f"""
## Memory

pgdog RSS (MiB): {mib(e['RSS_REST'])} at rest, {mib(e['RSS_1K'])} ({e['READY_1K']}) with 1,000 idle clients,
{mib(e['RSS_10K'])} ({e['READY_10K']}) with 10,000, {mib(e['RSS_AFTER'])} after they left.
""")

# Targets.
w(f"""## Targets (issue 47)

Fixed rate ({rate}/s, 8 clients): total CPU per transaction ≤ 0.9x PgBouncer 1.25 for simple,
extended and prepared, and user time ≤ 1.0x; saturated TPS ≥ 1.0x PgBouncer 1.25 at 1, 8, 64 and
500 clients for simple and prepared, ≥ 1.1x for extended (the unnamed-statement cache); RSS with
1,000 idle clients ≤ 20 MB; the sharded session ≥ 0.95x of one database with the parser off.

Each figure from the tables above (pgdog with workers = {workers}, {'its default' if not e.get('WORKERS') else 'set by WORKERS'};
against {anchor}{'' if anchor_is_125 else ', not 1.25'}); n/a: a side failed or was not measured.

| target | figure | met? |
|---|---|---|""")
def verdict(v, ok):
    return "n/a" if v is None else ("met" if ok(v) else "missed")
def user_median(mode, p):
    ok = [x for x in stats.get((mode, p), []) if x is not None]
    return med([x[1] for x in ok]) if ok else None
for mode in ("simple", "extended", "prepared"):
    g, b = fixed_total.get((mode, "pgdog")), fixed_total.get((mode, "pgb"))
    r = g / b if g and b else None
    w(f"| fixed rate CPU per transaction, pgdog / {anchor}, {mode}: ≤ 0.9x | "
      f"{'n/a' if r is None else f'{r:.2f}x'} | {verdict(r, lambda v: v <= 0.9)} |")
    gu, bu = user_median(mode, "pgdog"), user_median(mode, "pgb")
    r = gu / bu if gu and bu else None
    w(f"| fixed rate user time per transaction, pgdog / {anchor}, {mode}: ≤ 1.0x | "
      f"{'n/a' if r is None else f'{r:.2f}x'} | {verdict(r, lambda v: v <= 1.0)} |")
for mode in ("simple", "extended", "prepared"):
    floor = 1.1 if mode == "extended" else 1.0
    for c in clients:
        r = sat_ratio.get((mode, c))
        w(f"| saturated TPS, pgdog / {anchor}, {mode}, {c} client{'s' if c > 1 else ''}: ≥ {floor}x | "
          f"{'n/a' if r is None else f'{r:.2f}x'} | {verdict(r, lambda v: v >= floor)} |")
r = sharded_ratio.get("simple")
w(f"| sharded session TPS, 2 shards routed / one database with the parser off, simple, 8 clients: ≥ 0.95x | "
  f"{'n/a' if r is None else f'{r:.2f}x'} | {verdict(r, lambda v: v >= 0.95)} |")
w(f"| RSS with 1,000 idle clients: ≤ 20 MB | {rss_1k_mb:.1f} MB ({mib(e['RSS_1K'])} MiB) | "
  f"{verdict(rss_1k_mb, lambda v: v <= 20)} |")

# The "Floor" section is benchmarks/floor.sh's: kept as it is.
try:
    kept = re.split(r"(?m)^(?=## )", open(e["OUT"]).read())
    out += ["", *(p.rstrip("\n") for p in kept if p.startswith("## Floor"))]
except FileNotFoundError:
    pass
with open(e["OUT"], "w") as f:
    f.write("\n".join(out) + "\n")
PY
cat "$OUT"
