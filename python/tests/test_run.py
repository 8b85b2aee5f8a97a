"""`desync run -- torchrun ...` end to end on real Gloo jobs (torch 2.11, CPU).

The hung job is python/desync_jobs/integrations/plain_train.py: a training script with nothing
of desync in it, 4 ranks under torchrun, rank 2 blocked reading its shard at step 4, and a
process-group timeout of 10 minutes, so the job really hangs (as NCCL would until its
watchdog) and only desync can end it. By design: ranks 0, 1 and 3 wait in step 4's gradient
all_reduce, rank 2 never issues it -> `stall`, culprit rank 2. `desync run` must notice the
hang from the dumps the ranks rewrite (its sitecustomize hook turns that on), stop the job,
print the verdict and write report.html next to the dumps, with no other step.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, desync_bin, run_desync

pytestmark = [pytest.mark.jobs, pytest.mark.desync]

JOBS = PYTHON_DIR / "desync_jobs" / "integrations"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    # The job sees only what `desync run` gives it: no desync on its own path.
    env["PYTHONPATH"] = str(JOBS)
    for key in ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "DESYNC_DUMP_DIR",
                "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE", "DESYNC_LIVE_EVERY",
                "DESYNC_AUTO_ENABLE"):
        env.pop(key, None)
    return env


def _torchrun(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc}"]


def _desync_run(run_dir: Path, job: list[str], *options: str,
                timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [str(desync_bin()), "run", "--dir", str(run_dir), *options, "--", *job]
    return subprocess.run(cmd, cwd=run_dir.parent, env=_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_a_hung_torchrun_job_ends_with_the_verdict_and_the_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job = [*_torchrun(4), str(JOBS / "plain_train.py"), "--stall-rank", "2",
           "--stall-step", "4", "--pg-timeout", "600", "--steps", "40"]
    started = time.monotonic()
    proc = _desync_run(run_dir, job, "--interval", "1", "--lag", "5", "--grace", "10")
    elapsed = time.monotonic() - started
    log = f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    # desync stopped it long before the 10-minute collective timeout.
    assert elapsed < 180, log
    assert "hang:" in proc.stderr and "desync stopped it" in proc.stderr, log
    # The verdict, printed: a stall with rank 2 as the culprit.
    assert "STALL" in proc.stdout.upper(), log
    assert "culprit rank(s) 2" in proc.stdout, log
    report = run_dir / "report.html"
    assert report.is_file() and report.stat().st_size > 10_000, log
    assert (run_dir / "dumps").is_dir()
    # Before the stop, torchrun and its 4 ranks wrote their Python stacks (SIGUSR2): rank 2's
    # shows it blocked reading its shard, the others' the gradient all_reduce.
    stacks = [f.read_text() for f in (run_dir / "stacks").glob("*.txt")]
    assert len(stacks) >= 5, log
    assert sum("plain_train.py" in s for s in stacks) == 4, log
    assert any("regression.py" in s and " in read" in s for s in stacks), log
    # The dumps left behind read the same way through `desync analyze`.
    code, analysis, _ = run_desync(run_dir / "dumps")
    assert code == 1
    assert analysis["verdict"]["category"] == "stall", analysis["verdict"]
    assert analysis["verdict"]["culprit_ranks"] == [2], analysis["verdict"]
    # The job's status after desync stopped it is what desync exits with (torchrun stopped
    # by a signal never exits 0).
    assert proc.returncode not in (0, 2), log
    # No rank outlives the run: its workers were in the job's process group.
    leftover = subprocess.run(["pgrep", "-f", str(JOBS / "plain_train.py")],
                              capture_output=True, text=True, check=False)
    assert leftover.stdout.strip() == "", f"workers left running: {leftover.stdout}"


def test_a_hung_lightning_job_is_diagnosed_and_every_rank_stopped(tmp_path: Path) -> None:
    """Lightning's own launcher (rank 0 starts rank 1) with the script's own DesyncCallback
    naming another dump directory: `run`'s directory wins, so the hang is seen. Rank 0 waits
    in DDP's gradient all_reduce (in C, where Lightning's SIGTERM handler never runs), rank 1
    reads its shard; both must be gone when `run` returns."""
    run_dir = tmp_path / "run"
    job = [sys.executable, str(JOBS / "lightning_train.py"), "--devices", "2",
           "--stall-rank", "1", "--pg-timeout", "600", "--steps", "40",
           "--dump-dir", str(tmp_path / "elsewhere")]
    started = time.monotonic()
    proc = _desync_run(run_dir, job, "--interval", "1", "--lag", "5", "--grace", "5")
    elapsed = time.monotonic() - started
    log = f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert elapsed < 240, log
    assert "culprit rank(s) 1" in proc.stdout, log
    assert not (tmp_path / "elsewhere").exists(), log
    leftover = subprocess.run(["pgrep", "-f", str(JOBS / "lightning_train.py")],
                              capture_output=True, text=True, check=False)
    assert leftover.stdout.strip() == "", f"ranks left running: {leftover.stdout}\n{log}"


def test_a_job_that_fails_by_itself_keeps_its_exit_code_and_is_analyzed(tmp_path: Path) -> None:
    """Gloo times out after 10 s on ranks 0 and 1; the injected hook dumps every rank;
    torchrun exits with its own code, which desync passes on."""
    job = [*_torchrun(2), str(JOBS / "plain_train.py"), "--stall-rank", "1",
           "--pg-timeout", "10"]
    bare = subprocess.run(job, cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=180, check=False)
    assert bare.returncode not in (0, None)
    run_dir = tmp_path / "run"
    # --hang-after and --lag far beyond the timeout: the job must end by itself.
    proc = _desync_run(run_dir, job, "--lag", "600", "--hang-after", "600")
    log = f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == bare.returncode, log
    assert f"the job exited with exit code {bare.returncode}" in proc.stderr, log
    assert "culprit rank(s) 1" in proc.stdout, log
    assert (run_dir / "report.html").is_file(), log


def test_a_healthy_job_exits_zero_with_a_one_line_verdict(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job = [*_torchrun(2), str(JOBS / "plain_train.py"), "--steps", "6"]
    proc = _desync_run(run_dir, job, "--interval", "0.5")
    log = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, log
    assert "the job exited with exit code 0" in proc.stderr, log


def test_exit_codes_and_bad_usage(tmp_path: Path) -> None:
    proc = _desync_run(tmp_path / "a", [sys.executable, "-c", "import sys; sys.exit(7)"])
    assert proc.returncode == 7, proc.stderr
    assert "no rank wrote a dump" in proc.stderr
    proc = _desync_run(tmp_path / "b", ["/nonexistent/launcher"])
    assert proc.returncode == 2 and "could not start" in proc.stderr, proc.stderr
    proc = subprocess.run([str(desync_bin()), "run"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    # A run directory that already holds dumps is refused rather than mixed with new ones.
    (tmp_path / "c" / "dumps").mkdir(parents=True)
    (tmp_path / "c" / "dumps" / "rank_0").write_bytes(b"old")
    proc = _desync_run(tmp_path / "c", [sys.executable, "-c", "pass"])
    assert proc.returncode == 2 and "earlier run" in proc.stderr, proc.stderr


# A job whose processes try to escape: the first process forks a child that starts its own
# session and ignores SIGTERM, which forks a grandchild in a process group of its own (SIG_IGN
# is inherited). Each writes its pid to argv[1]; argv[2] is how long the first process lives.
# No torch: nothing here ever dumps.
ESCAPING_JOB = r"""
import os, signal, sys, time

def record():
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()}\n")

record()
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record()
    if os.fork() == 0:
        os.setpgid(0, 0)
        record()
    time.sleep(600)
    os._exit(0)
while len(open(sys.argv[1]).read().split()) < 3:
    time.sleep(0.05)
time.sleep(float(sys.argv[2]))
"""


def _escaping_job(tmp_path: Path, first_lives: float) -> tuple[list[str], Path]:
    script = tmp_path / "escaping_job.py"
    script.write_text(ESCAPING_JOB)
    pids = tmp_path / "pids"
    return [sys.executable, str(script), str(pids), str(first_lives)], pids


def _alive(pids_file: Path) -> list[int]:
    """The recorded processes that still run (a zombie has exited)."""
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 3, pids
    running = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
            running.append(pid)
    return running


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_hung_job_without_dumps_is_stopped_with_every_process_it_started(
        tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job, pids = _escaping_job(tmp_path, 600)
    hang_after, grace = 2.0, 2.0
    started = time.monotonic()
    proc = _desync_run(run_dir, job, "--interval", "0.5", "--hang-after", str(hang_after),
                       "--grace", str(grace), timeout=60)
    elapsed = time.monotonic() - started
    log = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert _alive(pids) == [], log
    # Not before --hang-after; after it, a second for the stacks, --grace before SIGKILL, and
    # a margin.
    assert hang_after <= elapsed < hang_after + 1 + grace + 6, (elapsed, log)
    assert "no rank wrote a dump in 2 s" in proc.stderr, log
    assert proc.stdout.startswith("inconclusive: no rank wrote a Flight Recorder dump"), log
    assert "--hang-after" in proc.stdout, log
    # The first process took SIGTERM; the two that ignore it got SIGKILL.
    assert proc.returncode == 143, log
    assert "2 processes outlived SIGTERM by --grace and got SIGKILL" in proc.stderr, log
    # Before the stop, each Python process wrote its stacks (faulthandler, on SIGUSR2).
    recorded = sorted(int(p) for p in pids.read_text().split())
    stacks = run_dir / "stacks"
    assert sorted(int(f.stem) for f in stacks.iterdir()) == recorded, log
    for pid in recorded:
        text = (stacks / f"{pid}.txt").read_text()
        assert "escaping_job.py" in text and "line" in text, text


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_job_that_exits_leaving_processes_behind_has_them_stopped(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job, pids = _escaping_job(tmp_path, 0)
    started = time.monotonic()
    proc = _desync_run(run_dir, job, "--interval", "0.5", "--grace", "1", timeout=60)
    elapsed = time.monotonic() - started
    log = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert _alive(pids) == [], log
    assert elapsed < 15, (elapsed, log)
    # The job's own status: its first process exited 0 by itself.
    assert proc.returncode == 0, log
    assert "the job exited with exit code 0" in proc.stderr, log
    assert "it left 2 processes running" in proc.stderr, log
    assert "got SIGKILL" in proc.stderr, log


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_ctrl_c_stops_the_job_and_every_process_it_started(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job, pids = _escaping_job(tmp_path, 600)
    cmd = [str(desync_bin()), "run", "--dir", str(run_dir), "--interval", "0.5", "--grace", "1",
           "--", *job]
    desync = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
            pids.exists() and len(pids.read_text().split()) == 3):
        time.sleep(0.1)
    desync.send_signal(signal.SIGINT)
    out, err = desync.communicate(timeout=30)
    log = f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
    assert _alive(pids) == [], log
    assert "interrupted; desync stopped it" in err, log
    assert desync.returncode == 143, log


def _guards() -> list[int]:
    """desync's job guards still running (`desync job-guard`, started by `run`)."""
    exe = str(desync_bin())
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [exe.encode(), b"job-guard"]:
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_sigkilled_desync_run_leaves_no_process_of_its_job(tmp_path: Path) -> None:
    """SIGKILL cannot be caught: `desync run` gets no chance to stop its job. Its guard (a
    process holding the read end of a pipe only `run` writes to) sees the pipe close and
    stops the whole tree: the first process, the child that started its own session and
    ignores SIGTERM, and the grandchild in a process group of its own."""
    run_dir = tmp_path / "run"
    job, pids = _escaping_job(tmp_path, 600)
    grace = 1.0
    cmd = [str(desync_bin()), "run", "--dir", str(run_dir), "--no-inject", "--interval", "0.5",
           "--hang-after", "600", "--grace", str(grace), "--", *job]
    # Files, not pipes: the job's processes inherit them, and a pipe stays open while any lives.
    out_file, err_file = tmp_path / "stdout", tmp_path / "stderr"
    with out_file.open("w") as out_f, err_file.open("w") as err_f:
        desync = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=out_f, stderr=err_f)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
            pids.exists() and len(pids.read_text().split()) == 3):
        time.sleep(0.1)
    assert len(_alive(pids)) == 3
    # The guard watches the tree while `run` lives: give it a look at the escaped ones.
    time.sleep(1.0)
    desync.kill()
    assert desync.wait(timeout=30) == -signal.SIGKILL
    # SIGTERM, --grace, then SIGKILL for the two that ignore SIGTERM, and a margin.
    deadline = time.monotonic() + grace + 8
    while time.monotonic() < deadline and (_alive(pids) or _guards()):
        time.sleep(0.1)
    log = f"stdout:\n{out_file.read_text()[-3000:]}\nstderr:\n{err_file.read_text()[-3000:]}"
    survivors = _alive(pids)
    for pid in survivors:  # this test's own processes, so that a failure leaves none behind
        os.kill(pid, signal.SIGKILL)
    assert survivors == [], log
    assert _guards() == [], log


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_the_guard_stops_nothing_when_run_ends_normally(tmp_path: Path) -> None:
    """A job that ends by itself: `run` releases its guard, which exits without a signal to
    anyone (a process the job started and `run` let go would otherwise be killed late)."""
    run_dir = tmp_path / "run"
    proc = _desync_run(run_dir, [sys.executable, "-c", "pass"], "--no-inject", "--interval",
                       "0.5", timeout=60)
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _guards():
        time.sleep(0.1)
    assert _guards() == []
    assert "its guard stopped" not in proc.stderr, proc.stderr
