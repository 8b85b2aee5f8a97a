"""Flight Recorder for a training job, set up so that a hang leaves evidence on every rank.

Call :func:`enable` at the top of the training script, before the process group starts::

    import desync.torch
    desync.torch.enable()              # dumps go to ./desync-dumps/rank_<N>
    dist.init_process_group("nccl")    # or Lightning / Accelerate / torchrun's env://

What it does (docs/flight-recorder.md lists every variable and why):

1. Sets Flight Recorder's environment defaults (buffer size, dump on timeout, the per-rank dump
   path, C++ stacks off). A variable that is already set is left alone: the launcher's or the
   user's choice wins.
2. Once the default process group exists (noticed by a light polling thread, or at once when a
   framework integration calls :func:`arm`): dumps this rank's recorder when the process is
   about to die (an uncaught exception, or SIGABRT: Gloo aborts the process from its transport
   thread on a size mismatch), tells every other rank to dump too through the job's TCPStore,
   and waits a few seconds for them. Gloo never dumps by itself; NCCL does on a watchdog
   timeout, and this adds the failures its watchdog does not see.
3. Writes this rank's Python stacks (every thread, faulthandler's text) beside its dump as
   ``rank_<N>.stacks`` whenever it dumps for good, and on SIGUSR2 (unless the process already
   handles SIGUSR2): ``desync analyze`` reads them and names the line a late rank is on. For a
   rank that dies of an exception, the main thread's stack is the exception's traceback.
4. Starts torch's debug server (torch >= 2.10) so that ``desync watch --store`` can follow the
   job live.

Nothing here imports torch until the process group exists, so calling :func:`enable` in a
launcher process (or a process that never trains) costs a thread that sleeps.
"""

from __future__ import annotations

import atexit
import ctypes
import datetime as _dt
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

__all__ = ["Settings", "arm", "dump", "enable", "on_exception", "settings"]

#: Directory for the dumps when neither ``dump_dir`` nor ``TORCH_FR_DUMP_TEMP_FILE`` says.
ENV_DUMP_DIR = "DESYNC_DUMP_DIR"
#: ``0`` turns the debug server off; a number is the port of rank 0's web frontend.
ENV_DEBUG_SERVER = "DESYNC_DEBUG_SERVER"
#: Seconds between rewrites of this rank's dump while the job runs (``desync run`` sets it).
ENV_LIVE_EVERY = "DESYNC_LIVE_EVERY"
#: A file whose appearance makes the live-dumping thread write the final dump, with stacks.
ENV_TRIGGER = "DESYNC_DUMP_TRIGGER"
#: ``1`` makes ``sitecustomize`` (``desync run``'s injection) call :func:`enable`.
ENV_AUTO = "DESYNC_AUTO_ENABLE"
#: ``desync run`` sets it: where its injected ``sitecustomize`` has each process write its
#: stacks on SIGUSR2 (``<pid>.txt``); a rank adds ``<pid>.rank`` so that ``run`` knows whose.
ENV_STACKS_DIR = "DESYNC_STACKS_DIR"

DEFAULT_DIR = "desync-dumps"
FILE_PREFIX = "rank_"
#: A rank's stacks file is its dump's name with this after it (``rank_3.stacks``).
STACKS_SUFFIX = ".stacks"
#: How long a failing rank waits for the others to confirm their dumps before it dies.
PEER_WAIT_S = 5.0
#: How often each rank looks for a peer's dump signal in the store.
PEER_POLL_S = 1.0
_STORE_KEY = "desync/dump_signal"
_ACK_KEY = "desync/dumped"


@dataclass(frozen=True)
class Settings:
    """What :func:`enable` decided."""

    #: Each rank's dump is ``<prefix><global rank>`` (the convention of torch's own writer).
    prefix: str
    #: The environment variables :func:`enable` set, with their values (already-set ones are
    #: not listed: they were left alone).
    variables: dict[str, str] = field(default_factory=dict)
    #: Whether this process dumps itself on failure and on a peer's signal.
    failure_dumps: bool = True
    #: Whether torch's debug server is started once the process group exists.
    debug_server: bool = True
    #: Whether this rank writes its Python stacks beside its dump (when it dumps for good,
    #: and on SIGUSR2).
    stacks: bool = True


_lock = threading.RLock()
_settings: Settings | None = None
_state: dict[str, Any] = {}
#: Set when the process is exiting: the background threads stop at once.
_stopping = threading.Event()
#: The background threads that call into torch's C++ (the store, the recorder): joined at
#: exit, before the interpreter finalizes.
_workers: list[threading.Thread] = []


def settings() -> Settings | None:
    """The settings of the :func:`enable` call in this process, if any."""
    return _settings


def enable(
    dump_dir: str | os.PathLike[str] | None = None,
    *,
    buffer_size: int = 2000,
    cpp_stacks: bool = False,
    dump_on_timeout: bool = True,
    timing: bool = False,
    failure_dumps: bool = True,
    debug_server: bool | None = None,
    stacks: bool = True,
) -> Settings:
    """Configure Flight Recorder for this process; call it before the process group starts.

    ``dump_dir``: where each rank writes ``rank_<N>`` (default: ``$DESYNC_DUMP_DIR``, else the
    directory of ``$TORCH_FR_DUMP_TEMP_FILE``, else ``./desync-dumps``; under ``desync run``,
    always the run's own directory). ``buffer_size``: how
    many collectives each rank keeps. ``cpp_stacks``: record C++ frames too (slow to symbolize;
    off). ``dump_on_timeout``: NCCL's watchdog dumps when a collective times out.
    ``timing``: NCCL records start/end events, so a dump tells "never started" from "started,
    never finished" (a GPU hang); costs two CUDA events per collective. ``failure_dumps``: dump
    every rank when this one dies (what Gloo lacks). ``debug_server``: start torch's debug
    server for ``desync watch`` (default: on unless ``DESYNC_DEBUG_SERVER=0``). ``stacks``:
    write this rank's Python stacks to ``rank_<N>.stacks`` beside its dump when it dumps for
    good and on SIGUSR2 (a SIGUSR2 handler the process already has is left alone).

    Calling it again returns the first call's settings.
    """
    global _settings
    with _lock:
        if _settings is not None:
            return _settings
        dist = _distributed()
        if dist is not None and dist.is_initialized():
            _log("enable() was called after the process group started: the recorder's "
                 "buffer size and dump path may already be fixed; call it earlier")
        prefix = _dump_prefix(dump_dir)
        Path(prefix).parent.mkdir(parents=True, exist_ok=True)
        chosen: dict[str, str] = {}

        new_names_only = _reads_fr_names(_torch_version())

        def default(name: str, value: str, *aliases: str) -> None:
            if any(n in os.environ for n in (name, *aliases)):
                return
            # torch >= 2.8 reads the TORCH_FR_* name and prints a deprecation warning on every
            # rank for each TORCH_NCCL_* alias that is set, even beside the new name (measured:
            # scripts/measure_fr_versions.py); an older or unknown torch gets both.
            for n in (name,) if new_names_only else (name, *aliases):
                os.environ[n] = value
                chosen[n] = value

        # Newer torch reads TORCH_FR_*; the TORCH_NCCL_* names are the older aliases. The
        # buffer size matters most: torch 2.8 and 2.9 record nothing under Gloo without it.
        default("TORCH_FR_BUFFER_SIZE", str(buffer_size), "TORCH_NCCL_TRACE_BUFFER_SIZE")
        default("TORCH_FR_DUMP_TEMP_FILE", prefix, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
        default("TORCH_NCCL_DUMP_ON_TIMEOUT", "1" if dump_on_timeout else "0")
        # Mode 1 tears the process down before the dump (pytorch#121055); 3 is torch's default.
        default("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3")
        default("TORCH_FR_CPP_STACK", "1" if cpp_stacks else "0", "TORCH_NCCL_TRACE_CPP_STACK")
        if timing:
            default("TORCH_NCCL_ENABLE_TIMING", "1")
        if debug_server is None:
            debug_server = os.environ.get(ENV_DEBUG_SERVER, "1") != "0"
        _settings = Settings(prefix=prefix, variables=chosen, failure_dumps=failure_dumps,
                             debug_server=debug_server, stacks=stacks)
        if failure_dumps:
            _install_failure_hooks()
        atexit.register(_on_exit)
        threading.Thread(target=_arm_when_ready, name="desync-arm", daemon=True).start()
        return _settings


def arm() -> bool:
    """Start what needs the process group: failure dumps, peer signals, the debug server.

    :func:`enable` does this by itself shortly after the group exists; framework integrations
    call it as soon as they know. Returns False when :func:`enable` was not called or the
    process group does not exist yet. Idempotent.
    """
    with _lock:
        if _settings is None or _state.get("armed"):
            return bool(_state.get("armed"))
        if not _claim_group():
            return False
        rank = _state["rank"]
    if _settings.failure_dumps:
        if _store_address() is not None:
            _start_worker(_watch_peer_signal, "desync-dump-signal")
        else:
            _log("no TCPStore address (MASTER_ADDR/MASTER_PORT): peers will not be told to dump")
    if _settings.stacks:
        _stacks_on_signal(rank)
    every = os.environ.get(ENV_LIVE_EVERY)
    if every:
        _start_worker(_rewrite_periodically, "desync-live-dump", float(every))
    if _settings.debug_server:
        _start_debug_server(rank)
    return True


def _claim_group() -> bool:
    """Records the process group's rank, size and backend (armed); False when there is none.
    Called with `_lock` held."""
    dist = _distributed()
    try:
        if dist is None or not dist.is_initialized():
            return False
        _state.update(armed=True, rank=dist.get_rank(), world=dist.get_world_size(),
                      backend=str(dist.get_backend()))
    except Exception:  # a group being torn down
        return False
    return True


def dump(reason: str = "on request") -> Path | None:
    """Write this rank's dump now (atomically) and return its path; None if it could not.

    After a failure dump, later calls (and the live rewrites) leave the file alone: the first
    dump is the one taken closest to the failure. The rank's stacks are written beside it.
    """
    return _final_dump(reason, None)


def _final_dump(reason: str, tb: TracebackType | None) -> Path | None:
    path = _write_dump(reason, final=True)
    if path is not None and _settings is not None and _settings.stacks:
        _write_stacks(path, reason, tb)
    return path


# --- the dump itself -------------------------------------------------------------------------

def _dump_prefix(dump_dir: str | os.PathLike[str] | None) -> str:
    env_dir = os.environ.get(ENV_DUMP_DIR)
    # Under `desync run` (it sets DESYNC_AUTO_ENABLE) the run owns the dump path: it watches
    # only its own directory, so a script's own `dump_dir` (a Lightning callback's argument)
    # would hide every dump from it and the hang would go unseen.
    if env_dir and os.environ.get(ENV_AUTO) == "1":
        return str(Path(env_dir).resolve() / FILE_PREFIX)
    if dump_dir is not None:
        return str(Path(dump_dir).resolve() / FILE_PREFIX)
    if env_dir:
        return str(Path(env_dir).resolve() / FILE_PREFIX)
    for name in ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"):
        if os.environ.get(name):
            return os.environ[name]
    return str(Path(DEFAULT_DIR).resolve() / FILE_PREFIX)


#: The first torch (major, minor) measured to read the ``TORCH_FR_*`` names and to warn about
#: their ``TORCH_NCCL_*`` aliases (docs/flight-recorder.md, "torch versions, measured").
FR_NAMES_FROM = (2, 8)


def _torch_version() -> tuple[int, int] | None:
    """The installed torch's (major, minor), read from its metadata: never imports torch."""
    try:
        from importlib.metadata import version

        major, minor = version("torch").split("+")[0].split(".")[:2]
        return int(major), int(minor)
    except Exception:
        return None


def _reads_fr_names(torch_version: tuple[int, int] | None) -> bool:
    return torch_version is not None and torch_version >= FR_NAMES_FROM


def _recorder_bytes(backend: str, *, stacks: bool) -> bytes:
    import torch

    c10d = torch._C._distributed_c10d
    # NCCL groups record into the CUDA recorder; Gloo (and other CPU backends) into the
    # generic one (`_dump_fr_trace`, torch >= 2.8). Dumping the wrong one writes an empty trace
    # over NCCL's own dump.
    if "nccl" in backend and hasattr(c10d, "_dump_nccl_trace"):
        dump_fn = c10d._dump_nccl_trace
    elif hasattr(c10d, "_dump_fr_trace"):
        dump_fn = c10d._dump_fr_trace
        if _per_backend(dump_fn):
            # torch 2.15 keeps one recorder per backend ("gloo" by default); dump the one this
            # group records into. The docstring is how the call is told apart; should a torch
            # name a backend there without taking the keyword, the plain call below still dumps.
            try:
                return _as_bytes(dump_fn(includeStackTraces=stacks, backend=_backend_name(backend)))
            except TypeError:
                pass
    else:
        raise RuntimeError(f"this torch ({torch.__version__}) cannot dump a {backend} recorder")
    try:
        data = dump_fn(includeStackTraces=stacks)
    except TypeError:  # an older signature without keywords
        data = dump_fn()
    return _as_bytes(data)


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def _per_backend(dump_fn: Any) -> bool:
    """Whether this torch keeps one recorder per backend (its dump call takes ``backend=``)."""
    return "backend" in (getattr(dump_fn, "__doc__", None) or "")


def _backend_name(backend: str) -> str:
    """The CPU backend of a group's backend string (``cpu:gloo,cuda:nccl`` -> ``gloo``)."""
    parts = [p.split(":", 1)[-1] for p in backend.split(",")]
    cpu = [p for p in parts if p != "nccl"]
    return (cpu or parts)[0]


def _extra_backends() -> list[str]:
    """CPU backends of the job's other process groups whose recorders the default group's
    dump leaves out (torch 2.15: one recorder per backend)."""
    dist = _distributed()
    if dist is None or "backend" not in _state:
        return []
    main = _backend_name(_state["backend"])
    names: set[str] = set()
    try:
        for group in list(dist.distributed_c10d._world.pg_map):
            names.add(_backend_name(str(dist.get_backend(group))))
    except Exception:
        return []
    return sorted(n for n in names if n not in (main, "nccl"))


def _write_dump(reason: str, *, final: bool, stacks: bool = True) -> Path | None:
    if _settings is None or "rank" not in _state:
        return None
    with _lock:
        if _state.get("final_dump"):
            return None
        try:
            data = _recorder_bytes(_state["backend"], stacks=stacks)
            path = Path(f"{_settings.prefix}{_state['rank']}")
            path.parent.mkdir(parents=True, exist_ok=True)
            # `.part` is what desync's loader skips as a write in progress.
            tmp = path.with_name(f".{path.name}.part")
            with open(tmp, "wb") as fh:
                fh.write(data)
                if final:  # the one that must survive the process; live rewrites come again
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, path)
            if final:
                _dump_other_backends(path, stacks)
        except Exception as exc:  # a failed dump must never hide the real failure
            _log(f"flight recorder dump ({reason}) failed: {exc}")
            return None
        if final:
            _state["final_dump"] = True
            _log(f"flight recorder dump ({reason}): {path} ({len(data)} bytes)")
        return path


def _dump_other_backends(path: Path, stacks: bool) -> None:
    """torch 2.15 gives each backend its own recorder: the groups of another CPU backend than
    the default group's are dumped to ``<backend>/<dump name>`` beside the main dump (one
    folder per backend, so each folder is one job's dumps for ``desync analyze``)."""
    for name in _extra_backends():
        try:
            data = _recorder_bytes(name, stacks=stacks)
            target = path.parent / name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.part")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        except Exception as exc:
            _log(f"flight recorder dump of backend {name} failed: {exc}")


# --- the stacks beside the dump -------------------------------------------------------------

def _stacks_path(dump_path: Path) -> Path:
    return dump_path.with_name(dump_path.name + STACKS_SUFFIX)


def _main_thread_line() -> str:
    # faulthandler names threads by this id; the line tells desync which one runs the script
    # (a stack taken from a helper thread lists every thread).
    return f"# main thread 0x{threading.main_thread().ident or 0:016x}\n"


def _write_stacks(dump_path: Path, reason: str, tb: TracebackType | None) -> None:
    """Every thread's stack, in faulthandler's text, beside the dump. For a rank dying of an
    exception, the main thread's stack is the traceback: by now the main thread has unwound
    to the excepthook, and the line that raised is what the reader wants."""
    path = _stacks_path(dump_path)
    tmp = path.with_name(f".{path.name}.part")
    try:
        text = _format_threads(tb)
        with open(tmp, "w") as fh:
            fh.write(f"# desync stacks of rank {_state.get('rank')} (pid {os.getpid()}): "
                     f"{reason.splitlines()[0] if reason else ''}\n")
            fh.write(_main_thread_line())
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except Exception as exc:  # the stacks must never hide the real failure
        _log(f"could not write the stacks beside the dump: {exc}")


def _format_threads(tb: TracebackType | None) -> str:
    """faulthandler's text for every thread, written from Python (the GIL is held here) so
    that this module's own frames are left out: the thread that dumps would otherwise show
    ``_write_stacks`` as the innermost line of the user's code (under ``desync run`` this file
    is not in site-packages)."""
    import traceback

    here = os.path.abspath(__file__)
    main = threading.main_thread().ident
    current = threading.get_ident()
    lines: list[str] = []
    for ident, frame in sys._current_frames().items():
        kind = "Current thread" if ident == current else "Thread"
        lines.append(f"{kind} 0x{ident:016x} (most recent call first):")
        stack = traceback.extract_tb(tb) if tb is not None and ident == main else \
            traceback.extract_stack(frame)
        for fs in reversed(stack):
            if os.path.abspath(fs.filename) != here:
                lines.append(f'  File "{fs.filename}", line {fs.lineno} in {fs.name}')
        lines.append("")
    return "\n".join(lines) + "\n"


def _stacks_on_signal(rank: int) -> None:
    """SIGUSR2 writes every thread's stack beside the dump. Under ``desync run`` the injected
    ``sitecustomize`` already writes them to ``$DESYNC_STACKS_DIR/<pid>.txt``: this rank only
    says which rank the pid is, and ``run`` moves the file beside the dump."""
    run_dir = os.environ.get(ENV_STACKS_DIR)
    try:
        if run_dir and os.environ.get(ENV_AUTO) == "1":
            marker = Path(run_dir) / f"{os.getpid()}.rank"
            marker.write_text(f"{rank}\n")
            return
        if signal.getsignal(signal.SIGUSR2) != signal.SIG_DFL or _settings is None:
            return  # the job's own handler stays
        import faulthandler

        path = _stacks_path(Path(f"{_settings.prefix}{rank}"))
        out = open(path, "w")
        out.write(_main_thread_line())
        out.flush()
        faulthandler.register(signal.SIGUSR2, file=out, all_threads=True)
        # Kept open for the process's life: faulthandler writes to its descriptor.
        _state["stacks_file"] = out
    except Exception as exc:
        _log(f"stacks on SIGUSR2 not set up: {exc}")


def _rewrite_periodically(every_s: float) -> None:
    # Live rewrites leave the Python stacks out: the first symbolization imports ~900 modules
    # (torch._dynamo, sympy, ...), and doing that in this thread while the trainer's thread is
    # importing too breaks the trainer's imports ("partially initialized module"). The stacks
    # come with the final dump, which `desync run` asks for (DESYNC_DUMP_TRIGGER) once the job
    # hangs, when the trainer's thread is blocked rather than importing.
    trigger = os.environ.get(ENV_TRIGGER)
    while not _state.get("final_dump") and not _stopping.is_set():
        if trigger and os.path.exists(trigger):
            dump(f"requested through {trigger}")
            return
        _write_dump("live", final=False, stacks=False)
        if _stopping.wait(max(every_s, 0.2)):
            return


# --- failure: dump here, tell the peers, give them time ------------------------------------

def _on_failure(reason: str, tb: TracebackType | None = None) -> None:
    # A rank can fail before the arming thread's next look (it polls every 0.2-2 s): one that
    # raises right after init_process_group must still dump. Only the group is claimed here;
    # the workers arm() starts are of no use to a dying rank.
    with _lock:
        if _settings is None or (not _state.get("armed") and not _claim_group()):
            return
    signalled = _signal_peers(reason)
    _final_dump(reason, tb)
    if signalled is not None:
        _await_peer_dumps(signalled)


def _install_failure_hooks() -> None:
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], exc: BaseException,
                   tb: TracebackType | None) -> None:
        # The traceback first: it is what the user reads, and the dump may take a moment.
        previous(kind, exc, tb)
        if not issubclass(kind, KeyboardInterrupt):
            first = str(exc).splitlines()[0] if str(exc) else ""
            _on_failure(f"uncaught {kind.__name__}: {first}"[:300], tb)

    sys.excepthook = excepthook
    _install_abort_handler()


def on_exception(exc: BaseException) -> None:
    """A framework caught ``exc`` and is about to end the run: dump every rank now."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    # "uncaught", as the excepthook says it: the run ends on it, and desync reads the stacks
    # file's first line as this rank's own failure (an interrupt is the user's, not one).
    kind = "" if isinstance(exc, KeyboardInterrupt) else "uncaught "
    _on_failure(f"{kind}{type(exc).__name__}: {first}"[:300], exc.__traceback__)


# Gloo aborts the whole process from its transport thread on a size mismatch
# ("op.preamble.length <= op.nbytes" -> std::terminate -> abort()). A Python-level signal
# handler would never run (abort() kills the process once the C handler returns), so the
# handler is a C function pointer made by ctypes: ctypes takes the GIL for it (the trainer
# thread released it inside work.wait()), the Python callback dumps and signals the peers, and
# when it returns glibc's abort() restores the default action and the process dies with
# SIGABRT as before. Re-entry (an abort inside the dump) goes straight to the default action.
_ABORT_CALLBACK: Any = None


def _install_abort_handler() -> None:
    global _ABORT_CALLBACK
    if sys.platform != "linux" or os.environ.get("DESYNC_NO_ABORT_HANDLER") == "1":
        return
    handler_type = ctypes.CFUNCTYPE(None, ctypes.c_int)

    def on_abort(_signum: int) -> None:
        if _state.get("in_abort"):
            return
        _state["in_abort"] = True
        try:
            os.write(2, b"[desync] SIGABRT: dumping the flight recorder before the abort\n")
            _on_failure("SIGABRT")
        except BaseException:  # never raise into C
            pass

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, handler_type]
        callback = handler_type(on_abort)
        libc.signal(int(signal.SIGABRT), callback)
        _ABORT_CALLBACK = callback  # keep the trampoline alive for the process's lifetime
    except (OSError, AttributeError) as exc:
        _log(f"SIGABRT dump handler unavailable: {exc}")


def _distributed() -> ModuleType | None:
    """torch.distributed if this process imported it (never imports it), fully loaded."""
    dist = sys.modules.get("torch.distributed")
    try:
        return dist if dist is not None and dist.is_available() else None
    except AttributeError:  # still being imported by another thread
        return None


def _store_address() -> tuple[str, int] | None:
    host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if host and port and port.isdigit():
        return host, int(port)
    dist = _distributed()
    if dist is None:
        return None
    try:
        store = dist.distributed_c10d._get_default_store()
        while hasattr(store, "underlying_store"):
            store = store.underlying_store
        if isinstance(store, dist.TCPStore):
            return store.host, store.port
    except Exception:
        pass
    return None


def _client(timeout_s: float) -> Any:
    import torch.distributed as dist

    address = _store_address()
    if address is None:
        raise RuntimeError("no TCPStore address")
    # Its own client: a thread blocked in wait() on the trainer's client would starve the
    # trainer's own store calls.
    return dist.TCPStore(address[0], address[1], is_master=False,
                         timeout=_dt.timedelta(seconds=timeout_s), wait_for_workers=False)


def _keys() -> tuple[str, str]:
    # torchrun reuses its store across restarts: a signal from an earlier attempt must not
    # make the restarted workers dump at once.
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return f"{_STORE_KEY}/{attempt}", f"{_ACK_KEY}/{attempt}"


def _signal_peers(reason: str) -> Any:
    """Set the dump signal; returns the client (to await the peers) or None."""
    if _store_address() is None:
        return None
    signal_key, _ = _keys()
    try:
        client = _client(5.0)
        if not client.check([signal_key]):
            client.set(signal_key, f"rank {_state.get('rank')}: {reason}")
        return client
    except Exception as exc:  # the store may be gone already; the dump matters more
        _log(f"could not tell the other ranks to dump: {exc}")
        return None


def _await_peer_dumps(client: Any) -> None:
    _, ack = _keys()
    me = _state.get("rank")
    others = [f"{ack}/{r}" for r in range(int(_state.get("world", 0))) if r != me]
    # Peers look every PEER_POLL_S, then dump: give them that and the dump itself.
    deadline = time.monotonic() + PEER_WAIT_S + PEER_POLL_S
    try:
        while others and time.monotonic() < deadline:
            others = [k for k in others if not client.check([k])]
            time.sleep(0.1)
    except Exception:
        return
    if others:
        _log(f"{len(others)} rank(s) did not confirm a dump within {PEER_WAIT_S:.0f} s")


def _watch_peer_signal() -> None:
    # Polls with `check` rather than blocking in `wait`: a thread blocked inside the C++ wait
    # when the store goes away during interpreter shutdown (the store lived in rank 0, which
    # is exiting) is unwound by pthread_exit through C++ frames and the process dies with
    # "terminate called without an active exception". NCCL's own monitor thread polls the
    # store the same way (TORCH_NCCL_COORD_CHECK_MILSEC, 1 s).
    signal_key, ack = _keys()
    try:
        client = _client(30.0)
    except Exception as exc:
        _log(f"dump-signal watcher could not reach the store: {exc}")
        return
    while not _stopping.is_set():
        try:
            if client.check([signal_key]):
                break
        except Exception:
            return  # the store went away: the job is over
        _stopping.wait(PEER_POLL_S)
    else:
        return
    try:
        who = client.get(signal_key).decode(errors="replace")
    except Exception:
        who = "?"
    dump(f"signal from {who}")
    try:
        client.set(f"{ack}/{_state.get('rank')}", "1")
    except Exception:
        pass


def _start_worker(target: Any, name: str, *args: Any) -> None:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    _workers.append(thread)
    thread.start()


def _on_exit() -> None:
    # The interpreter is about to finalize. A daemon thread still inside a C++ call then (a
    # store check, a recorder dump) is unwound through C++ frames when it comes back, and
    # std::terminate aborts a job that had finished cleanly ("terminate called recursively",
    # SIGSEGV, seen on a healthy 2-rank Gloo job): stop the workers and wait for them while
    # the interpreter is whole. No Python runs from the SIGABRT handler past this point.
    _stopping.set()
    for thread in _workers:
        thread.join(timeout=PEER_POLL_S + 2.0)
    _uninstall_abort_handler()


def _uninstall_abort_handler() -> None:
    if _ABORT_CALLBACK is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal(int(signal.SIGABRT), 0)  # SIG_DFL
    except (OSError, AttributeError):
        return
    # The trampoline stays referenced: a signal already being delivered may still enter it.


# --- arming and the debug server -------------------------------------------------------------

def _arm_when_ready() -> None:
    # Polls sys.modules only: this thread never imports torch itself. The period grows from
    # 0.2 s to 2 s, so a process that never starts a group (a data-loader worker started with
    # `spawn` inherits RANK) costs next to nothing.
    period = 0.2
    while True:
        dist = _distributed()
        try:
            ready = dist is not None and dist.is_initialized()
        except AttributeError:  # torch.distributed is still being imported
            ready = False
        if ready:
            try:
                arm()
            except Exception as exc:
                _log(f"could not arm the failure dumps: {exc}")
            return
        time.sleep(period)
        period = min(period * 1.05, 2.0)


def _start_debug_server(rank: int) -> None:
    if not all(os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT", "RANK")):
        _log("debug server not started: it needs torchrun's MASTER_ADDR, MASTER_PORT and RANK")
        return
    try:
        from torch.distributed.debug import start_debug_server
    except ImportError:  # torch < 2.10
        return
    port = os.environ.get(ENV_DEBUG_SERVER, "")
    try:
        frontend = int(port) if port.isdigit() and port != "1" else _free_port()
        start_debug_server(port=frontend)
    except Exception as exc:
        _log(f"debug server not started: {exc}")
        return
    _state["debug_server"] = True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _log(message: str) -> None:
    rank = _state.get("rank", os.environ.get("RANK", "?"))
    sys.stderr.write(f"[desync rank {rank}] {message}\n")
    sys.stderr.flush()

