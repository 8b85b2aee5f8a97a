"""Shared helpers for the Python-side tests (real PyTorch jobs, desync, torchfrtrace)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO = PYTHON_DIR.parent
SCENARIO_DIR = REPO / "tests" / "scenarios"
sys.path.insert(0, str(PYTHON_DIR))


def desync_bin() -> Path:
    path = Path(os.environ.get("DESYNC_BIN", "target/release/desync"))
    return path if path.is_absolute() else REPO / path


def synth_bin() -> Path:
    """The NCCL-format dump generator; `cargo test --release --workspace` builds it next to the
    Rust tests (its package has integration tests), scripts/test.sh passes it as DESYNC_SYNTH."""
    path = Path(os.environ.get("DESYNC_SYNTH", "target/release/desync-synth"))
    path = path if path.is_absolute() else REPO / path
    assert path.exists(), f"desync-synth not found at {path} (cargo build --release -p desync_synth)"
    return path


def run_desync(dump_dir: Path, source_root: Path | None = None,
               extra: list[str] | None = None, cwd: Path | None = None) -> tuple[int, dict, str]:
    """`desync analyze DIR --format json [--source-root SRC]` -> (exit code, JSON, stderr)."""
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe} (build it or set DESYNC_BIN)"
    cmd = [str(exe), "analyze", str(dump_dir), "--format", "json"]
    if source_root is not None:
        cmd += ["--source-root", str(source_root)]
    cmd += extra or []
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, cwd=cwd)
    assert proc.returncode in (0, 1), (
        f"desync exited {proc.returncode}\nstdout:\n{proc.stdout[:2000]}\nstderr:\n{proc.stderr[:2000]}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"desync printed no JSON ({exc}):\n{proc.stdout[:2000]}") from exc
    return proc.returncode, report, proc.stderr


def committed_scenarios() -> list[Path]:
    return sorted(p for p in SCENARIO_DIR.iterdir() if (p / "expected.json").exists())


@pytest.fixture(scope="session")
def fresh_run(tmp_path_factory):
    """`fresh_run(name)`: one real run of scenario `name` per test session, shared by the tests
    that read it (the job mechanics in test_jobs.py, desync's verdict in
    test_desync_on_fresh_runs.py). Each run costs 10-20 s of a two-core CI machine; the tests
    only read its dumps and logs, so running it twice bought nothing."""
    from desync_jobs.run import run_job

    runs = {}

    def get(name: str):
        if name not in runs:
            base = tmp_path_factory.mktemp(f"fresh-{name}")
            runs[name] = run_job(name, base / "dumps", log_dir=base / "logs")
        return runs[name]

    return get


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_runtest_logreport(report):
    """With DESYNC_TEST_TIMES=FILE, appends each test's wall time as it finishes ("seconds
    nodeid" per line), so a run cut short still tells where its time went; scripts/test.sh
    uses it to print the slowest tests and to balance its two shards."""
    path = os.environ.get("DESYNC_TEST_TIMES")
    if path and report.when in ("setup", "call", "teardown"):
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{report.duration:.2f} {report.when} {report.nodeid}\n")
