#!/usr/bin/env bash
# Runs inside `pgdog-topology shards 2` (PG_SHARD0_PORT, PG_SHARD1_PORT, PG_BIN,
# PGDOG_TOPOLOGY_DIR). See profile.sh, whose header documents the knobs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
: "${CG_SMALL:=2000}" "${CG_LARGE:=6000}" "${TOP:=25}"
bench_init profile
PIDS=()
trap 'stop_pids "${PIDS[@]}"' EXIT

# The plain database: "plain" on shard 0's server, loaded directly.
psql_at "$PG_SHARD0_PORT" -c "CREATE DATABASE plain" >/dev/null
"$PG_BIN/pgbench" -q -i -s 1 -h 127.0.0.1 -p "$PG_SHARD0_PORT" -U postgres plain >/dev/null 2>&1
general() { toml_section general host=127.0.0.1 auth_type=trust workers=1 "$@"; }
{
  general port=PORT default_pool_size=10
  toml_entry databases name=plain host=127.0.0.1 port="$PG_SHARD0_PORT" user=postgres
} > "$WORK/plain.toml"
{
  general port=PORT default_pool_size=5
  toml_shard_databases bench 2
  toml_pgbench_sharding bench
} > "$WORK/sharded.toml"
toml_entry users name=postgres database=plain > "$WORK/plain.users.toml"
toml_entry users name=postgres database=bench > "$WORK/sharded.users.toml"

# config PORT NAME: the config NAME on PORT.
config() {
  sed "s/^port = \"PORT\"\$/port = $1/" "$WORK/$2.toml" > "$WORK/$2.$1.toml"
  grep -q "^port = $1\$" "$WORK/$2.$1.toml"
  echo "$WORK/$2.$1.toml"
}

# The sharded copy, loaded through a pgdog (DDL to both shards, accounts split by COPY).
port=$(free_port)
start_pgdog P "$(config "$port" sharded)" "$WORK/sharded.users.toml" "$WORK/init.log"
PIDS=("$P")
wait_port "$port" "$P" || { cat "$WORK/init.log" >&2; exit 1; }
"$PG_BIN/pgbench" -q -i -s 1 -h 127.0.0.1 -p "$port" -U postgres bench > "$WORK/init.log" 2>&1 \
  || { cat "$WORK/init.log" >&2; exit 1; }
stop_pids "$P"
PIDS=()
printf '\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n' \
  > "$WORK/select.sql"

# profile NAME CONFIG DATABASE PGBENCH_ARGS...: pgdog under callgrind, two runs.
profile() {
  local name=$1 conf=$2 db=$3 n port
  shift 3
  for n in "$CG_SMALL" "$CG_LARGE"; do
    port=$(free_port)
    RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$WORK/$name.$n" \
      "$ROOT/target/release/pgdog" --config "$(config "$port" "$conf")" --users "$WORK/$conf.users.toml" \
      >> "$WORK/$name.log" 2>&1 &
    PIDS=("$!")
    wait_port "$port" "$!" || { cat "$WORK/$name.log" >&2; exit 1; }
    "$PG_BIN/pgbench" -n "$@" -c 8 -j 2 -t $((n / 8)) -h 127.0.0.1 -p "$port" -U postgres "$db" \
      > "$WORK/$name.$n.out" 2>&1 || { cat "$WORK/$name.$n.out" >&2; exit 1; }
    # pgdog shuts down on SIGINT; valgrind then writes its counts.
    kill -INT "${PIDS[0]}"
    wait "${PIDS[0]}" || true
    PIDS=()
    [ -z "${KEEP:-}" ] || cp "$WORK/$name.$n" "$KEEP/"
    echo "profile $name: $n transactions" >&2
  done
}
profile simple plain plain -S -M simple
profile extended plain plain -S -M extended
profile prepared plain plain -S -M prepared
profile sharded sharded bench -f "$WORK/select.sql" -M simple

export WORK OUT CG_SMALL CG_LARGE TOP ROOT
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no -- pgdog 2>/dev/null)" ] || COMMIT="$COMMIT with uncommitted changes"
export COMMIT
python3 - <<'PY'
import os, re, subprocess, sys
e = os.environ
sys.path.insert(0, os.path.join(e["ROOT"], "benchmarks"))
from callgrind import totals, clock_reads
work, small, large, top = e["WORK"], int(e["CG_SMALL"]), int(e["CG_LARGE"]), int(e["TOP"])
span = large - small
WORKLOADS = {
    "simple": "`-S -M simple`, plain database",
    "extended": "`-S -M extended`, plain database",
    "prepared": "`-S -M prepared`, plain database",
    "sharded": "`-M simple`, 2 shards (routed by the literal key)",
}

def functions(path):
    """pgdog's own functions, instructions inclusive of their callees."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+([^:\s]+):(.*?)(?: \[.*\])?$", line)
        if m and "/pgdog/src/" in m.group(2):
            name = m.group(3).strip()
            d[name] = max(d.get(name, 0), int(m.group(1).replace(",", "")))
    return d

def short(name):
    """`Type::function` (or `module::function`) of a function's full path."""
    name = name.replace("::{{closure}}", "")
    name = re.sub(r"<impl [\w:]*?(\w+)>", r"\1", name)
    name = re.sub(r"<[\w:]*?(\w+) as [^>]+>", r"\1", name)
    return "::".join(name.split("::")[-2:])

rows, tops = [], {}
for w in WORKLOADS:
    a, b = f"{work}/{w}.{small}", f"{work}/{w}.{large}"
    (ia, aa), (ib, ab) = totals(a), totals(b)
    (ca, ra), (cb, rb) = clock_reads(a), clock_reads(b)
    rows.append((w, (ib - ia) / span, (ab - aa) / span, (cb - ca) / span, (rb - ra) / span))
    fa, fb = functions(a), functions(b)
    per = {}
    for k in fb:
        # Entries of one function under several callers' names: the largest.
        n = short(k)
        per[n] = max(per.get(n, 0), (fb[k] - fa.get(k, 0)) / span)
    # (`main` and the task's wrappers hold everything.)
    skip = {"pgdog::main", "{{closure}}"}
    tops[w] = sorted(((v, k) for k, v in per.items() if v >= 20 and k not in skip and not k.startswith("login::")), reverse=True)[:top]

out = ["## Instructions per transaction\n",
       f"`bash benchmarks/profile.sh` (commit {e['COMMIT']}): pgdog (`workers = 1`) under "
       f"`valgrind --tool=callgrind`, `pgbench -S` at 8 clients, runs of {small} and {large} "
       "transactions differenced (start-up and connections cancel out). User-space instructions "
       "and allocation calls (malloc, calloc, realloc, posix_memalign) per transaction. The plain "
       "database has pool 10; the sharded one 2 shards of pool 5 (pgbench_accounts split by aid, "
       "the SELECT of `pgbench -S` with its key as a literal). Clock reads: calls of the "
       "monotonic clock by pgdog's code and by tokio's runtime (its busy-time metrics and its "
       "timer driver, per wake-up, so under callgrind's slowdown, which batches more per wake-up, "
       "fewer than at a fixed rate).\n",
       "| workload | instructions per tx | allocations per tx | clock reads per tx: pgdog / tokio |",
       "|---|---|---|---|"]
for w, ir, al, cl, rt in rows:
    out.append(f"| {WORKLOADS[w]} | {ir:,.0f} | {al:.2f} | {cl:.2f} / {rt:.2f} |")
out.append("")
for w in WORKLOADS:
    out.append(f"## Where they go: {WORKLOADS[w]}\n")
    out.append("pgdog's functions by instructions per transaction, each inclusive of what it calls "
               "(so nested entries overlap; tokio's and libc's own entries are left out).\n")
    out.append("| instructions per tx | function |")
    out.append("|---|---|")
    for v, k in tops[w]:
        out.append(f"| {v:,.0f} | `{k[:110]}` |")
    out.append("")
open(e["OUT"], "w").write("# pgdog profile\n\n" + "\n".join(out))
print(open(e["OUT"]).read())
PY
