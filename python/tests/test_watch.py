"""`desync watch` on real, live Gloo jobs (torch 2.11, 4 ranks, CPU).

Each job runs with `torch.distributed.debug.start_debug_server()` (or periodic dumps, for
`--dir`) and a 120 s process-group timeout, so a desync hangs it the way NCCL would: nothing
fails until the timeout. The watcher must name the culprit rank, the collective and the
branch line while the job still hangs, within ALERT_WITHIN_S of the hang starting, and stay
quiet on a healthy job watched for as long.

The hang starts when rank 1 issues its metrics all_reduce (pg 1 seq 1): its
`time_created_ns` in the saved snapshot is the clock we measure the alert against.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import desync_bin, run_desync
from desync_jobs.run import run_job

pytestmark = [pytest.mark.jobs, pytest.mark.desync]

PG_TIMEOUT_S = 120.0
# The target: alert within 10 s of the first inconsistent collective. With
# --interval 1 --lag 5 the design gives about 6 s; the rest is slack for 2 shared cores.
ALERT_WITHIN_S = 10.0
BRANCH_TEXT = "if not torch.isfinite(loss):"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveJob:
    """A scenario running in a background thread; `port` is its TCPStore once launched."""

    def __init__(self, name: str, tmp: Path, env: dict[str, str], deadline_s: float) -> None:
        self.port: int | None = None
        self.result = None
        started = threading.Event()

        def on_start(port: int) -> None:
            self.port = port
            started.set()

        def body() -> None:
            self.result = run_job(name, tmp / "dumps", log_dir=tmp / "logs",
                                  pg_timeout_s=PG_TIMEOUT_S, timeout_s=deadline_s, grace_s=5,
                                  env=env, on_start=on_start)

        self.thread = threading.Thread(target=body, daemon=True)
        self.thread.start()
        assert started.wait(60), "the job did not start"

    def running(self) -> bool:
        return self.thread.is_alive()

    def join(self) -> None:
        self.thread.join(timeout=PG_TIMEOUT_S + 60)


def _watch(args: list[str], timeout: float) -> tuple[int, list[tuple[float, dict]], str]:
    """Runs `desync watch ... --format json`; returns (exit code, [(arrival time, event)],
    stderr). Events are timestamped as they arrive, to measure detection latency."""
    proc = subprocess.Popen([str(desync_bin()), "watch", *args, "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events: list[tuple[float, dict]] = []
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append((time.time(), json.loads(line)))
        code = proc.wait()
    finally:
        timer.cancel()
    assert proc.stderr is not None
    return code, events, proc.stderr.read()


def _alerts(events):
    return [(t, e) for t, e in events if e["event"] == "alert"]


def _hang_start_s(snapshot: Path) -> float:
    """Wall-clock time rank 1 issued the metrics all_reduce nobody else issued."""
    dump = json.loads((snapshot / "dumps" / "rank_1.json").read_text())
    created = [e["time_created_ns"] for e in dump["entries"]
               if e["process_group"][0] == "1" and e["collective_seq_id"] == 1]
    assert len(created) == 1, "rank 1 should have exactly one entry at pg 1 seq 1"
    return created[0] / 1e9


def _first_collective_s(snapshot: Path) -> float:
    """Wall-clock time the last rank to start issued its first collective."""
    firsts = []
    for dump in (snapshot / "dumps").glob("rank_*.json"):
        entries = json.loads(dump.read_text())["entries"]
        firsts.append(min(e["time_created_ns"] for e in entries) / 1e9)
    return max(firsts)


def _branch_line(script: Path) -> int:
    lines = script.read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if line.strip() == BRANCH_TEXT)


def _check_alert_report(report: dict, script: Path) -> None:
    verdict = report["verdict"]
    assert verdict["category"] == "divergence", verdict["headline"]
    assert verdict["culprit_ranks"] == [1], verdict["headline"]
    branch = report["code"]["branch"]
    assert branch["file"].endswith("train.py") and branch["line"] == _branch_line(script), branch


def test_watch_store_names_the_culprit_while_the_job_hangs(tmp_path):
    hook_out = tmp_path / "hook.txt"
    job = LiveJob("skip_report", tmp_path, {"DESYNC_JOBS_DEBUG_SERVER": str(_free_port())},
                  deadline_s=45)
    script = Path("/tmp/desync-jobs/skip_report/train.py")
    code, events, stderr = _watch(
        ["--store", f"127.0.0.1:{job.port}", "--interval", "1", "--lag", "5",
         "--exit-on-alert", "--for", "40", "--save", str(tmp_path / "saved"),
         "--source-root", str(script.parent),
         "--on-alert", f'echo "$DESYNC_CATEGORY $DESYNC_CULPRITS" > {hook_out}'],
        timeout=60)
    still_hanging = job.running()
    job.join()
    assert code == 1, stderr
    alerts = _alerts(events)
    assert len(alerts) == 1, [e for _, e in events][-3:]
    alerted_at, alert = alerts[0]
    assert still_hanging, "the alert came after the job had already ended"
    _check_alert_report(alert["report"], script)
    assert alert["stacks_attached"] == 4, "every rank is blocked in a collective"

    snapshot = Path(alert["saved"])
    latency = alerted_at - _hang_start_s(snapshot)
    assert 0 < latency <= ALERT_WITHIN_S, f"alert {latency:.1f} s after the hang started"
    assert latency < PG_TIMEOUT_S / 4

    # The saved snapshot replays with `desync analyze`, stacks included.
    assert sorted(p.name for p in (snapshot / "stacks").iterdir()) == [
        f"rank_{r}.txt" for r in range(4)]
    code, replay, _ = run_desync(snapshot / "dumps", source_root=script.parent)
    _check_alert_report(replay, script)

    # Healthy snapshots came before, wherever one was read wholly inside the window in which
    # ranks were issuing collectives and the hang had not begun. Before the first collective
    # there is nothing to compare ("inconclusive"); on a loaded machine that window (six steps,
    # about 2 s) can hold no whole snapshot at all, and then there was nothing healthy to see.
    hang_start = _hang_start_s(snapshot)
    first_collective = _first_collective_s(snapshot)
    statuses = [(round(t - e["took_ms"] / 1000 - hang_start, 1), round(t - hang_start, 1),
                 e["category"], e["observed"]) for t, e in events if e["event"] == "status"]
    inside = [s for s in statuses
              if s[0] > first_collective - hang_start and s[1] < 0]
    if inside:
        assert any(s[2] == "healthy" for s in inside), (first_collective - hang_start, statuses)
    assert all(s[2] in ("healthy", "inconclusive") for s in statuses if s[1] < 0), statuses
    for _ in range(50):
        if hook_out.exists() and hook_out.read_text().strip():
            break
        time.sleep(0.1)
    assert hook_out.read_text().split() == ["divergence", "1"]


def test_watch_stays_quiet_on_a_healthy_job_and_survives_its_end(tmp_path):
    job = LiveJob("healthy_long", tmp_path, {"DESYNC_JOBS_DEBUG_SERVER": str(_free_port())},
                  deadline_s=100)
    # The watch ends with the job (`--until-gone`), however long the job takes to start on a
    # busy machine (four ranks importing torch on 2 cores took 14 s; the run about 13 s more):
    # a fixed `--for` shorter than the job flapped. `--for` only bounds a job that never ends.
    started = time.monotonic()
    code, events, stderr = _watch(
        ["--store", f"127.0.0.1:{job.port}", "--interval", "1", "--lag", "5",
         "--until-gone", "--for", "110", "--no-save"], timeout=130)
    watched_s = time.monotonic() - started
    job.join()
    assert code == 0, stderr
    assert watched_s < 105, f"the watch did not end with the job ({watched_s:.0f} s)"
    assert not _alerts(events), _alerts(events)[0][1]["report"]["verdict"]
    statuses = [e for _, e in events if e["event"] == "status"]
    assert len(statuses) >= 10, "a snapshot per second while the job ran"
    assert max(s["ranks_seen"] for s in statuses) == 4
    # Before the first collective there is nothing to compare ("inconclusive"); after it,
    # every snapshot (ranks caught a collective apart included) must read healthy.
    categories = [s["category"] for s in statuses]
    first = categories.index("healthy")
    assert set(categories[:first]) <= {"inconclusive"}, categories
    assert set(categories[first:]) == {"healthy"}, categories
    assert len(categories) - first >= 10, categories
    # Once the job ended, its store and workers went away: reported, and the watch stopped
    # by itself a few polls later.
    after_run = [e["event"] for _, e in events[len(events) - 3:]]
    assert after_run == ["source_down"] * 3, after_run


def test_watch_dir_follows_rewritten_dumps(tmp_path):
    live = tmp_path / "live"
    job = LiveJob("skip_report", tmp_path, {"DESYNC_JOBS_PERIODIC_DIR": str(live),
                                             "DESYNC_JOBS_PERIODIC_EVERY": "1"}, deadline_s=45)
    for _ in range(100):
        if live.is_dir():
            break
        time.sleep(0.1)
    script = Path("/tmp/desync-jobs/skip_report/train.py")
    code, events, stderr = _watch(
        ["--dir", str(live), "--interval", "1", "--lag", "5", "--exit-on-alert", "--for", "40",
         "--save", str(tmp_path / "saved"), "--source-root", str(script.parent)], timeout=60)
    still_hanging = job.running()
    job.join()
    assert code == 1, stderr
    (alerted_at, alert), = _alerts(events)
    assert still_hanging
    # Periodic pickles carry Python frames themselves: no live stacks needed.
    _check_alert_report(alert["report"], script)
    saved = sorted(p.name for p in (Path(alert["saved"]) / "dumps").iterdir())
    assert saved == [f"rank_{r}" for r in range(4)]


def test_watch_reports_dead_workers_and_bad_arguments(tmp_path):
    port = _free_port()  # nothing listens there
    code, events, stderr = _watch(["--workers", f"http://127.0.0.1:{port}", "--for", "2",
                                   "--interval", "0.5", "--timeout", "1"], timeout=30)
    assert code == 2
    assert events and all(e["event"] == "source_down" for _, e in events)
    assert "no worker answered" in events[0][1]["message"]
    assert "no snapshot could be taken" in stderr

    bad = subprocess.run([str(desync_bin()), "watch", "--store", "localhost"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
    missing = subprocess.run([str(desync_bin()), "watch", "--dir", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=30)
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    neither = subprocess.run([str(desync_bin()), "watch"], capture_output=True, text=True,
                             timeout=30)
    assert neither.returncode == 2 and "--store" in neither.stderr


def test_watch_names_the_line_a_stuck_rank_waits_on(tmp_path):
    """stalled_rank, live: rank 2 waits forever on a read that never returns (a polling loop
    in the dataset's file read) and issues no collective; ranks 0, 1, 3 block in the step's
    all_reduce. The alert must say where rank 2 is, from the live stack watch fetched (its
    debug server's dump_traceback) — not "no code", not a py-spy step."""
    job = LiveJob("stalled_rank", tmp_path, {"DESYNC_JOBS_DEBUG_SERVER": str(_free_port())},
                  deadline_s=60)
    script = Path("/tmp/desync-jobs/stalled_rank/train.py")
    code, events, stderr = _watch(
        ["--store", f"127.0.0.1:{job.port}", "--interval", "1", "--lag", "5",
         "--exit-on-alert", "--for", "45", "--save", str(tmp_path / "saved"),
         "--source-root", str(script.parent)],
        timeout=70)
    still_hanging = job.running()
    job.join()
    assert code == 1, stderr
    alerts = _alerts(events)
    assert alerts, [e for _, e in events][-3:]
    assert still_hanging, "the alert came after the job had already ended"
    report = alerts[0][1]["report"]
    verdict = report["verdict"]
    assert (verdict["category"], verdict["culprit_ranks"]) == ("stall", [2]), verdict["headline"]
    wait_line = next(i for i, line in enumerate(script.read_text().splitlines(), start=1)
                     if "nfs: server not responding" in line)
    place = report["where_ranks_are"][0]
    assert place["origin"] == "live_stacks", place
    assert place["ranks"] == [2] and place["function"] == "read", place
    assert place["file"].endswith("stalled_rank/train.py") and place["line"] == wait_line, place
    assert place["within"][0]["construct"] == "while", place
    assert "py-spy" not in json.dumps(report["next_steps"])
    if report["code"]:
        assert f"are at train.py:{wait_line}" in report["code"]["explanation"], report["code"]
