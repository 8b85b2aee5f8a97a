#!/usr/bin/env python3
"""Groups a heaptrack peak flame graph by the desync function that allocated.

Usage: heaptrack_print -f heaptrack.zst -F peak.folded --flamegraph-cost-type peak
       heap_sites.py peak.folded SRC_ROOT

Each folded line is `frame;frame;... BYTES` (bytes held at the heap peak).
A frame is attributed to desync when its function is defined in the desync
crates under SRC_ROOT (names taken from `fn NAME` in their sources); the two
innermost such frames name the site (heaptrack lists a physical frame's
inlined functions in its own order, so the pair is not ordered caller/callee).
"""

import collections
import pathlib
import re
import sys

CRATES = ("desync", "desync_core", "desync_pickle")
GENERIC = {"new", "from", "clone", "default", "fmt", "next", "call", "get", "push", "extend", "from_iter",
           "collect", "map", "with_capacity", "insert", "entry", "into", "iter", "len"}


def main():
    folded, root = sys.argv[1], pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else ".")
    fns, files = set(), set()
    for crate in CRATES:
        for p in (root / "crates" / crate / "src").rglob("*.rs"):
            files.add(p.name)
            fns.update(re.findall(r"\bfn ([a-z_0-9]+)", p.read_text(errors="replace")))

    def parse(frame):
        m = re.match(r"^(.*) \(([^()]*)\)$", frame)
        if not m:
            return frame, ""
        name = re.sub(r"^_R[A-Za-z0-9_]*", "", m.group(1)) or m.group(1)
        return re.sub(r"<.*$", "", name), m.group(2)

    total = 0
    site = collections.Counter()
    for line in open(folded, errors="replace"):
        stack, _, val = line.rstrip().rpartition(" ")
        if not val.isdigit():
            continue
        v = int(val)
        total += v
        if not v:
            continue
        frames = [parse(f) for f in stack.split(";") if f]
        ours = [(n, f) for n, f in frames if f in files and (n in fns or n.startswith("{closure")) and n not in GENERIC]
        if ours:
            inner = ours[-1]
            outer = ours[-2] if len(ours) > 1 else ("", "")
            site[f"{inner[0]} ({inner[1]}) | {outer[0]} ({outer[1]})"] += v
        else:
            site["(outside desync)"] += v
    print(f"heap at peak: {total / 2**30:.2f} GiB")
    for k, v in site.most_common(15):
        print(f"{v / 2**20:9.1f} MiB {100.0 * v / total:5.1f}%  {k}")


if __name__ == "__main__":
    main()
