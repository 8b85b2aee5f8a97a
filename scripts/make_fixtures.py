#!/usr/bin/env python3
"""Regenerate every scenario fixture under tests/scenarios/ from scratch.

    .venv/bin/python scripts/make_fixtures.py [SCENARIO ...] [--pg-timeout 6]

For each Gloo scenario: run the real job (python/desync_jobs/run.py) into a
temp dir, check the job did what it was designed to do (which ranks dumped),
then replace tests/scenarios/<name>/{dumps,logs,src/{train.py,desync_jobs/harness.py},expected.json,
run.json}. The real NCCL dumps are copied from shared/fixtures/nccl-h100-world1.
Finally checks that no committed file carries a local path (/work/, /root/)
and that all dumps together stay well under 1 MB. Runs jobs one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

from desync_jobs import run as runner  # noqa: E402
from desync_jobs.expected import expected_for  # noqa: E402
from desync_jobs.scenarios import SCENARIOS  # noqa: E402

SCENARIO_DIR = REPO / "tests" / "scenarios"
NCCL_SRC = Path(os.environ.get("DESYNC_NCCL_FIXTURES",
                               REPO.parent / "shared" / "fixtures" / "nccl-h100-world1"))
NCCL = {
    "nccl_h100_healthy": [("nccl_healthy.pkl", "dumps/nccl_trace_rank_0")],
    "nccl_h100_healthy_json": [("nccl_healthy.json", "dumps/nccl_trace_rank_0")],
    "nccl_h100_hang": [("nccl_hang_rank_0", "dumps/nccl_trace_rank_0"),
                       ("hang.log.head", "hang.log.head")],
}
LOCAL_PATH = re.compile(rb"/work/|/root/")
MAX_TOTAL_DUMP_BYTES = 1_000_000
ATTEMPTS = 2


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2) + "\n")


def run_summary(result: runner.RunResult) -> dict:
    """The launcher's record of the run, without machine-specific paths."""
    return {
        "scenario": result.scenario,
        "world_size": result.world_size,
        "dump_format": result.dump_format,
        "prefix": result.prefix,
        "script": result.script,  # the neutral staged path the frames carry
        "elapsed_s": result.elapsed_s,
        "dump_signal": result.signal_reason,
        "deadline_hit": result.deadline_hit,
        "ranks": [
            {"rank": r.rank, "returncode": r.returncode, "killed": r.killed,
             "dump": Path(r.dump).name if r.dump else None, "dump_bytes": r.dump_bytes}
            for r in result.ranks
        ],
    }


def make_gloo(name: str, pg_timeout: float) -> dict:
    scenario = SCENARIOS[name]
    dest = SCENARIO_DIR / name
    for attempt in range(1, ATTEMPTS + 1):
        tmp = Path(tempfile.mkdtemp(prefix=f"fixture-{name}-"))
        result = runner.run_job(name, tmp / "dumps", log_dir=tmp / "logs",
                                pg_timeout_s=pg_timeout)
        want = [r for r in range(result.world_size) if r not in scenario.ranks_without_dump]
        if result.ranks_with_dumps() == want:
            break
        print(f"  {name}: attempt {attempt}: dumps from {result.ranks_with_dumps()}, "
              f"wanted {want}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        raise SystemExit(f"{name}: the job did not produce the designed dumps")

    staged_script = Path(result.script)
    exp = expected_for(name, staged_script, tmp / "logs")
    for sub in ("dumps", "logs", "src"):
        shutil.rmtree(dest / sub, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tmp / "dumps", dest / "dumps")
    shutil.copytree(tmp / "logs", dest / "logs")
    (dest / "src").mkdir()
    shutil.copyfile(staged_script, dest / "src" / "train.py")
    # The job's own harness ran too (init_distributed, the dumps): the analysis follows the
    # rank from it into train.py, as it would for any project module next to the script.
    (dest / "src" / "desync_jobs").mkdir()
    for module in ("__init__.py", "harness.py"):
        shutil.copyfile(REPO / "python" / "desync_jobs" / module, dest / "src" / "desync_jobs" / module)
    write_json(dest / "expected.json", exp)
    write_json(dest / "run.json", run_summary(result))
    shutil.rmtree(tmp, ignore_errors=True)
    return {"elapsed_s": result.elapsed_s, "returncodes": [r.returncode for r in result.ranks],
            "dump_bytes": sum(r.dump_bytes for r in result.ranks)}


def make_nccl(name: str) -> dict:
    dest = SCENARIO_DIR / name
    shutil.rmtree(dest, ignore_errors=True)
    for src, rel in NCCL[name]:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(NCCL_SRC / src, dest / rel)
        os.chmod(dest / rel, 0o644)
    write_json(dest / "expected.json", expected_for(name))
    return {"dump_bytes": sum(p.stat().st_size for p in (dest / "dumps").iterdir())}


def check_all() -> None:
    total = 0
    problems = []
    for scen in sorted(p for p in SCENARIO_DIR.iterdir() if p.is_dir()):
        for path in scen.rglob("*"):
            if not path.is_file():
                continue
            if path.parent.name == "dumps":
                total += path.stat().st_size
            if not scen.name.startswith("nccl_") and LOCAL_PATH.search(path.read_bytes()):
                problems.append(f"local path in {path.relative_to(REPO)}")
    print(f"all dumps: {total} bytes")
    if total > MAX_TOTAL_DUMP_BYTES:
        problems.append(f"dumps total {total} bytes > {MAX_TOTAL_DUMP_BYTES}")
    if problems:
        raise SystemExit("\n".join(problems))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="scenarios (default: all)")
    parser.add_argument("--pg-timeout", type=float, default=6.0)
    args = parser.parse_args()
    names = args.names or [*SCENARIOS, *NCCL]
    for name in names:
        if name in NCCL:
            info = make_nccl(name)
        elif name in SCENARIOS:
            info = make_gloo(name, args.pg_timeout)
        else:
            raise SystemExit(f"unknown scenario {name}")
        print(f"{name}: {info}", flush=True)
    check_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
