"""The committed scenario fixtures are complete, small, path-clean and in sync with the jobs."""

from __future__ import annotations

import json
import pickle
import re

import pytest

from conftest import REPO, committed_scenarios
from desync_jobs.expected import expected_for
from desync_jobs.scenarios import SCENARIOS

CATEGORIES = {"divergence", "metadata_mismatch", "stall", "gpu_hang", "deadlock", "crash",
              "straggler", "healthy", "inconclusive"}
CONSTRUCTS = {"break", "continue", "if", "except", "for", "while", "return", "raise", "call"}
LOCAL_PATH = re.compile(rb"/work/|/root/")
SCENARIOS_ON_DISK = committed_scenarios()


def test_every_scenario_is_committed():
    names = {p.name for p in SCENARIOS_ON_DISK}
    assert set(SCENARIOS) <= names
    assert {"nccl_h100_healthy", "nccl_h100_healthy_json", "nccl_h100_hang"} <= names


@pytest.mark.parametrize("scenario", SCENARIOS_ON_DISK, ids=lambda p: p.name)
def test_expected_json_schema(scenario):
    exp = json.loads((scenario / "expected.json").read_text())
    assert set(exp) == {"category", "culprit_ranks", "process_group", "collective_seq_id",
                        "branch", "notes"}
    assert exp["category"] in CATEGORIES
    assert exp["culprit_ranks"] == sorted(exp["culprit_ranks"])
    assert exp["process_group"] is None or isinstance(exp["process_group"], str)
    assert exp["collective_seq_id"] is None or isinstance(exp["collective_seq_id"], int)
    if exp["branch"] is not None:
        assert set(exp["branch"]) == {"file", "line", "construct"}
        assert exp["branch"]["file"] == "train.py"
        assert exp["branch"]["construct"] in CONSTRUCTS
        lines = (scenario / "src" / "train.py").read_text().splitlines()
        assert 1 <= exp["branch"]["line"] <= len(lines)


@pytest.mark.parametrize("scenario", SCENARIOS_ON_DISK, ids=lambda p: p.name)
def test_dumps_are_readable(scenario):
    files = sorted((scenario / "dumps").iterdir())
    assert files
    for f in files:
        raw = f.read_bytes()
        assert raw, f
        dump = pickle.loads(raw) if raw[:1] == b"\x80" else json.loads(raw)
        assert "entries" in dump and "version" in dump


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_gloo_fixture_in_sync_with_job(name):
    """src/train.py is the job's current script and expected.json follows from its design."""
    scenario = REPO / "tests" / "scenarios" / name
    assert (scenario / "src" / "train.py").read_text() == SCENARIOS[name].script_path.read_text(), (
        "scenario script changed: rerun scripts/make_fixtures.sh " + name)
    exp = json.loads((scenario / "expected.json").read_text())
    assert exp == expected_for(name, scenario / "src" / "train.py", scenario / "logs")
    ranks = sorted(int(p.name.rsplit("_", 1)[1]) for p in (scenario / "dumps").iterdir())
    world = SCENARIOS[name].world_size
    assert ranks == [r for r in range(world) if r not in SCENARIOS[name].ranks_without_dump]


def test_no_local_paths_and_small():
    total = 0
    for scenario in SCENARIOS_ON_DISK:
        for f in scenario.rglob("*"):
            if not f.is_file():
                continue
            if f.parent.name == "dumps":
                total += f.stat().st_size
            # The real NCCL dumps come from another machine (/workspace/job/...).
            if not scenario.name.startswith("nccl_"):
                assert not LOCAL_PATH.search(f.read_bytes()), f
    assert total < 1_000_000
