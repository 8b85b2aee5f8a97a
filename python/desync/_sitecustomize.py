"""``desync run`` writes this file as ``sitecustomize.py`` on the job's PYTHONPATH.

Python imports ``sitecustomize`` at start-up in every interpreter of the job. In a training
rank (torchrun sets ``RANK``), it calls :func:`desync.torch.enable` so that the ranks dump their
Flight Recorder, and rewrite it for ``desync run`` to watch, without any change to the
training script. In every Python process of the job, it registers a SIGUSR2 handler that
writes the process's stacks for ``desync run`` to keep before it stops a hung job. Then it
runs the ``sitecustomize`` this file shadows, if there is one.
"""

import os
import sys

#: ``desync run`` sets it: where each Python process of the job writes its stacks on SIGUSR2.
_STACKS_ENV = "DESYNC_STACKS_DIR"


def _desync_stacks() -> None:
    """Every Python process of the job (launcher, ranks, workers) writes the stacks of all its
    threads to ``$DESYNC_STACKS_DIR/<pid>.txt`` on SIGUSR2, which ``desync run`` sends before it
    stops a hung job: ``faulthandler`` writes from the signal handler itself, so a process whose
    main thread is blocked in C (a collective, a lock, a read) answers at once. A forked child
    re-registers with its own file rather than write into its parent's."""
    directory = os.environ.get(_STACKS_ENV)
    if os.environ.get("DESYNC_AUTO_ENABLE") != "1" or not directory:
        return
    try:
        import faulthandler
        import signal

        def register() -> None:
            os.makedirs(directory, exist_ok=True)
            out = open(os.path.join(directory, f"{os.getpid()}.txt"), "w")
            faulthandler.register(signal.SIGUSR2, file=out, all_threads=True)
            # Kept open for the process's life: faulthandler writes to its descriptor.
            globals()["_desync_stacks_file"] = out

        register()
        os.register_at_fork(after_in_child=register)
    except Exception as exc:  # never stop a job from starting
        sys.stderr.write(f"[desync] could not set up stacks on SIGUSR2: {exc}\n")


def _desync_enable() -> None:
    if os.environ.get("DESYNC_AUTO_ENABLE") != "1" or "RANK" not in os.environ:
        return
    try:
        import desync.torch

        desync.torch.enable()
    except Exception as exc:  # never stop a job from starting
        sys.stderr.write(f"[desync] could not enable the flight recorder: {exc}\n")


def _run_shadowed() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.stderr.write(f"[desync] the job's own sitecustomize failed: {exc}\n")


_desync_stacks()
_desync_enable()
_run_shadowed()
