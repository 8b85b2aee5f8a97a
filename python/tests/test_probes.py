"""The probes desync emits are real: the diff applies to the training script, and the patched
job fails fast at the branch point with a clear message instead of hanging until the timeout.

desync analyses the committed dumps of a scenario with --source-root pointing at a copy of
its script and --emit-probes; `git apply` patches the copy; the patched script then runs as
the same real Gloo job.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SCENARIO_DIR, run_desync
from desync_jobs.run import run_job

pytestmark = [pytest.mark.jobs, pytest.mark.desync]


def emit_and_apply(name: str, work: Path) -> tuple[dict, Path]:
    src = work / "src"
    src.mkdir()
    shutil.copy(SCENARIO_DIR / name / "src" / "train.py", src / "train.py")
    patch = work / "probes.diff"
    code, report, stderr = run_desync(SCENARIO_DIR / name / "dumps", source_root=src,
                                      extra=["--emit-probes", str(patch)], cwd=work)
    assert code == 1, stderr
    assert patch.exists() and patch.read_text().startswith("--- a/"), stderr
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    applied = subprocess.run(["git", "apply", "--verbose", str(patch)], cwd=work,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr + patch.read_text()
    return report, src / "train.py"


@pytest.mark.parametrize("name", ["early_stop", "extra_collective"])
def test_consensus_probe_fails_fast_at_the_branch(name, tmp_path):
    report, patched = emit_and_apply(name, tmp_path)
    branch = report["code"]["branch"]
    assert "desync probe" in patched.read_text()

    result = run_job(name, tmp_path / "dumps", log_dir=tmp_path / "logs", script_path=patched)
    logs = "".join((tmp_path / "logs" / f"rank_{r.rank}.log").read_text(errors="replace")
                   for r in result.ranks)
    # The assertion names the file, line and condition of the branch on the disagreeing ranks.
    assert f"desync probe train.py:{branch['line']}: ranks disagree on" in logs, logs[-3000:]
    # Failing fast: well before the job's own timeout path, and before the culprit's collective.
    assert result.elapsed_s < 60, result.elapsed_s


def test_call_log_probe_prints_per_rank_lines(tmp_path):
    """except_skip has no condition to agree on (the reason is an exception): the call log
    still shows which rank stopped arriving at the gradient all_reduce."""
    report, patched = emit_and_apply("except_skip", tmp_path)
    assert report["code"]["branch"]["construct"] == "continue"
    result = run_job("except_skip", tmp_path / "dumps", log_dir=tmp_path / "logs", script_path=patched)
    counts = {}
    for r in result.ranks:
        text = (tmp_path / "logs" / f"rank_{r.rank}.log").read_text(errors="replace")
        counts[r.rank] = text.count("[desync-probe] rank=")
    culprit = report["verdict"]["culprit_ranks"][0]
    assert all(counts[r] > 0 for r in counts), counts
    # The culprit skipped one step, so it logged fewer arrivals than every other rank.
    assert all(counts[culprit] < counts[r] for r in counts if r != culprit), counts


def test_loop_probes_count_iterations_instead_of_agreeing_on_an_iterator(tmp_path):
    """A rank left `for batch in loader:` early (its shard is shorter): agreeing on
    `bool(loader)` would pass on every rank, so the probe agrees on the loader's length and the
    patched job fails fast there, on every rank, naming the loop."""
    from desync_jobs.frameworks import cases_dir

    name = "ddp_loop_exit_module"
    case = cases_dir() / name
    src = tmp_path / "src"
    shutil.copytree(case / "src", src)
    patch = tmp_path / "probes.diff"
    code, report, stderr = run_desync(case / "dumps", source_root=src,
                                      extra=["--emit-probes", str(patch)], cwd=tmp_path)
    assert code == 1, stderr
    branch = report["code"]["branch"]
    assert branch["construct"] == "for", branch
    names = [p["name"] for p in report["probes"]]
    assert "length_consensus" in names and "iteration_log" in names, names
    assert "consensus" not in names, "no consensus over bool(iterator)"
    assert "bool(loader)" not in patch.read_text()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    applied = subprocess.run(["git", "apply", "--verbose", str(patch)], cwd=tmp_path,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr + patch.read_text()

    result = run_job(name, tmp_path / "dumps", log_dir=tmp_path / "logs", project_dir=src)
    logs = "".join((tmp_path / "logs" / f"rank_{r.rank}.log").read_text(errors="replace")
                   for r in result.ranks)
    at = f"{Path(branch['file']).name}:{branch['line']}"
    assert f"desync probe {at}: ranks iterate `loader` a different number of times" in logs, logs[-3000:]
    assert result.elapsed_s < 60, result.elapsed_s
