#!/usr/bin/env python3
"""`desync watch` on real Gloo jobs: training-step overhead and detection latency.

    .venv/bin/python bench/watch.py [--runs 3] [--out bench/results/watch.json]

Overhead: the `healthy_long` job (4 ranks, one gradient all_reduce per step, debug server
on) with its step time set to 0 ms (worst case: the step is only the tiny model and the
collective) and to 50 ms, run with and without a `desync watch --store ... --interval 1`
polling every rank; the job reports its own mean step time. Runs alternate between the two
arms so machine load hits both alike.

Latency: the `skip_report` job hangs at a known collective; the watcher (--interval 1
--lag 5) alerts; latency = alert arrival - the hanging collective's `time_created_ns`.

Prints a Markdown table for BENCHMARKS.md and writes the raw numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "python" / "tests"))

from desync_jobs.run import run_job  # noqa: E402
from desync_jobs.scenarios import get  # noqa: E402
from test_watch import LiveJob, _free_port, _hang_start_s, _watch  # noqa: E402

DESYNC = REPO / "target" / "release" / "desync"
STEPS = 300


def variant(step_ms: float, workdir: Path) -> Path:
    """The healthy_long script with more steps and another step time (argparse defaults)."""
    text = get("healthy_long").script_path.read_text()
    text = text.replace('"--steps", type=int, default=40', f'"--steps", type=int, default={STEPS}')
    text = text.replace('"--step-time", type=float, default=0.3',
                        f'"--step-time", type=float, default={step_ms / 1000}')
    path = workdir / f"steady_{step_ms:g}ms.py"
    path.write_text(text)
    return path


def step_ms(log_dir: Path) -> float:
    log = (log_dir / "rank_0.log").read_text()
    return float(re.search(r"steps, ([\d.]+) ms per step", log).group(1))


def one_run(script: Path, watched: bool, tmp: Path) -> float:
    logs = tmp / "logs"
    env = {"DESYNC_JOBS_DEBUG_SERVER": str(_free_port())}
    if not watched:
        run_job("healthy_long", tmp / "dumps", log_dir=logs, env=env, script_path=script,
                timeout_s=300)
        return step_ms(logs)
    port: dict[str, int] = {}
    ready = threading.Event()

    def on_start(p: int) -> None:
        port["p"] = p
        ready.set()

    watcher: list[subprocess.Popen] = []

    def start_watch() -> None:
        ready.wait(60)
        watcher.append(subprocess.Popen(
            [str(DESYNC), "watch", "--store", f"127.0.0.1:{port['p']}", "--interval", "1",
             "--no-save", "--format", "json"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))

    threading.Thread(target=start_watch, daemon=True).start()
    try:
        run_job("healthy_long", tmp / "dumps", log_dir=logs, env=env, script_path=script,
                timeout_s=300, on_start=on_start)
    finally:
        for w in watcher:
            w.kill()
            w.wait()
    return step_ms(logs)


def latency_run(tmp: Path) -> float:
    job = LiveJob("skip_report", tmp, {"DESYNC_JOBS_DEBUG_SERVER": str(_free_port())},
                  deadline_s=45)
    code, events, _ = _watch(["--store", f"127.0.0.1:{job.port}", "--interval", "1", "--lag",
                              "5", "--exit-on-alert", "--for", "40", "--save",
                              str(tmp / "saved")], timeout=60)
    job.join()
    alert = [(t, e) for t, e in events if e["event"] == "alert"]
    assert code == 1 and alert, "no alert"
    at, event = alert[0]
    return at - _hang_start_s(Path(event["saved"]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "watch.json"))
    args = parser.parse_args()
    results: dict[str, object] = {"steps": STEPS, "runs": args.runs, "overhead": {}, "latency_s": []}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        for ms in (0.0, 50.0):
            script = variant(ms, work)
            arms: dict[str, list[float]] = {"off": [], "on": []}
            for i in range(args.runs):
                for arm in ("off", "on"):
                    tmp = work / f"{ms:g}-{arm}-{i}"
                    arms[arm].append(one_run(script, arm == "on", tmp))
                    print(f"step {ms:g} ms, watch {arm}: {arms[arm][-1]:.2f} ms/step", flush=True)
            results["overhead"][f"{ms:g}"] = arms
        for i in range(args.runs):
            results["latency_s"].append(latency_run(work / f"latency-{i}"))
            print(f"latency: {results['latency_s'][-1]:.2f} s", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")

    print("\n| step work | step time, no watch | step time, watched (1 s) | overhead |")
    print("|---|---:|---:|---:|")
    for ms, arms in results["overhead"].items():
        off, on = statistics.median(arms["off"]), statistics.median(arms["on"])
        print(f"| {ms} ms | {off:.2f} ms | {on:.2f} ms | {100 * (on - off) / off:+.1f} % |")
    lat = results["latency_s"]
    print(f"\nDetection latency (--interval 1 --lag 5), {len(lat)} runs: "
          f"median {statistics.median(lat):.1f} s, max {max(lat):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
