"""Totals of a `valgrind --tool=callgrind` output file: user-space instructions and calls of the
allocator (malloc, calloc, realloc, posix_memalign, aligned_alloc). Used by floor-run.sh and
profile-run.sh; `python3 callgrind.py FILE` prints "INSTRUCTIONS ALLOCATIONS"."""
import re
import sys

ALLOC = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc"}


def totals(path):
    """(instructions, allocation calls) of one callgrind file."""
    names, total, allocs, callee = {}, 0, 0, None
    for line in open(path, errors="replace"):
        if line.startswith(("summary:", "totals:")):
            total = int(line.split()[1])
        m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2).strip()
            callee = names.get(m.group(1)) if line.startswith("cfn=") else None
            continue
        if line.startswith("calls=") and callee in ALLOC:
            allocs += int(line.split("=")[1].split()[0])
    return total, allocs


def clock_reads(path):
    """(pgdog's, the runtime's) calls of the monotonic clock (`Timespec::now`, which
    `Instant::now` inlines), split by the calling function: tokio's own and the block_on loop
    inlined into `pgdog::main` count as the runtime's, everything else as pgdog's."""
    names, fn, callee, ours, runtime = {}, None, None, 0, 0
    for line in open(path, errors="replace"):
        m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3).strip()
            if m.group(1):
                callee = names.get(m.group(2))
            else:
                fn, callee = names.get(m.group(2)), None
            continue
        if line.startswith("calls=") and callee and callee.endswith("Timespec>::now"):
            n = int(line.split("=")[1].split()[0])
            if fn and (fn.startswith("tokio::") or fn == "pgdog::main"):
                runtime += n
            else:
                ours += n
    return ours, runtime


if __name__ == "__main__":
    print(*totals(sys.argv[1]))
