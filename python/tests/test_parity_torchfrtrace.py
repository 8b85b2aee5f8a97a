"""Everything torchfrtrace reports as a mismatch, desync reports too.

For every committed scenario with pickle dumps, run PyTorch's own analyzer and
parse each mismatch it prints ("Not all ranks joining collective" -> missing,
"has errors" -> op/size/dtype/state by Error type, "Input/output mismatch" ->
numel). desync's JSON `mismatches` must contain each one (same process group
name and collective_seq_id).

Two inputs per Gloo scenario:
- raw: the dumps as written. torch 2.11's torchfrtrace crashes on every Gloo
  dump (pg_config is keyed "" -> KeyError: ('0', <rank>)); the test asserts that
  crash, and that desync reads the same files and reaches the designed verdict.
- repaired: pg_config rebuilt from the entries and "gloo:" renamed to "nccl:"
  ("barrier" -> "all_reduce_barrier"), see desync_jobs/frtrace.py. desync
  still analyses the original dumps.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import committed_scenarios, run_desync
from desync_jobs import frtrace

pytestmark = pytest.mark.parity


def _pickle_scenarios():
    cases = []
    for scenario in committed_scenarios():
        files = sorted((scenario / "dumps").iterdir())
        if not files or files[0].read_bytes()[:1] != b"\x80":
            continue  # JSON dumps: torchfrtrace reads pickle only
        prefix = re.sub(r"\d+$", "", files[0].name)
        is_gloo = b"gloo:" in files[0].read_bytes()
        cases.append(pytest.param(scenario, prefix, "raw", id=f"{scenario.name}-raw"))
        if is_gloo:
            cases.append(pytest.param(scenario, prefix, "repaired", id=f"{scenario.name}-repaired"))
    return cases


CASES = _pickle_scenarios()


@pytest.fixture(scope="session")
def torchfrtrace_results(tmp_path_factory):
    """torchfrtrace's result for every (scenario, variant), computed at first use in one
    process that imports torch once (frtrace.run_torchfrtrace_many): one CLI run per case
    cost ten seconds of a two-core CI machine, nearly all of it `import torch`."""
    scratch = tmp_path_factory.mktemp("torchfrtrace")
    jobs, keys = [], []
    for case in CASES:
        scenario, prefix, variant = case.values
        dumps = scenario / "dumps"
        target = dumps
        if variant == "repaired":
            target = scratch / f"{scenario.name}-repaired"
            frtrace.repair_pg_config(dumps, target, prefix)
        jobs.append((target, prefix, bool(frtrace.missing_ranks_of_world(dumps, prefix))))
        keys.append((scenario.name, variant))
    return dict(zip(keys, frtrace.run_torchfrtrace_many(jobs, scratch / "out")))


def test_the_batch_runs_torchfrtrace_as_its_cli_does(torchfrtrace_results, tmp_path):
    """The batched runner is only a faster way to run the CLI: on the first raw case (a
    crash, for Gloo) and the first repaired one (a report), the CLI gives the same exit code,
    crash and mismatches."""
    picked = {}
    for case in CASES:
        picked.setdefault(case.values[2], case.values)
    assert picked, "no pickle scenarios"
    for scenario, prefix, variant in picked.values():
        dumps = scenario / "dumps"
        target = dumps
        if variant == "repaired":
            target = tmp_path / scenario.name
            frtrace.repair_pg_config(dumps, target, prefix)
        cli = frtrace.run_torchfrtrace(target, prefix,
                                       bool(frtrace.missing_ranks_of_world(dumps, prefix)))
        batched = torchfrtrace_results[(scenario.name, variant)]
        assert (cli.returncode, cli.crashed, cli.crash_summary, cli.mismatches) == \
            (batched.returncode, batched.crashed, batched.crash_summary, batched.mismatches), \
            (scenario.name, variant)


@pytest.mark.parametrize("scenario,prefix,variant", CASES)
def test_desync_reports_what_torchfrtrace_reports(scenario, prefix, variant, torchfrtrace_results,
                                                  record_property):
    dumps = scenario / "dumps"
    res = torchfrtrace_results[(scenario.name, variant)]
    record_property("torchfrtrace_returncode", res.returncode)
    record_property("torchfrtrace_crash", res.crash_summary)
    record_property("torchfrtrace_mismatches",
                    [(m.process_group, m.collective_seq_id, m.kind, m.ranks) for m in res.mismatches])
    source = scenario / "src"
    _, report, _ = run_desync(dumps, source_root=source if source.exists() else None)
    is_gloo = b"gloo:" in next(dumps.iterdir()).read_bytes()
    if variant == "raw" and is_gloo:
        # Where torchfrtrace cannot read the dumps at all, desync must still get it right.
        assert res.crashed, "torchfrtrace read raw Gloo dumps; update this test and the README"
        expected = json.loads((scenario / "expected.json").read_text())
        assert report["verdict"]["category"] == expected["category"], report["verdict"]
        assert report["verdict"]["culprit_ranks"] == expected["culprit_ranks"], report["verdict"]
        return
    assert not res.crashed, f"torchfrtrace crashed on the {variant} dumps: {res.crash_summary}"
    have = {(m["process_group"]["name"], m["collective_seq_id"]) for m in report["mismatches"]}
    missing = [m for m in res.mismatches if (m.process_group, m.collective_seq_id) not in have]
    assert not missing, f"torchfrtrace found mismatches desync does not report: {missing}"
