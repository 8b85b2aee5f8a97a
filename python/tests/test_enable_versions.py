"""`desync.torch.enable()` per torch version, without a job: the env names it sets and the
recorder it dumps (measured per version with scripts/measure_fr_versions.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]

from desync import torch as dtorch  # noqa: E402


def enable_with(version: str | None, tmp_path: Path) -> dict[str, str]:
    """Runs enable() in a fresh interpreter whose torch metadata says ``version``."""
    code = (
        "import json, sys\n"
        "import desync.torch as d\n"
        f"d._torch_version = lambda: {None if version is None else tuple(int(x) for x in version.split('.'))!r}\n"
        f"s = d.enable({str(tmp_path)!r}, failure_dumps=False, debug_server=False, stacks=False)\n"
        "print(json.dumps(s.variables))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "DESYNC_"))}
    env["PYTHONPATH"] = str(PYTHON_DIR)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("version", ["2.8", "2.11", "2.15"])
def test_new_torch_gets_only_the_names_it_reads(version: str, tmp_path: Path) -> None:
    # torch >= 2.8 warns on every rank for each TORCH_NCCL_* alias that is set, even beside
    # the TORCH_FR_* name; the new name alone turns the recorder on (off by default in 2.8/2.9).
    chosen = enable_with(version, tmp_path)
    assert chosen["TORCH_FR_BUFFER_SIZE"] == "2000"
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in chosen
    assert "TORCH_NCCL_DEBUG_INFO_TEMP_FILE" not in chosen
    assert "TORCH_NCCL_TRACE_CPP_STACK" not in chosen


@pytest.mark.parametrize("version", ["2.4", None])
def test_old_or_unknown_torch_gets_both_names(version: str | None, tmp_path: Path) -> None:
    chosen = enable_with(version, tmp_path)
    assert chosen["TORCH_FR_BUFFER_SIZE"] == chosen["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000"


def test_backend_names() -> None:
    assert dtorch._backend_name("gloo") == "gloo"
    assert dtorch._backend_name("cpu:gloo,cuda:nccl") == "gloo"
    assert dtorch._backend_name("nccl") == "nccl"


def test_per_backend_dump_call_is_told_by_its_signature() -> None:
    def per_backend(includeStackTraces=None, backend="gloo"):  # noqa: N803
        """_dump_fr_trace(..., backend: str = 'gloo') -> bytes"""

    def single(includeStackTraces=None):  # noqa: N803
        """_dump_fr_trace(includeCollectives, includeStackTraces, onlyActive) -> bytes"""

    assert dtorch._per_backend(per_backend)
    assert not dtorch._per_backend(single)


def test_the_installed_torch_version_is_read_without_importing_torch() -> None:
    code = ("import sys, desync.torch as d; v = d._torch_version(); "
            "print(v is not None and len(v) == 2, 'torch' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == ["True", "False"]
