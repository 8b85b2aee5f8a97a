"""Framework jobs: real training projects (Lightning, Accelerate, DDP, FSDP2, DeviceMesh).

Each case lives in ``tests/frameworks/<name>/``:

- ``src/``: the project exactly as it runs (several modules, an entry point);
- ``job.json``: how the job is launched (written by hand with the project):
  ``world_size``, ``nodes``, ``entry``, ``args``, ``dump_format``, ``node_env`` and
  ``rank_env`` (per-host / per-rank environment, keys are node or rank numbers),
  ``framework_init`` (the framework calls init_process_group), ``hang_s``,
  ``fr_buffer``, ``deadline_s``, and ``expect``: ``dumps`` (ranks that must dump,
  default all) and ``log`` (regexes the ranks' own output must contain: the job
  reporting that it did what it was designed to do);
- ``expected.json``: the designed answer (see README.md next to this file);
- ``dumps/``, ``logs/``, ``run.json``: written by ``make.py`` from a real run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from desync_jobs.scenarios import Scenario

REPO = Path(__file__).resolve().parents[3]


def cases_dir() -> Path:
    return Path(os.environ.get("DESYNC_FRAMEWORK_CASES", REPO / "tests" / "frameworks"))


def _int_keys(table: dict) -> dict[int, dict[str, str]]:
    return {int(k): {str(a): str(b) for a, b in v.items()} for k, v in table.items()}


def load_job(case: Path) -> Scenario:
    spec = json.loads((case / "job.json").read_text())
    return Scenario(
        name=case.name,
        script=spec.get("entry", "train.py"),
        world_size=int(spec["world_size"]),
        dump_format=spec.get("dump_format", "pickle"),
        rank_env=_int_keys(spec.get("rank_env", {})),
        project=case / "src",
        args=tuple(spec.get("args", [])),
        nodes=int(spec.get("nodes", 1)),
        node_env=_int_keys(spec.get("node_env", {})),
        framework_init=bool(spec.get("framework_init", False)),
        hang_s=spec.get("hang_s", 8.0),
        fr_buffer=int(spec.get("fr_buffer", 200)),
        deadline_s=spec.get("deadline_s", 300.0),
    )


def jobs() -> dict[str, Scenario]:
    root = cases_dir()
    if not root.is_dir():
        return {}
    return {case.name: load_job(case)
            for case in sorted(root.iterdir()) if (case / "job.json").is_file()}
