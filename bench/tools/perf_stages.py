#!/usr/bin/env python3
"""Summarizes `perf script` output of a DWARF call-graph profile of desync.

Usage: perf script -i perf.data --no-inline -F comm,tid,period,ip,sym | perf_stages.py -

Prints the CPU share per pipeline stage (the outermost desync stage frame of
each sample), the leaf functions with the first desync frame that called them
(who calls memcmp/malloc), and the inclusive share of desync functions.
"""

import collections
import re
import sys

# Substring of a frame -> stage name; the frame nearest the root decides.
STAGES = [
    ("load::read_and_decode", "load: read + decode each file (parallel)"),
    ("desync_core::load::load", "load: sort, dedup, groups::infer"),
    ("desync_core::align", "align"),
    ("desync_core::diagnose", "diagnose"),
    ("desync_core::bridge", "bridge"),
    ("desync_core::report", "report"),
]


def samples(lines):
    cur = None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                yield cur
            cur = None
            continue
        if not line.startswith(("\t", " ")):
            parts = line.split()
            # comm tid [time:] period
            period = int(parts[-1]) if parts[-1].isdigit() else 1
            cur = {"period": period, "frames": []}
        elif cur is not None:
            f = line.strip().split(" ", 1)
            cur["frames"].append(re.sub(r"\+0x[0-9a-f]+$", "", f[1] if len(f) > 1 else "?"))
    if cur:
        yield cur


def main():
    src = sys.stdin if len(sys.argv) < 2 or sys.argv[1] == "-" else open(sys.argv[1], errors="replace")
    total = 0
    stage = collections.Counter()
    leaf_owner = collections.Counter()
    incl = collections.Counter()
    for s in samples(src):
        w, fr = s["period"], s["frames"]
        total += w
        for f in set(fr):
            incl[f] += w
        if fr:
            owner = next((f for f in fr[1:] if "desync" in f), "?") if "desync" not in fr[0] else fr[0]
            leaf_owner[(fr[0], owner)] += w
        name = "other (teardown, kernel, truncated stacks)"
        for f in reversed(fr):
            hit = next((n for k, n in STAGES if k in f), None)
            if hit:
                name = hit
                break
        stage[name] += w
    if not total:
        sys.exit("no samples")
    pct = lambda v: f"{100.0 * v / total:6.2f}%"  # noqa: E731
    print("== CPU by stage ==")
    for k, v in stage.most_common():
        print(pct(v), k)
    print("\n== leaf function <= first desync caller ==")
    for (leaf, own), v in leaf_owner.most_common(30):
        print(pct(v), leaf[:80], "<=", own[:90])
    print("\n== inclusive, desync functions >= 1% ==")
    for k, v in incl.most_common():
        if 100.0 * v / total < 1.0:
            break
        if "desync" in k:
            print(pct(v), k[:150])


if __name__ == "__main__":
    main()
