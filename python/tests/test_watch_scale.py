"""`desync watch --store` against stand-in NCCL workers (python/desync_jobs/standin.py) that
answer like torch's `dump_nccl_trace_pickle` handler, registered in a real torch TCPStore.

What must hold, decided from the stand-ins' design before desync runs:
- while the job is healthy, polls ask for active entries without frames
  (`onlyactive=true&includestacktraces=false`) after one whole first poll, and fetch far
  fewer bytes than the whole recorders;
- after the injected stall (rank 5 never issues a collective the others wait in), the alert
  names rank 5 as a stall, from whole recorders with frames (the report has a call site),
  read again whole only from the ranks the finding is about: rank 5 and one rank of those
  waiting for it, never every rank;
- a handler that refuses parameters (HTTP 400) is asked plainly and the watch works the same.
The 256 to 4,096-rank figures come from bench/watch_scale.py, not from here.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from conftest import desync_bin, synth_bin

torch_dist = pytest.importorskip("torch.distributed")

from desync_jobs.standin import StandIns, healthy_states, synth_state  # noqa: E402

RANKS = 32
STALLED = 5


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    out = tmp_path_factory.mktemp("standin")
    # 12 s of a job moving forward (8 states, 1.5 s apart): more than any test's healthy part.
    healthy = healthy_states(synth_bin(), out, RANKS, count=8)
    fault = synth_state(synth_bin(), out / "fault", RANKS, f"stall:ranks={STALLED},seq=2300")
    return healthy, fault


def _watch_standins(states, refuse_params: bool):
    healthy, fault = states
    workers = StandIns(RANKS, healthy, fault, refuse_params=refuse_params).start()
    store = torch_dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    workers.register("127.0.0.1", store.port)
    proc = subprocess.Popen(
        [str(desync_bin()), "watch", "--store", f"127.0.0.1:{store.port}", "--interval", "0.5",
         "--lag", "2", "--format", "json", "--no-save", "--exit-on-alert", "--for", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events: list[tuple[float, dict]] = []

    def read():
        for line in proc.stdout:
            events.append((time.time(), json.loads(line)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(5)
    workers.switch()
    try:
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=5)
        workers.stop()
    return proc, events, workers


def _check(proc, events, workers):
    err = proc.stderr.read()
    assert proc.returncode == 1, f"exit {proc.returncode}: {err[-2000:]}"
    before = [e for t, e in events if e.get("event") == "status" and t < workers.switched_at]
    assert len(before) >= 4, before
    assert not before[0]["active_only"], "the first poll reads whole recorders"
    cheap = [e for e in before[1:] if e["active_only"]]
    assert cheap, "no active-only poll while the job was healthy"
    assert max(e["bytes"] for e in cheap) * 20 < before[0]["bytes"], \
        (before[0]["bytes"], [e["bytes"] for e in cheap])
    alerts = [e for _, e in events if e.get("event") == "alert"]
    assert len(alerts) == 1, alerts
    verdict = alerts[0]["report"]["verdict"]
    assert verdict["category"] == "stall"
    assert verdict["culprit_ranks"] == [STALLED]
    sites = json.dumps(alerts[0]["report"]).count('"line"')
    assert sites > 0, "the alert came without frames: it was not taken from whole recorders"


def test_watch_polls_active_entries_and_alerts_from_whole_recorders(states):
    proc, events, workers = _watch_standins(states, refuse_params=False)
    _check(proc, events, workers)
    assert workers.counters.by_kind.get("active", 0) > 0
    assert workers.counters.refused == 0
    # Confirmed from the stalled rank and a representative of the waiting ones, not all 32.
    counters = workers.counters
    whole_after = counters.requests_by_kind.get("whole", 0) - counters.at_switch.get("whole", 0)
    assert 2 <= whole_after <= 4, (whole_after, counters)
    alerting = [e for _, e in events if e.get("judgement") == "alert"]
    assert [e["confirmed_whole"] for e in alerting] == [whole_after], alerting
    assert not alerting[0]["active_only"]


def test_a_handler_that_refuses_parameters_is_asked_plainly(states):
    proc, events, workers = _watch_standins(states, refuse_params=True)
    err = proc.stderr.read()
    assert proc.returncode == 1, f"exit {proc.returncode}: {err[-2000:]}"
    # Each worker refuses once, is remembered, and is fetched whole from then on.
    assert workers.counters.refused == RANKS, workers.counters
    alerts = [e for _, e in events if e.get("event") == "alert"]
    assert [a["report"]["verdict"]["culprit_ranks"] for a in alerts] == [[STALLED]]


def test_per_node_publishers_and_one_judge(states, tmp_path):
    """Above one watcher: two agents (`desync publish`, one per "node" of 16 ranks) keep their
    ranks' recorders in one directory; one `desync watch --dir` judges the whole job and names
    the stalled rank. Each agent polls its own ranks only."""
    healthy, fault = states
    workers = StandIns(RANKS, healthy, fault).start()
    store = torch_dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    workers.register("127.0.0.1", store.port)
    shared = tmp_path / "live"
    half = RANKS // 2
    agents = [
        subprocess.Popen(
            [str(desync_bin()), "publish", "--store", f"127.0.0.1:{store.port}", "--ranks",
             f"{low}-{low + half - 1}", "-o", str(shared), "--interval", "0.5", "--format",
             "json", "--for", "60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for low in (0, half)
    ]
    try:
        # The judge starts once the agents have written every rank.
        deadline = time.time() + 30
        while len(list(shared.glob("rank_*"))) < RANKS and time.time() < deadline:
            time.sleep(0.2)
        assert len(list(shared.glob("rank_*"))) == RANKS, sorted(p.name for p in shared.iterdir())
        judge = subprocess.Popen(
            [str(desync_bin()), "watch", "--dir", str(shared), "--interval", "0.5", "--lag", "2",
             "--format", "json", "--no-save", "--exit-on-alert", "--for", "60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        workers.switch()
        out, err = judge.communicate(timeout=90)
    finally:
        for agent in agents:
            agent.kill()
        polls = [[json.loads(line) for line in agent.communicate(timeout=30)[0].splitlines()]
                 for agent in agents]
        workers.stop()
    assert judge.returncode == 1, f"exit {judge.returncode}: {err[-2000:]}"
    events = [json.loads(line) for line in out.splitlines()]
    statuses = [e for e in events if e.get("event") == "status"]
    # The healthy job moves on between polls: nothing held long enough to alert before the fault.
    assert statuses[0]["observed"] != "stall" and statuses[0]["judgement"] != "alert", statuses[0]
    alerts = [e for e in events if e.get("event") == "alert"]
    assert len(alerts) == 1, alerts
    verdict = alerts[0]["report"]["verdict"]
    assert (verdict["category"], verdict["culprit_ranks"]) == ("stall", [STALLED])
    for agent_polls in polls:
        published = [p for p in agent_polls if p["event"] == "published"]
        assert published and all(p["written"] == half for p in published), agent_polls[:3]
        assert any(p["active_only"] for p in published), "agents poll active entries"
