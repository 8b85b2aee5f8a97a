"""Every JSON report desync writes is valid against docs/report.schema.json.

The schema is the machine-readable contract (docs/json-schema.md is the prose). It lists every
field of every object (`additionalProperties: false`), so a field added to the report without
the schema, or a value outside a documented enum, fails here. Reports come from every committed
scenario and framework job, with and without their sources (the code section and probes appear
only with them), and from partial sets (missing ranks, so crash and inconclusive verdicts and
no-dump groups are covered).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, SCENARIO_DIR, run_desync

SCHEMA = json.loads((REPO / "docs" / "report.schema.json").read_text())
FRAMEWORK_DIR = REPO / "tests" / "frameworks"
JOBS = sorted(
    d for base in (SCENARIO_DIR, FRAMEWORK_DIR) if base.is_dir()
    for d in base.iterdir() if (d / "dumps").is_dir()
)


def _errors(report: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300]
            for e in validator.iter_errors(report)]


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_there_are_jobs_to_check() -> None:
    assert len(JOBS) >= 30, [j.name for j in JOBS]


@pytest.mark.parametrize("job", JOBS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reports_match_the_schema(job: Path) -> None:
    runs = [run_desync(job / "dumps")]
    if (job / "src").is_dir():
        runs.append(run_desync(job / "dumps", source_root=job / "src"))
    for _, report, _ in runs:
        assert not _errors(report), "\n".join(_errors(report))
    categories = {r["verdict"]["category"] for _, r, _ in runs}
    if categories != {"healthy"}:
        # A problem always comes with something to run next.
        assert all(r["next_steps"] for _, r, _ in runs)


def test_a_partial_set_matches_the_schema() -> None:
    """Ranks without a dump: no_dump groups, missing_rank warnings, a crash or inconclusive."""
    job = SCENARIO_DIR / "healthy"
    world = len(list((job / "dumps").iterdir())) + 2
    code, report, _ = run_desync(job / "dumps", extra=["--world-size", str(world)])
    assert code == 1
    assert report["input"]["missing_ranks"]
    assert not _errors(report), "\n".join(_errors(report))


def test_the_schema_rejects_what_the_contract_forbids() -> None:
    """The check has teeth: an unknown field or category is an error."""
    _, report, _ = run_desync(SCENARIO_DIR / "crash" / "dumps")
    assert not _errors(report)
    report["verdict"]["category"] = "probably_fine"
    report["surprise"] = 1
    errors = _errors(report)
    assert any("probably_fine" in e for e in errors), errors
    assert any("surprise" in e for e in errors), errors
