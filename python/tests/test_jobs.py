"""The job mechanics, checked on fresh runs: real Gloo jobs, real Flight Recorder dumps.

These tests do not judge a diagnosis; they check that each job reproduced its
bug the way it was designed and that the dump plumbing (dump-signal broadcast,
SIGABRT hook, neutral paths) delivered every surviving rank's evidence.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import PYTHON_DIR
from desync_jobs import native
from desync_jobs.run import RunResult

pytestmark = pytest.mark.jobs

SIGABRT, SIGSEGV = -6, -11
GRADS = [[577]]  # the flattened gradient of the 16-32-1 MLP


def load(result: RunResult) -> dict[int, dict]:
    dumps = {}
    for r in result.ranks:
        if r.dump is None:
            continue
        data = Path(r.dump).read_bytes()
        assert data, f"rank {r.rank}: empty dump"
        dumps[r.rank] = pickle.loads(data)
    return dumps


def last(dump: dict) -> dict:
    return dump["entries"][-1]


def train_frames(entry: dict) -> list[tuple[str, int]]:
    return [(f["name"], f["line"]) for f in entry.get("frames", []) if f["filename"].endswith("train.py")]


def check_common(result: RunResult, dumps: dict[int, dict]) -> None:
    assert not result.deadline_hit, "the job ran into the launcher's hard deadline"
    for rank, dump in dumps.items():
        assert dump["version"] == "2.10"
        assert dump["entries"], f"rank {rank}: no entries"
        for e in dump["entries"]:
            assert e["profiling_name"].startswith("gloo:")
            for f in e.get("frames", []):
                assert not f["filename"].startswith(("/work/", "/root/")), f["filename"]
        files = {f["filename"] for e in dump["entries"] for f in e.get("frames", [])}
        assert f"/tmp/desync-jobs/{result.scenario}/train.py" in files or not files


def test_abort_hook_dumps_from_a_native_thread(tmp_path):
    """The C SIGABRT hook runs Python (with the GIL) when a non-Python thread aborts."""
    native.build()
    marker = tmp_path / "marker"
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(PYTHON_DIR)!r})
        from desync_jobs import native
        ext = native.load()
        ext.install(lambda: open({str(marker)!r}, "w").write("dumped"))
        ext.abort_in_native_thread()
        time.sleep(30)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == SIGABRT, proc.stderr
    assert marker.read_text() == "dumped"


def test_healthy(fresh_run):
    result = fresh_run("healthy")
    dumps = load(result)
    check_common(result, dumps)
    assert [r.returncode for r in result.ranks] == [0, 0, 0, 0]
    assert sorted(dumps) == [0, 1, 2, 3]
    streams = {r: [(e["collective_seq_id"], e["profiling_name"], e["input_sizes"])
                   for e in d["entries"]] for r, d in dumps.items()}
    assert all(s == streams[0] for s in streams.values())
    ops = {name for _, name, _ in streams[0]}
    assert ops == {"gloo:broadcast", "gloo:all_reduce", "gloo:all_gather", "gloo:barrier"}
    assert [seq for seq, _, _ in streams[0]] == list(range(1, len(streams[0]) + 1))
    assert all(e["process_group"] == ("0", "default_pg") for e in dumps[0]["entries"])
    assert last(dumps[0])["profiling_name"] == "gloo:barrier"


def test_early_stop_rank3_breaks_and_aborts(fresh_run):
    result = fresh_run("early_stop")
    dumps = load(result)
    check_common(result, dumps)
    assert sorted(dumps) == [0, 1, 2, 3], "the SIGABRT hook must keep rank 3's dump"
    assert result.ranks[3].returncode == SIGABRT
    log3 = Path(result.ranks[3].log).read_text()
    assert "target reached at step" in log3 and "[abort_dump] SIGABRT" in log3
    seqs = {r: last(d)["collective_seq_id"] for r, d in dumps.items()}
    assert len(set(seqs.values())) == 1
    assert last(dumps[3])["input_sizes"] == [[3]]  # the summary all_reduce after `break`
    assert train_frames(last(dumps[3]))[0][0] == "main"
    for r in (0, 1, 2):
        assert last(dumps[r])["input_sizes"] == GRADS
        assert train_frames(last(dumps[r]))[0][0] == "allreduce_gradients"


def test_extra_collective_rank0_logs_alone(fresh_run):
    result = fresh_run("extra_collective")
    dumps = load(result)
    check_common(result, dumps)
    assert sorted(dumps) == [0, 1, 2, 3]
    assert result.ranks[0].returncode == SIGABRT
    assert {last(d)["collective_seq_id"] for d in dumps.values()} == {10}
    assert last(dumps[0])["input_sizes"] == [[2]]
    assert all(last(dumps[r])["input_sizes"] == GRADS for r in (1, 2, 3))


def test_ragged_allgather_last_batch(fresh_run):
    result = fresh_run("ragged_allgather")
    dumps = load(result)
    check_common(result, dumps)
    assert sorted(dumps) == [0, 1, 2, 3]
    assert result.ranks[3].returncode == SIGABRT  # Gloo aborts the rank with the short buffer
    for r, d in dumps.items():
        e = last(d)
        assert e["profiling_name"] == "gloo:all_gather"
        assert e["input_sizes"] == ([[1, 2]] if r == 3 else [[2, 2]])


def test_stalled_rank_never_issues(fresh_run):
    result = fresh_run("stalled_rank")
    dumps = load(result)
    check_common(result, dumps)
    assert sorted(dumps) == [0, 1, 2, 3], "the stuck rank must dump on the signal"
    assert not result.ranks[2].killed
    peers = {last(dumps[r])["collective_seq_id"] for r in (0, 1, 3)}
    assert peers == {8}
    assert last(dumps[2])["collective_seq_id"] == 7


def test_crash_rank1_leaves_no_dump(fresh_run):
    result = fresh_run("crash")
    dumps = load(result)
    check_common(result, dumps)
    assert result.ranks[1].returncode == SIGSEGV
    assert sorted(dumps) == [0, 2, 3]
    assert {last(d)["collective_seq_id"] for d in dumps.values()} == {9}
    assert all(last(d)["profiling_name"] == "gloo:all_reduce" for d in dumps.values())


def test_pg_order_waits_in_different_groups(fresh_run):
    result = fresh_run("pg_order")
    dumps = load(result)
    check_common(result, dumps)
    assert sorted(dumps) == [0, 1, 2, 3]
    for r, d in dumps.items():
        descs = {e["process_group"][1] for e in d["entries"]}
        assert descs == {"default_pg", "tp", "dp"}
        e = last(d)
        assert e["collective_seq_id"] == 4
        assert e["process_group"][1] == ("tp" if r in (0, 3) else "dp")
