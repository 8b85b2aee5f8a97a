"""The `desync` Python package inside real jobs: plain torchrun, Lightning, Accelerate (CPU,
Gloo, torch 2.11, real multi-process jobs).

Every job is the same data-parallel regression (python/desync_jobs/integrations): one rank's
shard chunk sits on a mount that stopped answering, so that rank blocks in data loading and
never issues the step's gradient all_reduce, while its peers wait in it until the process
group's timeout (10 s). Gloo never dumps by itself: every dump below comes from desync's
Python side (a peer's timeout -> excepthook / Lightning's on_exception -> the TCPStore signal
-> the stalled rank's watcher thread). By design the stalled rank is the culprit, the category
is `stall` (its peers wait in a collective it never issued), and every rank leaves a dump.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, run_desync

pytestmark = [pytest.mark.jobs, pytest.mark.desync]

JOBS = PYTHON_DIR / "desync_jobs" / "integrations"
TIMEOUT_S = 240


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The package from this checkout (python/desync), as `pip install` would provide it.
    env["PYTHONPATH"] = os.pathsep.join([str(PYTHON_DIR), str(JOBS)])
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", DESYNC_DEBUG_SERVER="0")
    for key in ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "DESYNC_DUMP_DIR",
                "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE", "DESYNC_LIVE_EVERY"):
        env.pop(key, None)
    return env


def _torchrun(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={nproc}"]


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Runs the job in its own session with its output in job.log (not a pipe: a rank that
    outlives the launcher would hold a pipe open), then kills whatever is left of it: when
    rank 0 fails, Lightning's launcher exits without killing a rank that is stuck in data
    loading, as it would on a cluster."""
    log = cwd / "job.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=TIMEOUT_S)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    return subprocess.CompletedProcess(cmd, code, log.read_text(errors="replace"), "")


def _dump_ranks(dump_dir: Path) -> list[int]:
    if not dump_dir.is_dir():
        return []
    return sorted(int(p.name.removeprefix("rank_")) for p in dump_dir.iterdir()
                  if p.name.startswith("rank_") and p.name.removeprefix("rank_").isdigit())


def _assert_stall(dump_dir: Path, world: int, culprit: int, log: str) -> dict:
    assert _dump_ranks(dump_dir) == list(range(world)), (
        f"dumps from {_dump_ranks(dump_dir)}, wanted every rank\n{log[-4000:]}")
    code, report, _ = run_desync(dump_dir)
    verdict = report["verdict"]
    assert code == 1, verdict
    assert verdict["category"] == "stall", verdict
    assert verdict["culprit_ranks"] == [culprit], verdict
    return report


def test_enable_under_plain_torchrun_dumps_every_rank(tmp_path: Path) -> None:
    """`desync.torch.enable()` at the top of the script, launched by plain torchrun: the
    dumps land in ./desync-dumps and `desync analyze` reads them."""
    proc = _run([*_torchrun(4), str(JOBS / "enabled_train.py"), "--stall-rank", "2"],
                tmp_path, _env(tmp_path))
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "the job was designed to fail (peers time out)"
    report = _assert_stall(tmp_path / "desync-dumps", 4, 2, log)
    # The stalled rank dumped on its peers' signal, not on a failure of its own.
    assert "flight recorder dump (signal from rank" in log
    # Pickle dumps carry Python frames: the groups name the training script's line.
    assert "plain_train.py" in json.dumps(report["groups"]), report["groups"]


def test_enable_sets_recorder_defaults_and_respects_the_environment(tmp_path: Path) -> None:
    script = (
        "import json, os, desync.torch\n"
        "s = desync.torch.enable()\n"
        "print(json.dumps({'prefix': s.prefix, 'vars': s.variables,\n"
        "    'env': {k: os.environ.get(k) for k in ('TORCH_FR_BUFFER_SIZE', 'TORCH_NCCL_DUMP_ON_TIMEOUT',\n"
        "        'TORCH_FR_CPP_STACK', 'TORCH_FR_DUMP_TEMP_FILE')},\n"
        "    'torch_imported': 'torch' in __import__('sys').modules}))\n")
    env = _env(tmp_path)
    env["TORCH_FR_BUFFER_SIZE"] = "500"  # the user's own choice must win
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(proc.stdout)
    assert out["env"]["TORCH_FR_BUFFER_SIZE"] == "500"
    assert "TORCH_FR_BUFFER_SIZE" not in out["vars"]
    assert out["env"]["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert out["env"]["TORCH_FR_CPP_STACK"] == "0"
    assert out["env"]["TORCH_FR_DUMP_TEMP_FILE"] == str(tmp_path / "desync-dumps" / "rank_")
    assert out["prefix"] == out["env"]["TORCH_FR_DUMP_TEMP_FILE"]
    assert out["torch_imported"] is False, "enable() must not import torch"


def test_sigabrt_in_a_native_thread_still_dumps(tmp_path: Path) -> None:
    """Gloo aborts from its transport thread on a size mismatch: the ctypes handler takes the
    GIL in that thread, dumps, and the process still dies of SIGABRT."""
    script = (
        "import ctypes, datetime, os, threading, time\n"
        "import desync.torch\n"
        "desync.torch.enable()\n"
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo', rank=0, world_size=1,\n"
        "    store=dist.HashStore(), timeout=datetime.timedelta(seconds=30))\n"
        "t = torch.ones(3); dist.all_reduce(t)\n"
        "assert desync.torch.arm()\n"
        "libc = ctypes.CDLL(None)\n"
        "threading.Thread(target=libc.abort, daemon=True).start()  # a thread calling abort()\n"
        "time.sleep(30)\n")
    env = _env(tmp_path)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=90, check=False)
    assert proc.returncode == -6, proc.stderr[-3000:]
    assert "SIGABRT: dumping the flight recorder" in proc.stderr
    assert _dump_ranks(tmp_path / "desync-dumps") == [0], proc.stderr[-3000:]
    code, report, _ = run_desync(tmp_path / "desync-dumps")
    assert code in (0, 1)
    assert report["verdict"]["category"] != "inconclusive" or report["groups"], report["verdict"]


def test_lightning_callback_dumps_every_rank(tmp_path: Path) -> None:
    """Lightning's own launcher (DDP, 2 CPU processes, Gloo) with DesyncCallback: rank 0 times
    out in DDP's gradient all_reduce; on_exception dumps it and signals rank 1 (stuck reading
    its shard), whose watcher thread dumps it."""
    # Lightning's timeout is also its rendezvous timeout: rank 1 is a second interpreter
    # importing Lightning, which takes a while on 2 busy cores.
    proc = _run([sys.executable, str(JOBS / "lightning_train.py"), "--devices", "2",
                 "--stall-rank", "1", "--pg-timeout", "45", "--dump-dir", str(tmp_path / "dumps")],
                tmp_path, _env(tmp_path))
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-3000:]
    _assert_stall(tmp_path / "dumps", 2, 1, log)


def test_accelerate_attach_dumps_every_rank(tmp_path: Path) -> None:
    """Accelerate under torchrun (2 CPU processes, Gloo): rank 0 times out in
    accelerator.backward's all_reduce; the excepthook signals rank 1."""
    proc = _run([*_torchrun(2), str(JOBS / "accelerate_train.py"), "--stall-rank", "1",
                 "--dump-dir", str(tmp_path / "dumps")], tmp_path, _env(tmp_path))
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, log[-3000:]
    _assert_stall(tmp_path / "dumps", 2, 1, log)


def test_healthy_job_with_enable_is_untouched(tmp_path: Path) -> None:
    """No stall: the job finishes normally, exit 0, and no failure dump is written."""
    proc = _run([*_torchrun(2), str(JOBS / "enabled_train.py"), "--steps", "4"],
                tmp_path, _env(tmp_path))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert _dump_ranks(tmp_path / "desync-dumps") == []
    shutil.rmtree(tmp_path / "desync-dumps", ignore_errors=True)
