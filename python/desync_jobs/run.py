"""Launch one test job: N local ranks on Gloo, Flight Recorder dumps in ``--out``.

    python python/desync_jobs/run.py early_stop --out /tmp/fr [--world-size 4]
        [--format pickle|json] [--timeout 120] [--pg-timeout 6] [--logs DIR]

The launcher plays the role torchrun's agent plays: it hosts the job's TCPStore
(so the store outlives any rank), starts the ranks with torchrun's environment
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT=<free port>),
and watches them. As soon as a rank fails (non-zero exit, e.g. SIGABRT from
Gloo), a rank signals a dump, or the hard deadline passes, it sets the dump key
so every rank still alive dumps (see ``harness.py``); after a grace period it
kills what is left. Each rank writes ``<out>/<prefix><rank>``.

Scripts run from a neutral location so the committed dumps carry no path of
the machine that made them: the script is copied to
``<stage>/<scenario>/train.py``, this package to ``<stage>/lib/desync_jobs``,
and the interpreter is reached through ``<stage>/venv`` (a symlink to the
active virtual environment), so frames read ``<stage>/venv/lib/...``.
``<stage>`` is ``$DESYNC_JOBS_STAGE`` or ``/tmp/desync-jobs``.

A framework job (``desync_jobs.frameworks``, cases under ``tests/frameworks``) is
a project directory: it is staged whole as ``<stage>/<name>/`` and started with
its entry point and arguments; its ranks get torchrun's full environment
(GROUP_RANK, LOCAL_WORLD_SIZE, TORCHELASTIC_USE_AGENT_STORE=True, ...) split over
the job's simulated nodes, and, when the framework creates the process group
itself, ``<stage>/lib/desync_jobs/autostart`` on ``PYTHONPATH`` wires the dumps.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    # Run as a file: make the package importable.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from desync_jobs import harness, native  # noqa: E402
from desync_jobs.scenarios import Scenario, get  # noqa: E402

DEFAULT_PREFIX = "gloo_trace_rank_"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_GRACE_S = 15.0
PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass
class RankResult:
    rank: int
    returncode: int | None
    dump: str | None
    dump_bytes: int
    log: str
    killed: bool = False


@dataclass
class RunResult:
    scenario: str
    world_size: int
    dump_format: str
    out_dir: str
    prefix: str
    script: str
    elapsed_s: float
    signal_reason: str | None
    deadline_hit: bool
    ranks: list[RankResult] = field(default_factory=list)

    def ranks_with_dumps(self) -> list[int]:
        return [r.rank for r in self.ranks if r.dump is not None]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def stage_root() -> Path:
    return Path(os.environ.get("DESYNC_JOBS_STAGE", "/tmp/desync-jobs"))


def _atomic_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".copy-", dir=dst.parent)
    os.close(fd)
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _atomic_symlink(target: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    tmp = link.parent / f".link-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(target)
    os.replace(tmp, link)


def stage(scenario: Scenario, root: Path | None = None,
          script_path: Path | None = None,
          project_dir: Path | None = None) -> tuple[Path, Path, Path]:
    """Copy script and package to the neutral stage; return (python, script, libdir).

    ``script_path`` replaces the scenario's own script, ``project_dir`` a project scenario's
    whole source tree (e.g. copies patched with probes).
    """
    root = root or stage_root()
    if scenario.project is not None:
        script = _stage_project(scenario, root / scenario.name, project_dir)
        if script_path:
            _atomic_copy(Path(script_path), script)
    else:
        script = root / scenario.name / "train.py"
        _atomic_copy(script_path or scenario.script_path, script)
    lib = root / "lib"
    for src in sorted(PACKAGE_DIR.rglob("*")):
        if src.is_file() and src.suffix in (".py", ".c") and "__pycache__" not in src.parts:
            _atomic_copy(src, lib / "desync_jobs" / src.relative_to(PACKAGE_DIR))
    if sys.prefix != sys.base_prefix:  # inside a virtual environment
        _atomic_symlink(Path(sys.prefix), root / "venv")
        python = root / "venv" / "bin" / Path(sys.executable).name
    else:
        python = Path(sys.executable)
    return python, script, lib


def _stage_project(scenario: Scenario, dest: Path, source: Path | None = None) -> Path:
    """Copy a project directory (``source``, else the scenario's) to ``dest``, replacing an
    older copy; return its entry."""
    assert scenario.project is not None
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source or scenario.project, dest,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest / scenario.script


def rank_environment(scenario: Scenario, rank: int, world: int) -> dict[str, str]:
    """What torchrun's agent gives rank ``rank``, with ``nodes`` simulated hosts."""
    if scenario.project is None:  # the single-script scenarios: as they always ran
        return dict(RANK=str(rank), LOCAL_RANK=str(rank), **scenario.rank_env.get(rank, {}))
    if world % scenario.nodes:
        raise ValueError(f"{scenario.name}: {world} ranks do not split over {scenario.nodes} nodes")
    per_node = world // scenario.nodes
    node = rank // per_node
    env = dict(
        RANK=str(rank), LOCAL_RANK=str(rank % per_node), GROUP_RANK=str(node),
        NODE_RANK=str(node), ROLE_RANK=str(rank), LOCAL_WORLD_SIZE=str(per_node),
        GROUP_WORLD_SIZE=str(scenario.nodes), ROLE_WORLD_SIZE=str(world), ROLE_NAME="default",
        TORCHELASTIC_RUN_ID=f"desync-jobs-{scenario.name}", TORCHELASTIC_RESTART_COUNT="0",
        TORCHELASTIC_MAX_RESTARTS="0", TORCHELASTIC_USE_AGENT_STORE="True",
        # A host name per simulated node, for code that keys configuration on it.
        DESYNC_JOBS_NODE=f"node{node}",
    )
    env.update(scenario.node_env.get(node, {}))
    env.update(scenario.rank_env.get(rank, {}))
    return env


def _free_store():
    import datetime as dt

    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, None, is_master=True,
                          timeout=dt.timedelta(seconds=30), wait_for_workers=False)
    return store, store.port


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_job(
    name: str,
    out_dir: str | os.PathLike,
    *,
    world_size: int | None = None,
    dump_format: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    pg_timeout_s: float = harness.DEFAULT_PG_TIMEOUT_S,
    grace_s: float = DEFAULT_GRACE_S,
    prefix: str = DEFAULT_PREFIX,
    log_dir: str | os.PathLike | None = None,
    verbose: bool = False,
    script_path: str | os.PathLike | None = None,
    project_dir: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RunResult:
    """Runs a scenario to its end (or its deadline). ``env`` is added to every rank's
    environment; ``on_start`` gets the job's TCPStore port once the ranks are launched
    (what a watcher connects to)."""
    scenario = get(name)
    world = world_size or scenario.world_size
    fmt = dump_format or scenario.dump_format
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.name.startswith(prefix) or old.name.startswith(".partial-"):
            old.unlink()
    logs = Path(log_dir).resolve() if log_dir else Path(tempfile.mkdtemp(prefix="desync-job-logs-"))
    logs.mkdir(parents=True, exist_ok=True)

    python, script, lib = stage(scenario, script_path=Path(script_path) if script_path else None,
                                project_dir=Path(project_dir) if project_dir else None)
    native.build()  # once here, instead of N ranks racing to compile
    store, port = _free_store()
    if scenario.deadline_s is not None and timeout_s == DEFAULT_TIMEOUT_S:
        timeout_s = scenario.deadline_s

    base_env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        base_env.pop(key, None)
    base_env.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE=str(world),
        LOCAL_WORLD_SIZE=str(world),
        PYTHONPATH=str(lib),
        PYTHONHASHSEED="0",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        TORCH_FR_BUFFER_SIZE=str(scenario.fr_buffer),
        **{
            harness.ENV_PREFIX: str(out / prefix),
            harness.ENV_FORMAT: fmt,
            harness.ENV_PG_TIMEOUT: str(pg_timeout_s),
            harness.ENV_AGENT_STORE: "1",
        },
    )
    if scenario.framework_init:
        base_env["PYTHONPATH"] = f"{lib / 'desync_jobs' / 'autostart'}{os.pathsep}{lib}"
        base_env["DESYNC_JOBS_AUTO"] = "1"
    if scenario.hang_s is not None:
        base_env[harness.ENV_HANG_S] = str(scenario.hang_s)
    base_env.update(env or {})

    procs: list[subprocess.Popen] = []
    log_files = []
    start = time.monotonic()
    try:
        for rank in range(world):
            env = dict(base_env, **rank_environment(scenario, rank, world))
            log_path = logs / f"rank_{rank}.log"
            fh = open(log_path, "wb")
            log_files.append(fh)
            procs.append(subprocess.Popen(
                [str(python), script.name, *scenario.args], cwd=script.parent, env=env,
                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
            ))

        if on_start is not None:
            on_start(port)
        signal_reason: str | None = None
        signal_at: float | None = None
        deadline_hit = False
        killed: set[int] = set()
        while True:
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            if signal_at is None:
                failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
                if store.check([harness.DUMP_KEY]):
                    signal_reason = store.get(harness.DUMP_KEY).decode(errors="replace")
                elif failed:
                    signal_reason = f"launcher: rank {failed[0]} exited with {codes[failed[0]]}"
                elif now - start > timeout_s:
                    deadline_hit = True
                    signal_reason = f"launcher: deadline of {timeout_s:.0f}s"
                if signal_reason is not None:
                    if not store.check([harness.DUMP_KEY]):
                        store.set(harness.DUMP_KEY, signal_reason)
                    signal_at = now
                    if verbose:
                        print(f"[run] dump signal: {signal_reason}", file=sys.stderr)
            elif now - signal_at > grace_s:
                for rank, proc in enumerate(procs):
                    if proc.poll() is None:
                        killed.add(rank)
                        _kill_group(proc)
                for proc in procs:
                    proc.wait()
                break
            time.sleep(0.05)
    finally:
        for proc in procs:
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
        for fh in log_files:
            fh.close()
        # Leftover grandchildren (none expected) die with their session.
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    elapsed = time.monotonic() - start

    result = RunResult(
        scenario=name, world_size=world, dump_format=fmt, out_dir=str(out), prefix=prefix,
        script=str(script), elapsed_s=round(elapsed, 2), signal_reason=signal_reason,
        deadline_hit=deadline_hit,
    )
    for rank, proc in enumerate(procs):
        path = out / f"{prefix}{rank}"
        exists = path.exists()
        result.ranks.append(RankResult(
            rank=rank, returncode=proc.returncode, dump=str(path) if exists else None,
            dump_bytes=path.stat().st_size if exists else 0,
            log=str(logs / f"rank_{rank}.log"), killed=rank in killed,
        ))
    del store
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--out", required=True, help="directory for the per-rank dumps")
    parser.add_argument("--world-size", type=int)
    parser.add_argument("--format", choices=("pickle", "json"))
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="hard deadline for the whole job, seconds")
    parser.add_argument("--pg-timeout", type=float, default=harness.DEFAULT_PG_TIMEOUT_S,
                        help="process-group (collective) timeout, seconds")
    parser.add_argument("--grace", type=float, default=DEFAULT_GRACE_S,
                        help="seconds ranks get to dump after the dump signal")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("--logs", help="directory for per-rank logs (default: a temp dir)")
    args = parser.parse_args(argv)

    result = run_job(args.scenario, args.out, world_size=args.world_size,
                     dump_format=args.format, timeout_s=args.timeout,
                     pg_timeout_s=args.pg_timeout, grace_s=args.grace, prefix=args.prefix,
                     log_dir=args.logs, verbose=True)
    print(result.to_json())
    scenario = get(args.scenario)
    missing = [r.rank for r in result.ranks
               if r.dump is None and r.rank not in scenario.ranks_without_dump]
    if missing:
        print(f"[run] ranks without a dump: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
