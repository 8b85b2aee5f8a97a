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

import pytest

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


# p2p (issue 43): NCCL records send/recv, Gloo none, so these sets are built by hand in the
# exact layout of the real NCCL dump from an H100 (shared fixtures: tests/scenarios/
# nccl_h100_healthy), two ranks of the default group. Each rank runs `all_reduce` steps; rank 0
# sends to rank 1 between them.
def _nccl_entry(record_id: int, name: str, seq: int, p2p_seq: int, op_id: int, size: int,
                state: str = "completed", is_p2p: bool = False) -> dict:
    t = 1_795_343_355_833_221_781 + record_id * 50_000_000
    done = state == "completed"
    return {
        "frames": [], "record_id": record_id, "pg_id": 0, "process_group": ("0", "default_pg"),
        "thread_name": "python3", "thread_id": "139633593327936",
        "collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": op_id,
        "profiling_name": name, "time_created_ns": t,
        "duration_ms": 0.023 if done else None,
        "input_sizes": [[size]], "input_dtypes": ["Float"],
        "output_sizes": [[size]], "output_dtypes": ["Float"],
        "state": state,
        "time_discovered_started_ns": t + 1_000 if state != "scheduled" else None,
        "time_discovered_completed_ns": t + 2_000 if done else None,
        "retired": done, "timeout_ms": 600_000, "is_p2p": is_p2p,
    }


class _NcclRank:
    """One rank's recorder: record ids, seq and p2p counters as ProcessGroupNCCL keeps them."""

    def __init__(self):
        self.entries: list[dict] = []
        self.seq = self.p2p_seq = self.op = 0

    def _add(self, name, size, state, is_p2p):
        self.op += 1
        self.entries.append(_nccl_entry(len(self.entries), name, self.seq, self.p2p_seq, self.op,
                                        size, state, is_p2p))

    def all_reduce(self, size=1024, state="completed"):
        self.seq += 1
        self._add("nccl:all_reduce", size, state, False)

    def p2p(self, name, size, state="completed"):
        self.p2p_seq += 1
        self._add(name, size, state, True)

    def batch(self, name, size, state):
        """`batch_isend_irecv` of one op: the op has no CUDA events (stays scheduled), the
        batch's `coalesced` end marker carries the state."""
        self.p2p_seq += 1
        self._add(name, size, "scheduled", True)
        self.entries.append(_nccl_entry(len(self.entries), "nccl:coalesced", self.seq, self.p2p_seq,
                                        self.op, 0, state, True))
        self.entries[-1]["input_sizes"] = self.entries[-1]["output_sizes"] = []
        self.entries[-1]["input_dtypes"] = self.entries[-1]["output_dtypes"] = []

    def dump(self, keep_from: int = 0) -> dict:
        completed = max(e["collective_seq_id"] for e in self.entries
                        if not e["is_p2p"] and e["state"] == "completed")
        return {
            "version": "2.10",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "comm_lib_version": "2.28.9",
            "pg_status": {"0": {"last_enqueued_collective": self.seq,
                                "last_started_collective": self.seq,
                                "last_completed_collective": completed}},
            # A ring buffer that dropped its oldest entries keeps the newest, ids unchanged.
            "entries": self.entries[keep_from:],
        }


def _write_nccl(dest: Path, dumps: list[dict]) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for rank, dump in enumerate(dumps):
        (dest / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump, protocol=2))



@pytest.mark.parametrize("batched", [False, True], ids=["isend", "batch_isend_irecv"])
def test_a_send_whose_recv_was_never_posted_is_no_all_clear(tmp_path, batched):
    # Rank 0 posts a send to rank 1 after step 3 and goes on (isend: the all_reduce of step 4
    # runs on the group's communicator, the send on the pair's); rank 1 runs step 4 too but
    # never posts the recv. Every collective agrees and completed: the old reading was
    # "all 2 ranks agree ... nothing is stuck", exit 0.
    sender, receiver = _NcclRank(), _NcclRank()
    for _ in range(3):
        sender.all_reduce()
        receiver.all_reduce()
    if batched:
        sender.batch("nccl:send 0->1", 4096, "started")
    else:
        sender.p2p("nccl:send 0->1", 4096, "started")
    sender.all_reduce()
    receiver.all_reduce()
    _write_nccl(tmp_path, [sender.dump(), receiver.dump()])
    code, report, _ = run_desync(tmp_path)
    assert code == 1, report["verdict"]
    assert verdict(report) == ("stall", [1]), report["verdict"]
    assert report["verdict"]["collective_seq_id"] == 3
    headline = report["verdict"]["headline"]
    assert "rank 0 waits in send to rank 1" in headline and "recv" in headline, headline
    [m] = report["p2p_mismatches"]
    assert (m["src"], m["dst"], m["kind"]) == (0, 1, "send_unmatched"), m


def test_a_send_whose_recv_fell_out_of_the_receivers_ring_buffer_pairs_from_what_both_hold(
        tmp_path):
    # Six steps, each an all_reduce and then a send 0->1 of that step's own size, all
    # completed. Rank 1's ring buffer dropped its first two steps (their recvs included);
    # rank 0 holds everything. Counting each side from its oldest op paired step 1's send
    # with step 3's recv (a size mismatch) and left two sends unmatched.
    sender, receiver = _NcclRank(), _NcclRank()
    for step in range(1, 7):
        sender.all_reduce()
        receiver.all_reduce()
        sender.p2p("nccl:send 0->1", 1000 * step)
        receiver.p2p("nccl:recv 1<-0", 1000 * step)
    _write_nccl(tmp_path, [sender.dump(), receiver.dump(keep_from=4)])
    code, report, _ = run_desync(tmp_path)
    assert report["p2p_mismatches"] == [], report["p2p_mismatches"]
    assert (code, verdict(report)) == (0, ("healthy", [])), report["verdict"]


def test_a_pending_send_the_receiver_has_not_reached_yet_is_no_mismatch(tmp_path):
    # Rank 0 sent after step 3 and waits; rank 1 is still in step 3 (its newest collective is
    # seq 3): its recv may yet come. That is not a p2p mismatch.
    sender, receiver = _NcclRank(), _NcclRank()
    for _ in range(3):
        sender.all_reduce()
        receiver.all_reduce()
    sender.p2p("nccl:send 0->1", 4096, "started")
    _write_nccl(tmp_path, [sender.dump(), receiver.dump()])
    _, report, _ = run_desync(tmp_path)
    assert report["p2p_mismatches"] == [], report["p2p_mismatches"]
