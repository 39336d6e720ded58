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


if __name__ == "__main__":
    print(*totals(sys.argv[1]))
