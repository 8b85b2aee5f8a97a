#!/usr/bin/env python3
"""`desync analyze` on a job larger than the disk holds as dumps: 65,536 ranks x 2,000 entries.

    python3 bench/postmortem_scale.py --desync target/release/desync \
        --synth target/release/desync-synth [--ranks 65536] [--slice 4096]

The same workload as bench/run.py (pickle with frames, groups tp=8,dp, no p2p, one injected
divergence on rank N/2+3 at the default group's middle seq), but written in slices of
`--slice` ranks (`desync-synth --rank-range`, one plan, so the slices make one job), each
slice summarized (`desync summarize`, lossless for the analysis) and its dumps deleted before
the next: 65,536 dumps would be about 53 GB, their summaries a tenth of that. Then one
`desync analyze` over every summary, measured as bench/run.py measures (wall, CPU and peak
RSS of that child from wait4, a watchdog killing it above `--rss-limit-gib`). Prints one JSON
object and writes it to `--out`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import fault_seq_for, measure, run_cmd, synth_cmd  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=65536)
    ap.add_argument("--slice", type=int, default=4096)
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--history", type=int, default=6000)
    ap.add_argument("--groups", default="tp=8,dp")
    ap.add_argument("--ops", default="p2p=0")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--prefix", default="nccl_trace_rank_")
    ap.add_argument("--rss-limit-gib", type=float, default=20.0)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--desync", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--scratch", default=None, help="where slices and summaries go (default: a temp dir)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "postmortem_scale.json"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="desync-pm-scale-", dir=args.scratch) as tmp:
        tmp = Path(tmp)
        culprit = args.ranks // 2 + 3
        seq = fault_seq_for(args, args.ranks, tmp)
        fault = f"divergence:ranks={culprit},seq={seq}"
        summaries = tmp / "summaries"
        made = {"dump_bytes": 0, "generate_s": 0.0, "summarize_s": 0.0}
        for first in range(0, args.ranks, args.slice):
            last = min(first + args.slice, args.ranks) - 1
            dumps = tmp / "slice"
            t0 = time.monotonic()
            run_cmd(synth_cmd(args, args.ranks, dumps, fault) + ["--rank-range", f"{first}-{last}"])
            t1 = time.monotonic()
            made["dump_bytes"] += sum(p.stat().st_size for p in dumps.iterdir())
            run_cmd([args.desync, "summarize", str(dumps), "-o", str(summaries), "--quiet"])
            made["generate_s"] += t1 - t0
            made["summarize_s"] += time.monotonic() - t1
            shutil.rmtree(dumps)
            print(f"ranks {first}-{last}: {made['dump_bytes'] / 1e9:.1f} GB of dumps so far",
                  file=sys.stderr, flush=True)
        summary_bytes = sum(p.stat().st_size for p in summaries.iterdir())
        report = tmp / "report.json"
        run = measure([args.desync, "analyze", str(summaries), "--format", "json"], env=None,
                      stdout_path=report, stderr_path=tmp / "stderr.txt",
                      timeout_s=args.timeout, rss_limit_kib=int(args.rss_limit_gib * 1024 * 1024))
        verdict = {}
        if run["status"] == "ok":
            verdict = json.loads(report.read_text()).get("verdict", {})
        result = {
            "ranks": args.ranks,
            "entries": args.entries,
            "fault": fault,
            "dump_gb": round(made["dump_bytes"] / 1e9, 2),
            "summary_gb": round(summary_bytes / 1e9, 2),
            "generate_s": round(made["generate_s"], 1),
            "summarize_s": round(made["summarize_s"], 1),
            "analyze": run,
            "verdict": {k: verdict.get(k) for k in ("category", "culprit_ranks", "collective_seq_id")},
            "found": verdict.get("category") == "divergence" and verdict.get("culprit_ranks") == [culprit],
            "stderr_tail": (tmp / "stderr.txt").read_text()[-1500:],
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
