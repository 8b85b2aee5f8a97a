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
* With ``DESYNC_JOBS_HANG_S`` set, a watchdog thread dumps (and signals every rank
  to dump) once the main thread has been blocked in one native call that long —
  NCCL's dump-on-timeout, before any framework handler can add collectives.
* Jobs whose framework calls ``init_process_group`` itself (Lightning, Accelerate,
  ``init_device_mesh``) get all of this from :func:`install_when_initialized`,
  started by ``autostart/sitecustomize.py`` when ``DESYNC_JOBS_AUTO=1``; the
  training code then holds nothing of this harness.

Dumps go to ``<TORCH_FR_DUMP_TEMP_FILE><rank>`` (the same prefix convention as
torch's own ``DebugInfoWriter``), pickle or JSON per ``DESYNC_JOBS_DUMP_FORMAT``.
The file is written under a temporary name without the prefix and renamed, so a
reader never sees half a dump and prefix-matching loaders never see the temp.
"""

from __future__ import annotations

import datetime as _dt
import os
import atexit
import sys
import threading
import time
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
# Seconds the main thread may sit in one native call before the hang watchdog dumps.
ENV_HANG_S = "DESYNC_JOBS_HANG_S"
# Live sources for `desync watch`: the debug server (value: rank 0's frontend port), or
# dumps rewritten every ENV_PERIODIC_EVERY seconds into ENV_PERIODIC_DIR.
ENV_DEBUG_SERVER = "DESYNC_JOBS_DEBUG_SERVER"
ENV_PERIODIC_DIR = "DESYNC_JOBS_PERIODIC_DIR"
ENV_PERIODIC_EVERY = "DESYNC_JOBS_PERIODIC_EVERY"
DEFAULT_PREFIX = "/tmp/gloo_trace_rank_"
DEFAULT_PG_TIMEOUT_S = 6.0
# A signalled rank dumps once its main thread has sat still for this many samples in a
# row (blocked in a native call), or after the cap; see _wait_for_main_thread_to_settle.
# The cap stays well under run.py's grace period, after which the launcher kills what
# is left.
SETTLE_SAMPLES = 4
SETTLE_POLL_S = 0.05
SETTLE_CAP_S = 4.0

EXIT_FAILED = 1  # this rank's collective failed; it dumped and signalled
EXIT_ON_SIGNAL = 3  # another rank signalled; this rank dumped and left
EXIT_HUNG = 4  # the hang watchdog found this rank's main thread blocked; it dumped and left


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
    _wait_for_main_thread_to_settle()
    if dumper.dump(f"dump signal from {who}"):
        os._exit(EXIT_ON_SIGNAL)


class _MainThreadMotion:
    """Where this rank's main thread is (its innermost frame and bytecode offset), sampled
    every ``SETTLE_POLL_S`` on a daemon thread, and for how many samples in a row it has
    not moved: a signalled dump can tell at once whether the main thread sits blocked in a
    native call. Stillness is counted in samples, not in time: a sampler starved of CPU
    (eight ranks on two cores) sees no stillness it did not look at."""

    def __init__(self) -> None:
        self.main_id = threading.main_thread().ident
        self.lock = threading.Lock()
        self.place: tuple[int, int] | None = None
        self.still = 0  # samples in a row at `place`
        self.gone = False

    def sample(self) -> int:
        """Sample now; the number of samples in a row at the same place (a large number
        once the main thread is gone)."""
        frame = sys._current_frames().get(self.main_id)
        with self.lock:
            if frame is None:
                self.gone = True
                return 1 << 30
            place = (id(frame), frame.f_lasti)
            del frame
            if place == self.place:
                self.still += 1
            else:
                self.place, self.still = place, 0
            return self.still

    def settled(self) -> bool:
        """Whether the sampler has seen the main thread still for ``SETTLE_SAMPLES``
        samples in a row, or gone."""
        with self.lock:
            return self.gone or self.still >= SETTLE_SAMPLES

    def run(self) -> None:
        while not self.gone:
            self.sample()
            time.sleep(SETTLE_POLL_S)


def _wait_for_main_thread_to_settle() -> None:
    """Hold a signalled dump until this rank's main thread stops moving.

    NCCL dumps every rank when the watchdog's timeout expires, minutes after the
    first rank got stuck, so each rank's recorder already holds the collective
    it is stuck in. Gloo's signal comes within milliseconds (a peer aborts on a
    size mismatch at once): a rank still computing its step, or evaluating before
    it breaks out of the loop, would dump without the collective it was about to
    issue, and the dumps would show a different hang from the one the job has.
    A rank already blocked (``SETTLE_SAMPLES`` samples in a row at one place: in
    a collective, a stuck read) dumps at once, before its own collective can fail
    when the signalling peer exits (a failed Gloo collective counts as completed
    in ``pg_status``); any other waits until it is, or is gone, at most
    ``SETTLE_CAP_S``. A rank whose collective fails meanwhile dumps from its
    excepthook first; the dumper writes once.
    """
    motion = _state.get("motion")
    if not isinstance(motion, _MainThreadMotion):
        return
    # One fresh sample: the count may be stale if the sampler was starved of CPU.
    if motion.sample() >= SETTLE_SAMPLES:
        return
    deadline = time.monotonic() + SETTLE_CAP_S
    while time.monotonic() < deadline:
        time.sleep(SETTLE_POLL_S)
        if motion.settled():
            return


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

    _wire_dumps(rank)
    return DistContext(rank, world_size, local_rank, timeout, store)


def _wire_dumps(rank: int) -> None:
    """Dump on a peer's signal, on an uncaught exception, on SIGABRT, and (when
    ``DESYNC_JOBS_HANG_S`` is set) when the main thread hangs."""
    dumper = _Dumper(rank, os.environ.get(ENV_PREFIX, DEFAULT_PREFIX),
                     os.environ.get(ENV_FORMAT, "pickle"))
    motion = _MainThreadMotion()
    _state.update(rank=rank, dumper=dumper, motion=motion)
    threading.Thread(target=motion.run, name="fr-main-motion", daemon=True).start()
    threading.Thread(target=_watch_dump_signal, args=(dumper,), name="fr-dump-watcher",
                     daemon=True).start()
    sys.excepthook = _excepthook
    _install_abort_hook()
    hang_s = os.environ.get(ENV_HANG_S)
    if hang_s:
        threading.Thread(target=_watch_main_thread, args=(dumper, float(hang_s)),
                         name="fr-hang-watchdog", daemon=True).start()


def _watch_main_thread(dumper: _Dumper, hang_s: float) -> None:
    """The watchdog NCCL has and Gloo lacks: dump when the main thread is stuck.

    ProcessGroupNCCL's watchdog dumps every rank's recorder the moment a collective
    times out, before any Python handler runs. Under Gloo the timeout surfaces as a
    Python exception, and frameworks catch it first: Lightning's
    ``_broadcast_sigterm_tensor`` swallows a failed broadcast, its ``_interrupt``
    runs callbacks and teardown, so the recorder would no longer hold the state of
    the hang. This thread samples the main thread's innermost Python frame; if the
    same frame sits at the same bytecode offset for ``hang_s`` seconds while the
    process group exists, the main thread is blocked in native code (a collective
    wait, or a stuck read), so it signals every rank to dump, dumps, and ends the
    process the way an NCCL abort would.
    """
    main_id = threading.main_thread().ident
    last_frame = None
    last_lasti = -1
    since = time.monotonic()
    while True:
        time.sleep(0.25)
        frame = sys._current_frames().get(main_id)
        if frame is None:
            return  # the main thread is gone: the process is exiting
        now = time.monotonic()
        if frame is not last_frame or frame.f_lasti != last_lasti:
            last_frame, last_lasti, since = frame, frame.f_lasti, now
            continue
        if now - since < hang_s or not (dist.is_available() and dist.is_initialized()):
            continue
        where = f"{frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})"
        reason = f"hang watchdog: main thread blocked {now - since:.0f}s in {where}"
        del frame, last_frame
        _signal_peers(reason)
        if dumper.dump(reason):
            os._exit(EXIT_HUNG)
        return


def install_when_initialized(poll_s: float = 0.1) -> None:
    """Wire the dumps up as soon as some library calls ``init_process_group``.

    For jobs whose framework owns the process group (Lightning, Accelerate,
    ``init_device_mesh``): started from ``sitecustomize`` (see ``autostart``), it
    waits on a daemon thread until ``torch.distributed`` is imported and
    initialized, then installs what :func:`init_distributed` would. A run that ends
    normally dumps at interpreter exit.
    """

    def wait_then_wire() -> None:
        while True:
            mod = sys.modules.get("torch.distributed")
            try:
                if mod is not None and mod.is_available() and mod.is_initialized():
                    break
            except AttributeError:  # imported halfway by the main thread
                pass
            time.sleep(poll_s)
        rank = int(os.environ["RANK"])
        _wire_dumps(rank)
        atexit.register(_dump_at_exit)

    threading.Thread(target=wait_then_wire, name="fr-autowire", daemon=True).start()


def _dump_at_exit() -> None:
    dumper = _state.get("dumper")
    if isinstance(dumper, _Dumper):
        dumper.dump("end of training")


def finish() -> None:
    """End of a run that did not fail: dump, then tear the process group down."""
    dumper: _Dumper = _state["dumper"]  # type: ignore[assignment]
    dumper.dump("end of training")
    dist.destroy_process_group()
