#!/usr/bin/env python3
"""`desync watch` against thousands of stand-in ranks: bytes and CPU per poll, memory, and
detection latency after an injected desync.

    .venv/bin/python bench/watch_scale.py [--sizes 256,1024,4096] [--fault stall] [--lag 4]

For each size: desync-synth writes the healthy job and the faulted one (whole recorders with
frames, and their active entries without frames); stand-in workers (python/desync_jobs/
standin.py) serve them on loopback, registered in a real torch TCPStore; `desync watch --store
... --interval 2 --format json` polls them. After `--inject-after` seconds the workers switch
to the faulted state (not before two active polls came, so that the job is watched in its
steady state, not during the first whole poll); latency is the time from that switch to the
alert line. Watch's CPU
time and peak RSS come from /proc while it runs. Prints a Markdown table for BENCHMARKS.md
and writes the raw numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

from desync_jobs.standin import StandIns, healthy_states, synth_state  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def proc_peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_size(ranks: int, args, desync: Path, synth: Path, tmp: Path) -> dict:
    import torch.distributed as dist

    healthy = healthy_states(synth, tmp / f"{ranks}-healthy", ranks, args.groups)
    fault = synth_state(synth, tmp / f"{ranks}-fault", ranks, args.fault_spec, args.groups)
    workers = StandIns(ranks, healthy, fault).start()
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    workers.register("127.0.0.1", store.port)
    cmd = [str(desync), "watch", "--store", f"127.0.0.1:{store.port}", "--world-size",
           str(ranks), "--interval", str(args.interval), "--lag", str(args.lag), "--format",
           "json", "--no-save", "--exit-on-alert", "--concurrency", str(args.concurrency),
           "--timeout", "30"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events: list[tuple[float, dict]] = []
    usage = {"cpu_s": 0.0, "peak_mib": 0.0}

    def read():
        for line in proc.stdout:
            events.append((time.time(), json.loads(line)))

    def sample():
        while proc.poll() is None:
            try:
                usage["cpu_s"] = max(usage["cpu_s"], proc_cpu_s(proc.pid))
                peak = proc_peak_mib(proc.pid)  # NaN once the process is a zombie
                if peak == peak:
                    usage["peak_mib"] = max(usage["peak_mib"], peak)
            except (OSError, ValueError, IndexError):
                break
            time.sleep(0.2)

    threads = [threading.Thread(target=read, daemon=True),
               threading.Thread(target=sample, daemon=True)]
    for t in threads:
        t.start()
    started = time.time()
    def active_polls() -> int:
        return sum(1 for _, e in events if e.get("event") == "status" and e["active_only"])

    while ((time.time() - started < args.inject_after or active_polls() < 2)
           and proc.poll() is None and time.time() - started < args.wait):
        time.sleep(0.1)
    cpu_before = usage["cpu_s"]
    polls_before = sum(1 for _, e in events if e.get("event") == "status")
    workers.switch()
    deadline = time.time() + args.wait
    while proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for t in threads:
        t.join(timeout=5)
    workers.stop()
    statuses = [e for t, e in events if e.get("event") == "status"]
    healthy_polls = [e for t, e in events
                     if e.get("event") == "status" and t < workers.switched_at]
    cheap = [e for e in healthy_polls if e["active_only"]]
    whole = [e for e in healthy_polls if not e["active_only"]]
    alert = next(((t, e) for t, e in events if e.get("event") == "alert"), None)
    alerting = next((e for _, e in events if e.get("judgement") == "alert"), None)
    return {
        "ranks": ranks,
        "fault": args.fault_spec,
        "polls_healthy": len(healthy_polls),
        "active_polls": len(cheap),
        "active_bytes_median": statistics.median(e["bytes"] for e in cheap) if cheap else None,
        "active_took_ms_median": statistics.median(e["took_ms"] for e in cheap) if cheap else None,
        "whole_bytes": statistics.median(e["bytes"] for e in whole) if whole else None,
        "whole_took_ms": statistics.median(e["took_ms"] for e in whole) if whole else None,
        "watch_cpu_s_per_healthy_poll": cpu_before / polls_before if polls_before else None,
        "watch_peak_mib": usage["peak_mib"],
        "alert_category": alert[1]["category"] if alert else None,
        "alert_culprits": alert[1]["report"]["verdict"]["culprit_ranks"] if alert else None,
        "latency_s": alert[0] - workers.switched_at if alert else None,
        # The poll that alerted: ranks read again whole to confirm it, and its bytes.
        "confirmed_whole": alerting.get("confirmed_whole") if alerting else None,
        "alert_poll_bytes": alerting["bytes"] if alerting else None,
        "alert_poll_took_ms": alerting["took_ms"] if alerting else None,
        "statuses": len(statuses),
        "stderr_tail": proc.stderr.read()[-2000:] if proc.stderr else "",
    }


def markdown(rows: list[dict], args) -> str:
    out = [f"Stand-in ranks, fault `{args.fault_spec}`, `--interval {args.interval} --lag "
           f"{args.lag}`, {args.concurrency} fetches at once:", "",
           "| ranks | healthy poll (active entries) | whole poll (first, then spaced) | "
           "watch CPU per healthy poll | watch peak RSS | alert (ranks read whole to confirm, "
           "poll bytes and time) | latency after injection |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        mb = lambda b: "n/a" if b is None else f"{b / 1e6:.2f} MB"  # noqa: E731
        ms = lambda t: "n/a" if t is None else f"{t / 1000:.2f} s"  # noqa: E731
        cpu = r["watch_cpu_s_per_healthy_poll"]
        lat = r["latency_s"]
        out.append(
            f"| {r['ranks']:,} | {mb(r['active_bytes_median'])} in {ms(r['active_took_ms_median'])}"
            f" | {mb(r['whole_bytes'])} in {ms(r['whole_took_ms'])} | "
            f"{'n/a' if cpu is None else f'{cpu:.2f} s'} | {r['watch_peak_mib']:.0f} MiB | "
            f"{r['alert_category']} {r['alert_culprits']} ({r['confirmed_whole']} ranks, "
            f"{mb(r['alert_poll_bytes'])} in {ms(r['alert_poll_took_ms'])}) | "
            f"{'none' if lat is None else f'{lat:.1f} s'} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256,1024,4096")
    ap.add_argument("--fault", dest="fault_spec", default="stall:ranks=5,seq=2900")
    ap.add_argument("--groups", default="")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--lag", type=float, default=4.0)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--inject-after", type=float, default=12.0)
    ap.add_argument("--wait", type=float, default=90.0)
    ap.add_argument("--desync", default=str(REPO / "target" / "release" / "desync"))
    ap.add_argument("--synth", default=str(REPO / "target" / "release" / "desync-synth"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "watch_scale.json"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="desync-watch-scale-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            row = one_size(size, args, Path(args.desync), Path(args.synth), Path(tmp))
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "stderr_tail"}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(markdown(rows, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
