"""Departure by call path (issue 42 item 1), on sets made from the real dumps committed under
tests/scenarios: only the frames of chosen collectives are edited, as if those ranks had
reached the same op and shape from other code; everything else is the real job's bytes.

A rank whose collectives paired with its peers' by shape while coming from other code had
parted there: the earliest mismatch moves back to where the paths parted, and the first
conflict becomes its symptom. Paths that part and meet again before any conflict (a balanced
`if rank == 0: broadcast(x) else: broadcast(y)`) change nothing.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from test_trust_sets import copy_dumps, edit

from conftest import run_desync


def reroute(path: Path, seqs: set[int], line: int, function: str) -> None:
    """Gives the collectives at `seqs` another user call site (the innermost user frame)."""

    def change(dump: dict) -> None:
        for e in dump["entries"]:
            if e["collective_seq_id"] in seqs:
                # A dump shares one frame object between entries (pickle's memo): copy first.
                e["frames"] = [dict(f) for f in e["frames"]]
                for f in e["frames"]:
                    if f["filename"].endswith("/train.py"):
                        f["line"], f["name"] = line, function
                        break

    edit(path, change)


def seq_entries(path: Path) -> dict[int, dict]:
    dump = pickle.loads(path.read_bytes())
    return {e["collective_seq_id"]: e for e in dump["entries"]}


def test_paths_that_part_before_the_conflict_move_the_departure_back(tmp_path):
    # dtype_mismatch: rank 1 all-reduces in BFloat16 at seq 8 from the same line as its peers.
    # Say rank 1 had reached seq 7 and 8 from another line (same op, shape and dtype at 7):
    # it parted at 7, and the dtype at 8 is the symptom.
    copy_dumps("dtype_mismatch", tmp_path)
    reroute(tmp_path / "gloo_trace_rank_1", {7, 8}, 61, "evaluate")
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    v = report["verdict"]
    assert (v["category"], v["culprit_ranks"], v["collective_seq_id"]) == ("divergence", [1], 7)
    earliest = report["earliest_mismatch"]
    assert earliest["kind"] == "call_path" and earliest["collective_seq_id"] == 7
    assert earliest["departure"]["kind"] == "different_call_site"
    assert earliest["symptom"]["collective_seq_id"] == 8
    assert earliest["symptom"]["kind"] == "dtype"
    assert any("until seq 8 (dtype)" in e for e in report["evidence"]), report["evidence"]


def test_paths_that_meet_again_before_the_conflict_change_nothing(tmp_path):
    # Rank 1 reached seq 5 from another line and seq 6-8 from the shared one: a balanced
    # if/else earlier in the run, not where the ranks parted.
    copy_dumps("dtype_mismatch", tmp_path)
    reroute(tmp_path / "gloo_trace_rank_1", {5}, 61, "evaluate")
    _, report, _ = run_desync(tmp_path)
    v = report["verdict"]
    assert (v["category"], v["culprit_ranks"], v["collective_seq_id"]) == (
        "metadata_mismatch", [1], 8)
    assert report["earliest_mismatch"]["symptom"] is None


def test_a_path_difference_without_any_conflict_is_no_finding(tmp_path):
    # The healthy job with one rank's mid-run collective reached from another line: every op,
    # size and dtype agrees, so the ranks never stopped agreeing.
    copy_dumps("healthy", tmp_path)
    target = tmp_path / "gloo_trace_rank_2"
    middle = sorted(seq_entries(target))[len(seq_entries(target)) // 2]
    reroute(target, {middle}, 99, "broadcast_from_leader")
    code, report, _ = run_desync(tmp_path)
    assert (code, report["verdict"]["category"]) == (0, "healthy"), report["verdict"]
    assert report["earliest_mismatch"] is None
