"""In-rank side of the test jobs: distributed setup plus Flight Recorder dumps.

A training script calls :func:`init_distributed` where it would call
``dist.init_process_group`` and :func:`finish` at the very end. Everything else
in the script is ordinary PyTorch. This module reproduces what ProcessGroupNCCL
does for free on a GPU job, for Gloo on CPU:

* ``TORCH_FR_BUFFER_SIZE`` (default 2000) turns the Flight Recorder on; Gloo
  records every collective into it (state stays "scheduled", no send/recv, and
  ``pg_config`` is broken in torch 2.11: name "" ranks "[]" — kept as is).
* Dump on failure, broadcast to all ranks: the rank whose collective fails (Gloo
  raises on timeout or when a peer drops) sets :data:`DUMP_KEY` in the job's
  TCPStore and dumps. Every rank runs a daemon thread blocked in ``store.wait``
  on that key **on its own TCPStore client** (sharing the trainer's client would
  starve its store calls, e.g. ``new_group``) and dumps when the key appears,
  then exits — the NCCL ``exception_dump`` broadcast, done by hand.
* Gloo aborts the process from a transport thread on a size mismatch (NCCL would
  hang); a SIGABRT handler written in C (``abort_dump.c``) takes the GIL and
  dumps before the process dies.
* A healthy run dumps in :func:`finish`.

Dumps go to ``<TORCH_FR_DUMP_TEMP_FILE><rank>`` (the same prefix convention as
torch's own ``DebugInfoWriter``), pickle or JSON per ``DESYNC_JOBS_DUMP_FORMAT``.
The file is written under a temporary name without the prefix and renamed, so a
reader never sees half a dump and prefix-matching loaders never see the temp.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

# Must be set before the first process group creates the recorder.
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

DUMP_KEY = "desync_jobs/dump_signal"
ENV_PREFIX = "TORCH_FR_DUMP_TEMP_FILE"
ENV_FORMAT = "DESYNC_JOBS_DUMP_FORMAT"
ENV_PG_TIMEOUT = "DESYNC_JOBS_PG_TIMEOUT"
ENV_AGENT_STORE = "DESYNC_JOBS_AGENT_STORE"
ENV_NO_ABORT_HOOK = "DESYNC_JOBS_NO_ABORT_HOOK"
# Live sources for `desync watch`: the debug server (value: rank 0's frontend port), or
# dumps rewritten every ENV_PERIODIC_EVERY seconds into ENV_PERIODIC_DIR.
ENV_DEBUG_SERVER = "DESYNC_JOBS_DEBUG_SERVER"
ENV_PERIODIC_DIR = "DESYNC_JOBS_PERIODIC_DIR"
ENV_PERIODIC_EVERY = "DESYNC_JOBS_PERIODIC_EVERY"
DEFAULT_PREFIX = "/tmp/gloo_trace_rank_"
DEFAULT_PG_TIMEOUT_S = 6.0

EXIT_FAILED = 1  # this rank's collective failed; it dumped and signalled
EXIT_ON_SIGNAL = 3  # another rank signalled; this rank dumped and left


@dataclass(frozen=True)
class DistContext:
    rank: int
    world_size: int
    local_rank: int
    timeout: _dt.timedelta
    store: dist.Store


def _log(msg: str) -> None:
    rank = os.environ.get("RANK", "?")
    sys.stderr.write(f"[desync_jobs rank {rank}] {msg}\n")
    sys.stderr.flush()


class _Dumper:
    """Writes this rank's Flight Recorder dump at most once."""

    def __init__(self, rank: int, prefix: str, fmt: str) -> None:
        if fmt not in ("pickle", "json"):
            raise ValueError(f"{ENV_FORMAT} must be pickle or json, not {fmt!r}")
        self.rank = rank
        self.path = Path(f"{prefix}{rank}")
        self.fmt = fmt
        self.lock = threading.Lock()
        self.done = False

    def dump(self, reason: str) -> bool:
        """Dump now; False if another thread already did."""
        with self.lock:
            if self.done:
                return False
            c10d = torch._C._distributed_c10d
            if self.fmt == "json":
                data = c10d._dump_fr_trace_json()
            else:
                data = c10d._dump_fr_trace()
            if isinstance(data, str):
                data = data.encode()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.parent / f".partial-{os.getpid()}"
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            self.done = True
            _log(f"flight recorder dump ({reason}): {self.path} ({len(data)} bytes)")
            return True


_state: dict[str, object] = {}


def _new_client(timeout: _dt.timedelta) -> dist.TCPStore:
    return dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=timeout,
        wait_for_workers=False,
    )


def _signal_peers(reason: str) -> None:
    """Set the dump key on a fresh client (never the trainer's or the watcher's)."""
    try:
        client = _new_client(_dt.timedelta(seconds=5))
        client.set(DUMP_KEY, f"rank {_state['rank']}: {reason}")
    except Exception as exc:  # the store may be gone already; the dump matters more
        _log(f"could not signal peers: {exc}")


def _watch_dump_signal(dumper: _Dumper) -> None:
    client = _new_client(_dt.timedelta(seconds=30))
    while True:
        try:
            client.wait([DUMP_KEY], _dt.timedelta(hours=1))
            break
        except Exception as exc:
            if "timeout" in str(exc).lower() or "timed out" in str(exc).lower():
                continue
            _log(f"dump-signal watcher lost the store: {exc}")
            return
    try:
        who = client.get(DUMP_KEY).decode(errors="replace")
    except Exception:
        who = "?"
    if dumper.dump(f"dump signal from {who}"):
        os._exit(EXIT_ON_SIGNAL)


def _excepthook(exc_type, exc, tb) -> None:
    traceback.print_exception(exc_type, exc, tb)
    sys.stderr.flush()
    dumper: _Dumper = _state["dumper"]  # type: ignore[assignment]
    reason = f"{exc_type.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    _signal_peers(reason)
    dumper.dump(f"uncaught {reason}")
    os._exit(EXIT_FAILED)


def _on_abort() -> None:
    dumper: _Dumper = _state["dumper"]  # type: ignore[assignment]
    dumper.dump("SIGABRT")
    _signal_peers("SIGABRT")


def _install_abort_hook() -> None:
    if os.environ.get(ENV_NO_ABORT_HOOK) == "1":
        return
    from desync_jobs import native

    try:
        native.load().install(_on_abort)
    except native.BuildError as exc:
        _log(f"SIGABRT dump hook unavailable: {exc}")


def init_distributed(backend: str = "gloo") -> DistContext:
    """Join the job (torchrun-style env), with Flight Recorder dumps wired up."""
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    timeout = _dt.timedelta(seconds=float(os.environ.get(ENV_PG_TIMEOUT, DEFAULT_PG_TIMEOUT_S)))
    host = os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    port = int(os.environ.setdefault("MASTER_PORT", "29500"))
    # Our launcher (run.py) and torchrun both host the store in the agent process.
    agent_store = (os.environ.get(ENV_AGENT_STORE) == "1"
                   or os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True")
    store = dist.TCPStore(
        host,
        port,
        world_size,
        is_master=(rank == 0 and not agent_store),
        timeout=_dt.timedelta(seconds=60),
        wait_for_workers=False,
    )
    dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)

    if os.environ.get(ENV_DEBUG_SERVER):
        # torch >= 2.10: an HTTP worker per rank, registered in the store for `desync watch`;
        # the value is the port of rank 0's web frontend (unused by desync, but it must not
        # collide with another job's).
        from torch.distributed.debug import start_debug_server

        start_debug_server(port=int(os.environ[ENV_DEBUG_SERVER]))
    if os.environ.get(ENV_PERIODIC_DIR):
        from desync_jobs import periodic_dump

        periodic_dump.start(os.environ[ENV_PERIODIC_DIR], rank,
                            float(os.environ.get(ENV_PERIODIC_EVERY, "2")))

    dumper = _Dumper(rank, os.environ.get(ENV_PREFIX, DEFAULT_PREFIX),
                     os.environ.get(ENV_FORMAT, "pickle"))
    _state.update(rank=rank, dumper=dumper)
    threading.Thread(target=_watch_dump_signal, args=(dumper,), name="fr-dump-watcher",
                     daemon=True).start()
    sys.excepthook = _excepthook
    _install_abort_hook()
    return DistContext(rank, world_size, local_rank, timeout, store)


def finish() -> None:
    """End of a run that did not fail: dump, then tear the process group down."""
    dumper: _Dumper = _state["dumper"]  # type: ignore[assignment]
    dumper.dump("end of training")
    dist.destroy_process_group()
