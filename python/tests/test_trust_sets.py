"""No wrong all-clear: sets whose records leave a gap a hang could hide in, and sets that mix
runs, each made from the real dumps committed under tests/scenarios (issue 43).

Each set is what a careless collection or a damaged recorder really produces: the previous
run's dumps beside the new ones, a rank's leftover file from an earlier run, a recorder whose
status and entries disagree. The edits touch only the fields the case is about (times,
pg_status); everything else is the real job's bytes. The real Gloo jobs for the other gaps
(a sub-group member that never arrives, a lost node, an in-process restart) are committed
scenarios checked by crates/desync/tests/scenarios.rs.
"""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

from conftest import SCENARIO_DIR, run_desync

HOUR_NS = 3_600 * 10**9


def copy_dumps(scenario: str, dest: Path, prefix: str = "gloo_trace_rank_") -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted((SCENARIO_DIR / scenario / "dumps").iterdir()):
        rank = src.name.rsplit("_", 1)[-1]
        shutil.copyfile(src, dest / f"{prefix}{rank}")


def edit(path: Path, change) -> None:
    dump = pickle.loads(path.read_bytes())
    change(dump)
    path.write_bytes(pickle.dumps(dump, protocol=2))


def verdict(report: dict) -> tuple[str, list[int]]:
    return report["verdict"]["category"], report["verdict"]["culprit_ranks"]


def run_warnings(report: dict) -> list[str]:
    return [w["message"] for w in report["warnings"] if w["kind"] == "run"]


def test_the_previous_runs_dumps_in_a_subfolder_are_set_aside(tmp_path):
    # The healthy run (more entries, older) beside the newer hung run: the old rule kept the
    # dump with more entries per rank and called the hang healthy.
    copy_dumps("stalled_rank", tmp_path)
    copy_dumps("healthy", tmp_path / "previous")
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert verdict(report) == ("stall", [2])
    [message] = run_warnings(report)
    assert "previous" in message and "rank(s) 0-3" in message and "older" in message


def test_the_previous_runs_dumps_under_another_prefix_are_set_aside(tmp_path):
    copy_dumps("stalled_rank", tmp_path)
    copy_dumps("healthy", tmp_path, prefix="attempt1_rank_")
    code, report, _ = run_desync(tmp_path)
    assert verdict(report) == ("stall", [2]), report["verdict"]
    assert any("attempt1_rank_" in m for m in run_warnings(report))


def test_a_newer_run_wins_wherever_it_lies(tmp_path):
    # The same two runs the other way round: the newer (hung) run in the subfolder.
    copy_dumps("healthy", tmp_path)
    copy_dumps("stalled_rank", tmp_path / "retry")
    _, report, _ = run_desync(tmp_path)
    assert verdict(report) == ("stall", [2])


def test_a_leftover_rank_from_an_earlier_run_is_no_dump(tmp_path):
    # Rank 1 died without a dump; a file for rank 1 left by an earlier run of the same job
    # ends at the same seq as its peers, but was written two hours before them.
    copy_dumps("crash", tmp_path)
    stale = tmp_path / "gloo_trace_rank_1"
    shutil.copyfile(tmp_path / "gloo_trace_rank_0", stale)

    def two_hours_earlier(dump):
        for e in dump["entries"]:
            e["time_created_ns"] -= 2 * HOUR_NS

    edit(stale, two_hours_earlier)
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert verdict(report) == ("crash", [1])
    [message] = run_warnings(report)
    assert "rank 1's dump" in message and "119 min before" in message


def test_every_gloo_rank_in_flight_in_the_same_collective_is_no_all_clear(tmp_path):
    copy_dumps("healthy", tmp_path)
    for path in tmp_path.iterdir():
        edit(path, lambda d: d["pg_status"]["0"].update(last_completed_collective=37))
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert verdict(report) == ("inconclusive", [])
    assert report["verdict"]["collective_seq_id"] == 38
    assert "none of them completed it" in report["verdict"]["headline"]


def test_one_rank_still_finishing_the_last_collective_stays_healthy(tmp_path):
    # Gloo marks completion from another thread: a rank may read "in flight" at dump time.
    # Completion on any other member shows that every member arrived.
    copy_dumps("healthy", tmp_path)
    edit(tmp_path / "gloo_trace_rank_2",
         lambda d: d["pg_status"]["0"].update(last_completed_collective=37))
    code, report, _ = run_desync(tmp_path)
    assert (code, verdict(report)) == (0, ("healthy", []))


def test_a_status_ahead_of_the_entries_is_no_all_clear(tmp_path):
    copy_dumps("healthy", tmp_path)
    edit(tmp_path / "gloo_trace_rank_2", lambda d: d["pg_status"]["0"].update(
        last_enqueued_collective=41, last_completed_collective=41))
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert verdict(report) == ("inconclusive", [2])
    assert "seq 41" in report["verdict"]["headline"]


def test_nccl_entries_completed_past_their_status_are_no_all_clear(tmp_path):
    src = SCENARIO_DIR / "nccl_h100_healthy" / "dumps" / "nccl_trace_rank_0"
    dest = tmp_path / "nccl_trace_rank_0"
    shutil.copyfile(src, dest)
    code, report, _ = run_desync(tmp_path)
    assert (code, verdict(report)) == (0, ("healthy", [])), "the real dump reads healthy"

    def status_lags(dump):
        for status in dump["pg_status"].values():
            status["last_completed_collective"] = status["last_completed_collective"] - 3

    edit(dest, status_lags)
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert verdict(report) == ("inconclusive", [0])
    assert "contradict" in report["verdict"]["headline"]


def test_a_wait_cycle_through_a_group_nobody_lists_is_no_deadlock_when_it_may_not_close(tmp_path):
    # skip_report: rank 1 alone issued an all_reduce on the metrics group (its members are in no
    # record; it is assumed to span the world because it never completed) while ranks 0, 2, 3
    # wait for rank 1 in the default group: whichever ranks the members are, rank 1 waits for
    # ranks that wait for it, so the cycle closes (the committed scenario: rank 1's divergence,
    # as nobody else ever used the group). Here rank 3 never
    # issued the default group's seq 7: rank 1 may be waiting for rank 3 alone, which waits for
    # nobody, so the cycle rests on a member nobody recorded.
    copy_dumps("skip_report", tmp_path)

    def one_collective_behind(dump):
        dump["entries"] = [e for e in dump["entries"]
                           if (e["process_group"][0], e["collective_seq_id"]) != ("0", 7)]
        dump["pg_status"]["0"].update(last_enqueued_collective=6, last_completed_collective=6)

    _, report, _ = run_desync(tmp_path)
    assert verdict(report) == ("divergence", [1])
    edit(tmp_path / "gloo_trace_rank_3", one_collective_behind)
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert report["verdict"]["category"] == "inconclusive"
    assert "Not called a deadlock" in report["verdict"]["headline"]


def test_a_broadcast_finished_on_some_ranks_only_is_no_all_clear(tmp_path):
    # A rooted collective finishes on the root once it has sent and on a receiver once it has
    # heard from the root: the healthy job cut after its fourth parameter broadcast, rank 0
    # (the root) and rank 1 done, ranks 2-3 still in it. For an all_reduce one finished member
    # would show that all arrived; for a broadcast it does not.
    copy_dumps("healthy", tmp_path)
    for path in tmp_path.iterdir():
        rank = int(path.name.rsplit("_", 1)[-1])

        def cut(dump, rank=rank):
            dump["entries"] = [e for e in dump["entries"] if e["collective_seq_id"] <= 4]
            done = 4 if rank < 2 else 3
            dump["pg_status"]["0"].update(last_enqueued_collective=4,
                                          last_completed_collective=done)

        edit(path, cut)
    code, report, _ = run_desync(tmp_path)
    assert code == 1
    assert verdict(report) == ("inconclusive", [])
    assert "not all of them completed it" in report["verdict"]["headline"]
