"""Registry of the test jobs: which training script, how many ranks, which dump format.

Each script in this folder is an ordinary training script with one realistic bug.
``rank_env`` simulates per-node launcher differences (a node whose environment
differs from the others); it is the only per-rank input a job gets besides its
rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Scenario:
    name: str
    script: str
    world_size: int = 4
    dump_format: str = "pickle"
    rank_env: dict[int, dict[str, str]] = field(default_factory=dict)
    # Ranks expected to leave no dump (the crash scenario).
    ranks_without_dump: tuple[int, ...] = ()
    # A multi-module project (a directory staged whole; ``script`` is its entry point,
    # relative to it) instead of one script from this folder.
    project: Path | None = None
    args: tuple[str, ...] = ()
    # Simulated hosts: ranks are split into ``nodes`` equal blocks (torchrun's
    # LOCAL_RANK, GROUP_RANK, LOCAL_WORLD_SIZE follow); ``node_env`` is added to the
    # environment of every rank of a node (a host whose configuration differs).
    nodes: int = 1
    node_env: dict[int, dict[str, str]] = field(default_factory=dict)
    # The framework (Lightning, Accelerate, init_device_mesh) calls init_process_group;
    # the dumps are wired up by harness.install_when_initialized (autostart/).
    framework_init: bool = False
    # Hang watchdog (harness.ENV_HANG_S); None leaves it off (the PG timeout decides).
    hang_s: float | None = None
    fr_buffer: int = 2000
    deadline_s: float | None = None
    # Verdicts a fresh run may also get, each for a reason written beside the scenario: a
    # known gap the committed dumps do not show (the committed dumps get the designed one).
    fresh_run_may_read: tuple[str, ...] = ()

    @property
    def script_path(self) -> Path:
        if self.project is not None:
            return self.project / self.script
        return HERE / self.script


_ALL = [
    Scenario("healthy", "healthy.py"),
    Scenario("early_stop", "early_stop.py"),
    Scenario("extra_collective", "extra_collective.py"),
    Scenario("except_skip", "except_skip.py"),
    Scenario("ragged_allgather", "ragged_allgather.py"),
    Scenario("dtype_mismatch", "dtype_mismatch.py",
             rank_env={1: {"GRAD_COMM_DTYPE": "bf16"}}),
    Scenario("stalled_rank", "stalled_rank.py"),
    Scenario("pg_order", "pg_order.py"),
    Scenario("json_extra_collective", "extra_collective.py", dump_format="json"),
    Scenario("crash", "crash.py", ranks_without_dump=(1,)),
    Scenario("straggler", "straggler.py"),
    Scenario("early_stop_8", "early_stop.py", world_size=8),
    # Live (`desync watch`) scenarios: they hang for the whole PG timeout under Gloo too.
    Scenario("skip_report", "skip_report.py",
             rank_env={1: {"SHARD_EXPORT": "nightly-glitched"}}),
    Scenario("healthy_long", "skip_report.py"),
    # Membership and run identity (issue 43): evidence with gaps.
    # new_group() takes torch's default timeout (30 min), not init_process_group's: without
    # the hang watchdog, ranks 0-2 wait in the metrics all_reduce until the launcher's deadline.
    Scenario("subgroup_member_late", "subgroup_member_late.py",
             rank_env={3: {"OBJECT_STORE": "s3-stale"}}, hang_s=8.0),
    # Two simulated hosts of two ranks (single-script scenarios take per-rank env only).
    Scenario("lost_node", "lost_node.py",
             rank_env={0: {"LOCAL_WORLD_SIZE": "2"}, 1: {"LOCAL_WORLD_SIZE": "2"},
                       2: {"LOCAL_WORLD_SIZE": "2", "NODE_FAILS_AT_STEP": "6"},
                       3: {"LOCAL_WORLD_SIZE": "2", "NODE_FAILS_AT_STEP": "6"}},
             ranks_without_dump=(2, 3),
             # Known gap (issue 43): Gloo's pg_status counts a collective that failed because a
             # peer vanished as completed. A fresh run's dump may catch rank 1 after it recorded
             # the failure; then nothing in the dumps says a rank is missing, and desync reads
             # healthy: a wrong all-clear that no record can refute. On a loaded machine the
             # same set can read `straggler` instead (the same "no hang", with a late rank's
             # enqueue times on top: a CI run showed rank 0 82 ms late in 2 of 6 collectives).
             fresh_run_may_read=("healthy", "straggler")),
    Scenario("reinit_restart", "reinit_restart.py"),
]

SCENARIOS: dict[str, Scenario] = {s.name: s for s in _ALL}


def get(name: str) -> Scenario:
    """A scenario of this folder, or a framework job of ``tests/frameworks`` (see
    ``desync_jobs.frameworks``)."""
    if name in SCENARIOS:
        return SCENARIOS[name]
    from desync_jobs import frameworks

    jobs = frameworks.jobs()
    if name in jobs:
        return jobs[name]
    known = ", ".join([*SCENARIOS, *jobs])
    raise SystemExit(f"unknown scenario {name!r}; known: {known}")
